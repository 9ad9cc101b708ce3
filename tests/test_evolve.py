"""Evolution on the CPU: knob mutations steered by the question's layer, the novelty filter, lineage rows in the
trace tables, stop predicate and budgets, resume, agent episodes as mutations, and GPU models kept apart."""
import json
import random

import pandas as pd
import pytest

from workbench.agent.backends.fake import FakeBackend
from workbench.agent.backends.offline import ScriptedAgent
from workbench.evaluators.local_pool import LocalPool
from workbench.evaluators.standin_timings import KnobEvaluator, SequenceEvaluator
from workbench.evolve import (EvolveConfig, Evolution, evolve_main, knob_mutations, line_changes, lineage_frame,
                              normalized_sha, novelty_verdict, population_frame, progress_frame)
from workbench.knobs import parse_knobs
from workbench.questions.bank import load_bank
from workbench.traces.writer import TraceWriter, read_table

MMA = "kernels/attn_fwd/ladder/02_mma.cu"
ORIGINAL = "kernels/attn_fwd/original.cu"
BANK = {q.id: q for q in load_bank()}


def config(tmp_path, **kw):
    base = dict(kernel_path=MMA, suite="smoke", population=3, generations=3, evaluator="standin", stop_expr="",
                anchors=[], seed=1, root=str(tmp_path), run_id="evo")
    return EvolveConfig(**{**base, **kw})


def run(tmp_path, evaluator=None, slots=2, **kw):
    with LocalPool(slots, evaluator=evaluator or KnobEvaluator()) as pool:
        evo = Evolution.create(config(tmp_path, **kw), pool)
        summary = evo.run()
    return evo, summary, lineage_frame(evo.traces_root)


def knobs_of(evo, sha):
    return {n: k["value"] for n, k in parse_knobs((evo.ws.artifacts_dir / f"{sha}.cu").read_text()).items()}


# ---- novelty filter -------------------------------------------------------------------------------------
PARENT = "#define A 1\n#define B 2\nint f() { return A + B; }\n"


def test_novelty_filter_rejects_identical_normalised_sources():
    seen = {normalized_sha(PARENT)}
    reformatted = "// a new comment\n#define   A 1\n\n#define B 2   /* same */\nint f() {  return A + B; }\n"
    assert novelty_verdict(reformatted, PARENT, [], seen) == "identical_source"
    assert novelty_verdict(PARENT.replace("B 2", "B 3"), PARENT, [], seen) == ""


def test_novelty_filter_rejects_children_that_only_re_add_deleted_lines():
    grandparent = PARENT
    parent = PARENT.replace("#define A 1", "#define A 4").replace("#define B 2", "#define B 8")
    added, removed = line_changes(grandparent, parent)
    assert added == ["#define A 4", "#define B 8"] and removed == ["#define A 1", "#define B 2"]
    deleted = removed                                    # what the parent's lineage took out
    seen = {normalized_sha(grandparent), normalized_sha(parent)}
    back_to_a1 = parent.replace("#define A 4", "#define A 1")       # new source, but only an old line back
    assert novelty_verdict(back_to_a1, parent, deleted, seen) == "readds_deleted_lines"
    mixed = back_to_a1.replace("#define B 8", "#define B 16")       # an old line back plus a new one: allowed
    assert novelty_verdict(mixed, parent, deleted, seen) == ""
    only_deletes = parent.replace("#define B 8\n", "")              # a pure deletion is new
    assert novelty_verdict(only_deletes, parent, deleted, seen) == ""


def test_knob_mutations_start_with_the_question_layer():
    source = open(ORIGINAL).read()
    moves = knob_mutations(source, "pipelining", random.Random(0))
    assert len(moves) == 1 + 2 + 2                       # every other value of every knob, once
    assert all("KEY_TILE" in m for _, m in moves[:2]) and "outside the layer" in moves[2][1]
    text, mutation = moves[0]
    added, removed = line_changes(source, text)
    assert len(added) == len(removed) == 1 and added[0].startswith("#define KEY_TILE")
    assert "(no measurement knob)" in knob_mutations(source, "measurement", random.Random(0))[0][1]
    assert knob_mutations("int main() {}", "memory", random.Random(0)) == []


# ---- the offline evolution on the knob stand-in ---------------------------------------------------------
@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    return run(tmp_path_factory.mktemp("offline"), generations=4)


