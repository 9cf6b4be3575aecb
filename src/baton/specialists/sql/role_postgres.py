"""What a PostgreSQL role may do: the catalog queries behind ``privileges.inspect_role``
(it fills a ``role_report.RoleReport``).

Runs in the connection's worker thread on a connection checked out of its pool, inside a
read-only transaction that is rolled back. Nothing here is model-written: every statement is
ours.

``pg_has_role(..., 'MEMBER')`` is the test for built-in roles and for roles whose attributes
are reachable, because membership without INHERIT still allows ``SET ROLE`` (or
``set_config('role', ...)`` from a SELECT). Function EXECUTE is checked only for functions
whose sole gate is that privilege; ``pg_terminate_backend`` and the replication-slot
functions are executable by PUBLIC and check role membership or the REPLICATION attribute
inside, so they are covered by those checks instead (measured on 15). ``pg_read_all_data``
reads ``pg_authid`` (measured), hence a secret. Reading ``pg_statistic`` is a secret too: it
holds sampled values of columns the role may not read.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from baton.specialists.sql.role_report import CRITICAL_RISKS, Risk, RoleFinding, RoleReport, on_pooled_connection, unique_findings

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection


# --- PostgreSQL ----------------------------------------------------------------------------

_PG_BUILTIN_ROLES: dict[str, tuple[Risk, str]] = {
    "pg_read_server_files": (Risk.READ_SERVER_FILES, "can read any file the server's OS user can (COPY FROM a file, pg_read_file)"),
    "pg_write_server_files": (Risk.WRITE_SERVER_FILES, "can write files anywhere the server's OS user can (COPY TO a file)"),
    "pg_execute_server_program": (Risk.RUN_PROGRAMS, "can run programs on the database server (COPY ... PROGRAM)"),
    "pg_signal_backend": (Risk.SIGNAL_SESSIONS, "can cancel or terminate other sessions (pg_terminate_backend)"),
    "pg_read_all_settings": (Risk.READ_SECRETS, "can read every setting, superuser-only ones too (connection strings may hold passwords)"),
    "pg_read_all_stats": (Risk.READ_SECRETS, "can read every session's SQL text (pg_stat_activity)"),
    "pg_monitor": (Risk.READ_SECRETS, "monitoring role: every setting and every session's SQL text"),
    "pg_read_all_data": (Risk.READ_SECRETS, "can read every table, pg_authid's password hashes included"),
    "pg_write_all_data": (Risk.CAN_WRITE, "can write every table"),
    "pg_checkpoint": (Risk.SERVER_ADMIN, "can force checkpoints"),
    "pg_stat_scan_tables": (Risk.SERVER_ADMIN, "can run monitoring functions that lock tables"),
    "pg_create_subscription": (Risk.OPEN_CONNECTIONS, "can create subscriptions to other servers"),
}

# Functions gated by EXECUTE alone (superuser-only unless granted); the name is enough, every
# overload is checked.
_PG_FUNCTIONS: dict[str, tuple[Risk, str, bool | None]] = {
    **{name: (Risk.READ_SERVER_FILES, "reads server files", None)
       for name in ("pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "lo_import", "pg_logdir_ls")},
    **{name: (Risk.WRITE_SERVER_FILES, "writes server files", None)
       for name in ("lo_export", "pg_file_write", "pg_file_rename", "pg_file_unlink", "pg_file_sync")},
    "dblink_connect_u": (Risk.OPEN_CONNECTIONS, "connects without a password, as the server's OS user could (dblink)", True),
    **{name: (Risk.OPEN_CONNECTIONS, "opens connections to other databases, where statements run outside Baton's "
              "read-only transaction (dblink; a password is needed)", False)
       for name in ("dblink_connect", "dblink", "dblink_exec", "dblink_send_query", "dblink_open")},
    **{name: (Risk.SERVER_ADMIN, "changes server state", None)
       for name in ("pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "pg_create_restore_point",
                    "pg_backup_start", "pg_start_backup", "pg_stat_reset", "pg_stat_reset_shared",
                    "pg_stat_reset_single_table_counters", "pg_stat_reset_slru", "pg_log_backend_memory_contexts")},
}

# What makes a routine's owner more privileged than a least-privilege role (``routines.py``):
# the built-in roles and functions above whose findings are critical.
OWNER_RISK_ROLES = tuple(name for name, (risk, _) in _PG_BUILTIN_ROLES.items() if risk in CRITICAL_RISKS)
OWNER_RISK_FUNCTIONS = tuple(name for name, (risk, _, critical) in _PG_FUNCTIONS.items()
                             if critical is not False and risk in CRITICAL_RISKS or critical)

_PG_SECRET_RELATIONS = ("pg_catalog.pg_authid", "pg_catalog.pg_shadow", "pg_catalog.pg_user_mapping",
                        "pg_catalog.pg_hba_file_rules", "pg_catalog.pg_ident_file_mappings",
                        "pg_catalog.pg_file_settings", "pg_catalog.pg_statistic")

_PG_USER_SCHEMA = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)'"

_PG_ATTRIBUTES = """
SELECT r.rolname, r.rolname = current_user, r.rolsuper, r.rolreplication, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb
FROM pg_catalog.pg_roles r
WHERE r.rolname = current_user
   OR ((r.rolsuper OR r.rolreplication OR r.rolbypassrls OR r.rolcreaterole OR r.rolcreatedb)
       AND pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER'))
ORDER BY 2 DESC, 1"""

_PG_OWNED = f"""
SELECT kind, count(*) FROM (
  SELECT 'table' AS kind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND {_PG_USER_SCHEMA} AND pg_catalog.pg_has_role(c.relowner, 'MEMBER')
  UNION ALL SELECT 'schema' FROM pg_catalog.pg_namespace n WHERE {_PG_USER_SCHEMA} AND pg_catalog.pg_has_role(n.nspowner, 'MEMBER')
  UNION ALL SELECT 'function' FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
   WHERE {_PG_USER_SCHEMA} AND pg_catalog.pg_has_role(p.proowner, 'MEMBER')
  UNION ALL SELECT 'database' FROM pg_catalog.pg_database d
   WHERE d.datname = current_database() AND pg_catalog.pg_has_role(d.datdba, 'MEMBER')
) owned GROUP BY kind ORDER BY kind"""

_PG_ACCESS = f"""
SELECT
  (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND {_PG_USER_SCHEMA} AND has_table_privilege(c.oid, 'SELECT')),
  (SELECT coalesce(string_agg(DISTINCT n.nspname, ', '), '') FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND {_PG_USER_SCHEMA} AND has_table_privilege(c.oid, 'SELECT')),
  (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'f') AND {_PG_USER_SCHEMA}
      AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')),
  (SELECT coalesce(string_agg(n.nspname, ', ' ORDER BY n.nspname), '') FROM pg_catalog.pg_namespace n
    WHERE {_PG_USER_SCHEMA} AND has_schema_privilege(n.oid, 'CREATE')),
  has_database_privilege(current_database(), 'CREATE')"""


def _superuser(source: str) -> list[RoleFinding]:
    implied = [(Risk.READ_SERVER_FILES, "reads any server file"), (Risk.WRITE_SERVER_FILES, "writes any server file"),
               (Risk.RUN_PROGRAMS, "runs programs on the server"), (Risk.SIGNAL_SESSIONS, "terminates other sessions"),
               (Risk.READ_SECRETS, "reads password hashes and other sessions' SQL"),
               (Risk.REPLICATION, "creates replication slots that outlive the request")]
    return [RoleFinding(Risk.SUPERUSER, "superuser: bypasses every privilege check", source)] + [
        RoleFinding(risk, f"as superuser: {sentence}", source) for risk, sentence in implied]


def inspect_postgres(connection: SQLConnection) -> RoleReport:
    def body(cursor: Any) -> RoleReport:
        cursor.execute("SET TRANSACTION READ ONLY")
        cursor.execute("SET LOCAL statement_timeout = 15000")
        cursor.execute("SELECT current_user, current_setting('server_version'), current_setting('server_version_num')::int")
        role, server, version = cursor.fetchone()
        cursor.execute(_PG_ATTRIBUTES)
        findings: list[RoleFinding] = []
        for name, own, superuser, replication, bypassrls, createrole, createdb in cursor.fetchall():
            via = "role attribute" if own else f"SET ROLE {name}"
            if superuser:
                findings += _superuser(f"{'SUPERUSER' if own else via}")
                if own:
                    return RoleReport("postgres", role, f"PostgreSQL {server}", tuple(unique_findings(findings)))
            if replication:
                findings.append(RoleFinding(Risk.REPLICATION, "can stream the whole cluster (password hashes included) "
                                            "and create replication slots that outlive the request", via))
            if bypassrls:
                findings.append(RoleFinding(Risk.BYPASS_ROW_SECURITY, "reads rows that row-level security hides", via))
            if createrole:
                escalates = version < 160000  # before 16, CREATEROLE grants any non-superuser role, pg_* included
                findings.append(RoleFinding(
                    Risk.GRANT_ROLES if escalates else Risk.CREATE_USERS,
                    "can grant itself pg_read_server_files and the other built-in roles (CREATEROLE before PostgreSQL 16)"
                    if escalates else "can create roles (CREATEROLE)", via))
            if createdb:
                findings.append(RoleFinding(Risk.CREATE_DATABASES, "can create databases", via))
        cursor.execute("SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY(%s) "
                       "AND pg_catalog.pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname", (list(_PG_BUILTIN_ROLES),))
        for (name,) in cursor.fetchall():
            risk, sentence = _PG_BUILTIN_ROLES[name]
            findings.append(RoleFinding(risk, sentence, f"member of {name}"))
        cursor.execute("SELECT DISTINCT p.proname FROM pg_catalog.pg_proc p WHERE p.proname = ANY(%s) "
                       "AND has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1", (list(_PG_FUNCTIONS),))
        for (name,) in cursor.fetchall():
            risk, sentence, critical = _PG_FUNCTIONS[name]
            findings.append(RoleFinding(risk, f"may call {name}(): {sentence}", f"EXECUTE on {name}", critical))
        cursor.execute("SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL "
                       "AND has_table_privilege(to_regclass(name), 'SELECT')", (list(_PG_SECRET_RELATIONS),))
        for (name,) in cursor.fetchall():
            findings.append(RoleFinding(Risk.READ_SECRETS, f"can read {name}", f"SELECT on {name}"))
        cursor.execute("SELECT has_column_privilege('pg_catalog.pg_subscription', 'subconninfo', 'SELECT')")
        if cursor.fetchone()[0]:
            findings.append(RoleFinding(Risk.READ_SECRETS, "can read subscriptions' connection strings (subconninfo)",
                                        "SELECT on pg_subscription.subconninfo"))
        cursor.execute(_PG_OWNED)
        owned = {kind: count for kind, count in cursor.fetchall()}
        if owned:
            counts = ", ".join(f"{count} {kind}{'s' if count > 1 else ''}" for kind, count in owned.items())
            findings.append(RoleFinding(Risk.OWNS_OBJECTS, f"owns {counts} (an owner may alter or drop them, and is "
                                        "not bound by their row-level security)", "ownership"))
        cursor.execute(_PG_ACCESS)
        readable, schemas, writable, creatable, db_create = cursor.fetchone()
        if writable:
            findings.append(RoleFinding(Risk.CAN_WRITE, f"may insert, update, delete or truncate in {writable} tables",
                                        "table privileges"))
        if creatable or db_create:
            where = [f"schemas {creatable}"] if creatable else []
            findings.append(RoleFinding(Risk.CAN_CREATE, "may create objects in " + " and ".join(
                where + (["the database (CREATE)"] if db_create else [])), "CREATE privilege"))
        notes = (f"reads {readable} {'table or view' if readable == 1 else 'tables and views'}" + (f" in {schemas}" if schemas else ""),)
        return RoleReport("postgres", role, f"PostgreSQL {server}", tuple(unique_findings(findings)), notes)

    return on_pooled_connection(connection, body)
