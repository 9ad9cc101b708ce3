"""Every module of workbench/ stays readable: at most 400 lines, no line over 120 characters, and a docstring
whose first sentence says the module's job."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"
MAX_LINES, MAX_CHARS = 400, 120
FILES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_over_400_lines():
    assert len(FILES) > 50
    long = {str(p.relative_to(PACKAGE)): n for p in FILES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_line_over_120_characters():
    wide = [f"{p.relative_to(PACKAGE)}:{i}: {len(line)}" for p in FILES
            for i, line in enumerate(p.read_text().splitlines(), 1) if len(line) > MAX_CHARS]
    assert wide == []


def test_every_module_says_its_job():
    silent = [str(p.relative_to(PACKAGE)) for p in FILES
              if p.read_text().strip() and not ast.get_docstring(ast.parse(p.read_text()))]
    assert silent == []
