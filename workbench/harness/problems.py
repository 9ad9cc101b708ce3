"""Problems as data: find a problem's folder, read its problem.toml and load the interface modules beside it.

A problem is a folder with `problem.toml` (tolerances, timing, anchors, ceilings, flags), `original.cu` (the
baseline), `suites/*.csv`, and three Python modules the harness loads by path (never by an import statement, so
the judge's import graph stays its own):

    problem.py    no torch: the Scenario class (from_row, key, flops, min_bytes, to_dict), COLUMNS and
                  CATEGORY_NAMES. Traces, reports and the suite loader read only this.
    judge.py      torch: Tolerances, Inputs, Outputs, Reference, sample_rows, reference, reference_from_output,
                  take_rows, OUTPUT_ROW_DIMS, output_rows, timed_fixed_rows, errors, bounds, check_close,
                  anchor_error, open_library, load_anchors, WARM_UP
                  (kernels/attn_fwd/judge.py lists what each one is).
    standins.py   the CPU stand-ins (STANDINS, KERNELS, EXPECTED_REASON): `standin:NAME` kernels.

These modules are trusted code, like the harness (a candidate is only ever a .cu file). A scenario dict names its
problem in a `problem` key; one without it is attention's (every trace and result written before problems).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import tomllib
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from workbench.harness.paths import DEFAULT_PROBLEM, HOME, REPO_ROOT
from workbench.harness.scenarios import SuiteError

KERNELS_DIR = HOME / "kernels"
MODULES = ("problem", "judge", "standins")


class ProblemError(SuiteError):
    """A problem that cannot be found or loaded; the message says which folder and what to do."""


@dataclass
class Definition:
    """One problem folder: its name, its problem.toml and its light interface module (problem.py)."""
    name: str
    folder: Path
    toml: dict
    module: types.ModuleType
    _loaded: dict = field(default_factory=dict)

    @property
    def Scenario(self):
        return self.module.Scenario

    @property
    def columns(self) -> tuple:
        return tuple(self.module.COLUMNS)

    @property
    def category_names(self) -> dict:
        return dict(self.module.CATEGORY_NAMES)

    @property
    def suites_dir(self) -> Path:
        return self.folder / "suites"

    @property
    def original(self) -> Path:
        return self.folder / self.toml.get("problem", {}).get("baseline", "original.cu")

    @property
    def entry_point(self) -> str:
        return self.toml.get("problem", {}).get("entry_point", self.name)

    @property
    def default_suite(self) -> str:
        return self.toml.get("problem", {}).get("default_suite", "dev")

    @property
    def anchors(self) -> tuple:
        """Every anchor this problem knows, in the order `--anchors` lists them by default."""
        return tuple(self.toml.get("anchors", {}).get("default", ()))

    @property
    def main_anchor(self) -> str:
        """The anchor the table's `x ANCHOR` column, the progress line and a default stop predicate use."""
        section = self.toml.get("anchors", {})
        return section.get("main") or (self.anchors[0] if self.anchors else "")

    @property
    def ref(self) -> str:
        """How a request or a config names this problem: its name under kernels/, else its folder."""
        return self.name if self.folder.parent == KERNELS_DIR.resolve() else str(self.folder)

    def scenario(self, data: dict):
        """A Scenario from its dict (to_dict's keys; unknown keys dropped)."""
        known = {k: v for k, v in data.items() if k in self.Scenario.__dataclass_fields__}
        return self.Scenario(**known)

    def sibling(self, name: str) -> types.ModuleType:
        """judge or standins, imported once (torch comes with them)."""
        if name not in self._loaded:
            self._loaded[name] = _import(self, name)
        return self._loaded[name]

    @property
    def judge(self) -> types.ModuleType:
        return self.sibling("judge")

    @property
    def standins(self) -> types.ModuleType:
        return self.sibling("standins")


_BY_FOLDER: dict[Path, Definition] = {}
_BY_NAME: dict[str, Definition] = {}


def _package(folder: Path, name: str) -> str:
    """A synthetic package per problem folder, so its modules import each other (`from .problem import ...`)."""
    package = f"workbench_problem_{name}"
    if package not in sys.modules:
        module = types.ModuleType(package, f"problem folder {folder}")
        module.__path__ = [str(folder)]
        sys.modules[package] = module
    return package


def _import(definition: Definition, name: str) -> types.ModuleType:
    path = definition.folder / f"{name}.py"
    if not path.is_file():
        raise ProblemError(f"{definition.folder}: has no {name}.py; a problem folder needs "
                           f"{', '.join(m + '.py' for m in MODULES)} (`workbench new-problem` makes them)")
    return importlib.import_module(f"{_package(definition.folder, definition.name)}.{name}")


def folder_of(name_or_dir: str | Path) -> Path:
    """The folder of a problem named under kernels/ or given as a path."""
    text = str(name_or_dir)
    path = Path(text)
    if "/" not in text and not path.exists():
        path = KERNELS_DIR / text
    if not (path / "problem.toml").is_file():
        known = ", ".join(known_problems()) or "none"
        raise ProblemError(f"problem {text!r}: no problem.toml in {path}; pass a problem folder or one of: {known}")
    return path.resolve()


def known_problems() -> list[str]:
    return sorted(p.parent.name for p in KERNELS_DIR.glob("*/problem.toml"))


def load(name_or_dir: str | Path | None = None) -> Definition:
    """The problem's definition (cached per folder); None or '' is attention, the default problem."""
    if not name_or_dir:
        name_or_dir = DEFAULT_PROBLEM
    if str(name_or_dir) in _BY_NAME:
        return _BY_NAME[str(name_or_dir)]
    folder = folder_of(name_or_dir)
    if folder in _BY_FOLDER:
        return _BY_FOLDER[folder]
    try:
        data = tomllib.loads((folder / "problem.toml").read_text())
    except (OSError, UnicodeError, tomllib.TOMLDecodeError) as err:
        raise ProblemError(f"{folder / 'problem.toml'}: cannot be read ({err}); fix the file") from None
    name = data.get("problem", {}).get("name") or folder.name
    other = _BY_NAME.get(name)
    if other is not None and other.folder != folder:
        raise ProblemError(f"{folder}: problem name {name!r} is taken by {other.folder}; rename one of them")
    definition = Definition(name=name, folder=folder, toml=data, module=types.ModuleType(name))
    definition.module = _import(definition, "problem")
    for needed in ("Scenario", "COLUMNS", "CATEGORY_NAMES"):
        if not hasattr(definition.module, needed):
            raise ProblemError(f"{folder / 'problem.py'}: defines no {needed}; see kernels/attn_fwd/problem.py")
    _BY_FOLDER[folder] = _BY_NAME[name] = definition
    return definition


def infer(kernel_path: str) -> Optional[str]:
    """The problem whose folder holds this kernel file (the nearest parent with a problem.toml), or None."""
    if not kernel_path or kernel_path.startswith("standin:"):
        return None
    try:
        here = Path(kernel_path).resolve().parent
    except OSError:
        return None
    for folder in (here, *here.parents):
        if (folder / "problem.toml").is_file():
            return str(folder)
        if folder == REPO_ROOT or folder == folder.parent:
            break
    return None


def name_of(data: dict) -> str:
    """The problem a scenario dict belongs to (attention when it does not say)."""
    return str(data.get("problem") or DEFAULT_PROBLEM)


def scenario_from_dict(data: dict):
    """The Scenario a result row's dict describes, of whichever problem it names."""
    return load(name_of(data)).scenario(data)
