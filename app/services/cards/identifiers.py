"""Loyalty card numbers, card tokens and gift codes, and the barcodes a register scans."""

from __future__ import annotations

import secrets
import string
from xml.sax.saxutils import escape, quoteattr

import segno

# EAN-13 numbers starting with 2 are reserved for in-store use, so a card number
# can never be mistaken for a product barcode at the register.
CARD_NUMBER_PREFIX = "2"
CARD_NUMBER_LENGTH = 13

CARD_TOKEN_BYTES = 32

# Digits and uppercase letters without the look-alikes 0/O, 1/I/L, and without U
# (read as V, and the usual source of accidental words).
GIFT_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
GIFT_CODE_LENGTH = 16
GIFT_CODE_VISIBLE = 4


def ean13_check_digit(first12: str) -> str:
    if len(first12) != 12 or not (first12.isascii() and first12.isdigit()):
        raise ValueError("an EAN-13 check digit needs exactly 12 digits")
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(first12))
    return str(-total % 10)


def is_valid_ean13(s) -> bool:
    if not isinstance(s, str) or len(s) != 13 or not (s.isascii() and s.isdigit()):
        return False
    return ean13_check_digit(s[:12]) == s[12]


def new_card_number(rand=secrets) -> str:
    body = CARD_NUMBER_PREFIX + "".join(
        rand.choice(string.digits) for _ in range(CARD_NUMBER_LENGTH - 1 - len(CARD_NUMBER_PREFIX))
    )
    return body + ean13_check_digit(body)


def new_card_token() -> str:
    return secrets.token_urlsafe(CARD_TOKEN_BYTES)


def new_gift_code() -> str:
    return "".join(secrets.choice(GIFT_CODE_ALPHABET) for _ in range(GIFT_CODE_LENGTH))


def normalise_gift_code(text: str) -> str | None:
    if not isinstance(text, str):
        return None
    code = "".join(text.split()).replace("-", "").upper()
    if len(code) != GIFT_CODE_LENGTH or any(c not in GIFT_CODE_ALPHABET for c in code):
        return None
    return code


def barcode_svg(card_number: str, *, scale: int = 4) -> str:
    """The card number as a QR code, an ``<svg>`` element to embed in a page."""
    # make_qr: segno would otherwise pick a Micro QR for a short number, which
    # many phone and register scanners cannot read.
    return segno.make_qr(card_number, error="m").svg_inline(scale=scale)


# EAN-13 symbology. L codes are the odd-parity left-hand set; R codes are their
# complement; G codes are the R codes reversed. The first digit is not drawn as
# bars: it selects which of the six left-hand digits use L or G.
_L_CODES = (
    "0001101", "0011001", "0010011", "0111101", "0100011",
    "0110001", "0101111", "0111011", "0110111", "0001011",
)
_R_CODES = tuple(code.translate(str.maketrans("01", "10")) for code in _L_CODES)
_G_CODES = tuple(code[::-1] for code in _R_CODES)
_PARITY_BY_FIRST_DIGIT = (
    "LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG",
    "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL",
)
_START_GUARD = _END_GUARD = "101"
_CENTRE_GUARD = "01010"
_QUIET_LEFT, _QUIET_RIGHT = 11, 7
_GUARD_MODULES = frozenset([0, 1, 2, 45, 46, 47, 48, 49, 92, 93, 94])


def ean13_modules(number: str) -> str:
    """The 95 modules of an EAN-13 symbol, ``1`` for a bar and ``0`` for a space."""
    if not is_valid_ean13(number):
        raise ValueError("not a valid EAN-13 number")
    parity = _PARITY_BY_FIRST_DIGIT[int(number[0])]
    left = "".join(
        (_L_CODES if p == "L" else _G_CODES)[int(d)] for p, d in zip(parity, number[1:7])
    )
    right = "".join(_R_CODES[int(d)] for d in number[7:])
    return _START_GUARD + left + _CENTRE_GUARD + right + _END_GUARD


def ean13_svg(card_number: str, *, module: int = 2, bar_height: int = 60) -> str:
    """The card number as EAN-13 bars with the digits beneath, an ``<svg>`` element."""
    modules = ean13_modules(card_number)
    guard_extra = 5 * module
    font_size = 9 * module
    width = (_QUIET_LEFT + len(modules) + _QUIET_RIGHT) * module
    height = bar_height + guard_extra + font_size
    rects = []
    start = None
    for i, bit in enumerate(modules + "0"):
        if bit == "1" and start is None:
            start = i
        elif bit == "0" and start is not None:
            tall = start in _GUARD_MODULES
            rects.append(
                f'<rect x="{(_QUIET_LEFT + start) * module}" y="0" '
                f'width="{(i - start) * module}" '
                f'height="{bar_height + guard_extra if tall else bar_height}"/>'
            )
            start = None
    text_y = bar_height + font_size
    texts = [
        (_QUIET_LEFT - 7, "start", card_number[0]),
        (_QUIET_LEFT + 3 + 21, "middle", card_number[1:7]),
        (_QUIET_LEFT + 50 + 21, "middle", card_number[7:]),
    ]
    labels = "".join(
        f'<text x="{x * module}" y="{text_y}" text-anchor="{anchor}">{escape(digits)}</text>'
        for x, anchor, digits in texts
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f"aria-label={quoteattr(card_number)} class=\"ean13\">"
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>'
        f'<g fill="#000">{"".join(rects)}</g>'
        f'<g fill="#000" font-family="monospace" font-size="{font_size}">{labels}</g>'
        "</svg>"
    )
