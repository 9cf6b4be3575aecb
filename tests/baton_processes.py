"""Baton as real processes for tests and benchmarks: ``baton serve`` / ``baton worker``
subprocesses, their output, their health, and their end (terminate or SIGKILL)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

BATON = Path(sys.executable).with_name("baton")
KEY_LINE = re.compile(r"#key=(\S+)")


class BatonProcess:
    def __init__(self, name: str, args: list[str], env: dict[str, str], *, port: int | None = None) -> None:
        self.name = name
        self.port = port
        self.lines: list[str] = []
        self.process = subprocess.Popen([str(BATON), *args], env={**os.environ, **env}, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self, timeout: float = 120.0) -> BatonProcess:
        """Until ``/health`` answers (a server) or the output says it serves (a worker)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.output[-4000:]}")
            if self.port is None:
                if any("serving queue" in line for line in self.lines):
                    return self
            else:
                try:
                    if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout:g} s:\n{self.output[-4000:]}")

    def key(self, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                found = KEY_LINE.search(line)
                if found:
                    return found.group(1)
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} printed no key:\n{self.output[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as a lost machine."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._reader.join(5)
