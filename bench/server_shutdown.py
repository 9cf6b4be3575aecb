"""How long ``baton serve`` takes to exit after SIGTERM with event streams open (a pipeline
paused at its checkpoint, a streamed answer and a streamed chat completion waiting on the
model): each stream ends with a final ``server_stopping`` event, then the process exits.
Before streams were told (``baton.server.shutdown``), the process waited for the clients.

    .venv/bin/python bench/server_shutdown.py [--runs 3]

Prints the seconds from SIGTERM to exit per run, for 1 and 2 workers, and their median."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_server_shutdown import stop_with_open_streams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for workers in (1, 2):
        times = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="baton-shutdown-") as folder:
                took, readers, _ = stop_with_open_streams(Path(folder), workers)
                times.append(took)
                ended = sum(any("server_stopping" in data for _, data in r.frames[-2:]) for r in readers)
        print(f"workers={workers}: SIGTERM to exit {', '.join(f'{t:.2f}' for t in times)} s "
              f"(median {statistics.median(times):.2f} s); streams ended with server_stopping: {ended}/3 (last run)")


if __name__ == "__main__":
    main()
