"""Shared harness of the red-team modules: corpus, canaries on disk, secret scanning, the run.

Each ``test_redteam_<engine>.py`` runs every statement of ``tests/redteam_corpus/<engine>.toml``
through the guarded path on the real engine and asserts that nothing happened: no file
created, no row, index page, sequence, slot, lock, setting or seed changed, no secret in
anything returned (rows, column names, error messages, the feedback the model would read), and
the next request on the same pooled connection sees a clean session. This module holds what
the four share; the engine-specific canaries and probes live in ``redteam_<engine>_rig.py``
(``redteam_embedded_rig.py`` for DuckDB and SQLite).

Decisions (the issue is silent on them):
- A statement passes when it raises a typed error (any ``BatonError``: ``UnsafeQueryError``,
  ``SQLExecutionError``, a future ``PrivilegedRoleError``) *or* returns a result, and in both
  cases every probe shows nothing happened. Any other exception fails the case: an untyped
  error is a bug of its own. A refusal is never required, so the cases stay valid whichever
  layer (parser check, engine guard, role privileges) ends up stopping each statement.
- Secrets are found by needles that no harmless statement of the corpus can produce: random
  tokens planted in a canary file, a canary session's query, a canary role's password hash,
  a user mapping, an environment variable; plus fixed markers of server files
  (``root:x:0:0``, ``pg_hba.conf`` paths). Matching is case-insensitive and also looks at the
  hex and base64 forms of the file's content and at its md5, so ``encode(..., 'hex')``,
  ``md5(...)`` and ``ts_stat`` word lists are caught too. An error message counts as returned
  (``CAST(pg_read_file(...) AS int)`` carries the file in the error text).
- The corpus is data (TOML, one inline table per line: id, class, encoding, sql, and
  ``agent = true`` for the subset that also goes through ``validate_and_run``). Placeholders:
  ``<<key>>`` is a value of the running harness (paths, pids, names with the run's token);
  ``<<U+00A0>>`` is that character (control and Unicode characters cannot be written in
  TOML); ``<<chr=text>>`` / ``<<chr:key>>`` is the text built at run time from character codes
  in the engine's own syntax (``chr(47)||chr(116)``, ``CHAR(47,116)``); ``<<ehex:key>>`` is a
  PostgreSQL ``E'\\x2f...'`` literal and ``<<hex:key>>`` a MySQL ``0x2f...`` one. Rendering is done
  per case, after the canaries (whose pids change when a canary session is killed) are refreshed.
- A needle the statement's author supplied (the canary file's path names it; an error message may
  echo the path back, even one built with ``chr()``) is an echo, not a leak (``supplied_text``).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import os
import re
import shutil
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from baton.errors import BatonError

CORPUS_DIR = Path(__file__).parent / "redteam_corpus"
MIN_CASES = 150
_PLAIN = re.compile(r"<<([A-Za-z_][A-Za-z0-9_]*|U\+[0-9A-Fa-f]{4,6})>>")
_BUILT = re.compile(r"<<(chr|ehex|hex)([=:])((?:(?!<<|>>).)*)>>", re.DOTALL)


# --- the corpus ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile statement. ``cls`` is the attack class, ``enc`` how it is written."""

    id: str
    cls: str
    enc: str
    sql: str
    agent: bool = False

    @property
    def param_id(self) -> str:
        return f"{self.cls}-{self.id}"


