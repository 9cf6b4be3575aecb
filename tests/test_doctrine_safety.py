"""Doctrine (and the knowledge loader, which shares its rules) against a hostile docs folder
on the real filesystem: links out of the folder, /proc, FIFOs, sockets, bad encodings, huge
and deep trees. Every test asserts nothing leaked: no doctrine record and no journal payload
(nor the SQLite file) holds the target's content. Then: indexing is incremental (an
unchanged folder reads no file and writes nothing; one edited file is the only one read)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from baton.files import FileRefusedError, FolderLimits, SkipReason, read_file, walk_folder
from baton.memory import InvalidRecordError, MemoryStore, Principal, TrustedAuthenticator, index_doctrine
from baton.memory.doctrine import DOCTRINE_LIMITS
from baton.specialists.knowledge import KnowledgeIndex

SECRET = f"outside-secret-{uuid.uuid4().hex}"


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    yield s
    s.close()


@pytest.fixture
def scope(store):
    return store.open(Principal("acme"))


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "rules.md").write_text("# Revenue\nRevenue is net of refunds.\n\n# Churn\nChurn is monthly.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Stolen\n{SECRET}\n")
    (outside / "more.md").write_text(f"# Also stolen\n{SECRET}\n")
    return folder


class CountingReader:
    """The default reader, counting which files it was asked to read."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, root, relative, *, max_bytes):
        self.calls.append(relative)
        return read_file(root, relative, max_bytes=max_bytes)


def reasons(report) -> dict[str, SkipReason]:
    return {item.path: item.reason for item in report.skipped}


def leaked(store: MemoryStore, scope, tmp_path: Path, *needles: str) -> list[str]:
    """Where any needle shows up: doctrine records, journal payloads, the database files."""
    found = []
    texts = [r.text for r in store.list_records(scope, kind="doctrine", active_only=False, limit=10_000)]
    payloads = json.dumps([e.payload for e in store.events(scope)])
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("memory.sqlite*"))
    for needle in needles:
        if any(needle in t for t in texts):
            found.append(f"{needle!r} in a doctrine record")
        if needle in payloads:
            found.append(f"{needle!r} in the journal")
        if needle.encode() in raw:
            found.append(f"{needle!r} in the database file")
    return found


def doctrine_paths(store, scope) -> set[str]:
    return {r.data["path"] for r in store.list_records(scope, kind="doctrine", limit=10_000)}


# --- links ------------------------------------------------------------------------------------


