"""Fetch the third-party SQL corpora the SQL safety tests and benchmarks read.

The corpora come from source distributions on PyPI (the same versions as the installed
packages), fetched with ``pip download`` — the ordinary client for that registry. From
sqlglot's:

- ``tests/fixtures/identity.sql``: about a thousand statements sqlglot round-trips; its
  SELECT lines are a read-only corpus we did not write.
- ``tests/fixtures/optimizer/tpc-h/tpc-h.sql``: the 22 TPC-H queries (each followed by
  sqlglot's optimized rewrite), and the small TPC-H sample tables next to it.
- ``tests/fixtures/optimizer/tpc-ds/tpc-ds.sql``: the 99 TPC-DS queries (and sample tables).

From pglast's (pglast embeds libpg_query, PostgreSQL's own parser):

- ``libpg_query/test/sql/postgres_regress/*.sql``: PostgreSQL's regression suite (about 230
  psql scripts, tens of thousands of statements of every kind) — SQL nobody here wrote, for
  ``bench/sql_false_refusals.py``.

The loaders below (``tpch_queries``, ``tpcds_queries``, ``identity_lines``,
``table_columns``, ``regress_files``) read the fetched files for the tests and benchmarks.

They land in ``tests/data/downloaded/sqlglot/`` and ``tests/data/downloaded/pglast/``
(git-ignored). Running the script again does nothing when the files are there. Exit status 0
when all the data is in place, 1 otherwise.

    .venv/bin/python scripts/fetch_test_data.py
"""

from __future__ import annotations

import gzip
import importlib.metadata
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "data" / "downloaded" / "sqlglot"
WANTED = (
    "tests/fixtures/identity.sql",
    "tests/fixtures/optimizer/tpc-h/tpc-h.sql",
    "tests/fixtures/optimizer/tpc-ds/tpc-ds.sql",
)
WANTED_DIRS = ("tests/fixtures/optimizer/tpc-h/", "tests/fixtures/optimizer/tpc-ds/")
REGRESS_TARGET = ROOT / "tests" / "data" / "downloaded" / "pglast"
REGRESS_DIR = "libpg_query/test/sql/postgres_regress/"


def _destination(member: str) -> Path:
    return TARGET / member.removeprefix("tests/fixtures/")


def present() -> bool:
    return all(_destination(m).is_file() for m in WANTED) and (TARGET / "VERSION").is_file()


