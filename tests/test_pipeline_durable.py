"""Durable pipelines on DBOS, with real worker processes.

Workers are started as subprocesses (``python -m baton.pipeline.durable``) with the
factory ``pipeline_doubles:make_recording_runner``, which appends one line per stage
execution to ``executions.log`` (so a test counts how often each stage really ran) and
blocks a stage marked ``/*block*/`` until a ``release`` file appears. Heartbeats are fast
(0.5 s, lapse 2 s). Every wait is bounded, and every process a test started is killed in
teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from baton.pipeline import CheckpointDecision, CheckpointDecisionError, ExecutionPlan, PlanStage
from baton.pipeline.durable import DurableConfig, PipelineClient, PipelineWorker
from baton.pipeline.durable.heartbeat import TABLE_NAME
from baton.response import ResponseType
from pipeline_doubles import agent_runner

ROOT = Path(__file__).resolve().parents[1]
FACTORY = "pipeline_doubles:make_recording_runner"
FAST = dict(heartbeat_interval_s=0.5, heartbeat_lapse_s=2.0, queue_polling_interval_s=0.1, runner_factory=FACTORY)

pytestmark = pytest.mark.timeout(120)


def wait_until(condition, *, timeout: float, what: str, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Workers:
    """Starts worker subprocesses and guarantees they are gone after the test."""

    def __init__(self, config: DurableConfig, directory: Path) -> None:
        self.config = config
        self.directory = directory
        self.procs: dict[str, subprocess.Popen] = {}
        self.engine = sa.create_engine(config.sqlalchemy_url())

    def start(self, executor_id: str, *extra: str) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT / "src")]),
                   BATON_TEST_PIPELINE_DIR=str(self.directory), BATON_TEST_EXECUTOR=executor_id)
        c = self.config
        cmd = [sys.executable, "-m", "baton.pipeline.durable", "--database-url", c.system_database_url,
               "--runner", FACTORY, "--executor-id", executor_id, "--heartbeat", str(c.heartbeat_interval_s),
               "--lapse", str(c.heartbeat_lapse_s), "--poll", str(c.queue_polling_interval_s), *extra]
        log = open(self.directory / f"worker-{executor_id}.log", "ab")
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory)
        log.close()
        self.procs[f"{executor_id}-{proc.pid}"] = proc
        wait_until(lambda: self.registered(executor_id) or self._died(proc, executor_id), timeout=30, what=f"worker {executor_id} to start")
        return proc

    def _died(self, proc: subprocess.Popen, executor_id: str) -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"worker {executor_id} exited {proc.returncode}:\n" + (self.directory / f"worker-{executor_id}.log").read_text())
        return False

    def registered(self, executor_id: str) -> bool:
        schema = f"{self.config.system_schema}." if self.config.system_schema else ""
        try:
            with self.engine.connect() as conn:
                return conn.execute(sa.text(f"SELECT 1 FROM {schema}{TABLE_NAME} WHERE executor_id = :e"), {"e": executor_id}).first() is not None
        except sa.exc.DBAPIError:
            return False  # the table does not exist yet

    def kill(self, proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        self.engine.dispose()


def executions(directory: Path) -> list[tuple[str, str, str]]:
    path = directory / "executions.log"
    if not path.exists():
        return []
    return [tuple(line.split()[:3]) for line in path.read_text().splitlines()]  # (workflow, stage, executor)


@pytest.fixture
def sqlite_config(tmp_path):
    return DurableConfig(system_database_url=f"sqlite:///{tmp_path / 'system.sqlite'}", **FAST)


@pytest.fixture
def pg_config(postgres_url):
    import psycopg

    url = sa.make_url(postgres_url)
    name = f"baton_dbos_{uuid.uuid4().hex[:12]}"
    admin = dict(host=url.host, port=url.port or 5432, user=url.username, password=url.password, dbname=url.database, autocommit=True)
    with psycopg.connect(**admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield DurableConfig(system_database_url=url.set(drivername="postgresql", database=name).render_as_string(hide_password=False), **FAST)
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def workers_for(tmp_path):
    made: list[Workers] = []

    def make(config: DurableConfig) -> Workers:
        made.append(Workers(config, tmp_path))
        return made[-1]

    yield make
    for workers in made:
        workers.close()


def five_stage_plan() -> ExecutionPlan:
    return ExecutionPlan("five stages", [
        PlanStage("s1", "query_database", "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"),
        PlanStage("s2", "analyze_results", "SELECT region, total FROM s1 WHERE total > 4", depends_on=["s1"]),
        PlanStage("s3", "analyze_results", "/*block*/ SELECT region, total * 100 AS cents FROM s2", depends_on=["s2"]),
        PlanStage("s4", "analyze_results", "SELECT region, cents FROM s3 ORDER BY cents DESC", depends_on=["s3"]),
        PlanStage("s5", "analyze_results", "SELECT region FROM s4 LIMIT 1", depends_on=["s4"]),
    ])


def crash_during_stage_3(config: DurableConfig, workers: Workers, tmp_path: Path, *, takeover_by_running_worker: bool) -> None:
    a = workers.start("worker-a")
    with PipelineClient(config) as client:
        wid = client.submit(five_stage_plan())
        wait_until(lambda: list(tmp_path.glob(f"blocked-s3-{a.pid}")), timeout=30, what="worker a to reach stage 3")
        if takeover_by_running_worker:
            workers.start("worker-b")  # already running when a dies
        workers.kill(a)
        (tmp_path / "release").touch()
        if not takeover_by_running_worker:
            workers.start("worker-b")  # the worker restarted (with a new identity)
        result = client.result(wid, timeout_s=60)
        status = client.status(wid)

    assert result.status == "complete"
    assert result.results["s5"].query_result.rows == [["north"]]
    assert result.message.response_type == ResponseType.PIPELINE_COMPLETE
    runs = Counter(stage for w, stage, _ in executions(tmp_path) if w == wid)
    assert runs == {"s1": 1, "s2": 1, "s3": 2, "s4": 1, "s5": 1}  # completed stages never ran again
    by = {stage: executor for w, stage, executor in executions(tmp_path) if w == wid}
    assert (by["s1"], by["s2"], by["s4"], by["s5"]) == ("worker-a", "worker-a", "worker-b", "worker-b")
    assert status.executor_id == "worker-b"


@pytest.mark.postgres
def test_postgres_a_running_worker_takes_over_a_killed_one(pg_config, workers_for, tmp_path):
    crash_during_stage_3(pg_config, workers_for(pg_config), tmp_path, takeover_by_running_worker=True)


def test_sqlite_a_restarted_worker_takes_over_a_killed_one(sqlite_config, workers_for, tmp_path):
    crash_during_stage_3(sqlite_config, workers_for(sqlite_config), tmp_path, takeover_by_running_worker=False)


def test_checkpoint_decision_sent_while_no_worker_runs_is_acted_on_after_restart(sqlite_config, workers_for, tmp_path):
    workers = workers_for(sqlite_config)
    plan = ExecutionPlan("q", [
        PlanStage("top", "query_database", "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC", checkpoint=True),
        PlanStage("pick", "analyze_results", "SELECT region FROM top LIMIT 1", depends_on=["top"]),
    ])
    a = workers.start("worker-a")
    with PipelineClient(sqlite_config) as client:
        wid = client.submit(plan)
        paused = client.wait_for(wid, ("paused",), timeout_s=30)
        assert (paused.status, paused.checkpoint_stage) == ("paused", "top")
        assert client.outcome(wid).response_type == ResponseType.STAGE_CHECKPOINT
        workers.kill(a)
        client.decide(wid, CheckpointDecision("edit", question="SELECT region FROM top ORDER BY total LIMIT 1", stage_id="top"))
        workers.start("worker-a")  # the same worker, restarted: DBOS recovers its own pipelines
        result = client.result(wid, timeout_s=60)
    assert result.status == "complete"
    assert result.results["pick"].query_result.rows == [["west"]]  # the edited question ran
    assert Counter(stage for w, stage, _ in executions(tmp_path) if w == wid) == {"top": 1, "pick": 1}


@pytest.mark.postgres
def test_two_workers_share_one_postgres_queue(pg_config, workers_for, tmp_path):
    workers = workers_for(pg_config)
    workers.start("worker-a", "--concurrency", "2")
    workers.start("worker-b", "--concurrency", "2")
    plan = ExecutionPlan("q", [
        PlanStage("count", "query_database", "/*slow*/ SELECT COUNT(*) AS n FROM sales"),
        PlanStage("double", "analyze_results", "SELECT n * 2 AS n2 FROM count", depends_on=["count"]),
    ])
    with PipelineClient(pg_config) as client:
        ids = [client.submit(plan) for _ in range(20)]
        results = [client.result(wid, timeout_s=90) for wid in ids]
    assert all(r.status == "complete" and r.results["double"].query_result.rows == [[10]] for r in results)
    lines = [line for line in executions(tmp_path) if line[0] in set(ids)]
    assert Counter((w, s) for w, s, _ in lines) == {(w, s): 1 for w in ids for s in ("count", "double")}
    per_worker = Counter(executor for _, _, executor in lines)
    assert set(per_worker) == {"worker-a", "worker-b"} and sum(per_worker.values()) == 40


def test_in_process_worker_streams_events_and_refuses_a_bad_decision(tmp_path):
    config = DurableConfig(system_database_url=f"sqlite:///{tmp_path / 'system.sqlite'}", queue_polling_interval_s=0.1,
                           heartbeat_interval_s=0.5, heartbeat_lapse_s=2.0)
    plan = ExecutionPlan("q", [
        PlanStage("a", "query_database", "SELECT region, SUM(amount) AS total FROM sales GROUP BY region", checkpoint=True),
        PlanStage("b", "query_database", "SELECT region, manager FROM regions"),
        PlanStage("c", "analyze_results", "SELECT * FROM a JOIN b USING (region) ORDER BY region", depends_on=["a", "b"]),
    ])
    with PipelineWorker(config, agent_runner()), PipelineClient(config) as client:
        wid = client.submit(plan)
        client.wait_for(wid, ("paused",), timeout_s=30)
        client.decide(wid, CheckpointDecision("approve", stage_id="c"))  # wrong checkpoint: refused, nothing lost
        wait_until(lambda: client.decision_error(wid), timeout=30, what="the refusal")
        assert client.decision_error(wid) == "the pipeline waits at checkpoint 'a', not 'c'"
        assert client.status(wid).status == "paused"
        client.decide(wid, CheckpointDecision("approve", stage_id="a"))
        result = client.result(wid, timeout_s=30)
        events = [(e.type, e.data.get("stage_id")) for e in client.events(wid, timeout_s=10)]
    assert result.results["c"].query_result.rows[0] == ["north", 30, "ana"]
    assert events[:4] == [("stage.start", "a"), ("stage.start", "b"), ("stage.end", "a"), ("stage.end", "b")]
    assert ("stage.checkpoint", "a") in events and events[-1] == ("pipeline.complete", None)


def test_importing_the_pipeline_does_not_import_dbos():
    code = "import sys, baton.pipeline, baton.pipeline.durable; sys.exit('dbos' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60).returncode == 0


def test_an_unanswered_checkpoint_ends_as_rejected_after_its_timeout(tmp_path):
    config = DurableConfig(system_database_url=f"sqlite:///{tmp_path / 'system.sqlite'}", queue_polling_interval_s=0.1,
                           heartbeat_interval_s=0.5, heartbeat_lapse_s=2.0, checkpoint_timeout_s=0.5)
    plan = ExecutionPlan("q", [PlanStage("a", "query_database", "SELECT 1 AS n", checkpoint=True),
                               PlanStage("b", "analyze_results", "SELECT n FROM a", depends_on=["a"])])
    with PipelineWorker(config, agent_runner()), PipelineClient(config) as client:
        result = client.result(client.submit(plan), timeout_s=30)
    assert result.status == "rejected"
    assert result.results["b"].error == "rejected at checkpoint 'a': no decision within 0.5 s"


def test_exactly_one_watcher_takes_over_a_lapsed_worker(tmp_path):
    from baton.pipeline.durable.heartbeat import Heartbeat

    url = f"sqlite:///{tmp_path / 'beats.sqlite'}"
    taken: list[tuple[str, str]] = []

    def beat(executor_id: str) -> Heartbeat:
        return Heartbeat(url, schema=None, executor_id=executor_id, queue_name="q", interval_s=0.05, lapse_s=1.0,
                         take_over=lambda dead: taken.append((executor_id, dead)) or 0)

    dead, left, right = beat("dead"), beat("left"), beat("right")
    for hb in (dead, left, right):
        hb.table.create(hb.engine, checkfirst=True)
        hb._register()
    left.watch(), right.watch()  # both first see every worker's current beat
    deadline = time.monotonic() + 20
    while not taken and time.monotonic() < deadline:  # left and right keep beating; dead does not
        left.beat(), right.beat()
        left.watch(), right.watch()
        time.sleep(0.02)
    for _ in range(3):  # the loser finds nothing left to claim
        left.beat(), right.beat()
        left.watch(), right.watch()
    assert len(taken) == 1 and taken[0][1] == "dead"
    with left.engine.connect() as conn:
        remaining = {r[0] for r in conn.execute(sa.text(f"SELECT executor_id FROM {TABLE_NAME}"))}
    assert remaining == {"left", "right"}
    for hb in (dead, left, right):
        hb.engine.dispose()


def test_a_watcher_that_dies_mid_takeover_hands_its_claims_on(tmp_path):
    # "left" claims the lapsed "dead" worker, then dies before resuming its pipelines: the
    # claim must not strand "dead" (nobody looks at claimed rows); "right" finishes both
    from baton.pipeline.durable.heartbeat import Heartbeat

    url = f"sqlite:///{tmp_path / 'beats.sqlite'}"
    taken: list[tuple[str, str]] = []

    def beat(executor_id: str) -> Heartbeat:
        return Heartbeat(url, schema=None, executor_id=executor_id, queue_name="q", interval_s=0.05, lapse_s=0.5,
                         take_over=lambda dead: taken.append((executor_id, dead)) or 0)

    dead, left, right = beat("dead"), beat("left"), beat("right")
    for hb in (dead, left, right):
        hb.table.create(hb.engine, checkfirst=True)
        hb._register()
    with left.engine.begin() as conn:  # left won the claim on dead, then was killed
        conn.execute(sa.text(f"UPDATE {TABLE_NAME} SET claimed_by = 'left' WHERE executor_id = 'dead'"))
    right.watch()
    deadline = time.monotonic() + 20
    while not taken and time.monotonic() < deadline:  # right keeps beating; left and dead do not
        right.beat(), right.watch()
        time.sleep(0.02)
    assert sorted(taken) == [("right", "dead"), ("right", "left")]
    with right.engine.connect() as conn:
        assert {r[0] for r in conn.execute(sa.text(f"SELECT executor_id FROM {TABLE_NAME}"))} == {"right"}
    for hb in (dead, left, right):
        hb.engine.dispose()


def test_a_repeated_decision_does_not_answer_the_next_checkpoint(tmp_path):
    # decisions queue up on the workflow: a double-clicked "approve" without stage_id used to
    # approve the *next* checkpoint too
    config = DurableConfig(system_database_url=f"sqlite:///{tmp_path / 'system.sqlite'}", queue_polling_interval_s=0.1,
                           heartbeat_interval_s=0.5, heartbeat_lapse_s=2.0, executor_id="in-process")
    plan = ExecutionPlan("q", [
        PlanStage("a", "query_database", "SELECT 1 AS n", checkpoint=True),
        PlanStage("b", "analyze_results", "SELECT n + 1 AS n FROM a", depends_on=["a"], checkpoint=True),
        PlanStage("c", "analyze_results", "SELECT n + 1 AS n FROM b", depends_on=["b"]),
    ])
    with PipelineClient(config) as client:
        with PipelineWorker(config, agent_runner()):
            wid = client.submit(plan)
            client.wait_for(wid, ("paused",), timeout_s=30)
        # no worker runs: both decisions wait in the system database, so none can be applied
        # before the repeat is sent (the test does not depend on timing)
        client.decide(wid, CheckpointDecision("approve"))
        client.decide(wid, CheckpointDecision("approve"))  # the repeat, addressed to 'a' as well
        with PipelineWorker(config, agent_runner()):  # same executor id: recovers the run
            wait_until(lambda: client.decision_error(wid), timeout=30, what="the repeat to be refused")
            assert client.decision_error(wid) == "the pipeline waits at checkpoint 'b', not 'a'"
            assert (client.status(wid).status, client.status(wid).checkpoint_stage) == ("paused", "b")
            client.decide(wid, CheckpointDecision("approve"))
            result = client.result(wid, timeout_s=30)
        with pytest.raises(CheckpointDecisionError, match="not waiting at a checkpoint"):
            client.decide(wid, CheckpointDecision("approve"))
    assert result.status == "complete" and result.results["c"].query_result.rows == [[3]]
    assert [d["stage_id"] for d in result.state.decisions] == ["a", "b"]