def test_links_out_of_the_folder_are_refused_reported_and_never_read(store, scope, docs, tmp_path):
    (docs / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")  # a file outside
    (docs / "shared").symlink_to(tmp_path / "outside")  # a folder outside
    (docs / "passwd.md").symlink_to("/etc/passwd")
    (docs / "relative.md").symlink_to("../outside/more.md")
    (docs / "alias.md").symlink_to("rules.md")  # stays inside: read under its own name
    reader = CountingReader()
    report = index_doctrine(scope, docs, reader=reader)
    assert reasons(report) == {"leak.md": SkipReason.OUTSIDE, "shared": SkipReason.OUTSIDE,
                               "passwd.md": SkipReason.OUTSIDE, "relative.md": SkipReason.OUTSIDE}
    assert sorted(reader.calls) == ["alias.md", "rules.md"]  # nothing outside was even handed to the reader
    assert doctrine_paths(store, scope) == {"alias.md", "rules.md"}
    assert not leaked(store, scope, tmp_path, SECRET, "root:x:0:0")
    assert {item.target for item in report.skipped} >= {"/etc/passwd", str((tmp_path / "outside").resolve())}


def test_link_loops_and_links_to_folders_inside_do_not_hang_or_repeat(store, scope, docs, tmp_path):
    (docs / "self.md").symlink_to("self.md")
    (docs / "ping.md").symlink_to("pong.md")
    (docs / "pong.md").symlink_to("ping.md")
    (docs / "dangling.md").symlink_to("nowhere.md")
    (docs / "sub").mkdir()
    (docs / "sub" / "up").symlink_to("..")  # a folder link inside: a loop if it were followed
    (docs / "sub" / "here.md").write_text("# Here\nInside text.\n")
    report = index_doctrine(scope, docs)
    assert reasons(report) == {"self.md": SkipReason.BROKEN_LINK, "ping.md": SkipReason.BROKEN_LINK,
                               "pong.md": SkipReason.BROKEN_LINK, "dangling.md": SkipReason.BROKEN_LINK,
                               "sub/up": SkipReason.LINKED_FOLDER}
    assert doctrine_paths(store, scope) == {"rules.md", "sub/here.md"}


def test_proc_self_environ_and_cmdline_links_leak_nothing(tmp_path):
    """In a child process that really has a secret in its environment and its command line,
    the way `baton serve --docs` would hold an API key and a database URL."""
    env_secret, argv_secret = f"sk-env-{uuid.uuid4().hex}", f"postgres://u:pw-{uuid.uuid4().hex}@h/db"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("# Ok\nFine.\n")
    (docs / "environ.md").symlink_to("/proc/self/environ")
    (docs / "cmdline.md").symlink_to("/proc/self/cmdline")
    (docs / "maps.md").symlink_to("/proc/self/maps")
    (docs / "stdin.md").symlink_to("/proc/self/fd/0")
    script = textwrap.dedent("""
        import json, sys
        from baton.memory import MemoryStore, Principal, TrustedAuthenticator, index_doctrine
        store = MemoryStore("sqlite:///" + sys.argv[2], authenticator=TrustedAuthenticator())
        report = index_doctrine(store.open(Principal("acme")), sys.argv[1])
        print(json.dumps({item.path: item.reason.value for item in report.skipped}))
        store.close()
    """)
    env = {**os.environ, "BATON_TEST_PROVIDER_KEY": env_secret}
    done = subprocess.run([sys.executable, "-c", script, str(docs), str(tmp_path / "memory.sqlite"), argv_secret],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {name: "outside_folder" for name in
                                                        ("cmdline.md", "environ.md", "maps.md", "stdin.md")}
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    try:
        scope = store.open(Principal("acme"))
        assert doctrine_paths(store, scope) == {"ok.md"}
        assert not leaked(store, scope, tmp_path, env_secret, argv_secret, "pw-")
    finally:
        store.close()


def test_a_docs_folder_under_proc_is_refused(scope):
    with pytest.raises(InvalidRecordError, match="pseudo-filesystem"):
        index_doctrine(scope, "/proc/self")


# --- special files ------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_fifo_named_md_does_not_hang_and_is_reported(store, scope, docs, tmp_path):
    os.mkfifo(docs / "x.md")  # opening it for reading would block until a writer comes
    report = index_doctrine(scope, docs)
    assert reasons(report) == {"x.md": SkipReason.NOT_REGULAR}
    assert doctrine_paths(store, scope) == {"rules.md"}
    with pytest.raises(FileRefusedError) as info:
        read_file(docs, "x.md", max_bytes=None)
    assert info.value.reason is SkipReason.NOT_REGULAR


@pytest.mark.timeout(30)
def test_a_file_swapped_for_a_fifo_after_the_walk_is_refused_at_read_time(store, scope, docs):
    (docs / "swap.md").write_text("# Swap\nBefore.\n")

    def swapping_reader(root, relative, *, max_bytes):
        if relative == "swap.md":
            (docs / "swap.md").unlink()
            os.mkfifo(docs / "swap.md")
        return read_file(root, relative, max_bytes=max_bytes)

    report = index_doctrine(scope, docs, reader=swapping_reader)
    assert reasons(report) == {"swap.md": SkipReason.NOT_REGULAR}
    assert doctrine_paths(store, scope) == {"rules.md"}


def test_a_file_swapped_for_a_link_out_after_the_walk_is_refused_at_read_time(store, scope, docs, tmp_path):
    (docs / "swap.md").write_text("# Swap\nBefore.\n")

    def swapping_reader(root, relative, *, max_bytes):
        if relative == "swap.md":
            (docs / "swap.md").unlink()
            (docs / "swap.md").symlink_to(tmp_path / "outside" / "secret.md")
        return read_file(root, relative, max_bytes=max_bytes)

    report = index_doctrine(scope, docs, reader=swapping_reader)
    assert reasons(report) == {"swap.md": SkipReason.OUTSIDE}
    assert not leaked(store, scope, tmp_path, SECRET)


@pytest.mark.timeout(30)
def test_a_socket_named_md_is_reported(store, scope, tmp_path):
    docs = tmp_path / "d"  # short: a socket path is limited to ~108 bytes
    docs.mkdir()
    (docs / "ok.md").write_text("# Ok\nFine.\n")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(docs / "s.md"))
        report = index_doctrine(scope, docs)
    finally:
        server.close()
    assert reasons(report) == {"s.md": SkipReason.NOT_REGULAR}
    assert doctrine_paths(store, scope) == {"ok.md"}


def test_devices_are_refused_by_the_reader(tmp_path):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "zero.md").symlink_to("/dev/zero")  # outside; and as a folder, /dev itself is refused
    listing = walk_folder(docs)
    assert [(s.path, s.reason) for s in listing.skipped] == [("zero.md", SkipReason.OUTSIDE)]
    with pytest.raises(FileRefusedError) as info:
        walk_folder("/dev")
    assert "pseudo-filesystem" in str(info.value)


