"""The overlay venv's torch: the patched wheel, installed by pip, and stock torch back again.

* ``install`` pip-installs the wheel ``package.make`` wrote (``--no-deps
  --force-reinstall``: its dependencies are the stock wheel's, already there)
  and records its sha256 in ``<state>/installed-wheel.json``; the same wheel
  twice is a no-op, so processes running in the venv never see torch half
  replaced.  ``uninstall`` reinstalls the stock wheel from the wheelhouse.
* User edits are never overwritten: a file of the installed torch that
  changed after pip installed it (its bytes no longer match pip's RECORD)
  stops both, naming the file.
* C++ extensions: ``extensions_dir`` is the ``TORCH_EXTENSIONS_DIR`` that
  ``overlay.py run`` defaults to, one per stack.  torch's JIT loader rebuilds
  an extension when its sources or flags change, not when the torch headers
  do (they are ``-isystem``, so ``-MMD`` does not list them): in the shared
  default dir an extension built before the stack changed a header (or built
  by the stock venv) would load with the old inline code.
* An overlay venv from before the wheel (patched files copied over stock,
  ``bin/python`` a wrapper that set ``LD_PRELOAD``, ``installed.json``) is
  migrated: its wrappers and ``.pth`` hook go, and pip replaces the files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .. import stock_wheel, ui, wheel
from .venv import installed_torch_version, reinstall_torch, site_packages, venv_python
from ..shell import Shell

RECORD_JSON = "installed-wheel.json"
LEGACY_MANIFEST = "installed.json"  # the copied-files install this module replaced


def extensions_dir(state: Path, stack_id: str) -> Path:
    return state / "torch_extensions" / stack_id


def run_env(overlay_dir: Path, venv: Path, stack_id: str) -> dict[str, str]:
    """What a command run in ``venv``, whose torch is the wheel of the overlay at ``overlay_dir``
    (of stack ``stack_id``), gets on top of the caller's environment: the venv first on PATH, no
    user site, and C++ extensions built in a dir per stack (unless the caller names one)."""
    return {
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONNOUSERSITE": "1",
        "TORCH_EXTENSIONS_DIR": os.environ.get("TORCH_EXTENSIONS_DIR")
        or str(extensions_dir(overlay_dir / "state", stack_id)),
    }


def installed(state: Path) -> dict | None:
    """``{"wheel": name, "sha256": ..., "version": ...}`` of the wheel installed into the venv, or None."""
    f = state / RECORD_JSON
    try:
        return json.loads(f.read_text()) if f.is_file() else None
    except json.JSONDecodeError:
        return None  # cut off (a full disk, a killed install): install again


def edited_files(venv: Path) -> list[str]:
    """Files of the installed torch whose bytes differ from pip's RECORD of them.  Only files
    modified after the RECORD was written are hashed (an install leaves them all older)."""
    sp = site_packages(venv)
    if sp is None:
        return []
    records = sorted(sp.glob("torch-*.dist-info/RECORD"))
    if not records:
        return []
    since = records[0].stat().st_mtime_ns
    edited = []
    for rel, (digest, _size) in wheel.parse_record(records[0].read_text()).items():
        f = sp / rel
        if not digest or not f.is_file() or f.stat().st_mtime_ns <= since:
            continue
        if wheel.record_hash(f.read_bytes()) != digest:
            edited.append(rel)
    return edited


def _refuse_edits(venv: Path, what: str) -> None:
    edited = edited_files(venv)
    if edited:
        more = f" (and {len(edited) - 1} more)" if len(edited) > 1 else ""
        raise ui.UserError(
            f"{site_packages(venv) / edited[0]}{more} was edited after pip installed it; save your edit elsewhere "
            f"and reinstall that file's torch (or delete the venv) before {what}"
        )


def install(venv: Path, wheel_file: Path, state: Path, sh: Shell) -> dict:
    """The patched wheel as the venv's torch; returns the install record."""
    sha = wheel.file_sha256(wheel_file)
    version = wheel.WheelName.parse(wheel_file.name).version
    record = {"wheel": wheel_file.name, "sha256": sha, "version": version}
    migrated = _migrate_legacy(venv, state)
    if not migrated and installed(state) == record and installed_torch_version(venv) == version:
        return record
    if not migrated:  # a copied-files install's own files differ from the RECORD: not edits
        _refuse_edits(venv, "`overlay build` installs the patched wheel")
    (state / RECORD_JSON).unlink(missing_ok=True)
    reinstall_torch(venv, wheel_file, sh)
    if installed_torch_version(venv) != version:
        raise ui.OperationFailed(f"pip did not install torch {version} into {venv}")
    state.mkdir(parents=True, exist_ok=True)
    tmp = state / (RECORD_JSON + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, state / RECORD_JSON)
    return record


def uninstall(venv: Path, state: Path, python_version: str, cache: Path, sh: Shell) -> str | None:
    """Stock torch back in the venv (the stock wheel in ``cache``'s wheelhouse); returns the version it
    replaced, or None."""
    migrated = _migrate_legacy(venv, state)
    current = installed_torch_version(venv)
    if current is None or ("+fca." not in current and not migrated):
        (state / RECORD_JSON).unlink(missing_ok=True)
        return None
    if not migrated:
        _refuse_edits(venv, "`overlay clean` reinstalls stock torch")
    (state / RECORD_JSON).unlink(missing_ok=True)
    stock = stock_wheel.ensure(cache, python_version, str(venv_python(venv)), sh)
    reinstall_torch(venv, stock, sh)
    return current if "+fca." in current else "a copied-files overlay"


def _migrate_legacy(venv: Path, state: Path) -> bool:
    """Drop a copied-files install's wrappers, ``.pth`` hook and backups (pip then replaces its files)."""
    manifest = state / LEGACY_MANIFEST
    if not manifest.is_file():
        return False
    record = json.loads(manifest.read_text())
    for name, target in record.get("wrappers", {}).items():
        p = venv / "bin" / name
        if target is not None:
            if p.exists() or p.is_symlink():
                p.unlink()
            os.symlink(target, p)
        elif (state / "stock" / "bin" / name).is_file():
            shutil.copy2(state / "stock" / "bin" / name, p)
    if record.get("pth"):
        (venv / record["pth"]).unlink(missing_ok=True)
    shutil.rmtree(state / "stock", ignore_errors=True)
    manifest.unlink()
    return True
