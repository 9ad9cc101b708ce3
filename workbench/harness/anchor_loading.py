"""Load a problem's anchors by name from its table of loaders, never letting one that fails stop the harness."""
from __future__ import annotations

from typing import Callable, Iterable


def load_from(loaders: dict[str, Callable], install_hints: dict[str, str],
              names: Iterable[str]) -> tuple[dict, dict, dict]:
    """(anchors by name, versions by name, one-line reasons for the ones that could not be loaded)."""
    anchors, versions, missing = {}, {}, {}
    for name in names:
        if name not in loaders:
            missing[name] = f"unknown anchor (choose from {', '.join(loaders)})"
            continue
        try:
            anchors[name], versions[name] = loaders[name]()
        except Exception as err:  # an anchor that fails to import must not stop the harness
            missing[name] = f"{type(err).__name__}: {str(err)[:120]} — {install_hints[name]}"
    return anchors, versions, missing
