"""What a MySQL/MariaDB account may do: ``SHOW GRANTS`` parsed, behind ``privileges.inspect_role``
(it fills a ``role_report.RoleReport``).

``SHOW GRANTS`` of the account, then of each role granted to it: on MariaDB with that role
set (``SHOW GRANTS FOR role`` is refused to a plain user; measured on 10.11, where the active
role's grants, nested roles included, are listed), on MySQL 8 with
``SHOW GRANTS FOR CURRENT_USER() USING role`` (from its manual, not run here). A role whose
grants cannot be read is reported as ``unverified`` (critical: fail closed). The pool's
check-in reset (``COM_RESET_CONNECTION``) does not undo ``SET ROLE`` (measured on MariaDB
10.11), so the role the session logged in with is put back after the inspection
(``role_report.on_pooled_connection``).

``secure_file_priv`` reads differently by server: on MariaDB NULL or empty means no
restriction (the local 10.11 shows NULL and ``LOAD_FILE`` reads ``/etc/passwd`` as root); on
MySQL NULL disables file access and empty means none. ``SELECT`` on ``*.*`` is a secret: it
includes ``mysql.user`` / ``mysql.global_priv`` password hashes.

Findings name the grant they come from, never the ``SHOW GRANTS`` line itself, which can
carry the account's password hash.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.specialists.sql.engines.mysql_flavors import MARIADB, MYSQL, SYSTEM_SCHEMA, flavor_of_version
from baton.specialists.sql.role_report import Risk, RoleFinding, RoleReport, on_pooled_connection, unique_findings

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection


# --- MySQL / MariaDB -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedGrant:
    """One ``SHOW GRANTS`` line, without the grantee's password hash. ``database``/``table``
    are None for ``*``; ``roles`` is set for ``GRANT role TO ...`` lines."""

    privileges: tuple[str, ...] = ()
    database: str | None = None
    table: str | None = None
    object_type: str = ""
    roles: tuple[str, ...] = ()
    grant_option: bool = False
    grantee: str = ""  # user@host (or a role name) without quotes

    @property
    def target(self) -> str:
        kind = f"{self.object_type} " if self.object_type else ""
        return f"{kind}{self.database or '*'}.{self.table or '*'}"


def _top_level(text: str) -> list[tuple[int, str]]:
    """(index, character) of every character outside quotes, backticks and parentheses."""
    out: list[tuple[int, str]] = []
    quote: str | None = None
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                if text[i + 1:i + 2] == quote:
                    i += 2
                    continue
                quote = None
        elif ch in "`'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append((i, ch))
        i += 1
    return out


def _find_word(text: str, word: str) -> int:
    visible = dict(_top_level(text))
    pattern = re.compile(rf"(?<![\w`]){word}(?![\w`])", re.IGNORECASE)
    for match in pattern.finditer(text):
        if all(i in visible for i in range(match.start(), match.end())):
            return match.start()
    return -1


def _split_commas(text: str) -> list[str]:
    cuts = [i for i, ch in _top_level(text) if ch == ","]
    parts, start = [], 0
    for cut in cuts + [len(text)]:
        parts.append(text[start:cut].strip())
        start = cut + 1
    return [p for p in parts if p]


def _unquote(name: str) -> str | None:
    name = name.strip()
    if name == "*":
        return None
    if len(name) >= 2 and name[0] == name[-1] == "`":
        return name[1:-1].replace("``", "`")
    return name


_NAME = r"(?:`(?:[^`]|``)*`|'(?:[^']|'')*'|\"[^\"]*\"|[^\s@`'\"]+)"
_GRANTEE = re.compile(rf"{_NAME}(?:@{_NAME})?")


def parse_grant_line(line: str) -> ParsedGrant | None:
    """A ``SHOW GRANTS`` line as data (``None`` for lines that grant nothing we classify)."""
    text = line.strip()
    if not text.upper().startswith("GRANT "):
        return None
    text = text[6:]
    to = _find_word(text, "TO")
    if to < 0:
        return None
    on = _find_word(text[:to], "ON")
    tail = text[to:]
    option = _find_word(tail, "WITH GRANT OPTION") >= 0
    grantee = _GRANTEE.match(tail[2:].strip())
    who = re.sub(r"[`'\"]", "", grantee.group(0)) if grantee else ""
    if on < 0:  # GRANT role[, role] TO grantee
        return ParsedGrant(roles=tuple(_split_commas(text[:to])), grant_option=option, grantee=who)
    privileges = tuple(re.sub(r"\s+", " ", re.sub(r"\(.*\)", "", p)).strip().upper() for p in _split_commas(text[:on]))
    target = text[on + 2:to].strip()
    if privileges == ("PROXY",):  # the target is an account, not a database object
        return ParsedGrant(privileges, None, target, "", (), option, who)
    kind = ""
    for candidate in ("PACKAGE BODY", "PACKAGE", "FUNCTION", "PROCEDURE", "TABLE"):
        if target.upper().startswith(candidate + " "):
            kind, target = ("" if candidate == "TABLE" else candidate), target[len(candidate):].strip()
            break
    dots = [i for i, ch in _top_level(target) if ch == "."]
    database, table = (target[:dots[0]], target[dots[0] + 1:]) if dots else (None, target)
    return ParsedGrant(privileges, _unquote(database) if database else None, _unquote(table), kind, (), option, who)


_WRITE_PRIVILEGES = frozenset({
    "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX", "CREATE VIEW", "CREATE ROUTINE", "ALTER ROUTINE",
    "TRIGGER", "EVENT", "CREATE TEMPORARY TABLES", "LOCK TABLES", "DELETE HISTORY", "REFERENCES"})
_ADMIN_PRIVILEGES = frozenset({
    "RELOAD", "BINLOG ADMIN", "BINLOG MONITOR", "BINLOG REPLAY", "READ_ONLY ADMIN", "REPLICATION CLIENT",
    "REPLICATION MASTER ADMIN", "REPLICATION SLAVE ADMIN", "SLAVE MONITOR", "REPLICA MONITOR", "FEDERATED ADMIN",
    "SET USER", "CREATE TABLESPACE"})
_ALL_GLOBAL = _WRITE_PRIVILEGES | _ADMIN_PRIVILEGES | {
    "SELECT", "FILE", "SUPER", "PROCESS", "SHUTDOWN", "REPLICATION SLAVE", "CREATE USER", "CONNECTION ADMIN"}
_SECRET_TABLES = frozenset({"user", "global_priv", "servers", "slave_master_info", "password_history"})


def classify_grant(grant: ParsedGrant, *, flavor: str, secure_file_priv: str | None) -> list[RoleFinding]:
    """The findings one parsed grant line implies (pure: unit-tested without a server)."""
    if grant.roles:
        return []
    everywhere = grant.database is None and grant.privileges != ("PROXY",)
    on_mysql = grant.database is not None and grant.database.lower() == SYSTEM_SCHEMA
    secret = everywhere or (on_mysql and (grant.table is None or grant.table.lower() in _SECRET_TABLES))
    privileges = frozenset(grant.privileges)
    label = f"{grant.table} (PROXY)" if grant.privileges == ("PROXY",) else grant.target
    found: list[RoleFinding] = []
    if privileges & {"ALL", "ALL PRIVILEGES"}:
        if everywhere and not grant.object_type:
            found.append(RoleFinding(Risk.SUPERUSER, "holds every privilege on every database", "ALL PRIVILEGES ON *.*"))
            privileges = _ALL_GLOBAL
            label = "*.* (ALL PRIVILEGES)"
        else:
            privileges = privileges | _WRITE_PRIVILEGES | {"SELECT"}

    def source(privilege: str) -> str:
        return f"{privilege} ON {label}"

    if everywhere:
        if "FILE" in privileges:
            found += _file_findings(flavor, secure_file_priv)
        if "SUPER" in privileges:
            found += [RoleFinding(Risk.SUPERUSER, "SUPER: kills other sessions, changes global settings, bypasses "
                                  "read_only", source("SUPER")),
                      RoleFinding(Risk.SIGNAL_SESSIONS, "can kill other sessions (SUPER)", source("SUPER"))]
        if "PROCESS" in privileges:
            found.append(RoleFinding(Risk.READ_SECRETS, "can read every session's SQL text (PROCESSLIST)", source("PROCESS")))
        if "SHUTDOWN" in privileges:
            found.append(RoleFinding(Risk.SHUTDOWN_SERVER, "can shut the server down", source("SHUTDOWN")))
        if "CONNECTION ADMIN" in privileges:
            found.append(RoleFinding(Risk.SIGNAL_SESSIONS, "can kill other sessions (CONNECTION ADMIN)",
                                     source("CONNECTION ADMIN")))
        for p in sorted(privileges & {"REPLICATION SLAVE", "REPLICATION REPLICA"}):
            found.append(RoleFinding(Risk.REPLICATION, "can stream the binary log: every change, privilege tables "
                                     "included", source(p)))
        admin = sorted(privileges & _ADMIN_PRIVILEGES)
        if admin:
            found.append(RoleFinding(Risk.SERVER_ADMIN, "server administration: " + ", ".join(admin), source("...")
                                     if len(admin) > 3 else source(", ".join(admin))))
        if "CREATE USER" in privileges:
            found.append(RoleFinding(Risk.CREATE_USERS, "can create, rename and drop accounts", source("CREATE USER")))
    if "PROXY" in privileges:
        found.append(RoleFinding(Risk.PROXY_USERS, "can act as other accounts (PROXY)", f"PROXY ON {grant.table}"))
    if "SELECT" in privileges and secret:
        found.append(RoleFinding(Risk.READ_SECRETS, "can read password hashes (mysql.user / mysql.global_priv) and "
                                 "stored server credentials", source("SELECT")))
    writes = sorted(privileges & _WRITE_PRIVILEGES)
    if writes and (everywhere or on_mysql):
        found.append(RoleFinding(Risk.EDIT_PRIVILEGES, "can write the privilege tables in `mysql`, granting itself "
                                 "anything", source(", ".join(writes) if len(writes) <= 3 else "write privileges")))
    elif writes:
        what = ", ".join(w.lower() for w in writes) if len(writes) <= 3 else "write and change objects"
        found.append(RoleFinding(Risk.CAN_WRITE, f"may {what} in {grant.target}",
                                 source(", ".join(writes) if len(writes) <= 3 else "write privileges")))
    if grant.grant_option or "GRANT OPTION" in privileges:
        found.append(RoleFinding(Risk.GRANT_OPTION, "can pass its privileges on", f"GRANT OPTION ON {label}"))
    return found


def _file_findings(flavor: str, secure_file_priv: str | None) -> list[RoleFinding]:
    if flavor == MYSQL and secure_file_priv is None:
        return [RoleFinding(Risk.READ_SERVER_FILES, "FILE is granted, but secure_file_priv = NULL disables file "
                            "access", "FILE ON *.*", critical=False)]
    where = f"under {secure_file_priv} (secure_file_priv)" if secure_file_priv else \
        "anywhere the server's OS user can (secure_file_priv is not set)"
    return [RoleFinding(Risk.READ_SERVER_FILES, f"LOAD_FILE / LOAD DATA INFILE read files {where}", "FILE ON *.*"),
            RoleFinding(Risk.WRITE_SERVER_FILES, f"SELECT ... INTO OUTFILE / DUMPFILE writes files {where}", "FILE ON *.*")]


def inspect_mysql(connection: SQLConnection) -> RoleReport:
    def body(cursor: Any) -> RoleReport:
        cursor.execute("SELECT CURRENT_USER(), VERSION(), @@GLOBAL.secure_file_priv")
        account, version, secure_file_priv = cursor.fetchone()
        flavor = flavor_of_version(version)
        if connection.server_flavor is None:
            connection.server_flavor = flavor
        cursor.execute("SHOW GRANTS")
        lines = [row[0] for row in cursor.fetchall()]
        findings: list[RoleFinding] = []
        me = str(account)
        roles = [r for g in map(parse_grant_line, lines) if g is not None and g.grantee == me for r in g.roles]
        for role in roles:
            try:
                if flavor == MARIADB:
                    cursor.execute(f"SET ROLE {role}")
                    cursor.execute("SHOW GRANTS")
                else:
                    cursor.execute(f"SHOW GRANTS FOR CURRENT_USER() USING {role}")
                lines += [row[0] for row in cursor.fetchall()]
            except Exception:
                findings.append(RoleFinding(Risk.UNVERIFIED, f"holds role {role}, whose privileges could not be read",
                                            f"GRANT {role}"))
        reads: list[str] = []
        for grant in filter(None, map(parse_grant_line, dict.fromkeys(lines))):
            findings += classify_grant(grant, flavor=flavor, secure_file_priv=secure_file_priv)
            if {"SELECT", "ALL", "ALL PRIVILEGES"} & set(grant.privileges):
                reads.append(grant.target)
        notes = [f"reads {', '.join(dict.fromkeys(reads))}" if reads else "reads nothing beyond information_schema",
                 f"secure_file_priv = {secure_file_priv!r}" if secure_file_priv is not None else "secure_file_priv = NULL"]
        name = "MariaDB" if flavor == MARIADB else "MySQL"
        return RoleReport("mysql", str(account), f"{name} {version}", tuple(unique_findings(findings)), tuple(notes))

    return on_pooled_connection(connection, body)


def role_restore_statement(role: Any, version: Any) -> str:
    """The statement that puts back the session's role as it was at login (``CURRENT_ROLE()``
    and ``VERSION()`` read before the inspection: ``role_report.on_pooled_connection``)."""
    if flavor_of_version(version) != MARIADB:
        return "SET ROLE DEFAULT"  # MySQL 8: the account's default roles (its manual; no MySQL server here)
    if role is None or str(role).upper() == "NONE":
        return "SET ROLE NONE"
    return "SET ROLE `" + str(role).replace("`", "``") + "`"
