"""``baton.ids.random_hex``: what ``uuid.uuid4().hex`` writes."""

import uuid

from baton.ids import random_hex


def test_a_random_id_is_a_version_4_uuid_in_hex():
    ids = [random_hex() for _ in range(2000)]
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and parsed.hex == text
    assert len(set(ids)) == len(ids)
    assert {text[16] for text in ids} == {"8", "9", "a", "b"}  # every variant digit uuid4 writes, and only those
