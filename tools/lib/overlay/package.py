"""The patched wheel from a built overlay: the one artifact both installs use.

``tools/build_wheel.py`` writes it for users (``dist/``); ``tools/overlay.py
build`` writes it into the overlay dir and pip-installs it into the overlay
venv that ``run_upstream_tests.py`` and ``bench.py`` run on.  The wheel is the
stock ``torch==2.6.0`` wheel (checked against the registry's sha256) with the
overlay library relinked with runpath ``$ORIGIN`` into ``torch/lib/``, its
stamp, the patched ``.py`` files and headers, and the loader in
``torch/__init__.py`` (``torch_hook``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path

from .. import stock_wheel, ui, wheel
from . import build as ob, torch_hook

GENERATOR = "fca build_wheel"
VERSION_PREFIX = "2.6.0+fca."


@dataclasses.dataclass(frozen=True)
class Made:
    path: Path
    counts: dict  # copied / changed / added entries
    stock: Path  # the stock wheel it was made from


def venv_target(tree_path: str) -> str | None:
    """Where a changed tree file lives in an installed torch (relative to site-packages), or None."""
    if tree_path.startswith("torch/") and tree_path.endswith((".py", ".pyi")):
        return tree_path
    if tree_path.endswith((".h", ".hpp", ".cuh")):
        if tree_path.startswith("aten/src/"):
            return "torch/include/" + tree_path[len("aten/src/"):]
        if tree_path.startswith(("torch/csrc/", "c10/", "caffe2/")):
            return "torch/include/" + tree_path
    return None


def version_of(stack_id: str) -> str:
    return VERSION_PREFIX + stack_id


def set_version(version_py: bytes, version: str) -> bytes:
    """``torch/version.py`` with ``__version__`` set to ``version`` (the wheel's own, so ``collect_env``
    and bug reports say which stack is installed); every other byte (``cuda``, ``git_version``, the
    line's own ending) is kept."""
    line = f"__version__ = {version!r}"
    new, hits = re.subn(r"^__version__ = [^\r\n]*", lambda _: line, version_py.decode(), flags=re.M)
    if hits != 1:
        raise ValueError(f"torch/version.py has {hits} `__version__ = ` lines, expected 1")
    return new.encode()


def wheel_files(built: ob.Built) -> dict[str, bytes]:
    """Patched .py/.pyi files and headers at their place in the wheel."""
    p = built.prepared
    files: dict[str, bytes] = {}
    for path in sorted(p.stack.touched):
        rel = venv_target(path)
        if rel is None:
            continue
        src = p.tree.path / path
        if not src.is_file():
            raise ui.UserError(f"the stack deletes {path}; the wheel builder only replaces or adds files")
        files[rel] = src.read_bytes()
    return files


def _inputs_key(stock: Path, name: wheel.WheelName, files: dict[str, bytes]) -> str:
    """Changes when the wheel would: the stock file, the name, every changed file's bytes, and the
    code that rewrites (wheel.py) and hooks torch/__init__.py (torch_hook.py)."""
    st = stock.stat()
    h = hashlib.sha256(f"{stock.name}:{st.st_size}:{st.st_mtime_ns}:{name.filename}:{GENERATOR}\n".encode())
    for module in (wheel, torch_hook, sys.modules[__name__]):
        h.update(Path(module.__file__).read_bytes())
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def _unchanged_counts(out: Path, key_file: Path, key: str) -> dict | None:
    """The counts of the last rewrite into ``out`` if it was made from the same inputs, else None."""
    try:
        record = json.loads(key_file.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return record["counts"] if out.is_file() and record.get("key") == key else None


def make(built: ob.Built, out_dir: Path, prune: bool = False) -> Made:
    """Write the wheel for ``built`` (its Python) into ``out_dir``; ``prune``: delete the other
    patched wheels there (the overlay dir keeps one).  Call it under the overlay's lock: it relinks."""
    p = built.prepared
    lib = p.root / "wheel" / torch_hook.LIB_NAME
    lib.parent.mkdir(parents=True, exist_ok=True)
    with ui.step("link the wheel's library (runpath $ORIGIN)"):
        ob.relink(built, lib, "$ORIGIN")
    version = p.info.python_version
    tag = f"cp{version.replace('.', '')}"
    stock = stock_wheel.ensure(p.cache, version, str(p.venv / "bin" / "python"), p.sh)
    name = wheel.WheelName("torch", version_of(p.stack_id), tag, tag, "linux_x86_64")
    stamp = {
        "version": name.version,
        "stack": p.stack_id,
        "patches": [f.name for f in p.stack.files],
        "torch": p.info.version.split("+")[0],
        "build_ids": dict(p.stamp.build_ids),
    }
    files = wheel_files(built)
    init_rel = "torch/__init__.py"
    edits = {"torch/version.py": lambda data: set_version(data, name.version)}
    if init_rel in files:  # the stack changes it: hook its version
        files[init_rel] = torch_hook.patch_init(files[init_rel].decode()).encode()
    else:
        edits[init_rel] = lambda data: torch_hook.patch_init(data.decode()).encode()
    files[f"torch/lib/{torch_hook.LIB_NAME}"] = lib.read_bytes()
    files[f"torch/lib/{torch_hook.STAMP_NAME}"] = (json.dumps(stamp, indent=1, sort_keys=True) + "\n").encode()

    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / name.filename
    key, key_file = _inputs_key(stock, name, files), out.with_name(out.name + ".key")
    counts = _unchanged_counts(out, key_file, key)
    if counts is None:
        with ui.step(f"write {out.name} from {stock.name}"):
            try:
                counts = wheel.rewrite(stock, out, name, wheel.Change(files, edits), GENERATOR)
            except ValueError as err:
                raise ui.OperationFailed(f"cannot make the wheel from {stock}: {err}") from None
        key_file.write_text(json.dumps({"key": key, "counts": counts}) + "\n")
    else:
        ui.info(f"{out.name}: its inputs are unchanged, keeping it")
    if prune:
        for old in out_dir.glob(f"torch-{VERSION_PREFIX}*.whl"):
            if old != out:
                old.unlink()
                old.with_name(old.name + ".key").unlink(missing_ok=True)
    return Made(out, counts, stock)