def test_offline_evolution_runs_generations_with_correct_lineage(offline_run):
    evo, summary, lineage = offline_run
    assert summary["reason"] == "generations_done" and summary["generation"] == 4
    assert set(lineage["generation"]) == {0, 1, 2, 3, 4}
    seed = lineage[lineage["generation"] == 0].iloc[0]
    assert seed["mutation"] == "seed" and pd.isna(seed["parent_sha"]) and seed["status"] == "evaluated"
    evaluated = lineage[lineage["status"] == "evaluated"]
    population = {seed["child_sha"]}
    best = seed["geomean_vs_original"]
    for g in range(1, 5):
        rows = lineage[lineage["generation"] == g]
        assert set(rows["parent_sha"]) <= population               # parents come from the population
        for r in rows.itertuples():
            q = BANK[r.question_id]
            assert r.question_layer == q.layer and r.question_text == q.text
            before, after = knobs_of(evo, r.parent_sha), knobs_of(evo, r.child_sha)
            changed = [n for n in before if before[n] != after[n]]
            assert len(changed) == 1 and r.mutation.startswith(f"knob {changed[0]} ")
            layer_knobs = {n for n, k in parse_knobs(open(MMA).read()).items() if k["layer"] == q.layer}
            if layer_knobs and r.attempt == 0:
                assert changed[0] in layer_knobs                   # the question's layer picked the knob
            assert r.parent_geomean_vs_original == pytest.approx(
                evaluated.set_index("child_sha").loc[r.parent_sha, "geomean_vs_original"])
            if r.status == "evaluated":
                gain = evo.config.min_gain                             # beyond timing noise only
                assert r.is_new_best == (r.geomean_vs_original > gain * best)
                assert r.improved_on_parent == (r.geomean_vs_original > gain * r.parent_geomean_vs_original)
                best = r.geomean_vs_original if r.is_new_best else best
            assert r.best_so_far == pytest.approx(best)
        # mu + lambda: the population after generation g is the best `population` of all correct kernels so far
        so_far = evaluated[evaluated["generation"] <= g].sort_values(
            ["geomean_vs_original", "generation", "child_sha"], ascending=[False, True, True])
        population = set(so_far["child_sha"].drop_duplicates()[:3])
        fresh = set(rows[rows["status"] == "evaluated"]["child_sha"])
        assert set(rows[rows["survived"]]["child_sha"]) == population & fresh
    assert summary["best"] == pytest.approx(best) and best > seed["geomean_vs_original"]
    assert set(population_frame(evo.ws.root)["x_original"]) == set(so_far["geomean_vs_original"][:3])


def test_offline_evolution_trace_tables(offline_run):
    evo, summary, lineage = offline_run
    sessions = read_table(evo.traces_root, "sessions")
    assert len(sessions) == 1
    s = sessions.iloc[0]
    assert (s.session_id, s.arm, s.agent, s.stop_reason) == ("evo", "evolve", "offline", "generations_done")
    assert s.turns == 4 and s.best_sha == summary["best_sha"] and s.gpu == "stand-in (CPU)"
    evaluations = read_table(evo.traces_root, "evaluations")
    evaluated = lineage[lineage["status"] == "evaluated"]
    assert set(evaluations["eval_id"]) == set(evaluated["eval_id"])
    assert s.tool_calls == len(evaluated)                            # one harness run per evaluated child
    by_eval = evaluations.groupby("eval_id").agg(turn=("turn", "first"), sha=("kernel_sha", "first"))
    for r in evaluated.itertuples():
        assert (by_eval.loc[r.eval_id, "turn"], by_eval.loc[r.eval_id, "sha"]) == (r.generation, r.child_sha)
    assert set(lineage["device"].dropna()) <= {"cpu:0", "cpu:1"} and set(lineage["host"].dropna())
    runs = progress_frame(lineage)
    assert list(runs["x"]) == list(range(len(evaluated)))
    assert runs["best"].is_monotonic_increasing and runs.iloc[0]["label"] == "seed"
    assert all(label.split()[0] in BANK for label in runs[runs["is_new_best"]]["label"][1:])


def test_rejected_children_are_recorded_and_never_evaluated(tmp_path):
    evaluator = KnobEvaluator()
    evo, summary, lineage = run(tmp_path, evaluator, kernel_path=ORIGINAL, generations=6, mutation_tries=3)
    rejected = lineage[lineage["status"] == "rejected"]
    assert len(rejected) and set(rejected["reject_reason"]) <= {"identical_source", "readds_deleted_lines"}
    judged = [r.kernel_path.rsplit("/", 1)[-1][:-3] for r in evaluator.requests]
    assert not set(rejected["child_sha"]) - set(lineage[lineage["status"] == "evaluated"]["child_sha"]) & set(judged)
    assert len(judged) == len(set(judged)) == (lineage["status"] == "evaluated").sum()
    assert len({normalized_sha((evo.ws.artifacts_dir / f"{sha}.cu").read_text()) for sha in judged}) == len(judged)


