"""`workbench new-problem NAME [--root DIR]`: scaffold a problem folder from kernels/_template/.

    workbench new-problem demo                 # kernels/demo/: README.md, problem.toml, problem.py, judge.py,
                                               # standins.py, original.cu (a stub to fill in), suites/smoke.csv

The template is a complete problem whose operation is a placeholder (y = 2 x on a bf16 vector); the copy's
README.md says what to change in which order. Until original.cu is filled in it does not build (an `#error` line
says so); once filled, `workbench check kernels/demo/original.cu` builds it and runs the static checks on a CPU,
and `workbench check standin:correct --problem demo --suite smoke` runs the whole harness on a CPU stand-in.
Bad input (a name that is no identifier, a folder that exists, a root that cannot be written) is refused in one
line with exit 2, before anything is created.
"""
from __future__ import annotations

import keyword
import re
import shutil
import sys
import tempfile
from pathlib import Path

from workbench import validate
from workbench.arguments import Parser, UsageError, refuse

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
TEMPLATE = KERNELS / "_template"
PLACEHOLDER = "NEWPROB"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def check_name(name: str, root: Path) -> Path:
    """The folder the problem will be made in; UsageError for a bad name or a folder that exists."""
    if not NAME.match(name) or keyword.iskeyword(name):
        raise UsageError(f"NAME: {name!r} is not a problem name; use lower-case letters, digits and _ (a C and "
                         "Python identifier, at most 40 characters), e.g. softmax_bf16")
    folder = root / name
    if folder.exists():
        raise UsageError(f"NAME: {folder} exists already; pick another name or remove it")
    from workbench.harness import problems

    if (KERNELS / name / "problem.toml").exists() or name in problems.known_problems():
        raise UsageError(f"NAME: a problem named {name!r} exists in {KERNELS}; pick another name")
    return folder


def scaffold(name: str, root: Path) -> Path:
    """Copy the template to root/name with NAME in place of the placeholder; the folder appears whole or not at
    all (written beside it, then renamed)."""
    folder = check_name(name, root)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        for source in sorted(TEMPLATE.rglob("*")):
            if source.is_dir() or "__pycache__" in source.parts:
                continue
            target = staging / source.relative_to(TEMPLATE)
            target = target.with_name(target.name.removesuffix(".in"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.read_text().replace(PLACEHOLDER, name))
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench new-problem", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the problem's name: its folder, its entry point, its Python name")
    parser.add_argument("--root", type=Path, default=KERNELS, help=f"where the folder is made (default {KERNELS})")
    args = parser.parse_args(argv)
    try:
        check_name(args.name, args.root)
        validate.output_dir(args.root, "--root")
        folder = scaffold(args.name, args.root)
    except UsageError as err:
        return refuse("workbench new-problem", err)
    print(f"made {folder}: {', '.join(sorted(p.name for p in folder.iterdir()))}")
    print(f"next: fill in {folder / 'original.cu'} (then delete its #error line) and read {folder / 'README.md'}")
    print(f"  workbench check {folder / 'original.cu'}")
    print(f"  workbench check standin:correct --problem {folder} --suite smoke")
    return 0


new_problem_main = main

if __name__ == "__main__":
    sys.exit(main())
