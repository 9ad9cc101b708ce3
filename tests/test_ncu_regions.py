"""scripts/ncu_regions.py: executed instructions by HGMMA loop from ncu's source-page CSV."""
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from ncu_regions import main, regions, read_source_csv  # noqa: E402

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"]


def write_csv(path, program):
    """program: (SASS text, executions, samples) per instruction, 16 bytes apart from 0x1000."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "k"])
        w.writerow(HEADER)
        for i, (text, ex, samples) in enumerate(program):
            w.writerow([hex(0x1000 + 16 * i), text, samples, ex])
    return path


def tile_program(tiles=4, blocks=10):
    """A tile loop (its first S GEMM, 61 other instructions, a block loop of 8 HGMMA run `blocks` times a tile, an
    epilogue) run `tiles` times: 61 apart, the two GEMM clusters are told apart as sass_loop.py tells them."""
    first_s = [("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ", tiles, 1)] * 8
    filler = [("IMAD R1, R0, 0x2, RZ", tiles, 0)] * 61
    outer, inner = 0x1000 + 16 * 1, 0x1000 + 16 * (1 + 8 + 61)
    body = [("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ", tiles * blocks, 1)] * 8
    return ([("S2R R0, SR_TID.X", 1, 0)] + first_s + filler
            + [("FMNMX R3, R4, R5, !PT", tiles * blocks, 3)]      # block loop head
            + body
            + [("MUFU.EX2 R6, R7", tiles * blocks, 5), (f"@P0 BRA {hex(inner)}", tiles * blocks, 0),
               ("STS [R1], R2", tiles, 1), (f"@P1 BRA {hex(outer)}", tiles, 0),
               ("EXIT", 1, 0)])


def test_a_tile_loop_is_reported_without_the_block_loop_it_holds(tmp_path):
    ins = read_source_csv(write_csv(tmp_path / "k.sass.csv", tile_program()))
    found = regions(ins)
    assert [(name, iters, len(part)) for name, iters, part in found] == [
        ("loop 1 (holds 2)", 4, 71), ("loop 2", 40, 11), ("outside loops", 0, 2)]
    assert sum(x[2] for x in found[1][2]) == 40 * 11


def test_the_report_gives_executed_per_iteration_and_shares(tmp_path, capsys):
    path = write_csv(tmp_path / "k.sass.csv", tile_program())
    assert main([str(path), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "loop 2 (11 static): 40 iterations, 11.0 executed per iteration" in out
    assert "loop 1 (holds 2) (71 static): 4 iterations, 71.0 executed per iteration" in out
    assert "outside loops (2 static): 2 executed" in out


def test_a_csv_without_the_executed_column_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "stalls_only.csv"
    bad.write_text('"Address","Source","Warp Stall Sampling (All Samples)"\n"0x10","EXIT","1"\n')
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ncu_regions: ") and "SourceCounters" in err and "\n" not in err
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert main([str(other)]) == 2
    assert "Address" in capsys.readouterr().err
