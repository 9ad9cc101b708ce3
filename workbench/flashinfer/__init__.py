"""FlashInfer-Bench's formats in and out: production shapes from a serving run's workload files become a suite
(`workbench suite from-flashinfer DIR`, workloads.py), and a run's evaluations become FlashInfer-Bench traces
(`workbench export --flashinfer`, export.py), both checked against the published schema (schema.py). Which
operations map to which problem, and how, is the problem's own (its problem.py: FLASHINFER_OP_TYPES,
from_flashinfer, to_flashinfer)."""
