"""The trusted evaluator. Imports nothing else from the package, so an agent's code never reaches the judge.

`check(CheckRequest) -> SuiteResult` (check.py) judges one kernel on one suite in two processes:

    parent (the caller's process)                 | worker (a fresh subprocess per candidate, one GPU)
    ---------------------------------------------+---------------------------------------------------
    check.py      request in, result out          | worker.py     per scenario: verify, then time
    build.py      nvcc, cached by source sha      | verify.py     every way to be wrong has a reason
      build_guard.py, nvcc.py, kernel_names.py    | reference.py  seeded inputs, the fp32 reference
      what the source and library may hold       | timing.py     device time (graph_capture.py,
    stop.py       the stop predicate              |                timing_cache.py, timing_proof.py)
    staged_cache.py  the worker's caches merged   | anchors.py    FA3, FA4, cuDNN, FA2
    foreign.py    which device work was foreign   | own_kernels.py, activity.py   the foreign-kernel record
                                                  | kernel_lib.py the built .so through ctypes
                                                  | standins.py, cpu_device.py    CPU stand-ins (no GPU)

The subprocess boundary: check.py starts `python -m workbench.harness.sandbox worker` (sandbox.py contains the
candidate's host code: a dropped uid, a private /tmp, no network, rlimits; `python -m workbench.harness.worker`
where containment is off), writes the job as JSON on its stdin and reads one JSON event per line from its stdout
(`worker.emit`): a crash or hang costs the worker, never the caller.

The records (result.py): CheckRequest (what to judge; crosses to the worker as JSON), Stats (one
implementation's timing on one scenario), ScenarioResult (one scenario's verdict), SuiteResult (the run: rows,
geomeans, flags, stop_met; `exit_code` turns it into a command's exit status). result_line.py prints it as one
`workbench-result:` line. The problem as data: scenarios.py (suites/*.csv), problem.py (problem.toml), paths.py.

Reading order for the story of `workbench check FILE -> geomean`:
    1. scenarios.py   the shapes, and the FLOPs every TFLOP/s is computed from
    2. result.py      what goes in and what comes out
    3. check.py       the parent: build, start the worker, gather its rows, flags, stop predicate
    4. build.py       a .cu into a .so, refused when it reaches for a forbidden library
    5. worker.py      the child: load the kernel, then per scenario verify and time
    6. verify.py      poisoned outputs, guard bytes, the fp32 reference, cheats each with a reason
    7. timing.py      one CUDA-graph replay per sample, L2 flushed; the geomean is of these medians
"""
