"""scripts/causal_schedule_model.py: causal tile lengths, the boustrophedon walk and the two makespans."""
import importlib.util
import pathlib

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "causal_schedule_model", pathlib.Path(__file__).resolve().parents[1] / "scripts" / "causal_schedule_model.py")
model = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(model)


def test_causal_tiles_see_the_keys_up_to_their_last_row_bottom_right():
    assert model.tile_blocks(300, 300, 128, 128) == [1, 2, 3]
    assert model.tile_blocks(128, 1024, 128, 128) == [8]          # prefill: the one query block sees every key
    assert model.tile_blocks(256, 100, 128, 128) == [0, 1]        # rows that see no key give empty tiles


def test_the_boustrophedon_walk_covers_every_tile_once_and_turns_each_round():
    walks = [model.boustrophedon(23, 5, c) for c in range(5)]
    assert sorted(i for w in walks for i in w) == list(range(23))
    assert walks[0] == [0, 9, 10, 19, 20] and walks[4] == [4, 5, 14, 15]


def test_the_makespans_on_a_grid_worked_by_hand():
    order = [4, 3, 2, 1]            # LPT, 2 SMs, tile 1 us + 1 us per block
    # SM0 runs 4 (5 us), SM1 3 (4 us); SM1, free first, takes 2 (until 7), SM0 takes 1 (until 7)
    assert model.dynamic_makespan(order, 2, 1.0, 1.0) == pytest.approx(7.0)
    # persistent: CTA 0 walks positions 0, 3 (blocks 4, 1), CTA 1 positions 1, 2 (blocks 3, 2)
    assert model.persistent_makespan(order, 2, 1.0, 1.0, 0.5) == pytest.approx(max(4 + 1 + 1 + 0.5, 3 + 2 + 1 + 0.5))


def test_the_cli_prints_both_models(capsys):
    assert model.main(["--batch", "1", "--heads", "2", "--seqlen", "512", "--sms", "4"]) == 0
    out = capsys.readouterr().out
    assert "dynamic, one LPT order" in out and out.count("persistent boustrophedon") == 3
