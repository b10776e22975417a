"""Every error `code` the service answers with (docs/api.md#errors), its status and when: the one
list the interface document, the operations' declarations and the tests all read."""
from __future__ import annotations

ERROR_CODES: dict[str, tuple[int, str]] = {
    "bad_request": (400, "a body that cannot be read as HTTP (broken chunked framing)"),
    "missing_api_key": (401, "no Authorization header"),
    "invalid_api_key": (401, "not a Bearer key, or a malformed, unknown, revoked or expired one"),
    "insufficient_scope": (403, "the key lacks the operation's scope (or a scope it hands on)"),
    "terminal_inactive": (403, "X-Loyalty-Pos-Key, or the terminal named, is no ACTIVE terminal"),
    "subscription_inactive": (403, "hold or commit while the subscription is stopped"),
    "invalid_passkit_request": (400, "a Wallet web service body beyond its bounds: pushToken "
                                     "1 to 200 hexadecimal digits; logs at most 100 strings"),
    "invalid_pass_token": (401, "no ApplePass token of this pass (another pass type, serial, "
                                "pass or company)"),
    "not_found": (404, "an unknown id, or one of another company"),
    "customer_exists": (409, "the phone is enrolled already; the body has its customerId"),
    "enrollment_challenge_required": (409, "the program asks for a confirmed OTP challenge"),
    "invalid_state": (409, "not allowed in the current state"),
    "hold_already_active": (409, "the session has an active hold"),
    "insufficient_balance": (409, "more than the available balance"),
    "terminal_limit_reached": (409, "an ACTIVE terminal beyond the registerLimit"),
    "pos_key_in_use": (409, "another terminal of the company has this posKey"),
    "return_exceeds_sale": (409, "more of a line than is left of it"),
    "receipt_already_committed": (409, "the receipt has a committed sale, online or offline; "
                                       "the body has its saleId"),
    "offline_sale_too_old": (409, "soldAt is older than the program's offlineSaleWindowDays"),
    "offline_sales_disabled": (409, "the program's offlineSaleWindowDays is 0: offline sales "
                                    "are refused"),
    "campaign_limit_reached": (409, "a campaign created or resumed beyond the company's 100 "
                                    "live ones (active and not ended)"),
    "idempotency_key_in_use": (409, "a request with this Idempotency-Key is still running"),
    "payload_too_large": (413, "a body over MAX_CONTENT_LENGTH (64 KiB at the Wallet web "
                                 "service)"),
    "unsupported_media_type": (415, "a body that is not JSON"),
    "rate_limited": (429, "too many requests of this kind from the key; see Retry-After"),
    "database_unavailable": (503, "the database cannot be reached; nothing was changed; "
                                  "see Retry-After"),
    "not_ready": (503, "the database does not answer"),
    "report_timed_out": (503, "a report ran past REPORT_TIMEOUT_SECONDS; a shorter period, or "
                              "later; see Retry-After"),
    "wallet_not_configured": (503, "no Apple Wallet certificate on this server"),
}


def status_of(code: str) -> int:
    return ERROR_CODES[code][0]
