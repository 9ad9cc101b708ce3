"""`workbench evolve`: a population of kernels, mutated with bank questions as hints, judged over a pool.

    workbench evolve --kernel kernels/attn_fwd/ladder/02_mma.cu --suite dev26 --population 4 --generations 3
    workbench evolve --resume 20261130-120000-evolve-1a2b --generations 6

One generation: parents are chosen by tournament (the best geomean vs the original among `tournament` correct
members drawn at random); each child gets a question from the bank as its hint. With the offline agent the
mutation is one knob change, the knob taken from the question's layer where the kernel has one; with an LLM
it is a short agent episode (a campaign of a few turns) that starts from the parent's source with the question
as its opening message. Before anything is evaluated, the novelty filter rejects a child whose normalised
source was seen before, or whose only additions are lines its lineage deleted. The children are judged side by
side on the pool; the best `population` correct kernels (parents included) survive.

Records (evolutions/<id>/): artifacts/<sha>.cu, config.json, state/evolution.json after every generation (the
resume point), and trace tables under traces/ (or --traces): one `sessions` row for the run, `evaluations` rows
(turn = generation), and one `lineage` row per child, evaluated or rejected: parent sha, question, result.
The run stops when a child meets the stop predicate, after the last generation, or when a budget runs out.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from workbench import __version__
from workbench.agent.events import CampaignStarted, CampaignStopped, EvaluationDone, TurnCommitted
from workbench.agent.questions import DEFAULT_BANK, load_bank
from workbench.agent.recorder import TraceRecorder, trim_uncommitted
from workbench.agent.workspace import Workspace, WorkspaceError
from workbench.harness.result import CheckRequest

DEFAULT_KERNEL = "kernels/attn_fwd/original.cu"
DEFAULT_STOP = "all_correct and geomean_vs_fa3 >= 1.0"
STATE_FILE = "state/evolution.json"
EPISODE_HINT = ("This is one short episode of an evolutionary search. kernel.cu is a parent kernel (geomean {score} "
                "against the original). Consider this question before you change anything:\n\n{question}\n\n"
                "Make one focused change that the question suggests, check it with run_harness, and stop.")


@dataclass
class EvolveConfig:
    kernel_path: str = DEFAULT_KERNEL
    suite: str = "dev26"
    population: int = 4
    generations: int = 5
    children: int = 0                   # children per generation (0: the population size)
    tournament: int = 2
    agent: str = "offline"              # offline: knob mutations; claude | fake | ...: agent episodes
    model: str = ""
    evaluator: str = "harness"          # harness | standin (made-up CPU timings from the knobs)
    pool: str = "local"
    ray_address: str = ""
    slots: int = 0
    stop_expr: str = DEFAULT_STOP
    anchors: list = field(default_factory=lambda: ["fa3"])
    max_evaluations: int = 0            # 0: no limit
    wall_s: float = 0.0
    usd: float = 0.0
    min_gain: float = 1.02              # a child beats a geomean only by more than this factor (timing noise:
                                        # see PolicyConfig.min_gain)
    mutation_tries: int = 6             # offline: attempts per child slot before giving it up
    episode_turns: int = 6
    episode_tool_calls: int = 12
    seed: int = 0
    root: str = "evolutions"
    run_id: str = ""
    traces: str = ""                    # trace root (default: <root>/<run_id>/traces)
    bank_path: str = str(DEFAULT_BANK)

    @classmethod
    def from_dict(cls, data: dict) -> "EvolveConfig":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Member:
    """An evaluated kernel of the run (the population holds the correct ones)."""
    sha: str
    generation: int
    parent_sha: str = ""
    question_id: str = ""
    score: Optional[float] = None       # geomean vs original when all scenarios passed
    vs_fa3: Optional[float] = None
    deleted: list = field(default_factory=list)   # normalised lines its lineage deleted (novelty filter)


# ---- novelty filter ----------------------------------------------------------------------------------------
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")


def normalized_lines(source: str) -> list[str]:
    """The source without comments, blank lines and whitespace differences, one statement line per item."""
    text = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", source))
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def normalized_sha(source: str) -> str:
    return hashlib.sha256("\n".join(normalized_lines(source)).encode()).hexdigest()


def line_changes(parent: str, child: str) -> tuple[list, list]:
    """(added, removed) normalised lines of child against parent, as multisets."""
    a, b = Counter(normalized_lines(parent)), Counter(normalized_lines(child))
    return sorted((b - a).elements()), sorted((a - b).elements())


def novelty_verdict(child: str, parent: str, parent_deleted, seen: set) -> str:
    """'' when the child is new; else why it is rejected before evaluation."""
    if normalized_sha(child) in seen:
        return "identical_source"
    added, _ = line_changes(parent, child)
    if added and set(added) <= set(parent_deleted):
        return "readds_deleted_lines"
    return ""


# ---- offline mutation: one knob, from the question's layer -------------------------------------------------
def knob_mutations(source: str, layer: str, rng: random.Random) -> list[tuple[str, str]]:
    """Every one-knob change of a kernel as (child source, description), in an order drawn from `rng`: the knobs
    of the question's layer first, then the rest (a question whose layer has no knob gets any knob)."""
    from workbench.knobs import parse_knobs

    knobs = parse_knobs(source)
    moves = {True: [], False: []}
    for name, knob in knobs.items():
        for value in knob["choices"]:
            if value != knob["value"]:
                moves[knob["layer"] == layer].append((name, value))
    out = []
    for in_layer in (True, False):
        rng.shuffle(moves[in_layer])
        for name, value in moves[in_layer]:
            knob = knobs[name]
            old = f"{knob['prefix']}{knob['value']}{knob['rest']}"
            note = "" if in_layer else f" (no {layer} knob)" if not moves[True] else " (outside the layer)"
            out.append((source.replace(old, f"{knob['prefix']}{value}{knob['rest']}", 1),
                        f"knob {name} {knob['value']}->{value}{note}"))
    return out


