"""Rung 04's has_keyless_tiles (EMPTY_SOLO's test, run 57) on the CPU: the real function, cut out of the .cu and
compiled for the host, says a grid has a tile with no key block exactly when enumerating every (query block, key
split) tile with key_blocks' arithmetic finds one, over random and edge shapes, causal or not, split or not."""
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "kernels" / "attn_fwd" / "ladder" / "04_pingpong.cu"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the function)")


def keyless_by_enumeration(sq, sk, causal, bm, bn, splits, bps):
    """key_blocks for every tile: block m's visible keys end at min(sk, (m+1)*bm + sk - sq) when causal."""
    for m in range((sq + bm - 1) // bm):
        kend = min(sk, (m + 1) * bm + sk - sq) if causal else sk
        n_blocks = (kend + bn - 1) // bn if kend > 0 else 0
        for split in range(splits):
            b0 = split * bps
            if min(n_blocks, b0 + bps) - min(b0, n_blocks) <= 0:
                return True
    return False


def cases():
    rng = random.Random(57)
    out = [(4097, 129, 1, 128, 80, 1), (2000, 300, 1, 128, 80, 1), (1000, 1, 1, 128, 80, 1), (128, 128, 1, 128, 80, 1),
           (129, 1, 1, 128, 80, 1), (256, 128, 1, 128, 80, 1), (255, 128, 1, 128, 80, 1), (100, 16384, 0, 128, 80, 1),
           (512, 16384, 1, 128, 80, 1), (4096, 4096, 1, 128, 80, 1)]
    for _ in range(400):
        sq, sk = rng.choice([1, 64, 127, 128, 129, 300, 1000, 4097]), rng.choice([1, 77, 129, 300, 2048, 16384])
        causal, bm, bn = rng.randint(0, 1), rng.choice([128, 192]), rng.choice([80, 128, 176])
        out.append((sq, sk, causal, bm, bn, 1))
    return out


def with_splits(base):
    """The host's split arithmetic: blocks_per_split from the longest block, the split count recomputed from it."""
    sq, sk, causal, bm, bn, _ = base
    n_m = (sq + bm - 1) // bm
    kend = min(sk, n_m * bm + sk - sq) if causal else sk
    max_blocks = (kend + bn - 1) // bn if kend > 0 else 0
    out = []
    for s in (1, 2, 3, 4):
        if max_blocks < 2 and s > 1:
            break
        bps = (max_blocks + s - 1) // s if s > 1 else max(max_blocks, 1)
        splits = (max_blocks + bps - 1) // bps if s > 1 else 1
        out.append((sq, sk, causal, bm, bn, splits, bps))
    return out


def test_the_rung_says_keyless_exactly_when_a_tile_has_no_key_block(tmp_path):
    src = KERNEL.read_text()
    m = re.search(r"inline bool has_keyless_tiles\(.*?\n}\n", src, re.S)
    assert m, "has_keyless_tiles not found in the rung"
    driver = ("#include <algorithm>\n#include <cstdio>\nusing std::min;\n" + m.group(0) +
              "int main() { int a[7]; while (scanf(\"%d %d %d %d %d %d %d\", a, a+1, a+2, a+3, a+4, a+5, a+6) == 7)"
              " printf(\"%d\\n\", (int)has_keyless_tiles(a[0], a[1], a[2], a[3], a[4], a[5], a[6])); }\n")
    (tmp_path / "k.cpp").write_text(driver)
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "k"), str(tmp_path / "k.cpp")], check=True)
    grids = [g for base in cases() for g in with_splits(base)]
    run = subprocess.run([str(tmp_path / "k")], input="".join(" ".join(map(str, g)) + "\n" for g in grids),
                         capture_output=True, text=True, check=True)
    got = [bool(int(x)) for x in run.stdout.split()]
    want = [keyless_by_enumeration(*g) for g in grids]
    assert len(got) == len(grids) > 800
    assert got == want
    assert want.count(True) > 50 and want.count(False) > 50     # both answers exercised
    by_grid = dict(zip(grids, got))
    assert by_grid[(4097, 129, 1, 128, 80, 1, 2)] is True       # E_d256_q4097_k129_mqa_causal: 248 of 264 keyless
    assert by_grid[(4096, 4096, 1, 128, 80, 1, 52)] is False     # a square causal grid: every block sees keys
