"""Indexing a folder reads only regular files inside that folder: a symlink pointing out of
it (or to a FIFO/device that would block forever) is reported, never read."""

from __future__ import annotations

import os

import pytest

from baton.specialists.knowledge import DocumentLoadError, KnowledgeIndex, load_document

SECRET = "root:x:0:0:the secret outside the indexed folder\n"


@pytest.fixture
def layout(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refunds\n\nRefunds take 14 days.\n")
    (docs / "leak.txt").symlink_to(outside / "secret.txt")  # a file link out of the folder
    (docs / "alias.md").symlink_to(docs / "refunds.md")  # a link that stays inside is fine
    return tmp_path, docs


async def test_add_directory_does_not_follow_links_out_of_the_folder(layout):
    _, docs = layout
    index = KnowledgeIndex()
    report = await index.add_directory(docs)
    assert sorted(report.added) == ["alias.md", "refunds.md"]
    assert list(report.failed) == ["leak.txt"] and "outside" in report.failed["leak.txt"]
    assert all("secret" not in chunk.text for chunk in await index.chunks())
    assert await index.search("secret outside", 5) == []


def test_load_document_refuses_a_path_that_resolves_outside_root(layout):
    _, docs = layout
    with pytest.raises(DocumentLoadError, match="outside") as info:
        load_document(docs / "leak.txt", root=docs)
    assert info.value.source == "leak.txt"
    with pytest.raises(DocumentLoadError, match="outside"):
        load_document(docs / ".." / "outside" / "secret.txt", root=docs)
    assert load_document(docs / "alias.md", root=docs).text.startswith("# Refunds")


@pytest.mark.timeout(20)
async def test_a_fifo_is_refused_instead_of_blocking_the_index(layout):
    _, docs = layout
    os.mkfifo(docs / "pipe.txt")  # reading it would block until a writer appears
    index = KnowledgeIndex()
    report = await index.add_directory(docs)
    assert "pipe.txt" in report.failed and "regular file" in report.failed["pipe.txt"]
    with pytest.raises(DocumentLoadError, match="regular file"):
        load_document(docs / "pipe.txt", root=docs)