# --- content ----------------------------------------------------------------------------------------


def test_non_utf8_binary_and_oversized_files_are_reported_and_skipped(store, scope, docs, tmp_path):
    (docs / "latin.md").write_bytes("# Caf\xe9\nCr\xe8me.\n".encode("latin-1"))
    (docs / "blob.md").write_bytes(b"# Blob\n\0\0\0")
    (docs / "huge.md").write_text("# Huge\n" + "x" * 5000)
    limits = FolderLimits(max_file_bytes=4096, max_total_bytes=1 << 20)
    report = index_doctrine(scope, docs, limits=limits)
    assert reasons(report) == {"latin.md": SkipReason.UNDECODABLE, "blob.md": SkipReason.BINARY,
                               "huge.md": SkipReason.TOO_LARGE}
    assert doctrine_paths(store, scope) == {"rules.md"}
    assert all("x" * 100 not in r.text for r in store.list_records(scope, kind="doctrine"))


def test_the_folder_total_and_file_count_caps(store, scope, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md", "d.md"):
        (docs / name).write_text(f"# {name}\n" + "y" * 500)
    report = index_doctrine(scope, docs, limits=FolderLimits(max_total_bytes=1100))
    assert reasons(report) == {"c.md": SkipReason.TOTAL_CAP, "d.md": SkipReason.TOTAL_CAP}
    (docs / "0sub").mkdir()  # listed before the files, walked after them
    (docs / "0sub" / "e.md").write_text("# e\n")
    counted = walk_folder(docs, limits=FolderLimits(max_files=2))
    assert [f.relative for f in counted.files] == ["a.md", "b.md"]
    assert [(s.path, s.reason) for s in counted.skipped] == [("c.md", SkipReason.TOO_MANY)]  # the walk stops there


def test_hidden_files_and_folders_are_not_indexed(store, scope, docs):
    (docs / ".git").mkdir()
    (docs / ".git" / "notes.md").write_text("# Git\nFrom .git\n")
    (docs / ".env.md").write_text("# Env\nAPI_KEY=from-dotfile\n")
    (docs / "node_modules").mkdir()
    (docs / "node_modules" / "pkg.md").write_text("# Pkg\nvendored\n")
    (docs / "visible.md").symlink_to(".git/notes.md")  # a link inside, to a hidden file
    report = index_doctrine(scope, docs)
    assert reasons(report) == {".git": SkipReason.HIDDEN, ".env.md": SkipReason.HIDDEN,
                               "node_modules": SkipReason.EXCLUDED, "visible.md": SkipReason.HIDDEN_TARGET}
    assert [s.path for s in report.refused] == ["visible.md"]  # hidden/excluded are quiet
    texts = " ".join(r.text for r in store.list_records(scope, kind="doctrine"))
    assert "From .git" not in texts and "from-dotfile" not in texts and "vendored" not in texts


def test_dotdot_and_odd_names_stay_inside_and_are_named_as_shown(store, scope, docs, tmp_path):
    (docs / "x..md").write_text("# Dots\nTwo dots.\n")
    (docs / "..md").write_text("# Hidden\nA dot name.\n")
    (docs / "a\\..\\..\\outside\\secret.md").write_text("# Backslashes\nJust a name here.\n")
    (docs / "evil\n# Injected.md").write_text("# Evil\nA newline in the name.\n")
    (docs / ("n" * 150)).mkdir()
    (docs / ("n" * 150) / ("m" * 150 + ".md")).write_text("# Long\nPath too long for the entity column.\n")
    (docs / "A.md").write_text("# Upper\nUpper case.\n")
    (docs / "a.md").write_text("# Lower\nSame entity as A.md.\n")
    report = index_doctrine(scope, docs)
    got = reasons(report)
    assert got["..md"] is SkipReason.HIDDEN and got["a.md"] is SkipReason.BAD_NAME
    assert got["evil\\n# Injected.md"] is SkipReason.BAD_NAME
    assert got["n" * 150 + "/" + "m" * 150 + ".md"] is SkipReason.BAD_NAME
    assert doctrine_paths(store, scope) == {"rules.md", "x..md", "a\\..\\..\\outside\\secret.md", "A.md"}
    assert not leaked(store, scope, tmp_path, SECRET)
    for escape in ("../outside/secret.md", "sub/../../outside/secret.md", str(tmp_path / "outside" / "secret.md")):
        with pytest.raises(FileRefusedError) as info:
            read_file(docs, escape, max_bytes=None)
        assert info.value.reason in (SkipReason.OUTSIDE, SkipReason.UNREADABLE)


def test_a_very_deep_tree_is_capped_without_exhausting_recursion(store, scope, tmp_path, request):
    docs = tmp_path / "deep"
    levels = [str(docs)]
    os.mkdir(docs)
    for _ in range(1200):  # deeper than Python's recursion limit (os.makedirs and pathlib recurse)
        levels.append(os.path.join(levels[-1], "d"))
        os.mkdir(levels[-1])

    def remove_deep_tree() -> None:  # pytest's own clean-up recurses
        os.remove(os.path.join(levels[-1], "bottom.md"))
        for path in reversed(levels[1:]):
            os.rmdir(path)

    request.addfinalizer(remove_deep_tree)
    Path(levels[-1], "bottom.md").write_text("# Bottom\nVery deep.\n")
    (docs / "top.md").write_text("# Top\nAt the top.\n")
    report = index_doctrine(scope, docs)
    assert reasons(report) == {"/".join(["d"] * (DOCTRINE_LIMITS.max_depth + 1)): SkipReason.TOO_DEEP}
    assert doctrine_paths(store, scope) == {"top.md"}
    unbounded = walk_folder(docs, limits=FolderLimits(max_depth=5000))
    assert [f.relative for f in unbounded.files] == ["/".join(["d"] * 1200) + "/bottom.md", "top.md"]


def test_a_file_that_becomes_a_link_out_has_its_sections_retired(store, scope, docs, tmp_path):
    index_doctrine(scope, docs)
    (docs / "rules.md").unlink()
    (docs / "rules.md").symlink_to(tmp_path / "outside" / "secret.md")
    report = index_doctrine(scope, docs)
    assert reasons(report) == {"rules.md": SkipReason.OUTSIDE} and len(report.retired) == 2
    assert store.list_records(scope, kind="doctrine") == []
    assert not leaked(store, scope, tmp_path, SECRET)


def test_a_missing_folder_is_a_typed_error(scope, tmp_path):
    with pytest.raises(InvalidRecordError):
        index_doctrine(scope, tmp_path / "missing")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(InvalidRecordError, match="not a folder"):
        index_doctrine(scope, tmp_path / "file.md")


@pytest.mark.timeout(30)
async def test_the_knowledge_loader_applies_the_same_rules(docs, tmp_path):
    (docs / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    (docs / "environ.txt").symlink_to("/proc/self/environ")
    (docs / "shared").symlink_to(tmp_path / "outside")
    os.mkfifo(docs / "pipe.md")
    (docs / ".git").mkdir()
    (docs / ".git" / "x.md").write_text(SECRET)
    index = KnowledgeIndex()
    report = await index.add_directory(docs)
    assert report.added == ["rules.md"]
    assert {item.path: item.reason for item in report.skipped if not item.reason.quiet} == {
        "leak.md": SkipReason.OUTSIDE, "passwd.txt": SkipReason.OUTSIDE, "environ.txt": SkipReason.OUTSIDE,
        "shared": SkipReason.OUTSIDE, "pipe.md": SkipReason.NOT_REGULAR}
    assert sorted(report.failed) == ["environ.txt", "leak.md", "passwd.txt", "pipe.md", "shared"]
    assert all(SECRET not in chunk.text and "root:x:0:0" not in chunk.text for chunk in await index.chunks())
    await index.close()


# --- incremental ------------------------------------------------------------------------------------


def test_reindex_reads_nothing_and_writes_nothing_when_nothing_changed(store, scope, tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\nAlpha.\n\n# B\nBeta.\n")
    (docs / "sub" / "c.md").write_text("# C\nGamma.\n")
    (docs / "gone.md").write_text("# Gone\nSoon removed.\n")
    (docs / "latin.md").write_bytes(b"# L\ncaf\xe9\n")
    reader = CountingReader()
    first = index_doctrine(scope, docs, reader=reader)
    assert sorted(reader.calls) == ["a.md", "gone.md", "latin.md", "sub/c.md"] and len(first.added) == 4

    reader.calls.clear()
    head = store.head_seq(scope)
    again = index_doctrine(scope, docs, reader=reader)
    assert reader.calls == [] and again.read == []  # no file opened
    assert store.head_seq(scope) == head  # nothing written
    assert again.unchanged == 4 and not (again.added or again.updated or again.retired)
    assert reasons(again) == {"latin.md": SkipReason.UNDECODABLE}  # still reported, not re-read

    (docs / "a.md").write_text("# A\nAlpha, revised.\n\n# B\nBeta.\n")
    (docs / "gone.md").unlink()
    (docs / "new.md").write_text("# New\nDelta.\n")
    changed = index_doctrine(scope, docs, reader=reader)
    assert sorted(reader.calls) == ["a.md", "new.md"]  # only what changed or appeared
    assert (len(changed.updated), len(changed.added), len(changed.retired), changed.unchanged) == (1, 1, 1, 2)
    texts = {r.text for r in store.list_records(scope, kind="doctrine")}
    assert "Alpha, revised." in texts and "Soon removed." not in texts and "Delta." in texts

    reader.calls.clear()
    head = store.head_seq(scope)
    assert index_doctrine(scope, docs, reader=reader).read == [] and reader.calls == []
    assert store.head_seq(scope) == head


def test_a_touched_file_is_read_once_and_a_record_retired_by_hand_comes_back(store, scope, docs):
    reader = CountingReader()
    index_doctrine(scope, docs, reader=reader)
    stat = (docs / "rules.md").stat()
    os.utime(docs / "rules.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    reader.calls.clear()
    touched = index_doctrine(scope, docs, reader=reader)
    assert reader.calls == ["rules.md"] and touched.unchanged == 2 and not touched.updated  # content equal
    reader.calls.clear()
    index_doctrine(scope, docs, reader=reader)
    assert reader.calls == []  # the new fingerprint was remembered
    record = store.list_records(scope, kind="doctrine")[0]
    store.set_status(scope, record.id, "retired", "by hand")
    healed = index_doctrine(scope, docs, reader=reader)
    assert reader.calls == ["rules.md"] and len(healed.added) == 1  # the folder stays the source of truth
    assert len(store.list_records(scope, kind="doctrine")) == 2


def test_the_manifest_holds_paths_and_numbers_only(store, scope, docs):
    index_doctrine(scope, docs)
    manifests = [e for e in store.events(scope) if e.type == "doctrine.manifest"]
    assert len(manifests) == 1
    body = json.dumps(manifests[0].payload)
    assert "rules.md" in body and "net of refunds" not in body and "monthly" not in body
    assert store.check_projection(scope) == []  # the manifest stream does not touch records
