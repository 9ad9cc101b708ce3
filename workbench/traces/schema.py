"""Explicit pyarrow schemas of the trace tables (README.md, "Trace analysis and the report"), and `lineage` for
evolution runs.

Every table carries `session_id`; rows that came from an imported transcript also keep `source_file` and
`source_line` so any statistic can be traced back to the line it was computed from. Timestamps are UTC
microseconds. Column names borrow OpenTelemetry GenAI vocabulary where one exists (tool name, token usage).
"""
from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

SESSIONS = pa.schema([
    ("session_id", pa.string()),
    ("source", pa.string()),            # workbench | claude_code | codex
    ("source_file", pa.string()),
    ("started_at", TS),
    ("ended_at", TS),
    ("campaign_id", pa.string()),
    ("arm", pa.string()),               # experiment arm / mode: tools_only | bank | human | hybrid
    ("agent", pa.string()),             # claude | offline | replay | fake | external
    ("model", pa.string()),
    ("kernel_path", pa.string()),
    ("suite", pa.string()),
    ("stop_expr", pa.string()),
    ("stop_reason", pa.string()),
    ("turns", pa.int32()),              # totals when the session ended (null while it runs)
    ("tool_calls", pa.int64()),
    ("total_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("best_sha", pa.string()),
    ("best_vs_original", pa.float64()),
    ("best_vs_fa3", pa.float64()),
    ("gpu", pa.string()),
    ("host", pa.string()),
    ("workbench_version", pa.string()),
    ("config_json", pa.string()),
    ("is_standin", pa.bool_()),         # its numbers were not measured on a GPU (traces/sources.py)
    ("main_anchor", pa.string()),       # the problem's main anchor (fa3, cublas); null in older rows: fa3
    ("best_vs_main", pa.float64()),     # the best run's geomean against it; null in older rows: best_vs_fa3
])

MESSAGES = pa.schema([
    ("session_id", pa.string()),
    ("message_id", pa.string()),        # one row per content block: message_id + block_index is unique
    ("block_index", pa.int32()),
    ("parent_id", pa.string()),
    ("turn", pa.int32()),
    ("role", pa.string()),              # user | assistant | system
    ("block_type", pa.string()),        # text | thinking | tool_use | tool_result
    ("is_human", pa.bool_()),           # typed by a person (not a tool result, not an injected bank question)
    ("is_sidechain", pa.bool_()),
    ("text", pa.string()),              # tool_use: the JSON input; tool_result: the output
    ("tool_use_id", pa.string()),       # tool_use / tool_result blocks: the pairing id
    ("tool_name", pa.string()),         # tool_use blocks
    ("ts", TS),
    ("model", pa.string()),
    ("input_tokens", pa.int64()),       # usage is recorded once per API message (first block), else null
    ("output_tokens", pa.int64()),
    ("cache_read_tokens", pa.int64()),
    ("cache_write_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("source_file", pa.string()),
    ("source_line", pa.int64()),
])

TOOL_CALLS = pa.schema([
    ("session_id", pa.string()),
    ("call_id", pa.string()),
    ("turn", pa.int32()),
    ("tool_index", pa.int64()),         # running count of tool calls in the session (x axis of progress plots)
    ("tool_name", pa.string()),
    ("input_json", pa.string()),
    ("output_text", pa.string()),       # truncated head of the result
    ("is_error", pa.bool_()),
    ("error", pa.string()),
    ("started_at", TS),
    ("ended_at", TS),
    ("duration_s", pa.float64()),
    ("source_file", pa.string()),
    ("source_line", pa.int64()),
])

EVALUATIONS = pa.schema([
    ("session_id", pa.string()),
    ("eval_id", pa.string()),           # one harness run of one kernel on one suite
    ("call_id", pa.string()),           # tool call that ran it, when an agent did
    ("turn", pa.int32()),
    ("kernel_sha", pa.string()),        # artifacts/<sha>.cu
    ("suite", pa.string()),
    ("scenario", pa.string()),
    ("category", pa.string()),
    ("status", pa.string()),            # passed | failed | unsupported | skipped | static_only
    ("reason", pa.string()),            # failure code (verify.REASONS) or empty
    ("detail", pa.string()),
    ("rel_l2_err", pa.float64()),
    ("max_abs_err", pa.float64()),
    ("us_median", pa.float64()),        # device time (timing_method says how it was taken)
    ("us_p10", pa.float64()),
    ("us_p90", pa.float64()),
    ("n_reps", pa.int32()),
    ("timing_method", pa.string()),     # graph_replay | graph_replay_outer | events_delayed; null: per-call events
    ("call_us_median", pa.float64()),   # wall time of one plain call (host overhead included); never in a geomean
    ("tflops", pa.float64()),
    ("speedup_vs_original", pa.float64()),
    ("speedup_vs_fa3", pa.float64()),
    ("speedup_vs_fa4", pa.float64()),
    ("speedup_vs_cudnn", pa.float64()),
    ("speedup_vs_fa2", pa.float64()),
    ("geomean_vs_original", pa.float64()),   # suite-level figures repeated on every row of the run
    ("geomean_vs_fa3", pa.float64()),
    ("all_correct", pa.bool_()),
    ("stop_met", pa.bool_()),
    ("flags", pa.string()),             # comma-separated suspicion flags
    ("suite_flags", pa.string()),       # the run's suite-level flags, repeated on every row
    ("gpu", pa.string()),
    ("versions_json", pa.string()),
    ("ts", TS),
    ("source_file", pa.string()),
    ("source_line", pa.int64()),
    ("is_standin", pa.bool_()),         # a CPU stand-in or a stand-in evaluator, not a GPU measurement
    ("problem", pa.string()),           # the problem folder's name (harness/problems.py); null: attn_fwd
    ("main_anchor", pa.string()),       # the problem's main anchor (attn_fwd: fa3, gemm_bf16: cublas)
    ("speedup_vs_main", pa.float64()),  # the scenario's speedup against it
    ("geomean_vs_main", pa.float64()),  # the run's geomean against it (suite-level, repeated)
])

INTERVENTIONS = pa.schema([
    ("session_id", pa.string()),
    ("intervention_id", pa.string()),
    ("turn", pa.int32()),
    ("tool_index", pa.int64()),         # tool calls made before the question was asked
    ("trigger", pa.string()),           # stall | claim | suspicious | human
    ("source", pa.string()),            # human | bank
    ("question_id", pa.string()),
    ("question_text", pa.string()),
    ("layer", pa.string()),
    ("best_speedup_before", pa.float64()),
    ("ts", TS),
    ("source_file", pa.string()),
    ("source_line", pa.int64()),
])

# One row per child an evolution run proposed (workbench/evolve.py), evaluated or rejected; session_id is the run.
LINEAGE = pa.schema([
    ("session_id", pa.string()),
    ("generation", pa.int32()),         # 0: the seed
    ("slot", pa.int32()),               # child slot within the generation
    ("attempt", pa.int32()),            # mutation attempt of that slot (rejected attempts are rows too)
    ("child_sha", pa.string()),         # artifacts/<sha>.cu of the evolution run
    ("parent_sha", pa.string()),
    ("question_id", pa.string()),       # the bank question given as the mutation hint
    ("question_layer", pa.string()),
    ("question_text", pa.string()),
    ("mutation", pa.string()),          # "knob KEY_TILE 8->16" | "episode <campaign id>: ..." | "seed"
    ("status", pa.string()),            # evaluated | rejected | other_gpu
    ("reject_reason", pa.string()),     # identical_source | readds_deleted_lines | no_mutation
    ("eval_id", pa.string()),           # evaluations.eval_id of the child's harness run
    ("all_correct", pa.bool_()),
    ("geomean_vs_original", pa.float64()),
    ("geomean_vs_fa3", pa.float64()),
    ("parent_geomean_vs_original", pa.float64()),
    ("improved_on_parent", pa.bool_()),
    ("is_new_best", pa.bool_()),
    ("best_so_far", pa.float64()),      # best all-correct geomean vs original of the run after this child
    ("survived", pa.bool_()),           # in the population after this generation's selection
    ("stop_met", pa.bool_()),
    ("host", pa.string()),
    ("gpu", pa.string()),
    ("device", pa.string()),            # cuda:N | cpu:N | cpu
    ("eval_wall_s", pa.float64()),
    ("ts", TS),
    ("is_standin", pa.bool_()),         # the child was judged by a stand-in evaluator, not on a GPU
])

TABLES: dict[str, pa.Schema] = {
    "sessions": SESSIONS,
    "messages": MESSAGES,
    "tool_calls": TOOL_CALLS,
    "evaluations": EVALUATIONS,
    "interventions": INTERVENTIONS,
    "lineage": LINEAGE,
}
