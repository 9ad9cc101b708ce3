"""Where a session's numbers came from, so a report never pools made-up numbers with measured ones.

Three kinds, in the order a report shows them:

* `campaign`: recorded by workbench itself (campaigns, evolution runs, `workbench check`) on a GPU;
* `imported`: a Claude Code or Codex transcript brought in with `workbench import`;
* `fixture`: test fixtures (tests/fixtures/), demo recordings (data/demo/) and CPU stand-in results: useful to
  exercise the statistics, never evidence about agents or kernels.

A stand-in result is one the harness did not measure on a GPU: a `standin:NAME` kernel run on the CPU, or a
stand-in evaluator's invented timings (workbench/evaluators/standin_timings.py). Every trace row workbench
writes for one carries `is_standin = true`; older rows are recognised by their `gpu` text.
"""
from __future__ import annotations

import json

KINDS = ("campaign", "imported", "fixture")
KIND_TITLES = {"campaign": "Recorded campaigns", "imported": "Imported transcripts",
               "fixture": "Test fixtures, demos and stand-in data"}
KIND_NOTES = {
    "campaign": "recorded by workbench (campaigns, evolution runs, harness checks), timed by the harness on a GPU",
    "imported": "brought in with `workbench import` from Claude Code or Codex transcripts",
    "fixture": ("hand-made test fixtures, demo recordings and CPU stand-in results: they exercise every statistic, "
                "but say nothing about agents or kernels, so they are kept out of every other section"),
}
FIXTURE_PATHS = ("tests/fixtures/", "data/demo/")


def is_standin_gpu(gpu) -> bool:
    text = str(gpu or "").strip().lower()
    return "stand-in" in text or text == "cpu" or text.startswith("cpu ")


def is_standin_result(kernel_path: str, gpu: str, versions: dict | None = None) -> bool:
    """True for numbers a GPU did not measure: a CPU stand-in kernel or a stand-in evaluator."""
    versions = versions or {}
    return (str(kernel_path or "").startswith("standin:") or is_standin_gpu(gpu) or "standin" in versions
            or "stand-in" in str(versions.get("evaluator", "")))


def _versions(text) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def session_kind(source, source_file, gpus, standin_flags, location: str = "") -> tuple[str, str]:
    """(kind, why) for one session. gpus: the GPU texts of its session and evaluation rows; standin_flags: its
    rows' is_standin values; location: the trace root it was read from."""
    paths = " ".join(str(p) for p in (source_file, location) if isinstance(p, str))
    if any(mark in paths.replace("\\", "/") for mark in FIXTURE_PATHS):
        return "fixture", "demo recording" if "data/demo/" in paths else "test fixture"
    if any(bool(f) for f in standin_flags if f is not None and f == f) or any(is_standin_gpu(g) for g in gpus):
        return "fixture", "stand-in (not measured on a GPU)"
    if source == "workbench":
        return "campaign", "recorded by workbench"
    return "imported", f"imported ({source})"


def classify(con, roots) -> "pd.DataFrame":
    """session_id -> kind, kind_note for every session of a DuckDB connection made by analysis.connect."""
    import pandas as pd

    sessions = con.execute("SELECT session_id, any_value(source) AS source, any_value(source_file) AS source_file, "
                           "list(DISTINCT gpu) AS gpus, list(DISTINCT is_standin) AS flags, "
                           "any_value(filename) AS location FROM sessions GROUP BY session_id").df()
    evals = con.execute("SELECT session_id, list(DISTINCT gpu) AS gpus, list(DISTINCT is_standin) AS flags, "
                        "any_value(versions_json) AS versions FROM evaluations GROUP BY session_id").df()
    by_id = {r.session_id: r for r in evals.itertuples()}
    rows = []
    for s in sessions.itertuples():
        e = by_id.get(s.session_id)
        gpus = list(s.gpus if s.gpus is not None else []) + list(e.gpus if e is not None else [])
        flags = list(s.flags if s.flags is not None else []) + list(e.flags if e is not None else [])
        if e is not None and is_standin_result("", "", _versions(e.versions)):
            flags.append(True)
        kind, note = session_kind(s.source, s.source_file, gpus, flags, str(s.location or ""))
        rows.append({"session_id": s.session_id, "kind": kind, "kind_note": note})
    return pd.DataFrame(rows, columns=["session_id", "kind", "kind_note"])