def _sdist(package: str, version: str, directory: str) -> tarfile.TarFile:
    """Download ``package==version``'s source archive into ``directory`` and open it."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
               f"{package}=={version}", "-d", directory]
    subprocess.run(command, check=True)
    archives = list(Path(directory).glob(f"{package}-*.tar.gz"))
    if not archives:
        raise RuntimeError(f"pip download left no {package} source archive in {directory}")
    return tarfile.open(archives[0])


def _extract(archive: tarfile.TarFile, member: tarfile.TarInfo, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    source = archive.extractfile(member)
    assert source is not None
    destination.write_bytes(source.read())


def fetch() -> Path:
    version = importlib.metadata.version("sqlglot")
    if present() and (TARGET / "VERSION").read_text().strip() == version:
        print(f"sqlglot {version} test corpora already in {TARGET.relative_to(ROOT)}")
        return TARGET
    with tempfile.TemporaryDirectory() as tmp, _sdist("sqlglot", version, tmp) as archive:
        for member in archive.getmembers():
            inner = member.name.split("/", 1)[1] if "/" in member.name else ""
            wanted = inner in WANTED or inner.startswith(WANTED_DIRS)
            if wanted and member.isfile():
                _extract(archive, member, _destination(inner))
    (TARGET / "VERSION").write_text(version + "\n")
    print(f"fetched sqlglot {version} test corpora into {TARGET.relative_to(ROOT)}")
    return TARGET


def regress_present() -> bool:
    return (REGRESS_TARGET / "VERSION").is_file() and any(REGRESS_TARGET.glob("*.sql"))


def fetch_regress() -> Path:
    """PostgreSQL's regression suite from the installed pglast's sdist (the parser and the
    suite then come from the same PostgreSQL release)."""
    version = importlib.metadata.version("pglast")
    if regress_present() and (REGRESS_TARGET / "VERSION").read_text().strip() == version:
        print(f"pglast {version} PostgreSQL regression suite already in {REGRESS_TARGET.relative_to(ROOT)}")
        return REGRESS_TARGET
    count = 0
    with tempfile.TemporaryDirectory() as tmp, _sdist("pglast", version, tmp) as archive:
        for member in archive.getmembers():
            inner = member.name.split("/", 1)[1] if "/" in member.name else ""
            name = inner.removeprefix(REGRESS_DIR)
            if inner.startswith(REGRESS_DIR) and member.isfile() and name.endswith(".sql") and "/" not in name:
                _extract(archive, member, REGRESS_TARGET / name)
                count += 1
    if not count:
        raise RuntimeError(f"pglast {version}'s source archive has no {REGRESS_DIR}*.sql")
    (REGRESS_TARGET / "VERSION").write_text(version + "\n")
    print(f"fetched pglast {version}'s PostgreSQL regression suite ({count} files) into "
          f"{REGRESS_TARGET.relative_to(ROOT)}")
    return REGRESS_TARGET


# --- loaders ------------------------------------------------------------------------------

_HEADER = re.compile(r"^-- (TPC-H|TPC-DS) (\d+)\s*$", re.MULTILINE)


def _benchmark_queries(path: Path) -> list[tuple[str, str, str]]:
    """``(name, original, optimized)`` for each ``-- TPC-x N`` block: sqlglot's fixture
    holds each query as written, then its own optimized rewrite."""
    text = path.read_text()
    headers = list(_HEADER.finditer(text))
    queries = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = "\n".join(line for line in text[header.end():end].splitlines()
                         if not line.startswith(("#", "-----")))
        statements = [s.strip() for s in re.split(r";\s*(?:\n|$)", body) if s.strip()]
        queries.append((f"{header.group(1)} {header.group(2)}", statements[0], statements[1] if len(statements) > 1 else ""))
    return queries


def tpch_queries() -> list[tuple[str, str, str]]:
    return _benchmark_queries(TARGET / "optimizer" / "tpc-h" / "tpc-h.sql")


def tpcds_queries() -> list[tuple[str, str, str]]:
    return _benchmark_queries(TARGET / "optimizer" / "tpc-ds" / "tpc-ds.sql")


def identity_lines() -> list[tuple[int, str]]:
    """``(line number, statement)`` for each non-blank line of sqlglot's identity.sql."""
    lines = (TARGET / "identity.sql").read_text().splitlines()
    return [(number, line) for number, line in enumerate(lines, 1) if line.strip()]


def table_columns(benchmark: str) -> dict[str, list[str]]:
    """``{table: [column, ...]}`` from the header row of each sample table of
    ``benchmark`` ("tpc-h" or "tpc-ds")."""
    tables = {}
    for path in sorted((TARGET / "optimizer" / benchmark).glob("*.csv.gz")):
        with gzip.open(path, "rt") as handle:
            tables[path.name.removesuffix(".csv.gz")] = handle.readline().strip().split("|")
    return tables


def regress_files() -> list[Path]:
    """The PostgreSQL regression suite's psql scripts, sorted by name."""
    return sorted(REGRESS_TARGET.glob("*.sql"))


def main() -> int:
    status = 0
    for what, step in (("the sqlglot SQL test corpora", fetch), ("the PostgreSQL regression suite", fetch_regress)):
        try:
            step()
        except (subprocess.CalledProcessError, RuntimeError, OSError, tarfile.TarError,
                importlib.metadata.PackageNotFoundError) as error:
            print(f"could not fetch {what}: {error}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
