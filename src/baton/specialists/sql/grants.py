"""The SQL that creates a least-privilege, read-only role for Baton (``baton db grant``).

``grant_statements(url, schema, ...)`` returns statements for an administrator to run (the
CLI runs them with ``--apply``: ``apply_grant_statements``, all or nothing); it connects to
nothing. ``definer_revokes`` asks the server which SECURITY DEFINER routines PUBLIC may call
whose owner holds more than such a role (``routines.py``), and returns a ``REVOKE EXECUTE ...
FROM PUBLIC`` for each: those only, since a revoke from PUBLIC changes every role's rights. The role may log in, read the
tables and views of one schema (PostgreSQL) or one database (MySQL/MariaDB), and nothing
else: no superuser or other attribute, no built-in role, no write, no file or program
access. Re-running the statements is safe and resets an existing role to exactly this
(attributes, memberships and table privileges are stripped back first), so the command also
repairs a role that drifted. Run it once per schema for several schemas.

PostgreSQL, decisions
    - ``CREATE ROLE`` has no ``IF NOT EXISTS``: a ``DO`` block creates it when missing, then
      ``ALTER ROLE`` sets every attribute (``NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION
      NOBYPASSRLS``, a connection limit) whether the role is new or not.
    - Every role it is a direct member of is revoked (a ``DO`` block over ``pg_auth_members``):
      ``pg_read_server_files`` and the like must not survive a re-run.
    - ``GRANT CONNECT`` on the database, ``USAGE`` on the schema, ``SELECT`` on every table
      (views and materialized views included) after ``REVOKE ALL`` on them, and default
      privileges so tables created later are readable too: for the administrator running the
      statements and for each role owning the schema or a table in it (default privileges
      apply per creating role; an owner the administrator cannot act for is skipped with a
      NOTICE rather than failing the run).
    - Role settings, which the server applies at every login and ``DISCARD ALL`` restores:
      ``default_transaction_read_only = on`` (a third guard behind the parser check and
      Baton's read-only transaction), ``statement_timeout``, ``idle_in_transaction_session_timeout``,
      ``lock_timeout`` (a read queued behind a migration's lock gives up instead of queueing
      everyone behind it), ``work_mem`` and ``temp_file_limit``. ``temp_file_limit`` is a
      superuser-only setting: a session cannot raise it, which is why it belongs on the role
      (and why applying these statements needs a superuser, or drop that line).
      ``search_path`` is set to the schema.
    - EXECUTE on a SECURITY DEFINER routine granted to the role itself is taken back (a ``DO``
      block over the routines' ACLs): its body would run with its owner's rights.
    - Not done, on purpose: revoking ``TEMPORARY`` on the database or ``EXECUTE`` on
      functions in general. Both are granted to PUBLIC, so revoking them from this role
      changes nothing, and revoking them from PUBLIC would change every other user's rights.
      The built-in functions that matter (``pg_read_file``, ``lo_export``...) are not granted
      to PUBLIC; the definer routines that matter are revoked one by one
      (``definer_revokes``).
    - One transaction: roles, grants and role settings are transactional, so a failing
      statement (a schema that does not exist) leaves no role behind.
MySQL/MariaDB, decisions
    - ``CREATE USER IF NOT EXISTS`` then ``ALTER USER`` for the password, ``REVOKE ALL
      PRIVILEGES, GRANT OPTION`` (a re-run strips whatever was added), then ``SELECT, SHOW
      VIEW`` on the database, and ``MAX_STATEMENT_TIME`` (seconds) on MariaDB only (MySQL has
      no per-account statement time; Baton sets ``max_execution_time`` per session there).
      ``MAX_USER_CONNECTIONS`` is set to 0 (no per-account limit; a re-run clears an earlier
      one): Baton's pool bounds its connections, and MariaDB's ``COM_RESET_CONNECTION`` takes a
      session out of the account's count, so a limited account cannot be pooled
      (``session_reset.py`` logs in afresh for every request instead, ~37 ms each). Roles granted to the account
      are not revoked (a statement cannot list them); ``baton db check`` reports them.
    - The account's host part defaults to ``%``; pass ``host`` to pin it.
    - Each statement commits by itself (DDL), so ``apply_grant_statements`` checks the
      database exists before anything runs and drops an account it created if a later
      statement fails.
    - Passwords are written as SQL literals: single quotes are doubled; a backslash is refused
      on MySQL/MariaDB, where its meaning depends on ``sql_mode`` (NO_BACKSLASH_ESCAPES).
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from baton.errors import ConfigurationError
from baton.specialists.sql.connection import engine_of
from baton.specialists.sql.engines.mysql_flavors import MARIADB, flavor_of_version
from baton.specialists.sql.urls import database_url

DEFAULT_ROLE = "baton_reader"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


def grant_statements(
    url: str | URL,
    schema: str,
    role_name: str = DEFAULT_ROLE,
    password: str | None = None,
    *,
    flavor: str | None = None,
    host: str = "%",
    statement_timeout_s: int = 30,
    connection_limit: int = 10,  # PostgreSQL only (see the module docstring for MySQL)
    work_mem: str = "32MB",
    temp_file_limit: str = "256MB",
) -> list[str]:
    """The statements that create (or reset) ``role_name`` as a read-only role on ``schema``
    (PostgreSQL: a schema of the URL's database; MySQL/MariaDB: a database). ``flavor``
    (``"mariadb"`` or ``"mysql"``) matters for MySQL URLs only; by default a ``mariadb://``
    URL means MariaDB and a ``mysql://`` one MySQL. The engine writes them (``Engine.grant_statements``:
    ``postgres_grant_statements``, ``mysql_grant_statements``); one without roles refuses."""
    url = database_url(url)
    engine = engine_of(url)
    for what, name in (("role name", role_name), ("schema", schema)):
        if not _IDENTIFIER.fullmatch(name):
            raise ConfigurationError(f"{what} {name!r} is not a plain identifier (letters, digits, _ and $)")
    if password is not None and ("\x00" in password or not password):
        raise ConfigurationError("the password is empty or holds a NUL character")
    if statement_timeout_s < 1 or connection_limit < 1:
        raise ConfigurationError("statement_timeout_s and connection_limit must be positive")
    return engine.grant_statements(url, schema, role_name, password, flavor=flavor, host=host,
                                   statement_timeout_s=statement_timeout_s, connection_limit=connection_limit,
                                   work_mem=work_mem, temp_file_limit=temp_file_limit)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def postgres_grant_statements(database: str, schema: str, role: str, password: str | None, timeout_s: int, limit: int,
                              work_mem: str, temp_file_limit: str) -> list[str]:
    """PostgreSQL's statements (``engines/postgres.py``), the names checked."""
    r, s, d = f'"{role}"', f'"{schema}"', '"' + database.replace('"', '""') + '"'
    secret = f" PASSWORD {_literal(password)}" if password is not None else ""
    builtin_roles = ("SELECT m.roleid::regrole::text FROM pg_catalog.pg_auth_members m "
                     f"WHERE m.member = {_literal(role)}::regrole")
    owners = ("SELECT DISTINCT owner_oid::regrole::text FROM ("
              f"SELECT nspowner AS owner_oid FROM pg_catalog.pg_namespace WHERE nspname = {_literal(schema)} "
              "UNION SELECT c.relowner FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
              f"WHERE n.nspname = {_literal(schema)}) owners WHERE owner_oid <> 'pg_database_owner'::regrole")
    return [
        f"DO $baton$ BEGIN IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = {_literal(role)}) "
        f"THEN CREATE ROLE {r}; END IF; END $baton$",
        f"ALTER ROLE {r} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT "
        f"CONNECTION LIMIT {limit}{secret}",
        f"DO $baton$ DECLARE g text; BEGIN FOR g IN {builtin_roles} LOOP "
        f"EXECUTE format('REVOKE %s FROM %I', g, {_literal(role)}); END LOOP; END $baton$",
        f"GRANT CONNECT ON DATABASE {d} TO {r}",
        f"REVOKE CREATE ON SCHEMA {s} FROM {r}",
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {r}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {s} FROM {r}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT SELECT ON TABLES TO {r}",
        f"DO $baton$ DECLARE o text; BEGIN FOR o IN {owners} LOOP BEGIN "
        f"EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %s IN SCHEMA %I GRANT SELECT ON TABLES TO %I', "
        f"o, {_literal(schema)}, {_literal(role)}); "
        "EXCEPTION WHEN insufficient_privilege THEN RAISE NOTICE 'default privileges of % not changed', o; "
        "END; END LOOP; END $baton$",
        f"DO $baton$ DECLARE f text; BEGIN FOR f IN SELECT DISTINCT p.oid::regprocedure::text FROM pg_catalog.pg_proc p, "
        f"aclexplode(p.proacl) a WHERE p.prosecdef AND a.grantee = {_literal(role)}::regrole "
        f"AND a.privilege_type = 'EXECUTE' LOOP EXECUTE format('REVOKE EXECUTE ON ROUTINE %s FROM %I', f, "
        f"{_literal(role)}); END LOOP; END $baton$",
        f"ALTER ROLE {r} SET default_transaction_read_only = on",
        f"ALTER ROLE {r} SET statement_timeout = '{timeout_s}s'",
        f"ALTER ROLE {r} SET idle_in_transaction_session_timeout = '{max(60, timeout_s * 2)}s'",
        f"ALTER ROLE {r} SET lock_timeout = '{max(1, min(5, timeout_s))}s'",
        f"ALTER ROLE {r} SET work_mem = {_literal(_size(work_mem))}",
        f"ALTER ROLE {r} SET temp_file_limit = {_literal(_size(temp_file_limit))}",
        f"ALTER ROLE {r} SET search_path = {s}",
    ]


