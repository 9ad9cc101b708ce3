"""`workbench new-problem NAME`: the scaffold is a problem folder that refuses to build until its original.cu is
filled in, and then passes its own `check` on the CPU (the build and static checks of the .cu, the whole harness on
its stand-ins); bad names are refused in one line, before anything is made."""
import re
import shutil

import pytest

from workbench.harness.result_line import parse_result_lines

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
FILLED = """    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(2.0f * __bfloat162float(x[i]));"""


def fill_in(original) -> None:
    """What the README's first step asks: the kernel written, the #error line deleted."""
    text = re.sub(r"^#error .*\n", "", original.read_text(), flags=re.M)
    text = re.sub(r"    // FILL IN:.*?\n(    //.*\n)+", FILLED + "\n", text)
    assert not re.search(r"^#error", text, re.M) and "FILL IN" not in text
    original.write_text(text)


@pytest.fixture
def cli(run_cli):
    return lambda *argv: run_cli([str(a) for a in argv])


def test_the_scaffold_has_every_part_of_a_problem(cli, tmp_path):
    code, out, err = cli("new-problem", "demo", "--root", tmp_path)
    assert code == 0, err
    folder = tmp_path / "demo"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "judge.py", "original.cu", "problem.py",
                                                        "problem.toml", "standins.py", "suites"]
    assert "NEWPROB" not in "".join(p.read_text() for p in folder.rglob("*") if p.is_file())
    assert 'extern "C" int demo(' in (folder / "original.cu").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]                # no staging folder left behind


@needs_nvcc
@pytest.mark.slow
def test_once_filled_the_problem_passes_its_own_check_on_the_cpu(cli, tmp_path):
    cli("new-problem", "demo", "--root", tmp_path)
    folder, cache = tmp_path / "demo", tmp_path / "cache"
    code, out, _ = cli("check", folder / "original.cu", "--traces", "", "--cache-dir", cache)
    assert code == 1 and "build failed" in out and "fill in original.cu" in out      # the stub says what to do
    fill_in(folder / "original.cu")
    code, out, _ = cli("check", folder / "original.cu", "--traces", "", "--cache-dir", cache)
    line = parse_result_lines(out)[-1]
    assert (code, line["status"], line["problem"], line["suite"]) == (2, "static_only", "demo", "smoke")
    assert "built, 1 kernel(s)" in out                 # built, exported demo, passed the forbidden-library checks
    code, out, _ = cli("check", "standin:correct", "--problem", folder, "--traces", "", "--cache-dir", cache)
    assert code == 0 and parse_result_lines(out)[-1]["all_correct"], out[-2000:]
    for name, reason in (("off_by_half", "mismatch"), ("writes_nothing", "unwritten")):
        code, out, _ = cli("check", f"standin:{name}", "--problem", folder, "--traces", "", "--cache-dir", cache,
                           "--fail-fast")
        assert code == 1 and parse_result_lines(out)[-1]["failures"][0]["reason"] == reason


@pytest.mark.parametrize("name,needle", [
    ("9lives", "is not a problem name"), ("Demo", "is not a problem name"), ("class", "is not a problem name"),
    ("gemm_bf16", "a problem named 'gemm_bf16' exists"),
])
def test_bad_names_are_refused_before_anything_is_made(cli, tmp_path, name, needle):
    code, out, err = cli("new-problem", name, "--root", tmp_path / "root")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "root").exists()


def test_an_existing_folder_is_refused(cli, tmp_path):
    (tmp_path / "demo").mkdir()
    code, _, err = cli("new-problem", "demo", "--root", tmp_path)
    assert code == 2 and "exists already" in err and list((tmp_path / "demo").iterdir()) == []
