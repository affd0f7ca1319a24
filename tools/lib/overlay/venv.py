"""The torch==2.6.0 virtualenvs: one stock (baseline), one for the overlay.

Both are created from the same fully pinned requirements
(``tools/requirements/torch-venv.txt``), installed from a local wheelhouse in
the cache (``pip download`` once, then ``pip install --no-index``), so a second
venv costs no download.  A venv is accepted only with torch 2.6.0 and the old
C++ ABI (what the stock wheel is built with, and what the overlay compiles for).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

from .. import disk, paths, ui
from ..shell import Shell

LOCK = paths.REPO_ROOT / "tools" / "requirements" / "torch-venv.txt"
STAMP = ".fca-venv.json"
TORCH_VERSION = "2.6.0"
TORCH_CXX11_ABI = False


@dataclasses.dataclass(frozen=True)
class TorchInfo:
    version: str
    cxx11_abi: bool
    torch_dir: Path  # site-packages/torch
    python_include: Path
    python_version: str


# Distributions whose files the venvs share as hard links (nothing writes into them; torch itself is
# left out: the overlay and the wheel replace files in it).  ~3.4 GB of each torch 2.6.0 venv.
SHARED_DISTS = ("nvidia_", "triton-")


def shared_files(house: Path) -> Path:
    """One copy per content of the shared files, beside the wheelhouse (same disk as the venvs)."""
    return house.parent / "shared-files"


def lock_hash() -> str:
    return hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def real_python(venv: Path) -> Path:
    """The interpreter binary behind the venv (the overlay wraps bin/python)."""
    cfg = (venv / "pyvenv.cfg").read_text()
    home = next(l.split("=", 1)[1].strip() for l in cfg.splitlines() if l.startswith("home"))
    version = next((l.split("=", 1)[1].strip() for l in cfg.splitlines() if l.startswith("version")), "")
    major_minor = ".".join(version.split(".")[:2])
    for name in (f"python{major_minor}", "python3", "python"):
        cand = Path(home) / name
        if cand.exists():
            return cand.resolve()
    raise ui.UserError(f"{venv}/pyvenv.cfg points at {home}, which has no python; delete {venv} and retry")


class InterpreterError(ui.UserError):
    """An interpreter that does not run (or does not answer the probe)."""


def interpreter_facts(python: str) -> dict:
    """``version`` (X.Y), ``include`` (headers dir) and ``libdir`` (where libpython is) of an interpreter,
    from its own sysconfig; raises :class:`InterpreterError` when it cannot run."""
    probe = ("import json, sys, sysconfig; print(json.dumps({'version': '%d.%d' % sys.version_info[:2], "
             "'include': sysconfig.get_paths()['include'], 'libdir': sysconfig.get_config_var('LIBDIR') or ''}))")
    try:
        out = Shell(verbose=False).run(python, "-c", probe, log=False).stdout
        return json.loads(out.strip().splitlines()[-1])
    except (ui.UserError, ValueError, IndexError) as err:  # a CommandError is a UserError
        raise InterpreterError(f"cannot run {python} ({err})") from None


def _fill(venv: Path, base: str, house: Path, sh: Shell, what: str, *install_args: str, download: Path) -> None:
    """Make ``venv`` from ``base`` if needed, download ``download`` (a requirements file) into the wheelhouse,
    then ``pip install --no-index`` ``install_args`` from it."""
    pip_env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if not (venv / "pyvenv.cfg").is_file():  # measured: a torch 2.6.0 venv is 5.7 GB, the first download 3.6 GB
        downloading = not any(house.glob("torch-2.6.0-*.whl"))
        disk.check_free_disk(venv.parent, 6 * disk.GB + (3_600 * disk.MB if downloading else 0),
                             "a torch 2.6.0 venv (~5.7 GB installed"
                             + (f", plus ~3.6 GB of pip download into {house})" if downloading else ")"))
    with ui.step(f"creating venv {venv} ({base})"):
        if not (venv / "pyvenv.cfg").is_file():
            sh.run(base, "-m", "venv", str(venv))
    house.mkdir(parents=True, exist_ok=True)
    with ui.step(f"pip download -> {house} (first time: ~3.5 GB, torch 2.6.0 + CUDA libs)"):
        sh.run(str(venv_python(venv)), "-m", "pip", "download", "--progress-bar", "on", "-d", str(house),
               "-r", str(download), env=pip_env, capture=False)
    with ui.step(f"pip install --no-index {what} into {venv}"):
        sh.run(str(venv_python(venv)), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house),
               *install_args, env=pip_env, capture=False)
    with ui.step(f"hard-linking {venv}'s CUDA libraries and triton to one copy per file ({shared_files(house)})"):
        saved = share_cuda_libraries(venv, house)
    ui.info(f"{ui.fmt_bytes(saved)} shared with the other venvs instead of copied")


def share_cuda_libraries(venv: Path, house: Path) -> int:
    """Hard-link ``venv``'s SHARED_DISTS files to the one copy kept beside ``house``: the bytes saved."""
    site = site_packages(venv)
    return disk.share_installed_files(site, shared_files(house), SHARED_DISTS) if site is not None else 0


