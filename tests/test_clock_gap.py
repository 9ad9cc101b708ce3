"""scripts/clock_gap.py: a row's x FA3 beside its ratio at equal SM clock, geomeans by length and category, and a
one-line refusal of a file that is not an evaluation."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from clock_gap import gap_rows, main, summary  # noqa: E402


def row(name, cat, ours_us, fa3_us, ours_mhz, fa3_mhz):
    return {"scenario": {"name": name, "category": cat},
            "stats": {"median_us": ours_us, "clock_mhz": ours_mhz},
            "reference_stats": {"fa3": {"median_us": fa3_us, "clock_mhz": fa3_mhz}}}


DOC = {"rows": [row("long_c1", "B", 4000.0, 3600.0, 1400.0, 1540.0),      # x0.90, at equal clock x0.99
                row("short", "A", 100.0, 110.0, 1800.0, 1800.0),          # x1.10 at the same clock
                row("no_clock", "A", 100.0, 100.0, None, 1800.0),         # timed, its clock unknown
                {"scenario": {"name": "failed", "category": "A"}, "stats": None, "reference_stats": {}}]}


def test_each_row_gets_its_ratio_and_the_ratio_at_equal_clock():
    rows = {r["name"]: r for r in gap_rows(DOC)}
    assert set(rows) == {"long_c1", "short", "no_clock"}
    assert rows["long_c1"]["ratio"] == pytest.approx(0.9)
    assert rows["long_c1"]["equal_clock"] == pytest.approx(0.9 * 1540 / 1400)
    assert rows["short"]["equal_clock"] == pytest.approx(1.1) and rows["no_clock"]["equal_clock"] is None
    lines = {line.split("  ")[0].strip(): line.split() for line in summary(list(rows.values()), 2000.0)[1:]}
    assert lines[">= 2000 us"][-3:] == ["1", "0.900", "0.990"]
    assert lines["category A"][-3:] == ["2", f"{(1.1 * 1.0) ** 0.5:.3f}", "1.100"]


def test_the_cli_prints_the_table_and_refuses_what_is_not_an_evaluation(tmp_path, capsys):
    good = tmp_path / "eval.json"
    good.write_text(json.dumps(DOC))
    assert main([str(good), "--worst", "1"]) == 0
    out = capsys.readouterr().out
    assert "long_c1" in out and "short " not in out.split("lowest")[1]
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "none.json").write_text(json.dumps({"rows": [DOC["rows"][3]]}))
    for bad in (tmp_path / "bad.json", tmp_path / "none.json", tmp_path / "missing.json"):
        assert main([str(bad)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("clock_gap: "), err
