import random
import re
import string
import xml.etree.ElementTree as ET

import pytest

from app.services.cards import identifiers

# Bar/space widths of the EAN-13 L (odd parity) set, digit by digit: space, bar,
# space, bar. R codes have the same widths starting with a bar; G codes are the
# L widths reversed. Written independently of the module's bit tables.
L_WIDTHS = {
    "3211": "0", "2221": "1", "2122": "2", "1411": "3", "1132": "4",
    "1231": "5", "1114": "6", "1312": "7", "1213": "8", "3112": "9",
}
FIRST_DIGIT_BY_PARITY = {
    "LLLLLL": "0", "LLGLGG": "1", "LLGGLG": "2", "LLGGGL": "3", "LGLLGG": "4",
    "LGGLLG": "5", "LGGGLL": "6", "LGLGLG": "7", "LGLGGL": "8", "LGGLGL": "9",
}


def run_widths(bits: str) -> str:
    return "".join(str(len(m.group())) for m in re.finditer(r"0+|1+", bits))


def decode_ean13(modules: str) -> str:
    assert len(modules) == 95
    assert modules[:3] == "101" and modules[45:50] == "01010" and modules[92:] == "101"
    parity, digits = "", ""
    for i in range(6):
        symbol = modules[3 + 7 * i : 10 + 7 * i]
        assert symbol[0] == "0" and symbol[-1] == "1"
        widths = run_widths(symbol)
        if symbol.count("1") % 2:
            parity, digits = parity + "L", digits + L_WIDTHS[widths]
        else:
            parity, digits = parity + "G", digits + L_WIDTHS[widths[::-1]]
    for i in range(6):
        symbol = modules[50 + 7 * i : 57 + 7 * i]
        assert symbol[0] == "1" and symbol[-1] == "0" and symbol.count("1") % 2 == 0
        digits += L_WIDTHS[run_widths(symbol)]
    return FIRST_DIGIT_BY_PARITY[parity] + digits


def svg_modules(svg: str) -> str:
    """Rebuild the module pattern from the bar rectangles of an EAN-13 SVG."""
    root = ET.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    bars = root.find("svg:g", ns).findall("svg:rect", ns)
    module = 2
    quiet_left = 11
    bits = ["0"] * 95
    for bar in bars:
        start = int(bar.get("x")) // module - quiet_left
        for i in range(int(bar.get("width")) // module):
            bits[start + i] = "1"
    return "".join(bits)


@pytest.mark.parametrize(
    "first12, check",
    [
        ("400638133393", "1"),
        ("590123412345", "7"),
        ("978030640615", "7"),
        ("000000000000", "0"),
        ("200000000001", "5"),
    ],
)
def test_check_digit_matches_reference_numbers(first12, check):
    assert identifiers.ean13_check_digit(first12) == check
    assert identifiers.is_valid_ean13(first12 + check)


@pytest.mark.parametrize("bad", ["40063813339", "4006381333931", "40063813339a", "４００６３８１３３３９３"])
def test_check_digit_needs_twelve_ascii_digits(bad):
    with pytest.raises(ValueError):
        identifiers.ean13_check_digit(bad)


@pytest.mark.parametrize(
    "candidate",
    ["4006381333932", "400638133393", "40063813339310", "400638133393a", "", None, 4006381333931,
     "٤٠٠٦٣٨١٣٣٣٩٣١"],
)
def test_invalid_ean13_is_rejected(candidate):
    assert not identifiers.is_valid_ean13(candidate)


def test_any_single_digit_error_is_detected():
    number = "4006381333931"
    for position in range(13):
        for digit in string.digits:
            if digit != number[position]:
                altered = number[:position] + digit + number[position + 1 :]
                assert not identifiers.is_valid_ean13(altered)


def test_card_numbers_are_valid_in_store_ean13():
    numbers = [identifiers.new_card_number() for _ in range(2000)]
    for number in numbers:
        assert len(number) == 13 and number.isdigit()
        assert number.startswith("2")
        assert identifiers.is_valid_ean13(number)
    assert len(set(numbers)) == len(numbers)
    # every random position takes every digit across so many numbers
    for position in range(1, 12):
        assert {n[position] for n in numbers} == set(string.digits)


def test_card_number_uses_the_given_random_source():
    first = identifiers.new_card_number(rand=random.Random(7))
    again = identifiers.new_card_number(rand=random.Random(7))
    assert first == again
    assert identifiers.is_valid_ean13(first)


def test_card_tokens_are_long_url_safe_and_distinct():
    tokens = {identifiers.new_card_token() for _ in range(500)}
    assert len(tokens) == 500
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token)  # 32 bytes, unpadded base64url


