"""scripts/ncu_contained_diag.py's process census (the GPU cases themselves need ncu and a GPU)."""
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import ncu_contained_diag as diag  # noqa: E402


def test_the_census_finds_a_grandchild_with_its_state_and_command_line():
    # a shell that starts a sleeper and waits: the sleeper is a grandchild of this process
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        for _ in range(100):
            rows = diag.snapshot(shell.pid)
            if rows:
                break
            time.sleep(0.05)
        assert [r["name"] for r in rows] == ["sleep"]
        assert rows[0]["cmdline"] == "sleep 30" and rows[0]["state"][:1] in "SR"
        assert shell.pid not in diag.descendants(shell.pid)
        assert rows[0]["pid"] in diag.descendants(diag.os.getpid())
    finally:
        subprocess.run(["pkill", "-P", str(shell.pid)])
        shell.wait(timeout=10)


def test_without_ncu_or_root_it_says_so_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(diag.shutil, "which", lambda name: None)
    assert diag.main(["--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs ncu" in err[0] and not (tmp_path / "x.json").exists()


def test_an_unknown_case_is_refused_before_anything_is_built(capsys, tmp_path):
    assert diag.main(["--out", str(tmp_path / "x.json"), "--cases", "original,relax_root"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ncu_contained_diag: no case relax_root; one of version, original") and "relax_uid" in err
