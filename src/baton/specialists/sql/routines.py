"""Definer routines: functions and procedures that run with their owner's rights, read from
the catalog at connect.

Why this exists
    Least privilege stops at a routine declared ``SECURITY DEFINER`` (PostgreSQL) or
    ``SQL SECURITY DEFINER`` (MariaDB/MySQL, and their *default*): its body runs as its owner.
    An administrator's helper ``exec_sql(q text)`` doing ``EXECUTE q`` and owned by a
    superuser is the server's superuser for whoever may call it, and PostgreSQL grants
    EXECUTE on every new function to PUBLIC unless revoked. The body is not analysed (a SQL
    string built at run time inside it is invisible to any static check), so Baton refuses
    calls to these routines unless the workspace names them (``allow_functions``), and
    ``baton db check`` reports those whose owner holds more than the role.

What is read (one query, in the role's own session, once per connection with the role
report: ``privileges.py``)
    PostgreSQL: every ``pg_proc`` row the role may EXECUTE (``has_function_privilege``: the
    owner, PUBLIC — the default ACL — and roles it is a member of) in a schema it has USAGE
    on, with ``prosecdef``, owner, language, volatility and how EXECUTE reaches the role
    (``aclexplode`` of the ACL or of ``acldefault``). The owner counts as more privileged when
    it is a superuser, has REPLICATION, is a member of a built-in role that reaches outside the
    database (``role_postgres.OWNER_RISK_ROLES``) or may EXECUTE a superuser-only function
    (``role_postgres.OWNER_RISK_FUNCTIONS``). A routine owned by a role the current role is a
    member of adds nothing (it could ``SET ROLE`` anyway) and is not counted.
    MariaDB/MySQL: ``information_schema.ROUTINES``, which lists the routines the account holds
    a privilege on (measured on 10.11: a routine appears once EXECUTE is granted to the
    account, or on its database to PUBLIC), with ``SECURITY_TYPE`` and ``DEFINER``. A routine
    granted by name to PUBLIC is missing there (and from ``SHOW CREATE``), though callable: the
    account's ``SHOW GRANTS`` lists that grant, and such a routine is taken as a definer one
    of unknown owner (the default is DEFINER; fail closed). A plain account may not read
    another account's grants; when ``SHOW GRANTS FOR definer`` is refused the definer is
    taken as more privileged (fail closed), else its grants are classified as ``role_mysql``
    classifies the role's. Grants held through a role the account may SET are not read here.

Names are kept as the catalog spells them (PostgreSQL: case kept, quoted or not); the SQL
check resolves the names a statement calls the way the server does (``safety/definer.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from baton.errors import ConfigurationError
from baton.specialists.sql.engines import engine_named
from baton.specialists.sql.engines.mysql_flavors import flavor_of_version
from baton.specialists.sql.role_mysql import classify_grant, parse_grant_line
from baton.specialists.sql.role_postgres import OWNER_RISK_FUNCTIONS, OWNER_RISK_ROLES

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection

_KINDS = {"f": "function", "p": "procedure", "a": "aggregate", "w": "window function"}
_VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}


@dataclass(frozen=True, slots=True)
class Routine:
    """One routine the role may execute. ``definer``: runs with ``owner``'s rights.
    ``own``: the owner is the role or a role it may act as. ``owner_risks`` says why the
    owner holds more than the role (empty: nothing known). ``arguments`` is PostgreSQL's
    identity argument list (what ``REVOKE ... ON FUNCTION f(...)`` needs)."""

    schema: str
    name: str
    kind: str = "function"
    definer: bool = False
    owner: str = ""
    own: bool = False
    owner_risks: tuple[str, ...] = ()
    language: str = ""
    volatility: str = ""
    executable_via: tuple[str, ...] = ()
    arguments: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def runs_as_another(self) -> bool:
        """A definer routine whose owner is not the role: the SQL check refuses calls to it."""
        return self.definer and not self.own

    @property
    def elevated(self) -> bool:
        """What ``baton db check`` reports (exit 1): it runs as an owner that holds more."""
        return self.runs_as_another and bool(self.owner_risks)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "qualified": self.qualified, "elevated": self.elevated}


@dataclass(frozen=True, slots=True)
class RoutineCatalog:
    """The routines a connection's role may execute (empty for engines without routines)."""

    dialect: str
    routines: tuple[Routine, ...] = ()

    @property
    def definers(self) -> tuple[Routine, ...]:
        return tuple(r for r in self.routines if r.runs_as_another)

    @property
    def elevated(self) -> tuple[Routine, ...]:
        return tuple(r for r in self.routines if r.elevated)

    def refused(self, allowed: Iterable[str] = ()) -> frozenset[tuple[str, str]]:
        """``(schema, name)`` of every definer routine a call to which is refused: all that run
        as another role, less those ``allowed`` names (``schema.name``). Cached: the check asks
        at every statement."""
        return _refused(self, tuple(allowed))

    def to_dict(self) -> dict[str, Any]:
        return {"dialect": self.dialect, "routines": [r.to_dict() for r in self.routines]}


