
import pytest

from workbench.harness.stop import StopExprError, evaluate_stop, parse_stop

VARS = {"all_correct": True, "geomean_vs_fa3": 1.02, "geomean_vs_original": 40.0, "n_failed": 0,
        "geomean_vs_fa2": float("nan")}


@pytest.mark.parametrize("expr,expected", [
    ("all_correct and geomean_vs_fa3 >= 1.0", True),
    ("all_correct and geomean_vs_fa3 >= 1.05", False),
    ("n_failed == 0 and (geomean_vs_original > 50 or geomean_vs_fa3 > 1)", True),
    ("not all_correct", False),
    ("geomean_vs_fa2 >= 0.5", False),          # not measured never satisfies
    ("0.9 < geomean_vs_fa3 < 1.1", True),
    ("geomean_vs_fa3 * 2 > 2", True),
])
def test_predicates(expr, expected):
    assert evaluate_stop(expr, VARS) is expected


@pytest.mark.parametrize("expr,needle", [
    ("__import__('os').system('x')", "not allowed"),
    ("speed > 1", "unknown name 'speed'"),
    ("geomean_vs_fa3 >=", "not valid"),
    ("'a' == 'a'", "only numbers"),
])
def test_bad_predicates_are_refused(expr, needle):
    with pytest.raises(StopExprError, match=needle):
        parse_stop(expr)
