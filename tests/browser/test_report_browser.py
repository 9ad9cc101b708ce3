"""A real browser: `workbench report` on the realistic transcripts (tests/fixtures/transcripts/realistic) opened in
headless Chromium (Debian's, driven by Playwright); the figures, the arms table with one metric per column and the
import tallies must be visible. Saves docs/report_screenshot.png when WORKBENCH_UPDATE_SCREENSHOT=1 (a temp file
otherwise).

    .venv/bin/python -m pytest tests/browser/test_report_browser.py -q

Skipped, with the reason, when Chromium or Playwright is missing.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from workbench.traces.importers import import_paths
from workbench.traces.report import build_report

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "realistic"
SCREENSHOT = (ROOT / "docs" / "report_screenshot.png" if os.environ.get("WORKBENCH_UPDATE_SCREENSHOT")
              else Path(tempfile.gettempdir()) / "workbench_report_screenshot.png")
SOURCES_SCREENSHOT = (ROOT / "docs" / "report_sources_screenshot.png" if os.environ.get("WORKBENCH_UPDATE_SCREENSHOT")
                      else Path(tempfile.gettempdir()) / "workbench_report_sources_screenshot.png")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CLAUDE_SESSION = "5b0f7c52-8d1e-4c3a-9f6e-2a7d41c0e9b3"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _missing() -> str:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium, or set CHROMIUM=/path/to/chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (.venv/bin/pip install -e '.[notebook]')"
    return ""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    why = _missing()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("traces")
    import_paths([FIXTURES / "claude_code"], root, arm="human")
    import_paths([FIXTURES / "codex"], root, arm="tools_only")
    return build_report([root], tmp_path_factory.mktemp("report") / "report.html",
                        title="Intervention statistics: the realistic test transcripts")


def test_report_in_chromium(report):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri())
        expect(page.locator("h1")).to_have_text("Intervention statistics: the realistic test transcripts")
        images = page.locator("main img")
        assert images.count() == 4
        for i in range(images.count()):
            images.nth(i).scroll_into_view_if_needed()
            assert images.nth(i).evaluate("el => el.complete && el.naturalWidth") > 300

        arms = page.locator("table").filter(has=page.locator("th", has_text="best × FA3 (max)"))
        expect(arms).to_be_visible()
        headers = arms.locator("th").all_inner_texts()
        assert "best × original (max)" in headers and "best (max)" not in headers
        cells = dict(zip(headers, arms.locator("tr").nth(1).locator("td").all_inner_texts()))
        assert (cells["arm"], cells["best × FA3 (max)"],
                cells["best × original (max)"]) == ("tools_only", "0.732", "")

        tallies = page.locator("table").filter(has=page.locator("th", has_text="seen again"))
        tallies.scroll_into_view_if_needed()
        expect(tallies).to_be_visible()
        row = tallies.locator("tr").filter(has=page.locator("td", has_text=CLAUDE_SESSION))
        expect(row).to_contain_text("ide_opened_file 1")

        # the screenshot: from the title to the end of the import tallies (the rules below are text)
        bottom = tallies.evaluate("el => el.getBoundingClientRect().bottom + window.scrollY")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True,
                        clip={"x": 0, "y": 0, "width": 1280, "height": int(bottom) + 32})
        browser.close()
    assert SCREENSHOT.stat().st_size > 50_000


def test_report_sections_in_chromium(three_source_traces, tmp_path):
    """One trace root holding a recorded H200 campaign, a CPU stand-in campaign and the imported test fixtures:
    each source has its own section, the headline cards count the recorded campaign only, every figure loads.
    Saves docs/report_sources_screenshot.png when WORKBENCH_UPDATE_SCREENSHOT=1."""
    why = _missing()
    if why:
        pytest.skip(why)
    from playwright.sync_api import expect, sync_playwright

    out = build_report([three_source_traces], tmp_path / "report.html", title="Intervention statistics: three sources")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(out.as_uri())
        campaign, fixture = page.locator("#source-campaign"), page.locator("#source-fixture")
        expect(campaign.locator("h2")).to_have_text("Recorded campaigns · 1 session")
        expect(fixture.locator("h2")).to_have_text("Test fixtures, demos and stand-in data · 3 sessions")
        assert page.locator("#source-imported").count() == 0
        headline = page.locator(".cards.headline")
        assert headline.count() == 1
        cards = dict(zip(headline.locator(".k").all_inner_texts(), headline.locator(".v").all_inner_texts()))
        assert cards["sessions"] == "1" and cards["questions from the bank"] == "74"
        expect(fixture.locator(".note")).to_contain_text("test fixtures")
        expect(fixture.locator("td", has_text="stand-in (not measured on a GPU)")).to_be_visible()
        images = page.locator("img")
        assert images.count() == 8           # four figures per section
        for i in range(images.count()):
            assert images.nth(i).evaluate("el => el.complete && el.naturalWidth > 300")
        # the screenshot: the page from its top through the campaign section's first figure
        figure = campaign.locator("img").first.bounding_box()
        SOURCES_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SOURCES_SCREENSHOT), clip={"x": 0, "y": 0, "width": 1280,
                                                     "height": figure["y"] + figure["height"] + 16}, full_page=True)
        browser.close()
    assert SOURCES_SCREENSHOT.stat().st_size > 50_000
