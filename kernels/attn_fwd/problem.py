"""Attention forward's problem interface, the part without torch: its shapes and their figures.

The harness loads this module by path (workbench/harness/problems.py). What a problem's problem.py defines:
    Scenario            a frozen dataclass: name, category, `key` (cache identity: every number, not the name),
                        flops(), min_bytes(), to_dict(); a problem other than attention adds `problem = NAME`
    COLUMNS             the suite CSV's required columns (`category` is always optional)
    CATEGORY_NAMES      {category code: what it holds}, in the order reports list them
    scenario_from_row   one CSV row (a dict of strings) -> Scenario, or ValueError saying what is wrong
    suite_row           Scenario -> its CSV row (COLUMNS, then category)
    FLASHINFER_OP_TYPES, from_flashinfer, to_flashinfer   (optional: `workbench suite from-flashinfer`, `export`)
Attention's own code has lived in the harness since before problems were data; these names point at it.
"""
from collections import Counter

from workbench.harness.scenarios import CATEGORY_NAMES, REQUIRED_COLUMNS, Scenario, scenario_from_row, suite_row

COLUMNS = REQUIRED_COLUMNS
FLASHINFER_OP_TYPES = ("gqa_ragged",)           # FlashInfer's ragged prefill (contiguous K/V); paged is not ours

__all__ = ["CATEGORY_NAMES", "COLUMNS", "Scenario", "scenario_from_row", "suite_row", "from_flashinfer",
           "to_flashinfer"]


def _lengths(axes: dict, read_tensor) -> list[tuple[int, int]]:
    """(q length, kv length) per sequence: from the indptr tensors when the workload gives them, else equal
    lengths when the totals split evenly."""
    qo, kv = read_tensor("qo_indptr"), read_tensor("kv_indptr")
    if qo is not None and kv is not None:
        if len(qo) != len(kv) or len(qo) < 2:
            raise ValueError(f"qo_indptr ({len(qo)}) and kv_indptr ({len(kv)}) do not describe one batch")
        return [(qo[i + 1] - qo[i], kv[i + 1] - kv[i]) for i in range(len(qo) - 1)]
    batch = int(axes["len_indptr"]) - 1
    total_q, total_kv = int(axes["total_q"]), int(axes["total_kv"])
    if batch < 1 or total_q % batch or total_kv % batch:
        raise ValueError(f"qo_indptr/kv_indptr are not given and {total_q} query and {total_kv} key tokens do not "
                         f"split evenly into {batch} sequences")
    return [(total_q // batch, total_kv // batch)] * batch


def from_flashinfer(definition: dict, axes: dict, read_tensor) -> list[dict]:
    """Suite rows for one gqa_ragged prefill workload: one scenario per distinct (q length, kv length) of its
    sequences, with their count as the batch; causal when the definition is (FlashInfer's causal mask is
    bottom-right aligned, as this contract's)."""
    name = definition["name"]
    if "prefill" not in name:
        raise ValueError("a gqa_ragged definition that is not prefill")
    hq, hkv, d = (int(axes[a]) for a in ("num_qo_heads", "num_kv_heads", "head_dim"))
    groups = Counter((q, k) for q, k in _lengths(axes, read_tensor) if q > 0 and k > 0)
    if not groups:
        raise ValueError("every sequence is empty")
    return [{"name": f"fi_{name}_b{count}_q{q}_k{k}", "batch": count, "heads_q": hq, "heads_kv": hkv,
             "seqlen_q": q, "seqlen_k": k, "head_dim": d, "causal": int("causal" in name), "dtype": "bf16",
             "category": "serving"} for (q, k), count in groups.items()]


def to_flashinfer(s: Scenario) -> dict:
    """The FlashInfer-Bench definition, axes and inputs this shape is an instance of (equal-length sequences)."""
    qo = [i * s.seqlen_q for i in range(s.batch + 1)]
    kv = [i * s.seqlen_k for i in range(s.batch + 1)]
    mask = "_causal" if s.causal else ""
    return {"definition": f"gqa_ragged_prefill{mask}_h{s.heads_q}_kv{s.heads_kv}_d{s.head_dim}",
            "axes": {"total_q": qo[-1], "total_kv": kv[-1], "len_indptr": s.batch + 1},
            "inputs": {"q": {"type": "random"}, "k": {"type": "random"}, "v": {"type": "random"},
                       "sm_scale": {"type": "scalar", "value": s.head_dim ** -0.5}},
            "tensors": {"qo_indptr": qo, "kv_indptr": kv},
            "note": "workbench attn_fwd: q, k, v as [batch, seq, heads, dim], equal lengths per sequence"}
