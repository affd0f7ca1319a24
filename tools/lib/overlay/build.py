"""The overlay build pipeline: one place that the overlay CLI and the wheel builder call.

``prepare`` checks the tree and the stack, makes the venv whose stock torch the
library is built against, runs the autograd codegen, writes the generated
sources (shims, stamp) and picks the translation units (with the header ABI
check); ``build`` compiles them, links one library, checks its static
initializers and writes the stamp.  ``relink`` links the same objects into
another library (the wheel's, whose runpath is ``$ORIGIN``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Mapping, Sequence

from .. import paths, ui
from . import checks, codegen, compile as cc, generated, tus as tuset
from .venv import InterpreterError, TorchInfo, ensure_venv, interpreter_facts, real_python
from ..pinned_source import ensure_pinned_source
from ..shell import Shell
from ..stack import Stack, write_contents
from ..tree import GitTree, Tree, TreeState, open_tree

STAMP_JSON = "stamp.json"


@dataclasses.dataclass(frozen=True)
class Options:
    overlay_dir: Path  # builds, the library, the stamp and the install state live here
    venv: Path  # the venv with the stock torch the library is built against
    cache: Path  # the pinned source, the wheelhouse (resolved once, by the CLI)
    stack_dir: Path = paths.DEFAULT_STACK_DIR
    torch_src: Path | None = None  # the patched tree (default: the pinned source, stack applied)
    opt: str = "-O1"
    jobs: int | None = None
    use_ccache: bool = True
    quiet: bool = False
    base_python: str | None = None  # interpreter a new venv is made from (default: this one's base)
    build_only: bool = False  # the venv only builds (no test packages): another Python's build venv


@dataclasses.dataclass(frozen=True)
class Stamp:
    """What the library is built from: compiled into it, and written beside it (``stamp.json``, with
    the library's path)."""

    tree: str
    stack: str  # the stack id (:func:`stack_hash`)
    torch: str  # the stock version, even with a patched wheel installed in the venv
    build_ids: Mapping[str, str]  # libtorch_cpu.so / libtorch_python.so -> the GNU build-id it needs

    def as_json(self) -> dict[str, object]:
        return {"tree": self.tree, "stack": self.stack, "torch": self.torch, "build_ids": dict(self.build_ids)}


@dataclasses.dataclass(frozen=True)
class Prepared:
    """Everything before compiling, checked: the tree and stack, the venv, the toolchain, the TUs."""

    sh: Shell
    root: Path  # the overlay dir
    cache: Path
    stack: Stack
    tree: Tree  # the patched tree, every patch of the stack applied
    venv: Path
    info: TorchInfo
    tc: cc.Toolchain
    build: Path
    layout: cc.Layout
    selected: tuple[tuset.TU, ...]  # what is compiled, the generated shims and stamp last
    stamp: Stamp
    abi: checks.AbiReport

    @property
    def stack_id(self) -> str:
        return self.stamp.stack


@dataclasses.dataclass(frozen=True)
class Built:
    prepared: Prepared
    lib: Path
    objects: tuple[Path, ...]
    result: cc.CompileResult


def build_report(built: Built) -> dict[str, object]:
    """The build's record (the overlay's ``build-report.json``): the tree, the stack, the ABI check,
    the TUs and why each is in, what was compiled."""
    p = built.prepared
    return {
        "tree": str(p.tree.path), "stack": p.stack_id, "patches": len(p.stack),
        "functions_h_identical_to_wheel": True,  # prepare refuses a build where it is not
        "abi": p.abi.as_json(),
        "tus": [{"path": t.path, "lib": t.lib, "reason": t.reason} for t in p.selected],
        **built.result.as_json(),
    }


def default_overlay_dir(cache: Path) -> Path:
    return cache / "overlay"


LOCK_NAME = ".lock"


@contextlib.contextmanager
def locked(overlay_dir: Path, what: str, wait: bool = True):
    """Hold ``<overlay_dir>/.lock`` while building, installing or cleaning that overlay, so two runs
    (two shells, a test beside a build) cannot step on each other.  ``wait=False``: raise
    ``Busy`` instead of waiting."""
    from filelock import FileLock, Timeout

    overlay_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(overlay_dir / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if not wait:
            raise Busy(f"{overlay_dir} is busy: another overlay build, install or clean holds {overlay_dir / LOCK_NAME}")
        ui.info(f"waiting for another build/clean of {overlay_dir} to finish ({what}; lock {overlay_dir / LOCK_NAME}) ...")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


class Busy(ui.UserError):
    """Another process holds the overlay's lock."""


def stack_hash(stack: Stack) -> str:
    h = hashlib.sha256()
    for f in [stack.dir / "series", *stack.files]:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


NOT_BUILT = "no overlay is built; run `python tools/overlay.py build` first"


def read_stamp(root: Path) -> dict | None:
    """The stamp of the overlay built in ``root`` (its stack id, tree, library), or None."""
    path = root / STAMP_JSON
    return json.loads(path.read_text()) if path.is_file() else None


def stale_reason(root: Path, stack_dir: Path) -> str | None:
    """Why the overlay in ``root`` is not the build of the stack in ``stack_dir`` (with the
    command that fixes it), or None when it is: built from that stack, its library present."""
    stamp = read_stamp(root)
    if stamp is None:
        return NOT_BUILT
    now = stack_hash(Stack.load(stack_dir.resolve()))
    if stamp["stack"] != now:
        return (f"the overlay was built from another stack/tree (stack {stamp['stack']}, now {now}); "
                "rebuild it: python tools/overlay.py build")
    if not Path(stamp["lib"]).is_file():
        return f"{stamp['lib']} is missing; rebuild it: python tools/overlay.py build"
    return None


def resolve_tree(torch_src: Path | None, sh: Shell, cache: Path) -> Path:
    if torch_src:
        return torch_src.resolve()
    return ensure_pinned_source(cache, sh)


def applied_tree(torch_src: Path | None, stack: Stack, sh: Shell, cache: Path) -> tuple[Tree, TreeState]:
    """The tree (``--torch-src``, or the pinned source in ``cache``) with every patch of ``stack``
    applied; a one-line error with the apply command otherwise."""
    tree = open_tree(resolve_tree(torch_src, sh, cache), sh)
    state = tree.state(stack)
    tree.verify_base(stack, state)
    if state.applied != len(stack):
        raise ui.UserError(
            f"{tree.path} has {state.applied}/{len(stack)} patches applied; apply the stack first: "
            f"python tools/apply_patches.py{' --torch-src ' + shlex.quote(str(tree.path)) if torch_src else ''}"
        )
    return tree, state



def _python_link_info(info: TorchInfo, venv: Path) -> tuple[str, str]:
    """Where the venv's Python keeps libpython, for the check link (the venv's interpreter, not this one)."""
    try:
        libdir = interpreter_facts(str(real_python(venv)))["libdir"]
    except InterpreterError:
        libdir = ""
    return libdir, f"python{info.python_version}"


def _link_key(objects: Sequence[Path], *extra: str) -> str:
    """Changes when an object (or ``extra``, e.g. the runpath) does: a link with the same key is skipped."""
    parts = [f"{o}:{o.stat().st_mtime_ns}:{o.stat().st_size}\n" for o in objects] + [f"{e}\n" for e in extra]
    return hashlib.sha256("".join(parts).encode()).hexdigest()



def prepare(opts: Options) -> Prepared:
    """Everything before compiling: tree/stack checks, venv, codegen, TU set, ABI check."""
    sh = Shell(verbose=not opts.quiet)
    stack = Stack.load(opts.stack_dir.resolve())
    tree, state = applied_tree(opts.torch_src, stack, sh, opts.cache)
    venv = opts.venv
    # preflight before the venv (its first creation downloads ~3.5 GB): the compiler, and the
    # headers of the Python a new venv is made from
    tc = cc.Toolchain.detect(opt=opts.opt, use_ccache=opts.use_ccache)
    if not (venv / "pyvenv.cfg").is_file():
        base = opts.base_python or getattr(sys, "_base_executable", None) or sys.executable
        try:
            check_python_headers(Path(interpreter_facts(base)["include"]), Path(base))
        except InterpreterError:
            pass  # an interpreter that does not run: making the venv says so
    info = ensure_venv(venv, opts.cache, sh, base_python=opts.base_python, build_only=opts.build_only)
    check_python_headers(info.python_include, real_python(venv))
    build = opts.overlay_dir / "build"
    layout = cc.Layout(tree=tree.path, build=build, torch_dir=info.torch_dir, python_include=info.python_include)

    gen = codegen.run_codegen(tree.path, layout.gen, sh)
    if not codegen.functions_h_matches_wheel(gen, info.torch_dir):
        raise ui.UserError(
            "the patched codegen's Functions.h differs from the wheel's: generated node classes would change layout "
            "for every source that includes it; keep Functions.h unchanged (put new code in Functions.cpp)"
        )
    _write_if_changed(layout.gen / generated.SHIMS_FILE, generated.render_shims(tree.path))
    lib_dir = info.torch_dir / "lib"
    expected = {name: generated.build_id(lib_dir / name) for name in ("libtorch_cpu.so", "libtorch_python.so")}
    # the stock version even when the venv has a patched wheel installed ("2.6.0+fca.<id>"): the stamp,
    # compiled into the library, must not change with what is installed
    stamp = Stamp(str(tree.path), stack_hash(stack), info.version.split("+")[0], expected)
    _write_if_changed(layout.gen / generated.STAMP_FILE, generated.render_stamp(stamp.as_json(), expected))

    selected = (
        *tuset.select_tus(tree.path, stack.touched),
        tuset.TU(generated.SHIMS_FILE, tuset.CPU, "helpers libtorch does not export (stateless copies, bridges to its state)", generated=True),
        tuset.TU(generated.STAMP_FILE, tuset.CPU, "build stamp + refuses a different torch", generated=True),
    )
    pin_dir = _pin_headers(tree, state.base, stack, build)
    abi = checks.check_header_abi(tree.path, stack, layout, selected, pin_dir)
    return Prepared(sh, opts.overlay_dir, opts.cache, stack, tree, venv, info, tc, build, layout, selected, stamp, abi)


def check_python_headers(include: Path, python: Path) -> None:
    if not (include / "Python.h").is_file():
        raise ui.UserError(f"Python headers are missing ({include}/Python.h); install the dev package of {python} (e.g. python3-dev)")



def _pin_headers(tree: Tree, base: str | None, stack: Stack, build: Path) -> Path:
    """Pinned copies of the headers the stack changes (for the ABI comparison)."""
    pin_dir = build / "pin-headers"
    headers = [p for p in stack.touched if p.endswith(".h")]
    if not headers:
        return pin_dir
    if not isinstance(tree, GitTree) or base is None:
        raise ui.UserError("the ABI check needs the tree as a git checkout (pinned contents of changed headers)")
    write_contents(pin_dir, tree.read_at(base, headers))
    return pin_dir



def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def build(opts: Options) -> Built:
    """Compile, link and check the library (``<overlay_dir>/lib/libfca_overlay.so``); write the stamp."""
    p = prepare(opts)
    jobs = opts.jobs or min(2, os.cpu_count() or 1)
    result = cc.compile_all(p.tc, p.layout, p.selected, jobs)
    objects = tuple(p.layout.object_path(t) for t in p.selected)
    lib = p.root / "lib" / cc.LIB_NAME
    lib.parent.mkdir(parents=True, exist_ok=True)
    link_key = _link_key(objects)
    link_key_file = p.build / "link-key"
    if lib.is_file() and link_key_file.is_file() and link_key_file.read_text() == link_key:
        ui.info(f"link: objects unchanged, keeping {lib}")
    else:
        with ui.step("link (check every undefined symbol, then the library)"):
            libdir, ldlib = _python_link_info(p.info, p.venv)
            cc.link(p.layout, objects, lib, libdir, ldlib)
        with ui.step("static initializer check"):
            checks.check_static_inits(objects, allow=[p.layout.object_path(p.selected[-1]).name])
        link_key_file.write_text(link_key)
    (p.root / STAMP_JSON).write_text(json.dumps({**p.stamp.as_json(), "lib": str(lib)}, indent=1, sort_keys=True) + "\n")
    return Built(p, lib, objects, result)


def relink(built: Built, out: Path, rpath: str) -> Path:
    """The same checked objects linked into ``out`` with runpath ``rpath`` (e.g. ``$ORIGIN``); skipped when
    neither the objects nor the runpath changed since the last relink into ``out``."""
    key = _link_key(built.objects, rpath)
    key_file = out.with_name(out.name + ".link-key")
    if out.is_file() and key_file.is_file() and key_file.read_text() == key:
        return out
    cc.link_library(built.prepared.layout, built.objects, out, rpath)
    key_file.write_text(key)
    return out
