"""scripts/ab_ratio.py: per-group A/B ratios of one ladder_bench run, failures listed and never averaged."""
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import ab_ratio  # noqa: E402


def _row(name, d, causal, base_ms, var_ms, var_status="ok"):
    return {"name": name, "head_dim": d, "causal": causal,
            "impl": {"k": {"status": "ok", "ms": base_ms}, "k[X=1]": {"status": var_status, "ms": var_ms},
                     "fa3": {"ms": 1.0}}}


def test_ratios_are_baseline_over_variant_per_group_and_failures_are_left_out():
    rows = [_row("a", 64, 1, 2.0, 1.0), _row("b", 64, 1, 1.0, 1.0), _row("c", 128, 0, 1.0, 2.0),
            _row("bad", 128, 0, 1.0, 0.1, var_status="FAIL mismatch")]
    groups, failed, per_shape = ab_ratio.ratios(rows, "k", "k[X=1]")
    assert failed == ["bad"]
    assert math.isclose(math.exp(sum(groups["d64 c1"]) / 2), math.sqrt(2.0))
    assert math.isclose(math.exp(groups["d128 c0"][0]), 0.5)
    assert len(groups["all"]) == 3 and min(per_shape) == (0.5, "c")
    text = ab_ratio.report({"results": rows}, worst=1)
    assert "k[X=1] x k:" in text and "not compared (a failure or no time): bad" in text and "0.500 c" in text


def test_a_file_that_is_not_a_run_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"meta": {}}))
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_ratio.py"), str(bad)], capture_output=True,
                         text=True)
    assert run.returncode == 2 and run.stdout == "" and len(run.stderr.strip().splitlines()) == 1


def test_moved_lists_every_shape_past_the_threshold_either_way_in_suite_order():
    rows = [_row("up", 64, 1, 1.05, 1.0), _row("still", 64, 1, 1.0, 1.005), _row("down", 128, 1, 1.0, 1.05)]
    text = ab_ratio.report({"results": rows}, moved_pct=1)
    assert "moved by > 1 %: up 1.050, down 0.952" in text
    assert "moved by > 10 %: none" in ab_ratio.report({"results": rows}, moved_pct=10)
    assert "moved by" not in ab_ratio.report({"results": rows})


def _row3(name, base_ms, var_ms, copy_ms):
    return {"name": name, "head_dim": 128, "causal": 1,
            "impl": {"k": {"status": "ok", "ms": base_ms}, "k[X=1]": {"status": "ok", "ms": var_ms},
                     "k[C=0]": {"status": "ok", "ms": copy_ms}, "fa3": {"ms": 1.0}}}


def test_copies_read_each_variant_against_the_faster_reference_per_shape(tmp_path):
    """Run 77's trap: the baseline slow on one shape, the copy on another; the variant no faster than either."""
    rows = [_row3("s1", 1.08, 1.0, 1.0), _row3("s2", 1.0, 1.0, 1.04), _row3("s3", 1.0, 1.0, 1.0)]
    text = ab_ratio.report({"results": rows}, copies=("k[C=0]",))
    assert "k[X=1] x k: all 1.0260 (3)" in text                                  # the plain ratio: +2.6 %
    assert "against the faster of k and k[C=0] per shape: 1.0000 (3)" in text     # against the faster: nothing
    assert text.count("against the faster") == 1                                 # the copy itself gets no such line
    only = ab_ratio.report({"results": rows}, copies=("k[C=0]",), shapes=("s1",))
    assert "all 1.0800 (1)" in only and "per shape: 1.0000 (1)" in only
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"results": rows}))
    for bad in (["--copies", "k[Y=2]"], ["--copies", "k"], ["--shapes", "s9"]):
        run = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_ratio.py"), str(path), *bad],
                             capture_output=True, text=True)
        assert run.returncode == 2 and run.stdout == "" and len(run.stderr.strip().splitlines()) == 1, bad


def _knob_rows(times: dict[str, list[float]], fail: str = "") -> list[dict]:
    """Shapes s0..sN with each label's ms; `fail` marks that label failed on the last shape."""
    n = len(next(iter(times.values())))
    rows = []
    for i in range(n):
        impl = {label: {"status": "ok", "ms": ms[i]} for label, ms in times.items()}
        if fail and i == n - 1:
            impl[fail]["status"] = "FAIL mismatch"
        rows.append({"name": f"s{i}", "head_dim": 128, "causal": 1, "impl": impl})
    return rows


def test_verdict_adopts_a_knob_only_past_the_gain_with_no_shape_under_the_floor():
    times = {"k": [1.0, 1.0, 1.0], "k[A=1]": [0.98, 0.99, 0.99], "k[B=0]": [0.95, 0.95, 1.05],
             "k[C=1]": [0.999, 1.0, 0.998], "k[A=2]": [0.98, 0.98, 0.98], "k[A=1,B=0]": [0.97, 0.98, 0.99],
             "k[X=1]": [1.0, 1.0, 1.0]}
    lines, adopted = ab_ratio.verdicts(_knob_rows(times), ("k[X=1]",), 0.5, 3)
    text = "\n".join(lines)
    assert "verdict k[A=1]" in text and "verdict k[X=1]" not in text   # copies are references, not candidates
    assert "k[B=0]: x" in text and text.split("k[B=0]: ")[1].split("\n")[0].endswith("reject")   # one shape -5 %
    assert text.split("k[C=1]: ")[1].split("\n")[0].endswith("reject")                          # +0.1 %: noise
    # A=1 and A=2 both pass (A=2 better); two values of one knob are not a joint set: the best single one wins
    assert adopted == ["A=2"]


def test_verdict_takes_two_knobs_only_when_a_variant_with_both_passes(tmp_path):
    times = {"k": [1.0, 1.0], "k[A=1]": [0.98, 0.98], "k[B=1]": [0.99, 0.99], "k[A=1,B=1]": [0.975, 0.975]}
    assert ab_ratio.verdicts(_knob_rows(times), (), 0.5, 3)[1] == ["A=1", "B=1"]
    times["k[A=1,B=1]"] = [1.0, 1.0]          # together they lose what each won alone
    lines, adopted = ab_ratio.verdicts(_knob_rows(times), (), 0.5, 3)
    assert adopted == ["A=1"] and "no passing variant holds them together" in lines[-1]
    del times["k[A=1,B=1]"]
    assert ab_ratio.verdicts(_knob_rows(times), (), 0.5, 3)[1] == ["A=1"]
    # a failure anywhere rejects; the winners file holds the adopted lines (empty when none)
    doc = tmp_path / "lb.json"
    doc.write_text(json.dumps({"results": _knob_rows({"k": [1.0, 1.0], "k[A=1]": [0.9, 0.9]}, fail="k[A=1]")}))
    win = tmp_path / "w.txt"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_ratio.py"), str(doc), "--verdict", "0.5,3",
                          "--winners", str(win)], capture_output=True, text=True)
    assert run.returncode == 0 and "failed s1: reject" in run.stdout and win.read_text() == ""
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_ratio.py"), str(doc), "--winners", str(win)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--winners needs --verdict" in bad.stderr
