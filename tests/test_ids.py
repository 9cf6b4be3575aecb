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


def test_ids_come_from_batches_of_random_bytes_never_reused_by_a_forked_child(monkeypatch):
    import os

    from baton import ids

    drawn: list[int] = []
    real = os.urandom

    def urandom(size: int) -> bytes:
        drawn.append(size)
        return real(size)

    monkeypatch.setattr(ids.os, "urandom", urandom)
    monkeypatch.setattr(ids, "_POOL", ids._Pool())
    first = [random_hex() for _ in range(ids.BATCH)]
    assert drawn == [16 * ids.BATCH]  # one system call for a batch of ids
    random_hex()
    assert drawn == [16 * ids.BATCH] * 2
    parent = os.getpid()
    monkeypatch.setattr(ids.os, "getpid", lambda: parent + 1)  # as in a forked child, its parent's batch half used
    random_hex()
    assert len(drawn) == 3 and len(set(first)) == len(first)
