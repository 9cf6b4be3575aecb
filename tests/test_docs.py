"""The documentation site runs: every code block under docs/ is executed (or says why not), every
``baton`` command line in it names a real command and real options, the site builds with
``mkdocs build --strict``, and the built pages fetch nothing from the network.

How a block is treated, by its fence's language and the HTML comment just above it:

- ``python``: executed. The blocks of one page run in order in one namespace, in the page's own
  temporary folder (so a later block, or a shell block, sees the files an earlier one wrote).
- ``bash``: run by bash (``-e -o pipefail``) in that folder, with this environment's ``baton``
  first on PATH, ``BATON_HOME`` inside the folder and no model or provider key in the
  environment; it must exit 0. With ``<!-- exit: N -->`` above it, each command line of the
  block runs on its own and must exit N (a refusal: ``baton sql check`` of an unsafe statement).
- ``yaml`` / ``json``: parsed; a YAML semantic model (a mapping with ``metrics``) is also read
  and validated by ``baton.semantic``.
- ``text``: output shown to the reader, not code.
- ``<!-- not-run: REASON -->`` above a block: not run; REASON says why (it needs a server, a
  model or a key, or runs until stopped). At most ``MAX_NOT_RUN`` such blocks in all the docs:
  a documented example that is never run is one that can silently stop working.

The README's own python blocks are run by ``test_readme.py``.
"""

from __future__ import annotations

import html.parser
import json
import linecache
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
LANGUAGES = {"python", "bash", "yaml", "json", "text"}
MAX_NOT_RUN = 12
BIN = Path(sys.executable).parent

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!--\s*(?P<key>not-run|exit)\s*:\s*(?P<value>.*?)\s*-->\s*$", re.DOTALL)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    not_run: str | None  # the reason, when the block is not run
    exit_code: int | None  # expected per-command exit status, for refusals

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip()
        marker = MARKER.search(before[before.rfind("<!--"):]) if before.endswith("-->") else None
        not_run = exit_code = None
        if marker and marker["key"] == "not-run":
            not_run = marker["value"]
        elif marker:
            exit_code = int(marker["value"])
        body = "\n".join(line[len(match["indent"]):] for line in match["body"].splitlines())
        out.append(Block(page, text.count("\n", 0, match.start()) + 1, match["lang"], body, not_run, exit_code))
    return out


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def test_the_docs_have_pages_and_blocks():
    assert {p.relative_to(DOCS).as_posix() for p in PAGES} >= {
        "index.md", "getting-started.md", "concepts/orchestra.md", "how-to/your-database.md", "reference/cli.md"}
    assert sum(b.lang == "python" and b.not_run is None for b in ALL_BLOCKS) >= 10
    assert sum(b.lang == "bash" and b.not_run is None for b in ALL_BLOCKS) >= 10


def test_every_block_runs_or_says_why():
    unknown = [b.where for b in ALL_BLOCKS if b.lang not in LANGUAGES]
    assert not unknown, f"fenced blocks need one of {sorted(LANGUAGES)} as their language: {unknown}"
    unexplained = [b.where for b in ALL_BLOCKS if b.not_run is not None and len(b.not_run.split()) < 3]
    assert not unexplained, f"a not-run block must say why (<!-- not-run: a reason of a few words -->): {unexplained}"
    misplaced = [b.where for b in ALL_BLOCKS if b.exit_code is not None and b.lang != "bash"]
    assert not misplaced, f"<!-- exit: N --> is for bash blocks: {misplaced}"
    not_run = [b.where for b in ALL_BLOCKS if b.not_run is not None]
    assert len(not_run) <= MAX_NOT_RUN, f"{len(not_run)} blocks are not run (at most {MAX_NOT_RUN}): {not_run}"


# --- running a page --------------------------------------------------------------------------------------------

