"""scripts/power_samples.py: nvidia-smi rows parsed, window means without the settling start, energy per call."""
import math
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import power_samples as ps  # noqa: E402


def _line(t, watts, mhz, temp=60, reasons="0x0000000000000004"):
    stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    return f"{stamp}, {watts:.2f}, {mhz:.0f}, {temp}, {reasons}"


def test_a_row_parses_and_non_rows_do_not():
    s = ps.parse_line(_line(1_800_000_000.25, 650.5, 1755))
    assert math.isclose(s["t"], 1_800_000_000.25, abs_tol=1e-3)
    assert (s["watts"], s["mhz"], s["temp_c"], s["reasons"]) == (650.5, 1755.0, 60.0, "0x0000000000000004")
    assert ps.parse_line("timestamp, power.draw.instant [W], clocks.sm [MHz], temperature.gpu, pstate") is None
    assert ps.parse_line("") is None
    assert ps.parse_line(_line(1_800_000_000, 0, 1755).replace("0.00", "[N/A]")) is None


def test_window_skips_the_settling_start_and_needs_three_samples():
    t0 = 1_800_000_000.0
    samples = [ps.parse_line(_line(t0 + 0.02 * i, 300 if i < 25 else 700, 1980 if i < 25 else 1700,
                                   reasons="0x1" if i < 25 else "0x4")) for i in range(150)]
    st = ps.window_stats(samples, t0, t0 + 3.0, skip_s=0.5)
    assert math.isclose(st["watts"], 700) and math.isclose(st["mhz"], 1700) and st["reasons"] == "0x4"
    assert st["n"] == 125
    assert ps.window_stats(samples, t0 + 2.0, t0 + 2.535, skip_s=0.5) is None   # 2.50 and 2.52 left


def test_energy_is_watts_times_seconds_per_call_and_the_table_divides_by_the_reference():
    st = dict(n=10, watts=600.0, mhz=1600.0, temp_c=70.0, reasons="0x4")
    ours = ps.energy_row("04", "A", calls=1000, seconds=2.0, stats=st)     # 2 ms a call at 600 W: 1.2 J
    assert math.isclose(ours["us_per_call"], 2000) and math.isclose(ours["joules_per_call"], 1.2)
    fa3 = ps.energy_row("fa3", "A", calls=1000, seconds=2.1, stats=dict(st, watts=500.0, mhz=1700.0))
    assert "joules_per_call" not in ps.energy_row("fa3", "B", 10, 1.0, None)
    lines = ps.ratio_table([ours, fa3, ps.energy_row("04", "B", 10, 1.0, None)], "fa3")
    mine = next(line for line in lines if line.startswith("A") and " 04 " in line)
    assert "energy x1.143" in mine and "clock x0.941" in mine and "time x0.952" in mine
    assert "B: no window for fa3" in lines
