"""The role report: what a database role may do (``Risk`` codes, ``RoleFinding``s, the
``RoleReport``), and the helpers the per-engine inspections share (``role_postgres.py``,
``role_mysql.py``). What the report is used for — the refusal, the opt-in, the checks at
connect — is ``privileges.py``, which calls the inspections; they call only this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from baton.specialists.sql.classify import SQLExecutionError, classify_error

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection


class Risk(StrEnum):
    """What a role may do beyond reading its tables (the codes of ``RoleFinding``)."""

    SUPERUSER = "superuser"
    READ_SERVER_FILES = "read_server_files"
    WRITE_SERVER_FILES = "write_server_files"
    RUN_PROGRAMS = "run_programs"
    SIGNAL_SESSIONS = "signal_sessions"
    SHUTDOWN_SERVER = "shutdown_server"
    READ_SECRETS = "read_secrets"
    REPLICATION = "replication"
    GRANT_ROLES = "grant_roles"
    EDIT_PRIVILEGES = "edit_privileges"
    UNVERIFIED = "unverified"
    OWNS_OBJECTS = "owns_objects"
    CAN_WRITE = "can_write"
    CAN_CREATE = "can_create"
    BYPASS_ROW_SECURITY = "bypass_row_security"
    CREATE_DATABASES = "create_databases"
    CREATE_USERS = "create_users"
    GRANT_OPTION = "grant_option"
    PROXY_USERS = "proxy_users"
    OPEN_CONNECTIONS = "open_connections"
    SERVER_ADMIN = "server_admin"


# Critical by default; a few findings decide for themselves (CREATEROLE by server version,
# FILE by secure_file_priv, dblink by variant).
CRITICAL_RISKS = frozenset({
    Risk.SUPERUSER, Risk.READ_SERVER_FILES, Risk.WRITE_SERVER_FILES, Risk.RUN_PROGRAMS, Risk.SIGNAL_SESSIONS,
    Risk.SHUTDOWN_SERVER, Risk.READ_SECRETS, Risk.REPLICATION, Risk.GRANT_ROLES, Risk.EDIT_PRIVILEGES, Risk.UNVERIFIED,
})


@dataclass(frozen=True, slots=True)
class RoleFinding:
    """One thing the role may do: ``risk`` (a code), a sentence for people, the grant or
    attribute it comes from (never a raw ``SHOW GRANTS`` line: those carry password hashes),
    and whether it is critical."""

    risk: Risk
    sentence: str
    source: str = ""
    critical: bool | None = None  # None: decided by the risk (CRITICAL_RISKS)

    def __post_init__(self) -> None:
        if self.critical is None:
            object.__setattr__(self, "critical", self.risk in CRITICAL_RISKS)


@dataclass(frozen=True, slots=True)
class RoleReport:
    """What the role a connection logs in as may do. ``findings`` are the risks, ``notes``
    plain facts (what it reads, ``secure_file_priv``, the engine guards of file engines)."""

    dialect: str
    role: str
    server: str = ""
    findings: tuple[RoleFinding, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def critical(self) -> bool:
        return any(f.critical for f in self.findings)

    @property
    def risks(self) -> tuple[Risk, ...]:
        """Every risk found, each once, in the order found."""
        return tuple(dict.fromkeys(f.risk for f in self.findings))

    @property
    def critical_risks(self) -> tuple[Risk, ...]:
        return tuple(dict.fromkeys(f.risk for f in self.findings if f.critical))

    def to_dict(self) -> dict[str, Any]:
        return {"dialect": self.dialect, "role": self.role, "server": self.server, "critical": self.critical,
                "findings": [{**asdict(f), "risk": str(f.risk)} for f in self.findings], "notes": list(self.notes)}


_RISK_WORDS = {
    Risk.SUPERUSER: "do anything (superuser)", Risk.READ_SERVER_FILES: "read server files",
    Risk.WRITE_SERVER_FILES: "write server files", Risk.RUN_PROGRAMS: "run programs on the server",
    Risk.SIGNAL_SESSIONS: "signal or end other sessions", Risk.SHUTDOWN_SERVER: "shut the server down",
    Risk.READ_SECRETS: "read secrets", Risk.REPLICATION: "stream the whole server (replication)",
    Risk.GRANT_ROLES: "grant itself built-in roles", Risk.EDIT_PRIVILEGES: "rewrite the privilege tables",
    Risk.UNVERIFIED: "hold privileges Baton could not read",
}


def describe_risks(risks: tuple[Risk, ...]) -> str:
    return ", ".join(_RISK_WORDS.get(r, str(r).replace("_", " ")) for r in risks)


_T = TypeVar("_T")


def on_pooled_connection(connection: SQLConnection, body: Callable[[Any], _T]) -> _T:
    """``body(cursor)`` on a connection from ``connection``'s pool, rolled back after (the
    pool's check-in reset then clears the session); failures come out classified. Where an
    inspection sets a role the pool's reset keeps (MariaDB's ``SET ROLE``: the engine's
    ``role_restore``), the role the session logged in with is put back after (the connection
    is discarded if that fails): the next request must not run under another role."""
    try:
        raw = connection.engine.raw_connection()
    except Exception as exc:
        raise SQLExecutionError(classify_error(exc, connection.dialect)) from exc
    restore = None
    try:
        cursor = raw.cursor()
        restore = connection.kind.role_restore(cursor)
        return body(cursor)
    except SQLExecutionError:
        raise
    except Exception as exc:
        raise SQLExecutionError(classify_error(exc, connection.dialect)) from exc
    finally:
        try:
            raw.rollback()
            if restore is not None:
                raw.cursor().execute(restore)
        except Exception:
            raw.invalidate()  # a new login next time rather than a session in an unknown role
        finally:
            raw.close()


def unique_findings(findings: list[RoleFinding]) -> list[RoleFinding]:
    return list(dict.fromkeys(findings))


__all__ = ["CRITICAL_RISKS", "Risk", "RoleFinding", "RoleReport", "describe_risks", "on_pooled_connection",
           "unique_findings"]
