"""Resume after a crash: no row lost, none duplicated, the conversation and kernel continue where the last
committed turn left them."""
import pytest

from workbench.agent.backends.fake import FakeBackend, call, say
from workbench.agent.loop import Campaign
from workbench.campaign.config import Budget, CampaignConfig
from workbench.campaign.events import EventLog, ToolCallFinished
from workbench.evaluators.standin_timings import SequenceEvaluator
from workbench.questions.policy import PolicyConfig
from workbench.traces.writer import TraceWriter, read_table

KERNEL = "#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\n"


class Crash(BaseException):
    """Stands in for kill -9: nothing after it runs, no handler sees it."""


def edit(old, new):
    return call("edit_file", path="kernel.cu", old_string=f"#define KEY_TILE {old} ",
                new_string=f"#define KEY_TILE {new} ")


def script():
    return [
        [say("start"), call("run_harness")],
        [edit(8, 16), call("run_harness")],
        [say("I am done.")],                                   # a claim: a bank question follows
        [edit(16, 4), call("run_harness"), call("list_files")],
        [edit(4, 8), call("run_harness")],
        [call("run_harness")],
    ]


def make(tmp_path, cid="c-resume"):
    config = CampaignConfig(suite="smoke", mode="bank", root=str(tmp_path), campaign_id=cid, agent="fake",
                            stop_expr="all_correct and geomean_vs_original >= 100", budget=Budget(turns=6),
                            policy=PolicyConfig(stall_runs=2))
    return Campaign.create(config, FakeBackend(script()), evaluator=SequenceEvaluator([1.0, 1.2, 1.1, 1.3, 1.25]),
                           kernel_text=KERNEL)


def table_rows(root, cid):
    return {t: read_table(root, t, cid) for t in ("messages", "tool_calls", "evaluations", "interventions")}


@pytest.mark.parametrize("crash_point", ["mid_turn", "between_table_writes"])
def test_resume_after_a_crash_loses_and_duplicates_nothing(tmp_path, crash_point, monkeypatch):
    # the reference: the same campaign, uninterrupted
    reference = make(tmp_path / "ref")
    reference.run()
    ref_rows = table_rows(reference.ws.traces_dir, "c-resume")

    campaign = make(tmp_path / "crash")
    if crash_point == "mid_turn":
        def crash(event):                                     # after turn 4's first tool call
            if isinstance(event, ToolCallFinished) and event.turn == 4:
                raise Crash()
        campaign.subscribe(crash, critical=True)
    else:
        real_append = TraceWriter.append

        def append(self, table, rows):                         # turn 4's tool rows land, its messages never do
            rows = list(rows)
            if table == "messages" and rows and rows[0]["turn"] == 4:
                raise Crash()
            return real_append(self, table, rows)
        monkeypatch.setattr(TraceWriter, "append", append)
    with pytest.raises(Crash):
        campaign.run()
    monkeypatch.undo()
    root = campaign.ws.traces_dir
    assert read_table(root, "messages", "c-resume")["turn"].max() == 3
    kernel_before_crash = campaign.ws.kernel_path.read_text()
    assert "KEY_TILE 4 " in kernel_before_crash            # turn 4's edit happened on disk ...

    backend = FakeBackend(script())
    resumed = Campaign.resume("c-resume", backend, root=str(tmp_path / "crash"),
                              evaluator=SequenceEvaluator([1.1, 1.3, 1.25]))
    assert "KEY_TILE 16 " in resumed.ws.kernel_path.read_text()   # ... and is undone: back to the end of turn 3
    log = EventLog()
    resumed.subscribe(log)
    stopped = resumed.run()
    assert stopped.reason == "budget_turns" and stopped.turn == 6
    assert backend.position == 6                                    # turns 4..6 were asked for, not 1..3
    # the request for turn 4 carries the conversation exactly as it stood after turn 3
    assert len(backend.requests[0].messages) == 7                  # the task, then 3 x (assistant, user)
    assert backend.requests[0].messages == campaign.messages[:7]

    rows = table_rows(root, "c-resume")
    assert not rows["messages"].duplicated(["message_id", "block_index"]).any()
    assert rows["tool_calls"]["call_id"].is_unique
    assert sorted(rows["messages"]["turn"].unique()) == [1, 2, 3, 4, 5, 6]
    for table, key in (("messages", ["turn", "role", "block_index"]), ("tool_calls", ["turn", "tool_index"]),
                       ("interventions", ["turn", "trigger"])):
        got = rows[table].sort_values(key)[key].reset_index(drop=True)
        want = ref_rows[table].sort_values(key)[key].reset_index(drop=True)
        assert got.equals(want), table
    assert rows["evaluations"].groupby("turn")["eval_id"].nunique().to_dict() == \
        ref_rows["evaluations"].groupby("turn")["eval_id"].nunique().to_dict()
    sessions = read_table(root, "sessions", "c-resume")
    assert len(sessions) == 1 and sessions.iloc[0].turns == 6
    assert list(rows["tool_calls"]["tool_index"].sort_values()) == list(range(1, 10))


def test_resume_an_unknown_campaign_says_so(tmp_path):
    from workbench.campaign.workspace import WorkspaceError
    with pytest.raises(WorkspaceError, match="no campaign"):
        Campaign.resume("nope", FakeBackend([]), root=str(tmp_path))


def test_resume_from_the_cli_continues_with_a_bigger_budget(tmp_path, capsys):
    from workbench.agent.campaign_cli import campaign_main
    args = ["--root", str(tmp_path), "--suite", "smoke", "--evaluator", "standin", "--agent", "offline",
            "--id", "cli-1", "--budget", "turns=2", "--stop", "all_correct and geomean_vs_original >= 100"]
    assert campaign_main(args) == 0
    assert campaign_main(["--root", str(tmp_path), "--resume", "cli-1", "--evaluator", "standin",
                          "--budget", "turns=4"]) == 0
    out = capsys.readouterr().out
    assert "resuming after turn 2" in out and "after 4 turns" in out
    messages = read_table(tmp_path / "cli-1" / "traces", "messages")
    assert sorted(messages["turn"].unique()) == [1, 2, 3, 4]
    assert not messages.duplicated(["message_id", "block_index"]).any()
