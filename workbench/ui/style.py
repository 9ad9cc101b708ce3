"""The campaign widgets' stylesheet (one <style> block, shown once above the widgets)."""

CSS = """
<style>
.wb-root { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px; color: #1d1d1d; }
.wb-item, .wb-status, .wb-demo, .wb-table-head, .wb-legend, .wb-note { line-height: 1.45; }
.wb-demo { background: #fff4d6; border: 1px solid #e9c46a; color: #6b4e00; padding: 6px 10px; border-radius: 4px;
           font-weight: 600; }
.wb-status { display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: baseline; padding: 6px 10px;
             background: #f3f5f8; border: 1px solid #dde2ea; border-radius: 4px; }
.wb-status b { font-weight: 600; } .wb-status .wb-k { color: #66707d; }
.wb-phase { padding: 1px 8px; border-radius: 10px; background: #e3ecfa; color: #1f4e9c; font-weight: 600; }
.wb-phase.wb-stopped { background: #e8e8e8; color: #444; }
.wb-item { margin: 0 0 8px 0; }
.wb-turn-head { color: #66707d; font-size: 11px; margin: 6px 0 2px 2px; text-transform: uppercase;
                letter-spacing: .04em; }
.wb-msg { background: #ffffff; border: 1px solid #e1e4e8; border-left: 3px solid #1f4e9c; border-radius: 4px;
          padding: 6px 10px; line-height: 1.45; white-space: pre-wrap; word-wrap: break-word; }
.wb-msg.wb-streaming { border-left-color: #8fb0e6; }
.wb-msg code, .wb-tool code { background: #f1f3f5; padding: 0 3px; border-radius: 3px; font-size: 12px; }
.wb-tool { margin: 4px 0 4px 14px; border: 1px solid #e1e4e8; border-radius: 4px; background: #fafbfc; }
.wb-tool > summary { cursor: pointer; padding: 3px 8px; font-family: var(--jp-code-font-family, monospace);
                     font-size: 12px; list-style-position: inside; line-height: 1.6; }
.wb-tool.wb-error { border-color: #e5a3a3; background: #fdf3f3; }
.wb-tool .wb-name { font-weight: 700; color: #1d1d1d; } .wb-tool .wb-args { color: #555; }
.wb-tool .wb-dur { color: #66707d; } .wb-tool .wb-err { color: #c62828; font-weight: 600; }
.wb-tool .wb-run { color: #1f4e9c; font-style: italic; }
.wb-tool pre { margin: 0; padding: 6px 10px; font-size: 11.5px; max-height: 260px; overflow: auto;
               white-space: pre-wrap; border-top: 1px solid #eceef1; }
.wb-tool pre.wb-errtext { color: #b71c1c; }
.wb-chip { display: inline-block; padding: 0 6px; margin-left: 6px; border-radius: 8px; font-size: 11px;
           background: #eef1f5; color: #333; font-family: var(--jp-ui-font-family, sans-serif); }
.wb-chip.wb-best { background: #dff3e4; color: #1b5e20; font-weight: 700; }
.wb-chip.wb-fail { background: #fde2e2; color: #b71c1c; font-weight: 700; }
.wb-chip.wb-flag { background: #fff0cc; color: #7a5200; }
.wb-banner { margin: 6px 0 6px 0; padding: 7px 10px; border-radius: 4px; border: 1px solid; border-left-width: 6px; }
.wb-banner .wb-bhead { font-size: 11.5px; font-weight: 600; }
.wb-banner .wb-bkind { font-weight: 800; text-transform: uppercase; letter-spacing: .04em; }
.wb-banner .wb-btext { font-size: 13.5px; margin-top: 3px; line-height: 1.4; }
.wb-banner .wb-bwhy { font-size: 11.5px; margin-top: 3px; opacity: .85; }
.wb-banner.wb-stall { background: #fff6e0; border-color: #e0a500; color: #5c4100; }
.wb-banner.wb-claim { background: #f3ecfb; border-color: #7b4bb0; color: #3f2063; }
.wb-banner.wb-suspicious { background: #fdecec; border-color: #c62828; color: #6d1010; }
.wb-banner.wb-human { background: #e4f4f1; border-color: #00897b; color: #00473f; }
.wb-note { color: #66707d; font-size: 12px; margin: 3px 0 3px 14px; }
.wb-note.wb-warning { color: #8a5a00; } .wb-note.wb-error { color: #c62828; font-weight: 600; }
.wb-pending { margin: 6px 0; padding: 6px 10px; border: 1px dashed #00897b; border-radius: 4px; color: #00473f;
              background: #f4fbfa; }
.wb-start, .wb-stop { padding: 6px 10px; border-radius: 4px; background: #f3f5f8; border: 1px solid #dde2ea; }
.wb-stop { background: #eef6ee; border-color: #b9d8bb; }
.wb-stop.wb-bad { background: #fdecec; border-color: #e5a3a3; }
.wb-table-wrap { max-height: 430px; overflow: auto; border: 1px solid #dde2ea; border-radius: 4px; }
.wb-table { border-collapse: collapse; width: 100%; font-size: 12px; font-variant-numeric: tabular-nums;
            line-height: 1.35; }
.wb-table th { position: sticky; top: 0; background: #f3f5f8; text-align: right; padding: 4px 8px;
               border-bottom: 1px solid #cfd5de; font-weight: 600; white-space: nowrap; }
.wb-table td { padding: 3px 8px; border-bottom: 1px solid #eef0f3; text-align: right; white-space: nowrap; }
.wb-table td.wb-l, .wb-table th.wb-l { text-align: left; }
.wb-table tr.wb-failed td { background: #fde2e2; }
.wb-table tr.wb-failed td.wb-status-cell { color: #b71c1c; font-weight: 700; }
.wb-table tr.wb-suspicious td { background: #fff0cc; }
.wb-table tr.wb-suspicious td.wb-flags { color: #7a5200; font-weight: 700; }
.wb-table tr.wb-unsupported td, .wb-table tr.wb-skipped td { background: #eef0f3; color: #555; }
.wb-table tr.wb-static_only td { color: #555; }
.wb-table td.wb-good { color: #1b5e20; font-weight: 600; } .wb-table td.wb-bad { color: #b71c1c; }
.wb-table-head { padding: 4px 2px 6px 2px; }
.wb-legend { color: #66707d; font-size: 11px; padding: 4px 2px; }
.wb-legend span { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 3px 0 10px;
                  vertical-align: -1px; }
.wb-placeholder { color: #66707d; font-size: 12px; padding: 18px 10px; border: 1px dashed #dde2ea;
                  border-radius: 4px; text-align: center; margin: 4px 0; }
.wb-alt { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.wb-section { font-weight: 700; font-size: 13px; margin: 4px 0 2px 2px; color: #333; }
</style>
"""
