"""Generate large synthetic trace tables, to time `workbench report` at scale (docs/benchmarks.md).

    PYTHONPATH=. .venv/bin/python scripts/gen_large_traces.py --messages 1000000 --out /tmp/large_traces

Sessions look like campaigns: the agent talks, edits (old/new strings drawn from a small pool of lines, so some
lines come back), runs the harness (26 scenario rows per run, geomean on a noisy upward walk), and every few
hundred rows a person asks a question, gives information or a directive. Half the sessions are `tools_only`
(only the opening prompt). Columns are built as whole arrays and written straight to parquet in the writer's
layout (<root>/<table>/<session>/part-00000.parquet); going row by row through TraceWriter would take minutes.
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.traces.schema import TABLES

ROWS_PER_SESSION = 5000
SCENARIOS_PER_RUN = 26
HARNESS_EVERY = 12          # one harness run per this many tool calls
HUMAN_EVERY = 400           # one person's message per this many message rows (question arms)
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
AGENT_TEXT = ["I will enlarge the shared memory tile to cut global memory traffic.",
              "The kernel is now using cp.async double buffering to overlap loads with compute.",
              "Occupancy is limited by registers; trying fewer warps per block.",
              "Switching the inner product to wgmma tensor core instructions.",
              "This looks like the hardware limit for this kernel; it cannot be improved further.",
              "Let me run the harness again to confirm the timing."]
HUMAN_TEXT = ["Are you winning on kernel cycles or only on wall time?",
              "Is the pipeline depth really the limit, or are the warps stalled on the barrier?",
              "FA3 reaches 740 TFLOP/s on this shape on the H200.",
              "Try a persistent kernel with one block per SM.",
              "Which layer have you not measured yet?",
              "The causal shapes are half the FLOPs."]
LINES = [f"#define BLOCK_M {v}" for v in (64, 128)] + [f"#define NUM_WARPS {v}" for v in (4, 8)] + \
        [f"#define STAGES {v}" for v in (2, 3, 4)] + ["  load_tile(k);", "  cp_async_load(k + 1);",
                                                       "  compute_tile(k);", "  mma_sync(acc, a, b);"]


def _write(root: Path, table: str, sid: str, columns: dict) -> None:
    schema = TABLES[table]
    n = len(next(iter(columns.values())))
    arrays = [pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema]
    directory = root / table / sid
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), directory / "part-00000.parquet")


def session(root: Path, index: int, rows: int, rng: np.random.Generator) -> None:
    sid = f"gen-{index:05d}"
    arm = "tools_only" if index % 2 == 0 else "bank"
    t0 = START + timedelta(days=index)
    # message rows: a repeating pattern of (assistant text, tool_use, tool_result), human messages mixed in
    kinds = np.tile(np.array([0, 1, 2]), rows // 3 + 1)[:rows]           # 0 text, 1 tool_use, 2 tool_result
    human = np.zeros(rows, dtype=bool)
    human[0] = True
    if arm != "tools_only":
        human[np.arange(HUMAN_EVERY, rows, HUMAN_EVERY)] = True
    kinds = np.where(human, 3, kinds)                                     # 3 human text
    seconds = np.cumsum(rng.exponential(4.0, rows)).astype("int64")
    ts = [t0 + timedelta(seconds=int(s)) for s in seconds]
    role = np.array(["assistant", "assistant", "user", "user"])[kinds]
    block = np.array(["text", "tool_use", "tool_result", "text"])[kinds]
    text = np.empty(rows, dtype=object)
    text[kinds == 0] = np.array(AGENT_TEXT, dtype=object)[rng.integers(0, len(AGENT_TEXT), (kinds == 0).sum())]
    text[kinds == 3] = np.array(HUMAN_TEXT, dtype=object)[rng.integers(0, len(HUMAN_TEXT), (kinds == 3).sum())]
    text[kinds == 1] = '{"command": "workbench check kernel.cu --suite dev26"}'
    text[kinds == 2] = "ok"
    usage = kinds == 0
    _write(root, "messages", sid, {
        "session_id": [sid] * rows, "message_id": [f"{sid}-m{i}" for i in range(rows)],
        "block_index": np.zeros(rows, dtype="int32"), "turn": (np.arange(rows) // 3).astype("int32"),
        "role": role.tolist(), "block_type": block.tolist(), "is_human": human.tolist(),
        "is_sidechain": [False] * rows, "text": text.tolist(), "ts": ts, "model": ["claude-sonnet-4-5"] * rows,
        "input_tokens": np.where(usage, 200, None).tolist(), "output_tokens": np.where(usage, 150, None).tolist(),
        "cache_read_tokens": np.where(usage, 20000, None).tolist(),
        "cache_write_tokens": np.where(usage, 0, None).tolist(),
        "cost_usd": np.where(usage, 0.0093, None).tolist(),
        "source_file": ["generated"] * rows, "source_line": np.arange(1, rows + 1)})

    # tool calls: one per tool_use row; every HARNESS_EVERY-th runs the harness, a third of the rest edit
    use_rows = np.flatnonzero(kinds == 1)
    n_calls = len(use_rows)
    call_ts = [ts[i] for i in use_rows]
    is_harness = np.arange(n_calls) % HARNESS_EVERY == HARNESS_EVERY - 1
    is_edit = ~is_harness & (rng.random(n_calls) < 0.33)
    names = np.where(is_harness, "Bash", np.where(is_edit, "Edit", "Read"))
    pairs = rng.integers(0, len(LINES), (n_calls, 2))
    inputs = [json.dumps({"file_path": "kernel.cu", "old_string": LINES[a], "new_string": LINES[b]}) if e
              else '{"command": "workbench check kernel.cu --suite dev26"}' if h else '{"file_path": "kernel.cu"}'
              for e, h, (a, b) in zip(is_edit, is_harness, pairs)]
    _write(root, "tool_calls", sid, {
        "session_id": [sid] * n_calls, "call_id": [f"{sid}-c{i}" for i in range(n_calls)],
        "tool_index": np.arange(1, n_calls + 1), "tool_name": names.tolist(), "input_json": inputs,
        "output_text": ["ok"] * n_calls, "is_error": (rng.random(n_calls) < 0.03).tolist(),
        "started_at": call_ts, "ended_at": call_ts, "duration_s": np.full(n_calls, 2.0),
        "source_file": ["generated"] * n_calls, "source_line": use_rows + 1})

    # evaluations: SCENARIOS_PER_RUN rows per harness run, geomean on a noisy upward walk
    runs = np.flatnonzero(is_harness)
    walk = 0.4 * np.exp(np.cumsum(rng.normal(0.01, 0.05, len(runs))))
    reps = SCENARIOS_PER_RUN
    n_eval = len(runs) * reps
    _write(root, "evaluations", sid, {
        "session_id": [sid] * n_eval, "eval_id": [f"{sid}-e{r}" for r in runs for _ in range(reps)],
        "call_id": [f"{sid}-c{r}" for r in runs for _ in range(reps)], "kernel_sha": ["0" * 12] * n_eval,
        "suite": ["dev26"] * n_eval, "scenario": [f"s{j}" for _ in runs for j in range(reps)],
        "status": ["passed"] * n_eval, "us_median": rng.uniform(50, 500, n_eval),
        "geomean_vs_fa3": np.repeat(walk, reps), "geomean_vs_original": np.repeat(walk * 2.0, reps),
        "all_correct": [True] * n_eval, "gpu": ["NVIDIA H200 (generated)"] * n_eval,
        "ts": [call_ts[r] for r in runs for _ in range(reps)],
        "source_file": ["generated"] * n_eval, "source_line": np.repeat(runs + 1, reps)})
    _write(root, "sessions", sid, {"session_id": [sid], "source": ["generated"], "source_file": ["generated"],
                                   "started_at": [ts[0]], "ended_at": [ts[-1]], "arm": [arm],
                                   "agent": ["generated"], "model": ["claude-sonnet-4-5"]})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="message rows in total")
    parser.add_argument("--rows-per-session", type=int, default=ROWS_PER_SESSION)
    parser.add_argument("--out", type=Path, default=Path("/tmp/large_traces"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    rng = np.random.default_rng(args.seed)
    n_sessions = max(1, args.messages // args.rows_per_session)
    t0 = time.perf_counter()
    for index in range(n_sessions):
        rows = args.rows_per_session if index < n_sessions - 1 else args.messages - args.rows_per_session * index
        session(args.out, index, rows, rng)
        if (index + 1) % 20 == 0 or index + 1 == n_sessions:
            print(f"{index + 1}/{n_sessions} sessions ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"wrote {args.messages:,} message rows in {n_sessions} sessions to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
