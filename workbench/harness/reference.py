"""Inputs and the fp32 reference.

Inputs are drawn from a seed into buffers that are allocated once per scenario, so a kernel sees new contents
behind the same pointers (that is how a cached-by-pointer result is caught). The reference is computed in fp32
(no TF32) on a pristine copy of the inputs, for a sample of query rows against all keys: that is exact for those
rows and costs a fraction of the full attention on large shapes.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from workbench.harness.scenarios import Scenario

BF16_POISON_BITS = 0x7FA1        # a NaN with a payload no arithmetic produces: "still poison" = never written
LSE_POISON_BITS = 0x7FA00A11     # fp32 NaN with a distinctive payload
GUARD_BF16_BITS = 0x5A5A         # guard pattern around o (a finite value, so an overwrite is visible)
GUARD_F32_BITS = 0x5A5A5A5A
REFERENCE_CHUNK_ELEMS = 1 << 27  # scores held at once by the reference: 512 MB of fp32


def _disable_tf32() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def softmax_scale(s: Scenario) -> float:
    return s.head_dim ** -0.5


@dataclass
class Inputs:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor

    @classmethod
    def allocate(cls, s: Scenario, device: str) -> "Inputs":
        bf16 = torch.bfloat16
        return cls(torch.empty(s.batch, s.seqlen_q, s.heads_q, s.head_dim, dtype=bf16, device=device),
                   torch.empty(s.batch, s.seqlen_k, s.heads_kv, s.head_dim, dtype=bf16, device=device),
                   torch.empty(s.batch, s.seqlen_k, s.heads_kv, s.head_dim, dtype=bf16, device=device))

    def fill(self, seed: int, scale: float = 1.0) -> None:
        """New random contents in place (same pointers). Scale is a power of two, so bf16 stays exact."""
        gen = torch.Generator(device=self.q.device).manual_seed(seed)
        for t in (self.q, self.k, self.v):
            t.normal_(0.0, 1.0, generator=gen)
            if scale != 1.0:
                t.mul_(scale)

    def clone(self) -> "Inputs":
        return Inputs(self.q.clone(), self.k.clone(), self.v.clone())

    def equal(self, other: "Inputs") -> list[str]:
        """Names of the tensors whose bits differ from other's."""
        return [n for n in ("q", "k", "v")
                if not torch.equal(getattr(self, n).view(torch.int16), getattr(other, n).view(torch.int16))]


def sample_rows(s: Scenario, count: int, full_max_elems: int, gen: torch.Generator) -> torch.Tensor:
    """Query rows to check: all of them on small shapes, else first/last rows, rows at the causal edge, random."""
    if s.batch * s.heads_q * s.seqlen_q * s.seqlen_k <= full_max_elems or s.seqlen_q <= count:
        return torch.arange(s.seqlen_q)
    edge = max(0, s.seqlen_q - s.seqlen_k)  # first row that sees a key under the bottom-right causal mask
    picks = {0, 1, s.seqlen_q - 1, s.seqlen_q - 2, edge, min(s.seqlen_q - 1, edge + 1)}
    rand = torch.randperm(s.seqlen_q, generator=gen)[: count - len(picks)].tolist()
    return torch.tensor(sorted(picks.union(rand)))[:count].sort().values


@dataclass
class Reference:
    rows: torch.Tensor   # [R] query indices
    o: torch.Tensor      # [B, R, Hq, D] fp32
    lse: torch.Tensor    # [B, Hq, R] fp32 (-inf where a row sees no key)

    @property
    def primary(self) -> torch.Tensor:
        """The output an anchor's error and `workbench warm`'s check are measured on."""
        return self.o

    def head(self, n: int) -> "Reference":
        """The first n of these rows."""
        return Reference(rows=self.rows[:n], o=self.o[:, :n], lse=self.lse[:, :, :n])

    def to_cache(self) -> dict:
        """CPU tensors for the timing cache (o as bf16: what a kernel wrote)."""
        return {"rows": self.rows.cpu(), "o": self.o.to(torch.bfloat16).cpu(), "lse": self.lse.cpu()}

    @classmethod
    def from_cache(cls, data: dict, device: str) -> "Reference":
        return cls(rows=data["rows"].to(device), o=data["o"].to(device).float(), lse=data["lse"].to(device))


def reference(s: Scenario, inputs: Inputs, rows: torch.Tensor) -> Reference:
    """fp32 attention for the given query rows (exact: every key, bottom-right causal mask)."""
    _disable_tf32()
    device = inputs.q.device
    rows = rows.to(device)
    scale = softmax_scale(s)
    group = s.group_size
    out_o = torch.empty(s.batch, len(rows), s.heads_q, s.head_dim, dtype=torch.float32, device=device)
    out_lse = torch.empty(s.batch, s.heads_q, len(rows), dtype=torch.float32, device=device)
    keys = torch.arange(s.seqlen_k, device=device)
    masked = None
    if s.causal:
        masked = keys[None, :] > (rows[:, None] + (s.seqlen_k - s.seqlen_q))   # [R, Sk]
    per_head = len(rows) * s.seqlen_k
    heads_per_chunk = max(1, min(s.heads_q, REFERENCE_CHUNK_ELEMS // max(1, per_head)))
    for b in range(s.batch):
        q = inputs.q[b, rows].float()                                   # [R, Hq, D]
        k = inputs.k[b].float()                                         # [Sk, Hkv, D]
        v = inputs.v[b].float()
        for h0 in range(0, s.heads_q, heads_per_chunk):
            h1 = min(s.heads_q, h0 + heads_per_chunk)
            kv_heads = torch.arange(h0, h1, device=device) // group
            qh = q[:, h0:h1].permute(1, 0, 2)                           # [h, R, D]
            kh = k[:, kv_heads].permute(1, 0, 2)                        # [h, Sk, D]
            vh = v[:, kv_heads].permute(1, 0, 2)
            scores = torch.bmm(qh, kh.transpose(1, 2)) * scale          # [h, R, Sk]
            if masked is not None:
                scores.masked_fill_(masked[None], float("-inf"))
            lse = torch.logsumexp(scores, dim=-1)                       # -inf for rows that see nothing
            probs = torch.exp(scores - lse[..., None])
            probs = torch.nan_to_num(probs, nan=0.0)                    # (-inf) - (-inf) on empty rows
            out_o[b, :, h0:h1] = torch.bmm(probs, vh).permute(1, 0, 2)
            out_lse[b, h0:h1] = lse
    return Reference(rows=rows, o=out_o, lse=out_lse)


def reference_from_output(o: torch.Tensor, lse: torch.Tensor, rows: torch.Tensor) -> Reference:
    """Wrap a kernel's full output as a Reference on the same rows (to compare two kernels)."""
    rows = rows.to(o.device)
    return Reference(rows=rows, o=o[:, rows].float(), lse=lse[:, :, rows].float())
