"""The package's layering: the harness (the judge) imports nothing else from the package, and the knob parser
sits where the pool, the evolution and the agent all reach it without importing one another."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def package_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m == "workbench" or m.startswith("workbench.")}


def test_harness_imports_only_the_harness():
    files = sorted((PACKAGE / "harness").glob("*.py"))
    assert len(files) > 5
    outside = {f"{f.name}: {m}" for f in files for m in package_imports(f) if not m.startswith("workbench.harness")}
    assert outside == set()


def test_evaluators_and_knobs_do_not_reach_into_the_agent():
    for path in [*sorted((PACKAGE / "evaluators").glob("*.py")), PACKAGE / "knobs.py"]:
        agent = {m for m in package_imports(path) if m.startswith("workbench.agent")}
        assert agent == set(), path.name
