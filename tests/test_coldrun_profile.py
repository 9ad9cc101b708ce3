"""scripts/coldrun_profile.py: where a cold run's time went, read back from coldrun.py's leg logs (progress lines)."""
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = ("[{i:>3}/182] {name:<34} passed      211.2 us   325.4 TFLOP/s  x38.51 original  (call 252.5 us)  eta 3m56s"
        "  ({tail})")


def _log(path: Path, rows) -> None:
    path.write_text("04_pingpong.cu: built, 12 kernel(s)\n" + "".join(
        LINE.format(i=i + 1, name=name, tail=tail) + "\n" for i, (name, tail) in enumerate(rows)))


def test_the_profile_sums_what_each_leg_timed_afresh_and_the_rest(tmp_path):
    folder = tmp_path / "coldrun"
    folder.mkdir()
    _log(folder / "coldrun_cold.log", [
        ("A_d64_c0_s512", "1.3 s; timed now original 0.1 s, cudnn 0.5 s, fa2 0.0 s"),
        ("A_d128_c0_s512", "1.0 s; timed now original 0.1 s, cudnn 0.7 s, fa2 0.0 s"),
        ("A_d256_c0_s512", "1.5 s; timed now original 0.1 s, cudnn 1.1 s, fa2 0.1 s")])
    _log(folder / "coldrun_resumed.log", [("A_d64_c0_s512", "0.2 s"), ("A_d128_c0_s512", "0.3 s")])
    with tarfile.open(tmp_path / "coldrun.tgz", "w:gz") as tar:
        tar.add(folder, arcname="coldrun")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "coldrun_profile.py"), str(tmp_path / "coldrun.tgz")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "original 0.3, cudnn 2.3, fa2 0.1" in out                     # the cold leg's sums
    assert "1.1 / 0.0 (0 cached)" in out and "0.0 / 0.5 (2 cached)" in out   # the rest; the resumed cached lines
    assert "cudnn: d64 0.50 s (n=1), d128 0.70 s (n=1), d256 1.10 s (n=1)" in out


def test_a_folder_without_leg_logs_is_refused_with_one_line(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "coldrun_profile.py"), str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "no coldrun_<leg>.log" in run.stderr
