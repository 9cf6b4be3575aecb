"""Start-up refusals, handled once at the CLI's edge: one line on stderr, exit 2, no traceback.

A command that cannot start (keys naming a workspace it does not serve, state written by a
newer Baton, an event bus that does not answer, a URL or file that cannot be used) raises
``baton.errors.StartupRefusal`` (or any ``ConfigurationError``) wherever the check lives; every
command's callback is wrapped here (``guard_commands``), so no command prints the 40–110-line
traceback of an error that only needs a sentence. Exit 2 means "did not start, fix the
configuration"; exit 1 stays "a check ran and found a problem". A new case is a new raise:
nothing here changes.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import typer

EXIT_REFUSED = 2


def refused_types() -> tuple[type[BaseException], ...]:
    """What counts as a start-up refusal: configuration errors (``StartupRefusal`` among them)
    and a state database newer than this Baton."""
    from baton.errors import ConfigurationError
    from baton.state.migrations import StateSchemaError

    return ConfigurationError, StateSchemaError


def one_line(exc: BaseException) -> str:
    """The refusal as printed: its message on one line (``baton: ...``)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"baton: {text}"


def refuse(exc: BaseException) -> typer.Exit:
    sys.stderr.write(one_line(exc) + "\n")
    sys.stderr.flush()
    return typer.Exit(EXIT_REFUSED)


def guarded(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` with its start-up refusals turned into one line and exit 2."""

    @functools.wraps(callback)  # Typer reads the parameters through __wrapped__
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except refused_types() as exc:
            raise refuse(exc) from None

    run.baton_guarded = True  # type: ignore[attr-defined]
    return run


def guard_commands(app: typer.Typer) -> None:
    """Wrap every command of ``app`` and of its sub-groups (``guarded``)."""
    for command in app.registered_commands:
        if command.callback is not None and not getattr(command.callback, "baton_guarded", False):
            command.callback = guarded(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            guard_commands(group.typer_instance)
