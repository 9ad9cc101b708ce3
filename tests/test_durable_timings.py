"""Timings survive a killed run (issue 24): the journal and the staged merge skip what is half-written, a SIGKILL
between scenarios keeps what was finished, the next run times only the rest, and the ETA counts cached work done."""
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench.harness import cache_file
from workbench.harness.eta import Estimator, LinearFit, format_eta
from workbench.harness.progress_cache import ProgressCache
from workbench.harness.scenarios import Scenario
from workbench.harness.staged_cache import StagedMerger

ROOT = Path(__file__).resolve().parents[1]
ENTRY = {"stats": {"median_us": 12.5, "n": 5, "method": "graph_replay"}, "extra": {}}


def test_a_half_written_journal_line_is_skipped_and_the_rest_kept(tmp_path):
    good, other = cache_file.encode_line("a|k|env", ENTRY), cache_file.encode_line("b|k|env", ENTRY)
    forged = json.loads(other)
    forged["e"]["stats"]["median_us"] = 1.0                      # edited after its checksum was taken
    (tmp_path / cache_file.JOURNAL).write_bytes(good + (json.dumps(forged) + "\n").encode() + other[:-9])
    assert cache_file.read_entries(tmp_path) == {"a|k|env": ENTRY}
    cache_file.compact(tmp_path)                                 # the snapshot keeps it, the journal is gone
    assert json.loads((tmp_path / cache_file.SNAPSHOT).read_text()) == {"a|k|env": ENTRY}
    assert not (tmp_path / cache_file.JOURNAL).exists()


def test_the_staged_merge_takes_complete_valid_lines_of_this_runs_keys_only(tmp_path):
    staged, cache = tmp_path / "staged", tmp_path / "cache"
    (staged / "tensors").mkdir(parents=True)
    journal = staged / cache_file.JOURNAL
    line = cache_file.encode_line("original|s|k1|env", ENTRY)
    journal.write_bytes(cache_file.encode_line("fa3|v|k1|env", ENTRY)
                        + cache_file.encode_line("not|this|run", ENTRY)          # a key the run may not write
                        + cache_file.encode_line("fa3|v|k2|env", {"stats": {"median_us": -1.0}, "extra": {}})
                        + line[:20])                                             # still being written
    (staged / "tensors" / ("c" * 32 + ".pt.123.tmp")).write_bytes(b"half")      # a tensor mid-write
    allowed = {"fa3|v|k1|env", "fa3|v|k2|env", "original|s|k1|env"}
    merger = StagedMerger(staged, cache, accept_key=allowed.__contains__)
    assert merger.merge() == 1 and cache_file.read_entries(cache) == {"fa3|v|k1|env": ENTRY}
    assert not (cache / "tensors").exists()
    with open(journal, "ab") as handle:                                          # the line completes
        handle.write(line[20:])
    assert merger.merge() == 1 and set(cache_file.read_entries(cache)) == {"fa3|v|k1|env", "original|s|k1|env"}
    assert merger.merge() == 0                                                   # nothing new: nothing taken


