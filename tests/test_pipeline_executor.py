"""The in-process executor: layers run concurrently, results flow to dependents, validation
failures and skips, convergence failures, checkpoints (approve / edit / reject), events."""

from __future__ import annotations

import asyncio

import pytest

from baton.agents import AgentContext
from baton.events import RecordingTracker
from baton.pipeline import (
    AgentStageRunner,
    CheckpointDecision,
    CheckpointDecisionError,
    ExecutionPlan,
    PipelineExecutor,
    PlanDefect,
    PlanStage,
    StageResult,
    StageValidation,
)
from baton.response import QueryResult, ResponseType
from pipeline_doubles import DocsAgent, FramesAgent, SQLiteAgent, agent_runner


def ctx() -> tuple[AgentContext, RecordingTracker]:
    tracker = RecordingTracker()
    return AgentContext(user_question="q", tracker=tracker), tracker


def q(sid: str, sql: str, *deps: str, **kw) -> PlanStage:
    return PlanStage(sid, "query_database", sql, depends_on=list(deps), **kw)


def a(sid: str, sql: str, *deps: str, **kw) -> PlanStage:
    return PlanStage(sid, "analyze_results", sql, depends_on=list(deps), **kw)


def events(tracker: RecordingTracker, *types: str) -> list[tuple[str, str | None]]:
    return [(e.type, e.data.get("stage_id")) for e in tracker.events if e.type in types]


async def test_diamond_flows_results_to_dependents():
    plan = ExecutionPlan("sales by region with managers", [
        q("regions", "SELECT region, manager FROM regions"),
        q("north", "SELECT region, SUM(amount) AS total FROM sales WHERE region='north' GROUP BY region", "regions"),
        q("south", "SELECT region, SUM(amount) AS total FROM sales WHERE region='south' GROUP BY region", "regions"),
        a("both", "SELECT n.region, n.total, r.manager FROM north n JOIN regions r USING (region) "
                  "UNION ALL SELECT s.region, s.total, r.manager FROM south s JOIN regions r USING (region) ORDER BY 1",
          "regions", "north", "south"),
    ])
    frames = FramesAgent()
    runner = AgentStageRunner({"query_database": SQLiteAgent(), "analyze_results": frames})
    context, tracker = ctx()
    run = await PipelineExecutor(runner).start(plan, context)
    assert run.status == "complete"
    assert run.message.response_type == ResponseType.PIPELINE_COMPLETE
    assert run.results["both"].query_result.rows == [["north", 30, "ana"], ["south", 12, "bo"]]
    assert sorted(frames.seen_frames[0]) == ["north", "regions", "south"]  # frames named by stage id
    assert run.message.data["north"] == [{"region": "north", "total": 30}]
    assert [s["stage_id"] for s in run.message.metadata["stages"]] == ["regions", "north", "south", "both"]
    assert run.message.results.rows == run.results["both"].query_result.rows
    assert tracker.types()[-1] == "pipeline.complete"


class BarrierRunner:
    """Every stage waits at one barrier: a layer that ran sequentially would never pass it."""

    def __init__(self, parties: int) -> None:
        self.barrier = asyncio.Barrier(parties)

    async def run(self, stage, inputs, context) -> StageResult:
        await asyncio.wait_for(self.barrier.wait(), timeout=5)
        return StageResult(stage.stage_id, query_result=QueryResult(columns=["n"], rows=[[1]]))


async def test_a_layer_of_four_runs_concurrently():
    plan = ExecutionPlan("q", [q(f"s{i}", "SELECT 1") for i in range(4)])
    context, tracker = ctx()
    run = await PipelineExecutor(BarrierRunner(4)).start(plan, context)
    assert run.status == "complete"
    seq = events(tracker, "stage.start", "stage.end")
    first_end = next(i for i, (t, _) in enumerate(seq) if t == "stage.end")
    assert sorted(sid for t, sid in seq[:first_end] if t == "stage.start") == ["s0", "s1", "s2", "s3"]


