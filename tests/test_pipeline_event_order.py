"""Pipeline events in order, for every reader: 2 ``baton serve`` replicas and 2 ``baton
worker``s on one PostgreSQL state (subprocesses, ``event_order_rig``). 50 runs, each read by
a reader attached right after the 202 on the other replica, one attached at a random moment,
and one that drops its connection mid-run and resumes with ``Last-Event-ID`` on a random
replica; 3 more runs lose their worker to SIGKILL with a stage in flight (heartbeat lapse
1.5 s) and are finished by another. Every reader's numbered events must be exactly the run's
sequence (1..n, no gap, no repeat, as read whole after the run ended), and a takeover's
replay is a later attempt, numbered after what came before it."""

import random

import pytest

from event_order_rig import cluster, plain_runs, takeover_run

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]


def test_every_reader_gets_each_runs_events_in_order(postgres_url, tmp_path):
    rng = random.Random(25)
    with cluster(postgres_url, tmp_path) as c:
        problems = plain_runs(c, 50, rng)
        attempts = []
        for n in range(3):
            found, attempt = takeover_run(c, f"kill{n}", rng)
            problems += found
            attempts.append(attempt)
        assert not problems, "\n".join(problems[:20])
        assert attempts == [2, 2, 2]
        assert c.counts["runs"] == 53 and c.counts["resumed"] >= 40, c.counts  # most hop readers resumed mid-run
        for p in c.replicas:
            assert "Traceback" not in p.output, p.output[-3000:]