def test_two_checks_of_one_process_merge_the_same_tensor_at_once(tmp_path, monkeypatch):
    # A LocalPool runs two checks as threads of one process over one cache: both may merge the same staged tensor
    # (the CI failure of 2026-12-07: one pid-named .tmp, renamed away by the other thread before the first's rename)
    name = "d" * 32 + ".pt"
    mergers = []
    for i in range(2):
        staged = tmp_path / f"staged{i}"
        (staged / "tensors").mkdir(parents=True)
        (staged / "tensors" / name).write_bytes(b"tensor bytes")
        mergers.append(StagedMerger(staged, tmp_path / "cache"))
    first_written, second_done = threading.Event(), threading.Event()
    real_replace, errors = os.replace, []

    def replace(src, dst):          # the first thread's rename waits until the second thread has written and renamed
        if threading.current_thread().name == "first":
            first_written.set()
            second_done.wait(10)
        real_replace(src, dst)

    def run(merger, wait_for):
        try:
            if wait_for is not None:
                wait_for.wait(10)
            merger.merge()
        except Exception as e:      # noqa: BLE001 - the race's error is the test's finding
            errors.append(e)
        finally:
            if wait_for is not None:
                second_done.set()

    monkeypatch.setattr(os, "replace", replace)
    threads = [threading.Thread(target=run, args=(mergers[0], None), name="first"),
               threading.Thread(target=run, args=(mergers[1], first_written), name="second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == [] and (tmp_path / "cache" / "tensors" / name).read_bytes() == b"tensor bytes"
    assert [p.name for p in (tmp_path / "cache" / "tensors").iterdir()] == [name]   # no .tmp left behind


def test_the_parent_accepts_the_baseline_and_loaded_anchors_for_this_gpu_only(tmp_path):
    s = Scenario("x", 1, 2, 2, 64, 64, 64, False)
    job = {"request": {"anchors": ["fa3", "cudnn"], "timing": True}, "candidate": {"sha": "c" * 64},
           "baseline": {"sha": "b" * 64}}
    staged = tmp_path / "staged"
    staged.mkdir()
    progress = ProgressCache(job, [s], tmp_path / "cache", staged)
    versions = {"torch": "t", "cuda_runtime": "12", "anchor_fa3": "0.0.3"}
    lines = progress.start({"gpu": "H200", "versions": versions, "missing_anchors": {"cudnn": "no"}})
    assert lines == ["timing cache: 0 of 2 baseline and anchor timings cached already (original 0/1, fa3 0/1)"]
    ours = sorted(progress.keys)
    assert ours[0].startswith("fa3|0.0.3|" + s.key + "|H200|") and ours[1].startswith("original|" + "b" * 16)
    wrong_gpu = ours[0].replace("|H200|", "|A100|")
    (staged / cache_file.JOURNAL).write_bytes(b"".join(cache_file.encode_line(k, ENTRY)
                                                       for k in (ours[0], wrong_gpu, "original|" + "c" * 16)))
    progress.merge()
    assert set(cache_file.read_entries(tmp_path / "cache")) == {ours[0]}


def test_the_eta_prices_remaining_scenarios_by_their_parts_and_cached_parts_at_nothing():
    shapes = [Scenario(f"s{i}", 1, 8, 8, 1024 * (i + 1), 1024 * (i + 1), 128, False) for i in range(4)]
    flops = [s.flops() for s in shapes]
    cold = Estimator(shapes, {s.name: {"original"} for s in shapes})
    for s, f in zip(shapes[:2], flops[:2]):                     # rest 1 s, the original 1 s per 1e12 flop
        cold.done(s.name, 1.0 + f / 1e12, {"original": f / 1e12})
    assert cold.seconds_left() == pytest.approx(2 * 1.0 + (flops[2] + flops[3]) / 1e12)
    resumed = Estimator(shapes, {shapes[3].name: {"original"}})  # s2's original was cached by the killed run
    for s, f in zip(shapes[:2], flops[:2]):
        resumed.done(s.name, 1.0 + f / 1e12, {"original": f / 1e12})
    assert resumed.seconds_left() == pytest.approx(2 * 1.0 + flops[3] / 1e12)
    fit = LinearFit()
    fit.add(1.0, 5.0)
    assert fit.predict(100.0) == 5.0 and format_eta(61.4) == "eta 1m01s" and format_eta(7) == "eta 7s"


# ---- a real SIGKILL between scenarios ------------------------------------------------------------------------
SHAPES = [("k_a", 1, 2, 2, 64, 64, 64, 0), ("k_b", 1, 2, 2, 96, 96, 64, 1), ("k_c", 1, 2, 1, 80, 80, 128, 0),
          ("k_d", 1, 2, 2, 72, 72, 64, 1), ("k_e", 1, 4, 2, 64, 96, 128, 1)]


def _suite(tmp_path) -> Path:
    path = tmp_path / "kill.csv"
    rows = ["name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category"]
    rows += [",".join(map(str, shape)) + ",bf16,A" for shape in SHAPES]
    path.write_text("\n".join(rows) + "\n")
    return path


def standin_check_command(suite: Path, cache: Path, json_out: Path) -> list[str]:
    """`workbench check` of the correct stand-in against the slow one, no anchors, no traces (test_resume_rows too)."""
    return [sys.executable, "-m", "workbench.cli", "check", "standin:correct", "--suite", str(suite),
            "--baseline", "standin:slow_correct", "--anchors", "", "--cache-dir", str(cache), "--traces", "",
            "--json", str(json_out)]


def _original_entries(cache: Path) -> dict:
    return {k: v for k, v in cache_file.read_entries(cache).items() if k.startswith("original|")}


@pytest.mark.parametrize("sandbox", ["auto", "off"])   # contained (staged, merged by the parent) and direct
def test_a_sigkill_between_scenarios_keeps_the_finished_timings_and_the_next_run_retimes_none(tmp_path, sandbox):
    suite, cache = _suite(tmp_path), tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(ROOT), WORKBENCH_SANDBOX=sandbox, PYTHONUNBUFFERED="1")
    killed = subprocess.Popen(standin_check_command(suite, cache, tmp_path / "killed.json"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT, start_new_session=True)
    seen = []
    try:
        for line in killed.stdout:
            seen.append(line.rstrip())
            if line.startswith("[  2/5]"):                       # two scenarios finished, the third under way
                break
    finally:
        os.killpg(killed.pid, signal.SIGKILL)                    # the CLI and its worker, no clean-up at all
        killed.wait(timeout=60)
        killed.stdout.close()
    assert any(l.startswith("[  2/5]") for l in seen), seen
    kept = _original_entries(cache)
    names = {k.split("|")[2] for k in kept}
    keys = [Scenario(*shape).key for shape in SHAPES]
    assert set(keys[:2]) <= names and len(kept) <= 3, (names, seen)   # finished ones kept (the third may be)
    again = subprocess.run(standin_check_command(suite, cache, tmp_path / "again.json"), capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert f"timing cache: {len(kept)} of 5 baseline and anchor timings cached already" in again.stdout
    assert f"timing cache: timed now original {5 - len(kept)} (" in again.stdout
    result = json.loads((tmp_path / "again.json").read_text())
    by_key = {Scenario(**{k: v for k, v in r["scenario"].items()}).key: r for r in result["rows"]}
    for key, entry in kept.items():                              # what the killed run finished is reused as is
        row = by_key[key.split("|")[2]]
        assert row["reference_stats"]["original"] == entry["stats"]
    assert len(_original_entries(cache)) == 5


def test_each_progress_line_ends_with_its_wall_time_and_what_it_timed_afresh():
    from workbench.harness.progress_cache import wall_and_timed
    assert wall_and_timed(4.07, {"original": 2.91, "cudnn": 0.84}) == "(4.1 s; timed now original 2.9 s, cudnn 0.8 s)"
    assert wall_and_timed(0.42, {}) == "(0.4 s)"