# ---- stop predicate, budgets, resume ------------------------------------------------------------------------
def test_stop_predicate_ends_the_run(tmp_path):
    evaluator = SequenceEvaluator([1.0, 1.1, 1.05, 1.2, 1.6, 1.3])
    evo, summary, lineage = run(tmp_path, evaluator, slots=1, stop_expr="geomean_vs_original >= 1.5",
                                population=2, generations=10)
    assert summary["reason"] == "stop_condition_met" and summary["generation"] == 2
    assert lineage["stop_met"].fillna(False).sum() == 1 and summary["best"] == pytest.approx(1.6)


def test_evaluation_budget(tmp_path):
    evo, summary, lineage = run(tmp_path, max_evaluations=5, generations=10)
    assert summary["reason"] == "budget_evaluations" and summary["evaluations"] == 5
    assert (lineage["status"] == "evaluated").sum() == 5


def test_resume_continues_exactly_where_it_stopped(tmp_path):
    _, whole, straight = run(tmp_path / "a", generations=4)
    with LocalPool(2, evaluator=KnobEvaluator()) as pool:
        Evolution.create(config(tmp_path / "b", generations=2), pool).run()
    traces = tmp_path / "b" / "evo" / "traces"
    # a crash after generation 3's rows were written but before its state was saved: the rows must go
    TraceWriter(traces, "evo").append("lineage", [{"generation": 3, "slot": 0, "attempt": 0, "status": "evaluated"}])
    with LocalPool(2, evaluator=KnobEvaluator()) as pool:
        evo = Evolution.resume("evo", pool, root=str(tmp_path / "b"), overrides={"generations": 4})
        assert evo.state["generation"] == 2
        summary = evo.run()
    resumed = lineage_frame(traces)
    columns = ["generation", "slot", "attempt", "child_sha", "parent_sha", "question_id", "status", "survived"]
    assert resumed[columns].to_dict("records") == straight[columns].to_dict("records")
    assert summary["best_sha"] == whole["best_sha"]
    sessions = read_table(traces, "sessions")
    assert len(sessions) == 1 and sessions.iloc[0].turns == 4


# ---- agent episodes as mutations ------------------------------------------------------------------------------
def test_agent_episodes_are_mutations_with_the_question_as_hint(tmp_path):
    evaluator = KnobEvaluator()
    with LocalPool(2, evaluator=evaluator) as pool:
        evo = Evolution.create(config(tmp_path, agent="fake", population=2, generations=1, episode_turns=3), pool,
                               backend_factory=lambda: ScriptedAgent())
        summary = evo.run()
    lineage = lineage_frame(evo.traces_root)
    children = lineage[lineage["generation"] == 1]
    assert len(children) == 2 and all(m.startswith("episode g001-s0") for m in children["mutation"])
    episodes = sorted((evo.ws.root / "episodes").iterdir())
    assert len(episodes) == 2
    for episode, row in zip(episodes, children.itertuples()):
        first = read_table(episode / "traces", "messages").sort_values(["turn", "block_index"]).iloc[0]
        assert first.role == "user" and row.question_text in first.text
        asked = read_table(episode / "traces", "interventions")
        assert list(asked["question_id"]) == [row.question_id] and list(asked["trigger"]) == ["evolve"]
    # the episodes' harness runs are counted, and an episode's best kernel is not judged a second time
    assert summary["evaluations"] == len(evaluator.requests)
    assert [r.kernel_path for r in evaluator.requests if "/episodes/" not in r.kernel_path] == [
        str(evo.ws.artifacts_dir / f"{lineage.iloc[0]['child_sha']}.cu")]                    # the seed only


def test_an_episode_that_changes_nothing_is_rejected(tmp_path):
    with LocalPool(1, evaluator=KnobEvaluator()) as pool:
        evo = Evolution.create(config(tmp_path, agent="fake", population=2), pool,
                               backend_factory=lambda: FakeBackend([]))
        summary = evo.run()
    lineage = lineage_frame(evo.traces_root)
    assert summary["reason"] == "exhausted"
    assert list(lineage[lineage["generation"] == 1]["reject_reason"]) == ["identical_source"] * 2


