"""The stock torch==2.6.0 wheel for one CPython, as pip installs it: one file in the wheelhouse.

The file is fetched once (``pip download``, into ``<cache>/wheels``, where the
venvs' ``pip download`` put it too) and checked against the sha256 the
package registry publishes for it, asked once through pip's own resolver
(``pip install --dry-run --report``) and kept next to the file, with the
size and mtime the file had when its hash matched (an untouched file is not
hashed again).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from . import disk, paths, ui, wheel
from .shell import Shell

TORCH = "torch==2.6.0"
WHEEL_NEED = 800 * disk.MB  # the file is ~770 MB


def find(house: Path, version: str) -> Path | None:
    tag = f"cp{version.replace('.', '')}"
    found = sorted(house.glob(f"torch-2.6.0-{tag}-{tag}-*linux*_x86_64.whl"))
    return found[0] if found else None


def _pip(python: str, *args: str) -> list[str]:
    return [python, "-m", "pip", "--disable-pip-version-check", *args]


def registry_sha256(sh: Shell, version: str, python: str) -> tuple[str, str]:
    """(file name, sha256) of the torch==2.6.0 wheel the registry serves for CPython ``version`` on this platform."""
    with tempfile.TemporaryDirectory(prefix="fca-pip-") as tmp:
        report = Path(tmp) / "report.json"
        sh.run(*_pip(python, "install", "-q", "--dry-run", "--no-deps", "--ignore-installed", "--only-binary=:all:",
                     "--python-version", version, "--target", str(Path(tmp) / "t"), "--report", str(report), TORCH))
        data = json.loads(report.read_text())
    items = data.get("install") or []
    if len(items) != 1:
        raise ui.UserError(f"pip resolved {len(items)} files for {TORCH} on Python {version}; expected one wheel")
    info = items[0]["download_info"]
    digest = (info.get("archive_info") or {}).get("hashes", {}).get("sha256")
    if not digest:
        raise ui.UserError(f"the package registry publishes no sha256 for {info.get('url')}; cannot check the stock wheel")
    return info["url"].rsplit("/", 1)[-1].split("#", 1)[0], digest


def ensure(cache: Path, version: str, python: str | None, sh: Shell) -> Path:
    """The checked stock wheel file for CPython ``version`` (downloaded once)."""
    py = python or sys.executable
    house = paths.wheelhouse(cache)
    house.mkdir(parents=True, exist_ok=True)
    path = find(house, version)
    if path is None:
        disk.check_free_disk(house, WHEEL_NEED, f"the stock {TORCH} wheel for Python {version}")
        with ui.step(f"pip download {TORCH} for Python {version} -> {house} (~770 MB)"):
            sh.run(*_pip(py, "download", "--progress-bar", "on", "--no-deps", "--only-binary=:all:", "--python-version", version,
                         "-d", str(house), TORCH), capture=False)
        path = find(house, version)
        if path is None:
            raise ui.UserError(f"pip download put no torch 2.6.0 wheel for Python {version} into {house}")
    known = path.with_name(path.name + ".registry.json")
    if known.is_file():
        record = json.loads(known.read_text())
    else:
        with ui.step(f"ask the registry for the sha256 of {path.name}"):
            name, digest = registry_sha256(sh, version, py)
        if name != path.name:
            raise ui.UserError(f"the registry serves {name} for Python {version}, but the wheelhouse has {path.name}; "
                               f"delete {path} and retry")
        record = {"file": name, "sha256": digest}
    st = path.stat()
    stat_key = f"{st.st_size}:{st.st_mtime_ns}"
    if record.get("checked") == stat_key:  # hashed and matched, and the file is untouched since
        return path
    with ui.step(f"check {path.name} against the registry's sha256"):
        got = wheel.file_sha256(path)
    if got != record["sha256"]:
        raise ui.UserError(f"{path} has sha256 {got}, the registry says {record['sha256']}: a corrupt or foreign file; "
                           f"delete it and retry")
    known.write_text(json.dumps({**record, "checked": stat_key}, indent=1) + "\n")
    return path