def load_corpus(engine: str) -> list[Case]:
    """The cases of ``redteam_corpus/<engine>.toml``; malformed entries fail loudly."""
    data = tomllib.loads((CORPUS_DIR / f"{engine}.toml").read_text(encoding="utf-8"))
    cases = [Case(e["id"], e["class"], e["enc"], e["sql"], bool(e.get("agent", False))) for e in data["cases"]]
    ids = [c.param_id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{engine}.toml: duplicate ids {duplicates}")
    return cases


def case_params(cases: Iterable[Case], *, agent_only: bool = False) -> list[Any]:
    return [pytest.param(c, id=c.param_id) for c in cases if c.agent or not agent_only]


def render(template: str, values: Mapping[str, Any], dialect: str) -> str:
    """The statement with its placeholders filled (see the module docstring)."""

    def plain(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.startswith("U+"):
            return chr(int(key[2:], 16))
        return str(values[key])

    def built(match: re.Match[str]) -> str:
        kind, how, arg = match.groups()
        text = str(values[arg]) if how == ":" else arg
        if kind == "ehex":
            return "E'" + "".join(f"\\x{b:02x}" for b in text.encode()) + "'"
        if kind == "hex":
            return "0x" + text.encode().hex()
        return chr_expression(text, dialect)

    return _BUILT.sub(built, _PLAIN.sub(plain, template))


def supplied_text(template: str, values: Mapping[str, Any], sql: str) -> str:
    """Everything the statement's author knew: its text and the values it names (even built with
    ``chr()``). A needle found there and echoed back (a path in an error message) is no leak."""
    keys = re.findall(r"<<(?:(?:chr|ehex|hex):)?([A-Za-z_][A-Za-z0-9_]*)>>", template)
    return "\n".join([sql, *(str(values[k]) for k in keys if k in values)]).lower()


def chr_expression(text: str, dialect: str) -> str:
    """SQL that builds ``text`` from character codes at run time, in ``dialect``'s syntax."""
    codes = [ord(ch) for ch in text]
    if dialect == "mysql":
        return "CHAR(" + ",".join(map(str, codes)) + " USING utf8mb4)"
    if dialect == "sqlite":
        return "char(" + ",".join(map(str, codes)) + ")"
    return "(" + "||".join(f"chr({c})" for c in codes) + ")"


# --- canary files ------------------------------------------------------------------------------


@dataclass
class CanaryFiles:
    """A world-writable folder under /tmp (the servers run as their own users and must be able
    to write there, or a refused write would prove nothing) holding one secret file whose name,
    content and size are unguessable."""

    root: Path
    file: Path
    content: bytes
    name_token: str
    content_token: str

    @classmethod
    def create(cls, token: str) -> CanaryFiles:
        root = Path("/tmp") / f"baton_rt_{token}"
        root.mkdir(mode=0o777)
        root.chmod(0o777)
        name_token, content_token = f"rtname{os.urandom(8).hex()}", f"rtcontent{os.urandom(8).hex()}"
        body = f"{content_token}\nnothing to see here\n".encode()
        content = body + b"#" * (20011 + int.from_bytes(os.urandom(2)) % 7919 - len(body))
        file = root / f"{name_token}.csv"
        file.write_bytes(content)
        file.chmod(0o644)
        return cls(root, file, content, name_token, content_token)

    def out(self, case_id: str) -> str:
        """Where a case may try to write: must still not exist afterwards."""
        return str(self.root / ("w_" + re.sub(r"[^A-Za-z0-9]", "_", case_id)))

    def listing(self) -> dict[str, tuple[int, int]]:
        found = {}
        for path in sorted(self.root.rglob("*")):
            info = path.lstat()
            found[str(path.relative_to(self.root))] = (info.st_size, info.st_mtime_ns)
        return found

    def sweep(self) -> None:
        """Remove whatever a case managed to write (the servers' files included)."""
        for path in self.root.iterdir():
            if path != self.file:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def needles(self) -> set[str]:
        head = self.content[:30]
        return {
            self.name_token, self.content_token, self.content_token.encode().hex(),
            base64.b64encode(head).decode()[:36], hashlib.md5(self.content).hexdigest(),
            f"({len(self.content)},", "root:x:0:0",
        }


# --- secrets --------------------------------------------------------------------------------------


@dataclass
class Secrets:
    """Text (case-insensitive) and integers that must never come back from a statement."""

    needles: set[str] = field(default_factory=set)
    numbers: set[int] = field(default_factory=set)

    def add(self, *texts: str) -> None:
        for text in texts:
            if text and len(text) >= 6:
                self.needles.add(text.lower())

    def add_pieces(self, text: str, minimum: int = 8) -> None:
        """A secret and its alphanumeric pieces (a tsvector or a regexp split returns those)."""
        self.add(text)
        self.add(*[p for p in re.split(r"[^A-Za-z0-9]+", text) if len(p) >= minimum])

    def found_in(self, *objects: Any) -> list[str]:
        hits: set[str] = set()
        for obj in objects:
            self._scan(obj, hits, 0)
        return sorted(hits)

    def _scan(self, obj: Any, hits: set[str], depth: int) -> None:
        if obj is None or depth > 12:
            return
        if isinstance(obj, bool):
            return
        if isinstance(obj, int):
            if obj in self.numbers:
                hits.add(f"the number {obj}")
            return
        if isinstance(obj, (bytes, bytearray, memoryview)):
            raw = bytes(obj)
            self._scan_text(raw.decode("latin-1") + "\n" + raw.hex(), hits)
            return
        if isinstance(obj, str):
            self._scan_text(obj, hits)
            return
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                self._scan(key, hits, depth + 1)
                self._scan(value, hits, depth + 1)
            return
        if isinstance(obj, (list, tuple, set, frozenset)):
            for item in obj:
                self._scan(item, hits, depth + 1)
            return
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                self._scan(getattr(obj, f.name), hits, depth + 1)
            return
        self._scan_text(str(obj), hits)

    def _scan_text(self, text: str, hits: set[str]) -> None:
        if text.strip().isdigit() and int(text.strip()) in self.numbers:
            hits.add(f"the number {text.strip()}")
        lowered = text.lower()
        hits.update(needle for needle in self.needles if needle in lowered)


# --- running one statement ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the caller got back: a result or a typed error, and everything a user or the model
    would see (scanned for secrets)."""

    returned: list[Any]
    error: BaseException | None = None
    summary: str = ""

    def describe(self) -> str:
        if self.summary:
            return self.summary
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {str(self.error)[:200]}"
        return "returned a result"


def run_guarded(conn: Any, sql: str) -> Outcome:
    """``SQLConnection.query``: the parser check, then the engine guard."""
    try:
        result = asyncio.run(conn.query(sql))
    except BatonError as error:
        return Outcome([str(error)], error)
    return Outcome([result.columns, result.rows])


def run_agent_path(conn: Any, schema: Any, sql: str) -> Outcome:
    """The agent's validate-and-run pass (check, pre-validation, guarded run), as the SQL
    agent calls it; the feedback text is what the model would read next."""
    from baton.specialists.sql.validation import validate_and_run

    try:
        report = asyncio.run(validate_and_run(sql, number=1, connection=conn, schema=schema))
    except BatonError as error:
        return Outcome([str(error)], error)
    attempt = report.attempt
    returned: list[Any] = [report.feedback, attempt.error, attempt.result_preview]
    if report.result is not None:
        returned += [report.result.columns, report.result.rows]
    return Outcome(returned, summary=f"validate_and_run: {attempt.outcome} ({attempt.error_class}): {str(attempt.error)[:200]}")


class PooledSession:
    """One ``SQLConnection`` with a pool of one (the next request lands on the same session).

    ``fresh`` is the session as logged in; ``baseline`` the session after one harmless guarded
    request went through the pool's reset, which every later next request must find again.
    The two should be the same (``test_a_reset_session_is_a_fresh_one``); the cases compare with
    ``baseline`` so that a reset that differs from a login fails one test, not every case."""

    def __init__(self, rig: Any, conn: Any) -> None:
        self.rig, self.conn = rig, conn
        self.fresh = self.state()
        asyncio.run(conn.execute_readonly("SELECT 1"))
        self.baseline = self.state()
        self._schema: Any = None

    def state(self) -> dict[str, Any]:
        with self.conn.engine.connect() as c:
            return self.rig.session_state(c)

    def schema(self) -> Any:
        if self._schema is None:
            self._schema = asyncio.run(self.conn.schema())
        return self._schema


def attempt(rig: Any, session: PooledSession, case: Case, dialect: str, *, via_agent: bool, counters: Iterable[str] = ()) -> None:
    """Run one case between two snapshots, then the next request; fail with every finding.

    ``rig`` is an engine's canary set: ``files``, ``secrets``, ``values(out)``, ``snapshot()``,
    ``session_state(connection)``, ``session_problems(state, baseline)``, ``repair(before, after)``.
    A session found dirty is thrown away afterwards (the pool is closed), so that one leak does
    not fail every later case."""
    values = rig.values(rig.files.out(case.param_id))
    sql = render(case.sql, values, dialect)
    known = supplied_text(case.sql, values, sql)
    before = rig.snapshot()
    outcome = run_agent_path(session.conn, session.schema(), sql) if via_agent else run_guarded(session.conn, sql)
    after = rig.snapshot()
    problems = differences(before, after, counters=counters)
    problems += [f"secret returned: {hit}" for hit in rig.secrets.found_in(*outcome.returned) if hit not in known]
    try:
        session_problems = rig.session_problems(session.state(), session.baseline)
    except sa.exc.SQLAlchemyError as error:  # a session the next request cannot use is a finding too
        session_problems = [f"next request failed: {type(error).__name__}: {error}"]
    problems += session_problems
    if session_problems:
        session.conn.close()
    rig.repair(before, after)
    verdict(case, sql, outcome, problems)


def session_differences(state: Mapping[str, Any], baseline: Mapping[str, Any], seeded: set[float]) -> list[str]:
    """What the next request finds that a clean session would not: changed probes (named down
    to the variable for dict-valued ones), or a random value that a known seed produces."""
    problems = []
    for key, value in baseline.items():
        now = state.get(key)
        if key == "random_value" or now == value:
            continue
        if isinstance(value, Mapping) and isinstance(now, Mapping):
            changed = sorted(k for k in set(value) | set(now) if value.get(k) != now.get(k))
            detail = ", ".join(f"{k}={now.get(k)!r} (was {value.get(k)!r})" for k in changed[:8])
            problems.append(f"next request: {key} differ: {detail}")
        else:
            problems.append(f"next request: {key} is {now!r}, was {value!r}")
    if state.get("random_value") in seeded:
        problems.append(f"next request: random() returned {state['random_value']!r}, a value of a known seed")
    return problems


def privileged_options() -> dict[str, Any]:
    """``allow_privileged_role=True`` once ``ConnectionOptions`` has it, nothing before: the
    superuser runs are meant to show the check alone holding, not the connect-time refusal."""
    from baton.specialists.sql.connection import ConnectionOptions

    names = {f.name for f in dataclasses.fields(ConnectionOptions)}
    return {"allow_privileged_role": True} if "allow_privileged_role" in names else {}


def differences(before: Mapping[str, Any], after: Mapping[str, Any], *, counters: Iterable[str] = ()) -> list[str]:
    """What changed between two probe snapshots; ``counters`` may grow but never shrink."""
    growing = set(counters)
    problems = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if key in growing:
            if old is not None and (new is None or new < old):
                problems.append(f"{key} went from {old!r} to {new!r} (reset)")
        elif old != new:
            problems.append(f"{key} changed: {_short(old)} -> {_short(new)}")
    return problems


def verdict(case: Case, sql: str, outcome: Outcome, problems: list[str]) -> None:
    """Fail the test with everything an engineer fixing the check needs to see."""
    if problems:
        lines = "\n  - ".join(problems)
        pytest.fail(f"[{case.param_id}] {outcome.describe()}\n  SQL: {sql!r}\n  - {lines}", pytrace=False)


def assert_world_writable(path: Path) -> None:
    assert stat.S_IMODE(path.stat().st_mode) == 0o777, "the servers could not write here: a refusal would prove nothing"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."

