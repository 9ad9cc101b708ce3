"""Attention forward's CPU stand-ins (`standin:NAME`): Python versions of the correct kernel and of each failure
in wrong/, in the kernel calling convention `kernel(inputs, o, lse, scenario) -> int` (the Outputs' tensors in
order). They live in the harness (workbench/harness/standins.py); the harness loads this module by path."""
from workbench.harness.standins import (EXPECTED_REASON, EXPECTED_REASON_IN_WORKER, KERNELS,  # noqa: F401
                                        STANDINS)