def test_results_from_another_gpu_model_are_not_compared(tmp_path):
    inner = KnobEvaluator()

    def two_models(request):
        result = inner(request)
        result.gpu = "NVIDIA H200" if len(inner.requests) == 1 else "NVIDIA H100 80GB HBM3"
        return result

    evo, summary, lineage = run(tmp_path, two_models, slots=1, generations=1)
    children = lineage[lineage["generation"] == 1]
    assert set(children["status"]) == {"other_gpu"} and not children["survived"].any()
    assert summary["best_sha"] == lineage.iloc[0]["child_sha"]


# ---- CLI --------------------------------------------------------------------------------------------------------
def test_cli_dry_run_and_resume(tmp_path, capsys):
    argv = ["--evaluator", "standin", "--suite", "smoke", "--population", "2", "--generations", "2", "--anchors",
            "", "--stop", "", "--root", str(tmp_path), "--id", "cli"]
    assert evolve_main(argv) == 0
    out = capsys.readouterr().out
    assert "generation 2:" in out and "stopped: generations_done after generation 2" in out
    assert evolve_main(["--resume", "cli", "--root", str(tmp_path), "--generations", "3"]) == 0
    out = capsys.readouterr().out
    assert "generation 3:" in out and "generation 1:" not in out
    state = json.loads((tmp_path / "cli" / "state" / "evolution.json").read_text())
    assert state["generation"] == 3


@pytest.mark.parametrize("argv,needle", [
    (["--suite", "smoke"], "needs a CUDA GPU"),
    (["--evaluator", "standin", "--budget", "tokens=5"], "budget item"),
    (["--evaluator", "standin", "--kernel", "missing.cu"], "not found"),
    (["--evaluator", "standin", "--ray-address", "auto"], "needs --pool ray"),
    (["--evaluator", "standin", "--min-gain", "0.9"], "argument --min-gain: must be a number >= 1"),
])
def test_cli_errors_are_one_line(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORKBENCH_NO_GPU", "1")
    try:
        code = evolve_main(argv + ["--root", str(tmp_path)])
    except SystemExit as refused:           # argparse reads the numbers
        code = refused.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


# ---- the problem's main anchor ---------------------------------------------------------------------------
GEMM_ORIGINAL = "kernels/gemm_bf16/original.cu"


def test_a_gemm_evolution_scores_its_events_and_sessions_row_on_cublas(tmp_path):
    seen = []
    with LocalPool(2, evaluator=KnobEvaluator()) as pool:
        evo = Evolution.create(config(tmp_path, kernel_path=GEMM_ORIGINAL, problem="gemm_bf16", generations=1,
                                      population=2), pool)
        recorder = evo.recorder
        evo.recorder = lambda e: (seen.append(e), recorder(e))
        evo.run()
    done = [e for e in seen if type(e).__name__ == "EvaluationDone"]
    stopped = [e for e in seen if type(e).__name__ == "CampaignStopped"][0]
    assert done and all(e.main_anchor == "cublas" and e.geomean_vs_main is not None for e in done)
    assert stopped.main_anchor == "cublas" and 0 < stopped.best_vs_main < 10 and stopped.best_vs_fa3 is None
    session = read_table(evo.traces_root, "sessions").iloc[0]
    assert session["main_anchor"] == "cublas" and session["best_vs_main"] == pytest.approx(stopped.best_vs_main)


def test_an_attention_evolution_still_scores_on_fa3_and_an_older_state_file_resumes_as_fa3(tmp_path):
    evo, _, _ = run(tmp_path, generations=1, anchors=["fa3"])
    session = read_table(evo.traces_root, "sessions").iloc[0]
    assert session["main_anchor"] == "fa3" and session["best_vs_main"] == pytest.approx(session["best_vs_fa3"])
    state_file = evo.ws.root / "state" / "evolution.json"
    state = json.loads(state_file.read_text())
    assert state["best_vs_main"] == state["best_vs_fa3"] is not None
    for key in ("main_anchor", "best_vs_main"):      # as a state file of an older workbench has neither
        state.pop(key)
    state_file.write_text(json.dumps(state))
    with LocalPool(1, evaluator=KnobEvaluator()) as pool:
        resumed = Evolution.resume("evo", pool, root=str(tmp_path))
    assert resumed.state["main_anchor"] == "fa3" and resumed.state["best_vs_main"] == state["best_vs_fa3"]
