"""The chart-rendering child process, and the parent's handle on it.

Why a child: the offline renderer (vl-convert, V8 inside) *aborts the whole process* when a
spec exhausts its heap ("data": {"sequence": {"stop": 1e8}}, an axis with 1e8 ticks) and can
run for minutes on others (a 10-million-pixel canvas). The server renders specs that callers
send, so one request could kill or stall it. Each render therefore runs in a long-lived
worker process running this module as ``__main__`` (``python -c`` and ``runpy``, this Baton's
folder first on its path; not multiprocessing, so a caller's unguarded script is never
re-imported); a worker that dies or overruns its
deadline is killed and replaced, and the caller gets ``ChartRenderError``; so is a worker
whose render failed in any way (a spec that put the engine in a bad state, say one with a
``javascript:`` link, must not fail the next caller's chart). A few idle workers are kept,
so only the first render pays the engine's start-up (~0.5 s).

Wire format on the worker's stdin/stdout: a 4-byte big-endian length, then the payload.
Requests are JSON ``{"kind": "svg"|"png", "spec": ..., "options": {...}}``; replies are one
status byte (``O`` ok, ``E`` error) followed by the SVG text, PNG bytes or error message.
"""

from __future__ import annotations

import json
import os
import queue
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Literal, overload

MAX_IDLE_WORKERS = 2
_HEADER = struct.Struct(">I")


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


class RenderFailed(Exception):
    """Raised in the parent: ``args[0]`` is the reason (the caller wraps it in ChartRenderError)."""


class _Worker:
    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])  # the folder holding ``baton/``
        boot = (f"import runpy, sys; sys.path.insert(1, {package_root!r}); "  # this Baton, not another installed one
                "runpy.run_module('baton.viz.render_worker', run_name='__main__', alter_sys=True)")
        self.process = subprocess.Popen(
            [sys.executable, "-c", boot],  # the environment is inherited as it is: nothing is read here
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None  # both are PIPEs
        self._to_worker: IO[bytes] = self.process.stdin
        self._from_worker: IO[bytes] = self.process.stdout
        self.replies: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="baton-render-reader").start()

    def _read(self) -> None:
        while True:
            frame = _read_frame(self._from_worker)
            self.replies.put(frame)
            if frame is None:
                return

    def render(self, request: bytes, timeout: float) -> bytes:
        try:
            _write_frame(self._to_worker, request)
            reply = self.replies.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise RenderFailed(f"rendering took longer than {timeout:g} s and was stopped") from None
        except OSError:
            reply = None
        if reply is None:
            self.kill()
            raise RenderFailed(f"the renderer process died (exit code {self.process.poll()}); the spec is likely too large")
        return reply

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self._to_worker, self._from_worker):
            try:
                stream.close()
            except OSError:
                pass


class RenderPool:
    """Idle workers kept for the next render (at most ``max_idle``). ``close()`` kills them:
    whoever owns a pool (a ``baton.workspace.Workspace``) leaves no process behind. The
    module's default pool serves callers that pass none and is emptied at exit."""

    def __init__(self, max_idle: int = MAX_IDLE_WORKERS) -> None:
        self.max_idle = max_idle
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def take(self) -> _Worker:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None or worker.process.poll() is not None:
            worker = _new_worker()
        return worker

    def give_back(self, worker: _Worker) -> None:
        with self._lock:
            keep = len(self._idle) < self.max_idle
            if keep:
                self._idle.append(worker)
        if not keep:
            worker.kill()

    def close(self) -> None:
        with self._lock:
            workers, self._idle = list(self._idle), []
        for worker in workers:
            worker.kill()


_default_pool = RenderPool()
_cleanup_registered = False


def _close_idle() -> None:
    _default_pool.close()


def _new_worker() -> _Worker:
    global _cleanup_registered
    if not _cleanup_registered:  # on first use, not at import
        import atexit

        atexit.register(_close_idle)
        _cleanup_registered = True
    return _Worker()


@overload
def render_isolated(kind: Literal["svg"], spec: dict[str, Any], options: dict[str, Any], timeout: float,
                    pool: RenderPool | None = None) -> str: ...
@overload
def render_isolated(kind: Literal["png"], spec: dict[str, Any], options: dict[str, Any], timeout: float,
                    pool: RenderPool | None = None) -> bytes: ...
def render_isolated(kind: str, spec: dict[str, Any], options: dict[str, Any], timeout: float,
                    pool: RenderPool | None = None) -> str | bytes:
    """Render in a worker process; ``RenderFailed`` for a renderer error, a crash or a timeout."""
    request = json.dumps({"kind": kind, "spec": spec, "options": options}, allow_nan=False).encode()
    pool = pool or _default_pool
    worker = pool.take()
    reply = worker.render(request, timeout)
    status, payload = reply[:1], reply[1:]
    if status != b"O":
        worker.kill()  # recycled after ANY render error: a spec that broke the engine must not break the next render
        raise RenderFailed(payload.decode("utf-8", "replace"))
    pool.give_back(worker)
    return payload.decode("utf-8") if kind == "svg" else payload


def _serve() -> None:  # pragma: no cover - runs in the child process
    import vl_convert

    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the engine prints goes to stderr, never into the replies
    channel_in = sys.stdin.buffer
    while (frame := _read_frame(channel_in)) is not None:
        request = json.loads(frame)
        convert = vl_convert.vegalite_to_svg if request["kind"] == "svg" else vl_convert.vegalite_to_png
        try:
            out = convert(request["spec"], **request["options"])
        except Exception as exc:
            message = " ".join(line.strip() for line in str(exc).splitlines()[:2])
            _write_frame(channel_out, b"E" + message.encode("utf-8", "replace"))
            continue
        _write_frame(channel_out, b"O" + (out.encode("utf-8") if isinstance(out, str) else out))


if __name__ == "__main__":  # pragma: no cover
    _serve()
