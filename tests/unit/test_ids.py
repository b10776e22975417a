import uuid

from app.models.base import new_id


def test_an_id_is_a_random_uuid_as_uuid4_makes_it():
    ids = [new_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    for made in ids:
        parsed = uuid.UUID(made)
        assert str(parsed) == made  # lower-case, dashed: the text the columns hold
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_every_bit_but_the_version_and_variant_is_random():
    seen = [set() for _ in range(36)]
    for _ in range(5000):
        for position, char in enumerate(new_id()):
            seen[position].add(char)
    fixed = {8: {"-"}, 13: {"-"}, 14: {"4"}, 18: {"-"}, 19: set("89ab"), 23: {"-"}}
    for position, chars in enumerate(seen):
        assert chars == fixed.get(position, set("0123456789abcdef")), position