def build_requirements(lock_text: str) -> str:
    """What a build venv (one that only compiles against torch, for another Python) installs: the lock's
    torch pin alone, with pip resolving its dependencies for that Python (torch 2.6.0 pins its CUDA
    packages and sympy itself; the lock's other pins need Python 3.11+)."""
    torch = [l for l in lock_text.splitlines() if l.split("==")[0].strip().lower() == "torch"]
    return "\n".join(torch) + "\n"


def ensure_venv(venv: Path, cache: Path, sh: Shell, base_python: str | None = None, build_only: bool = False) -> TorchInfo:
    """Create (or reuse) ``venv`` with the pinned torch 2.6.0 environment (``build_only``: torch and its
    dependencies only); verify it."""
    stamp = venv / STAMP
    want = lock_hash() + ("-build" if build_only else "")
    if stamp.is_file() and json.loads(stamp.read_text()).get("lock") == want:
        return check_torch(venv, sh, cache_in=stamp)
    if venv.exists() and not (venv / "pyvenv.cfg").is_file():
        raise ui.UserError(f"{venv} exists and is not a virtualenv; pass another --venv or remove it")
    reqs = LOCK
    if build_only:
        reqs = venv.with_name(venv.name + "-build-requirements.txt")
        reqs.parent.mkdir(parents=True, exist_ok=True)
        reqs.write_text(build_requirements(LOCK.read_text()))
    _fill(venv, base_python or _base_interpreter(), paths.wheelhouse(cache), sh, "the pinned environment", "-r", str(reqs),
          download=reqs)
    stamp.write_text(json.dumps({"lock": want}) + "\n")
    return check_torch(venv, sh, cache_in=stamp)


def _base_interpreter() -> str:
    base = getattr(sys, "_base_executable", None) or sys.executable
    return base


def _torch_stat_key(venv: Path) -> str | None:
    """Changes whenever torch is reinstalled (mtimes/sizes of its version file and core libs)."""
    parts = []
    for sp in sorted((venv / "lib").glob("python3*/site-packages")):
        for rel in ("torch/version.py", "torch/lib/libtorch_cpu.so", "torch/lib/libtorch_python.so"):
            f = sp / rel
            if not f.exists():
                return None
            st = f.stat()
            parts.append(f"{rel}:{st.st_mtime_ns}:{st.st_size}")
    return "|".join(parts) or None


def validate_torch(venv: Path, version: str, cxx11_abi: bool) -> None:
    """The stock torch==2.6.0 wheel only: right version, old C++ ABI."""
    if not version.startswith(TORCH_VERSION):
        raise ui.UserError(
            f"{venv} has torch {version}, but the overlay is built for torch=={TORCH_VERSION}; "
            f"use a venv with torch=={TORCH_VERSION} (or delete {venv} to let the tool create one)"
        )
    if cxx11_abi != TORCH_CXX11_ABI:
        raise ui.UserError(
            f"{venv} has a torch built with _GLIBCXX_USE_CXX11_ABI={int(cxx11_abi)}; the overlay needs the stock "
            f"torch=={TORCH_VERSION} wheel from PyPI (old ABI, =0)"
        )


