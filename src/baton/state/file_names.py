"""The names of the embedded state's SQLite files (``location.py`` says what lives where), kept
apart so that the state and its version checks (``versions.py``) share them."""

SESSIONS_FILE = "sessions.sqlite"
MEMORY_FILE = "memory.sqlite"
KEYS_FILE = "state.sqlite"
PIPELINES_FILE = "pipelines.sqlite"
LOCK_FILE = ".startup.lock"
