"""The import graph of the workbench package: its units (sub-packages and top-level modules), their layers, the
import edges between them and any import circle, for people (`python scripts/import_graph.py [PACKAGE_DIR]`) and
for tests/test_layers.py, which enforces the layering on the same graph.

Every `import` counts, a lazy one inside a function too: a lazy import still ties the two modules together.
The root `workbench/__init__.py` holds only `__version__`; importing it ties nothing, so it is not a unit.
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(package: Path = PACKAGE) -> dict[str, Path]:
    """{dotted module name: file} for every .py file of the package."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(name: str, modules: dict) -> str | None:
    """The package module `name` lives in (a.b.c names a.b's attribute c when a.b.c is no module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(path: Path, modules: dict, package: Path) -> set[str]:
    """The package modules a file imports, lazily or not (`from workbench.x import y` names x.y if y is a module)."""
    root, here = package.name, module_name(path, package)
    home = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]     # where `from .` points
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:                  # relative: from .x import y, from .. import z
                anchor = home[: len(home) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target == root or target.startswith(root + "."):
                resolved = _resolve(target, modules)
                if resolved and resolved != here:
                    found.add(resolved)
    return found


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: the package modules it imports}."""
    modules = package_modules(package)
    return {name: imports_of(path, modules, package) for name, path in modules.items()}


def unit_of(module: str) -> str | None:
    """`workbench.agent.loop` -> 'agent'; `workbench.check_cli` -> 'check_cli'; the root package -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict = defaultdict(set)
    for module, targets in graph.items():
        unit = unit_of(module)
        if unit is None:
            continue
        units[unit] |= {unit_of(t) for t in targets if unit_of(t) not in (None, unit)}
    return dict(units)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted, largest first."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's layer: 0 when it imports nothing of the package, else 1 + the highest layer it imports.
    Members of one circle share a layer (the circle is one node of the condensed graph)."""
    component = {n: n for n in graph}
    for members in circles(graph):
        for m in members:
            component[m] = members[0]
    condensed: dict = defaultdict(set)
    for node, targets in graph.items():
        condensed[component[node]] |= {component[t] for t in targets if t in component} - {component[node]}
    memo: dict = {}

    def layer(c):
        if c not in memo:
            memo[c] = 0
            memo[c] = 1 + max((layer(t) for t in condensed[c]), default=-1)
        return memo[c]

    return {n: layer(component[n]) for n in graph}


def summary(package: Path = PACKAGE) -> str:
    graph = module_graph(package)
    units = unit_graph(graph)
    unit_layers = layers(units)
    sizes = defaultdict(int)
    for module in graph:
        if unit_of(module):
            sizes[unit_of(module)] += 1
    n_packages = sum(1 for u in units if (package / u).is_dir())
    lines = [f"units: {len(units)} ({n_packages} packages, {len(units) - n_packages} top-level modules; "
             f"{len(graph)} modules in all)"]
    lines.append(f"layers: {max(unit_layers.values()) + 1}")
    for level in range(max(unit_layers.values()) + 1):
        names = [f"{u}/ ({sizes[u]})" if (package / u).is_dir() else f"{u}.py"
                 for u in sorted(units) if unit_layers[u] == level]
        lines.append(f"  {level}: " + ", ".join(names))
    lines.append(f"edges between units: {sum(len(t) for t in units.values())}")
    for unit in sorted(units):
        if units[unit]:
            lines.append(f"  {unit} -> " + ", ".join(sorted(units[unit])))
    unit_circles, module_circles = circles(units), circles(graph)
    lines.append(f"circles between units: {len(unit_circles)}")
    lines += ["  " + " <-> ".join(c) for c in unit_circles]
    lines.append(f"circles between modules: {len(module_circles)}")
    lines += ["  " + " <-> ".join(m.removeprefix(package.name + ".") for m in c) for c in module_circles]
    return "\n".join(lines)


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE
    if not (target / "__init__.py").is_file():
        sys.exit(f"import_graph: {target} is not a Python package folder (no __init__.py); pass the workbench/ folder")
    print(summary(target))