def _finite(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


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
        self.state = {"generation": -1, "population": [], "members": {}, "seen": [], "best_sha": "",
                      "best": None, "best_vs_fa3": None, "evaluations": 0, "elapsed_s": 0.0, "tokens": 0,
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
            evo.state.update(json.loads(path.read_text()))
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
                                      turn=max(st["generation"], 0)))
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
                                      tokens=st["tokens"], cost_usd=st["cost_usd"], wall_s=st["elapsed_s"]))
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
                            anchors=tuple(c.anchors), stop_expr=c.stop_expr, previous_best=self.state["best"])

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
        from workbench.agent.events import InterventionFired, MessageDone
        from workbench.agent.loop import Budget, Campaign, CampaignConfig

        c = self.config
        g = self.state["generation"] + 1
        cid = f"g{g:03d}-s{slot:02d}-{uuid.uuid4().hex[:4]}"
        config = CampaignConfig(kernel_path=str(self.ws.artifacts_dir / f"{parent.sha}.cu"), suite=c.suite,
                                mode="tools_only", stop_expr=c.stop_expr, agent=c.agent, model=c.model,
                                campaign_id=cid, root=str(self.ws.root / "episodes"), anchors=list(c.anchors),
                                budget=Budget(turns=c.episode_turns, tool_calls=c.episode_tool_calls),
                                seed=c.seed + g * 1000 + slot, arm="evolve-episode")
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
                variables = r.stop_variables() if r.rows else {}
                score = _finite(variables.get("geomean_vs_original")) if r.all_correct else None
                vs_fa3 = _finite(variables.get("geomean_vs_fa3"))
                if st["gpu"] and r.status == "evaluated" and r.gpu and r.gpu != st["gpu"]:
                    row["status"] = ch["status"] = "other_gpu"    # never compared with the run's GPU model
                    score = None
                is_new_best = score is not None and (st["best"] is None or score > self.config.min_gain * st["best"])
                if is_new_best:
                    st["best"], st["best_vs_fa3"], st["best_sha"] = score, vs_fa3, ch["sha"]
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
                row.update(eval_id=r.eval_id, all_correct=r.all_correct, geomean_vs_original=_finite(
                    variables.get("geomean_vs_original")), geomean_vs_fa3=vs_fa3, is_new_best=is_new_best,
                    improved_on_parent=bool(score is not None and parent and parent.score
                                            and score > self.config.min_gain * parent.score),
                    stop_met=bool(r.stop_met), host=r.versions.get("host"), gpu=r.gpu or None,
                    device=r.versions.get("device"))
                self.recorder(EvaluationDone(turn=g, call_id=f"g{g}-s{ch['slot']}-a{ch['attempt']}",
                                             tool_index=st["evaluations"], eval_id=r.eval_id,
                                             kernel_sha=ch["sha"], result=r,
                                             geomean_vs_original=row["geomean_vs_original"], geomean_vs_fa3=vs_fa3,
                                             best_vs_original=st["best"], best_vs_fa3=st["best_vs_fa3"],
                                             is_new_best=is_new_best))
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