async def test_validation_failure_fails_the_stage_and_skips_dependents():
    plan = ExecutionPlan("q", [
        q("big", "SELECT region FROM sales WHERE amount > 100", validation=StageValidation(min_rows=1)),
        q("cols", "SELECT region FROM regions", validation=StageValidation(required_columns=["region", "manager"])),
        q("fine", "SELECT region, manager FROM regions", validation=StageValidation(min_rows=1, max_rows=3, required_columns=["REGION"])),
        a("uses_big", "SELECT * FROM big", "big"),
        a("after_skip", "SELECT * FROM uses_big", "uses_big", "fine"),
        a("uses_fine", "SELECT COUNT(*) AS n FROM fine", "fine"),
    ])
    context, tracker = ctx()
    run = await PipelineExecutor(agent_runner()).start(plan, context)
    r = run.results
    assert run.status == "failed"
    assert (r["big"].status, r["big"].error_type) == ("error", "validation")
    assert r["big"].error == "validation failed: stage 'big' returned 0 row(s), at least 1 required"
    assert "missing required column(s) manager (it returned: region)" in r["cols"].error
    assert (r["fine"].status, r["uses_fine"].status, r["uses_fine"].query_result.rows) == ("success", "success", [[3]])
    assert (r["uses_big"].status, r["uses_big"].error_type) == ("skipped", "dependency")
    assert r["uses_big"].error == "skipped: depends on 'big' (error)"
    assert r["after_skip"].status == "skipped"
    failed = [m for m in run.messages if m.response_type == ResponseType.STAGE_FAILED]
    assert [m.metadata.get("failed_stage") for m in failed] == ["big", "cols", None]  # two stages, then the final answer
    assert run.message.error.startswith("big: validation failed")
    assert ("stage.failed", "big") in events(tracker, "stage.failed")
    assert ("stage.skipped", "uses_big") in events(tracker, "stage.skipped")


async def test_max_rows_and_agent_errors_fail_stages():
    plan = ExecutionPlan("q", [q("many", "SELECT * FROM sales", validation=StageValidation(max_rows=2)), q("bad", "SELECT nope FROM sales")])
    run = await PipelineExecutor(agent_runner()).start(plan, ctx()[0])
    assert "returned 5 row(s), at most 2 allowed" in run.results["many"].error
    assert (run.results["bad"].error, run.results["bad"].error_type) == ("no such column: nope", "sql_error")


async def test_missing_tool_agent_fails_only_that_stage():
    plan = ExecutionPlan("q", [PlanStage("docs", "search_codebase", "cents"), q("n", "SELECT 1 AS one")])
    run = await PipelineExecutor(AgentStageRunner({"query_database": SQLiteAgent()})).start(plan, ctx()[0])
    assert run.results["docs"].error.startswith("no agent is registered for tool 'search_codebase'")
    assert run.results["n"].ok


async def test_knowledge_stage_answers_in_text():
    plan = ExecutionPlan("q", [PlanStage("docs", "search_codebase", "cents")])
    run = await PipelineExecutor(agent_runner()).start(plan, ctx()[0])
    assert run.results["docs"].answer == DocsAgent.DOCS["billing.md"]
    assert DocsAgent.DOCS["billing.md"] in run.message.content


async def test_convergence_fails_on_incompatible_join_column_types():
    plan = ExecutionPlan("q", [
        q("by_name", "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"),
        q("by_code", "SELECT region_code AS region, manager FROM regions"),
        a("joined", "SELECT * FROM by_name JOIN by_code USING (region)", "by_name", "by_code"),
        a("after", "SELECT * FROM joined", "joined"),
    ])
    context, tracker = ctx()
    run = await PipelineExecutor(agent_runner()).start(plan, context)
    joined = run.results["joined"]
    assert (joined.status, joined.error_type) == ("error", "convergence")
    assert joined.error == ("convergence check failed: stage 'joined': join column 'region' has incompatible types: "
                            "text in 'by_name', numeric in 'by_code'")
    assert run.results["after"].status == "skipped"
    assert ("stage.failed", "joined") in events(tracker, "stage.failed")
    assert run.message.response_type == ResponseType.STAGE_FAILED