def _size(value: str) -> str:
    if not re.fullmatch(r"\d+\s*(kB|MB|GB|TB)?", value.strip()):
        raise ConfigurationError(f"{value!r} is not a PostgreSQL memory size such as 32MB")
    return value.strip()


def mysql_grant_statements(database: str, role: str, password: str | None, host: str, flavor: str,
                           timeout_s: int) -> list[str]:
    """MySQL/MariaDB's statements (``engines/mysql.py``), the names, host and flavour checked."""
    account = f"{_literal(role)}@{_literal(host)}"
    secret = f" IDENTIFIED BY {_literal(password)}" if password is not None else ""
    limits = "MAX_USER_CONNECTIONS 0" + (f" MAX_STATEMENT_TIME {timeout_s}" if flavor == MARIADB else "")
    statements = [f"CREATE USER IF NOT EXISTS {account}{secret}"]
    if password is not None:
        statements.append(f"ALTER USER {account}{secret}")
    return statements + [
        f"REVOKE ALL PRIVILEGES, GRANT OPTION FROM {account}",
        f"GRANT SELECT, SHOW VIEW ON `{database}`.* TO {account}",
        f"ALTER USER {account} WITH {limits}",
    ]


def masked(statements: list[str], password: str | None) -> list[str]:
    """The statements with the password's literal replaced, for printing."""
    if password is None:
        return list(statements)
    return [s.replace(_literal(password), "'********'") for s in statements]


