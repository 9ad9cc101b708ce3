
import pytest

from workbench.harness.stop import StopExprError, evaluate_stop, parse_stop, validate_stop

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


@pytest.mark.parametrize("expr,needle", [
    ("1/0", "divides by zero"),
    ("geomean_vs_fa3 / (n_failed - 3) > 1", "divides by zero"),
    ("geomean_vs_fa3", "not a condition"),
    ("geomean_vs_fa3 * 2", "not a condition"),
    ("speed >= 2", "unknown name 'speed'"),
    ("geomean >= ", "not valid"),
])
def test_validation_tries_the_predicate_on_a_sample(expr, needle):
    with pytest.raises(StopExprError, match=needle):
        validate_stop(expr)


@pytest.mark.parametrize("expr", ["all_correct", "all_correct and geomean_vs_fa3 >= 1.0", "not all_correct",
                                  "geomean_vs_original / n_failed > 1", "True"])
def test_validation_accepts_conditions(expr):
    validate_stop(expr)


def test_a_division_by_zero_in_a_real_result_is_not_measured():
    # n_failed is 0 in a clean run: the ratio cannot be computed, so the predicate does not hold (no exception)
    assert evaluate_stop("geomean_vs_original / n_failed > 1", VARS) is False
    assert evaluate_stop("all_correct or geomean_vs_original / n_failed > 1", VARS) is True
