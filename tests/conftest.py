"""Shared fixtures: database URLs from the environment (skip with the reason when unset); the
network guard (tests/network_guard.py: a test that reaches for a host other than this machine,
a real model provider above all, fails); and no model setting or credential from the
developer's environment reaches a test or a process it starts."""

from __future__ import annotations

import os

import pytest

import network_guard

# Read by baton.llm.config (BATON_MODEL, the providers' keys and URLs) or by the openai and
# anthropic SDKs themselves. A test that needs one sets it (monkeypatch.setenv, or a child's env).
MODEL_ENVIRONMENT = ("BATON_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
                     "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPENROUTER_API_KEY",
                     "OPENROUTER_BASE_URL", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST")


_environment = pytest.MonkeyPatch()


def pytest_configure(config: pytest.Config) -> None:
    """Before collection, so that not even a test module's import sees the developer's model
    settings, and children inherit the cleaned environment; tests that need one set it."""
    for variable in MODEL_ENVIRONMENT:
        _environment.delenv(variable, raising=False)
    network_guard.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    network_guard.uninstall()
    _environment.undo()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """Fail the phase (setup, call, teardown) in which a refused connection was attempted, even
    when the code under test caught the refusal."""
    outcome = yield
    attempts = network_guard.take_attempts()
    if attempts:
        report = outcome.get_result()
        text = network_guard.failure_text(attempts)
        report.longrepr = f"{report.longrepr}\n\n{text}" if report.failed and report.longrepr else text
        report.outcome = "failed"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    attempts = network_guard.take_attempts()  # made outside any test: at collection, say
    if attempts:
        session.config.get_terminal_writer().line("\n" + network_guard.failure_text(attempts), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _server_url(var: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.skip(f"{var} is not set: this test needs that server (see DEVELOPERS.md)")
    return url


@pytest.fixture
def postgres_url() -> str:
    return _server_url("BATON_TEST_POSTGRES_URL")


@pytest.fixture
def state_db(postgres_url):
    """The URL of a PostgreSQL database created for this test and dropped after it (a state
    database shared by replicas)."""
    from pg_fresh import fresh_database

    with fresh_database(postgres_url) as url:
        yield url


@pytest.fixture
def mysql_url() -> str:
    return _server_url("BATON_TEST_MYSQL_URL")


@pytest.fixture
def redis_url() -> str:
    return _server_url("BATON_TEST_REDIS_URL")