def apply_grant_statements(admin_url: str | URL, statements: list[str], *, schema: str | None = None,
                           account: tuple[str, str] | None = None) -> None:
    """Run ``statements`` in order as ``admin_url``, all or nothing. Straight through the
    DBAPI cursor with no parameters, so a ``%`` (the MySQL host pattern) is sent as written.

    PostgreSQL: one transaction (roles, grants and role settings are all transactional), so a
    failure leaves nothing behind. MySQL/MariaDB, where each statement commits by itself:
    ``schema`` (the database) is checked to exist before anything runs, and when a statement
    fails after ``account`` (``(user, host)``) was created by this run, the account is
    dropped again; an account that existed before keeps whatever the statements already did
    (they only take privileges away before the one ``GRANT SELECT``). Raises
    ``ConfigurationError`` for a missing schema, the driver's error otherwise. The engine says
    which (``Engine.grant_account_is_new``)."""
    engine = sa.create_engine(database_url(admin_url), poolclass=sa.pool.NullPool)
    kind = engine_of(engine.url)
    try:
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            if schema is not None and not kind.grant_scope_exists(cursor, schema):
                scope = "database" if kind.grants_on_database else "schema"
                raise ConfigurationError(f"{scope} {schema!r} does not exist: nothing was changed")
            created = account is not None and kind.grant_account_is_new(cursor, account)
            try:
                for statement in statements:
                    cursor.execute(statement)
                raw.commit()
            except Exception:
                raw.rollback()
                if created and account is not None:
                    kind.drop_grant_account(cursor, account)
                raise
            cursor.close()
        finally:
            raw.close()
    finally:
        engine.dispose()


_PG_DEFINER_REVOKES = """
SELECT format('REVOKE EXECUTE ON ROUTINE %%I.%%I(%%s) FROM PUBLIC', n.nspname, p.proname,
              pg_catalog.pg_get_function_identity_arguments(p.oid)),
       {risks}
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE p.prosecdef AND pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')
  AND (pg_catalog.has_schema_privilege('public', n.oid, 'USAGE') OR n.nspname = %s)
ORDER BY 1"""


