"""Stop predicates: a small, safe expression language over a suite result's figures.

    all_correct and geomean_vs_fa3 >= 1.0
    n_failed == 0 and (geomean_vs_original > 20 or geomean_vs_fa2 >= 1.1)

Names come from SuiteResult.stop_variables() (another problem's anchors add their `geomean_vs_X` and `min_vs_X`:
`anchors=` below); only comparisons, and/or/not, arithmetic and numbers are allowed,
so a predicate from a config file or a command line can never run code. `validate_stop` also evaluates the
predicate on a sample result before any work is spent, so `1/0` or a bare number is refused up front; during a
real evaluation a division by zero is a figure that cannot be computed (NaN), which never satisfies a comparison.
"""
from __future__ import annotations

import ast
import math
import operator

STOP_NAMES = ("all_correct", "n_passed", "n_failed", "n_unsupported", "n_scenarios", "geomean_vs_original",
              "geomean_vs_fa3", "geomean_vs_fa4", "geomean_vs_cudnn", "geomean_vs_fa2", "min_vs_fa3", "min_tflops")


# A made-up result to try a predicate on: every figure non-zero and distinct, so `1/0`, `x/(n_failed - 3)` and
# type errors surface here instead of after a whole evaluation.
SAMPLE_VARIABLES = {"all_correct": True, "n_passed": 23, "n_failed": 3, "n_unsupported": 1, "n_scenarios": 27,
                    "geomean_vs_original": 1.37, "geomean_vs_fa3": 0.73, "geomean_vs_fa4": 0.61,
                    "geomean_vs_cudnn": 0.83, "geomean_vs_fa2": 1.11, "min_vs_fa3": 0.41, "min_tflops": 97.0}


class StopExprError(ValueError):
    pass


def stop_names(anchors=()) -> tuple:
    """STOP_NAMES and the figures of any other anchors (a problem's problem.toml [anchors])."""
    extra = [f"{kind}_vs_{a}" for a in anchors for kind in ("geomean", "min")]
    return STOP_NAMES + tuple(n for n in extra if n not in STOP_NAMES)


def _sample(anchors) -> dict:
    extra = {n: (0.9 if n.startswith("geomean") else 0.5) for n in stop_names(anchors) if n not in SAMPLE_VARIABLES}
    return {**SAMPLE_VARIABLES, **extra}


_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def parse_stop(expr: str, anchors=()) -> ast.Expression:
    """Parse and validate; raises StopExprError with what is wrong and what is allowed."""
    known = stop_names(anchors)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise StopExprError(f"stop expression {expr!r} is not valid ({err.msg}); write a condition such as "
                            f"'all_correct and geomean_vs_fa3 >= 1.0' (compare with ==, >=, <=, >, <; names: "
                            f"{', '.join(STOP_NAMES)})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known and node.id not in ("True", "False"):
            raise StopExprError(f"stop expression uses unknown name {node.id!r}; known: {', '.join(known)}")
        allowed = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare,
                   ast.BinOp, ast.Name, ast.Load, ast.Constant, *_CMP, *_BIN)
        if not isinstance(node, allowed):
            raise StopExprError(f"stop expression {expr!r}: {type(node).__name__} is not allowed "
                                f"(use comparisons, and/or/not, + - * / and numbers)")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
            raise StopExprError(f"stop expression {expr!r}: only numbers and True/False are allowed as constants")
    return tree


def _eval(node, names: dict, strict: bool = False):
    """Evaluate a parsed predicate. strict: a division by zero raises (validation) instead of giving NaN."""
    if isinstance(node, ast.Expression):
        return _eval(node.body, names, strict)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return {"True": True, "False": False}.get(node.id, names.get(node.id))
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, names, strict) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, names, strict)
        if isinstance(node.op, ast.Not):
            return not value
        return float("nan") if value is None else -value
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, names, strict), _eval(node.right, names, strict)
        if left is None or right is None:
            return float("nan")            # a figure that was not measured
        try:
            return _BIN[type(node.op)](left, right)
        except ZeroDivisionError:
            if strict:
                raise
            return float("nan")
    if isinstance(node, ast.Compare):
        left = _eval(node.left, names, strict)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, names, strict)
            # a figure that was not measured (NaN, None) never satisfies a comparison
            if left is None or right is None or (isinstance(left, float) and math.isnan(left)) \
                    or (isinstance(right, float) and math.isnan(right)):
                return False
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise StopExprError(f"unsupported expression node {type(node).__name__}")


def validate_stop(expr: str, anchors=()) -> None:
    """Parse the predicate and try it on SAMPLE_VARIABLES; raises StopExprError saying what to change."""
    tree = parse_stop(expr, anchors)
    try:
        value = _eval(tree, _sample(anchors), strict=True)
    except ZeroDivisionError:
        raise StopExprError(f"stop expression {expr!r} divides by zero; divide by a figure or a non-zero "
                            "number") from None
    if not isinstance(value, bool):
        raise StopExprError(f"stop expression {expr!r} is a number, not a condition; compare it, e.g. "
                            f"{expr.strip()} >= 1.0")


def evaluate_stop(expr: str, variables: dict) -> bool:
    anchors = [n[len("geomean_vs_"):] for n in variables if n.startswith("geomean_vs_")]
    return bool(_eval(parse_stop(expr, anchors), variables))