async def test_convergence_fails_on_a_missing_named_join_column():
    plan = ExecutionPlan("q", [
        q("a1", "SELECT region, amount FROM sales"),
        q("a2", "SELECT manager FROM regions"),
        a("j", "SELECT 1", "a1", "a2", join_on=["region"]),
    ])
    run = await PipelineExecutor(agent_runner()).start(plan, ctx()[0])
    assert "join column 'region' is missing from stage 'a2''s result (it has: manager)" in run.results["j"].error


async def test_convergence_fails_on_different_units_of_a_compared_measure():
    plan = ExecutionPlan("q", [
        q("this_year", "SELECT region, amount_cents AS revenue FROM sales"),
        q("last_year", "SELECT region, amount AS revenue FROM sales"),
        a("growth", "SELECT 1", "this_year", "last_year"),
    ])
    units = {"this_year.revenue": "cents", "last_year.revenue": "dollars"}
    run = await PipelineExecutor(agent_runner(), units=units).start(plan, ctx()[0])
    assert run.results["growth"].error == ("convergence check failed: stage 'growth': compared measure 'revenue' is in "
                                           "different units: 'cents' in 'this_year', 'dollars' in 'last_year'")
    # same unit (or unknown on one side) passes
    run = await PipelineExecutor(agent_runner(), units={"revenue": "cents"}).start(plan, ctx()[0])
    assert run.results["growth"].ok


async def test_units_reported_by_the_specialist_count():
    plan = ExecutionPlan("q", [
        q("x", "SELECT region, amount_cents AS revenue FROM sales"),
        PlanStage("y", "query_database", "SELECT region, amount AS revenue FROM sales"),
        a("cmp", "SELECT 1", "x", "y"),
    ])
    dollars = SQLiteAgent(units={"revenue": "dollars"})

    class Split(AgentStageRunner):
        async def run(self, stage, inputs, context):
            if stage.stage_id == "y":
                return await AgentStageRunner({"query_database": dollars}).run(stage, inputs, context)
            return await super().run(stage, inputs, context)

    run = await PipelineExecutor(Split(agent_runner().tools), units={"x.revenue": "cents"}).start(plan, ctx()[0])
    assert "'cents' in 'x', 'dollars' in 'y'" in run.results["cmp"].error


def checkpoint_plan() -> ExecutionPlan:
    return ExecutionPlan("q", [
        q("top", "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC", checkpoint=True),
        a("best", "SELECT region FROM top LIMIT 1", "top"),
    ])


async def test_checkpoint_pauses_then_approve_continues():
    executor = PipelineExecutor(agent_runner())
    context, tracker = ctx()
    run = await executor.start(checkpoint_plan(), context)
    assert (run.status, run.checkpoint_stage) == ("paused", "top")
    assert run.message.response_type == ResponseType.STAGE_CHECKPOINT
    assert run.message.results.rows == [["north", 30], ["south", 12], ["west", 3]]
    assert "best" not in run.results
    assert events(tracker, "stage.checkpoint") == [("stage.checkpoint", "top")]
    resumed = await executor.resume(context.workflow_id, CheckpointDecision("approve"), context.derive(workflow_id="other"))
    assert resumed.status == "complete"
    assert resumed.workflow_id == context.workflow_id
    assert resumed.results["best"].query_result.rows == [["north"]]
    assert executor.paused(context.workflow_id) is None
    with pytest.raises(CheckpointDecisionError, match="no pipeline is paused"):
        await executor.resume(context.workflow_id, CheckpointDecision("approve"), context)