_MY_PUBLIC_ROUTINES = """
SELECT p.Db, p.Routine_name, p.Routine_type, r.DEFINER FROM mysql.procs_priv p
JOIN information_schema.ROUTINES r ON r.ROUTINE_SCHEMA = p.Db AND r.ROUTINE_NAME = p.Routine_name
 AND r.ROUTINE_TYPE = p.Routine_type
WHERE p.User = 'PUBLIC' AND FIND_IN_SET('Execute', p.Proc_priv) AND r.SECURITY_TYPE = 'DEFINER' ORDER BY 1, 2"""
_MY_PUBLIC_DATABASES = """
SELECT d.Db, r.DEFINER FROM mysql.db d JOIN information_schema.ROUTINES r ON r.ROUTINE_SCHEMA = d.Db
WHERE d.User = 'PUBLIC' AND d.Execute_priv = 'Y' AND r.SECURITY_TYPE = 'DEFINER' ORDER BY 1"""


def definer_revokes(admin_url: str | URL, schema: str) -> list[str]:
    """The ``REVOKE EXECUTE ... FROM PUBLIC`` statements for the definer routines a new role
    on ``schema`` could call through PUBLIC and whose owner holds more than it (what
    ``baton db check`` would report; ``routines.py``). Only those: PUBLIC is otherwise left
    as it is, since a revoke from PUBLIC changes every role's rights. MariaDB (10.11 has
    PUBLIC): a routine granted to PUBLIC by name, or every routine of a database PUBLIC may
    EXECUTE in (then the revoke is for the database, there being no narrower one)."""
    engine = sa.create_engine(database_url(admin_url), poolclass=sa.pool.NullPool)
    try:
        return engine_of(engine.url).definer_revokes(engine, schema)
    finally:
        engine.dispose()


def postgres_definer_revokes(engine: sa.Engine, schema: str) -> list[str]:
    """PostgreSQL's (``engines/postgres.py``)."""
    from baton.specialists.sql.routines import owner_risk_sql

    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            _PG_DEFINER_REVOKES.replace("{risks}", owner_risk_sql("p.proowner")), (schema,)).fetchall()
    return [statement for statement, risks in rows if risks]


def mysql_definer_revokes(engine: sa.Engine) -> list[str]:
    """MySQL/MariaDB's (``engines/mysql.py``)."""
    raw = engine.raw_connection()
    try:
        return _mysql_definer_revokes(raw.cursor())
    finally:
        raw.close()


def _mysql_definer_revokes(cursor: Any) -> list[str]:
    from baton.specialists.sql.routines import definer_risks

    cursor.execute("SELECT VERSION(), @@GLOBAL.secure_file_priv")
    version, secure_file_priv = cursor.fetchone()
    flavor = flavor_of_version(version)

    def risky(definer: str) -> bool:
        return bool(definer_risks(cursor, definer, flavor, secure_file_priv))

    cursor.execute(_MY_PUBLIC_ROUTINES)
    routines = cursor.fetchall()
    cursor.execute(_MY_PUBLIC_DATABASES)
    databases = cursor.fetchall()
    revokes = [f"REVOKE EXECUTE ON {kind} {_backticked(db)}.{_backticked(name)} FROM PUBLIC"
               for db, name, kind, definer in routines if risky(definer)]
    return revokes + [f"REVOKE EXECUTE ON {_backticked(db)}.* FROM PUBLIC"
                      for db in dict.fromkeys(db for db, definer in databases if risky(definer))]


def _backticked(name: str) -> str:
    return "`" + str(name).replace("`", "``") + "`"


def role_url(admin_url: str | URL, role_name: str, password: str | None, schema: str | None = None) -> URL:
    """The URL Baton should connect with: the admin URL's server as the new role (and, for
    MySQL/MariaDB, the granted database: ``Engine.grants_on_database``)."""
    url = database_url(admin_url).set(username=role_name, password=password)
    if engine_of(url).grants_on_database and schema:
        url = url.set(database=schema)
    return url


def server_flavor(admin_url: str | URL, **connect_args: Any) -> str | None:
    """``"mariadb"`` or ``"mysql"`` as the server says (``None`` when it cannot be reached, or
    its engine has one flavour: ``Engine.server_flavor``)."""
    engine = sa.create_engine(database_url(admin_url), poolclass=sa.pool.NullPool, connect_args=connect_args)
    try:
        with engine.connect() as connection:
            version = str(connection.exec_driver_sql("SELECT VERSION()").scalar())
        return engine_of(engine.url).server_flavor(version)
    except Exception:
        return None
    finally:
        engine.dispose()
