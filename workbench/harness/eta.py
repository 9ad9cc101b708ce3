"""The time a run has left: each remaining scenario priced by what its parts cost so far; parts already cached
are priced at nothing, so a resumed run's estimate counts the work the killed one finished as done.

A scenario's wall time is split into the seconds each implementation timed afresh took (the worker's `spent`:
the baseline, each anchor) and the rest (the candidate's build share, verification and timing, references).
Each part is fitted as a + b * flops over the scenarios seen (least squares, both terms >= 0: a constant cost
per shape plus one that grows with the work), and a remaining scenario costs the rest plus the parts it still
has to time. A part never seen timed yet (every earlier scenario had it cached) costs nothing until it is.
"""
from __future__ import annotations

from typing import Iterable, Optional

from workbench.harness.scenarios import Scenario

REST = "rest"


class LinearFit:
    """y ~ a + b x with a, b >= 0, from running sums."""

    def __init__(self):
        self.n = 0
        self.sx = self.sy = self.sxx = self.sxy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.sx, self.sy, self.sxx, self.sxy = self.sx + x, self.sy + y, self.sxx + x * x, self.sxy + x * y

    def predict(self, x: float) -> float:
        mean_x, mean_y = self.sx / self.n, self.sy / self.n
        var = self.sxx / self.n - mean_x ** 2
        if self.n < 2 or var <= 1e-12 * max(1.0, mean_x ** 2):
            return max(0.0, mean_y)
        b = (self.sxy / self.n - mean_x * mean_y) / var
        a = mean_y - b * mean_x
        if b < 0:
            return max(0.0, mean_y)
        if a < 0:                      # through the origin instead
            return max(0.0, self.sxy / self.sxx * x)
        return a + b * x


class Estimator:
    def __init__(self, scenarios: Iterable[Scenario], pending: dict[str, set]):
        """pending: scenario name -> the implementations it still has to time (not cached)."""
        self.left = {s.name: s for s in scenarios}
        self.pending = pending
        self.fits: dict[str, LinearFit] = {}

    def done(self, name: str, wall_s: float, spent: dict) -> None:
        s = self.left.pop(name, None)
        if s is None:
            return
        flops = float(s.flops())
        spent = {k: float(v) for k, v in spent.items() if isinstance(v, (int, float)) and v >= 0}
        self.fits.setdefault(REST, LinearFit()).add(flops, max(0.0, wall_s - sum(spent.values())))
        for impl, seconds in spent.items():
            self.fits.setdefault(impl, LinearFit()).add(flops, seconds)

    def seconds_left(self) -> Optional[float]:
        if REST not in self.fits:
            return None
        total = 0.0
        for name, s in self.left.items():
            flops = float(s.flops())
            total += self.fits[REST].predict(flops)
            total += sum(self.fits[impl].predict(flops) for impl in self.pending.get(name, ()) if impl in self.fits)
        return total


def format_eta(seconds: Optional[float]) -> str:
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    return f"eta {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"eta {seconds}s"
