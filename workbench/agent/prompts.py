"""The texts an embedded agent reads: the system prompt (its task paragraph is the campaign's problem's), the
opening message, and the nudges to continue (loop.py sends them)."""
from __future__ import annotations

from workbench.campaign.config import CampaignConfig, campaign_problem

SYSTEM_PROMPT = """\
You are optimising a single-file CUDA attention-forward kernel (bf16 in, fp32 accumulation) for an NVIDIA H200
(sm_90a). The working file is kernel.cu in your workspace; it must keep exporting

  extern "C" int attn_fwd(q, k, v, o, lse, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal,
                          softmax_scale, cudaStream_t stream)

with the layouts and masking rules described in its header comment. CUTLASS, CuTe, cuBLAS and cuDNN are not
allowed. Use the tools: read, list, write and edit files in the workspace; run_harness builds, verifies and
times a file on the suite "{suite}" and reports per-scenario results, geomean speedups against the original
kernel and FA3, suspicion flags, and whether the stop condition holds; compile_report, sass_summary and
ncu_profile look inside a build; revert restores an evaluated version by its sha.

The campaign ends only when run_harness reports that the stop condition holds: {stop_expr}
Your own judgement that the kernel is finished does not end it. Measure before you believe a change helped.
"""
# what a problem other than attention puts in place of the first paragraph (its problem.toml [agent] task)
TASK_END = "with the layouts and masking rules described in its header comment."


def system_prompt(config: CampaignConfig) -> str:
    """SYSTEM_PROMPT for attention; another problem's task paragraph (problem.toml [agent] task) and main anchor."""
    text = SYSTEM_PROMPT.format(suite=config.suite, stop_expr=config.stop_expr or "(none)")
    problem = campaign_problem(config.problem, config.kernel_path)
    task = problem.toml.get("agent", {}).get("task")
    if problem.name == "attn_fwd" or not task:
        return text
    rest = text[text.index(TASK_END) + len(TASK_END):]
    rest = rest.replace("the original\nkernel and FA3", f"the original\nkernel and {problem.main_anchor}")
    return task.strip() + rest


CONTINUE_TEXT = ("The stop condition ({stop_expr}) does not hold yet; the best so far is {best} against the "
                 "original kernel. Continue.")
TRUNCATED_TEXT = "Your reply was cut off at the output token limit. Continue where you stopped."
# The Messages API needs a user message before the first assistant turn: the task, stated once.
OPENING_TEXT = ("Make kernel.cu faster on the suite \"{suite}\" while keeping it correct. Start by running the "
                "harness on it, then improve it step by step. Stop condition: {stop_expr}.")
