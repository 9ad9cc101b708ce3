"""scripts/gen_wgmma_wrappers.py's wrappers: one per instruction shape, every accumulator named, every line within 120
(that the rungs hold its output byte for byte is tests/test_code_shape.py's)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(*args: str) -> str:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_wgmma_wrappers.py"), *args],
                          capture_output=True, text=True, check=True).stdout


def test_each_wrapper_names_every_accumulator_and_every_line_fits():
    text = generate("--ss", "64,256", "--rs", "128")
    for name, n in (("wgmma_ss_n64", 64), ("wgmma_ss_n256", 256), ("wgmma_rs_n128", 128)):
        body = text[text.index(f"void {name}("):]
        body = body[:body.index("\n}\n")]
        assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16" in body
        assert body.count('"+f"(d[') == n // 2
    assert max(len(line) for line in text.splitlines()) <= 120