async def test_checkpoint_edit_changes_the_next_question():
    executor = PipelineExecutor(agent_runner())
    context, _ = ctx()
    await executor.start(checkpoint_plan(), context)
    edit = CheckpointDecision("edit", question="SELECT region FROM top ORDER BY total LIMIT 1")
    run = await executor.resume(context.workflow_id, edit, context)
    assert run.results["best"].query_result.rows == [["west"]]
    assert run.results["best"].question == edit.question
    assert run.state.decisions[0]["action"] == "edit"


async def test_checkpoint_reject_skips_the_rest():
    executor = PipelineExecutor(agent_runner())
    context, tracker = ctx()
    await executor.start(checkpoint_plan(), context)
    run = await executor.resume(context.workflow_id, CheckpointDecision("reject", reason="wrong totals"), context)
    assert run.status == "rejected"
    assert (run.results["best"].status, run.results["best"].error) == ("skipped", "rejected at checkpoint 'top': wrong totals")
    assert run.message.response_type == ResponseType.PIPELINE_COMPLETE
    assert run.message.metadata["pipeline"]["status"] == "rejected"
    assert not any(t == "stage.start" and sid == "best" for t, sid in events(tracker, "stage.start"))


async def test_bad_decisions_are_refused_and_lose_nothing():
    executor = PipelineExecutor(agent_runner())
    context, _ = ctx()
    plan = ExecutionPlan("q", [q("a1", "SELECT 1 AS n", checkpoint=True), a("b1", "SELECT n FROM a1", "a1"), a("b2", "SELECT n FROM a1", "a1")])
    await executor.start(plan, context)
    with pytest.raises(CheckpointDecisionError, match="needs the new question"):
        CheckpointDecision("edit")
    with pytest.raises(CheckpointDecisionError, match="unknown checkpoint action"):
        CheckpointDecision.from_dict({"action": "maybe"})
    with pytest.raises(CheckpointDecisionError, match="several dependents"):
        await executor.resume(context.workflow_id, CheckpointDecision("edit", question="x"), context)
    with pytest.raises(CheckpointDecisionError, match="cannot edit stage 'a1': it already ran"):
        await executor.resume(context.workflow_id, CheckpointDecision("edit", question="x", target_stage="a1"), context)
    with pytest.raises(CheckpointDecisionError, match="waits at checkpoint 'a1', not 'b1'"):
        await executor.resume(context.workflow_id, CheckpointDecision("approve", stage_id="b1"), context)
    run = await executor.resume(context.workflow_id, CheckpointDecision("edit", question="SELECT n + 1 AS n FROM a1", target_stage="b2"), context)
    assert (run.results["b1"].query_result.rows, run.results["b2"].query_result.rows) == ([[1]], [[2]])


async def test_two_checkpoints_in_one_layer_wait_in_plan_order():
    executor = PipelineExecutor(agent_runner())
    context, _ = ctx()
    plan = ExecutionPlan("q", [q("x", "SELECT 1 AS n", checkpoint=True), q("y", "SELECT 2 AS n", checkpoint=True), a("z", "SELECT 3", "x", "y")])
    first = await executor.start(plan, context)
    second = await executor.resume(context.workflow_id, CheckpointDecision("approve", stage_id="x"), context)
    assert (first.checkpoint_stage, second.checkpoint_stage) == ("x", "y")
    done = await executor.resume(context.workflow_id, CheckpointDecision("approve", stage_id="y"), context)
    assert done.status == "complete"


async def test_invalid_plan_fails_before_anything_runs():
    plan = ExecutionPlan("q", [q("a1", "SELECT 1", "b1"), q("b1", "SELECT 1", "a1")])
    context, tracker = ctx()
    with pytest.raises(PlanDefect):
        await PipelineExecutor(agent_runner()).start(plan, context)
    assert tracker.events == []


