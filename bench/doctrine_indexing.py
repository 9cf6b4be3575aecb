"""Doctrine indexing: first index of 400 sections, of one 3 MB file, and a re-index with
nothing changed (then with one file edited).

    .venv/bin/python bench/doctrine_indexing.py
    .venv/bin/python bench/doctrine_indexing.py --sections 2000 --megabytes 10

What it measures, on a fresh SQLite memory under a temporary folder:
- ``400 sections``: 20 files of 20 sections each (a heading and a paragraph of ~300
  characters), then the same 400 sections in one file, each indexed into an empty memory;
- ``3 MB file``: one Markdown file of ~3 MB (headings every ~10 paragraphs, so many sections
  are split into numbered parts), indexed into an empty memory;
- ``re-index, nothing changed``: the same folder indexed again: no file is read, nothing is
  written (the script checks both and prints the files read);
- ``re-index, one file edited``: one section changed in one file: only that file is read.
Before this change (measured here on the old code, 2 busy cores): 400 sections in 20 files
3.5 s, and re-indexing them unchanged 4.6 s; 400 sections in one file 60 s, re-indexed
unchanged 109 s (issue 11 reports over 5 minutes for a 3 MB file): each section queried its
file's records and compared its text with every one of them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from baton.memory import MemoryStore, Principal, TrustedAuthenticator, index_doctrine

WORDS = ("revenue", "churn", "refund", "region", "order", "customer", "margin", "cohort", "invoice", "ledger")


def paragraph(seed: int, chars: int = 300) -> str:
    words, i = [], seed
    while sum(len(w) + 1 for w in words) < chars:
        words.append(f"{WORDS[i % len(WORDS)]}{i % 97}")
        i = i * 31 + 7
    return " ".join(words) + "."


def many_sections(folder: Path, sections: int, per_file: int = 20) -> None:
    folder.mkdir(parents=True)
    for f in range(max(1, sections // per_file)):
        body = "".join(f"## Rule {f}-{s}\n\n{paragraph(f * 1000 + s)}\n\n" for s in range(per_file))
        (folder / f"rules_{f:03d}.md").write_text(f"# Rules {f}\n\n{body}", encoding="utf-8")


def big_file(folder: Path, megabytes: float) -> None:
    folder.mkdir(parents=True)
    target, parts, n = int(megabytes * 1024 * 1024), [], 0
    size = 0
    while size < target:
        chunk = (f"## Topic {n}\n\n" if n % 10 == 0 else "") + paragraph(n, 600) + "\n\n"
        parts.append(chunk)
        size += len(chunk)
        n += 1
    (folder / "handbook.md").write_text("".join(parts), encoding="utf-8")


def timed(fn):
    started = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - started
    return elapsed, result


def run(label: str, folder: Path, tmp: Path) -> None:
    store = MemoryStore(f"sqlite:///{tmp / (folder.name + '.sqlite')}", authenticator=TrustedAuthenticator())
    scope = store.open(Principal("bench"))
    first_s, first = timed(lambda: index_doctrine(scope, folder))
    sections = len(first.added)
    head = store.head_seq(scope)
    again_s, again = timed(lambda: index_doctrine(scope, folder))
    wrote = store.head_seq(scope) - head
    read = getattr(again, "read", None)
    print(label)
    print(f"  first index:                  {first_s * 1000:8.1f} ms  ({sections} sections, {sections / first_s:,.0f}/s)")
    print(f"  re-index, nothing changed:    {again_s * 1000:8.1f} ms  (files read: "
          f"{'n/a' if read is None else len(read)}, events written: {wrote})")
    victim = sorted(folder.glob("*.md"))[0]
    text = victim.read_text(encoding="utf-8")
    victim.write_text(text.replace(".", ". Edited.", 1), encoding="utf-8")
    edit_s, edited = timed(lambda: index_doctrine(scope, folder))
    print(f"  re-index, one section edited: {edit_s * 1000:8.1f} ms  (updated {len(edited.updated)}, "
          f"files read: {'n/a' if getattr(edited, 'read', None) is None else len(edited.read)})")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=400)
    parser.add_argument("--megabytes", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="baton-doctrine-bench-") as tmp:
        tmp_path = Path(tmp)
        many_sections(tmp_path / "many", args.sections)
        run(f"{args.sections} sections in {max(1, args.sections // 20)} files", tmp_path / "many", tmp_path)
        many_sections(tmp_path / "one", args.sections, per_file=args.sections)
        run(f"{args.sections} sections in one file", tmp_path / "one", tmp_path)
        big_file(tmp_path / "big", args.megabytes)
        run(f"one {args.megabytes:g} MB file", tmp_path / "big", tmp_path)


if __name__ == "__main__":
    main()
