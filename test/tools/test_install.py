"""The tooling as `pip install` installs it: an import package that cannot clash with PyTorch's `tools`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT


def test_setuptools_builds_fca_tools_and_no_bare_tools_package(tmp_path: Path) -> None:
    """What `pip install .` copies (setuptools' build_py) and the console scripts it writes."""
    build, meta = tmp_path / "build", tmp_path / "meta"
    meta.mkdir()
    for command in (["build_py", "--build-lib", str(build)], ["egg_info", "--egg-base", str(meta)]):
        subprocess.run([sys.executable, "setup.py", "-q", *command], check=True, capture_output=True, text=True,
                       cwd=REPO_ROOT)
    assert sorted(p.name for p in build.iterdir()) == ["fca_tools"]
    assert (build / "fca_tools" / "lib" / "overlay" / "build.py").is_file()
    (egg_info,) = meta.glob("*.egg-info")
    assert (egg_info / "top_level.txt").read_text().split() == ["fca_tools"]
    assert "fca-apply = fca_tools.apply_patches:entry" in (egg_info / "entry_points.txt").read_text()


def test_an_installed_console_script_runs_outside_the_repo(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "fca-apply"
    if not script.exists():  # the suite's venv has `pip install -e .` (.ci/run, README)
        raise AssertionError(f"{script} is missing: run `pip install -e .` in this venv")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "usage: " in proc.stdout
