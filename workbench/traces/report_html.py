"""HTML pieces of the report: cell formatting, tables (with blank rows folded), cards, inlined figures.

Pure functions from frames and figures to strings; report.py puts them together.
"""
from __future__ import annotations

import base64
import html
import re
from importlib import metadata

import pandas as pd

from workbench import plots
from workbench.redaction import redact
from workbench.traces.sources import KIND_TITLES

MAX_TABLE_ROWS = 200        # longer tables show their first rows and say how many were left out
MESSAGE_CHARS = 180
CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d1d1d; margin: 0;
       background: #fafafa; line-height: 1.45; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 34px 0 8px; border-bottom: 1px solid #ddd;
padding-bottom: 4px; } h3 { font-size: 15px; margin: 18px 0 6px; }
p, li { font-size: 14px; max-width: 980px; } .muted { color: #666; font-size: 13px; }
.note { background: #fff7e0; border-left: 4px solid #e0a800; padding: 8px 12px; font-size: 14px; max-width: 980px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid #e1e1e1; border-radius: 6px; padding: 8px 14px; min-width: 120px; background: #fcfcfc; }
.card .v { font-size: 21px; font-weight: 600; } .card .k { font-size: 12px; color: #555; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 4px; }
th, td { padding: 4px 9px; border-bottom: 1px solid #e8e8e8; vertical-align: top; }
th { background: #f2f2f2; text-align: left; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.t { max-width: 420px; min-width: 200px; } td.s { white-space: nowrap; }
code { font-size: 13px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
tr:nth-child(even) td { background: #fbfbfb; }
.scroll { overflow-x: auto; max-width: 100%; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; border: 1px solid #eee; }
.pill { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff; }
details { margin: 6px 0; } summary { cursor: pointer; font-size: 14px; }
section.source { margin-top: 30px; padding-top: 4px; } section.source > h2 { font-size: 22px; }
section.source.fixture > h2 { color: #8a5a00; }
.kind { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; background: #eef1f5; }
.kind.fixture { background: #fff0cc; color: #7a5200; } .kind.campaign { background: #dff3e4; color: #1b5e20; }
.kind.imported { background: #e3ecfa; color: #1f4e9c; }
.warn { background: #fdecec; border-left: 4px solid #c62828; padding: 6px 12px; font-size: 13px; max-width: 980px; }
"""



def version(package: str) -> str:
    if package == "workbench":
        import workbench
        return getattr(workbench, "__version__", "?")
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def fmt(value, column: str = "") -> tuple[str, bool]:
    """Cell text and whether it is numeric (right-aligned)."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "", True
    if isinstance(value, (bool,)) or str(type(value)).endswith("bool_'>"):
        return ("yes" if value else "no"), False
    if isinstance(value, (int,)) or (hasattr(value, "dtype") and "int" in str(getattr(value, "dtype", ""))):
        return f"{int(value):,}", True
    if isinstance(value, float):
        if "rate" in column or "share" in column:
            return f"{100 * value:.1f} %", True
        if "cost" in column:
            return f"${value:.4f}", True
        if "pct" in column:
            return f"{value:+.1f} %", True
        if "geomean" in column or "best" in column:
            return f"{value:.3f}", True
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}", True
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M:%S"), False
    text = str(value)
    return (text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " …"), False


def rows_html(df: pd.DataFrame, columns: dict) -> str:
    body = []
    for _, row in df.iterrows():
        cells = []
        for col in columns:
            text, numeric = fmt(row.get(col), col)
            if col in ("preceded_by", "cls") and text in plots.CLASS_COLORS:
                ink = "#333" if text in ("nothing", "other") else "#fff"
                cells.append(f'<td><span class="pill" style="background:{plots.CLASS_COLORS[text]};color:{ink}">'
                             f"{html.escape(text)}</span></td>")
            elif col == "kind" and text in KIND_TITLES:
                cells.append(f'<td><span class="kind {text}">{html.escape(text)}</span></td>')
            else:
                cls = "n" if numeric else ("t" if len(text) > 40 else "s" if len(text) <= 20 else "")
                cells.append(f'<td class="{cls}">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in columns.values())
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(body)}</table></div>'


def table(df: pd.DataFrame, columns: dict | None = None, limit: int = MAX_TABLE_ROWS, fold: tuple = (),
           folded: str = "rows with nothing to show") -> str:
    """HTML table of df; columns maps column -> header (and order). Rows whose `fold` columns are all blank
    are folded away under one line that counts them (a long table of empty rows hides the few that matter)."""
    columns = columns or {c: c for c in df.columns}
    if df.empty:
        return '<p class="muted">(none)</p>'
    blank = df[list(fold)].isna().all(axis=1) if fold else pd.Series(False, index=df.index)
    shown, hidden = df[~blank], df[blank]
    parts = [rows_html(shown.head(limit), columns)] if len(shown) else []
    if len(shown) > limit:
        parts.append(f'<p class="muted">first {limit} of {len(shown):,} rows shown</p>')
    if len(hidden):
        parts.append(f"<details><summary>{len(hidden):,} {html.escape(folded)}</summary>"
                     f"{rows_html(hidden.head(limit), columns)}</details>")
    return "".join(parts)


IMAGE_DATA = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]*")


def redact_page(page: str) -> str:
    """The page with every secret redacted outside its inlined images (whose base64 is not text, and could
    look like a key by chance): the title, the trace roots' names and the warnings come from the command line
    and the file system, not from the redacted traces."""
    out, pos = [], 0
    for m in IMAGE_DATA.finditer(page):
        out += [redact(page[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(redact(page[pos:]))
    return "".join(out)


def img(fig, alt: str) -> str:
    data = base64.b64encode(plots.to_png(fig)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def inline(text: str) -> str:
    """The docstring's light markup (**bold**, *italic*, `code`) as HTML."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)


def rules_html(doc: str) -> str:
    """Paragraphs of the analysis docstring (after its first), with its bullet lists, as HTML."""
    out = []
    for para in doc.strip().split("\n\n")[1:]:
        blocks = []             # ("p", [lines]) or ("li", [lines])
        for line in para.splitlines():
            stripped = line.strip()
            if stripped.startswith("* "):
                blocks.append(("li", [stripped[2:]]))
            elif blocks and (blocks[-1][0] == "p" or line.startswith(" ")):
                blocks[-1][1].append(stripped)      # continuation of a paragraph or an indented bullet
            else:
                blocks.append(("p", [stripped]))
        html_, in_list = "", False
        for kind, lines in blocks:
            if kind == "li" and not in_list:
                html_, in_list = html_ + "<ul>", True
            if kind == "p" and in_list:
                html_, in_list = html_ + "</ul>", False
            tag = "li" if kind == "li" else "p"
            html_ += f"<{tag}>{inline(' '.join(lines))}</{tag}>"
        out.append(html_ + ("</ul>" if in_list else ""))
    return "".join(out)


def card(value, key: str) -> str:
    return (f'<div class="card"><div class="v">{html.escape(str(value))}</div>'
            f'<div class="k">{html.escape(key)}</div></div>')


def pct(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{100 * x:.0f} %"
