"""workbench/evaluators/ray_start.py: a new local Ray instance whose node dies while starting (Ray 2.60's raylet
aborts when its dashboard agent misses a fixed 15 s port window, as on the loaded CI machine) is started again; any
other failure, and any failure to reach a cluster by address, is raised at once. A stand-in for the ray module."""
import pytest

from workbench.evaluators import ray_start

NODE_DIED = "The current node timed out during startup. This could happen because some of the raylet failed to startup"


class FakeRay:
    def __init__(self, failures: int, message: str = NODE_DIED):
        self.failures, self.message, self.inits, self.shutdowns = failures, message, [], 0

    def init(self, **kwargs):
        self.inits.append(kwargs)
        if len(self.inits) <= self.failures:
            raise Exception(self.message)
        return "context"

    def shutdown(self):
        self.shutdowns += 1


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(ray_start, "RETRY_PAUSE_S", 0.0)


@pytest.mark.parametrize("address", [None, "local"])
def test_a_local_start_whose_node_dies_while_starting_is_made_again(address):
    ray = FakeRay(failures=2)
    assert ray_start.init_ray(ray, address=address, num_cpus=2) == "context"
    assert len(ray.inits) == 3 and ray.shutdowns == 2 and ray.inits[-1] == {"address": address, "num_cpus": 2}


def test_a_local_start_that_keeps_failing_raises_after_the_last_attempt():
    ray = FakeRay(failures=ray_start.LOCAL_START_ATTEMPTS)
    with pytest.raises(Exception, match="during startup"):
        ray_start.init_ray(ray, num_cpus=2)
    assert len(ray.inits) == ray_start.LOCAL_START_ATTEMPTS


def test_other_failures_and_clusters_by_address_are_not_retried():
    other = FakeRay(failures=1, message="invalid resource request")
    with pytest.raises(Exception, match="invalid resource"):
        ray_start.init_ray(other, num_cpus=2)
    remote = FakeRay(failures=1)
    with pytest.raises(Exception, match="during startup"):
        ray_start.init_ray(remote, address="10.0.0.1:6379")
    assert len(other.inits) == 1 and len(remote.inits) == 1


def test_the_pool_and_the_ray_test_fixtures_start_ray_through_it():
    """Every local start goes through init_ray (the tests' module fixtures too): a bare ray.init of a new instance
    would fail the way CI did."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for path in ["workbench/evaluators/ray_pool.py", "tests/test_ray_node.py", "tests/test_pool.py"]:
        text = (root / path).read_text()
        assert "init_ray(ray, " in text and "ray.init(" not in text.replace("`ray.init`", ""), path