def check_torch(venv: Path, sh: Shell, cache_in: Path | None = None) -> TorchInfo:
    """Refuse anything but torch 2.6.0 with the old C++ ABI, with a clear message.

    ``import torch`` costs seconds; with ``cache_in`` (the venv stamp) a result is
    reused while torch's files are unchanged."""
    key = _torch_stat_key(venv)
    if cache_in is not None and cache_in.is_file() and key:
        cached = json.loads(cache_in.read_text()).get("torch_check")
        if cached and cached.get("key") == key:
            d = cached["info"]
            validate_torch(venv, d["version"], d["abi"])
            return TorchInfo(d["version"], d["abi"], Path(d["dir"]), Path(d["include"]), d["py"])
    python = venv_python(venv)
    if not python.exists():
        raise ui.UserError(f"{venv} has no bin/python; create it with `python tools/overlay.py build --venv {venv}`")
    probe = (
        "import json, sys, sysconfig, os\n"
        "import torch\n"
        "print(json.dumps({'version': torch.__version__, 'abi': bool(torch._C._GLIBCXX_USE_CXX11_ABI),"
        " 'dir': os.path.dirname(torch.__file__), 'include': sysconfig.get_paths()['include'],"
        " 'py': '%d.%d' % sys.version_info[:2]}))\n"
    )
    # Run the real interpreter with argv[0] = the venv's python (so the venv is used) and
    # without the overlay: this checks the stock torch even when the overlay is installed.
    proc = sh.run(str(python), "-c", probe, executable=str(real_python(venv)), env={"LD_PRELOAD": "", "PYTHONPATH": ""},
                  check=False, log=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ui.UserError(f"`import torch` fails in {venv} ({tail}); delete the venv and rebuild, or pass --venv")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    validate_torch(venv, data["version"], data["abi"])
    if cache_in is not None and cache_in.is_file() and key:
        record = json.loads(cache_in.read_text())
        record["torch_check"] = {"key": key, "info": data}
        cache_in.write_text(json.dumps(record) + "\n")
    return TorchInfo(data["version"], data["abi"], Path(data["dir"]), Path(data["include"]), data["py"])


def site_packages(venv: Path) -> Path | None:
    """The venv's ``lib/python3.X/site-packages``, or None."""
    return next((p for p in sorted((venv / "lib").glob("python3*/site-packages")) if p.is_dir()), None)


def reinstall_torch(venv: Path, wheel_file: Path, sh: Shell) -> None:
    """``wheel_file`` as the venv's torch, alone: its dependencies are the stock wheel's, already there."""
    with ui.step(f"pip install {wheel_file.name} into {venv} (torch only)"):
        sh.run(str(venv_python(venv)), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
               str(wheel_file), env={"PIP_DISABLE_PIP_VERSION_CHECK": "1"}, capture=False)


def installed_torch_version(venv: Path) -> str | None:
    """The torch version pip recorded in ``venv`` (its ``.dist-info``), without importing it."""
    for sp in sorted((venv / "lib").glob("python3*/site-packages")):
        for di in sorted(sp.glob("torch-*.dist-info")):
            return di.name[len("torch-"):-len(".dist-info")]
    return None


def install_wheel(venv: Path, wheel_file: Path, cache: Path, sh: Shell, base_python: str | None = None) -> None:
    """``venv`` with the pinned test environment and ``wheel_file`` as its torch (pip, from the wheelhouse).

    A new venv gets the pinned list with the wheel for torch (``torch==2.6.0`` matches ``2.6.0+fca.<id>``);
    an existing one gets the wheel alone (``--no-deps --force-reinstall``) when its torch is another build."""
    version = wheel_file.name.split("-")[1]
    if installed_torch_version(venv) == version:
        return
    if not (venv / "pyvenv.cfg").is_file():
        if venv.exists():
            raise ui.UserError(f"{venv} exists and is not a virtualenv; pass another --venv or remove it")
        _fill(venv, base_python or _base_interpreter(), paths.wheelhouse(cache), sh,
              f"{wheel_file.name} and the pinned test environment", str(wheel_file), "-r", str(LOCK), download=LOCK)
    else:
        reinstall_torch(venv, wheel_file, sh)
    if installed_torch_version(venv) != version:
        raise ui.OperationFailed(f"pip did not install torch {version} into {venv}")
