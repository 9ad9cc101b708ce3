"""The package's layering, stated once and enforced on its import graph (scripts/import_graph.py), lazy imports
included: the harness (the judge) imports nothing else from the package; the campaign record and the questions
know nothing of the agent, the evolution or the UI; `workbench check` never reaches the agent; no import goes
up a layer, and there is no import circle anywhere in workbench/."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)

# lowest first; a unit (sub-package or top-level module) imports only units of its own layer or below
LAYERS = [
    ("foundations, importing nothing of the package", {"crash", "locks", "knobs", "redaction", "secret_forms",
                                                       "secret_shapes", "plots"}),
    ("the judge", {"harness"}),
    ("command-line plumbing (cli.py reaches its subcommands by name only)", {"arguments", "validate", "cli"}),
    ("the trace record", {"traces"}),
    ("questions, evaluators and `workbench check`", {"questions", "evaluators", "check_cli", "warm_cli",
                                                     "new_problem", "flashinfer"}),
    ("the campaign record", {"campaign"}),
    ("the drivers: agent loop, tools, backends, service, MCP, CLI", {"agent"}),
    ("the evolution", {"evolve"}),
    ("the notebook UI", {"ui"}),
]
RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}
# the rules in words, checked on their own so that a failure names the rule
NEVER = {
    "campaign": {"agent", "evolve", "ui"},
    "questions": {"agent", "evolve", "ui"},
    "traces": {"campaign", "agent"},
    "check_cli": {"agent"},
    "warm_cli": {"agent"},
    "evaluators": {"agent"},
    "knobs": {"agent"},
}


@pytest.fixture(scope="module")
def modules():
    return import_graph.module_graph(PACKAGE)


@pytest.fixture(scope="module")
def units(modules):
    return import_graph.unit_graph(modules)


def test_every_unit_has_a_layer(units):
    unplaced = sorted(set(units) - set(RANK))
    assert not unplaced, f"place {unplaced} in tests/test_layers.py LAYERS"


def test_no_import_goes_up_a_layer(modules):
    upward = sorted(f"{src} -> {dst} ({LAYERS[RANK[import_graph.unit_of(src)]][0]!r} imports "
                    f"{LAYERS[RANK[import_graph.unit_of(dst)]][0]!r})"
                    for src, targets in modules.items() for dst in targets
                    if import_graph.unit_of(src) and import_graph.unit_of(dst)
                    and RANK.get(import_graph.unit_of(dst), -1) > RANK.get(import_graph.unit_of(src), -1))
    assert upward == []


@pytest.mark.parametrize("unit", sorted(NEVER))
def test_named_rules(units, unit):
    assert units.get(unit, set()) & NEVER[unit] == set(), f"{unit} must not import {sorted(NEVER[unit])}"


def test_no_import_circle_anywhere(modules, units):
    assert import_graph.circles(units) == []
    assert import_graph.circles(modules) == []


def test_harness_imports_only_the_harness(modules):
    outside = sorted(f"{m} -> {t}" for m, targets in modules.items() if m.startswith("workbench.harness")
                     for t in targets if not t.startswith("workbench.harness"))
    assert outside == []


def test_workbench_check_loads_no_agent_module():
    code = ("import sys, workbench.check_cli; "
            "print(sorted(m for m in sys.modules if m.startswith('workbench.agent')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_graph_sees_lazy_imports_and_circles(tmp_path):
    """The rules above can fail: a circle made by one lazy import inside a function is found."""
    package = tmp_path / "workbench"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("def f():\n    from workbench.high import b\n")
    (package / "high.py").write_text("from workbench.low.a import f\nfrom workbench import high as again\n")
    modules = import_graph.module_graph(package)
    assert modules["workbench.low.a"] == {"workbench.high"}
    assert import_graph.circles(modules) == [["workbench.high", "workbench.low.a"]]
    assert import_graph.unit_graph(modules) == {"low": {"high"}, "high": {"low"}}