# ---- frames for tables and figures (notebooks/04_evolution) ---------------------------------------------------
def lineage_frame(traces_root, run_id: str | None = None):
    from workbench.traces.writer import read_table
    frame = read_table(traces_root, "lineage", run_id)
    return frame.sort_values(["session_id", "generation", "slot", "attempt"]).reset_index(drop=True)


def progress_frame(lineage):
    """Evaluated children in order: x (evaluation number), geomean, all_correct, best (so far), is_new_best,
    label (question id and layer of each new best)."""
    runs = lineage[lineage["status"].isin(["evaluated"])].copy().reset_index(drop=True)
    runs["x"] = range(len(runs))
    runs["geomean"] = runs["geomean_vs_original"]
    runs["best"] = runs["best_so_far"]
    runs["label"] = [f"{q} {l}" if isinstance(q, str) and new else ("seed" if new else "")
                     for q, l, new in zip(runs["question_id"], runs["question_layer"], runs["is_new_best"])]
    return runs


def question_gains(lineage):
    """Per bank question: children it produced, how many were rejected, correct, better than their parent, and
    new bests of the run -- the evolutionary twin of 02_intervention_statistics' gain attribution."""
    import pandas as pd
    kids = lineage[lineage["generation"] > 0]
    if not len(kids):
        return pd.DataFrame(columns=["question_id", "layer", "children", "rejected", "correct", "improved_on_parent",
                                     "new_best"])
    flag = lambda col: kids[col].fillna(False).astype(bool)
    frame = pd.DataFrame({"question_id": kids["question_id"], "layer": kids["question_layer"],
                          "rejected": kids["status"] == "rejected", "correct": flag("all_correct"),
                          "improved_on_parent": flag("improved_on_parent"), "new_best": flag("is_new_best")})
    out = frame.groupby(["question_id", "layer"]).agg(children=("rejected", "size"), rejected=("rejected", "sum"),
                                                      correct=("correct", "sum"),
                                                      improved_on_parent=("improved_on_parent", "sum"),
                                                      new_best=("new_best", "sum")).reset_index()
    return out.sort_values(["new_best", "improved_on_parent", "children"], ascending=False).reset_index(drop=True)


def footer_for(lineage, suite: str = "") -> str:
    """Where the numbers of a lineage came from, for the foot of every figure."""
    gpus = sorted(set(lineage["gpu"].dropna())) if len(lineage) else []
    where = f" on {suite}" if suite else ""
    if gpus == ["stand-in (CPU)"]:
        return (f"CPU stand-in evaluator{where}: made-up timings from the kernel's @knob values "
                "(workbench.agent.standin), not a measurement. Geomean speedup vs original.cu.")
    return (f"{', '.join(gpus) or 'no GPU recorded'}{where}: workbench harness (CUDA events, L2 flushed, median "
            "of repeats, rotating inputs); geomean speedup vs original.cu over the suite's scenarios.")


def population_frame(run_dir):
    """The current population of a run folder, best first."""
    import pandas as pd
    state = json.loads((Path(run_dir) / STATE_FILE).read_text())
    rows = [{"rank": i + 1, "sha": m["sha"][:12], "generation": m["generation"], "x_original": m["score"],
             "x_fa3": m["vs_fa3"], "parent": (m["parent_sha"] or "")[:12], "question": m["question_id"]}
            for i, m in enumerate(state["population"])]
    return pd.DataFrame(rows, columns=["rank", "sha", "generation", "x_original", "x_fa3", "parent", "question"])


# ---- CLI -----------------------------------------------------------------------------------------------------
def _parse_budget(text: str) -> dict:
    out = {}
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip().lower().lstrip("$")
        if not sep or key not in ("evaluations", "evals", "wall", "usd"):
            raise ValueError(f"budget item {item!r}: use evaluations=N, wall=2h|30m|90s, usd=X")
        if key in ("evaluations", "evals"):
            out["max_evaluations"] = int(float(value))
        elif key == "usd":
            out["usd"] = float(value)
        else:
            scale = {"h": 3600.0, "m": 60.0, "s": 1.0}.get(value[-1:])
            out["wall_s"] = float(value[:-1]) * scale if scale else float(value)
    return out


def make_inner_evaluator(name: str):
    if name == "standin":
        from workbench.agent.standin import KnobEvaluator
        return KnobEvaluator()
    return None


