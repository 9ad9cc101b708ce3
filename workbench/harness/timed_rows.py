"""What a candidate's timed launches wrote, set aside between its samples with device kernels only: no host
transfer, no allocation, no synchronisation. worker.ScenarioRun.time_kernel compares each launch's rows with the
fp32 reference after the samples.

Between two samples only `before(i)` (new input contents, poisoned outputs) and `keep(i)` run. Every buffer is
allocated before the first launch: the row indices of every launch and the rows of each output they select. keep(i)
draws the launch's random rows on the device (its own generator, seeded from the run's fresh seed) and copies
those rows of every output with index_select into the launch's slot: small kernels of the kind before(i)
enqueues anyway. What a row is belongs to the problem: its judge.py names the fixed rows (timed_fixed_rows), how
many rows an output has (output_rows) and which dimension of each output is the row (OUTPUT_ROW_DIMS); without a
judge, attention's (a query row of o [B, Sq, H, D] and lse [B, H, Sq]). The rows are drawn after the launch they
check, as before, so no kernel can know them.

Why so strict: the device-time proof (tests/test_gpu_device_time.py) saw the check between samples cost the next
replay of a 5 us kernel 4-5 us, first when the fp32 reference ran there (docs/benchmarks.md, runs 5-6), then again
when only the sampled rows were copied aside (run 9, 2026-12-01: `checked` 10.3 us against `before` 6.0 us on
C_s100_d64_c0): a pageable host-to-device copy of the row indices and four fresh tensors per launch; before(i),
which enqueues kernels only, never moved a replay. tests/test_timed_rows.py counts what runs between samples.
"""
from __future__ import annotations

from typing import Iterator

import torch

from workbench.harness.scenarios import Scenario


def fixed_rows(s: Scenario, count: int) -> list[int]:
    """Rows every launch checks (reference.sample_rows' picks): the first two, the last two and the causal edge;
    all of them when the shape has no more than `count` rows."""
    if s.seqlen_q <= count:
        return list(range(s.seqlen_q))
    edge = max(0, s.seqlen_q - s.seqlen_k)  # first row that sees a key under the bottom-right causal mask
    return sorted({0, 1, s.seqlen_q - 1, s.seqlen_q - 2, edge, min(s.seqlen_q - 1, edge + 1)})[:count]


class TimedRows:
    """Slots for `capacity` launches of `count` rows each, on the outputs' device. `judge`: the problem's judge
    module (default attention's rows); `like`: one launch's output tensors, whose shapes the slots take."""

    def __init__(self, s, device: str, count: int, capacity: int, seed: int, judge=None, like: tuple = ()):
        n_rows = judge.output_rows(s) if judge is not None else s.seqlen_q
        fixed = (judge.timed_fixed_rows if judge is not None else fixed_rows)(s, count)
        self.dims = tuple(judge.OUTPUT_ROW_DIMS) if judge is not None else (1, 2)
        width = len(fixed) if n_rows <= count else count
        self.s, self.n_rows, self.fixed, self.width, self.capacity = s, n_rows, len(fixed), width, max(1, capacity)
        self.rows = torch.empty(self.capacity, width, dtype=torch.int64, device=device)
        self.rows[:, : self.fixed] = torch.tensor(fixed, dtype=torch.int64, device=device)
        if not like:        # attention's outputs, from the shape alone
            like = (torch.empty(s.batch, 0, s.heads_q, s.head_dim, dtype=torch.bfloat16),
                    torch.empty(s.batch, s.heads_q, 0, dtype=torch.float32))
        self.slots = []
        for tensor, dim in zip(like, self.dims):
            shape = list(tensor.shape)
            shape[dim] = width
            self.slots.append(torch.empty(self.capacity, *shape, dtype=tensor.dtype, device=device))
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.seeds: list[int] = []            # the input seed each kept launch was given, in order
        self.overflow: list[tuple] = []       # launches past capacity: (seed, rows, *output rows), allocated

    def keep(self, seed: int, *outputs: torch.Tensor) -> None:
        """Set aside the rows of what the launch just wrote (the outputs in the kernel's order)."""
        k = len(self.seeds)
        if k >= self.capacity:     # never in a timing the capacity was sized for; correct, only not quiet
            rows = self.rows[0].clone()
            if self.width > self.fixed:
                rows[self.fixed:].random_(0, self.n_rows, generator=self.generator)
            self.seeds.append(seed)
            self.overflow.append((seed, rows, *(out.index_select(d, rows) for out, d in zip(outputs, self.dims))))
            return
        rows = self.rows[k]
        if self.width > self.fixed:
            rows[self.fixed:].random_(0, self.n_rows, generator=self.generator)
        for out, dim, slot in zip(outputs, self.dims, self.slots):
            torch.index_select(out, dim, rows, out=slot[k])
        self.seeds.append(seed)

    def __len__(self) -> int:
        return len(self.seeds)

    def launches(self) -> Iterator[tuple]:
        """(input seed, rows, then each output's rows: attention's o [B, R, H, D], lse [B, H, R]) of every kept
        launch, in order."""
        for k in range(min(len(self.seeds), self.capacity)):
            yield (self.seeds[k], self.rows[k], *(slot[k] for slot in self.slots))
        yield from self.overflow