async def test_runner_exception_fails_its_stage_only():
    class Boom:
        async def run(self, stage, inputs, context):
            if stage.stage_id == "bad":
                raise RuntimeError("kaput")
            return StageResult(stage.stage_id, answer="fine")

    run = await PipelineExecutor(Boom()).start(ExecutionPlan("q", [q("bad", "x"), q("good", "y")]), ctx()[0])
    assert (run.results["bad"].error, run.results["good"].answer) == ("RuntimeError: kaput", "fine")


async def test_an_edit_changes_only_its_own_run_not_the_callers_plan():
    # one plan object, two paused runs: editing one must not rewrite the other (or the plan)
    executor = PipelineExecutor(agent_runner())
    plan = checkpoint_plan()
    first, second = ctx()[0], ctx()[0]
    await executor.start(plan, first)
    await executor.start(plan, second)
    edited = await executor.resume(first.workflow_id, CheckpointDecision("edit", question="SELECT region FROM top ORDER BY total LIMIT 1"), first)
    approved = await executor.resume(second.workflow_id, CheckpointDecision("approve"), second)
    assert edited.results["best"].query_result.rows == [["west"]]
    assert approved.results["best"].query_result.rows == [["north"]]
    assert plan.stage("best").question == "SELECT region FROM top LIMIT 1"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_paused_runs_nobody_answers_expire_and_are_bounded_in_number():
    from baton.pipeline import InMemoryRunStore, PipelineConfigurationError

    clock = FakeClock()
    store = InMemoryRunStore(max_runs=2, ttl_s=60, clock=clock)
    executor = PipelineExecutor(agent_runner(), store=store)
    contexts = [ctx()[0] for _ in range(3)]
    for context in contexts:
        await executor.start(checkpoint_plan(), context)
        clock.now += 1
    oldest, middle, newest = (c.workflow_id for c in contexts)
    assert len(store) == 2 and executor.paused(oldest) is None  # the oldest pause made room
    with pytest.raises(CheckpointDecisionError, match="its pause expired"):
        await executor.resume(oldest, CheckpointDecision("approve"), contexts[0])
    clock.now += 58  # middle paused 60 s ago: gone; newest 59 s ago: kept
    assert executor.paused(middle) is None and executor.paused(newest) is not None
    assert (await executor.resume(newest, CheckpointDecision("approve"), contexts[2])).status == "complete"
    assert len(store) == 0
    with pytest.raises(PipelineConfigurationError):
        InMemoryRunStore(max_runs=0)


async def test_a_new_run_never_silently_replaces_one_paused_under_the_same_id():
    from baton.pipeline import PipelineError

    executor = PipelineExecutor(agent_runner())
    context, _ = ctx()
    await executor.start(checkpoint_plan(), context)
    with pytest.raises(PipelineError, match="already paused under workflow id"):
        await executor.start(ExecutionPlan("other", [q("x", "SELECT 1 AS n", checkpoint=True)]), context)
    run = await executor.resume(context.workflow_id, CheckpointDecision("approve"), context)
    assert run.results["best"].query_result.rows == [["north"]]  # the first run, intact


class ContextRecorder:
    """Runs stages with the agent runner, noting the context each stage was given; a stage
    named in ``block`` waits for ``release`` (after setting ``entered``)."""

    def __init__(self, block: str | None = None) -> None:
        self.inner = agent_runner()
        self.seen: dict[str, list[AgentContext]] = {}
        self.block = block
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, stage, inputs, context):
        self.seen.setdefault(stage.stage_id, []).append(context)
        if stage.stage_id == self.block:
            self.entered.set()
            await self.release.wait()
        return await self.inner.run(stage, inputs, context)


