"""``configure_logging``: at ``info`` the server logs a line per answer, not one per model
call (the provider SDKs' HTTP clients log every request at info); at ``debug`` everything."""

from __future__ import annotations

import logging

import pytest

from baton.cli.serving import HTTP_CLIENT_LOGGERS, configure_logging
from baton.errors import StartupRefusal


@pytest.fixture
def restored_levels():
    names = ("baton.events", *HTTP_CLIENT_LOGGERS)
    before = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize("level, clients, events", [
    ("info", logging.WARNING, logging.WARNING),
    ("debug", logging.DEBUG, logging.DEBUG),
    ("error", logging.ERROR, logging.WARNING),
])
def test_the_http_clients_request_lines_are_shown_at_debug_only(restored_levels, level, clients, events):
    configure_logging(level)
    assert {logging.getLogger(name).level for name in HTTP_CLIENT_LOGGERS} == {clients}
    assert logging.getLogger("baton.events").level == events
    assert not logging.getLogger("httpx2").isEnabledFor(logging.INFO) or level == "debug"


def test_an_unknown_level_is_refused(restored_levels):
    with pytest.raises(StartupRefusal, match="not a log level"):  # one line and exit 2 at the CLI's edge
        configure_logging("loud")
