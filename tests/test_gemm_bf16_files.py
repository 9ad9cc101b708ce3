"""kernels/gemm_bf16 as data and as CUDA (CPU machine: nvcc and ptxas, no GPU): the suites equal their generator,
wrong/expected.csv matches wrong/*.cu with the harness's reason names, the ladder's header maps are complete,
and every kernel passes the harness's static checks, compiles for sm_90a and exports gemm_bf16 (rungs: no spills,
02 issues HGMMA with B transposed)."""
import csv
import math
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workbench.harness import build_guard
from workbench.harness.build import COMPILE_FLAGS, arch_flags, forbidden_in_library, forbidden_in_source
from workbench.harness.verify import REASONS

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "kernels" / "gemm_bf16"
sys.path.insert(0, str(ROOT / "scripts"))
import make_gemm_suites as suites  # noqa: E402

KERNELS = sorted(PROBLEM.rglob("*.cu"))
RUNGS = sorted((PROBLEM / "ladder").glob("*.cu"))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def expected_rows():
    with open(PROBLEM / "wrong" / "expected.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("name", sorted(suites.SUITES))
def test_committed_suites_equal_their_generator(name):
    assert (PROBLEM / "suites" / f"{name}.csv").read_text() == suites.suite_text(suites.SUITES[name]())


def test_suites_keep_the_contract_and_cover_the_categories():
    full = suites.full_suite()
    for name, make in suites.SUITES.items():
        for g in make():
            assert g.lda >= max(1, g.k) and g.ldb >= max(1, g.n) and g.ldc >= max(1, g.n), g
            assert g.category in suites.CATEGORIES, g
            if name != "edge":   # the timed suites: 16-byte rows everywhere
                assert g.lda % 8 == 0 and g.ldb % 8 == 0 and g.ldc % 8 == 0, g
    assert set(suites.dev_suite()) <= set(full)
    assert {g.category for g in full} == set(suites.CATEGORIES) - {"edge"}
    assert all(min(g.m, g.n) <= 64 for g in full if g.category == "skinny")
    assert all(g.k >= 8 * max(g.m, g.n) for g in full if g.category == "k_heavy")
    assert any(g.m % 128 and g.n % 256 and g.k % 64 for g in full if g.category == "ragged")
    assert any(g.ldb > g.n for g in suites.dev_suite()[:3])   # wrong_stride is caught early on dev
    llm_tokens = {g.m for g in full if g.category == "llm"}
    assert min(llm_tokens) == 1 and max(llm_tokens) == 16384
    edge = suites.edge_suite()
    assert any(g.lda % 8 for g in edge) and any(g.k == 0 for g in edge) and any(g.m == 0 for g in edge)
    flops = sum(2.0 * g.m * g.n * g.k for g in full)
    assert 10e12 < flops < 40e12   # `full` sized for ~2 minutes of harness time with a fast kernel and cuBLAS


def test_wrong_kernels_match_expected_csv_with_harness_reasons():
    rows = expected_rows()
    assert len(rows) >= 8
    assert {r["kernel"] for r in rows} == {p.stem for p in (PROBLEM / "wrong").glob("*.cu")}
    for r in rows:
        reasons = r["expected_reasons"].split("|")
        assert set(reasons) <= set(REASONS), r
        head = (PROBLEM / "wrong" / f"{r['kernel']}.cu").read_text()[:2500]
        assert head.startswith(f"// WRONG KERNEL (the harness must reject it): {r['kernel']}.cu"), r["kernel"]
        assert "Expected harness reason" in head and "Caught by" in head, r["kernel"]


def header(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return lines[:next(i for i, line in enumerate(lines) if not line.startswith("//"))]


@pytest.mark.parametrize("path", RUNGS, ids=lambda p: p.stem)
def test_each_rung_has_a_header_map_of_at_most_30_lines(path):
    text = "\n".join(header(path))
    assert len(header(path)) <= 30
    for needle in ("What this rung changes over", "Today's figure: not yet measured", "Sections", "Knobs"):
        assert needle in text, needle
    knobs = re.findall(r"@knob (\w+) ", path.read_text())
    assert knobs and all(k in text for k in knobs)   # every knob in the file is named in the map


def test_problem_toml_bound_admits_a_correct_kernel():
    """Each element of a correct result is within 2^-8 of itself after bf16 rounding, so the relative L2 and max
    bounds must be at least 2^-8; and they must stay under the bf16-accumulation error at K = 4096 (README)."""
    verify = tomllib.loads((PROBLEM / "problem.toml").read_text())["verify"]
    assert 2 ** -8 < verify["rel_l2_tol"] < 9.5e-3 and 2 ** -8 < verify["max_abs_tol"] < 1.5e-2
    assert verify["sqrt_k_slack"] * math.sqrt(65536) < 0.1 * verify["rel_l2_tol"]
    assert verify["guard_elems"] % 8 == 0


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.relative_to(PROBLEM).as_posix())
def test_every_kernel_passes_the_static_checks_and_builds(path, tmp_path):
    text = path.read_text()
    assert forbidden_in_source(text) == []
    assert build_guard.check_includes(text, path.parent).problems == []
    obj, so = tmp_path / "k.o", tmp_path / "k.so"
    run = subprocess.run(["nvcc", *COMPILE_FLAGS, *arch_flags("sm_90a"), "-c", "-o", str(obj), str(path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert build_guard.check_object(str(obj)) == []
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *arch_flags("sm_90a"), "-o", str(so), str(obj)],
                   check=True, timeout=300)
    assert forbidden_in_library(str(so)) == []
    exported = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True).stdout
    assert re.search(r"\bgemm_bf16$", exported, re.M)
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", run.stderr)
    assert frames and re.search(r"Used \d+ registers", run.stderr)
    if path.parent.name == "ladder":
        assert all(f == ("0", "0", "0") for f in frames), frames


@needs_nvcc
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cuobjdump") is None, reason="cuobjdump not on PATH (scripts/prep_sass_tools.sh)")
def test_rung_sass_uses_the_tensor_core_instructions(tmp_path):
    counts = {}
    for path in RUNGS:
        so = tmp_path / f"{path.stem}.so"
        subprocess.run(["nvcc", "-O3", "-std=c++17", *arch_flags("sm_90a"), "-shared", "-Xcompiler", "-fPIC", "-o",
                        str(so), str(path)], check=True, timeout=600)
        counts[path.stem] = subprocess.run(["cuobjdump", "-sass", str(so)], capture_output=True, text=True).stdout
    assert re.search(r"HMMA\.16816\.F32\.BF16", counts["01_mma_sync"]) and "LDSM" in counts["01_mma_sync"]
    assert re.search(r"HGMMA\.64x256x16\.F32\.BF16 .*tnspB", counts["02_wgmma_tma"])
    assert "UTMALDG" in counts["02_wgmma_tma"]
    assert not re.search(r"\b(LDL|STL)\b", counts["01_mma_sync"] + counts["02_wgmma_tma"])


def knob_variants():
    """(rung, NAME, value) for every listed value of every @knob line that is not the default."""
    out = []
    for path in RUNGS:
        for name, default, values in re.findall(r"@knob (\w+) (\w+) \{([^}]*)\}", path.read_text()):
            out += [(path, name, v) for v in values.split(",") if v != default]
    return out


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("path,name,value", knob_variants(), ids=lambda x: x.stem if isinstance(x, Path) else str(x))
def test_every_listed_knob_value_compiles_without_spills(path, name, value, tmp_path):
    run = subprocess.run(["nvcc", *COMPILE_FLAGS, *arch_flags("sm_90a"), f"-D{name}={value}", "-c", "-o",
                          str(tmp_path / "k.o"), str(path)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", run.stderr)
    assert frames and all(f == ("0", "0", "0") for f in frames), frames


def original_knob_variants():
    path = PROBLEM / "original.cu"
    return [(name, v) for name, default, values in re.findall(r"@knob (\w+) (\w+) \{([^}]*)\}", path.read_text())
            for v in values.split(",") if v != default]


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name,value", original_knob_variants(), ids=lambda x: str(x))
def test_every_knob_value_of_the_original_builds(name, value, tmp_path):
    """The offline agent's and the evolution's moves on the GEMM (its knobs are edited in the text, as they do)."""
    text = re.sub(rf"^#define {name} \S+", f"#define {name} {value}", (PROBLEM / "original.cu").read_text(), flags=re.M)
    source = tmp_path / "original.cu"
    source.write_text(text)
    run = subprocess.run(["nvcc", *COMPILE_FLAGS, *arch_flags("sm_90a"), "-c", "-o", str(tmp_path / "k.o"),
                          str(source)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(original_knob_variants()) == 6
