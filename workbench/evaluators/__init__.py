"""Evaluators: who judges a candidate. One interface, `pool.submit(request) -> Future[SuiteResult]`, over local GPUs
or Ray, and the CPU stand-ins (`make_evaluator("standin")`: made-up timings, no GPU).

    with make_pool("local") as pool:                      # one slot per local GPU (CPU: `slots`, default 2)
        futures = [pool.submit(CheckRequest(kernel_path=p, suite="dev26")) for p in paths]
        results = [f.result() for f in futures]
    campaign = Campaign.create(config, backend, evaluator=pool.evaluator)   # Callable[[CheckRequest], SuiteResult]

* LocalPool (local_pool.py): each candidate is judged by the harness (`check`), which runs it in a fresh worker
  subprocess pinned to one GPU (CUDA_VISIBLE_DEVICES), with the harness's timeouts (worker start, every scenario) and
  crash isolation. Builds run before a GPU is taken, `build_workers` at a time on the CPU cores.
* RayPool (ray_pool.py): each candidate is one Ray task with one GPU (`num_gpus=1`; CPU slots on a cluster
  without GPUs) in a fresh Ray worker (`max_calls=1`); the kernel's source travels with the task, the harness runs
  on the node (its contained worker, its staged-cache merge), and its progress lines come back with the result.
  A task that outlives its time limit is cancelled with `ray.cancel(ref, force=True)` (Ray kills the worker and its
  children) and comes back as status `timeout`. A Ray worker that dies is judged again once under the harness
  (`versions["retried"]` says why), and comes back as status `crashed` on a second death or under an in-process
  evaluator.

Every result is stamped with where it ran (`versions["host"]`, `versions["device"]`, `versions["pool"]`), and
`group_by_gpu` / `one_gpu_model` keep numbers from different GPU models out of one comparison.
`python scripts/pool_bench.py` measures a pool's throughput on one GPU against all of them (docs/benchmarks.md).
evaluator.py holds what both pools share; standin_timings.py the stand-in evaluators.
"""
from __future__ import annotations

import argparse
from typing import Optional

from workbench.arguments import count
from workbench.evaluators.evaluator import Evaluator, PoolError, Progress
from workbench.evaluators.local_pool import LocalPool

POOLS = ("local", "ray")
EVALUATORS = ("harness", "standin")


def make_evaluator(name: str) -> Optional[Evaluator]:
    """`harness` (None: the real harness, workbench.harness.check) or `standin` (made-up CPU timings from the
    kernel's @knob values: demos and tests without a GPU)."""
    if name == "standin":
        from workbench.evaluators.standin_timings import KnobEvaluator
        return KnobEvaluator()
    if name not in ("harness", ""):        # "": a config recorded before the field existed
        raise ValueError(f"unknown evaluator {name!r}; use {' or '.join(EVALUATORS)}")
    return None


def make_pool(kind: str = "local", *, ray_address: Optional[str] = None, slots: Optional[int] = None,
              evaluator: Optional[Evaluator] = None, progress: Optional[Progress] = None, **options):
    """`local` or `ray` to a pool; `evaluator` None means the real harness (workbench.harness.check)."""
    if kind == "local":
        if ray_address:
            raise PoolError("--ray-address needs --pool ray")
        return LocalPool(slots, evaluator=evaluator, progress=progress, **options)
    if kind == "ray":
        from workbench.evaluators.ray_pool import RayPool      # lazy: imports ray
        return RayPool(ray_address, evaluator=evaluator, slots=slots, progress=progress, **options)
    raise PoolError(f"unknown pool {kind!r}; use local or ray")


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", choices=POOLS, default="local",
                        help="where candidates are judged: local GPUs (default) or a Ray cluster")
    parser.add_argument("--ray-address", default=None,
                        help="a Ray cluster: HEAD_IP:6379 (what `ray start --head` printed; RAY_AUTH_MODE=token "
                             "when it uses token authentication) or auto (the cluster `ray start` made on this "
                             "host); default: a new local instance")
    parser.add_argument("--slots", type=count(1), default=None,
                        help="candidates judged at once (default: one per GPU; 2 on a machine without one)")
