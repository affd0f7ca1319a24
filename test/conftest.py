"""Shared fixtures: the real pinned source, clones of it, and running the real tools."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# A subprocess of the suite is stopped after this long, as hung: no more.  Not a time budget: a
# cold overlay build or a wheel's install into a fresh venv takes minutes alone and several times
# that beside other work (CI runs the suite beside the upstream profile), so every bound is the
# same hour, which CI's own time limit caps anyway.
HANG_TIMEOUT = 3600
sys.path.insert(0, str(REPO_ROOT))

from tools.lib import paths  # noqa: E402
from tools.lib.pinned_source import ensure_pinned_source  # noqa: E402
from tools.lib.shell import Shell  # noqa: E402


# Python source defining where(symbol): the file of the loaded object whose definition of the
# (mangled) symbol the process uses, or None; probes run it in the venv under test.
WHERE_DEFINED = """
import ctypes
class Dl_info(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
libc = ctypes.CDLL(None)
libc.dlsym.restype = ctypes.c_void_p
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(Dl_info)]
def where(name):
    addr = libc.dlsym(None, name.encode())
    info = Dl_info()
    return info.dli_fname.decode() if addr and libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) else None
"""


@dataclasses.dataclass
class ToolResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def error_line(self) -> str:
        lines = [l for l in self.stderr.splitlines() if l.startswith("error: ")]
        return lines[-1] if lines else ""


def run_tool(name: str, *args: str | Path, env: dict[str, str] | None = None, prefix: list[str] | None = None,
             timeout: int = HANG_TIMEOUT) -> ToolResult:
    """Run ``python tools/<name>.py ARGS`` as a user would, from the repo root."""
    full_env = dict(os.environ)
    full_env.pop("FCA_FAILPOINT", None)
    if env:
        full_env.update(env)
    argv = (prefix or []) + [sys.executable, str(REPO_ROOT / "tools" / f"{name}.py"), *map(str, args)]
    proc = subprocess.run(argv, cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)
    return ToolResult(proc.returncode, proc.stdout, proc.stderr)


# Fixtures that need the pinned source, a torch venv, the overlay or a wheel (minutes each on a cold
# cache): a test that uses one, directly or through another fixture, is marked ``slow``, so that
# ``pytest -m "not slow"`` is the fast tier.  Tests that reach those through a tool without such a
# fixture carry ``@pytest.mark.slow`` themselves.
SLOW_FIXTURES = frozenset({"pinned_source", "stock_python", "overlay"})


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def pinned_source() -> Path:
    """The real PyTorch v2.6.0 source as a git checkout (fetched once into the cache)."""
    return ensure_pinned_source(paths.cache_dir(), Shell(verbose=False))


from samplestack import git  # noqa: E402,F401  (the tests' git, with a fixed identity)


@pytest.fixture(scope="session")
def stock_python() -> str:
    """The stock torch==2.6.0 venv (<cache>/venvs/stock) that run_upstream_tests.py --baseline
    and bench.py use, created from the wheelhouse if needed: its python."""
    from tools.lib.overlay.venv import ensure_venv, venv_python

    cache = paths.cache_dir()
    ensure_venv(cache / "venvs" / "stock", cache, Shell(verbose=False))
    return str(venv_python(cache / "venvs" / "stock"))


@pytest.fixture(scope="session")
def overlay(pinned_source) -> Path:
    """The default overlay (<cache>/overlay) for the repo's stack, built (incrementally) and its wheel
    installed into the overlay venv by the real tool: the installed library's path."""
    from tools.lib.overlay import torch_hook

    assert run_tool("apply_patches").returncode == 0
    res = run_tool("overlay", "build")
    assert res.returncode == 0, res.stderr[-3000:]
    venv = paths.cache_dir() / "overlay" / "venv"
    return next(venv.glob(f"lib/python3*/site-packages/torch/lib/{torch_hook.LIB_NAME}"))


@pytest.fixture
def pin_clone(pinned_source: Path, tmp_path: Path):
    """Factory: a fresh git clone of the pin (objects shared, working tree real)."""

    def make(name: str = "torch") -> Path:
        dest = tmp_path / name
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(pinned_source), str(dest)], check=True)
        subprocess.run(["git", "-C", str(dest), "checkout", "-q", "-B", "main", "v2.6.0"], check=True)
        return dest

    return make


@pytest.fixture
def pin_copy(pinned_source: Path, tmp_path: Path):
    """Factory: a plain (non-git) copy of the pin's files."""

    def make(name: str = "plain") -> Path:
        dest = tmp_path / name
        subprocess.run(["git", "-C", str(pinned_source), "worktree", "prune"], check=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(pinned_source), "archive", "--format=tar", "v2.6.0"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-xf", "-", "-C", str(dest)], input=archive, check=True)
        return dest

    return make


def snapshot(tree: Path, paths_: list[str] | None = None) -> dict[str, str]:
    """Hash of every file under ``tree`` (or of ``paths_``), .git included, for before/after equality."""
    result: dict[str, str] = {}
    if paths_ is not None:
        for p in paths_:
            f = tree / p
            result[p] = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else "absent"
        return result
    for root, dirs, files in os.walk(tree):
        for name in files:
            f = Path(root) / name
            if f.is_symlink():
                result[str(f.relative_to(tree))] = "link:" + os.readlink(f)
                continue
            result[str(f.relative_to(tree))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return result


def git_state(repo: Path) -> dict[str, str]:
    """HEAD, refs, index and the object store listing: what 'untouched' means for a repo."""
    objects = sorted(str(p.relative_to(repo)) for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    return {
        "HEAD": (repo / ".git" / "HEAD").read_text(),
        "rev": git(repo, "rev-parse", "HEAD"),
        "refs": git(repo, "for-each-ref"),
        "index": git(repo, "ls-files", "-s"),
        "objects": "\n".join(objects),
        "status": git(repo, "status", "--porcelain"),
    }


def export_stack(repo: Path, dest: Path) -> Path:
    """Export the commits above the pin in ``repo`` into a new stack dir ``dest`` with the real tool."""
    dest.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "patches" / "pin.sha256", dest / "pin.sha256")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", dest)
    assert res.returncode == 0, res.stderr
    return dest


def copy_stack(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest
