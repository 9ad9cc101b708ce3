"""On the GPU: a long call's graph is uploaded without a run (graph_capture.upload) and timed in one or two
replays, against its plain call as the witness; the figure is the spin's own length (`bash scripts/gpu_run.sh
proofab` runs this with the proof)."""
import pytest

from workbench.harness.check import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")]


def test_a_long_calls_graph_is_uploaded_without_a_run_and_timed_in_a_replay_or_two():
    import torch

    from workbench.harness.graph_capture import capture_cuda, upload
    from workbench.harness.timing import GRAPH_REPLAY, Timer, TimingConfig

    timer = Timer("cuda", TimingConfig())
    spin = int(20_000 * timer._cycles_per_us())        # ~20 ms of GPU spinning: a long call (> 10 ms)
    plain = []

    def launch(i):
        plain.append(torch.cuda.is_current_stream_capturing())
        torch.cuda._sleep(spin)
        return 0

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        graph, _ = capture_cuda(launch, 0, with_inner=True)
        assert upload(graph), "cuGraphUpload is not reachable: long calls pay an untimed upload replay"
        del graph
        plain.clear()
        stats = timer.time(launch, n_sets=2)
    print(f"spin of ~20 ms: median {stats.median_us:.1f} us over {stats.n} replays, call {stats.call_us:.1f} us; "
          f"samples {timer.last['samples_us']}")
    assert stats.method == GRAPH_REPLAY and timer.last["witness"] == "plain call"
    assert plain == [False, False, True]                # warm-up and call_us stop at one long call each; 1 capture
    assert abs(stats.median_us / stats.call_us - 1) < 0.15   # the same spin (SM clocks are not locked)
