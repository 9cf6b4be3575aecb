"""MariaDB/MySQL canaries for the red-team module: what an attack could change, and the probes.

Everything carries the run's token: a database ``baton_rt_<token>`` (rows, a NOCACHE sequence
whose table row moves with every ``NEXTVAL``, a procedure that deletes), the demo's
least-privilege user made by ``baton db grant``'s statements (``tests/least_privilege.py``:
``SELECT, SHOW VIEW`` on that database only, no ``FILE``/``PROCESS``/``SUPER``) whose password
hash sits in ``mysql.user`` / ``mysql.global_priv``, a ``mysql.servers`` entry with a password, and the
canary folder under /tmp (world-writable: the server runs as ``mysql`` and must be able to write
there, or a refused ``INTO OUTFILE`` would prove nothing).

Canary sessions: a root session busy with ``SELECT SLEEP(...)`` whose text holds a secret
(``information_schema.PROCESSLIST.INFO``, ``SHOW FULL PROCESSLIST``; a ``KILL QUERY`` is
detected), and an idle session of the least-privilege user (a user may ``KILL`` its own
sessions). Named locks are probed with ``IS_USED_LOCK`` on the corpus's one lock name.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pymysql
import sqlalchemy as sa

from least_privilege import ReaderRole, create_reader_role, drop_reader_role
from redteam_support import CanaryFiles, Secrets, session_differences

SEED_PAIRS = ((1, 1), (12345, 678), (0, 0))  # the only rand_seed1/rand_seed2 the corpus sets
_VOLATILE = ("RAND_SEED1", "RAND_SEED2", "TIMESTAMP", "PSEUDO_THREAD_ID", "IN_TRANSACTION", "WARNING_COUNT",
             "ERROR_COUNT", "LAST_INSERT_ID", "INSERT_ID", "IDENTITY", "LAST_GTID", "GTID_SEQ_NO")


class MySQLRig:
    def __init__(self, base_url: str) -> None:
        self.base = sa.engine.make_url(base_url)
        self.token = uuid.uuid4().hex[:10]
        self.db = f"baton_rt_{self.token}"
        self.reader: ReaderRole | None = None  # the demo's least-privilege user (``baton db grant``)
        self.lp_user = self.lp_password = ""
        self.lock = f"rt_{self.token}_lock"
        self.server_name = f"rt_srv_{self.token}"
        self.secret_query_token = f"rtsession{uuid.uuid4().hex[:16]}"
        self.secrets = Secrets()
        self.admin: pymysql.Connection | None = None
        self.files: CanaryFiles | None = None
        self._secret: pymysql.Connection | None = None
        self._idle: pymysql.Connection | None = None
        self.secret_id = self.idle_id = 0
        self.seeded_randoms: set[float] = set()
        self.net_read_timeout = 0
        self._last_uuid_short = 0

    def connect(self, user: str | None = None, password: str | None = None, db: str | None = None) -> pymysql.Connection:
        url = self.base
        return pymysql.connect(host=url.host or "127.0.0.1", port=url.port or 3306, user=user or url.username or "root",
                               password=(password if user else url.password) or "", database=db or self.db,
                               autocommit=True, charset="utf8mb4")

    def url(self, least_privilege: bool) -> str:
        if least_privilege:
            return self.reader.url
        return self.base.set(database=self.db).render_as_string(hide_password=False)

    def values(self, out: str) -> dict[str, Any]:
        return {"file": self.files.file, "dir": self.files.root, "out": out, "passwd": "/etc/passwd",
                "secret_id": self.secret_id, "idle_id": self.idle_id, "lock": self.lock, "db": self.db,
                "lpuser": self.lp_user, "server": self.server_name, "token": self.token}

    def _run(self, sql: str, args: Any = None) -> list[tuple]:
        with self.admin.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    # --- set-up and tear-down ---------------------------------------------------------------------

    def start(self) -> None:
        self.admin = self.connect(db=self.base.database)
        run = self._run
        run(f"CREATE DATABASE {self.db}")
        run(f"USE {self.db}")
        run("CREATE TABLE rt_rows (id INT PRIMARY KEY, name VARCHAR(50), balance DECIMAL(10, 2)) ENGINE=InnoDB")
        run("CREATE SEQUENCE rt_seq START WITH 100 NOCACHE")
        run("CREATE PROCEDURE rt_wipe() MODIFIES SQL DATA DELETE FROM rt_rows")
        self._restore_rows()
        self.reader = create_reader_role(self.url(False), self.db, prefix=f"baton_rt_lp_{self.token}")
        self.lp_user, self.lp_password = self.reader.name, self.reader.password
        srv_password = f"rtsrvpw{uuid.uuid4().hex}"
        run(f"CREATE SERVER {self.server_name} FOREIGN DATA WRAPPER mysql OPTIONS (HOST '127.0.0.1', DATABASE 'nowhere', "
            f"USER 'nobody', PASSWORD '{srv_password}')")
        self.net_read_timeout = run("SELECT @@global.net_read_timeout")[0][0]
        self.files = CanaryFiles.create(self.token)
        s = self.secrets
        for (auth,) in run("SELECT authentication_string FROM mysql.user WHERE User = %s", (self.lp_user,)):
            s.add_pieces(auth)
        s.add(srv_password, self.secret_query_token, self.lp_password, *self.files.needles())
        # the server's paths (issue 24: @@datadir and friends); the short ones (/usr, /tmp) are left out
        s.add(*[str(v) for v in run("SELECT @@datadir, @@log_error, @@socket, @@plugin_dir, @@pid_file, "
                                    "@@general_log_file, @@slow_query_log_file")[0] if v])
        s.numbers.add(len(self.files.content))
        self.seeded_randoms = self._seeded_randoms()
        self.start_secret_session()
        self.start_idle()

    def stop(self) -> None:
        for conn_id in (self.secret_id, self.idle_id):
            if conn_id:
                self._try(f"KILL {conn_id}")
        for conn in (self._secret, self._idle):
            if conn is not None:
                try:
                    conn.close()
                except pymysql.err.Error:  # already killed: PyMySQL says "Already closed"
                    pass
        if self.reader is not None:
            drop_reader_role(self.reader)
        with self.connect(db=self.base.database) as root, root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {self.db}")
            cur.execute(f"DROP SERVER IF EXISTS {self.server_name}")
            cur.execute("SELECT User, Host FROM mysql.user WHERE User LIKE %s", (f"%{self.token}%",))
            for user, host in cur.fetchall():
                cur.execute(f"DROP USER '{user}'@'{host}'")
            cur.execute(f"SET GLOBAL net_read_timeout = {int(self.net_read_timeout)}")
        self.admin.close()
        if self.files is not None:
            self.files.remove()

    def _try(self, sql: str) -> bool:
        try:
            self._run(sql)
            return True
        except pymysql.MySQLError:
            return False

    def _restore_rows(self) -> None:
        self._run("DELETE FROM rt_rows")
        self._run("INSERT INTO rt_rows VALUES (1, 'Ada', 120.50), (2, 'Bo', 80), (3, 'Cy', 0), (4, 'Di', 42)")
        self._run("SELECT SETVAL(rt_seq, 100, 0)")

    def _seeded_randoms(self) -> set[float]:
        values = set()
        with self.connect() as c, c.cursor() as cur:
            for one, two in SEED_PAIRS:
                cur.execute(f"SET SESSION rand_seed1 = {one}, rand_seed2 = {two}")
                for _ in range(20):
                    cur.execute("SELECT RAND()")
                    values.add(cur.fetchone()[0])
        return values

    # --- canary sessions --------------------------------------------------------------------------

    def start_secret_session(self) -> None:
        conn = self.connect()
        self._secret, self.secret_id = conn, conn.thread_id()
        sql = f"SELECT SLEEP(86400), '{self.secret_query_token}' AS secret"

        def run() -> None:
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
            except pymysql.MySQLError:
                pass  # killed: the probe notices

        threading.Thread(target=run, daemon=True, name="baton-rt-mysql-secret").start()
        for _ in range(200):
            if self._secret_state() == "active":
                return
            time.sleep(0.01)
        raise RuntimeError("the secret-bearing canary session never started")

    def start_idle(self) -> None:
        self._idle = self.connect(self.lp_user, self.lp_password)
        self.idle_id = self._idle.thread_id()

    def _secret_state(self) -> str | None:
        rows = self._run("SELECT COMMAND, INFO FROM information_schema.PROCESSLIST WHERE ID = %s", (self.secret_id,))
        if not rows:
            return None
        command, info = rows[0]
        return "active" if command == "Query" and self.secret_query_token in (info or "") else f"{command}"

    # --- probes -----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        (row,) = self._run(f"""
            SELECT
              (SELECT MD5(GROUP_CONCAT(CONCAT_WS('|', id, name, balance) ORDER BY id)) FROM {self.db}.rt_rows),
              (SELECT GROUP_CONCAT(TABLE_NAME, ':', TABLE_TYPE ORDER BY TABLE_NAME) FROM information_schema.TABLES
                 WHERE TABLE_SCHEMA = '{self.db}'),
              (SELECT next_not_cached_value FROM {self.db}.rt_seq),
              IS_USED_LOCK('{self.lock}'),
              (SELECT COUNT(*) FROM mysql.user WHERE User LIKE '%{self.token}%'),
              (SELECT MD5(GROUP_CONCAT(User, Host, Priv ORDER BY User, Host)) FROM mysql.global_priv
                 WHERE User LIKE '%{self.token}%'),
              (SELECT COUNT(*) FROM mysql.db WHERE User LIKE '%{self.token}%' OR Db = '{self.db}'),
              (SELECT MD5(GROUP_CONCAT(Server_name, Host, Username, Password)) FROM mysql.servers
                 WHERE Server_name LIKE '%{self.token}%'),
              @@global.net_read_timeout,
              (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {self.idle_id})
        """)
        keys = ("rows", "tables", "sequence", "named_lock_holder", "users", "user_privileges", "db_grants", "servers",
                "global_net_read_timeout", "idle_session")
        snap = dict(zip(keys, row))
        snap["named_lock_holder"] = "held" if snap["named_lock_holder"] is not None else "free"
        # UUID_SHORT() advances a server-global counter by one per call: calls since the last
        # snapshot other than the snapshot's own
        (short,) = self._run("SELECT UUID_SHORT()")[0]
        snap["uuid_short_calls"] = short - self._last_uuid_short - 1 if self._last_uuid_short else 0
        self._last_uuid_short = short
        snap["files"] = self.files.listing()
        snap["secret_session"] = self._secret_state()
        return snap

    def session_state(self, connection: Any) -> dict[str, Any]:
        """What the next request finds in its session (a pooled SQLAlchemy connection or PyMySQL)."""
        sql = f"""
            SELECT
              (SELECT COUNT(*) FROM information_schema.USER_VARIABLES) AS user_variables,
              IS_USED_LOCK('{self.lock}') = CONNECTION_ID() AS holds_named_lock,
              (SELECT CONCAT(COUNT(*), ':', MD5(GROUP_CONCAT(id ORDER BY id))) FROM rt_rows) AS rows_seen,
              CURRENT_USER() AS current_user_,
              RAND() AS random_value
        """
        variables = ("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES "
                     f"WHERE VARIABLE_NAME NOT IN {_VOLATILE!r}")
        leftovers = ("EXECUTE rt_stmt", "HANDLER rt_h READ FIRST")
        if isinstance(connection, pymysql.Connection):
            with connection.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute(sql)
                state = dict(cur.fetchone())
                cur.execute(variables)
                state["session_variables"] = {r["VARIABLE_NAME"]: r["VARIABLE_VALUE"] for r in cur.fetchall()}
                for statement in leftovers:
                    state[statement] = _survives(lambda s=statement: cur.execute(s))
            return state
        state = dict(connection.exec_driver_sql(sql).mappings().one())
        state["session_variables"] = dict(connection.exec_driver_sql(variables).fetchall())
        for statement in leftovers:
            state[statement] = _survives(lambda s=statement: connection.exec_driver_sql(s))
        return state

    def session_problems(self, state: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
        return session_differences(state, baseline, self.seeded_randoms)

    # --- repair -----------------------------------------------------------------------------------

    def repair(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        changed = {k for k in before if before[k] != after.get(k)}
        if "tables" in changed:
            for (name,) in self._run("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                                     "TABLE_NAME NOT IN ('rt_rows', 'rt_seq')", (self.db,)):
                self._run(f"DROP TABLE IF EXISTS `{self.db}`.`{name}`")
            self._run(f"CREATE TABLE IF NOT EXISTS {self.db}.rt_rows (id INT PRIMARY KEY, name VARCHAR(50), "
                      "balance DECIMAL(10, 2)) ENGINE=InnoDB")
        if changed & {"rows", "sequence", "tables"}:
            self._restore_rows()
        if "global_net_read_timeout" in changed:
            self._run(f"SET GLOBAL net_read_timeout = {int(self.net_read_timeout)}")
        if after.get("named_lock_holder") == "held":
            holder = self._run(f"SELECT IS_USED_LOCK('{self.lock}')")[0][0]
            if holder is not None and holder not in (self.secret_id, self.idle_id, self.admin.thread_id()):
                self._try(f"KILL {holder}")
        if after.get("idle_session") != 1:
            self.start_idle()
        if after.get("secret_session") != "active":
            self._try(f"KILL {self.secret_id}")
            self.start_secret_session()
        self.files.sweep()


def _survives(run: Any) -> bool:
    """Whether a statement that needs session leftovers (a prepared statement, an open HANDLER)
    still works: it must fail in a clean session."""
    try:
        run()
        return True
    except (pymysql.err.Error, sa.exc.DBAPIError):  # the driver's own, or wrapped by SQLAlchemy: "gone"
        return False
