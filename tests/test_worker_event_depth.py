"""The worker's event parser refuses deep nesting itself (worker_events.MAX_DEPTH), so the one-line error is the same
on every Python: on the GPU machine's 3.12 json.loads parsed 5000 levels and the message said "unknown event
'list'" where 3.11's RecursionError said "not JSON" (tests/test_security_walls.py's `deep json` case failed there)."""
import pytest

from workbench.harness.worker_events import MAX_DEPTH, MalformedEvent, Protocol, _nesting_depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100, 5000])
def test_a_deep_line_is_not_json_whatever_json_loads_would_do(depth):
    # 100 levels parse on every Python: without the depth check this is "unknown event 'list'"
    with pytest.raises(MalformedEvent, match="not JSON: nested deeper than"):
        Protocol([]).accept("[" * depth + "]" * depth)


def test_brackets_inside_strings_do_not_count_and_shallow_events_pass_the_scan():
    assert _nesting_depth('{"event": "begin", "scenario": "' + "[" * 500 + '"}') == 1
    assert _nesting_depth('["a\\"[", {"b": [1]}]') == 3
    with pytest.raises(MalformedEvent, match="unknown event 'hello'"):   # many brackets, shallow: parsed as usual
        Protocol([]).accept('{"event": "hello", "x": ' + "[" + "[], " * 100 + "[]]}")
