"""Least privilege, checked at connect: what the database role may do, and the refusal.

Why this exists
    A ``READ ONLY`` transaction stops writes to tables, not privileged functions: under a
    superuser, ``pg_read_file``, ``lo_export``, ``COPY ... TO PROGRAM`` (via ``dblink``),
    ``pg_terminate_backend`` and replication slots all work inside one, and MariaDB's
    ``LOAD_FILE`` / ``INTO OUTFILE`` need only the ``FILE`` privilege. The parser check in
    ``safety.py`` is one line of defence; the only guard the engine itself enforces whatever
    the SQL text is the role's privileges. So Baton looks at the role once per
    ``SQLConnection`` and refuses to run model-written SQL under a role that can do harm
    beyond reading the data.

What is inspected (the engine's ``inspect_role``: ``role_postgres.py`` and ``role_mysql.py``
hold the queries, ``role_report.py`` the report they fill)
    PostgreSQL: the role's attributes (superuser, replication, bypassrls, createrole,
    createdb), the same attributes on any role it can ``SET ROLE`` to, membership (direct or
    transitive, ``pg_has_role(..., 'MEMBER')``) in the built-in roles that reach outside the
    database, ownership of objects in non-system schemas, EXECUTE on the functions that are
    superuser-only by default (``pg_read_file``, ``lo_export``, ``lo_import``, ``dblink``...),
    SELECT on the catalogs holding secrets, and whether it can write or create anything.
    MySQL/MariaDB: every ``SHOW GRANTS`` line of the account and of each role granted to it
    (read with that role set), and ``@@secure_file_priv``. SQLite and DuckDB have no roles:
    the file is opened read-only and the engine guards of ``engines/`` apply, so the report
    is empty (nothing privileged).

Definer routines (``routines.py``)
    Read with the report, on the same first guarded statement, and cached beside it. A
    SECURITY DEFINER routine owned by another role is not a reason to refuse the role: calls
    to it are refused instead (``refused_definer_routines`` feeds the connection's
    ``RelationPolicy``, which every surface's check receives), unless
    ``ConnectionOptions.allow_functions`` names it. The first statement on a connection was
    checked before the routines were known, so ``enforce_least_privilege`` checks it again for
    that rule alone.

What counts as critical (the decision ``baton db check`` exits 1 on, and the refusal)
    Whatever lets a query reach beyond the rows it reads: read or write server files, run
    programs, signal or stop other sessions, read secrets (password hashes, other sessions'
    SQL, settings holding connection strings), and what amounts to any of them (superuser,
    replication, granting oneself built-in roles, rewriting MariaDB's privilege tables).
    Write privileges, ownership, ``BYPASSRLS`` and the like are reported but not critical:
    the read-only transaction and the parser check hold there, and many real databases give
    their reporting role an owner it did not choose.

Enforcement
    ``enforce_least_privilege`` runs from ``SQLConnection.execute_readonly`` before the first
    guarded statement on an engine with roles (``Engine.has_roles``: PostgreSQL and
    MySQL/MariaDB). The report is cached on the connection (a weak map: nothing is added to
    ``SQLConnection`` itself) and inspected at most once even under concurrent first requests. Privileges granted or revoked later are
    seen by a new ``SQLConnection`` (a restart), on purpose: one round trip per connection,
    none per query. A critical report raises ``PrivilegedRoleError`` at every query unless
    ``ConnectionOptions.allow_privileged_role`` is set; with it, one WARNING per connection
    names the risks. The CLI's ``--unsafe-allow-privileged-role`` and the environment variable
    ``BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE=1`` set that option for ``baton serve`` / ``baton ask``
    (library callers set the option themselves; the variable is read by the CLI only). An
    inspection that fails (server down) is not cached: the next query tries again.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from baton.errors import ConfigurationError
from baton.settings import Settings
from baton.specialists.sql.role_report import RoleReport, describe_risks
from baton.specialists.sql.routines import RoutineCatalog, inspect_routines
from baton.specialists.sql.safety.check import check_safety
from baton.specialists.sql.safety.verdict import UnsafeQueryError

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection

log = logging.getLogger(__name__)

OPT_IN_ENV = "BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE"
OPT_IN_FLAG = "--unsafe-allow-privileged-role"


class PrivilegedRoleError(ConfigurationError):
    """Raised by a guarded query when the connection's role has a critical risk and
    ``allow_privileged_role`` is off. Never retried: the fix is a different role."""

    def __init__(self, report: RoleReport, connection_id: str = "") -> None:
        self.report = report
        self.risks = report.critical_risks
        self.connection_id = connection_id
        super().__init__(
            f"refusing to run model-written SQL as database role {report.role!r}: it can {describe_risks(self.risks)} "
            f"({', '.join(self.risks)}). A read-only transaction does not stop that; only the role's privileges do. "
            f"Connect as a least-privilege role (`baton db grant URL --schema S --apply` creates one; "
            f"`baton db check URL` shows what a role may do), or opt in knowingly with "
            f"ConnectionOptions(allow_privileged_role=True) ({OPT_IN_FLAG} or {OPT_IN_ENV}=1 on the command line)."
        )


def privileged_role_opt_in(flag: bool = False, settings: Settings | None = None) -> bool:
    """The CLI's opt-in: the flag, or ``BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE`` set to a true value
    (in ``settings``, default ``Settings.from_env()``)."""
    return flag or (settings if settings is not None else Settings.from_env()).unsafe_allow_privileged_role


# --- inspection ------------------------------------------------------------------------------


def inspect_role(connection: SQLConnection) -> RoleReport:
    """The role report, read on one pooled connection (sync: call it in the connection's
    thread, or use ``ainspect_role``). Raises ``SQLExecutionError`` when the server cannot
    be reached or refuses the catalog queries."""
    report = connection.kind.inspect_role(connection)  # role_postgres.py, role_mysql.py
    if report is None:
        return RoleReport(connection.dialect, role="(none: no roles)", notes=(
            "no database roles: the file is opened read-only and Baton's engine guards apply",))
    return report


async def ainspect_role(connection: SQLConnection) -> RoleReport:
    """``inspect_role`` in the connection's worker thread."""
    return await connection.run_in_thread(inspect_role, connection)


