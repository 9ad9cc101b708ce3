"""The evolution loop: seed, generations of children judged side by side on a pool, selection, records."""
from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from workbench import __version__
from workbench.campaign.config import campaign_problem
from workbench.campaign.events import CampaignStarted, CampaignStopped, EvaluationDone, TurnCommitted
from workbench.campaign.main_anchor import LEGACY_MAIN, recorded_best, run_figures
from workbench.campaign.recorder import TraceRecorder, trim_uncommitted
from workbench.campaign.workspace import Workspace, WorkspaceError
from workbench.evolve.evolve_config import EPISODE_HINT, STATE_FILE, EvolveConfig, Member
from workbench.evolve.novelty import knob_mutations, line_changes, normalized_sha, novelty_verdict
from workbench.harness.result import CheckRequest
from workbench.questions.bank import load_bank
from workbench.traces.sources import is_standin_result


def _utc(ts: float):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


class Evolution:
    def __init__(self, config: EvolveConfig, ws: Workspace, pool, *, backend_factory: Optional[Callable] = None,
                 log: Callable[[str], None] = lambda line: None, resumed: bool = False):
        self.config, self.ws, self.pool, self.log = config, ws, pool, log
        self.backend_factory = backend_factory
        self.bank = load_bank(config.bank_path)
        self.traces_root = Path(config.traces or ws.traces_dir)
        self.resumed = resumed
        # the problem's main anchor (attention: fa3, the GEMM: cublas): what its events and sessions row score on
        self.main_anchor = campaign_problem(config.problem, config.kernel_path).main_anchor or LEGACY_MAIN
        self.state = {"generation": -1, "population": [], "members": {}, "seen": [], "best_sha": "",
                      "best": None, "best_vs_fa3": None, "main_anchor": self.main_anchor, "best_vs_main": None,
                      "evaluations": 0, "elapsed_s": 0.0, "tokens": 0,
                      "cost_usd": 0.0, "gpu": "", "rng": None, "stopped": ""}
        self.rng = random.Random(config.seed)
        self._lock = threading.Lock()         # episodes run side by side and add to the counters
        info = {"source": "workbench", "campaign_id": config.run_id, "arm": "evolve", "agent": config.agent,
                "model": config.model, "kernel_path": config.kernel_path, "suite": config.suite,
                "stop_expr": config.stop_expr, "workbench_version": __version__,
                "config_json": json.dumps(asdict(config), default=str)}
        self.recorder = TraceRecorder(self.traces_root, config.run_id, info)

    # ---- construction ------------------------------------------------------------------------------------
    @classmethod
    def create(cls, config: EvolveConfig, pool, **kw) -> "Evolution":
        config.run_id = config.run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-evolve-{uuid.uuid4().hex[:4]}"
        if not Path(config.kernel_path).is_file():
            raise WorkspaceError(f"kernel {config.kernel_path} not found; pass --kernel PATH to a .cu file")
        load_bank(config.bank_path)          # a bad bank is refused before the run's folder exists
        ws = Workspace.create(config.root, config.run_id, Path(config.kernel_path), asdict(config))
        return cls(config, ws, pool, **kw)

    @classmethod
    def resume(cls, run_id: str, pool, root: str = "evolutions", overrides: dict | None = None, **kw) -> "Evolution":
        ws = Workspace.open(root, run_id)
        config = EvolveConfig.from_dict({**ws.read_config(), **(overrides or {})})
        ws.write_config(asdict(config))
        evo = cls(config, ws, pool, resumed=True, **kw)
        path = ws.root / STATE_FILE
        if path.exists():
            saved = json.loads(path.read_text())
            evo.state.update(saved)
            # a state file written before evolutions named their main anchor is attention's (its FA3 best)
            evo.state.update(main_anchor=evo.main_anchor, best_vs_main=recorded_best(saved, evo.main_anchor))
            evo.rng.setstate(_rng_state(evo.state["rng"]))
        committed = evo.state["generation"]
        trim_uncommitted(evo.traces_root, run_id, committed)
        _trim_lineage(evo.traces_root, run_id, committed)
        evo.state["stopped"] = ""
        return evo

    def _save_state(self) -> None:
        self.state["rng"] = _jsonable(self.rng.getstate())
        path = self.ws.root / STATE_FILE
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, default=str))
        os.replace(tmp, path)

    # ---- the loop ----------------------------------------------------------------------------------------
    def run(self) -> dict:
        c, st = self.config, self.state
        t0 = time.monotonic()
        elapsed0 = st["elapsed_s"]
        self.recorder(CampaignStarted(campaign_id=c.run_id, mode="evolve", agent=c.agent, model=c.model,
                                      kernel_path=c.kernel_path, suite=c.suite, stop_expr=c.stop_expr,
                                      workspace=str(self.ws.root), resumed=self.resumed,
                                      turn=max(st["generation"], 0), main_anchor=self.main_anchor))
        reason = ""
        try:
            if st["generation"] < 0:
                reason = self._seed()
            while not reason:
                st["elapsed_s"] = elapsed0 + time.monotonic() - t0
                reason = self._budget_reason()
                if not reason:
                    reason = self._generation(st["generation"] + 1)
                    st["elapsed_s"] = elapsed0 + time.monotonic() - t0
                    self._save_state()
        except KeyboardInterrupt:
            reason = "interrupted"
        st["stopped"] = reason
        st["elapsed_s"] = elapsed0 + time.monotonic() - t0
        self._save_state()
        detail = {"interrupted": f"resume with --resume {c.run_id}"}.get(reason, "")
        self.recorder(CampaignStopped(reason=reason, detail=detail, turn=max(st["generation"], 0),
                                      tool_calls=st["evaluations"], best_sha=st["best_sha"],
                                      best_vs_original=st["best"], best_vs_fa3=st["best_vs_fa3"],
                                      tokens=st["tokens"], cost_usd=st["cost_usd"], wall_s=st["elapsed_s"],
                                      main_anchor=self.main_anchor, best_vs_main=st["best_vs_main"]))
        best = f"x{st['best']:.3f}" if st["best"] else "none"
        self.log(f"stopped: {reason} after generation {st['generation']}, {st['evaluations']} evaluations; best "
                 f"{best} vs original ({st['best_sha'][:12] or '-'})")
        return {"reason": reason, "generation": st["generation"], "evaluations": st["evaluations"],
                "best": st["best"], "best_sha": st["best_sha"], "run_id": c.run_id}

    def _budget_reason(self) -> str:
        c, st = self.config, self.state
        if st["generation"] >= c.generations:
            return "generations_done"
        if c.max_evaluations and st["evaluations"] >= c.max_evaluations:
            return "budget_evaluations"
        if c.wall_s and st["elapsed_s"] >= c.wall_s:
            return "budget_wall_time"
        if c.usd and st["cost_usd"] >= c.usd:
            return "budget_usd"
        return ""

    def _request(self, sha: str) -> CheckRequest:
        c = self.config
        return CheckRequest(kernel_path=str(self.ws.artifacts_dir / f"{sha}.cu"), suite=c.suite,
                            anchors=tuple(c.anchors), stop_expr=c.stop_expr, previous_best=self.state["best"],
                            problem=c.problem)

    def _source(self, sha: str) -> str:
        return (self.ws.artifacts_dir / f"{sha}.cu").read_text()

    def _seed(self) -> str:
        st = self.state
        text = self.ws.kernel_path.read_text()
        sha = self.ws.save_artifact(text)
        self.log(f"generation 0: judging the seed {self.config.kernel_path} ({sha[:12]}) on {self.pool.describe()}")
        t0 = time.monotonic()
        result = self.pool.submit(self._request(sha)).result()
        child = {"slot": 0, "attempt": 0, "sha": sha, "parent": None, "question": None, "mutation": "seed",
                 "result": result, "wall_s": time.monotonic() - t0}
        st["seen"].append(normalized_sha(text))
        st["evaluations"] += 1
        st["gpu"] = result.gpu
        self._commit(0, [child])
        if not st["population"]:
            return "seed_not_correct"
        return "stop_condition_met" if result.stop_met else ""

    def _tournament(self) -> Member:
        pop = [Member(**m) for m in self.state["population"]]
        entrants = self.rng.sample(pop, min(self.config.tournament, len(pop)))
        return max(entrants, key=lambda m: (m.score, -m.generation))

    def _generation(self, g: int) -> str:
        c, st = self.config, self.state
        slots = c.children or c.population
        if c.max_evaluations:
            slots = min(slots, c.max_evaluations - st["evaluations"])
        plans = [(slot, self._tournament(), self.rng.choice(self.bank)) for slot in range(slots)]
        self.log(f"generation {g}: {slots} children from parents "
                 f"{', '.join(sorted({p.sha[:8] for _, p, _ in plans}))}")
        if c.agent == "offline":
            children = [child for plan in plans for child in self._knob_children(*plan)]
        else:
            children = self._episode_children(plans)
        pending = [ch for ch in children if ch["status"] == "" and ch["result"] is None]
        futures = [(ch, time.monotonic(), self.pool.submit(self._request(ch["sha"]))) for ch in pending]
        for ch, t0, future in futures:
            ch["result"] = future.result()
            ch["wall_s"] = time.monotonic() - t0
        st["evaluations"] += len(pending)
        self._commit(g, children)
        if any(ch["result"] is not None and ch["result"].stop_met and ch["status"] != "other_gpu" for ch in children):
            return "stop_condition_met"
        if not any(ch["status"] != "rejected" for ch in children):
            return "exhausted"              # every mutation of every slot was rejected: nothing new to try
        return ""

    def _knob_children(self, slot: int, parent: Member, question) -> list[dict]:
        """Offline mutation: one-knob changes, the question's layer first, until one passes the novelty filter
        (at most mutation_tries; every rejected attempt is a lineage row)."""
        out, source = [], self._source(parent.sha)
        moves = knob_mutations(source, question.layer, self.rng)
        if not moves:
            return [{"slot": slot, "attempt": 0, "parent": parent, "question": question, "result": None,
                     "status": "rejected", "reason": "no_mutation", "sha": "", "mutation": "the kernel has no knobs",
                     "wall_s": None}]
        for attempt, (text, mutation) in enumerate(moves[: self.config.mutation_tries]):
            child = {"slot": slot, "attempt": attempt, "parent": parent, "question": question, "result": None,
                     "status": "", "reason": "", "sha": "", "mutation": mutation, "wall_s": None}
            out.append(self._admit(child, text, parent, source))
            if child["status"] == "":
                break
        return out

    def _admit(self, child: dict, text: str, parent: Member, parent_text: str) -> dict:
        """Novelty filter, then the child is saved as an artifact (rejected children too: they can be read)."""
        child["sha"] = self.ws.save_artifact(text)
        verdict = novelty_verdict(text, parent_text, parent.deleted, set(self.state["seen"]))
        if verdict:
            child["status"], child["reason"] = "rejected", verdict
        else:
            self.state["seen"].append(normalized_sha(text))
        return child

    def _episode_children(self, plans: list) -> list[dict]:
        """LLM mutation: one short campaign per child slot, side by side; novelty is judged afterwards, in slot
        order, on the kernel each episode ends with (its best correct version when it found one)."""
        with ThreadPoolExecutor(max(1, min(len(plans), getattr(self.pool, "slots", 1)))) as episodes:
            finished = list(episodes.map(lambda plan: self._episode(*plan), plans))
        children = []
        for (slot, parent, question), (text, mutation, known) in zip(plans, finished):
            child = {"slot": slot, "attempt": 0, "parent": parent, "question": question, "result": None,
                     "status": "", "reason": "", "sha": "", "mutation": mutation, "wall_s": None}
            self._admit(child, text, parent, self._source(parent.sha))
            if child["status"] == "" and child["sha"] in known:
                child["result"] = known[child["sha"]]         # the episode already judged it on this pool
            children.append(child)
        return children

    def _episode(self, slot: int, parent: Member, question) -> tuple[str, str, dict]:
        from workbench.agent.backends import make_backend
        from workbench.agent.loop import Campaign
        from workbench.campaign.config import Budget, CampaignConfig
        from workbench.campaign.events import InterventionFired, MessageDone

        c = self.config
        g = self.state["generation"] + 1
        cid = f"g{g:03d}-s{slot:02d}-{uuid.uuid4().hex[:4]}"
        config = CampaignConfig(kernel_path=str(self.ws.artifacts_dir / f"{parent.sha}.cu"), suite=c.suite,
                                mode="tools_only", stop_expr=c.stop_expr, agent=c.agent, model=c.model,
                                campaign_id=cid, root=str(self.ws.root / "episodes"), anchors=list(c.anchors),
                                budget=Budget(turns=c.episode_turns, tool_calls=c.episode_tool_calls),
                                seed=c.seed + g * 1000 + slot, arm="evolve-episode", problem=c.problem)
        backend = self.backend_factory() if self.backend_factory else make_backend(c.agent, model=c.model, seed=c.seed)
        campaign = Campaign.create(config, backend, evaluator=self.pool.evaluator)
        known = {}
        campaign.subscribe(lambda e: known.__setitem__(e.kernel_sha, e.result) if isinstance(e, EvaluationDone)
                           else None)
        score = f"x{parent.score:.3f}" if parent.score else "unknown"
        hint = EPISODE_HINT.format(score=score, question=question.text)
        content = [{"type": "text", "text": hint}]
        campaign.messages = [{"role": "user", "content": content}]   # the question opens the conversation
        campaign.last_message_id = f"user_{cid}_00000"
        campaign.bus.publish(MessageDone(turn=0, message_id=campaign.last_message_id, parent_id="", role="user",
                                         content=content))
        fired = InterventionFired(turn=0, tool_index=0, intervention_id=uuid.uuid4().hex[:12], trigger="evolve",
                                  source="bank", question_id=question.id, text=question.text, layer=question.layer,
                                  reason="mutation hint", best_before=parent.score)
        campaign.questions.append(fired.to_dict())       # an agent that steers by the question's layer sees it
        campaign.bus.publish(fired)
        stopped = campaign.run()
        with self._lock:
            self.state["tokens"] += stopped.tokens
            self.state["cost_usd"] += stopped.cost_usd or 0.0
            self.state["evaluations"] += len(known)
        if stopped.best_sha:
            text = campaign.ws.artifact_path(stopped.best_sha).read_text()
        else:
            text = campaign.ws.kernel_path.read_text()
        return text, f"episode {cid}: {stopped.turn} turns, {stopped.tool_calls} tool calls, {stopped.reason}", known

    # ---- selection and records ---------------------------------------------------------------------------
    def _commit(self, g: int, children: list) -> None:
        """Selection, then the generation's rows: evaluations (via the recorder), lineage, and the state."""
        st = self.state
        lineage, survivors_before = [], [Member(**m) for m in st["population"]]
        fresh = []
        for ch in children:
            r = ch["result"]
            parent: Optional[Member] = ch["parent"]
            row = {"generation": g, "slot": ch["slot"], "attempt": ch["attempt"], "child_sha": ch["sha"] or None,
                   "parent_sha": parent.sha if parent else None, "mutation": ch["mutation"],
                   "question_id": ch["question"].id if ch["question"] else None,
                   "question_layer": ch["question"].layer if ch["question"] else None,
                   "question_text": ch["question"].text if ch["question"] else None,
                   "parent_geomean_vs_original": parent.score if parent else None,
                   "status": ch.get("status") or "evaluated", "reject_reason": ch.get("reason") or None,
                   "ts": _utc(time.time()), "eval_wall_s": ch.get("wall_s")}
            if r is not None:
                r.eval_id = r.eval_id or uuid.uuid4().hex[:12]     # stand-in evaluators leave it empty
                figures = run_figures(r, self.main_anchor)
                score = figures["geomean_vs_original"] if r.all_correct else None
                vs_fa3 = figures["geomean_vs_fa3"]
                if st["gpu"] and r.status == "evaluated" and r.gpu and r.gpu != st["gpu"]:
                    row["status"] = ch["status"] = "other_gpu"    # never compared with the run's GPU model
                    score = None
                is_new_best = score is not None and (st["best"] is None or score > self.config.min_gain * st["best"])
                if is_new_best:
                    st["best"], st["best_vs_fa3"], st["best_sha"] = score, vs_fa3, ch["sha"]
                    st["best_vs_main"] = figures["geomean_vs_main"]
                deleted = []
                if parent is not None:
                    added, removed = line_changes(self._source(parent.sha), self._source(ch["sha"]))
                    deleted = sorted((set(parent.deleted) - set(added)) | set(removed))
                member = Member(sha=ch["sha"], generation=g, parent_sha=parent.sha if parent else "",
                                question_id=ch["question"].id if ch["question"] else "", score=score,
                                vs_fa3=vs_fa3, deleted=deleted)
                st["members"][ch["sha"]] = asdict(member)
                if score is not None:
                    fresh.append(member)
                row.update(eval_id=r.eval_id, all_correct=r.all_correct, geomean_vs_original=figures[
                    "geomean_vs_original"], geomean_vs_fa3=vs_fa3, is_new_best=is_new_best,
                    improved_on_parent=bool(score is not None and parent and parent.score
                                            and score > self.config.min_gain * parent.score),
                    stop_met=bool(r.stop_met), host=r.versions.get("host"), gpu=r.gpu or None,
                    device=r.versions.get("device"), is_standin=is_standin_result(r.kernel_path, r.gpu, r.versions))
                self.recorder(EvaluationDone(turn=g, call_id=f"g{g}-s{ch['slot']}-a{ch['attempt']}",
                                             tool_index=st["evaluations"], eval_id=r.eval_id,
                                             kernel_sha=ch["sha"], result=r, **figures,
                                             best_vs_original=st["best"], best_vs_fa3=st["best_vs_fa3"],
                                             is_new_best=is_new_best, main_anchor=self.main_anchor,
                                             best_vs_main=st["best_vs_main"]))
                self.log(_child_line(g, row, st["best"]))
            elif row["status"] == "rejected":
                self.log(_child_line(g, row, st["best"]))
            row["best_so_far"] = st["best"]
            lineage.append(row)
        ranked = {m.sha: m for m in sorted(survivors_before + fresh, key=lambda m: (-m.score, m.generation, m.sha))}
        st["population"] = [asdict(m) for m in list(ranked.values())[: self.config.population]]
        alive = {m["sha"] for m in st["population"]}
        for row in lineage:
            row["survived"] = row["child_sha"] in alive and row["status"] == "evaluated"
        self.recorder(TurnCommitted(turn=g, tool_index=st["evaluations"], tokens=st["tokens"], cost_usd=st["cost_usd"]))
        from workbench.traces.writer import TraceWriter
        TraceWriter(self.traces_root, self.config.run_id).append("lineage", lineage)
        st["generation"] = g


