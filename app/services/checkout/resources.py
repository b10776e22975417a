"""Checkout resources as the API shows them (docs/api.md#resources).

The services return these; the API sends `as_json()` as the response body and the same dict
is the `data` of the webhook event, so a resource is serialised once per request. The
schemas in app/api/checkout_schemas.py document the same shapes (a test keeps them equal).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.wire import (Balance, format_amount, format_percent, format_quantity,
                      format_timestamp)


@dataclass(frozen=True)
class CheckoutSessionResource:
    id: str
    external_receipt_id: str
    customer_id: str
    terminal_id: str | None
    store_id: str | None
    cashier_id: str | None
    state: str
    expires_at: datetime
    created_at: datetime

    def as_json(self) -> dict:
        return {"id": self.id, "externalReceiptId": self.external_receipt_id,
                "customerId": self.customer_id, "terminalId": self.terminal_id,
                "storeId": self.store_id, "cashierId": self.cashier_id, "state": self.state,
                "expiresAt": format_timestamp(self.expires_at), "createdAt": format_timestamp(self.created_at)}


@dataclass(frozen=True)
class QuoteResource:
    id: str
    checkout_session_id: str
    lines: tuple  # of pricing.PricedLine
    total_amount: int
    redeemable: int
    discount: int
    accrual: int
    allowed: bool
    restriction_reason: str | None
    created_at: datetime

    @property
    def redemption(self) -> dict:
        return {"allowed": self.allowed, "restriction_reason": self.restriction_reason}

    def as_json(self) -> dict:
        return {
            "id": self.id, "checkoutSessionId": self.checkout_session_id,
            "lines": [{"lineId": line.line_id, "amount": format_amount(line.amount),
                       "redeemable": format_amount(line.redeemable),
                       "discount": format_amount(line.discount),
                       "accrual": format_amount(line.accrual), "restriction": line.restriction,
                       "accrualPercent": format_percent(line.accrual_bp),
                       "campaignId": line.campaign_id}
                      for line in self.lines],
            "totalAmount": format_amount(self.total_amount),
            "redeemable": format_amount(self.redeemable), "discount": format_amount(self.discount),
            "accrual": format_amount(self.accrual),
            "redemption": {"allowed": self.allowed, "restrictionReason": self.restriction_reason},
            "createdAt": format_timestamp(self.created_at),
        }


@dataclass(frozen=True)
class HoldResource:
    id: str
    checkout_session_id: str
    customer_id: str
    amount: int
    state: str
    expires_at: datetime
    created_at: datetime
    released_at: datetime | None

    def as_json(self) -> dict:
        return {"id": self.id, "checkoutSessionId": self.checkout_session_id,
                "customerId": self.customer_id, "amount": format_amount(self.amount),
                "state": self.state, "expiresAt": format_timestamp(self.expires_at),
                "createdAt": format_timestamp(self.created_at), "releasedAt": format_timestamp(self.released_at)}


@dataclass(frozen=True)
class SaleLineResource:
    line_id: str
    sku: str | None
    quantity: int
    amount: int
    discount: int
    accrual: int
    returned_quantity: int
    accrual_bp: int | None = None  # None: a sale committed before percents were kept per line
    campaign_id: str | None = None

    def as_json(self) -> dict:
        return {"lineId": self.line_id, "sku": self.sku, "quantity": format_quantity(self.quantity),
                "amount": format_amount(self.amount), "discount": format_amount(self.discount),
                "accrual": format_amount(self.accrual),
                "returnedQuantity": format_quantity(self.returned_quantity),
                "accrualPercent": None if self.accrual_bp is None else format_percent(self.accrual_bp),
                "campaignId": self.campaign_id}


@dataclass(frozen=True)
class SaleResource:
    id: str
    checkout_session_id: str | None  # None: made offline
    external_receipt_id: str
    customer_id: str
    state: str
    total_amount: int
    redeemed: int
    accrued: int
    accrual_available_at: datetime
    lines: tuple[SaleLineResource, ...]
    receipt_text: tuple[str, ...]
    committed_at: datetime  # when the service received it
    offline: bool = False
    sold_at: datetime | None = None  # when the register made it; None: at committed_at

    def as_json(self) -> dict:
        return {"id": self.id, "checkoutSessionId": self.checkout_session_id,
                "externalReceiptId": self.external_receipt_id, "customerId": self.customer_id,
                "state": self.state, "totalAmount": format_amount(self.total_amount),
                "redeemed": format_amount(self.redeemed), "accrued": format_amount(self.accrued),
                "accrualAvailableAt": format_timestamp(self.accrual_available_at),
                "lines": [line.as_json() for line in self.lines],
                "receiptText": list(self.receipt_text), "committedAt": format_timestamp(self.committed_at),
                "offline": self.offline,
                "soldAt": format_timestamp(self.sold_at or self.committed_at)}


@dataclass(frozen=True)
class ReturnLineResource:
    line_id: str
    quantity: int
    restored_redemption: int
    reversed_accrual: int

    def as_json(self) -> dict:
        return {"lineId": self.line_id, "quantity": format_quantity(self.quantity),
                "restoredRedemption": format_amount(self.restored_redemption),
                "reversedAccrual": format_amount(self.reversed_accrual)}


@dataclass(frozen=True)
class ReturnResource:
    id: str
    sale_id: str
    customer_id: str
    lines: tuple[ReturnLineResource, ...]
    restored_redemption: int
    reversed_accrual: int
    forgiven_accrual: int
    sale_state: str
    balance: Balance
    created_at: datetime

    def as_json(self) -> dict:
        return {"id": self.id, "saleId": self.sale_id, "customerId": self.customer_id,
                "lines": [line.as_json() for line in self.lines],
                "restoredRedemption": format_amount(self.restored_redemption),
                "reversedAccrual": format_amount(self.reversed_accrual),
                "forgivenAccrual": format_amount(self.forgiven_accrual),
                "saleState": self.sale_state, "balance": self.balance.as_json(),
                "createdAt": format_timestamp(self.created_at)}