@lru_cache(maxsize=256)
def _refused(catalog: RoutineCatalog, allowed: tuple[str, ...]) -> frozenset[tuple[str, str]]:
    keep = allowed_keys(allowed, catalog.dialect)
    any_case = engine_named(catalog.dialect).routine_names_ignore_case
    return frozenset((r.schema, r.name) for r in catalog.definers if not _matches(r, keep, any_case))


def _matches(routine: Routine, keys: frozenset[tuple[str, str]], any_case: bool) -> bool:
    if any_case:  # the name in any case; the schema exactly (MySQL: lower_case_table_names decides)
        return (routine.schema, routine.name.lower()) in {(s, n.lower()) for s, n in keys}
    return (routine.schema, routine.name) in keys


_PART = r'(?:"(?:[^"]|"")+"|`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_$]*)'
_QUALIFIED = re.compile(rf"\s*({_PART})\s*\.\s*({_PART})\s*")


def allowed_keys(entries: Iterable[str], dialect: str) -> frozenset[tuple[str, str]]:
    """``schema.name`` entries as the engine reads them: an unquoted part folds to lower case
    on PostgreSQL (``Engine.folds_unquoted_names``), a ``"quoted"`` (or MySQL ```quoted```)
    one is kept. Raises ``ConfigurationError`` for an entry that is not a schema-qualified name."""
    fold = engine_named(dialect).folds_unquoted_names
    keys = set()
    for entry in entries:
        match = _QUALIFIED.fullmatch(entry)
        if match is None:
            raise ConfigurationError(f"allowed function {entry!r} is not a schema-qualified name such as public.my_func")
        keys.add((_part(match.group(1), fold), _part(match.group(2), fold)))
    return frozenset(keys)


def _part(text: str, fold: bool) -> str:
    if text[0] in "\"`":
        return text[1:-1].replace(text[0] * 2, text[0])
    return text.lower() if fold else text


# --- PostgreSQL ------------------------------------------------------------------------------

def owner_risk_sql(owner: str) -> str:
    """A SQL expression (a ``text[]``) naming why role ``owner`` (an oid expression) holds
    more than a least-privilege role: empty when nothing. Shared with ``grants.py``."""
    roles = ", ".join(f"'{r}'" for r in OWNER_RISK_ROLES)
    functions = ", ".join(f"'{f}'" for f in OWNER_RISK_FUNCTIONS)
    return (
        "ARRAY(SELECT w FROM ("
        f"SELECT 'superuser' AS w FROM pg_catalog.pg_roles o WHERE o.oid = {owner} AND o.rolsuper "
        f"UNION ALL SELECT 'replication' FROM pg_catalog.pg_roles o WHERE o.oid = {owner} AND o.rolreplication "
        f"UNION ALL SELECT 'member of ' || b.rolname FROM pg_catalog.pg_roles b WHERE b.rolname IN ({roles}) "
        f"AND pg_catalog.pg_has_role({owner}, b.oid, 'MEMBER') "
        f"UNION ALL SELECT DISTINCT 'may call ' || f.proname || '()' FROM pg_catalog.pg_proc f "
        f"WHERE f.proname IN ({functions}) AND f.pronamespace = 'pg_catalog'::regnamespace "
        f"AND pg_catalog.has_function_privilege({owner}, f.oid, 'EXECUTE')) why)")


_PG_ROUTINES = f"""
SELECT n.nspname, p.proname, p.prokind, p.prosecdef, p.proowner::regrole::text,
       pg_catalog.pg_has_role(current_user, p.proowner, 'MEMBER'),
       CASE WHEN p.prosecdef AND NOT pg_catalog.pg_has_role(current_user, p.proowner, 'MEMBER')
            THEN {owner_risk_sql('p.proowner')} ELSE '{{}}'::text[] END,
       l.lanname, p.provolatile,
       ARRAY(SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                  WHEN a.grantee = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)
                                  THEN 'granted to the role' ELSE 'role ' || a.grantee::regrole::text END
             FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
             WHERE a.privilege_type = 'EXECUTE'
               AND CASE WHEN a.grantee = 0 THEN true ELSE pg_catalog.pg_has_role(current_user, a.grantee, 'MEMBER') END),
       pg_catalog.pg_get_function_identity_arguments(p.oid)
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.prosecdef AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
  AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
ORDER BY 1, 2, 11"""


def _short_risks(risks: Iterable[str] | None) -> tuple[str, ...]:
    risks = tuple(risks or ())
    return ("superuser",) if "superuser" in risks else risks  # a superuser may call everything: one word says it


