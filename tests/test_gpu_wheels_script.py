"""scripts/gpu_wheels.sh on a copy of its inputs: the carried tar.xz packages (Ray's and FA3's, scripts/prep_*.sh)
are unpacked into the site folder with the wheels, once per set; a new tarball is a new set; prep_fa3_xz.sh refuses
a missing wheel before it writes anything."""
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tarball(path: Path, module: str, value: int) -> None:
    src = path.parent / f"src-{module}"
    src.mkdir(parents=True)
    (src / f"{module}.py").write_text(f"VALUE = {value}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as tar:
        tar.add(src / f"{module}.py", arcname=f"{module}.py")
    shutil.rmtree(src)


def source_wheels(tree: Path, site: Path) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "scripts" / "gpu_wheels.sh", tree / "gpu_wheels.sh")
    command = (f"SITE={site}; source ./gpu_wheels.sh; ls -a {site} | grep -c '^.installed-'; "
               f"{sys.executable} -c 'import carried_fa3, carried_ray; print(carried_fa3.VALUE, carried_ray.VALUE)'")
    return subprocess.run(["bash", "-c", command], cwd=tree, capture_output=True, text=True, timeout=120)


def test_carried_tarballs_are_unpacked_into_the_site_once_per_set(tmp_path):
    tree, site = tmp_path / "tree", tmp_path / "site"
    tarball(tree / ".whl" / "fa3" / "fa3.tar.xz", "carried_fa3", 1)
    tarball(tree / ".whl" / "ray" / "ray-x.tar.xz", "carried_ray", 2)
    first = source_wheels(tree, site)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["1", "1", "2"]
    (site / "carried_fa3.py").write_text("VALUE = 7\n")          # same set: not unpacked again
    assert source_wheels(tree, site).stdout.split() == ["1", "7", "2"]
    tarball(tree / ".whl" / "fa3" / "fa3-new.tar.xz", "carried_fa3", 3)   # a new set: unpacked again
    again = source_wheels(tree, site).stdout.split()
    assert again[0] == "2" and again[2] == "2" and again[1] in ("1", "3")


def test_prep_fa3_xz_refuses_a_missing_wheel(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "prep_fa3_xz.sh"), str(tmp_path / "none.whl")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no FA3 wheel" in done.stderr and done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