def _child_line(g: int, row: dict, best) -> str:
    q = f"{row['question_id']} {row['question_layer']}" if row.get("question_id") else "seed"
    if row["status"] == "rejected":
        return f"  g{g} s{row['slot']} [{q}] {row['mutation']}: rejected ({row['reject_reason']})"
    x = row.get("geomean_vs_original")
    figure = f"x{x:.3f}" if x is not None else "-"
    verdict = "all correct" if row.get("all_correct") else "NOT all correct"
    star = "  NEW BEST" if row.get("is_new_best") else ""
    tag = " (other GPU model: not compared)" if row["status"] == "other_gpu" else ""
    return f"  g{g} s{row['slot']} [{q}] {row['mutation']}: {figure} vs original, {verdict}{tag}{star}"


def _jsonable(value):
    return [_jsonable(v) for v in value] if isinstance(value, (tuple, list)) else value


def _rng_state(value):
    return tuple(tuple(v) if isinstance(v, list) else v for v in value) if value else random.Random(0).getstate()


def _trim_lineage(root: Path, run_id: str, committed: int) -> None:
    from workbench.traces.schema import LINEAGE
    from workbench.traces.writer import trim_parts

    trim_parts(root, "lineage", run_id, "generation", committed, keep_null=False, schema=LINEAGE)