def evolve_main(argv: list[str] | None = None) -> int:
    from workbench.pool import PoolError, add_pool_arguments, make_pool

    parser = argparse.ArgumentParser(prog="workbench evolve", description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default=None, help=f"seed kernel (default {DEFAULT_KERNEL})")
    parser.add_argument("--suite", default=None, help="suite name or CSV (default dev26)")
    parser.add_argument("--population", type=int, default=None, help="population size (default 4)")
    parser.add_argument("--generations", type=int, default=None, help="generations (default 5)")
    parser.add_argument("--children", type=int, default=None, help="children per generation (default: population)")
    parser.add_argument("--tournament", type=int, default=None, help="tournament size for parents (default 2)")
    parser.add_argument("--min-gain", type=float, default=None,
                        help="a child is a new best / better than its parent only by more than this factor "
                             "(default 1.02: timing noise)")
    parser.add_argument("--agent", default=None, help="offline (knob mutations, default) | claude (agent episodes)")
    parser.add_argument("--model", default="", help="model for --agent claude")
    parser.add_argument("--evaluator", choices=("harness", "standin"), default=None,
                        help="standin: made-up CPU timings from the kernel's knobs (dry runs, no GPU)")
    parser.add_argument("--stop", default=None, help=f"stop predicate (default: {DEFAULT_STOP})")
    parser.add_argument("--anchors", default=None, help="comma-separated anchors (default fa3)")
    parser.add_argument("--budget", default="", help="evaluations=N,wall=2h,usd=X")
    parser.add_argument("--episode-turns", type=int, default=None, help="turns of one agent episode (default 6)")
    parser.add_argument("--root", default="evolutions", help="where run folders live (default %(default)s)")
    parser.add_argument("--traces", default=None, help="trace root (default: the run folder's traces/)")
    parser.add_argument("--id", default="", help="run id (default: time-evolve-random)")
    parser.add_argument("--resume", metavar="ID", help="continue run ID after its last finished generation")
    parser.add_argument("--seed", type=int, default=None)
    add_pool_arguments(parser)
    args = parser.parse_args(argv)
    try:
        overrides = {k: v for k, v in {
            "kernel_path": args.kernel, "suite": args.suite, "population": args.population,
            "generations": args.generations, "children": args.children, "tournament": args.tournament,
            "min_gain": args.min_gain,
            "agent": args.agent, "evaluator": args.evaluator, "stop_expr": args.stop, "traces": args.traces,
            "anchors": None if args.anchors is None else [a for a in args.anchors.split(",") if a],
            "episode_turns": args.episode_turns, "seed": args.seed}.items() if v is not None}
        overrides.update(_parse_budget(args.budget))
        if args.min_gain is not None and not args.min_gain >= 1.0:
            raise ValueError(f"--min-gain {args.min_gain}: use a factor of at least 1.0 (1.02 = 2 %)")
        if args.model:
            overrides["model"] = args.model
        if args.resume:
            stored = EvolveConfig.from_dict(Workspace.open(args.root, args.resume).read_config())
            frozen = [k for k in ("kernel_path", "suite", "evaluator") if k in overrides
                      and overrides[k] != getattr(stored, k)]
            if frozen:
                raise ValueError(f"--resume keeps the run's {', '.join(frozen)}; start a new run to change them")
            config = EvolveConfig.from_dict({**asdict(stored), **overrides})
        else:
            config = EvolveConfig.from_dict({**overrides, "run_id": args.id, "root": args.root})
        config.pool, config.ray_address, config.slots = args.pool, args.ray_address or "", args.slots or 0
        if config.evaluator == "harness" and args.pool == "local":
            from workbench.pool import local_gpus
            if not local_gpus():
                raise ValueError("the harness needs a CUDA GPU to verify and time kernels and there is none here; "
                                 "use --pool ray --ray-address ADDR for a cluster, or --evaluator standin for a "
                                 "CPU dry run (made-up timings)")
        pool = make_pool(args.pool, ray_address=args.ray_address, slots=args.slots,
                         evaluator=make_inner_evaluator(config.evaluator))
    except (ValueError, WorkspaceError, PoolError) as err:
        print(f"workbench evolve: {err}", file=sys.stderr)
        return 2
    try:
        log = lambda line: print(line, flush=True)
        if args.resume:
            evo = Evolution.resume(args.resume, pool, root=args.root, overrides=asdict(config), log=log)
        else:
            evo = Evolution.create(config, pool, log=log)
        print(f"evolution {config.run_id}: {config.kernel_path} on {config.suite}, population {config.population}, "
              f"{config.generations} generations, agent {config.agent}, evaluator {config.evaluator}; "
              f"{pool.describe()}; records in {evo.ws.root}", flush=True)
        summary = evo.run()
    except (ValueError, WorkspaceError) as err:
        print(f"workbench evolve: {err}", file=sys.stderr)
        return 2
    finally:
        pool.close()
    return 130 if summary["reason"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(evolve_main())
