"""``baton.settings``: one typed ``Settings`` holds every variable Baton reads; only the edge
(the CLI, the server, ``settings.py``) reads the environment, and the docs table is the class."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from baton.errors import ConfigurationError
from baton.settings import INTERNAL, REMOVED, Settings, markdown_table

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "baton"
EDGE = ("cli/", "server/", "settings.py")
READS_ENVIRONMENT = re.compile(r"os\.environ|\bgetenv\s*\(")
"""``os.environ``, ``os.getenv(...)``, ``getenv(...)``. A bare ``"getenv"`` string is a SQL
function name (the safety list refuses DuckDB's ``getenv``), not a read."""

# variable -> (raw value, the field's parsed value): one for every field
VALUES: dict[str, tuple[str, object]] = {
    "BATON_MODEL": ("openai:a, openai:b", "openai:a, openai:b"),
    "BATON_LLM_TIMEOUT": ("7.5", 7.5),
    "BATON_LLM_ATTEMPTS": ("5", 5),
    "BATON_QUESTION_DEADLINE": ("60", 60.0),
    "BATON_LLM_TRANSPORT": (" HTTPX ", "httpx"),
    "BATON_CONTEXT_WINDOWS": ("a=1000, openai:b=2_000", {"a": 1000, "openai:b": 2000}),
    "BATON_MODEL_PRICES": ("gpt=0.15/0.6", "gpt=0.15/0.6"),
    "OPENAI_API_KEY": ("sk-1", "sk-1"),
    "OPENAI_BASE_URL": ("http://o/v1", "http://o/v1"),
    "ANTHROPIC_API_KEY": ("sk-2", "sk-2"),
    "ANTHROPIC_BASE_URL": ("http://a", "http://a"),
    "OPENROUTER_API_KEY": ("sk-3", "sk-3"),
    "OPENROUTER_BASE_URL": ("http://r/v1", "http://r/v1"),
    "OLLAMA_HOST": ("gpu:11434", "gpu:11434"),
    "OPENAI_COMPATIBLE_API_KEY": ("sk-4", "sk-4"),
    "BATON_HOME": ("/srv/baton", Path("/srv/baton")),
    "BATON_STATE_URL": ("postgresql://u@h/state", "postgresql://u@h/state"),
    "BATON_MEMORY_URL": ("sqlite:///m.sqlite", "sqlite:///m.sqlite"),
    "BATON_EVENTS_URL": ("redis://h:6379/0", "redis://h:6379/0"),
    "BATON_STATE_CONNECT_TIMEOUT": ("2", 2.0),
    "BATON_STATE_STATEMENT_TIMEOUT": ("9.5", 9.5),
    "BATON_PIPELINE_DATABASE_URL": ("postgresql://u@h/p", "postgresql://u@h/p"),
    "BATON_PIPELINE_QUEUE": ("q2", "q2"),
    "BATON_PIPELINE_RUNNER": ("pkg.mod:make", "pkg.mod:make"),
    "BATON_PIPELINE_EXECUTOR_ID": ("w1", "w1"),
    "BATON_API_KEYS": ("k1=shop", "k1=shop"),
    "BATON_FORWARDED_ALLOW_IPS": ("10.0.0.1", "10.0.0.1"),
    "BATON_DEMO_KEY": ("demo-key", "demo-key"),
    "BATON_DEMO_SMOKE": ("1", True),
    "BATON_MAX_BODY_BYTES": ("2048", 2048),
    "BATON_MAX_CHAT_BODY_BYTES": ("4096", 4096),
    "BATON_MAX_CHART_BODY_BYTES": ("8192", 8192),
    "BATON_BODY_TIMEOUT": ("5", 5.0),
    "BATON_MAX_JSON_DEPTH": ("16", 16),
    "BATON_MAX_IN_FLIGHT": ("100", 100),
    "BATON_ADMISSION_MEMORY": ("1000000", 1_000_000),
    "BATON_ADMISSION_MAX_BUSY": ("0.8", 0.8),
    "BATON_ADMISSION_MAX_LAG": ("0.05", 0.05),
    "BATON_ADMISSION_MAX_DELAY": ("0.1", 0.1),
    "BATON_HEADER_TIMEOUT": ("3", 3.0),
    "BATON_MAX_CONNECTIONS": ("500", 500),
    "BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE": ("yes", True),
    "BATON_CHART_WORKERS": ("4", 4),
    "BATON_OTEL_CONSOLE": ("on", True),
    "BATON_OTEL_CAPTURE_CONTENT": ("true", True),
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": ("TRUE", True),
    "OTEL_SDK_DISABLED": ("true", True),
    "OTEL_TRACES_EXPORTER": ("console,otlp", "console,otlp"),
    "OTEL_EXPORTER_OTLP_ENDPOINT": ("http://c:4318", "http://c:4318"),
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
    "OTEL_EXPORTER_OTLP_PROTOCOL": ("grpc", "grpc"),
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": ("http/protobuf", "http/protobuf"),
    "OTEL_SERVICE_NAME": ("finance-api", "finance-api"),
}

# variable -> a malformed value: one for every field whose type can be malformed
BAD = {
    "BATON_LLM_TIMEOUT": "soon", "BATON_LLM_ATTEMPTS": "two", "BATON_QUESTION_DEADLINE": "-1",
    "BATON_LLM_TRANSPORT": "curl", "BATON_CONTEXT_WINDOWS": "gpt=lots", "BATON_STATE_CONNECT_TIMEOUT": "0",
    "BATON_STATE_STATEMENT_TIMEOUT": "x", "BATON_MAX_BODY_BYTES": "1.5", "BATON_MAX_CHAT_BODY_BYTES": "-3",
    "BATON_MAX_CHART_BODY_BYTES": "big", "BATON_BODY_TIMEOUT": "soon", "BATON_MAX_JSON_DEPTH": "0",
    "BATON_MAX_IN_FLIGHT": "many", "BATON_ADMISSION_MEMORY": "1G", "BATON_ADMISSION_MAX_BUSY": "0",
    "BATON_ADMISSION_MAX_LAG": "-0.1", "BATON_ADMISSION_MAX_DELAY": "slow", "BATON_HEADER_TIMEOUT": "x",
    "BATON_MAX_CONNECTIONS": "0", "BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE": "maybe", "BATON_CHART_WORKERS": "two",
    "BATON_OTEL_CONSOLE": "sometimes", "BATON_OTEL_CAPTURE_CONTENT": "2",
}


def test_the_defaults():
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.model is None and settings.llm_timeout_s is None and settings.llm_attempts == 3
    assert settings.question_deadline_s == 120.0 and settings.llm_transport == "aiohttp"
    assert dict(settings.context_windows) == {} and settings.home == Path("~/.baton").expanduser()
    assert settings.state_url is None and settings.events_url is None
    assert (settings.state_connect_timeout_s, settings.state_statement_timeout_s) == (5.0, 15.0)
    assert settings.chart_workers == 2 and not settings.unsafe_allow_privileged_role and not settings.otel_console


def test_the_defaults_are_the_ones_their_users_had():
    from baton.llm.policy import DEFAULT_ATTEMPTS, DEFAULT_QUESTION_DEADLINE_S
    from baton.server.limits import Limits
    from baton.workspace.charts import DEFAULT_WORKERS

    assert Limits.from_settings(Settings()) == Limits()
    assert (Settings().llm_attempts, Settings().question_deadline_s) == (DEFAULT_ATTEMPTS, DEFAULT_QUESTION_DEADLINE_S)
    assert Settings().chart_workers == DEFAULT_WORKERS


def test_an_empty_variable_is_an_unset_one():
    assert Settings.from_env({name: "  " for name in Settings.variables()}) == Settings()


def test_every_variable_is_parsed_with_its_type():
    assert set(VALUES) == set(Settings.variables()), "VALUES lists every variable once"
    settings = Settings.from_env({name: raw for name, (raw, _) in VALUES.items()})
    for spec in fields(Settings):
        raw, expected = VALUES[spec.metadata["variable"]]
        value = getattr(settings, spec.name)
        value = dict(value) if isinstance(expected, dict) else value
        assert value == expected and type(value) is type(expected), (spec.metadata["variable"], raw, value)


@pytest.mark.parametrize("variable", sorted(BAD))
def test_a_bad_value_is_a_configuration_error_naming_its_variable(variable):
    with pytest.raises(ConfigurationError, match=variable):
        Settings.from_env({variable: BAD[variable]})


@pytest.mark.parametrize("variable", sorted(REMOVED))
def test_a_retired_variable_is_refused_by_name(variable):
    with pytest.raises(ConfigurationError, match=f"{variable} is no longer used"):
        Settings.from_env({variable: "3"})


def test_settings_are_immutable_and_keep_secrets_out_of_their_repr():
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-secret", "BATON_STATE_URL": "postgresql://u:pw@h/db",
                                  "BATON_CONTEXT_WINDOWS": "a=1000"})
    with pytest.raises(FrozenInstanceError):
        settings.model = "openai:x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.context_windows["b"] = 1  # type: ignore[index]
    assert "sk-secret" not in repr(settings) and "pw" not in repr(settings)


