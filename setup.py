"""Build step of the wheel: it carries the workbench's home (kernels/, question_bank.csv) as package data.

`pip install .` builds a wheel of workbench/ alone; this copies the problem files (each problem's original.cu,
problem.toml, suites/, the reference kernels, and the interface modules the harness loads by path: problem.py,
judge.py, standins.py, anchors.py; the template's problem.toml.in) and the question bank into workbench/_home inside it,
where workbench/harness/paths.py finds them when the package runs outside a checkout. An editable install
(`pip install -e .`) reads the checkout itself and gets no copy. Everything else is in pyproject.toml.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
HOME_FILES = ("question_bank.csv",)
HOME_TREES = ("kernels",)
DATA_SUFFIXES = {".cu", ".cuh", ".h", ".toml", ".csv", ".md", ".py", ".in"}


class BuildWithHome(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        home = Path(self.build_lib) / "workbench" / "_home"
        shutil.rmtree(home, ignore_errors=True)
        for name in HOME_FILES:
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HERE / name, home / name)
        for tree in HOME_TREES:
            for path in sorted((HERE / tree).rglob("*")):
                if path.is_file() and path.suffix in DATA_SUFFIXES and "__pycache__" not in path.parts:
                    target = home / path.relative_to(HERE)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)


setup(cmdclass={"build_py": BuildWithHome})
