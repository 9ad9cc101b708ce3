"""Attention forward's problem interface, the part without torch: its shapes and their figures.

The harness loads this module by path (workbench/harness/problems.py). What a problem's problem.py defines:
    Scenario            a frozen dataclass: name, category, `key` (cache identity: every number, not the name),
                        flops(), min_bytes(), to_dict(); a problem other than attention adds `problem = NAME`
    COLUMNS             the suite CSV's required columns (`category` is always optional)
    CATEGORY_NAMES      {category code: what it holds}, in the order reports list them
    scenario_from_row   one CSV row (a dict of strings) -> Scenario, or ValueError saying what is wrong
    suite_row           Scenario -> its CSV row (COLUMNS, then category)
Attention's own code has lived in the harness since before problems were data; these names point at it.
"""
from workbench.harness.scenarios import CATEGORY_NAMES, REQUIRED_COLUMNS, Scenario, scenario_from_row, suite_row

COLUMNS = REQUIRED_COLUMNS

__all__ = ["CATEGORY_NAMES", "COLUMNS", "Scenario", "scenario_from_row", "suite_row"]
