"""MkDocs hook: the command-line reference, generated from the ``baton`` Typer app at build time.

A page holding the marker ``<!-- baton-cli-reference -->`` gets it replaced by every command
and sub-command with its usage, help and options, read from the same command objects that
``baton ... --help`` prints. Generated, not written, so the reference cannot drift from the
program: a renamed flag changes the page on the next build.

Typer 0.29 ships its own copy of click's classes, so commands and parameters are read by
their attributes (``list_commands``, ``param_type_name``), not by ``isinstance`` on click's.
"""

from __future__ import annotations

import html
from typing import Any

MARKER = "<!-- baton-cli-reference -->"
COMPLETION = ("install_completion", "show_completion")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())


def cli_reference() -> str:
    import typer.main

    from baton.cli import build_app

    return "\n".join(_sections(typer.main.get_command(build_app()), "baton"))


def _sections(command: Any, path: str) -> list[str]:
    context = command.context_class(command, info_name=path)
    out: list[str] = []
    if path != "baton":
        out += [f"{'#' * (1 + path.count(' '))} `{path}`", ""]
    if command.help:
        out += [_text(command.help), ""]
    out += ["```text", f"{path} {' '.join(command.collect_usage_pieces(context))}".rstrip(), "```", ""]
    rows = [_row(param, context) for param in command.params if not getattr(param, "hidden", False) and param.name not in COMPLETION]
    if rows:
        out += ["| argument / option | what it does |", "|---|---|", *rows, ""]
    if hasattr(command, "list_commands"):
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                out += _sections(sub, f"{path} {name}")
    return out


def _row(param: Any, context: Any) -> str:
    """One table row from the parameter's own help record: the left and right columns of
    ``--help`` (names with what they take; help with default and range)."""
    record = param.get_help_record(context)
    if record is None:
        left, right = (param.name or "").upper(), getattr(param, "help", None) or ""
    else:
        left, right = record
    return f"| `{left}` | {_cell(right)} |"


def _text(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False)


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|")
