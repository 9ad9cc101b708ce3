"""The text an outside agent reads from its campaign: the question block, the stop line, the status, the bank and
the suite. Plain functions of the campaign's figures (campaign_service.py holds the state).
"""
from __future__ import annotations

import json

from workbench.campaign.main_anchor import LEGACY_MAIN, label, recorded_best
from workbench.questions.policy import Inquiry

QUESTION_OPEN, QUESTION_CLOSE = "=== QUESTION", "=== END QUESTION ==="
NO_WALL_LIMIT_S = 30 * 86400            # a wall budget longer than this is not worth stating


def _x(value) -> str:
    return f"x{value:.3f}" if isinstance(value, (int, float)) and value == value else "-"


def question_block(inquiry: Inquiry) -> str:
    """The question as a marked block after a result, so an agent (and a transcript importer) cannot miss it."""
    if inquiry.source == "human":
        origin = "from a person" + (f"; trigger {inquiry.trigger}" if inquiry.trigger != "human" else "")
    else:
        origin = f"{inquiry.trigger}; from the question bank" + \
                 (f", {inquiry.question_id}" if inquiry.question_id else "") + \
                 (f", layer {inquiry.layer}" if inquiry.layer else "")
    lines = [f"{QUESTION_OPEN} ({origin}) ===", inquiry.text]
    if inquiry.reason and inquiry.reason != "a person asked":
        lines.append(f"(asked because: {inquiry.reason})")
    return "\n".join(lines + ["Settle it with a measurement before your next change.", QUESTION_CLOSE])


def status_line(s: dict) -> str:
    """The line every reply ends with: only the stop condition says the campaign is done."""
    vs_main = recorded_best(s, s.get("main_anchor") or LEGACY_MAIN)      # a status without main_anchor: FA3's
    best = (f"best {_x(s['best_vs_original'])} vs original, {_x(vs_main)} vs {label(s.get('main_anchor'))} "
            f"(kernel {s['best_sha'][:12]})" if s["best_sha"] else "no all-correct run yet")
    verdict = "MET: the campaign is done" if s["stop_met"] else "not met: the campaign goes on"
    return (f"campaign {s['campaign_id']}: {s['harness_runs']} harness run(s), {best}; stop condition "
            f"({s['stop_expr'] or 'none'}): {verdict}")


def status_text(s: dict) -> str:
    q, left = s["last_question"], s["budget_left"]
    asked = (f"({q['trigger']}, {q['source']}{' ' + q['question_id'] if q['question_id'] else ''}) {q['text']}"
             if q else "none yet")
    wall = f", {left['wall_s'] / 3600:.1f} h" if left["wall_s"] < NO_WALL_LIMIT_S else ""
    return "\n".join([
        f"campaign {s['campaign_id']} (mode {s['mode']}, suite {s['suite']}); workspace {s['workspace']}, "
        f"edit {s['kernel']}",
        f"harness runs: {s['harness_runs']}; tool calls: {s['tool_calls']}; budget left: {left['tool_calls']} tool "
        f"calls{wall}",
        f"last question: {asked}", f"a person's questions waiting: {s['questions_waiting']}", status_line(s)])


def bank_text(bank: list, mode: str, trigger: str = "") -> str:
    shown = [q for q in bank if not trigger or q.trigger in (trigger, "any")]
    lines = [f"{q.id:<6} {q.trigger:<10} {q.layer:<24} {q.text}" for q in shown]
    return "\n".join(lines + [f"{len(shown)} of {len(bank)} questions (campaign mode {mode})"])


def suite_text(name: str, scenarios: list) -> str:
    lines = [f"{'name':<28} {'B':>3} {'Hq':>4} {'Hkv':>4} {'Sq':>6} {'Sk':>6} {'D':>4} causal"]
    lines += [f"{s.name:<28} {s.batch:>3} {s.heads_q:>4} {s.heads_kv:>4} {s.seqlen_q:>6} {s.seqlen_k:>6} "
              f"{s.head_dim:>4} {str(bool(s.causal)).lower()}" for s in scenarios]
    return "\n".join(lines + [f"suite {name}: {len(scenarios)} scenarios"])


def result_line(result, campaign_id: str) -> str:
    """The harness's machine-readable `workbench-result:` line, with the campaign's id: what an importer of the
    agent's own transcript finds the run by (traces/join.py links the transcript to the campaign through it)."""
    from workbench.harness.result_line import RESULT_PREFIX, result_record

    record = result_record(result) | {"campaign_id": campaign_id}
    return f"{RESULT_PREFIX} {json.dumps(record, separators=(', ', ': '), allow_nan=False)}"
