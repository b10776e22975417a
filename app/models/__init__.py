"""Typed SQLAlchemy models. Importing this package registers every table on Base.metadata."""
from app.models.checkout import CheckoutSession, Hold, Quote, Return, Sale, SaleLine
from app.models.company import Campaign, Company, Program, Subscription
from app.models.credential import ApiCredential, PreviousKey
from app.models.customer import (Customer, CustomerName, LedgerEntry, OtpChallenge, RewardAccount,
                                 RewardLot)
from app.models.gift_card import GiftCard
from app.models.idempotency import IdempotencyRecord
from app.models.location import CatalogItem, CatalogSync, Cashier, Store, Terminal
from app.models.staff import (AuditEvent, SignInFailure, StaffEmail, StaffInvitation,
                               StaffMember, StaffSession)
from app.models.outbox import AllowedWebhookHost, OutboxEvent, WebhookDelivery, WebhookEndpoint
from app.models.wallet import SweepMark, WalletPass, WalletRegistration

__all__ = [
    "AllowedWebhookHost", "ApiCredential", "AuditEvent", "Campaign", "Cashier", "CatalogItem", "CatalogSync", "CheckoutSession",
    "Company", "Customer", "CustomerName", "GiftCard", "Hold", "IdempotencyRecord", "LedgerEntry",
    "OtpChallenge", "OutboxEvent", "PreviousKey", "Program", "Quote", "Return", "RewardAccount", "RewardLot",
    "Sale", "SaleLine", "SignInFailure", "StaffEmail", "StaffInvitation", "StaffMember", "StaffSession", "Store", "Subscription", "SweepMark", "Terminal", "WalletPass",
    "WalletRegistration", "WebhookDelivery", "WebhookEndpoint",
]
