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
    assert "persistent pairs" in out and "LPT tail" in out


def test_mirrored_pairs_even_out_a_heads_tiles_and_leave_the_middle_alone():
    assert model.pair_blocks([1, 2, 3, 4]) == [5, 5]
    assert model.pair_blocks([1, 2, 3]) == [4, 2]


def test_equal_pairs_leave_the_last_round_part_idle():
    # 3 heads x 2 pairs of 5 blocks on 4 CTAs: CTAs 0-1 run two pairs, 2-3 one
    assert model.pairs_makespan(3, [1, 2, 3, 4], 4, 0.0, 1.0) == pytest.approx(10.0)


def test_the_counter_hands_out_one_tile_ahead():
    # CTA 0 takes position 2 when it starts position 0 (t=0), so the 2-block tile waits for the 4-block one:
    # 4 + 2 = 6, where list scheduling (the first free CTA) gives 5
    assert model.counter_makespan([4, 3, 2, 1], 2, 0.0, 1.0) == pytest.approx(6.0)
    assert model.dynamic_makespan([4, 3, 2, 1], 2, 0.0, 1.0) == pytest.approx(5.0)


def test_pair_tail_order_is_each_heads_mirrored_pairs_then_the_tail_longest_first():
    # 3 heads of blocks 1-4 on 2 CTAs, 1 round: the tail is ceil(2 / 4) = 1 head
    assert model.pair_tail_order(3, [1, 2, 3, 4], 1, 2) == [4, 1, 3, 2] * 2 + [4, 3, 2, 1]


def test_chunks_are_lpt_inside_and_in_order_between():
    assert model.chunked_lpt_order(3, [1, 2], 2) == [2, 2, 1, 1, 2, 1]


def test_run_67s_grid_pairs_lose_their_last_round_and_the_walks_recover_it():
    blocks = model.tile_blocks(4096, 4096, 128, 128)      # A_d128_c1_s4k: 64 heads of 32 query blocks
    pairs = model.pairs_makespan(64, blocks, 132, 0.6, 1.5)
    walk = model.counter_makespan(model.chunked_lpt_order(64, blocks, 16), 132, 0.6, 1.5)
    pair_tail = model.counter_makespan(model.pair_tail_order(64, blocks, 4, 132), 132, 0.6, 1.5)
    assert pair_tail < walk < pairs
    assert pairs / walk == pytest.approx(1.015, abs=0.005)   # run 67-68 measured x1.015-1.017
