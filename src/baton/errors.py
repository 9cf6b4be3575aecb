"""The error hierarchy.

Every failure Baton can report is a type here (or a subclass defined next to the code that
raises it), so a program can tell a retryable hiccup from a fatal misconfiguration without
reading prose. Each class says when it is raised.
"""

from __future__ import annotations


class BatonError(Exception):
    """Base of every error Baton raises on purpose."""


class ConfigurationError(BatonError):
    """Raised at set-up when configuration is missing or malformed (a bad model string, a
    missing API key, an unknown agent name). Never retried."""


class StartupRefusal(ConfigurationError):
    """Raised by a start-up check when the process must not start (keys naming a workspace it
    does not serve, state written by a newer Baton, an event bus that does not answer). Its
    message is one line: what is wrong, then what to do. The CLI prints that line and exits 2,
    with no traceback (``baton.cli.refusals``); exit 1 stays "a check found a problem"."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}: {fix}" if fix else problem)
        self.problem = problem
        self.fix = fix


# --- agents (seed 002 "Sub-agent retry, and the error hierarchy under it") ---------------


class AgentError(BatonError):
    """Base of the errors a sub-agent raises from ``run()``."""


class AgentRetryableError(AgentError):
    """A transient failure; the orchestrator retries the sub-agent (at most
    ``MAX_SUB_AGENT_RETRIES`` times) with adjusted context."""


class AgentFatalError(AgentError):
    """An unrecoverable failure (bad configuration, authentication, unsafe SQL): no retry."""


class AgentTimeoutError(AgentError):
    """The sub-agent ran out of time; it is retried with a smaller context."""


class AgentValidationError(AgentError):
    """The sub-agent's result failed its quality checks (no query, no citations, ...)."""


# --- providers ----------------------------------------------------------------------------


class ProviderError(BatonError):
    """A failure talking to an LLM provider. ``retryable`` tells the router whether trying
    again (same or next provider) can help. ``code``, when set, is the answer's failure code
    where the class alone does not say it (a reply that is no API response at all)."""

    retryable: bool = False

    def __init__(self, message: str, *, provider: str = "", model: str = "", status_code: int | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status_code = status_code
        self.code = code


class ProviderRateLimitError(ProviderError):
    """HTTP 429. ``retry_after`` (seconds) comes from the Retry-After header when sent."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, provider: str = "", model: str = "",
                 status_code: int | None = None) -> None:
        super().__init__(message, provider=provider, model=model, status_code=status_code)
        self.retry_after = retry_after


class ProviderTimeoutError(ProviderError):
    """The request timed out before the provider answered."""

    retryable = True


class ProviderServerError(ProviderError):
    """HTTP 5xx (or 529 "overloaded") from the provider."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The provider could not be reached at all (refused, DNS, reset)."""

    retryable = True


class ProviderAuthError(ProviderError):
    """HTTP 401/403: the key is missing, wrong or not allowed this model. Fatal."""


class ProviderBadRequestError(ProviderError):
    """HTTP 400/404/422 other than a context overflow: the request itself is wrong. Fatal."""


class ContextLengthExceededError(ProviderBadRequestError):
    """The prompt is over the model's window. The loop compresses the conversation to 60 %
    of the window and retries once."""


class AllProvidersFailedError(ProviderError):
    """Every provider/model pair of a fallback chain failed; ``errors`` holds each one."""

    def __init__(self, message: str, errors: list[ProviderError]):
        super().__init__(message)
        self.errors = errors
        self.retryable = any(e.retryable for e in errors)


class ScriptExhaustedError(BatonError):
    """A ``ScriptedModel`` was asked for more responses than it was given (a test bug)."""


# --- tools --------------------------------------------------------------------------------


class ToolError(BatonError):
    """Base of failures while dispatching a model's tool call. The loop never lets one
    escape: it becomes a tool-result message the model can react to."""

    def __init__(self, message: str, *, tool_name: str = "", call_id: str = ""):
        super().__init__(message)
        self.tool_name = tool_name
        self.call_id = call_id


class ToolArgumentsError(ToolError):
    """The model's tool-call arguments were not valid JSON (or not an object, or missing a
    required parameter). Fed back to the model as a tool error."""


class UnknownToolError(ToolError):
    """The model called a tool that is not offered in this loop."""


class ToolExecutionError(ToolError):
    """The tool itself raised; the original exception is ``__cause__``."""
