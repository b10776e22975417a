import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.wire import (
    format_amount,
    format_percent,
    format_quantity,
    parse_amount,
    parse_percent,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "kopecks"),
    [
        ("7", 700),
        ("1.5", 150),
        ("1.50", 150),
        ("150.00", 15000),
        ("0.05", 5),
        ("-20.5", -2050),
        ("-0.05", -5),
        ("0", 0),
        ("-0", 0),
        ("007.10", 710),
        ("999999999999999999.99", 99999999999999999999),
        ("-999999999999999999.99", -99999999999999999999),
    ],
)
def test_parse_amount(text, kopecks):
    assert parse_amount(text) == kopecks


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1\n",
        "+1",
        "1.",
        ".5",
        "-",
        "-.5",
        "1.234",
        "1e3",
        "1E3",
        "1,50",
        "1_000",
        "0x10",
        "NaN",
        "inf",
        "--1",
        "1.2.3",
        "\u0663",  # ARABIC-INDIC DIGIT THREE: int() would take it, the API must not
        "1000000000000000000",  # 19 integer digits
    ],
)
def test_parse_amount_rejects_malformed_text(text):
    with pytest.raises(ValueError, match="decimal string"):
        parse_amount(text)


@pytest.mark.parametrize("value", [7, 1.5, None, True, b"1", ["1"]])
def test_parse_amount_rejects_anything_but_a_string(value):
    with pytest.raises(ValueError):
        parse_amount(value)


@pytest.mark.parametrize(
    ("kopecks", "text"),
    [
        (15000, "150.00"),
        (-2050, "-20.50"),
        (5, "0.05"),
        (-5, "-0.05"),
        (0, "0.00"),
        (100, "1.00"),
        (-100, "-1.00"),
        (99999999999999999999, "999999999999999999.99"),
    ],
)
def test_format_amount(kopecks, text):
    assert format_amount(kopecks) == text


@pytest.mark.parametrize("value", [1.5, "1", True, None])
def test_format_amount_takes_only_int(value):
    with pytest.raises(TypeError):
        format_amount(value)


amounts = st.integers(min_value=-(10**20) + 1, max_value=10**20 - 1)


@given(amounts)
def test_amount_round_trip(kopecks):
    text = format_amount(kopecks)
    assert parse_amount(text) == kopecks


@given(st.from_regex(r"\A-?[0-9]{1,18}(\.[0-9]{1,2})?\Z", fullmatch=True))
def test_every_accepted_amount_formats_canonically(text):
    kopecks = parse_amount(text)
    canonical = format_amount(kopecks)
    assert parse_amount(canonical) == kopecks
    # Same value as the text, compared without floats.
    whole, _, fraction = text.lstrip("-").partition(".")
    magnitude = int(whole) * 100 + int(fraction.ljust(2, "0"))
    assert kopecks == (-magnitude if text.startswith("-") else magnitude)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("1", 1000),
        ("1.250", 1250),
        ("1.25", 1250),
        ("0.001", 1),
        ("999999999999.999", 999999999999999),
    ],
)
def test_parse_quantity(text, milli):
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["1.2345", "1000000000000", "1e2", "", " 1", "1.", "+1"])
def test_parse_quantity_rejects_malformed_text(text):
    with pytest.raises(ValueError, match="decimal string"):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["0", "0.000", "-1", "-0.001"])
def test_parse_quantity_rejects_non_positive(text):
    with pytest.raises(ValueError, match="greater than zero"):
        parse_quantity(text)


def test_parse_quantity_rejects_a_number():
    with pytest.raises(ValueError):
        parse_quantity(1)


@pytest.mark.parametrize(("milli", "text"), [(1250, "1.250"), (1, "0.001"), (1000, "1.000")])
def test_format_quantity(milli, text):
    assert format_quantity(milli) == text


@given(st.integers(min_value=1, max_value=10**15 - 1))
def test_quantity_round_trip(milli):
    assert parse_quantity(format_quantity(milli)) == milli


@pytest.mark.parametrize(
    ("text", "bp"),
    [
        ("5", 500),
        ("33.33", 3333),
        ("0", 0),
        ("100", 10000),
        ("100.00", 10000),
        ("0.01", 1),
        ("2.5", 250),
    ],
)
def test_parse_percent(text, bp):
    assert parse_percent(text) == bp


@pytest.mark.parametrize("text", ["33.333", "1e1", "", "5%", " 5", "1000"])
def test_parse_percent_rejects_malformed_text(text):
    with pytest.raises(ValueError, match="decimal string"):
        parse_percent(text)


@pytest.mark.parametrize("text", ["100.01", "101", "-1", "-0.01", "999"])
def test_parse_percent_rejects_out_of_range(text):
    with pytest.raises(ValueError, match="between 0 and 100"):
        parse_percent(text)


@pytest.mark.parametrize(
    ("bp", "text"), [(500, "5.00"), (3333, "33.33"), (0, "0.00"), (10000, "100.00")]
)
def test_format_percent(bp, text):
    assert format_percent(bp) == text


@given(st.integers(min_value=0, max_value=10_000))
def test_percent_round_trip(bp):
    assert parse_percent(format_percent(bp)) == bp