def test_gift_code_alphabet_is_unambiguous_uppercase_and_digits():
    alphabet = identifiers.GIFT_CODE_ALPHABET
    assert len(set(alphabet)) == len(alphabet)
    assert set(alphabet) <= set(string.ascii_uppercase + string.digits)
    assert not set(alphabet) & set("0O1IL")
    assert len(alphabet) >= 28


def test_gift_codes_use_only_the_alphabet():
    codes = [identifiers.new_gift_code() for _ in range(1000)]
    assert len(set(codes)) == len(codes)
    for code in codes:
        assert len(code) == 16
        assert set(code) <= set(identifiers.GIFT_CODE_ALPHABET)
        assert identifiers.normalise_gift_code(code) == code
    assert set("".join(codes)) == set(identifiers.GIFT_CODE_ALPHABET)


@pytest.mark.parametrize(
    "typed",
    ["abcd-efgh-jkmn-pqrs", " ABCD EFGH JKMN PQRS ", "AbCd-EfGh JkMn-PqRs", "ABCDEFGHJKMNPQRS"],
)
def test_normalise_gift_code_accepts_spaces_dashes_and_lowercase(typed):
    assert identifiers.normalise_gift_code(typed) == "ABCDEFGHJKMNPQRS"


@pytest.mark.parametrize(
    "typed",
    [
        "ABCDEFGHJKMNPQR",  # 15 characters
        "ABCDEFGHJKMNPQRST",  # 17 characters
        "ABCDEFGHJKMNPQR0",  # zero is not in the alphabet
        "ABCDEFGHJKMNPQRO",
        "ABCDEFGHJKMNPQR1",
        "ABCDEFGHJKMNPQRI",
        "ABCDEFGHJKMNPQRL",
        "ABCDEFGHJKMNPQR_",
        "ABCDEFGHJKMNPQRÉ",
        "",
        None,
    ],
)
def test_normalise_gift_code_rejects_other_text(typed):
    assert identifiers.normalise_gift_code(typed) is None


def test_qr_svg_is_well_formed_and_standard_qr():
    svg = identifiers.barcode_svg("2123456789010")
    root = ET.fromstring(svg)
    assert root.tag.rsplit("}", 1)[-1] == "svg"
    assert int(root.get("width")) == int(root.get("height")) > 0
    assert root.find(".//{*}path") is not None or root.find(".//path") is not None


def test_ean13_modules_decode_back_to_the_reference_number():
    assert decode_ean13(identifiers.ean13_modules("4006381333931")) == "4006381333931"


@pytest.mark.parametrize("number", ["5901234123457", "9780306406157", "0000000000000"])
def test_ean13_modules_decode_back_for_other_first_digits(number):
    assert decode_ean13(identifiers.ean13_modules(number)) == number


def test_ean13_modules_decode_back_for_card_numbers():
    for _ in range(200):
        number = identifiers.new_card_number()
        assert decode_ean13(identifiers.ean13_modules(number)) == number


def test_ean13_modules_refuse_an_invalid_number():
    with pytest.raises(ValueError):
        identifiers.ean13_modules("4006381333932")


def test_ean13_svg_bars_decode_back_to_the_number():
    for number in ["4006381333931", identifiers.new_card_number()]:
        svg = identifiers.ean13_svg(number)
        assert svg_modules(svg) == identifiers.ean13_modules(number)
        assert decode_ean13(svg_modules(svg)) == number
        texts = "".join(t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"))
        assert texts == number
