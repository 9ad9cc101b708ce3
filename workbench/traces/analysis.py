"""Intervention statistics over trace tables: which messages preceded the gains, and how much agents re-add.

Counting and joining run as DuckDB SQL over the parquet files; the rules that read text run in Python.
Every rule below is tested in tests/test_analysis.py on hand-counted fixtures.

**Human messages.** `messages` rows with `is_human` (typed by a person: not a tool result, not a sub-agent
prompt, not text the agent CLI injects), outside sidechains. Questions the campaign took from the question bank
(`interventions.source = 'bank'`) are steering messages too; a person's intervention is already a human message.

Text rules (message classes, layers, claimed limits) are in `rules.py`, the re-added-line rule in `edits.py`;
both docstrings are part of this description.

**Harness runs and gains.** A harness run is one `eval_id` (a failed build or verification is a run too; the
importers count a run the transcript shows several times once). Each session is scored on geomean ×FA3 when any
run of it has one, else on geomean ×original; tables keep the two metrics in separate columns, never one
column of both. Runs with `all_correct` false never count as a best. The first scored
run sets the starting best; a *gain event* is a run whose geomean is at least (1 + threshold) × the best so far
(default threshold 5 %); the best so far then moves to every new maximum, gain or not.
The message that *preceded* a gain is the last steering message after the previous gain (or the session start)
and before the run; "nothing" when there is none. Time and tool calls from a question to the next gain count
the tool calls that started after the question up to and including the run's own call.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.traces.edits import EDIT_TOOLS, EditTracker
from workbench.traces.rules import AGENT_WINDOW, CLASSES, claims_limit, classify_message, message_layer
from workbench.traces.views import TraceError, connect, readable_parts  # noqa: F401  (analysis.connect: notebooks)

GAIN_THRESHOLD = 0.05
ATTRIBUTIONS = CLASSES + ("nothing",)
# the import tally of each session (importers/common.py ImportTally), carried into the sessions table
IMPORT_COUNTS = ("import_lines", "malformed_lines", "duplicate_lines", "ignored_lines", "usage_duplicates",
                 "orphan_results", "injected_blocks", "harness_sightings", "harness_seen_again")


@dataclass
class Analysis:
    sessions: pd.DataFrame        # one row per session: counts, tokens, cost, best geomean, gains, re-added rate
    overall: dict                 # the same figures over all sessions
    steering: pd.DataFrame        # human messages and bank questions: class, layer, moved_layer, rejected_limit
    runs: pd.DataFrame            # harness runs: geomean, best so far, is_gain (the best-so-far curve)
    gains: pd.DataFrame           # gain events with the message that preceded them
    attribution: pd.DataFrame     # preceding class -> gains, share
    question_to_gain: pd.DataFrame   # per question: seconds and tool calls to the next gain
    edits: pd.DataFrame           # per edit call: added, re-added, deleted lines, cumulative rate
    arms: pd.DataFrame            # experiment arms side by side
    layers: pd.DataFrame          # questions per layer
    gain_threshold: float


def _query(con, sql: str) -> pd.DataFrame:
    return con.execute(sql).df()


def _calls_before(calls: dict, session_id: str, ts_us, side: str = "left") -> int:
    starts = calls.get(session_id)
    if starts is None or ts_us is None or pd.isna(ts_us):
        return 0
    return int(np.searchsorted(starts, ts_us, side=side))


def analyze(roots, gain_threshold: float = GAIN_THRESHOLD, progress=None, session_ids=None, warn=None) -> Analysis:
    """All statistics of the module docstring for the trace roots given (only `session_ids`, when given)."""
    say = progress or (lambda _msg: None)
    con = connect(roots, session_ids, warn)
    sessions = _query(con, """
        SELECT session_id, any_value(source) AS source, any_value(arm) AS arm, any_value(model) AS model,
               any_value(source_file) AS source_file, any_value(config_json) AS config_json, count(*) AS copies,
               min(started_at) AS started_at, max(ended_at) AS ended_at
        FROM sessions GROUP BY session_id ORDER BY session_id""")
    if sessions.empty:
        raise TraceError("no sessions found under the trace roots given (import transcripts first: workbench import)")
    if (sessions["copies"] > 1).any():
        dup = sessions.loc[sessions["copies"] > 1, "session_id"].iloc[0]
        raise TraceError(f"session {dup} appears more than once across the trace roots; pass each root once")
    imports = [_import_tally(c) for c in sessions["config_json"]]
    for col in IMPORT_COUNTS:
        sessions[col] = [t.get("lines" if col == "import_lines" else col, 0) for t in imports]
    sessions["import_files"] = [len(t.get("files") or []) for t in imports]
    sessions["injected_kinds"] = [", ".join(f"{k} {n}" for k, n in (t.get("injected") or {}).items()) or None
                                  for t in imports]
    sessions = sessions.drop(columns=["copies", "config_json"])

    say("counting messages, tokens and tool calls")
    msg_counts = _query(con, """
        SELECT session_id, count(*) AS message_rows,
               count(*) FILTER (WHERE is_sidechain) AS sidechain_rows,
               count(*) FILTER (WHERE is_human AND NOT coalesce(is_sidechain, false)) AS human_messages,
               coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
               coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens,
               coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
        FROM messages GROUP BY session_id""")
    call_counts = _query(con, """
        SELECT session_id, count(*) AS tool_calls, count(*) FILTER (WHERE is_error) AS tool_errors
        FROM tool_calls GROUP BY session_id""")
    calls = _query(con, """
        SELECT session_id, call_id, tool_index, epoch_us(started_at) AS start_us FROM tool_calls
        ORDER BY session_id, start_us, tool_index""")
    call_starts = {sid: g["start_us"].dropna().to_numpy() for sid, g in calls.groupby("session_id")}
    call_index = {(r.session_id, r.call_id): r.tool_index for r in calls.itertuples()}

    say("reading harness runs")
    runs = _query(con, """
        SELECT session_id, eval_id, any_value(call_id) AS call_id, any_value(kernel_sha) AS kernel_sha,
               epoch_us(min(ts)) AS ts_us, max(geomean_vs_fa3) AS geomean_vs_fa3,
               any_value(main_anchor) AS main_anchor, max(geomean_vs_main) AS geomean_vs_main,
               max(geomean_vs_original) AS geomean_vs_original, bool_and(all_correct) AS all_correct,
               count(*) AS rows
        FROM evaluations GROUP BY session_id, eval_id ORDER BY session_id, ts_us, eval_id""")

    say("classifying human messages")
    steering = _query(con, """
        SELECT session_id, message_id AS id, epoch_us(ts) AS ts_us, text, 'human' AS origin, NULL AS bank_layer,
               source_file, source_line
        FROM messages WHERE is_human AND NOT coalesce(is_sidechain, false) AND block_type = 'text'
        UNION ALL
        SELECT session_id, intervention_id, epoch_us(ts), question_text, 'bank', layer, source_file, source_line
        FROM interventions WHERE source = 'bank'
        ORDER BY session_id, ts_us""")
    steering["cls"] = [classify_message(t) for t in steering["text"]]
    steering["layer"] = [b if isinstance(b, str) and b else message_layer(t)
                         for b, t in zip(steering["bank_layer"], steering["text"])]
    steering = steering.drop(columns="bank_layer")
    agent = _query(con, """
        SELECT m.session_id, epoch_us(m.ts) AS ts_us, m.text FROM messages m
        WHERE m.role = 'assistant' AND m.block_type = 'text' AND NOT coalesce(m.is_sidechain, false)
          AND m.session_id IN (SELECT DISTINCT session_id FROM messages WHERE is_human)
        ORDER BY m.session_id, ts_us""")
    agent_by_session = {sid: (g["ts_us"].to_numpy(), g["text"].tolist()) for sid, g in agent.groupby("session_id")}
    agent_layers, claimed = [], []
    previous = {}
    for row in steering.itertuples():
        ts_arr, texts = agent_by_session.get(row.session_id, (np.array([]), []))
        hi = int(np.searchsorted(ts_arr, row.ts_us, side="left"))
        lo = int(np.searchsorted(ts_arr, previous.get(row.session_id, -np.inf), side="left"))
        window = "\n".join(t or "" for t in texts[max(lo, hi - AGENT_WINDOW):hi])
        agent_layers.append(message_layer(window))
        claimed.append(claims_limit(window))
        previous[row.session_id] = row.ts_us
    steering["agent_layer"] = agent_layers
    steering["agent_claimed_limit"] = claimed
    steering["moved_layer"] = [isinstance(a, str) and isinstance(b, str) and a != b
                               for a, b in zip(steering["layer"], steering["agent_layer"])]
    steering["rejected_limit"] = steering["agent_claimed_limit"] & steering["cls"].isin(["question", "directive"])
    steering["calls_before"] = [_calls_before(call_starts, s, t) for s, t in zip(steering["session_id"],
                                                                                 steering["ts_us"])]

    say("finding gain events")
    runs, gains = _gains(runs, steering, call_starts, call_index, gain_threshold)
    q_to_gain = _question_to_gain(steering, gains)

    say("counting re-added lines")
    edits = _edits(con, call_starts)

    say("per-session tables")
    table = sessions.merge(msg_counts, on="session_id", how="left").merge(call_counts, on="session_id", how="left")
    for cls in CLASSES:
        per = steering[steering["cls"] == cls].groupby("session_id").size().rename(cls + "s" if cls != "information"
                                                                                   else "information")
        table = table.merge(per, on="session_id", how="left")
    table = table.merge(runs.groupby("session_id")["eval_id"].nunique().rename("harness_runs"), on="session_id",
                        how="left")
    best = runs[runs["scored"]].groupby("session_id")
    table = table.merge(best["geomean"].max().rename("best_geomean"), on="session_id", how="left")
    table = table.merge(best["metric"].first().rename("metric"), on="session_id", how="left")
    for metric, col in (("geomean_vs_fa3", "best_vs_fa3"), ("geomean_vs_original", "best_vs_original")):
        table[col] = table["best_geomean"].where(table["metric"] == metric)      # one metric per column
    on_main = table["metric"].notna() & (table["metric"] != "geomean_vs_original")
    table["best_vs_main"] = table["best_geomean"].where(on_main)        # FA3's for attention, cuBLAS's for the GEMM
    table["main_anchor"] = table["metric"].str.removeprefix("geomean_vs_").where(on_main)
    table = table.merge(gains.groupby("session_id").size().rename("gains"), on="session_id", how="left")
    after_q = gains[gains["preceded_by"] == "question"].groupby("session_id").size().rename("gains_after_question")
    table = table.merge(after_q, on="session_id", how="left")
    lines = edits.groupby("session_id")[["added", "readded"]].sum()
    table = table.merge(lines.rename(columns={"added": "lines_added", "readded": "lines_readded"}),
                        on="session_id", how="left")
    count_cols = [*IMPORT_COUNTS, "import_files", "message_rows", "sidechain_rows", "human_messages", "input_tokens",
                  "output_tokens",
                  "cache_read_tokens", "cache_write_tokens", "tool_calls", "tool_errors", "questions",
                  "information", "directives", "others", "harness_runs", "gains", "gains_after_question",
                  "lines_added", "lines_readded"]
    for col in count_cols:
        table[col] = table[col].fillna(0).astype("int64")
    table["cost_usd"] = table["cost_usd"].fillna(0.0)
    table["readded_rate"] = _rate(table["lines_readded"], table["lines_added"])

    overall = {col: int(table[col].sum()) for col in count_cols}
    overall.update(sessions=len(table), cost_usd=float(table["cost_usd"].sum()),
                   readded_rate=_scalar_rate(overall["lines_readded"], overall["lines_added"]),
                   gain_threshold=gain_threshold)
    attribution = _attribution(gains)
    overall.update({f"share_gains_after_{k}": v for k, v in zip(attribution["preceded_by"], attribution["share"])})
    answered = q_to_gain.dropna(subset=["seconds_to_gain"])
    overall.update(questions_followed_by_gain=len(answered),
                   median_seconds_question_to_gain=float(answered["seconds_to_gain"].median())
                   if len(answered) else float("nan"),
                   median_calls_question_to_gain=float(answered["calls_to_gain"].median())
                   if len(answered) else float("nan"),
                   gains_moved_or_rejected=int((gains["moved_layer"] | gains["rejected_limit"]).sum()))
    overall["gpus"] = [g for (g,) in con.execute(
        "SELECT DISTINCT gpu FROM evaluations WHERE gpu IS NOT NULL AND gpu <> '' ORDER BY gpu").fetchall()]
    layers = (steering[steering["cls"] == "question"]["layer"].fillna("(none)").value_counts()
              .rename_axis("layer").reset_index(name="questions"))
    con.close()
    return Analysis(sessions=table, overall=overall, steering=steering, runs=runs, gains=gains,
                    attribution=attribution, question_to_gain=q_to_gain, edits=edits,
                    arms=_arms(table), layers=layers, gain_threshold=gain_threshold)


def _import_tally(config_json) -> dict:
    try:
        config = json.loads(config_json) if isinstance(config_json, str) else {}
    except ValueError:
        return {}
    tally = config.get("import") if isinstance(config, dict) else None
    return tally if isinstance(tally, dict) else {}


def _rate(num: pd.Series, den: pd.Series) -> pd.Series:
    return (num / den.where(den > 0)).astype("float64")


def _scalar_rate(num, den) -> float:
    return num / den if den else float("nan")


def _is_gain(geomean: float, best: float, threshold: float) -> bool:
    """geomean is at least (1 + threshold) x best, multiplied out: a best of 0 (a run that timed nothing, a
    hand-made trace) makes any better run a gain instead of a division by zero."""
    return geomean >= best * (1.0 + threshold - 1e-9) and (best > 0 or geomean > best)


def _gains(runs: pd.DataFrame, steering: pd.DataFrame, call_starts, call_index, threshold: float):
    runs = runs.copy()
    # scored on the session's main anchor (a row that names none is attention's: FA3), else on the original
    main = runs["main_anchor"].where(runs["main_anchor"].map(lambda a: isinstance(a, str) and a != ""), "fa3")
    runs["vs_main"] = np.where(main == "fa3", runs["geomean_vs_fa3"], runs["geomean_vs_main"]).astype("float64")
    has_main = runs.groupby("session_id")["vs_main"].transform(lambda s: s.notna().any())
    runs["metric"] = np.where(has_main, "geomean_vs_" + main, "geomean_vs_original")
    runs["geomean"] = np.where(has_main, runs["vs_main"], runs["geomean_vs_original"])
    known_wrong = runs["all_correct"].astype("boolean").eq(False).fillna(False)    # null: not known to be wrong
    runs["scored"] = (runs["geomean"].notna() & ~known_wrong).astype(bool)
    # the tool call that ran the harness; without one, the calls started by the time the result arrived
    runs["tool_index"] = np.array([
        call_index.get((s, c)) if (s, c) in call_index else _calls_before(call_starts, s, t, "right")
        for s, c, t in zip(runs["session_id"], runs["call_id"], runs["ts_us"])], dtype="int64")
    best_col, gain_col, prev_col = [], [], []
    events = []
    by_session = {sid: g for sid, g in steering.groupby("session_id")}
    for sid, group in runs.groupby("session_id", sort=False):
        best, last_gain_ts = None, None
        msgs = by_session.get(sid)
        msg_ts = msgs["ts_us"].to_numpy() if msgs is not None else None
        for row in group.itertuples():
            is_gain, previous_best = False, best
            if row.scored:
                if best is not None and _is_gain(row.geomean, best, threshold):
                    is_gain = True
                best = row.geomean if best is None else max(best, row.geomean)
            best_col.append(best)
            gain_col.append(is_gain)
            prev_col.append(previous_best)
            if not is_gain:
                continue
            msg = None
            if msgs is not None:        # the last steering message before the run and after the previous gain
                k = int(np.searchsorted(msg_ts, row.ts_us, side="left")) - 1
                if k >= 0 and (last_gain_ts is None or msg_ts[k] > last_gain_ts):
                    msg = msgs.iloc[k]
            events.append(dict(
                session_id=sid, eval_id=row.eval_id, ts_us=row.ts_us, tool_index=row.tool_index,
                metric=row.metric, previous_best=previous_best, geomean=row.geomean,
                gain_pct=100.0 * (row.geomean / previous_best - 1.0) if previous_best > 0 else float("nan"),
                preceded_by=msg["cls"] if msg is not None else "nothing",
                message_id=msg["id"] if msg is not None else None,
                message_text=msg["text"] if msg is not None else None,
                message_origin=msg["origin"] if msg is not None else None,
                message_layer=msg["layer"] if msg is not None else None,
                agent_layer=msg["agent_layer"] if msg is not None else None,
                moved_layer=bool(msg["moved_layer"]) if msg is not None else False,
                rejected_limit=bool(msg["rejected_limit"]) if msg is not None else False,
                seconds_since_message=(row.ts_us - msg["ts_us"]) / 1e6 if msg is not None else None,
                calls_since_message=int(row.tool_index - msg["calls_before"]) if msg is not None else None))
            last_gain_ts = row.ts_us
    runs["best_so_far"] = best_col
    runs["is_gain"] = gain_col
    runs["previous_best"] = prev_col
    columns = ["session_id", "eval_id", "ts_us", "tool_index", "metric", "previous_best", "geomean", "gain_pct",
               "preceded_by", "message_id", "message_text", "message_origin", "message_layer", "agent_layer",
               "moved_layer", "rejected_limit", "seconds_since_message", "calls_since_message"]
    gains = pd.DataFrame(events, columns=columns)
    gains["moved_layer"] = gains["moved_layer"].astype(bool)
    gains["rejected_limit"] = gains["rejected_limit"].astype(bool)
    return runs, gains


def _question_to_gain(steering: pd.DataFrame, gains: pd.DataFrame) -> pd.DataFrame:
    rows = []
    by_session = {sid: (g["ts_us"].to_numpy(), g) for sid, g in gains.groupby("session_id")}
    for q in steering[steering["cls"] == "question"].itertuples():
        nxt = None
        if q.session_id in by_session:
            ts, group = by_session[q.session_id]
            k = int(np.searchsorted(ts, q.ts_us, side="right"))
            nxt = group.iloc[k] if k < len(group) else None
        rows.append(dict(session_id=q.session_id, message_id=q.id, text=q.text, layer=q.layer,
                         seconds_to_gain=(nxt["ts_us"] - q.ts_us) / 1e6 if nxt is not None else None,
                         calls_to_gain=int(nxt["tool_index"] - q.calls_before) if nxt is not None else None,
                         gain_eval_id=nxt["eval_id"] if nxt is not None else None))
    return pd.DataFrame(rows, columns=["session_id", "message_id", "text", "layer", "seconds_to_gain",
                                       "calls_to_gain", "gain_eval_id"]).astype({"seconds_to_gain": "float64",
                                                                                  "calls_to_gain": "float64"})


def _attribution(gains: pd.DataFrame) -> pd.DataFrame:
    counts = gains["preceded_by"].value_counts()
    total = int(counts.sum())
    return pd.DataFrame({"preceded_by": list(ATTRIBUTIONS),
                         "gains": [int(counts.get(k, 0)) for k in ATTRIBUTIONS],
                         "share": [counts.get(k, 0) / total if total else float("nan") for k in ATTRIBUTIONS]})


def _edits(con, call_starts) -> pd.DataFrame:
    names = ", ".join(f"'{n}'" for n in EDIT_TOOLS)
    calls = _query(con, f"""
        SELECT session_id, tool_index, epoch_us(started_at) AS ts_us, tool_name, input_json FROM tool_calls
        WHERE NOT coalesce(is_error, false)
          AND (tool_name IN ({names}) OR input_json LIKE '%*** Begin Patch%')
        ORDER BY session_id, ts_us, tool_index""")
    rows = []
    for sid, group in calls.groupby("session_id", sort=False):
        tracker = EditTracker()
        for row in group.itertuples():
            added, readded, deleted = tracker.feed(row.tool_name, row.input_json)
            if added or deleted:
                rows.append((sid, row.tool_index, row.ts_us, row.tool_name, added, readded, deleted))
    edits = pd.DataFrame(rows, columns=["session_id", "tool_index", "ts_us", "tool_name", "added", "readded",
                                        "deleted"]).astype({"tool_index": "int64", "ts_us": "float64", "added": "int64",
                                                            "readded": "int64", "deleted": "int64"})
    edits["cum_added"] = edits.groupby("session_id")["added"].cumsum()
    edits["cum_readded"] = edits.groupby("session_id")["readded"].cumsum()
    edits["cum_rate"] = _rate(edits["cum_readded"], edits["cum_added"])
    return edits


def _arms(table: pd.DataFrame) -> pd.DataFrame:
    t = table.assign(arm=table["arm"].fillna("(none)"))
    grouped = t.groupby("arm")
    out = grouped.agg(sessions=("session_id", "count"), human_messages=("human_messages", "sum"),
                      questions=("questions", "sum"), tool_calls=("tool_calls", "sum"),
                      harness_runs=("harness_runs", "sum"),
                      sessions_vs_fa3=("best_vs_fa3", "count"), best_vs_fa3_median=("best_vs_fa3", "median"),
                      best_vs_fa3_max=("best_vs_fa3", "max"),
                      sessions_vs_main=("best_vs_main", "count"), best_vs_main_median=("best_vs_main", "median"),
                      best_vs_main_max=("best_vs_main", "max"),
                      sessions_vs_original=("best_vs_original", "count"),
                      best_vs_original_median=("best_vs_original", "median"),
                      best_vs_original_max=("best_vs_original", "max"), gains=("gains", "sum"),
                      gains_after_question=("gains_after_question", "sum"), lines_added=("lines_added", "sum"),
                      lines_readded=("lines_readded", "sum"), cost_usd=("cost_usd", "sum")).reset_index()
    out["readded_rate"] = _rate(out["lines_readded"], out["lines_added"])
    # tools-only first: it is the baseline the question arms are read against
    out["_order"] = (out["arm"] != "tools_only").astype(int)
    return out.sort_values(["_order", "arm"]).drop(columns="_order").reset_index(drop=True)