def test_every_field_documents_its_variable():
    for spec in fields(Settings):
        meta = spec.metadata
        assert meta["variable"] and meta["kind"] and meta["doc"] and meta["shown"], spec.name
    assert len(set(Settings.variables())) == len(fields(Settings))


def test_the_docs_table_is_the_class():
    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    table = page.split("<!-- settings-table -->\n", 1)[1].split("\n<!-- /settings-table -->", 1)[0]
    assert table == markdown_table(), "docs/reference/settings.md is out of date: paste baton.settings.markdown_table()"
    for name in (*INTERNAL, *REMOVED):
        assert f"`{name}`" in page


def _sources():
    for path in sorted(SOURCE.rglob("*.py")):
        yield path.relative_to(SOURCE).as_posix(), path.read_text()


def test_every_baton_variable_in_the_sources_is_a_setting():
    known = set(Settings.variables()) | set(INTERNAL) | set(REMOVED)
    found: dict[str, str] = {}
    for where, text in _sources():
        for name in re.findall(r"\bBATON_[A-Z0-9_]*[A-Z0-9]\b", text):
            found.setdefault(name, where)
    unknown = {name: where for name, where in found.items() if name not in known}
    assert not unknown, f"BATON_ variables named in src/baton but missing from baton.settings.Settings: {unknown}"


def test_only_the_edge_reads_the_environment():
    readers = [where for where, text in _sources()
               if READS_ENVIRONMENT.search(text) and not where.startswith(EDGE)]
    assert not readers, f"modules outside src/baton/cli, src/baton/server and settings.py read the environment: {readers}"
