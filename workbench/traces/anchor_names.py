"""How logs, widgets and the report spell an anchor ('FA3', 'cuBLAS'); a record that names none is attention's."""
from __future__ import annotations

from typing import Optional

LEGACY_MAIN = "fa3"         # the main anchor of every record written before campaigns named theirs

# one not listed is printed as its name in capitals (`x CUBLAS` style)
LABELS = {"fa3": "FA3", "fa4": "FA4", "fa2": "FA2", "cudnn": "cuDNN", "cublas": "cuBLAS", "triton": "Triton",
          "original": "original"}


def label(anchor: Optional[str]) -> str:
    """The anchor's name as a log line prints it: 'FA3', 'cuBLAS'; no anchor (an older record) is FA3."""
    name = anchor if isinstance(anchor, str) and anchor else LEGACY_MAIN      # a null read back from parquet: NaN
    return LABELS.get(name, name.upper())
