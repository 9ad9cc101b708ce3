"""On the GPU: a long baseline call timed as its own first call (first_replay.py: one recorded, uploaded replay)
reads what the timer's usual path reads for the same call, and the recording sees its kernels (`bash
scripts/gpu_run.sh coldproof` runs this with the device-time proof)."""
import pytest

from workbench.harness.check import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")]


def test_a_spin_past_the_cap_reads_the_same_as_one_replay_and_as_the_timers_usual_path():
    import torch

    from workbench.harness.first_replay import first_replay
    from workbench.harness.timing import GRAPH_REPLAY, Timer, TimingConfig

    cfg = TimingConfig()
    timer = Timer("cuda", cfg)
    spin = int(1.5 * cfg.time_cap_s * 1e6 * timer._cycles_per_us())     # ~0.6 s of GPU spinning
    executions = []

    def launch():
        executions.append(torch.cuda.is_current_stream_capturing())
        torch.cuda._sleep(spin)
        return 0

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        done = first_replay(timer, launch, lambda: None, record=True, device="cuda")
        assert done is not None and done.stats is not None, "the replay path was not taken"
        usual = timer.time(lambda _i: launch(), n_sets=1)
    one = done.stats
    print(f"spin of ~{1.5 * cfg.time_cap_s:.1f} s: first replay {one.median_us:.1f} us (call {one.call_us:.1f} us, "
          f"recorded {done.seen}); the timer's usual path {usual.median_us:.1f} us over {usual.n}")
    assert one.method == GRAPH_REPLAY and one.n == 1 and executions[0] is True       # captured, not called
    assert any("sleep" in name.lower() or "spin" in name.lower() for name in done.seen), done.seen
    assert abs(one.median_us / usual.median_us - 1) < 0.05       # the same spin (SM clocks are not locked)
