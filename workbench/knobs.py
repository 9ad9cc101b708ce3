"""The `@knob` lines a kernel declares, read by the offline agent, the evolution's mutations and the pool bench.

    #define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}          (optional: layer=pipelining)

Each knob maps to a layer of the question bank (by name, or `layer=` on its line), so a question can steer
which knobs are tried first. Lives at the package's top so `pool`, `evolve` and `agent` reach it without
importing one another.
"""
from __future__ import annotations

import re

KNOB_LINE = re.compile(r"^(?P<prefix>[ \t]*#define[ \t]+(?P<name>\w+)[ \t]+)(?P<value>\S+)(?P<rest>[ \t]*//[ \t]*"
                       r"@knob[ \t]+(?P=name)[ \t]+\S+[ \t]+\{(?P<choices>[^}]*)\}(?P<tail>.*))$", re.M)
# knob name fragments -> layer, first match wins
LAYER_HINTS = (
    ("pipelining", ("STAGE", "PIPE", "PREFETCH", "KEY_TILE", "BLOCK_N", "KV_TILE", "BUFFER")),
    ("parallelism", ("ROWS", "BLOCK_M", "WARP", "THREAD", "CTA", "CLUSTER")),
    ("memory", ("LANE", "VEC", "CHUNK", "SMEM", "PAD", "SWIZZLE", "LOAD")),
    ("tensor-core/instructions", ("UNROLL", "MMA", "FAST", "EXP")),
    ("launch/host", ("GRID", "SPLIT", "PERSIST", "SCHED")),
)


def knob_layer(name: str, tail: str = "") -> str:
    m = re.search(r"layer=([\w/-]+)", tail)
    if m:
        return m.group(1)
    upper = name.upper()
    return next((layer for layer, parts in LAYER_HINTS if any(p in upper for p in parts)), "algorithm")


def parse_knobs(source: str) -> dict:
    """{name: {value, choices, layer, prefix, rest}} for every `@knob` #define line, in file order."""
    knobs = {}
    for m in KNOB_LINE.finditer(source):
        choices = [c.strip() for c in m.group("choices").split(",") if c.strip()]
        knobs[m.group("name")] = {"value": m.group("value"), "choices": choices, "prefix": m.group("prefix"),
                                  "rest": m.group("rest"), "layer": knob_layer(m.group("name"), m.group("tail"))}
    return knobs
