"""The SQL specialist: safe-by-construction, validated, self-repairing SQL over real databases."""

# Public names of the execution side, imported on first use (no database drivers at import).
_LAZY = {
    "SQLConnection": "engines", "ConnectionOptions": "engines",
    "SQLAgent": "agent", "SQLAgentResult": "result", "QueryAttempt": "result",
    "ExtractedLearning": "learnings", "extract_learnings": "learnings", "apply_learnings": "rewrite",
    "MemoryPort": "memory_port", "ErrorClass": "classify", "SQLExecutionError": "classify",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
