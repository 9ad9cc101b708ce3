"""An outside agent's campaign and that agent's own transcript, joined into one session for the analysis.

A campaign served by `workbench mcp` or `workbench check --campaign` (sessions.agent `external`) records what the
workbench saw: each harness call, its `evaluations` rows, the questions put to the agent and a person's messages.
The agent's transcript, imported later (`workbench import ~/.claude/projects/...`), records the rest: the agent's
messages, every tool call, and the same harness results once more, as text in tool output. `link_transcripts`
makes the two one session, so the agent's messages, the questions and the gains lie on one timeline:
  * **link**: the transcript's `sessions.campaign_id` names the campaign (`workbench import --campaign-id ID`), or
    a harness run appears in both: the same eval id (the result line every check prints), else the same kernel
    sha and geomean vs the original (to 6 digits). A transcript goes to the campaign it shares most runs with;
  * **merge**: the transcript's rows take the campaign's session id; its copies of the campaign's runs are dropped
    (the campaign's rows are the record); so are the campaign's own tool calls and call/result blocks (the
    transcript has those calls, in the agent's real order); the campaign keeps its interventions, its question
    blocks and a person's messages, and its sessions row, which takes the transcript's model.
"""
from __future__ import annotations

import pandas as pd

# a campaign the workbench recorded (source workbench) for an agent it does not run: campaign_service.EXTERNAL_AGENT
# (traces/ does not import agent/); imported transcripts carry agent `external` too, with their own source
EXTERNAL_AGENT = "external"
TRANSCRIPT_SOURCES = ("claude_code", "codex")
JOINED_TABLES = ("sessions", "messages", "tool_calls", "evaluations", "interventions")

LINKS_SQL = f"""
WITH campaigns AS (
    SELECT DISTINCT session_id AS campaign, coalesce(campaign_id, session_id) AS campaign_id
    FROM sessions_unjoined WHERE agent = '{EXTERNAL_AGENT}' AND source = 'workbench'),
transcripts AS (
    SELECT DISTINCT session_id AS transcript, campaign_id FROM sessions_unjoined
    WHERE source IN ({", ".join(f"'{s}'" for s in TRANSCRIPT_SOURCES)})),
runs AS (
    SELECT session_id, eval_id, any_value(kernel_sha) AS kernel_sha,
           round(max(geomean_vs_original), 6) AS geomean
    FROM evaluations_unjoined GROUP BY session_id, eval_id),
campaign_runs AS (SELECT r.* FROM runs r JOIN campaigns c ON r.session_id = c.campaign),
transcript_runs AS (SELECT r.* FROM runs r JOIN transcripts t ON r.session_id = t.transcript),
same_runs AS (
    SELECT t.session_id AS transcript, t.eval_id AS transcript_eval, c.session_id AS campaign, c.eval_id
    FROM transcript_runs t JOIN campaign_runs c ON t.eval_id = c.eval_id
    UNION
    SELECT t.session_id, t.eval_id, c.session_id, c.eval_id
    FROM transcript_runs t JOIN campaign_runs c ON t.kernel_sha = c.kernel_sha AND t.geomean = c.geomean),
candidates AS (
    SELECT transcript, campaign, count(DISTINCT eval_id) AS shared FROM same_runs GROUP BY transcript, campaign
    UNION ALL
    SELECT t.transcript, c.campaign, 1000000000 FROM transcripts t JOIN campaigns c ON t.campaign_id = c.campaign_id)
SELECT transcript, arg_max(campaign, shared) AS campaign FROM candidates GROUP BY transcript ORDER BY transcript
"""

DUPLICATE_RUNS_SQL = """
SELECT DISTINCT t.session_id AS transcript, t.eval_id
FROM evaluations_unjoined t JOIN transcript_links l ON t.session_id = l.transcript
JOIN (SELECT session_id, eval_id, any_value(kernel_sha) AS kernel_sha, round(max(geomean_vs_original), 6) AS geomean
      FROM evaluations_unjoined GROUP BY session_id, eval_id) c ON c.session_id = l.campaign
WHERE t.eval_id = c.eval_id OR (t.kernel_sha = c.kernel_sha AND round(t.geomean_vs_original, 6) = c.geomean)
"""

_RENAMED = "r.* REPLACE (coalesce(l.campaign, r.session_id) AS session_id)"
_FROM = "FROM {table}_unjoined r LEFT JOIN transcript_links l ON r.session_id = l.transcript"
VIEWS = {
    "sessions": f"""SELECT r.* REPLACE (coalesce(nullif(r.model, ''), m.model) AS model,
                           concat_ws('; ', r.source_file, m.source_file) AS source_file)
                    FROM sessions_unjoined r
                    LEFT JOIN (SELECT l.campaign, any_value(s.model) AS model, string_agg(s.source_file, '; ')
                                      AS source_file
                               FROM sessions_unjoined s JOIN transcript_links l ON s.session_id = l.transcript
                               GROUP BY l.campaign) m ON r.session_id = m.campaign
                    WHERE r.session_id NOT IN (SELECT transcript FROM transcript_links)""",
    "messages": f"""SELECT {_RENAMED} {_FROM.format(table="messages")}
                    WHERE NOT (r.session_id IN (SELECT campaign FROM transcript_links)
                               AND r.block_type IN ('tool_use', 'tool_result'))""",
    "tool_calls": f"""SELECT {_RENAMED} {_FROM.format(table="tool_calls")}
                      WHERE r.session_id NOT IN (SELECT campaign FROM transcript_links)""",
    "evaluations": f"""SELECT {_RENAMED} {_FROM.format(table="evaluations")}
                       LEFT JOIN transcript_duplicate_runs d ON r.session_id = d.transcript AND r.eval_id = d.eval_id
                       WHERE d.eval_id IS NULL""",
    "interventions": f"SELECT {_RENAMED} {_FROM.format(table='interventions')}",
}


def link_transcripts(con) -> pd.DataFrame:
    """Join every imported transcript to the outside agent's campaign it belongs to, in the connection's views
    (`connect` made one per table). Returns the links (transcript, campaign); without any, nothing changes."""
    for table in JOINED_TABLES:
        con.execute(f"ALTER VIEW {table} RENAME TO {table}_unjoined")
    links = con.execute(LINKS_SQL).df()
    if links.empty:
        for table in JOINED_TABLES:
            con.execute(f"ALTER VIEW {table}_unjoined RENAME TO {table}")
        return links
    con.register("transcript_links", links)
    duplicates = con.execute(DUPLICATE_RUNS_SQL).df()
    con.register("transcript_duplicate_runs", duplicates)
    for table, sql in VIEWS.items():
        con.execute(f"CREATE VIEW {table} AS {sql}")
    return links
