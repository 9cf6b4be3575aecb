"""Shared fixtures: database URLs from the environment (skip with the reason when unset)."""

from __future__ import annotations

import os

import pytest


def _server_url(var: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.skip(f"{var} is not set: this test needs that database server (see DEVELOPERS.md)")
    return url


@pytest.fixture
def postgres_url() -> str:
    return _server_url("BATON_TEST_POSTGRES_URL")


@pytest.fixture
def mysql_url() -> str:
    return _server_url("BATON_TEST_MYSQL_URL")
