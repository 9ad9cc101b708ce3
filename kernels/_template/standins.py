"""The NEWPROB problem's CPU stand-ins (`workbench check standin:NAME --problem NEWPROB`): Python kernels in the
harness's calling convention `kernel(inputs, y, scenario) -> int`, so CI proves each rejection of wrong/ without a
GPU. Add one per known-bad kernel you write (kernels/gemm_bf16/standins.py pairs each with its .cu twin)."""
from __future__ import annotations

import time

from workbench.harness import cpu_device

from .judge import op

KERNELS = ["_ZN7standin6scaledILi1EEEvPKf"]        # the stand-ins' own "kernel", mangled
OWN_KERNEL = "void standin::scaled<1>(float const*)"


def correct(x, y, s):
    cpu_device.report(OWN_KERNEL)
    y.copy_(op(x.x))
    return 0


def writes_nothing(x, y, s):
    return 0


def off_by_half(x, y, s):
    """A wrong operation: 1.5 x instead of 2 x."""
    cpu_device.report(OWN_KERNEL)
    y.copy_(0.75 * op(x.x))
    return 0


def slow_correct(x, y, s):
    """Correct and slower: the baseline of CPU runs (the original.cu stand-in)."""
    time.sleep(0.002)
    return correct(x, y, s)


STANDINS = {f.__name__: f for f in (correct, writes_nothing, off_by_half, slow_correct)}
EXPECTED_REASON = {"writes_nothing": "unwritten", "off_by_half": "mismatch"}
EXPECTED_REASON_IN_WORKER: dict = {}
