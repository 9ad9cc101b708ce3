"""scripts/ncu_opcodes.py: per-opcode executed counts of two ncu reports, side by side."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from ncu_opcodes import main, opcode_counts  # noqa: E402

REPORT = """  Section: Command line profiler metrics
    sass__inst_executed_per_opcode                     {total} (FMNMX:
                                                       {fmnmx}; HGMMA: 400;
                                                       STS: {sts}; MUFU: 1,000)
    smsp__inst_executed.sum                     inst   {total}
"""


def report(tmp_path, name, fmnmx, sts):
    path = tmp_path / name
    path.write_text(REPORT.format(total=f"{fmnmx + sts + 1400:,}", fmnmx=f"{fmnmx:,}", sts=f"{sts:,}"))
    return path


def test_counts_are_read_across_wrapped_lines(tmp_path):
    text = report(tmp_path, "a.txt", 19_496_960, 1_052_804).read_text()
    assert opcode_counts(text) == {"FMNMX": 19_496_960, "HGMMA": 400, "STS": 1_052_804, "MUFU": 1000}


def test_the_table_puts_the_largest_excess_first_and_divides_per_opcode(tmp_path, capsys):
    a, b = report(tmp_path, "a.txt", 2_000_000, 1_000_000), report(tmp_path, "b.txt", 1_500_000, 4_096)
    assert main([str(a), str(b), "--per", "HGMMA"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows[1:]] == ["STS", "FMNMX", "total"]
    sts = rows[1].split()
    assert sts[3] == "995,904" and sts[4] == "2500.000" and sts[5] == "10.240"


@pytest.mark.parametrize("bad", ["no metric here", "sass__inst_executed_per_opcode 5 ()"])
def test_a_report_without_counts_is_one_clear_line(tmp_path, capsys, bad):
    good, broken = report(tmp_path, "a.txt", 10, 10), tmp_path / "b.txt"
    broken.write_text(bad)
    assert main([str(good), str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ncu_opcodes: ") and "\n" not in err


def test_per_needs_an_opcode_both_reports_count(tmp_path, capsys):
    a = report(tmp_path, "a.txt", 10, 10)
    assert main([str(a), str(a), "--per", "DMMA"]) == 2
    assert "DMMA" in capsys.readouterr().err
