"""A soak of pipeline event order across processes: hundreds of runs on ``baton serve``
replicas and ``baton worker``s on one PostgreSQL state, several of them crossing a worker
SIGKILL and takeover, each read by readers attaching at random moments on any replica (one
right after the 202 on another replica, one at a random time, one that drops its connection
mid-run and resumes with ``Last-Event-ID`` elsewhere). Every reader's numbered events must
be exactly the run's sequence read whole after it ended (``tests/event_order_rig.py``, the
rig of ``tests/test_pipeline_event_order.py``).

Prints runs, takeovers, readers, resumed readers, events read, the problems found (0 is the
only right answer) and the wall time. Everything runs on this machine.

Run: .venv/bin/python bench/event_order.py [--postgres URL] [--runs 300] [--takeovers 6]
     [--replicas 3] [--workers 2] [--seed 25]
(default URL: $BATON_TEST_POSTGRES_URL, a server on which a database may be created).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from event_order_rig import cluster, plain_runs, takeover_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("BATON_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--takeovers", type=int, default=6)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    problems: list[str] = []
    attempts: list[int] = []
    with tempfile.TemporaryDirectory() as home, cluster(args.postgres, Path(home), replicas=args.replicas, workers=args.workers) as c:
        started = time.monotonic()
        per_takeover = max(1, args.runs // max(args.takeovers, 1))
        done = 0
        for n in range(args.takeovers):  # plain runs in between the takeovers
            problems += plain_runs(c, min(per_takeover, args.runs - done), rng)
            done += min(per_takeover, args.runs - done)
            found, attempt = takeover_run(c, f"soak{n}", rng)
            problems += found
            attempts.append(attempt)
        problems += plain_runs(c, args.runs - done, rng)
        wall = time.monotonic() - started
        counts = c.counts
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}; {args.replicas} replicas, {args.workers} workers, seed {args.seed}")
    print(f"runs {counts['runs']} (of which takeovers {len(attempts)}, highest attempt seen {attempts}), readers {counts['readers']}, "
          f"resumed with Last-Event-ID {counts['resumed']}, events read {counts['events']}")
    print(f"problems {len(problems)}; wall {wall:.1f} s")
    for problem in problems[:20]:
        print("  " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
