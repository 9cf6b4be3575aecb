"""DuckDB and SQLite canaries for the red-team modules: files, database bytes, session state.

Embedded engines have no roles, so the two runs of each case are:
- ``guarded``: ``SQLConnection`` on the canary database, exactly as a workspace opens it
  (read-only file; DuckDB without external access and with its configuration locked; SQLite
  with ``query_only`` and its authorizer);
- ``check_alone``: the parser check (``check_safety``) and then, if it says safe, the statement on
  a plain writable connection to a fresh copy of the database (DuckDB with external access on,
  a temporary HTTP secret defined, SQLite as ``sqlite3.connect`` opens it). This is the
  embedded engines' "superuser": what the check alone lets through.

Probes: every file under the canary folder and the database folder (names, sizes, mtimes, and a
sha256 of each database file), and the next request's session on the same connection (temporary
objects, variables, macros, prepared statements, attached databases, loaded extensions,
settings, external resource types, rows seen through the usual name, a ``random()`` after a known
``setseed``). Secrets: the canary file's tokens (``read_text``, ``glob``, ``readfile``...), the
DuckDB secret's scope, and an environment variable (``getenv``, where the build has it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import duckdb
import sqlalchemy as sa

from baton.errors import BatonError
from redteam_support import CanaryFiles, Case, Outcome, Secrets, differences, render, session_differences, supplied_text, verdict

SEEDS = (0.0, 0.5, -0.5, 0.25, 1.0, -1.0, 0.42)  # the only setseed() values the DuckDB corpus uses
ENV_SECRET = "BATON_RT_ENV_SECRET"

_DUCKDB_STATE = (
    ('temp_tables', 'SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary)'),
    ('temp_views', 'SELECT (SELECT count(*) FROM duckdb_views() WHERE temporary)'),
    ('variables', 'SELECT (SELECT count(*) FROM duckdb_variables())'),
    ('prepared', 'SELECT (SELECT count(*) FROM duckdb_prepared_statements())'),
    ('user_functions', 'SELECT (SELECT count(*) FROM duckdb_functions() WHERE NOT internal)'),
    ('user_types', 'SELECT (SELECT count(*) FROM duckdb_types() WHERE NOT internal)'),
    ('temp_sequences', 'SELECT (SELECT count(*) FROM duckdb_sequences() WHERE temporary)'),
    ('databases', "SELECT (SELECT string_agg(database_name, ',' ORDER BY database_name) FROM duckdb_databases())"),
    ('extensions', "SELECT (SELECT string_agg(extension_name, ',' ORDER BY extension_name) FROM duckdb_extensions() WHERE loaded)"),
    ('resource_types', 'SELECT (SELECT count(*) FROM duckdb_external_resource_types())'),
    ('resources', 'SELECT (SELECT count(*) FROM duckdb_external_resources())'),
    ('settings', "SELECT (SELECT md5(string_agg(name || '=' || coalesce(value, ''), ',' ORDER BY name)) FROM duckdb_settings())"),
    ('tables', "SELECT (SELECT string_agg(table_name, ',' ORDER BY table_name) FROM duckdb_tables())"),
    ('rows_seen', "SELECT (SELECT count(*) || ':' || md5(string_agg(id::text || name, ',' ORDER BY id)) FROM accounts)"),
    ('sequence', "SELECT (SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'seq')"),
    ('schema_', 'SELECT current_schema()'),
    ('random_value', 'SELECT random()'),
)
_SQLITE_STATE = (
    ('temp_objects', 'SELECT (SELECT count(*) FROM temp.sqlite_master)'),
    ('databases', "SELECT (SELECT group_concat(name, ',') FROM pragma_database_list)"),
    ('query_only', 'SELECT (SELECT query_only FROM pragma_query_only)'),
    ('writable_schema', 'SELECT (SELECT writable_schema FROM pragma_writable_schema)'),
    ('reverse_unordered_selects', 'SELECT (SELECT reverse_unordered_selects FROM pragma_reverse_unordered_selects)'),
    ('trusted_schema', 'SELECT (SELECT trusted_schema FROM pragma_trusted_schema)'),
    ('foreign_keys', 'SELECT (SELECT foreign_keys FROM pragma_foreign_keys)'),
    ('recursive_triggers', 'SELECT (SELECT recursive_triggers FROM pragma_recursive_triggers)'),
    ('cache_size', 'SELECT (SELECT cache_size FROM pragma_cache_size)'),
    ('user_version', 'SELECT (SELECT user_version FROM pragma_user_version)'),
    ('journal_mode', 'SELECT (SELECT journal_mode FROM pragma_journal_mode)'),
    ('like_ignores_case', "SELECT 'a' LIKE 'A'"),
    ('rows_seen', "SELECT (SELECT count(*) || ':' || group_concat(id || name, ',') FROM (SELECT id, name FROM accounts ORDER BY id))"),
)
_SETUP = (
    "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name VARCHAR(50), balance DECIMAL(10, 2))",
    "INSERT INTO accounts VALUES (1, 'Ada', 120.5), (2, 'Bo', 80), (3, 'Cy', 0), (4, 'Di', 42)",
    "CREATE VIEW rich AS SELECT * FROM accounts WHERE balance > 50",
)


class EmbeddedRig:
    def __init__(self, engine: str, folder: Path) -> None:
        self.engine, self.folder = engine, folder
        self.token = uuid.uuid4().hex[:10]
        self.secrets = Secrets()
        self.files: CanaryFiles | None = None
        self.pristine = folder / f"pristine.{engine}"
        self.database = folder / f"guarded.{engine}"
        self.env_secret = f"rtenv{uuid.uuid4().hex[:16]}"
        self.scope_secret = f"https://rtscope{uuid.uuid4().hex[:12]}.example"
        # outside the workspace (schema main): a value, a view's text, a constraint's text, a macro's body
        # (DuckDB's statistics keep a string's first 12 bytes: the value's are random)
        self.other_secrets = [f"{uuid.uuid4().hex[:12]}rtother{kind}" for kind in ("value", "view", "check", "macro")]
        self.seeded_randoms: set[float] = set()
        self._previous_env: str | None = None
        self._fresh_state: dict[str, Any] | None = None
        self._unguarded: tuple[Any, Path] | None = None
        self._broken_probes: dict[bool, dict[str, str]] = {}  # probes a kind of connection cannot run

    @property
    def url(self) -> str:
        return f"{self.engine}:///{self.database}"

    def values(self, out: str) -> dict[str, Any]:
        files = self.files
        stem = files.file.with_suffix("")
        return {"file": files.file, "dir": files.root, "out": out, "passwd": "/etc/passwd",
                "parquet": f"{stem}.parquet", "json": f"{stem}.json", "token": self.token, "env": ENV_SECRET}

    def start(self) -> None:
        self.files = CanaryFiles.create(self.token)
        self._make_database(self.pristine)
        shutil.copy(self.pristine, self.database)
        self.secrets.add(*self.files.needles(), self.env_secret, self.scope_secret, *self.other_secrets,
                         self.other_secrets[0][:12])
        # paths: where the database lives (duckdb_databases(), pragma_database_list) and where
        # Baton lets DuckDB spill (current_setting('temp_directory'))
        self.secrets.add(str(self.folder), "baton-duckdb-")
        self.secrets.numbers.add(len(self.files.content))
        self._previous_env = os.environ.get(ENV_SECRET)
        os.environ[ENV_SECRET] = self.env_secret
        if self.engine == "duckdb":
            with duckdb.connect() as c:  # parquet and JSON copies of the secret file, same stem
                stem = self.files.file.with_suffix("")
                c.execute(f"COPY (SELECT '{self.files.content_token}' AS s) TO '{stem}.parquet' (FORMAT parquet)")
                c.execute(f"COPY (SELECT '{self.files.content_token}' AS s) TO '{stem}.json' (FORMAT json)")
                for seed in SEEDS:
                    c.execute("SELECT setseed(?)", [seed])
                    self.seeded_randoms.update(c.execute("SELECT random()").fetchone()[0] for _ in range(20))

    def stop(self) -> None:
        self.stop_unguarded()
        if self._previous_env is None:
            os.environ.pop(ENV_SECRET, None)
        else:
            os.environ[ENV_SECRET] = self._previous_env
        if self.files is not None:
            self.files.remove()

    def _make_database(self, path: Path) -> None:
        if self.engine == "duckdb":
            with duckdb.connect(str(path)) as c:
                for sql in _SETUP:
                    c.execute(sql)
                c.execute("CREATE SEQUENCE seq START 100")
                c.execute("SELECT nextval('seq')")
                value, view, check, macro = self.other_secrets
                c.execute("CREATE SCHEMA other")
                c.execute(f"CREATE TABLE other.vault (s VARCHAR CHECK (s <> '{check}'))")
                c.execute(f"INSERT INTO other.vault VALUES ('{value}')")
                c.execute(f"CREATE VIEW other.vault_view AS SELECT '{view}' AS s")
                c.execute(f"CREATE MACRO other.vault_macro() AS '{macro}'")
                c.execute("CHECKPOINT")  # pragma_storage_info reads the min/max of what is on disk
        else:
            with sqlite3.connect(path) as c:
                for sql in _SETUP:
                    c.execute(sql)
            c.close()

    # --- the check-alone run ---------------------------------------------------------------------

    def open_unguarded(self) -> tuple[Any, Path]:
        """A writable connection to a fresh copy of the database, with nothing but the check
        in front of it."""
        path = self.folder / f"unguarded.{self.engine}"  # one name: DuckDB names the database after it
        shutil.copy(self.pristine, path)
        if self.engine == "duckdb":
            conn = duckdb.connect(str(path))
            try:
                conn.execute(f"CREATE SECRET rt_secret (TYPE http, BEARER_TOKEN 'rtbearer{self.token}', "
                             f"SCOPE '{self.scope_secret}')")
            except duckdb.Error:
                pass  # no secret manager here: the scope needle simply never appears
            return conn, path
        return sqlite3.connect(path, isolation_level=None), path

    def run_check_alone(self, conn: Any, sql: str) -> Outcome:
        """With the relation policy a workspace on this file would have (``SQLConnection``:
        schema ``main`` and the file's own catalog name)."""
        from baton.specialists.sql.safety import UnsafeQueryError, check_safety
        from baton.specialists.sql.safety.relations import RelationPolicy

        policy = RelationPolicy(frozenset({"main", "unguarded"}), "main")
        verdict = check_safety(sql, self.engine, relations=policy)
        if not verdict.safe:
            return Outcome([verdict.reason], UnsafeQueryError(verdict))
        try:
            cursor = conn.execute(sql)
            rows = cursor.fetchmany(1000) if cursor.description else []
            return Outcome([[d[0] for d in cursor.description or []], rows])
        except (duckdb.Error, sqlite3.Error) as error:  # the engine's own refusal, typed by its driver
            return Outcome([str(error)], error)

    def attempt_check_alone(self, case: Case) -> None:
        """One case on the writable copy: snapshots around it, the same connection's next
        request after it, secrets in whatever came back. A refused statement never reached the
        connection, so only the files are probed then. The copy is replaced after any case that
        left a trace, so every case meets a fresh one."""
        values = self.values(self.files.out(case.param_id))
        sql = render(case.sql, values, self.engine)
        known = supplied_text(case.sql, values, sql)
        if self._unguarded is None:
            self._unguarded = self.open_unguarded()
            self._fresh_state = self._fresh_state or self.session_state(self._unguarded[0])
        conn, path = self._unguarded
        before = self.snapshot(path)
        outcome = self.run_check_alone(conn, sql)
        after = self.snapshot(path)
        problems = differences(before, after)
        problems += [f"secret returned: {hit}" for hit in self.secrets.found_in(*outcome.returned) if hit not in known]
        if not isinstance(outcome.error, BatonError):
            try:
                problems += self.session_problems(self.session_state(conn), self._fresh_state)
            except (duckdb.Error, sqlite3.Error) as error:
                problems.append(f"next request failed: {type(error).__name__}: {error}")
            if problems or outcome.error is None:
                self.close_unguarded(conn, path)  # it ran: start the next case on a fresh copy
                self._unguarded = None
        self.repair(before, after)
        verdict(case, sql, outcome, problems)

    def stop_unguarded(self) -> None:
        if self._unguarded is not None:
            self.close_unguarded(*self._unguarded)
            self._unguarded = None

    def close_unguarded(self, conn: Any, path: Path) -> None:
        conn.close()
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink(missing_ok=True)

    # --- probes -----------------------------------------------------------------------------------

    def snapshot(self, database: Path | None = None) -> dict[str, Any]:
        snap: dict[str, Any] = {"files": self.files.listing()}
        target = database or self.database
        snap["database_folder"] = sorted(p.name for p in self.folder.iterdir() if p.name.startswith(target.name))
        snap["database_bytes"] = hashlib.sha256(target.read_bytes()).hexdigest()
        return snap

    def session_state(self, connection: Any) -> dict[str, Any]:
        """Each probe on its own, and a probe the connection may not run (DuckDB without
        external access cannot list extensions) reads as its error, the same every time."""
        probes = _DUCKDB_STATE if self.engine == "duckdb" else _SQLITE_STATE
        pooled = hasattr(connection, "exec_driver_sql")
        broken = self._broken_probes.get(pooled, {})
        combined = "SELECT " + ", ".join(f"({sql}) AS {key}" for key, sql in probes if key not in broken)
        try:  # one round trip for every probe known to run on this kind of connection
            if pooled:
                state = dict(connection.exec_driver_sql(combined).mappings().one())
            else:
                cursor = connection.execute(combined)
                state = dict(zip([d[0] for d in cursor.description], cursor.fetchone()))
            self._broken_probes.setdefault(pooled, {})
            return {**state, **broken}
        except (duckdb.Error, sqlite3.Error, sa.exc.DBAPIError):
            if pooled:
                connection.rollback()
        learning = pooled not in self._broken_probes  # only a fresh connection's failures are "can't run here"
        state = {}
        for key, sql in probes:
            try:
                if pooled:
                    state[key] = connection.exec_driver_sql(sql).scalar()
                else:
                    state[key] = connection.execute(sql).fetchone()[0]
            except (duckdb.Error, sqlite3.Error, sa.exc.DBAPIError) as error:
                state[key] = f"error: {type(getattr(error, 'orig', error)).__name__}"
                if learning:
                    self._broken_probes.setdefault(pooled, {})[key] = state[key]
                if pooled:
                    connection.rollback()
        self._broken_probes.setdefault(pooled, {})
        return state

    def session_problems(self, state: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
        return session_differences(state, baseline, self.seeded_randoms)

    def repair(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        self.files.sweep()