async def test_resumed_stages_run_with_the_starting_requests_context_and_the_deciders_tracker():
    from baton.agents import ExecutionMemory
    from baton.llm import FunctionModel

    router = FunctionModel(lambda m, t: "unused")
    runner = ContextRecorder()
    executor = PipelineExecutor(runner)
    start_tracker, decide_tracker = RecordingTracker(), RecordingTracker()
    original = AgentContext(
        user_question="top regions", project_id="sales", workspace="acme", user_id="u-7", llm_router=router,
        model="gpt-x", preferred_provider="openai", extra={"_skip_complexity": True, "session_id": "s1"},
        tracker=start_tracker, execution_memory=ExecutionMemory("top regions"),
    )
    await executor.start(checkpoint_plan(), original)
    decider_memory = ExecutionMemory()
    decision_request = AgentContext(workspace="acme", tracker=decide_tracker, execution_memory=decider_memory)
    run = await executor.resume(original.workflow_id, CheckpointDecision("approve"), decision_request)
    assert run.results["best"].query_result.rows == [["north"]]
    [best] = runner.seen["best"]
    kept = ("user_question", "project_id", "workspace", "user_id", "model", "preferred_provider", "chat_history")
    assert {f: getattr(best, f) for f in kept} == {f: getattr(original, f) for f in kept}
    assert best.llm_router is router and dict(best.extra) == {"_skip_complexity": True, "session_id": "s1"}
    assert best.workflow_id == original.workflow_id
    assert best.tracker is decide_tracker and best.execution_memory is decider_memory
    assert events(decide_tracker, "stage.start") == [("stage.start", "best")]
    assert ("stage.start", "best") not in events(start_tracker, "stage.start")  # the finished request hears nothing more


async def test_a_paused_run_does_not_hold_on_to_its_requests_tracker_or_execution_memory():
    from baton.agents import ExecutionMemory

    executor = PipelineExecutor(agent_runner())
    context = AgentContext(workspace="acme", tracker=RecordingTracker(), execution_memory=ExecutionMemory())
    await executor.start(checkpoint_plan(), context)
    kept = executor.store.peek(context.workflow_id).context
    assert kept.tracker is not context.tracker and kept.execution_memory is None
    assert (kept.workspace, kept.workflow_id) == ("acme", context.workflow_id)


async def test_a_decision_from_another_workspace_is_refused_and_loses_nothing():
    runner = ContextRecorder()
    executor = PipelineExecutor(runner)
    context = AgentContext(workspace="acme")
    await executor.start(checkpoint_plan(), context)
    with pytest.raises(CheckpointDecisionError, match="in workspace 'globex'"):
        await executor.resume(context.workflow_id, CheckpointDecision("approve"), AgentContext(workspace="globex"))
    assert executor.paused(context.workflow_id).checkpoint_stage == "top" and "best" not in runner.seen
    run = await executor.resume(context.workflow_id, CheckpointDecision("approve"), AgentContext(workspace="acme"))
    assert run.status == "complete"


async def test_a_cancelled_resume_puts_the_run_back_as_it_was_paused():
    runner = ContextRecorder(block="best")
    executor = PipelineExecutor(runner)
    context, _ = ctx()
    await executor.start(checkpoint_plan(), context)
    edit = CheckpointDecision("edit", question="SELECT region FROM top ORDER BY total LIMIT 1")
    task = asyncio.create_task(executor.resume(context.workflow_id, edit, context))
    await runner.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    state = executor.paused(context.workflow_id)
    assert state is not None and (state.status, state.checkpoint_stage) == ("paused", "top")
    assert "best" not in state.results and state.decisions == []
    assert state.plan.stage("best").question == "SELECT region FROM top LIMIT 1"  # the cancelled edit is not applied
    runner.release.set()
    run = await executor.resume(context.workflow_id, CheckpointDecision("approve"), context)
    assert run.status == "complete" and run.results["best"].query_result.rows == [["north"]]
    assert len(runner.seen["best"]) == 2 and [d["action"] for d in run.state.decisions] == ["approve"]
