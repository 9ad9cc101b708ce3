"""Argument parsing shared by every `workbench` command: one-line errors and range-checked numbers.

argparse's own error is two lines (the usage, then the message); a person reading a terminal wants one:

    workbench experiment: argument --repeats: must be a whole number >= 1, got '0' (see `workbench experiment --help`)

`count`, `number` and `fraction` are argparse `type=` functions, so a bad value is refused while the command
line is read, before anything is built, run or written. `UsageError` is what the validation step raises.
"""
from __future__ import annotations

import argparse
import math
import sys

from workbench.harness.result import EXIT_USAGE


class UsageError(ValueError):
    """A request that cannot be carried out as given; its message says what, where, and what to do."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def refuse(prog: str, err: Exception | str) -> int:
    """Print one line for a refused request and return the usage exit code."""
    print(f"{prog}: {err}", file=sys.stderr)
    return EXIT_USAGE


def count(minimum: int = 1):
    """A whole number >= minimum (argparse type)."""
    def parse(text: str) -> int:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or value != int(value) or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
        return int(value)
    parse.__name__ = f"count >= {minimum}"
    return parse


def number(above: float | None = None, at_least: float | None = None, unit: str = ""):
    """A finite number > above (or >= at_least) (argparse type)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        low_ok = (above is None or value > above) and (at_least is None or value >= at_least)
        if not math.isfinite(value) or not low_ok:
            bound = f"> {above:g}" if above is not None else f">= {at_least:g}"
            raise argparse.ArgumentTypeError(f"must be a number {bound}{' ' + unit if unit else ''}, got {text!r}")
        return value
    parse.__name__ = "number"
    return parse


def fraction(text: str) -> float:
    """A share strictly between 0 and 1 (0.05 = 5 %) (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0.0 < value < 1.0):
        raise argparse.ArgumentTypeError(f"must be a fraction between 0 and 1 (0.05 = 5 %), got {text!r}")
    return value


# ---- budget items (`--budget tool_calls=200,wall=2h,usd=20`) ----------------------------------------------
def budget_count(item: str, key: str, text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise UsageError(f"budget item {item!r}: {key} must be a whole number >= 1 (e.g. {key}=200)")
    return int(value)


def budget_seconds(item: str, text: str) -> float:
    """'2h', '30m', '90s' or plain seconds, > 0."""
    text = text.strip().lower()
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0}.get(text[-1:])
    try:
        value = float(text[:-1]) * scale if scale else float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"budget item {item!r}: wall must be a time > 0, e.g. wall=2h, wall=30m or wall=90s")
    return value


def budget_dollars(item: str, text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"budget item {item!r}: usd must be an amount > 0 (e.g. usd=20)")
    return value
