"""The offline agent: a scripted baseline with no LLM that really edits the kernel.

It reads the knobs a kernel declares on its #define lines (`workbench.knobs`),

    #define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}          (optional: layer=pipelining)

and searches them through the same tools an LLM gets: measure the start, then change one knob at a time
around the best configuration (edit_file + run_harness), revert to the best (revert) when a change did not
help, then pairs of knobs, then the rest of the grid. Questions steer it the only way a script can be
steered: each bank question names a layer, each knob maps to a layer (by name, or `layer=` on its line), and
the knobs of the last question's layer are tried first; a `measurement` question makes it re-measure the
best. When the moves around the best are used up it claims a plateau, as agents do, and keeps going only when
the campaign continues. Useful as the embedded default without an API key, as the comparison arm, and for
demos; it is not an optimiser to be proud of.
"""
from __future__ import annotations

import itertools
import json
from typing import Optional

from workbench.agent.backends.turns import AssistantTurn, TurnRequest
from workbench.campaign.events import Usage
from workbench.knobs import parse_knobs

def _key(config: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())


class ScriptedAgent:
    name = "offline"
    model = "scripted-baseline"

    def __init__(self, seed: int = 0, kernel_file: str = "kernel.cu"):
        self.kernel_file = kernel_file
        self.s = {"knobs": None, "current": None, "best": None, "best_score": None, "best_sha": "",
                  "tried": {}, "pending": [], "questions_seen": 0, "focus": "", "focus_qid": "",
                  "remeasured_for": "", "plateau_claimed": "", "calls": 0}

    # ---- turn ------------------------------------------------------------------------------------------
    def next_turn(self, request: TurnRequest, on_text) -> AssistantTurn:
        s = self.s
        self._absorb(request.messages[-1] if request.messages else {})
        if len(request.questions) > s["questions_seen"]:
            q = request.questions[-1]
            s["questions_seen"] = len(request.questions)
            s["focus"], s["focus_qid"] = (q.layer if hasattr(q, "layer") else q.get("layer", "")) or "", (
                q.question_id if hasattr(q, "question_id") else q.get("question_id", ""))
        if s["knobs"] is None:
            return self._emit(request.turn, on_text, "I will read the kernel's declared knobs and measure the "
                              "starting point.", [self._call("read_file", path=self.kernel_file),
                                                  self._call("run_harness", path=self.kernel_file)],
                              [{"kind": "read"}, {"kind": "run", "config": None}])
        if not s["knobs"]:
            return self._emit(request.turn, on_text, "This kernel declares no `@knob` lines, so the scripted "
                              "agent has nothing it can change; I am done.", [], [])
        plan = self._plan()
        if plan is None:
            best = f"x{s['best_score']:.3f}" if s["best_score"] else "none correct"
            return self._emit(request.turn, on_text, f"Every declared knob combination has been measured "
                              f"({len(s['tried'])} configurations, best {best} vs original). This is the limit "
                              "of what the declared knobs can reach; I am done.", [], [])
        config, why = plan
        if config is None:      # a plateau around the best, claimed once before moving further out
            return self._emit(request.turn, on_text, why, [], [])
        calls, pending = self._moves_to(config)
        calls.append(self._call("run_harness", path=self.kernel_file))
        pending.append({"kind": "run", "config": config})
        return self._emit(request.turn, on_text, why, calls, pending)

    # ---- reading the previous turn's tool results --------------------------------------------------------
    def _absorb(self, message: dict) -> None:
        s = self.s
        results = {b["tool_use_id"]: b for b in message.get("content", []) if isinstance(b, dict)
                   and b.get("type") == "tool_result"}
        for item in s["pending"]:
            block = results.get(item["id"])
            if block is None:
                continue
            text = _result_text(block)
            if item["kind"] == "read" and not block.get("is_error"):
                knobs = parse_knobs(text)
                s["knobs"] = {n: {k: v for k, v in d.items() if k != "value"} for n, d in knobs.items()}
                s["current"] = {n: d["value"] for n, d in knobs.items()}
            elif item["kind"] == "edit" and block.get("is_error"):
                s["knobs"] = None          # the file is not what we think: read it again
            elif item["kind"] == "revert" and not block.get("is_error"):
                s["current"] = dict(s["best"])
            elif item["kind"] == "run":
                if block.get("is_error") and text.startswith("not run"):
                    continue               # the budget stopped it: the configuration was never measured
                config = item["config"] or s["current"]
                summary = _result_json(text)
                score = summary.get("geomean_vs_original") if summary.get("all_correct") else None
                if config is None:
                    continue
                s["tried"][_key(config)] = score
                if score is not None and (s["best_score"] is None or score > s["best_score"]):
                    s["best"], s["best_score"], s["best_sha"] = dict(config), score, summary.get("kernel_sha", "")
                elif s["best"] is None:
                    s["best"] = dict(config)
                    s["best_sha"] = summary.get("kernel_sha", "")
        s["pending"] = []

    # ---- choosing the next configuration --------------------------------------------------------------
    def _plan(self) -> Optional[tuple]:
        s = self.s
        knobs, best = s["knobs"], s["best"] or s["current"]
        focus = s["focus"]
        order = sorted(knobs, key=lambda n: (knobs[n]["layer"] != focus, list(knobs).index(n)))
        tag = f" (question {s['focus_qid']} points at {focus})" if s["focus_qid"] else ""
        if focus == "measurement" and s["remeasured_for"] != s["focus_qid"] and s["best"]:
            s["remeasured_for"] = s["focus_qid"]
            s["tried"].pop(_key(best), None)
            return dict(best), f"Re-measuring the best configuration {_key(best)} to see whether its lead is " \
                               f"outside the timing noise{tag}."
        untried = lambda c: _key(c) not in s["tried"]

        def neighbours(width: int):
            for names in itertools.combinations(order, width):
                for values in itertools.product(*[[v for v in knobs[n]["choices"] if v != best[n]] for n in names]):
                    cand = dict(best)
                    cand.update(zip(names, values))
                    if untried(cand):
                        yield cand
        single = next(neighbours(1), None)
        if single:
            changed = [n for n in knobs if single[n] != best[n]]
            return single, f"Trying {', '.join(f'{n}={single[n]}' for n in changed)} around the best " \
                           f"configuration{tag}."
        if s["plateau_claimed"] != _key(best) and len(s["tried"]) > 1:
            s["plateau_claimed"] = _key(best)
            return None, (f"No single-knob change beats {_key(best)} (x{s['best_score'] or 0:.3f} vs original); "
                          "the kernel is at its optimal configuration, I am done.")
        for width in range(2, len(knobs) + 1):
            cand = next(neighbours(width), None)
            if cand:
                changed = [n for n in knobs if cand[n] != best[n]]
                return cand, f"Trying {', '.join(f'{n}={cand[n]}' for n in changed)} together{tag}."
        return None

    def _moves_to(self, config: dict) -> tuple[list, list]:
        s = self.s
        if config == s["best"] and s["best_sha"] and s["current"] != config:
            return [self._call("revert", sha=s["best_sha"])], [{"kind": "revert"}]
        calls, pending = [], []
        for name, value in config.items():
            if s["current"][name] != value:
                k = s["knobs"][name]
                old = f"{k['prefix']}{s['current'][name]}{k['rest']}"
                new = f"{k['prefix']}{value}{k['rest']}"
                calls.append(self._call("edit_file", path=self.kernel_file, old_string=old, new_string=new))
                pending.append({"kind": "edit"})
        s["current"] = dict(config)
        return calls, pending

    # ---- output --------------------------------------------------------------------------------------
    def _call(self, name: str, **input) -> dict:
        self.s["calls"] += 1
        return {"type": "tool_use", "id": f"toolu_offline_{self.s['calls']:05d}", "name": name, "input": input}

    def _emit(self, turn: int, on_text, text: str, calls: list, pending: list) -> AssistantTurn:
        self.s["pending"] = [dict(p, id=c["id"]) for p, c in zip(pending, calls)]
        on_text(0, text)
        content = [{"type": "text", "text": text}] + calls
        return AssistantTurn(content, "tool_use" if calls else "end_turn", Usage(), self.model,
                             f"msg_offline_{turn:05d}", 0.0)

    def snapshot(self) -> dict:
        return json.loads(json.dumps(self.s))

    def restore(self, snap: dict) -> None:
        self.s = json.loads(json.dumps(snap))


def _result_text(block: dict) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content)


def _result_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("RESULT_JSON "):
            try:
                return json.loads(line[len("RESULT_JSON "):])
            except ValueError:
                return {}
    return {}
