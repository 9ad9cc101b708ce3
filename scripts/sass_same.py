"""Say whether two versions of a kernel source compile to the same SASS (a reformatting must change no code).

    python scripts/sass_same.py BEFORE.cu AFTER.cu [-DNAME=V ...]     # one build configuration
    python scripts/sass_same.py BEFORE.cu AFTER.cu --every-knob         # the default and every @knob value
    python scripts/sass_same.py main:kernels/attn_fwd/ladder/03_wgmma.cu kernels/attn_fwd/ladder/03_wgmma.cu

BEFORE may be `REV:PATH` (read with `git show`). Each side is built with the harness's compile flags
(workbench.harness.build.COMPILE_FLAGS, -gencode for sm_90a) as `nvcc -cubin`, and `cuobjdump -sass` of the two
cubins is compared. Both sides are compiled from the same path, one after the other: nvcc names the anonymous
namespace after the source's path, so two paths would differ in every symbol. --every-knob builds the default
and then each listed non-default value of each `// @knob NAME DEFAULT {values}` line, one at a time: as
-DNAME=V where the #define is #ifndef-guarded, else (a -D would be overridden) by writing V into the #define
line of both sides. cuobjdump comes from PATH or .tools/cuda/bin (scripts/prep_sass_tools.sh).
Exit 0: identical everywhere; 1: some configuration differs (the first differing lines are printed); 2: bad input.
"""
from __future__ import annotations

import argparse
import difflib
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from workbench.harness.build import COMPILE_FLAGS, DEFAULT_ARCH, arch_flags  # noqa: E402
from workbench.knobs import KNOB_LINE, parse_knobs  # noqa: E402


def read_source(spec: str) -> tuple[str, str]:
    """(text, file name) of a path or a `REV:PATH` git object; exits 2 when neither can be read."""
    path = Path(spec)
    if path.is_file():
        return path.read_text(), path.name
    if ":" in spec:
        git = subprocess.run(["git", "-C", str(REPO), "show", spec], capture_output=True, text=True)
        if git.returncode == 0:
            return git.stdout, Path(spec.split(":", 1)[1]).name
    sys.exit(f"sass_same: {spec}: no such file or git REV:PATH; give a .cu path or e.g. main:kernels/x.cu")


def find_cuobjdump() -> str:
    local = REPO / ".tools" / "cuda" / "bin" / "cuobjdump"
    found = shutil.which("cuobjdump") or (str(local) if local.is_file() else None)
    if not found:
        sys.exit("sass_same: cuobjdump not found on PATH or in .tools/cuda/bin; run `bash scripts/prep_sass_tools.sh`")
    return found


def sass(text: str, name: str, defines: list[str], work: Path, cuobjdump: str) -> str:
    """`cuobjdump -sass` of `text` compiled as work/name with `defines`; raises with nvcc's log on failure."""
    source, cubin = work / name, work / "kernel.cubin"
    source.write_text(text)
    flags = [f for f in COMPILE_FLAGS if f != "-c"] + arch_flags(DEFAULT_ARCH)
    build = subprocess.run(["nvcc", *flags, *defines, "-cubin", "-o", str(cubin), str(source)],
                           capture_output=True, text=True, cwd=work)
    if build.returncode != 0:
        raise RuntimeError(f"nvcc failed on {name} {' '.join(defines)}:\n{build.stdout}{build.stderr}")
    return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout


def set_knob(text: str, name: str, value: str) -> str:
    """`text` with the value of knob `name` in its #define line replaced by `value`."""
    return KNOB_LINE.sub(lambda m: m.group("prefix") + value + m.group("rest") if m.group("name") == name
                         else m.group(0), text)


def compare(before: tuple[str, str], after: tuple[str, str], config: tuple, cuobjdump: str) -> str:
    """'' when both sides give the same SASS under `config` (-D flags, knob values to write), else a diff's head."""
    defines, written = config
    texts = [before[0], after[0]]
    for name, value in written:
        texts = [set_knob(t, name, value) for t in texts]
    with tempfile.TemporaryDirectory(prefix="sass-same-") as tmp:
        name = after[1]                         # one path for both sides (see the module docstring)
        old = sass(texts[0], name, defines, Path(tmp), cuobjdump)
        new = sass(texts[1], name, defines, Path(tmp), cuobjdump)
    if "Function :" not in old:             # nothing compiled for the device: identical would prove nothing
        raise RuntimeError(f"{name} {' '.join(defines)}: the cubin holds no device function to compare")
    if old == new:
        return ""
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), "before", "after", lineterm="")
    return "\n".join(list(diff)[:40])


def guarded(text: str, name: str) -> bool:
    return re.search(rf"^[ \t]*#[ \t]*ifndef[ \t]+{name}\b", text, re.M) is not None


def configurations(before_text: str, after_text: str, every_knob: bool, defines: list[str]) -> list[tuple]:
    """(-D flags, [(knob, value) to write into both sides' #define lines]) for each build to compare."""
    if not every_knob:
        return [(defines, [])]
    knobs = parse_knobs(after_text)
    if {n: (k["value"], k["choices"]) for n, k in parse_knobs(before_text).items()} != \
            {n: (k["value"], k["choices"]) for n, k in knobs.items()}:
        sys.exit("sass_same: the two sides declare different @knob lines (names, defaults or values); "
                 "a reformatting must keep them")
    configs = [(defines, [])]
    for name, k in knobs.items():
        for v in (v for v in k["choices"] if v != k["value"]):
            both = guarded(before_text, name) and guarded(after_text, name)
            configs.append((defines + [f"-D{name}={v}"], []) if both else (defines, [(name, v)]))
    return configs


def label(config: tuple) -> str:
    defines, written = config
    return " ".join(defines + [f"{n}={v} (written into its #define: not #ifndef-guarded)" for n, v in written]) \
        or "(default)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--every-knob", action="store_true", help="also every non-default value of every @knob")
    ap.add_argument("--jobs", type=int, default=2, help="configurations built at once (default 2)")
    args, defines = ap.parse_known_args()
    if bad := [d for d in defines if not d.startswith("-D")]:
        sys.exit(f"sass_same: {bad[0]}: only -DNAME=V flags may follow the two sources")
    before, after = read_source(args.before), read_source(args.after)   # the user's input first, then the tools
    if not shutil.which("nvcc"):
        sys.exit("sass_same: nvcc not found on PATH; install the CUDA toolkit")
    cuobjdump = find_cuobjdump()
    configs = configurations(before[0], after[0], args.every_knob, defines)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        try:
            diffs = list(pool.map(lambda d: compare(before, after, d, cuobjdump), configs))
        except RuntimeError as failed:          # a side that does not build: nothing to compare
            print(f"sass_same: {failed}", file=sys.stderr)
            return 1
    differing = 0
    for config, diff in zip(configs, diffs):
        print(f"{'identical' if not diff else 'DIFFERENT'}  {label(config)}")
        if diff:
            differing += 1
            print(diff)
    print(f"sass_same: {after[1]}: {len(configs) - differing} of {len(configs)} configurations give identical SASS")
    return 1 if differing else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as stop:                  # sys.exit("message"): the one-line error, exit 2
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            sys.exit(2)
        raise
