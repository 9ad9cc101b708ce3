"""The repository is complete on its own: no tracked file points to a document or folder beside it (the sibling
`shared/` folder, its DESIGN.md and friends) or climbs out of the checkout with `../`. The problem's contract
lives in kernels/attn_fwd/README.md."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# documents that live beside the repository, not in it: naming one points out unless the repository has its own
OUTSIDE_DOCS = re.compile(r"\b(DESIGN|GPU|FIELD_NOTES|HOPPER_ATTENTION|STYLE|KINDS)\.md\b")
SIBLING = re.compile(r"(?<![\w.-])(?:\.\./)+shared\b|/work/shared\b")
CLIMB = re.compile(r"(?<![\w./-])((?:\.\./)+)([\w.-]+)")
# records of past runs, kept byte for byte (kernel copies are named by their sha): they say what a run saw
RECORDS = ("data/", "docs/data/", "tests/fixtures/")
# tests hand `../` paths to the workspace on purpose, to prove it refuses them
ESCAPE_INPUTS = ("tests/",)
THIS_FILE = "tests/test_repo_contained.py"      # names what it forbids
# The kernel rungs' header lines that still point out; .cu files are the lead's to edit. This list only shrinks:
# a line fixed in its file must leave the list too (test_known_pointers_are_still_there).
KNOWN: set = set()   # (file, line) pointers out still to fix; empty: every one is fixed


def tracked_text_files(root: Path = ROOT):
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        path = root / name
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):       # binary files (images, parquet, archives) hold no paths
            continue
        if "\0" not in text:
            yield name, text


def own_doc_names(root: Path) -> frozenset:
    """Names of the repository's own .md files: the tracked ones (a package's DESIGN.md under .venv is not the
    repository's), or every one below root where root is no checkout (the tests' scratch folders)."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], cwd=root, capture_output=True)
    if listed.returncode == 0 and (root / ".git").exists():
        return frozenset(Path(n).name for n in listed.stdout.decode().split("\0") if n)
    return frozenset(p.name for p in root.rglob("*.md"))


def pointers_out(name: str, text: str, root: Path = ROOT, own_docs=None) -> list[tuple[str, str]]:
    """(file, line) for every line of one file that points out of the repository."""
    if name.startswith(RECORDS) or name == THIS_FILE:
        return []
    own_docs = own_doc_names(root) if own_docs is None else own_docs
    found = []
    for line in text.splitlines():
        out = SIBLING.search(line) or any(m.group(0) not in own_docs for m in OUTSIDE_DOCS.finditer(line))
        if not out and not name.startswith(ESCAPE_INPUTS):
            for m in CLIMB.finditer(line):
                target = os.path.normpath(root / os.path.dirname(name) / (m.group(1) + m.group(2)))
                out = out or not (target + os.sep).startswith(str(root) + os.sep)
        if out:
            found.append((name, line.strip()))
    return found


def test_no_tracked_file_points_out_of_the_repository():
    own_docs = own_doc_names(ROOT)             # one walk, not one a file (that took a minute of CI)
    found = {hit for name, text in tracked_text_files() for hit in pointers_out(name, text, own_docs=own_docs)}
    assert sorted(found - KNOWN) == []


def test_known_pointers_are_still_there():
    """The allowlist shrinks: a line the lead has fixed must leave KNOWN."""
    present = {(name, line.strip()) for name, _ in KNOWN for line in (ROOT / name).read_text().splitlines()}
    assert sorted(KNOWN - present) == []


def test_the_check_finds_each_kind_of_pointer(tmp_path):
    (tmp_path / "docs").mkdir()
    text = "see ../shared/GPU.md\nsee DESIGN.md\nsee ../../elsewhere/notes.txt\nsee docs/x.md and ../README.md\n"
    found = [line for _, line in pointers_out("docs/a.md", text, root=tmp_path)]
    assert found == ["see ../shared/GPU.md", "see DESIGN.md", "see ../../elsewhere/notes.txt"]
    (tmp_path / "DESIGN.md").write_text("the repository's own")
    assert [line for _, line in pointers_out("docs/a.md", text, root=tmp_path)] == [
        "see ../shared/GPU.md", "see ../../elsewhere/notes.txt"]
