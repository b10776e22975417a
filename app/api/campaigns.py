"""Campaigns: a higher accrual percent for a while, on some stores, skus or categories
(docs/api.md#tiers)."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint, json_response
from app.api.campaigns_schemas import (CampaignListArgs, CampaignListResponse, CampaignResponse,
                                       CreateCampaignRequest, UpdateCampaignRequest)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.services.program import campaigns

blp = Blueprint("campaigns", __name__, url_prefix="/v1", description="Campaigns")


@blp.route("/campaigns")
class Campaigns(MethodView):
    @blp.operation("createCampaign", scope="program:write", idempotency=(8, 100),
                   idempotency_required=False, errors=("campaign_limit_reached",))
    @blp.arguments(CreateCampaignRequest)
    @blp.response(201, CampaignResponse)
    def post(self, body):
        """Start a campaign: its percent replaces a smaller one on the lines it covers.

        `endsAt` must follow `startsAt`; `skus`, `categories` and `storeIds` narrow which lines it
        covers (none named: every line; an unknown store is a 422). On a line it covers while active
        and in [startsAt, endsAt), the largest percent of the customer's and every applying
        campaign's is the accrual percent: campaigns do not add up. A company has at most 100 live
        campaigns (active and not ended): one more is a 409 `campaign_limit_reached`. The
        Idempotency-Key is optional.
        """
        campaign = campaigns.create_campaign(
            request_session(), g.company_id, name=body["name"], starts_at=body["startsAt"],
            ends_at=body["endsAt"], accrual_bp=body["accrualPercent"], skus=body["skus"],
            categories=body["categories"], store_ids=body["storeIds"], now=utcnow(),
            actor=key_actor())
        return json_response(campaigns.campaign_as_json(campaign), 201)

    @blp.operation("listCampaigns", scope="program:read")
    @blp.arguments(CampaignListArgs, location="query")
    @blp.response(200, CampaignListResponse)
    def get(self, args):
        """The company's campaigns, newest first (deleted ones too, inactive).

        A page (`page`, `pageSize` 1 to 50, 20 when not given), newest first; deleted campaigns
        stay, with `active` false. Changes nothing.
        """
        return json_response(campaigns.list_campaigns(
            request_session(), g.company_id, page=args["page"], page_size=args["page_size"]), 200)


@blp.route("/campaigns/<campaign_id>")
class CampaignById(MethodView):
    @blp.operation("updateCampaign", scope="program:write", errors=("campaign_limit_reached",))
    @blp.arguments(UpdateCampaignRequest)
    @blp.response(200, CampaignResponse)
    def patch(self, body, campaign_id):
        """Rename, end earlier or later, pause or resume a campaign.

        Give any of `name`, `endsAt`, `active`; the skus, categories, stores and percent are fixed
        once created (make another campaign). Quotes made after the change use it. Making a
        campaign live again beyond the company's 100 live ones is a 409 `campaign_limit_reached`.
        Another company's id is a 404.
        """
        campaign = campaigns.update_campaign(
            request_session(), g.company_id, campaign_id, now=utcnow(), actor=key_actor(),
            name=body.get("name"),
            ends_at=body.get("endsAt"), active=body.get("active"))
        return json_response(campaigns.campaign_as_json(campaign), 200)

    @blp.operation("deleteCampaign", scope="program:write")
    @blp.response(204)
    def delete(self, campaign_id):
        """End the campaign; it is kept, inactive, for the sales that used it.

        204. The campaign stops applying to new quotes but is kept, inactive, because sales name it
        as their lines' `campaignId`; it stays in the list.
        """
        campaigns.delete_campaign(request_session(), g.company_id, campaign_id, now=utcnow(),
                                  actor=key_actor())