# --- enforcement -----------------------------------------------------------------------------


@dataclass
class _RoleCheck:
    lock: threading.Lock = field(default_factory=threading.Lock)
    report: RoleReport | None = None
    routines: RoutineCatalog | None = None
    warned: bool = False


_CHECKS: weakref.WeakKeyDictionary[Any, _RoleCheck] = weakref.WeakKeyDictionary()
_CHECKS_LOCK = threading.Lock()


def _check_of(connection: SQLConnection) -> _RoleCheck:
    with _CHECKS_LOCK:
        check = _CHECKS.get(connection)
        if check is None:
            check = _CHECKS[connection] = _RoleCheck()
        return check


def role_report(connection: SQLConnection) -> RoleReport | None:
    """The cached report of ``connection``'s role, if a guarded query has run yet."""
    with _CHECKS_LOCK:
        check = _CHECKS.get(connection)
    return check.report if check is not None else None


def routine_catalog(connection: SQLConnection) -> RoutineCatalog | None:
    """The cached routines ``connection``'s role may execute, if a guarded query has run yet."""
    with _CHECKS_LOCK:
        check = _CHECKS.get(connection)
    return check.routines if check is not None else None


def refused_definer_routines(connection: SQLConnection) -> frozenset[tuple[str, str]]:
    """``(schema, name)`` of the definer routines model SQL may not call on ``connection``
    (those not in ``allow_functions``); empty until the first guarded query has read them."""
    catalog = routine_catalog(connection)
    if catalog is None or not catalog.definers:
        return frozenset()
    return catalog.refused(connection.options.allow_functions)


async def enforce_least_privilege(connection: SQLConnection, sql: str | None = None) -> RoleReport | None:
    """Called before every guarded statement: inspect the role (and the routines it may
    execute) once, then refuse (or warn once, when the connection opted in) if it has a
    critical risk, and refuse ``sql`` if it calls a definer routine not allowed by name (the
    safety check does that too once the routines are known; the first statement on a new
    connection was checked before). ``None`` for engines without roles. Costs a dictionary
    lookup once the report is cached, and a parse only where definer routines exist."""
    if not connection.kind.has_roles:
        return None
    check = _check_of(connection)
    report = check.report
    if report is None:
        report = await connection.run_in_thread(_inspect_once, connection, check)
    if sql is not None and refused_definer_routines(connection):
        verdict = check_safety(sql, connection.dialect, relations=connection.relation_policy)
        if verdict.rule == "definer_routine":  # other rules are the caller's check's to apply
            raise UnsafeQueryError(verdict)
    if not report.critical:
        return report
    if not connection.options.allow_privileged_role:
        raise PrivilegedRoleError(report, connection.id)
    with _CHECKS_LOCK:
        first, check.warned = not check.warned, True
    if first:
        log.warning("connection %s runs model-written SQL as database role %r, which can %s (%s); allowed by "
                    "allow_privileged_role", connection.id, report.role, describe_risks(report.critical_risks),
                    ", ".join(report.critical_risks))
    return report


def _inspect_once(connection: SQLConnection, check: _RoleCheck) -> RoleReport:
    with check.lock:  # concurrent first queries: one inspection, the others wait for it
        if check.report is None:
            routines = inspect_routines(connection)
            check.report, check.routines = inspect_role(connection), routines
        return check.report
