"""Children before they cost an evaluation: the novelty filter, and the offline agent's one-knob mutations."""
from __future__ import annotations

import hashlib
import random
import re
from collections import Counter

from workbench.knobs import parse_knobs

# ---- novelty filter ----------------------------------------------------------------------------------------
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")


def normalized_lines(source: str) -> list[str]:
    """The source without comments, blank lines and whitespace differences, one statement line per item."""
    text = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", source))
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def normalized_sha(source: str) -> str:
    return hashlib.sha256("\n".join(normalized_lines(source)).encode()).hexdigest()


def line_changes(parent: str, child: str) -> tuple[list, list]:
    """(added, removed) normalised lines of child against parent, as multisets."""
    a, b = Counter(normalized_lines(parent)), Counter(normalized_lines(child))
    return sorted((b - a).elements()), sorted((a - b).elements())


def novelty_verdict(child: str, parent: str, parent_deleted, seen: set) -> str:
    """'' when the child is new; else why it is rejected before evaluation."""
    if normalized_sha(child) in seen:
        return "identical_source"
    added, _ = line_changes(parent, child)
    if added and set(added) <= set(parent_deleted):
        return "readds_deleted_lines"
    return ""


# ---- offline mutation: one knob, from the question's layer -------------------------------------------------
def knob_mutations(source: str, layer: str, rng: random.Random) -> list[tuple[str, str]]:
    """Every one-knob change of a kernel as (child source, description), in an order drawn from `rng`: the knobs
    of the question's layer first, then the rest (a question whose layer has no knob gets any knob)."""
    knobs = parse_knobs(source)
    moves = {True: [], False: []}
    for name, knob in knobs.items():
        for value in knob["choices"]:
            if value != knob["value"]:
                moves[knob["layer"] == layer].append((name, value))
    out = []
    for in_layer in (True, False):
        rng.shuffle(moves[in_layer])
        for name, value in moves[in_layer]:
            knob = knobs[name]
            old = f"{knob['prefix']}{knob['value']}{knob['rest']}"
            note = "" if in_layer else f" (no {layer} knob)" if not moves[True] else " (outside the layer)"
            out.append((source.replace(old, f"{knob['prefix']}{value}{knob['rest']}", 1),
                        f"knob {name} {knob['value']}->{value}{note}"))
    return out
