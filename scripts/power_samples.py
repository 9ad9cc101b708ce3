"""Board power and SM clock samples from `nvidia-smi -lms`, and their means over a timed window: power_probe.py's
arithmetic, kept free of torch so the host tests run it.

Why: on the largest shapes 04 runs 1.2 % fewer cycles than FA3 yet 4 % slower in clock (v26 on an H100, shapes of 3 ms
and more: 1596 against 1665 MHz), so they lose on time. Under the board's power cap the clock follows the energy a
kernel spends per cycle; the energy per call (mean watts x seconds per call, each implementation alone on the GPU
for a few seconds) says whether 04 spends more than FA3 for the same work, or whether the timer's order did it.
"""
import math
from datetime import datetime

# the query power_probe.py runs; POWER_FIELDS[0] is tried first (the instant reading, drivers from 535 on), the
# second where the driver refuses it (power.draw: a one-second average on recent drivers)
POWER_FIELDS = ("power.draw.instant", "power.draw")
# why the clock is where it is (a bit mask: 0x4 the power cap); the older name on older drivers, the p-state last
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active", "pstate")


def query_fields(power_field, reason_field):
    """The columns parse_line reads, in its order."""
    return ("timestamp", power_field, "clocks.sm", "temperature.gpu", reason_field)


def parse_line(line):
    """One `--format=csv,noheader,nounits` row -> dict(t, watts, mhz, temp_c, reasons), or None for a row that is
    not a sample (a header, a blank, '[N/A]' in a number)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 5:
        return None
    try:
        t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        return dict(t=t, watts=float(parts[1]), mhz=float(parts[2]), temp_c=float(parts[3]),
                    reasons=parts[4])
    except ValueError:
        return None


def window_stats(samples, t0, t1, skip_s=0.5):
    """Means over the samples in [t0 + skip_s, t1] (the first skip_s: the clock and the power still settle), or
    None where the window holds fewer than three samples."""
    inside = [s for s in samples if t0 + skip_s <= s["t"] <= t1]
    if len(inside) < 3:
        return None
    reasons = {}
    for s in inside:
        reasons[s["reasons"]] = reasons.get(s["reasons"], 0) + 1
    return dict(n=len(inside), watts=_mean(s["watts"] for s in inside), mhz=_mean(s["mhz"] for s in inside),
                temp_c=max(s["temp_c"] for s in inside), reasons=max(reasons, key=reasons.get))


def energy_row(label, shape, calls, seconds, stats):
    """One implementation's hold on one shape: microseconds per call (wall time of back-to-back graph replays),
    the window's means, and joules per call (mean watts x seconds per call)."""
    us = seconds / calls * 1e6
    row = dict(label=label, shape=shape, calls=calls, us_per_call=us)
    if stats:
        row.update(stats, joules_per_call=stats["watts"] * us * 1e-6)
    return row


def ratio_table(rows, reference):
    """Per shape and implementation, its energy per call, clock and time over the reference's (means over the
    holds of each): lines for the log."""
    out = []
    for shape in dict.fromkeys(r["shape"] for r in rows):
        mine = [r for r in rows if r["shape"] == shape and "joules_per_call" in r]
        ref = [r for r in mine if r["label"] == reference]
        if not ref:
            out.append(f"{shape}: no window for {reference}")
            continue
        base = {k: _mean(r[k] for r in ref) for k in ("joules_per_call", "mhz", "us_per_call", "watts")}
        for label in dict.fromkeys(r["label"] for r in mine):
            got = {k: _mean(r[k] for r in mine if r["label"] == label) for k in base}
            out.append(f"{shape:34s} {label:28s} {got['us_per_call']:9.1f} us {got['watts']:6.1f} W "
                       f"{got['mhz']:6.0f} MHz {got['joules_per_call'] * 1e3:8.3f} mJ  vs {reference}: energy "
                       f"x{got['joules_per_call'] / base['joules_per_call']:.3f}, clock x{got['mhz'] / base['mhz']:.3f}"
                       f", time x{got['us_per_call'] / base['us_per_call']:.3f}")
    return out


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else math.nan
