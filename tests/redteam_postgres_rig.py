"""PostgreSQL canaries for the red-team module: what an attack could change, and the probes.

Everything lives in a database of its own (``baton_rt_<token>``), so probing extensions
(``pageinspect``, ``dblink``) and per-database statistics resets touch no one else; the roles,
slots and the subscription carry the token in their names and are removed at the end.

Canaries (set up as the server's superuser, which the tests on this machine connect as):
- ``rt.accounts`` (rows), ``rt.seq`` (a sequence at 100), a large object with known content;
- ``rt.brin_i`` on ``rt.brin_t``: half of its ranges summarized, half not (rows added after
  the index, autovacuum off), and ``rt.gin_i`` with entries in its pending list, so
  ``brin_summarize_*``, ``brin_desummarize_range`` and ``gin_clean_pending_list`` all have
  something to change; the probe is an md5 over every raw page of both indexes;
- roles: the demo's least-privilege role, made by ``baton db grant``'s own statements
  (``tests/least_privilege.py``: LOGIN, no superuser or built-in roles, CONNECT, USAGE on ``rt``,
  SELECT on its tables, read-only by default; ``PUBLIC`` loses TEMP and CONNECT on the
  database), and a NOLOGIN role with a password whose SCRAM hash must never come back; a user
  mapping and a subscription whose connection strings hold passwords;
- a LISTENing session logged in as the least-privilege role (the role may signal its own
  sessions: terminating it is a real attack even without privileges), and a superuser session
  busy with a query whose text holds a secret (``pg_stat_activity.query``; cancelling it is
  detected).

After each case ``repair`` restores whatever changed (rows, sequence, indexes, large object,
canary sessions, slots, files) so that every case meets the same state.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg.conninfo import make_conninfo

from baton.specialists.sql.grants import apply_grant_statements, grant_statements
from least_privilege import ReaderRole, create_reader_role, drop_reader_role
from redteam_support import CanaryFiles, Secrets, session_differences

SEEDS = (0.0, 0.5, -0.5, 0.25, 1.0, -1.0, 0.42)  # the only seeds the corpus uses
COUNTERS = ("accounts_scans",)


class PostgresRig:
    def __init__(self, base_url: str) -> None:
        self.base = sa.engine.make_url(base_url)
        self.token = uuid.uuid4().hex[:10]
        self.db = f"baton_rt_{self.token}"
        self.pw_role = f"baton_rt_pw_{self.token}"
        self.reader: ReaderRole | None = None  # the demo's least-privilege role (``baton db grant``)
        self.lp_role = self.lp_password = ""
        self.slot = f"rt_{self.token}_slot"
        self.channel = f"rt_{self.token}_chan"
        self.secret_app, self.listen_app = f"baton_rt_secret_{self.token}", f"baton_rt_listen_{self.token}"
        self.secret_query_token = f"rtsession{uuid.uuid4().hex[:16]}"
        self.secrets = Secrets()
        self.has_dblink = False
        self.has_pageinspect = False
        self.lo = 0
        self.admin: psycopg.Connection | None = None
        self.files: CanaryFiles | None = None
        self._listen: psycopg.Connection | None = None
        self._notified: list[Any] = []
        self._secret: psycopg.Connection | None = None
        self._secret_thread: threading.Thread | None = None
        self.secret_pid = self.listen_pid = 0
        self.seeded_randoms: set[float] = set()
        self.other_secrets = [f"rtother{kind}{uuid.uuid4().hex[:12]}" for kind in ("view", "function", "comment", "op")]
        self.view_oid = self.func_oid = 0

    # --- connections -------------------------------------------------------------------------

    def conninfo(self, user: str | None = None, password: str | None = None, db: str | None = None, app: str = "baton_rt") -> str:
        url = self.base
        return make_conninfo(
            host=url.host or "127.0.0.1", port=url.port or 5432, user=user or url.username or "postgres",
            password=password if user else url.password, dbname=db or self.db, application_name=app)

    def url(self, least_privilege: bool) -> str:
        if least_privilege:
            return self.reader.url
        return self.base.set(database=self.db).render_as_string(hide_password=False)

    def values(self, out: str) -> dict[str, Any]:
        """The placeholders a case may use (pids as they are now)."""
        files = self.files
        return {
            "file": files.file, "dir": files.root, "out": out, "passwd": "/etc/passwd", "lo": self.lo,
            "secret_pid": self.secret_pid, "listen_pid": self.listen_pid, "listen_channel": self.channel,
            "secret_app": self.secret_app, "listen_app": self.listen_app, "slot": self.slot,
            "conn": f"host={self.base.host or '127.0.0.1'} port={self.base.port or 5432} dbname={self.db} user=postgres",
            "pwrole": self.pw_role, "lprole": self.lp_role, "token": self.token, "db": self.db,
            "view_oid": self.view_oid, "func_oid": self.func_oid,
        }

    # --- set-up and tear-down ---------------------------------------------------------------------

    def start(self) -> None:
        with psycopg.connect(self.conninfo(db=self.base.database), autocommit=True) as root:
            root.execute(f"CREATE DATABASE {self.db}")
            root.execute(f"CREATE ROLE {self.pw_role} NOLOGIN PASSWORD 'rt-pw-{uuid.uuid4().hex}'")
            root.execute(f"REVOKE ALL ON DATABASE {self.db} FROM PUBLIC")
        self.admin = psycopg.connect(self.conninfo(app="baton_rt_admin"), autocommit=True)
        a = self.admin
        a.execute("CREATE SCHEMA rt")
        a.execute("CREATE SCHEMA rt_probe")
        self._make_other_schema()
        self.has_pageinspect = self._try("CREATE EXTENSION pageinspect SCHEMA rt_probe")
        self.has_dblink = self._try("CREATE EXTENSION dblink SCHEMA rt")
        a.execute("CREATE TABLE rt.accounts (id int PRIMARY KEY, name text, balance numeric)")
        a.execute("CREATE SEQUENCE rt.seq START 100")
        self._restore_rows()
        self._rebuild_indexes()
        self.lo = a.execute("SELECT lo_from_bytea(0, 'rt canary large object')").fetchone()[0]
        um_password, sub_password = f"rtumpw{uuid.uuid4().hex}", f"rtsubpw{uuid.uuid4().hex}"
        a.execute("CREATE FOREIGN DATA WRAPPER rt_fdw")
        a.execute("CREATE SERVER rt_srv FOREIGN DATA WRAPPER rt_fdw")
        a.execute(f"CREATE USER MAPPING FOR PUBLIC SERVER rt_srv OPTIONS (user 'x', password '{um_password}')")
        a.execute(f"CREATE SUBSCRIPTION rt_sub_{self.token} CONNECTION 'host=127.0.0.1 dbname=nowhere "
                  f"password={sub_password}' PUBLICATION p WITH (connect = false, slot_name = NONE, enabled = false, "
                  "create_slot = false)")
        self.reader = create_reader_role(self.url(False), "rt", prefix=f"baton_rt_lp_{self.token}")
        self.lp_role, self.lp_password = self.reader.name, self.reader.password
        for _ in range(3):
            a.execute("SELECT count(*) FROM rt.accounts")
        a.execute("SELECT pg_stat_force_next_flush()")
        self.files = CanaryFiles.create(self.token)
        self._learn_secrets(um_password, sub_password)
        self.seeded_randoms = self._seeded_randoms()
        self.start_listen()
        self.start_secret_session()

    def stop(self) -> None:
        for conn in (self._listen, self._secret):
            if conn is not None and self.admin is not None:
                self._try(f"SELECT pg_terminate_backend({conn.info.backend_pid})")
        self._join_secret_thread()
        for conn in (self._listen, self._secret, self.admin):
            if conn is not None:
                try:
                    conn.close()
                except psycopg.Error:  # already gone
                    pass
        if self.reader is not None:
            drop_reader_role(self.reader)
        with psycopg.connect(self.conninfo(db=self.base.database), autocommit=True) as root:
            for (slot,) in root.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s",
                                        (f"%{self.token}%",)).fetchall():
                root.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            try:
                with psycopg.connect(self.conninfo(), autocommit=True) as own:
                    own.execute(f"DROP SUBSCRIPTION IF EXISTS rt_sub_{self.token}")
            except psycopg.OperationalError:
                pass
            root.execute(f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
            for (role,) in root.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (f"%{self.token}%",)).fetchall():
                root.execute(f'DROP ROLE "{role}"')
        if self.files is not None:
            self.files.remove()

    def _make_other_schema(self) -> None:
        """``rt_other``, outside the workspace (``rt``), usable by everyone (as schemas of a real
        database often are) but with nothing granted in it: a view, a function and a comment
        whose texts are needles, and operators whose function raises a needle when it runs."""
        a = self.admin
        view, function, comment, operator = self.other_secrets
        a.execute("CREATE SCHEMA rt_other")
        a.execute("GRANT USAGE ON SCHEMA rt_other TO PUBLIC")
        a.execute(f"CREATE VIEW rt_other.vault_view AS SELECT '{view}'::text AS s")
        a.execute(f"CREATE FUNCTION rt_other.vault_fn() RETURNS text LANGUAGE sql AS $$SELECT '{function}'::text$$")
        a.execute(f"COMMENT ON VIEW rt_other.vault_view IS '{comment}'")
        a.execute("CREATE FUNCTION rt_other.leak(int, int) RETURNS bool LANGUAGE plpgsql AS "
                  f"$$BEGIN RAISE EXCEPTION '{operator}'; END$$")
        for op in ("=", "<"):
            a.execute(f"CREATE OPERATOR rt_other.{op} (LEFTARG = int, RIGHTARG = int, FUNCTION = rt_other.leak)")
        self.view_oid = a.execute("SELECT 'rt_other.vault_view'::regclass::oid").fetchone()[0]
        self.func_oid = a.execute("SELECT 'rt_other.vault_fn'::regproc::oid").fetchone()[0]

    def _try(self, sql: str) -> bool:
        try:
            self.admin.execute(sql)
            return True
        except psycopg.Error:
            return False

    def _restore_rows(self) -> None:
        a = self.admin
        a.execute("DELETE FROM rt.accounts")
        a.execute("INSERT INTO rt.accounts VALUES (1, 'Ada', 120.5), (2, 'Bo', 80), (3, 'Cy', 0), (4, 'Di', 42)")
        a.execute("SELECT setval('rt.seq', 100, true)")

    def _rebuild_indexes(self) -> None:
        a = self.admin
        a.execute("DROP TABLE IF EXISTS rt.brin_t, rt.gin_t")
        a.execute("CREATE TABLE rt.brin_t (v int) WITH (autovacuum_enabled = off, fillfactor = 10)")
        a.execute("INSERT INTO rt.brin_t SELECT generate_series(1, 2000)")
        a.execute("CREATE INDEX brin_i ON rt.brin_t USING brin (v) WITH (pages_per_range = 1)")
        a.execute("INSERT INTO rt.brin_t SELECT generate_series(2001, 4000)")  # unsummarized ranges
        a.execute("CREATE TABLE rt.gin_t (tags int[]) WITH (autovacuum_enabled = off)")
        a.execute("CREATE INDEX gin_i ON rt.gin_t USING gin (tags) WITH (fastupdate = on, gin_pending_list_limit = 4096)")
        a.execute("INSERT INTO rt.gin_t SELECT ARRAY[i, i + 1] FROM generate_series(1, 500) i")  # pending list
        if self.lp_role:  # the reader's default privileges cover new tables; said again for clarity
            a.execute(f"GRANT SELECT ON rt.brin_t, rt.gin_t TO {self.lp_role}")

    def _learn_secrets(self, um_password: str, sub_password: str) -> None:
        s, a = self.secrets, self.admin
        (pw_hash,) = a.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (self.pw_role,)).fetchone()
        s.add_pieces(pw_hash)
        s.add("SCRAM-SHA-256$", self.secret_query_token, um_password, sub_password, self.lp_password)
        s.add(*self.other_secrets)
        for name in ("hba_file", "config_file", "data_directory", "ident_file"):
            s.add(a.execute(f"SELECT current_setting('{name}')").fetchone()[0])
        s.add("255.255.255.255", "postmaster.pid", "pg_hba.conf", "postgresql.conf")
        try:
            hba = open(a.execute("SELECT current_setting('hba_file')").fetchone()[0], encoding="utf-8").read()
            s.add(*[line.strip() for line in hba.splitlines() if len(line.strip()) >= 12 and not line.startswith("#")])
        except OSError:
            pass  # not readable by the test user: the netmask and path needles still stand
        s.add(*self.files.needles())
        s.numbers.add(len(self.files.content))

    def _seeded_randoms(self) -> set[float]:
        values = set()
        with psycopg.connect(self.conninfo(), autocommit=True) as c:
            for seed in SEEDS:
                c.execute("SELECT setseed(%s)", (seed,))
                values.update(c.execute("SELECT random()").fetchone()[0] for _ in range(20))
        return values

    # --- canary sessions --------------------------------------------------------------------------

    def start_listen(self) -> None:
        conn = psycopg.connect(self.conninfo(self.lp_role, self.lp_password, app=self.listen_app), autocommit=True)
        conn.add_notify_handler(self._notified.append)
        conn.execute(f"LISTEN {self.channel}")
        self._listen, self.listen_pid = conn, conn.info.backend_pid

    def start_secret_session(self) -> None:
        conn = psycopg.connect(self.conninfo(app=self.secret_app), autocommit=True)
        self._secret, self.secret_pid = conn, conn.info.backend_pid
        sql = f"SELECT '{self.secret_query_token}' AS secret, pg_sleep(86400)"

        def run() -> None:
            try:
                conn.execute(sql)
            except psycopg.Error:
                pass  # cancelled or terminated: the probe notices

        self._join_secret_thread()  # the previous canary's thread must be done with its connection
        self._secret_thread = threading.Thread(target=run, daemon=True, name="baton-rt-secret")
        self._secret_thread.start()
        for _ in range(200):
            if self._secret_state() == "active":
                return
            time.sleep(0.01)
        raise RuntimeError("the secret-bearing canary session never started")

    def _join_secret_thread(self) -> None:
        """Wait for the canary's thread to leave libpq: closing a psycopg connection while another
        thread is still inside ``execute`` on it frees the PGconn under that thread (a segfault)."""
        thread, self._secret_thread = self._secret_thread, None
        if thread is not None:
            thread.join(timeout=10)

    def _secret_state(self) -> str | None:
        row = self.admin.execute("SELECT state, md5(query) FROM pg_stat_activity WHERE pid = %s", (self.secret_pid,)).fetchone()
        return None if row is None else row[0]

    def _listen_alive(self) -> bool:
        try:
            self._listen.execute("SELECT 1")  # also delivers pending notifications to the handler
            return True
        except psycopg.Error:
            return False

    # --- probes -----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        a = self.admin
        a.execute("SELECT pg_stat_force_next_flush()")
        pages = ("(SELECT md5(string_agg(md5(rt_probe.get_raw_page('{i}', b::int)), ',' ORDER BY b)) "
                 "FROM generate_series(0, pg_relation_size('{i}') / 8192 - 1) b)")
        index_pages = (f"{pages.format(i='rt.brin_i')} || '/' || {pages.format(i='rt.gin_i')}" if self.has_pageinspect
                       else "pg_relation_size('rt.brin_i') || '/' || pg_relation_size('rt.gin_i')")
        cur = a.execute(f"""
            SELECT
              (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM rt.accounts t) AS accounts_rows,
              (SELECT count(*) || '/' || sum(v) FROM rt.brin_t) || ' ' || (SELECT count(*) FROM rt.gin_t) AS index_rows,
              (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY 1)
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname IN ('rt', 'public') OR n.nspname LIKE 'pg_temp%') AS relations,
              (SELECT last_value || '/' || is_called FROM rt.seq) AS sequence,
              {index_pages} AS index_pages,
              (SELECT count(*) FROM pg_largeobject_metadata) AS large_objects,
              md5(lo_get({self.lo})) AS large_object_content,
              (SELECT string_agg(slot_name, ',') FROM pg_replication_slots WHERE slot_name LIKE '%{self.token}%') AS slots,
              (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database =
                 (SELECT oid FROM pg_database WHERE datname = current_database())) AS advisory_locks,
              (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()) AS prepared_xacts,
              pg_conf_load_time()::text AS conf_loaded,
              (SELECT md5(coalesce(string_agg(setrole || '/' || setdatabase || array_to_string(setconfig, ','), ';'
                 ORDER BY 1), '')) FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database
                 WHERE datname = current_database()) OR setrole IN (SELECT oid FROM pg_roles
                 WHERE rolname LIKE '%{self.token}%')) AS role_db_settings,
              (SELECT string_agg(rolname || rolsuper || rolcreaterole || rolcreatedb || rolcanlogin || rolreplication
                 || coalesce(rolpassword, ''), ',' ORDER BY rolname) FROM pg_authid WHERE rolname LIKE '%{self.token}%')
                 AS roles,
              (SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
                 WHERE r.rolname LIKE '%{self.token}%') AS role_memberships,
              (SELECT stats_reset::text FROM pg_stat_database WHERE datname = current_database()) AS stats_reset_db,
              (SELECT stats_reset::text FROM pg_stat_bgwriter) AS stats_reset_bgwriter,
              (SELECT stats_reset::text FROM pg_stat_wal) AS stats_reset_wal,
              (SELECT stats_reset::text FROM pg_stat_archiver) AS stats_reset_archiver,
              (SELECT max(stats_reset)::text FROM pg_stat_slru) AS stats_reset_slru,
              (SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables
                 WHERE relid = 'rt.accounts'::regclass) AS accounts_scans
        """)
        snap = dict(zip([d.name for d in cur.description], cur.fetchone()))
        snap["files"] = self.files.listing()
        snap["listen_session"] = "alive" if self._listen_alive() else "gone"
        snap["notifications"] = len(self._notified)
        snap["secret_session"] = self._secret_state()
        return snap

    def session_state(self, connection: Any) -> dict[str, Any]:
        """What the next request would find in its session (run on a pooled SQLAlchemy
        connection or a psycopg one)."""
        dblink = ("(SELECT array_to_string(rt.dblink_get_connections(), ',')) AS dblink_connections,"
                  if self.has_dblink else "")
        sql = f"""
            SELECT {dblink}
              (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) AS temp_relations,
              (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS advisory_locks,
              (SELECT count(*) FROM pg_prepared_statements) AS prepared_statements,
              (SELECT count(*) FROM pg_cursors) AS cursors,
              (SELECT count(*) FROM pg_listening_channels()) AS listening,
              (SELECT count(*) FROM pg_replication_slots WHERE active_pid = pg_backend_pid()) AS own_slots,
              current_user AS current_user_, session_user AS session_user_,
              (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM accounts t) AS accounts_seen,
              random() AS random_value
        """
        settings = "SELECT name, setting FROM pg_settings WHERE source <> 'default'"
        if isinstance(connection, psycopg.Connection):
            cur = connection.execute(sql)
            state = dict(zip([d.name for d in cur.description], cur.fetchone()))
            state["settings"] = dict(connection.execute(settings).fetchall())
            return state
        state = dict(connection.exec_driver_sql(sql).mappings().one())
        state["settings"] = dict(connection.exec_driver_sql(settings).fetchall())
        return state

    def session_problems(self, state: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
        return session_differences(state, baseline, self.seeded_randoms)

    # --- repair -----------------------------------------------------------------------------------

    def repair(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """Put back whatever a case changed, so that the next case meets the same canaries."""
        a = self.admin
        changed = {k for k in before if before[k] != after.get(k)}
        if changed & {"accounts_rows", "sequence"}:
            self._restore_rows()
        if changed & {"index_pages", "index_rows"} or "rt.brin_t:r" not in (after.get("relations") or ""):
            self._rebuild_indexes()
        if "relations" in changed:
            for (name,) in a.execute("SELECT n.nspname || '.' || quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n "
                                     "ON n.oid = c.relnamespace WHERE n.nspname IN ('rt', 'public') AND c.relkind = 'r' "
                                     "AND c.relname NOT IN ('accounts', 'brin_t', 'gin_t')").fetchall():
                a.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
            if "rt.accounts:r" not in (after.get("relations") or ""):
                a.execute("CREATE TABLE IF NOT EXISTS rt.accounts (id int PRIMARY KEY, name text, balance numeric)")
                a.execute(f'GRANT SELECT ON rt.accounts TO "{self.lp_role}"')
                self._restore_rows()
        if changed & {"large_object_content", "large_objects"}:
            a.execute("SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE oid <> %s", (self.lo,))
            if a.execute("SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %s", (self.lo,)).fetchone()[0]:
                a.execute("SELECT lo_unlink(%s)", (self.lo,))
            self.lo = a.execute("SELECT lo_from_bytea(%s, 'rt canary large object')", (self.lo,)).fetchone()[0]
        for (slot,) in a.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s AND NOT active",
                                 (f"%{self.token}%",)).fetchall():
            a.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        if after.get("roles") != before.get("roles") or after.get("role_db_settings") != before.get("role_db_settings"):
            for (role,) in a.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s AND rolname NOT IN (%s, %s)",
                                     (f"%{self.token}%", self.lp_role, self.pw_role)).fetchall():
                a.execute(f'DROP ROLE IF EXISTS "{role}"')
            a.execute(f'ALTER ROLE "{self.lp_role}" RESET ALL')  # then the role exactly as granted
            apply_grant_statements(self.url(False), grant_statements(self.url(False), "rt", self.lp_role, self.lp_password))
        if after.get("listen_session") != "alive":
            self.start_listen()
        if after.get("secret_session") != "active":
            self.start_secret_session()
        self.files.sweep()