def clean_environment(home: Path) -> dict[str, str]:
    """The reader's shell: this environment's ``baton`` first, a fresh BATON_HOME, and no model,
    provider key, state URL or API keys inherited from whoever runs the tests."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BATON_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "OLLAMA_", "OTEL_"))}
    env.update(BATON_HOME=str(home), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", COLUMNS="100", NO_COLOR="1")
    return env


def run_shell(block: Block, folder: Path, env: dict[str, str]) -> None:
    if block.exit_code is None:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.body], cwd=folder, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, f"{block.where} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return
    for command in command_lines(block.body):
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == block.exit_code, (
            f"{block.where}: `{command}` exited {done.returncode}, the page says {block.exit_code}\n{done.stdout}\n{done.stderr}")


def command_lines(body: str) -> list[str]:
    """The block's commands: comment-only and blank lines dropped, ``\\`` continuations joined,
    heredoc bodies kept with the command that opens them."""
    commands: list[str] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)'?\"?", line)
        if heredoc:
            end = heredoc[1]
            while i < len(lines):
                line += "\n" + lines[i]
                i += 1
                if lines[i - 1].strip() == end:
                    break
        commands.append(line)
    return commands


def check_data_block(block: Block) -> None:
    if block.lang == "json":
        json.loads(block.body)
        return
    import yaml

    data = yaml.safe_load(block.body)
    if isinstance(data, dict) and "metrics" in data:
        from baton.semantic.native import model_from_dict, validate

        validate(model_from_dict(data))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_blocks_run(page, tmp_path, monkeypatch):
    folder = tmp_path / "work"
    folder.mkdir()
    env = clean_environment(tmp_path / "home")
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name in ("BATON_HOME", "PATH"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(folder)
    namespace: dict = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for block in blocks_of(page):
        if block.not_run is not None or block.lang == "text":
            continue
        if block.lang == "python":
            name = f"{block.where}[python]"
            linecache.cache[name] = (len(block.body), None, block.body.splitlines(True), name)  # tracebacks show the line
            exec(compile(block.body, name, "exec"), namespace)  # our own docs, not model output
        elif block.lang == "bash":
            run_shell(block, folder, env)
        else:
            check_data_block(block)


# --- commands named in the docs exist --------------------------------------------------------------------------

def baton_invocations(body: str) -> list[list[str]]:
    """Each ``baton`` command in a shell block, as its words up to the end of that command."""
    found = []
    for line in command_lines(body):
        line = line.split("\n", 1)[0]  # a heredoc's body is data, not commands
        words = shlex.split(line.replace("$(", " ").replace(")", " "), comments=True)
        for i, word in enumerate(words):
            if word == "baton" or word.endswith("/baton"):
                rest = []
                for w in words[i + 1:]:
                    if w in ("&&", "||", "|", ";") or w.endswith(";"):
                        break
                    rest.append(w)
                found.append(rest)
    return found


def test_every_baton_command_in_the_docs_exists_with_its_options():
    import typer.main

    from baton.cli import build_app

    root = typer.main.get_command(build_app())
    problems = []
    checked = 0
    for block in ALL_BLOCKS:
        if block.lang != "bash":
            continue
        for words in baton_invocations(block.body):
            command, path, context = root, ["baton"], root.context_class(root)
            while words and hasattr(command, "list_commands") and words[0] in command.list_commands(context):
                command = command.get_command(context, words[0])
                path.append(words.pop(0))
                context = command.context_class(command)
            if hasattr(command, "list_commands") and words and words[0] != "--help":
                problems.append(f"{block.where}: `{' '.join(path)}` has no command {words[0]!r}")
                continue
            options = {o for p in command.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))} | {"--help"}
            for word in words:
                if word.startswith("-") and word != "-" and word.split("=", 1)[0] not in options:
                    problems.append(f"{block.where}: `{' '.join(path)}` has no option {word!r}")
            checked += 1
    assert not problems, "\n".join(problems)
    assert checked >= 20


# --- the site ---------------------------------------------------------------------------------------------------

FETCHING = {"src", "srcset", "href", "data", "poster", "action", "formaction", "background", "manifest"}


class ExternalFetches(html.parser.HTMLParser):
    """Attributes that make a browser fetch something from another host. A plain link
    (``<a href>``) is not a fetch; an XML namespace (``xmlns``) is a name, not an address."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if tag == "a" and name == "href":
                continue
            if name == "class" and value and "mermaid" in value.split():
                self.found.append(f"<{tag} class=mermaid> (Material loads Mermaid from a CDN)")
            if name in FETCHING and value and re.match(r"\s*(https?:)?//", value, re.IGNORECASE):
                self.found.append(f"<{tag} {name}={value!r}>")


def test_the_site_builds_strictly_and_fetches_nothing_from_the_network(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    pages = list(site.rglob("*.html"))
    assert len(pages) >= len(PAGES)
    external = []
    for page in pages:
        parser = ExternalFetches()
        parser.feed(page.read_text(encoding="utf-8"))
        external += [f"{page.relative_to(site)}: {found}" for found in parser.found]
    for sheet in site.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8")
        external += [f"{sheet.relative_to(site)}: {m}" for m in re.findall(r"(?:url\(\s*['\"]?|@import\s+['\"]?)(?:https?:)?//[^)'\"]+", text)]
    assert not external, "\n".join(external[:20])
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "baton sql check" in cli and "--unsafe-allow-privileged-role" in cli  # generated from the Typer app
    api = (site / "reference" / "api" / "agents" / "index.html").read_text(encoding="utf-8")
    assert 'id="baton.agents.OrchestratorAgent"' in api  # generated from the docstrings
