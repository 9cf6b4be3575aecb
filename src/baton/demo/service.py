"""One demo per ``BATON_HOME``: a second ``baton demo`` finds the running one instead of
fighting it.

``baton demo`` claims the demo's folder (``$BATON_HOME/demo``) before it builds anything: an
exclusive ``flock`` on ``.serve.lock``, held for the life of the process (the kernel releases
it when the process ends, however it ends, so a killed demo never leaves a stale claim),
and ``serving.json`` beside it saying where it serves: its address, its process id, and the
SHA-256 digest of its key (never the key). Only the lock says whether a demo runs: a
``serving.json`` left by a process that ended without cleaning up (uvicorn re-raises SIGTERM
after its shutdown, so no ``finally`` runs) is read only while its lock is held.

A second ``baton demo`` on the same ``BATON_HOME``:

- prints the running demo's link, with the key (the demo's key is kept in the state, the
  same for every process: ``KeyStore.default_key``; the digest in ``serving.json`` proves it
  is the running one's) and exits 0: opening the link logs in to the running server;
- with ``--rebuild``, refuses (exit 1) and changes nothing: rebuilding deletes the database
  and the conversations under a server that is using them;
- when the running demo was given another key (``BATON_DEMO_KEY``), prints its address and
  says to use the link it printed, rather than a link that would get 401.

A demo that is still starting (building its database) has claimed the folder but not yet
published its key: the second process waits for it (``STARTING_WAIT_S``).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from baton.state.keys import digest

LOCK_FILE = ".serve.lock"
RUNNING_FILE = "serving.json"
STARTING_WAIT_S = 120.0


@dataclass(frozen=True)
class RunningDemo:
    """What ``serving.json`` says about the demo that holds the claim."""

    url: str
    pid: int
    key_digest: str | None  # None while it is starting

    def link(self, key: str | None) -> str | None:
        """The login link for ``key``, when ``key`` is the running demo's."""
        if key and self.key_digest and digest(key) == self.key_digest:
            return f"{self.url}/#key={key}"
        return None


class DemoService:
    """The claim on one demo folder (module docstring)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._handle: IO[str] | None = None

    @property
    def claimed(self) -> bool:
        return self._handle is not None

    def claim(self, url: str) -> RunningDemo | None:
        """Claim the folder for a demo serving at ``url``: None when this process now holds
        it, else the demo that does (read once it has published its key, or after
        ``STARTING_WAIT_S``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = open(self.directory / LOCK_FILE, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return self.wait_for_running()
        self._handle = handle
        self._write({"url": url, "pid": os.getpid(), "key_digest": None})
        return None

    def publish(self, key: str) -> None:
        """Say which key the demo serves with (its digest), once the app is built."""
        if not self.claimed:
            raise RuntimeError("publish() before claim()")
        current = self._read() or {}
        self._write({**current, "pid": os.getpid(), "key_digest": digest(key)})

    def running(self) -> RunningDemo | None:
        """The demo holding the claim now, if any (without waiting, without claiming)."""
        if self.claimed:
            return self._parse(self._read())
        path = self.directory / LOCK_FILE
        if not path.exists():
            return None
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._parse(self._read()) or RunningDemo("", 0, None)
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None

    def wait_for_running(self, timeout_s: float = STARTING_WAIT_S) -> RunningDemo | None:
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.running()
            if found is None or found.key_digest is not None or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def release(self) -> None:
        if self._handle is None:
            return
        (self.directory / RUNNING_FILE).unlink(missing_ok=True)
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None

    def _read(self) -> dict | None:
        try:
            raw = json.loads((self.directory / RUNNING_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return raw if isinstance(raw, dict) else None

    def _write(self, data: dict) -> None:
        tmp = self.directory / f".{RUNNING_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.directory / RUNNING_FILE)  # readers see the old or the new file, never half of one

    @staticmethod
    def _parse(raw: dict | None) -> RunningDemo | None:
        if not raw or not isinstance(raw.get("url"), str):
            return None
        pid = raw.get("pid")
        return RunningDemo(raw["url"], pid if isinstance(pid, int) else 0, raw.get("key_digest") or None)
