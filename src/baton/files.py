"""Reading the operator's folders: one set of rules for every folder Baton reads.

Doctrine (``baton.memory.doctrine``), the knowledge loader
(``baton.specialists.knowledge.loading``) and the embedding model's identity digest all read
folders someone else fills. A folder is not trusted just because the operator named it: a
teammate, a ``git pull`` or a synced drive can put a link to ``/proc/self/environ`` (every
API key of the process) or a FIFO named ``x.md`` (a read that never returns) in it. The
rules, for every reader:

- **Confined.** A file is read only when its real path (links resolved) lies inside the
  folder's real path. A link pointing out — to ``/proc/self/environ``, ``/etc/passwd``, a
  sibling folder — is reported (``outside_folder``) and never opened. A link that stays
  inside is read under its own name. Links to folders are not followed
  (``linked_folder``): no loops, no file seen twice. A dangling or looping link is
  ``broken_link``. Folders under ``/proc``, ``/sys`` or ``/dev`` are refused outright.
- **Race-free open.** ``read_file`` opens the resolved path one component at a time from a
  descriptor of the folder with ``O_NOFOLLOW``, so a component swapped for a link after the
  check fails instead of leading out; the file itself is opened with ``O_NONBLOCK`` only
  after ``lstat`` says it is a regular file, and ``fstat`` checks again on the descriptor.
- **Regular files only.** FIFOs, sockets and devices are ``not_regular_file``, reported,
  never opened by a walk and never read.
- **Hidden skipped.** A name starting with ``.`` (``.git/``, ``.env``) is not entered or
  read (``hidden``); neither are dependency and build folders (``excluded``:
  ``node_modules``, ``__pycache__``, ``venv``, ...). These two are *quiet*: expected, logged
  at debug level by callers, not warnings.
- **Bounded.** Per file (``too_large``), per folder in bytes (``total_cap``; files are
  taken in path order, so which ones fit is stable), in number of files (``too_many_files``:
  the walk stops there) and in depth (``too_deep``). The walk is iterative, so a very deep
  tree cannot exhaust the interpreter's recursion limit either.
- **Names Baton can show.** A name with control characters (a newline would forge a line in
  a log or a prompt) or bytes that are not UTF-8 is ``bad_name``.
- **Decoding is the caller's** (``decode_utf8`` for readers that want UTF-8 or nothing:
  ``undecodable``, ``binary``); the knowledge loader keeps its Latin-1 fallback for
  documents, recorded on the document.

Every refusal is a ``Skipped`` (path, typed ``SkipReason``, detail) in the listing, or a
``FileRefusedError`` (a ``BatonError``) from ``read_file``; callers report them.

Not covered, on purpose: hard links (a hard link inside the folder *is* a file of the
folder; the kernel's ``protected_hardlinks`` stops links to files the operator cannot
read) and mount points inside the folder (mounting needs privileges).

Layer: this module sits with the protocol layer (``baton.messages``, ``baton.errors``) and
imports only ``baton.errors``, so memory (which imports nothing from the specialists) and the
knowledge specialist share it without an arrow running up or sideways between them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from baton.errors import BatonError

DEFAULT_EXCLUDED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target"})
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
_OPEN_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SkipReason(StrEnum):
    """Why a file or folder was not read. ``quiet`` ones are expected (hidden, excluded)."""

    HIDDEN = "hidden"
    HIDDEN_TARGET = "hidden_target"  # a visible link to a hidden file (``notes.md -> .git/x.md``): not quiet
    EXCLUDED = "excluded"
    OUTSIDE = "outside_folder"
    LINKED_FOLDER = "linked_folder"
    BROKEN_LINK = "broken_link"
    NOT_REGULAR = "not_regular_file"
    BAD_NAME = "bad_name"
    TOO_LARGE = "too_large"
    TOTAL_CAP = "total_cap"
    TOO_MANY = "too_many_files"
    TOO_DEEP = "too_deep"
    UNREADABLE = "unreadable"
    UNDECODABLE = "undecodable"
    BINARY = "binary"

    @property
    def quiet(self) -> bool:
        return self in (SkipReason.HIDDEN, SkipReason.EXCLUDED)


@dataclass(frozen=True)
class Skipped:
    """One thing not read: ``path`` relative to the folder (POSIX), the reason, a sentence
    for people, and for links the resolved ``target`` (a path, never content)."""

    path: str
    reason: SkipReason
    detail: str
    target: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


class FileRefusedError(BatonError):
    """A file (or folder) was refused under the rules above; ``reason`` says which."""

    def __init__(self, path: str, reason: SkipReason, detail: str, target: str | None = None):
        super().__init__(f"{path}: {detail}")
        self.path, self.reason, self.detail, self.target = path, reason, detail, target

    def skipped(self) -> Skipped:
        return Skipped(self.path, self.reason, self.detail, self.target)


@dataclass(frozen=True)
class FolderLimits:
    """Caps of one walk. ``None`` for a byte cap means unbounded."""

    max_file_bytes: int | None = 20 * 1024 * 1024
    max_total_bytes: int | None = 1024 * 1024 * 1024
    max_files: int = 100_000
    max_depth: int = 64
    excluded_dirs: frozenset[str] = DEFAULT_EXCLUDED_DIRS


@dataclass(frozen=True)
class FileEntry:
    """A regular file the walk may read: its path relative to the folder (a link inside the
    folder keeps its own name) and ``stat`` facts, taken without reading a byte."""

    relative: str
    size: int
    mtime_ns: int
    ctime_ns: int

    @property
    def fingerprint(self) -> tuple[int, int, int]:
        """(size, mtime_ns, ctime_ns): what a manifest compares to skip re-reading. ctime
        is in it because ``cp -p`` or ``touch -d`` can restore mtime, but not ctime."""
        return (self.size, self.mtime_ns, self.ctime_ns)


@dataclass
class FolderListing:
    root: Path  # the folder's real path
    files: list[FileEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def resolve_folder(folder: str | Path) -> Path:
    """The folder's real path, or ``FileRefusedError`` (missing, not a folder, or under a
    pseudo-filesystem)."""
    shown = str(folder)
    try:
        real = os.path.realpath(folder, strict=True)
    except OSError as exc:
        raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot open the folder: {exc.strerror or exc}") from exc
    if any(real == p or real.startswith(p + os.sep) for p in PSEUDO_FILESYSTEMS):
        raise FileRefusedError(shown, SkipReason.OUTSIDE, f"resolves to {real}, a pseudo-filesystem; not read", real)
    if not os.path.isdir(real):
        raise FileRefusedError(shown, SkipReason.NOT_REGULAR, "is not a folder")
    return Path(real)


def inside(real: str, root: str | Path) -> bool:
    root = str(root)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def bad_name(name: str) -> bool:
    """Control characters, or bytes that were not UTF-8 (decoded as lone surrogates)."""
    return any(ord(c) < 32 or ord(c) == 127 or 0xDC80 <= ord(c) <= 0xDCFF for c in name)


def hidden_part(relative: str) -> bool:
    """Whether any component of a path relative to the folder is hidden (``.git/x.md``)."""
    return any(part.startswith(".") for part in relative.split(os.sep))


def walk_folder(folder: str | Path, *, accept: Callable[[str], bool] = lambda name: True,
                limits: FolderLimits = FolderLimits()) -> FolderListing:
    """The regular files under ``folder`` whose names ``accept`` takes, in path order, and
    what was skipped and why. Reads no file content (``stat`` only). Files that ``accept``
    declines are not reported (an image in a docs folder is not news)."""
    listing = FolderListing(resolve_folder(folder))
    root = str(listing.root)
    total, stack = 0, [("", 0)]
    skip = listing.skipped.append
    while stack:
        rel_dir, depth = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skip(Skipped(rel_dir or ".", SkipReason.UNREADABLE, f"cannot list the folder: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name.startswith("."):
                skip(Skipped(rel, SkipReason.HIDDEN, "hidden; not read"))
                continue
            if bad_name(name):
                skip(Skipped(rel.encode("unicode_escape").decode("ascii"), SkipReason.BAD_NAME,
                             "a name with control characters or bytes that are not UTF-8; not read"))
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skip(Skipped(rel, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}"))
                continue
            if stat.S_ISLNK(info.st_mode):
                try:
                    real = os.path.realpath(entry.path, strict=True)
                    info = os.stat(real)
                except OSError:
                    if accept(name):
                        skip(Skipped(rel, SkipReason.BROKEN_LINK, "a dangling or looping link; not read"))
                    continue
                if stat.S_ISDIR(info.st_mode):
                    where = "outside the folder" if not inside(real, root) else "inside the folder"
                    skip(Skipped(rel, SkipReason.OUTSIDE if not inside(real, root) else SkipReason.LINKED_FOLDER,
                                 f"a link to a folder {where} ({real}); not followed", real))
                    continue
                if not accept(name):
                    continue
                if not inside(real, root):
                    skip(Skipped(rel, SkipReason.OUTSIDE, f"links to {real}, outside the folder; not read", real))
                    continue
                if hidden_part(os.path.relpath(real, root)):
                    skip(Skipped(rel, SkipReason.HIDDEN_TARGET, "links to a hidden file or folder; not read", real))
                    continue
            elif stat.S_ISDIR(info.st_mode):
                if name in limits.excluded_dirs:
                    skip(Skipped(rel, SkipReason.EXCLUDED, "a dependency or build folder; not read"))
                elif depth + 1 > limits.max_depth:
                    skip(Skipped(rel, SkipReason.TOO_DEEP, f"deeper than {limits.max_depth} folders; not read"))
                else:
                    subdirs.append(rel)
                continue
            elif not accept(name):
                continue
            if not stat.S_ISREG(info.st_mode):
                skip(Skipped(rel, SkipReason.NOT_REGULAR, "not a regular file (a FIFO, socket or device); not read"))
                continue
            if limits.max_file_bytes is not None and info.st_size > limits.max_file_bytes:
                skip(Skipped(rel, SkipReason.TOO_LARGE,
                             f"{info.st_size} bytes is over the {limits.max_file_bytes}-byte limit; not read"))
                continue
            if limits.max_total_bytes is not None and total + info.st_size > limits.max_total_bytes:
                skip(Skipped(rel, SkipReason.TOTAL_CAP,
                             f"would take the folder over its {limits.max_total_bytes}-byte limit; not read"))
                continue
            if len(listing.files) >= limits.max_files:
                skip(Skipped(rel, SkipReason.TOO_MANY, f"the folder has more than {limits.max_files} files; "
                                                       "the walk stopped here"))
                listing.files.sort(key=lambda f: f.relative)
                return listing
            total += info.st_size
            listing.files.append(FileEntry(rel, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
        stack.extend((d, depth + 1) for d in reversed(subdirs))
    listing.files.sort(key=lambda f: f.relative)
    return listing


def read_file(root: str | Path, relative: str, *, max_bytes: int | None) -> tuple[bytes, os.stat_result]:
    """Read ``relative`` (a path under ``root``, links allowed if they stay inside) under
    the rules above; returns the bytes and the ``fstat`` of what was read (a manifest must
    record what was read, not what the walk saw). Raises ``FileRefusedError``."""
    root = os.path.realpath(root)
    try:
        real = os.path.realpath(os.path.join(root, relative), strict=True)
    except FileNotFoundError as exc:
        raise FileRefusedError(relative, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
    except OSError as exc:  # ELOOP: a link cycle
        raise FileRefusedError(relative, SkipReason.BROKEN_LINK, "a looping link; not read") from exc
    if not inside(real, root) or real == root:
        raise FileRefusedError(relative, SkipReason.OUTSIDE,
                               f"resolves to {real}, outside the indexed folder; not read", real)
    parts = os.path.relpath(real, root).split(os.sep)
    if hidden_part(os.sep.join(parts)):
        raise FileRefusedError(relative, SkipReason.HIDDEN_TARGET, "is, or links to, a hidden file or folder; not read",
                               real)
    fd = _open_beneath(root, parts, relative)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefusedError(relative, SkipReason.NOT_REGULAR, "not a regular file (a FIFO, socket or device); not read")
        return _read_capped(fd, info, relative, max_bytes), info
    finally:
        os.close(fd)


def read_named_file(path: str | Path, *, max_bytes: int | None) -> tuple[bytes, os.stat_result]:
    """Read a file the operator named directly (no folder to confine it to: links are the
    operator's choice), still regular files only, never blocking, capped."""
    shown = str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise FileRefusedError(shown, SkipReason.NOT_REGULAR, "not a regular file (a FIFO, socket or device); not read")
    try:
        fd = os.open(path, _OPEN_FILE & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefusedError(shown, SkipReason.NOT_REGULAR, "not a regular file (a FIFO, socket or device); not read")
        return _read_capped(fd, info, shown, max_bytes), info
    finally:
        os.close(fd)


def within_values(document: object, limit: int) -> bool:
    """Whether a parsed document (YAML, JSON) holds at most ``limit`` values, counted as a walk
    would meet them: YAML aliases of aliases share one object but expand on every walk (a
    "billion laughs" bomb), so a reader counts before it walks."""
    budget = limit
    stack = [document]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def decode_utf8(raw: bytes, path: str) -> str:
    """UTF-8 text (a BOM dropped), or ``FileRefusedError`` (``binary``: NUL bytes;
    ``undecodable``: not UTF-8)."""
    if b"\0" in raw:
        raise FileRefusedError(path, SkipReason.BINARY, "looks binary (NUL bytes); not read")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRefusedError(path, SkipReason.UNDECODABLE, f"is not valid UTF-8 (byte {exc.start}); not read") from exc


def _open_beneath(root: str, parts: list[str], shown: str) -> int:
    """A descriptor for ``root/parts...``, no component followed if it became a link."""
    try:
        fd = os.open(root, _OPEN_DIR & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot open the folder: {exc.strerror or exc}") from exc
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                raise FileRefusedError(shown, SkipReason.BROKEN_LINK,
                                       f"its path changed while being read ({exc.strerror or exc}); not read") from exc
            os.close(fd)
            fd = child
        try:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device is never even opened
            reason = SkipReason.BROKEN_LINK if stat.S_ISLNK(info.st_mode) else SkipReason.NOT_REGULAR
            raise FileRefusedError(shown, reason, "not a regular file (a FIFO, socket, device or a link "
                                                  "that appeared meanwhile); not read")
        try:
            return os.open(parts[-1], _OPEN_FILE, dir_fd=fd)
        except OSError as exc:
            raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _read_capped(fd: int, info: os.stat_result, shown: str, max_bytes: int | None) -> bytes:
    if max_bytes is not None and info.st_size > max_bytes:
        raise FileRefusedError(shown, SkipReason.TOO_LARGE, f"{info.st_size} bytes is over the {max_bytes}-byte limit; not read")
    limit = None if max_bytes is None else max_bytes + 1
    chunks, size = [], 0
    while True:
        want = 1 << 20 if limit is None else min(1 << 20, limit - size)
        if want <= 0:
            break
        try:
            chunk = os.read(fd, want)
        except BlockingIOError:  # not a regular file after all (checked twice before): stop, never wait
            raise FileRefusedError(shown, SkipReason.NOT_REGULAR, "not a regular file; not read") from None
        except OSError as exc:
            raise FileRefusedError(shown, SkipReason.UNREADABLE, f"cannot read: {exc.strerror or exc}") from exc
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    if max_bytes is not None and len(data) > max_bytes:
        raise FileRefusedError(shown, SkipReason.TOO_LARGE, f"grew over the {max_bytes}-byte limit while read; not read")
    return data