def postgres_routines(cursor: Any) -> RoutineCatalog:
    """PostgreSQL's definer routines the role may execute (``engines/postgres.py``)."""
    cursor.execute("SET TRANSACTION READ ONLY")
    cursor.execute("SET LOCAL statement_timeout = 15000")
    cursor.execute(_PG_ROUTINES)
    routines = tuple(
        Routine(schema, name, _KINDS.get(kind, kind), bool(definer), owner, bool(own), _short_risks(risks), language,
                _VOLATILITY.get(volatility, volatility), tuple(via or ()), arguments or "")
        for schema, name, kind, definer, owner, own, risks, language, volatility, via, arguments in cursor.fetchall())
    return RoutineCatalog("postgres", routines)


# --- MariaDB / MySQL -------------------------------------------------------------------------

def _account(text: str) -> tuple[str, str]:
    user, _, host = str(text).rpartition("@") if "@" in str(text) else (str(text), "", "")
    return user.strip("`'\""), host.strip("`'\"")


def mysql_routines(cursor: Any) -> RoutineCatalog:
    """MySQL/MariaDB's definer routines the account may execute (``engines/mysql.py``)."""
    cursor.execute("SELECT CURRENT_USER(), VERSION(), @@GLOBAL.secure_file_priv")
    me, version, secure_file_priv = cursor.fetchone()
    flavor = flavor_of_version(version)
    risks_of: dict[str, tuple[str, ...]] = {}
    found: dict[tuple[str, str], Routine] = {}
    cursor.execute("SHOW GRANTS")
    lines = [row[0] for row in cursor.fetchall()]
    roles = [r for g in map(parse_grant_line, lines) if g is not None and g.grantee == str(me) for r in g.roles]
    for role in [None, *roles]:  # each role the account may SET shows the routines granted to it
        via = f"role {role.strip('`')}" if role else "the account's grants (or PUBLIC's)"
        if role is not None:
            try:
                cursor.execute(f"SET ROLE {role}")  # a name from SHOW GRANTS, quoted as the server quotes it
                cursor.execute("SHOW GRANTS")
                lines = [row[0] for row in cursor.fetchall()]
            except Exception:
                continue  # role_mysql reports a role whose grants cannot be read (unverified, critical)
        cursor.execute("SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, SECURITY_TYPE, DEFINER, SQL_DATA_ACCESS, "
                       "IS_DETERMINISTIC FROM information_schema.ROUTINES ORDER BY 1, 2")
        for schema, name, kind, security, definer, access, deterministic in cursor.fetchall():
            is_definer = str(security).upper() == "DEFINER"
            own = _account(definer) == _account(me)
            if is_definer and not own and definer not in risks_of:
                risks_of[definer] = definer_risks(cursor, definer, flavor, secure_file_priv)
            found.setdefault((str(schema).lower(), str(name).lower()), Routine(
                str(schema), str(name), str(kind).lower(), is_definer, str(definer), own,
                risks_of.get(definer, ()) if is_definer and not own else (), "SQL",
                "deterministic" if str(deterministic).upper() == "YES" else str(access or "").lower(), (via,)))
        for grant in filter(None, map(parse_grant_line, lines)):
            key = ((grant.database or "").lower(), (grant.table or "").lower())
            if grant.object_type in ("FUNCTION", "PROCEDURE") and grant.table and key not in found and \
                    {"EXECUTE", "ALL", "ALL PRIVILEGES"} & set(grant.privileges):
                # granted on the routine (to PUBLIC, say) but hidden from ROUTINES: fail closed
                found[key] = Routine(
                    grant.database or "", grant.table, grant.object_type.lower(), True, "(hidden from this account)",
                    False, ("unknown (the routine's definition is hidden from this account): taken as more",), "SQL",
                    "", (f"a grant to {grant.grantee or 'the account'}",))
    return RoutineCatalog("mysql", tuple(found.values()))


def definer_risks(cursor: Any, definer: str, flavor: str, secure_file_priv: str | None) -> tuple[str, ...]:
    """Why MySQL/MariaDB account ``definer`` (``user@host``) holds more than a least-privilege
    account: its critical grants; fail closed when they cannot be read. Shared with ``grants.py``."""
    user, host = _account(definer)
    try:
        cursor.execute("SHOW GRANTS FOR %s@%s", (user, host))
        lines = [row[0] for row in cursor.fetchall()]
    except Exception:
        return ("unknown (its grants are hidden from this account): taken as more",)
    findings = [f for grant in filter(None, map(parse_grant_line, lines))
                for f in classify_grant(grant, flavor=flavor, secure_file_priv=secure_file_priv) if f.critical]
    return tuple(dict.fromkeys(f"{f.risk} ({f.source})" for f in findings))


def inspect_routines(connection: SQLConnection) -> RoutineCatalog:
    """The routines ``connection``'s role may execute (sync: the connection's thread). Raises
    ``SQLExecutionError`` when the server cannot be reached or refuses the catalog query."""
    catalog = connection.kind.inspect_routines(connection)
    return catalog if catalog is not None else RoutineCatalog(connection.dialect)


__all__ = ["Routine", "RoutineCatalog", "allowed_keys", "definer_risks", "inspect_routines", "mysql_routines",
           "owner_risk_sql", "postgres_routines"]
