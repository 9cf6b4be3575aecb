"""MySQL's server flavours and system schema, shared by the MySQL engine (``mysql.py``) and the
per-engine modules it calls (``role_mysql.py``, ``routines.py``, ``grants.py``). A leaf: it
imports nothing, so those modules read these names without an import cycle through
``mysql.py``, which imports them.
"""

from __future__ import annotations

MARIADB = "mariadb"  # the server flavour that spells its statement timeout differently
MYSQL = "mysql"  # the other one
SYSTEM_SCHEMA = "mysql"  # the database of the privilege tables: mysql.user, mysql.global_priv (role_mysql.py)


def flavor_of_version(version: object) -> str:
    """``"mariadb"`` or ``"mysql"``, from what ``SELECT VERSION()`` answered."""
    return MARIADB if MARIADB in str(version).lower() else MYSQL
