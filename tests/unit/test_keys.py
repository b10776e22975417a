import zlib

import pytest

from app.services.tenancy import keys


def test_key_shape_and_checksum():
    key = keys.new_key()
    assert key.startswith("lk_live_") and len(key) == 8 + 43 + 6
    assert keys.is_well_formed(key)
    body = key[:-6]
    value = 0
    for char in key[-6:]:
        value = value * 62 + "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".index(char)
    assert value == zlib.crc32(body.encode())


def test_every_single_character_change_is_caught():
    key = keys.new_key()
    for position in range(8, len(key)):
        replacement = "a" if key[position] != "a" else "b"
        assert not keys.is_well_formed(key[:position] + replacement + key[position + 1:])


@pytest.mark.parametrize("text", ["", "lk_live_", "lk_test_" + "a" * 49, "x" * 57])
def test_malformed_keys(text):
    assert not keys.is_well_formed(text)


def test_digest_depends_on_pepper_and_prefix_is_16_chars():
    key = keys.new_key()
    assert keys.key_digest("a", key) != keys.key_digest("b", key)
    assert len(keys.key_digest("a", key)) == 64
    assert keys.display_prefix(key) == key[:16]
