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
import subprocess
import sys
from pathlib import Path

from .. import paths, ui
from . import checks, codegen, compile as cc, generated, tus as tuset
from .venv import TorchInfo, ensure_venv, interpreter_facts, real_python
from ..pinned_source import ensure_pinned_source
from ..shell import Shell
from ..stack import Stack, write_contents
from ..tree import open_tree

STAMP_JSON = "stamp.json"


@dataclasses.dataclass(frozen=True)
class Options:
    overlay_dir: Path  # builds, the library, the stamp and the install state live here
    venv: Path  # the venv with the stock torch the library is built against
    stack_dir: Path = paths.DEFAULT_STACK_DIR
    torch_src: Path | None = None  # the patched tree (default: the pinned source, stack applied)
    opt: str = "-O1"
    jobs: int | None = None
    use_ccache: bool = True
    quiet: bool = False
    base_python: str | None = None  # interpreter a new venv is made from (default: this one's base)
    build_only: bool = False  # the venv only builds (no test packages): another Python's build venv


@dataclasses.dataclass(frozen=True)
class Prepared:
    sh: Shell
    root: Path
    stack: Stack
    tree: object
    venv: Path
    info: TorchInfo
    tc: cc.Toolchain
    build: Path
    layout: cc.Layout
    selected: list
    stamp: dict
    report: dict


@dataclasses.dataclass(frozen=True)
class Built:
    prepared: Prepared
    lib: Path
    objects: list[Path]
    result: dict  # compiled / reused TUs


def default_overlay_dir() -> Path:
    return paths.cache_dir() / "overlay"


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


def resolve_tree(torch_src: Path | None, sh: Shell) -> Path:
    if torch_src:
        return torch_src.resolve()
    return ensure_pinned_source(paths.cache_dir(), sh)


def applied_tree(torch_src: Path | None, stack: Stack, sh: Shell):
    """The tree (``--torch-src``, or the pinned source) with every patch of ``stack`` applied; a
    one-line error with the apply command otherwise."""
    tree = open_tree(resolve_tree(torch_src, sh), sh)
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
    except (OSError, subprocess.CalledProcessError):
        libdir = ""
    return libdir, f"python{info.python_version}"


def _link_key(objects: list[Path], *extra: str) -> str:
    """Changes when an object (or ``extra``, e.g. the runpath) does: a link with the same key is skipped."""
    parts = [f"{o}:{o.stat().st_mtime_ns}:{o.stat().st_size}\n" for o in objects] + [f"{e}\n" for e in extra]
    return hashlib.sha256("".join(parts).encode()).hexdigest()



def check_header_abi(tree: Path, stack: Stack, layout: cc.Layout, selected: list[tuset.TU], pin_dir: Path, report: dict) -> list[tuset.TU]:
    """Compare pinned vs patched class layouts of every changed header; refuse or pull in users."""
    changed_headers = [p for p in stack.touched if p.endswith(".h") and checks.header_include_name(p)]
    if not changed_headers:
        report["abi"] = "no header changed"
        return selected
    lib_sources = tuset.library_sources(tree)
    overlay_sources = {t.path for t in selected}
    problems = []
    abi_report = []
    inc_patched = layout.include_flags()
    inc_pinned = [f"-I{pin_dir}", f"-I{pin_dir / 'aten/src'}"] + inc_patched
    defines = list(cc.COMMON_FLAGS)
    cache_dir, memo = layout.build / "abi-probes", {}
    for header in changed_headers:
        name = checks.header_include_name(header)
        assert name
        changes = checks.compare_layouts(
            header,
            checks.class_layouts(name, inc_pinned, defines, cache_dir, memo),
            checks.class_layouts(name, inc_patched, defines, cache_dir, memo),
        )
        fds = [fd for pf in stack.patches for fd in pf.files if fd.path == header]
        texts = {header: "\n".join(p.read_text() for p in stack.files)}
        entities = [(c.entity, c.detail) for c in changes] + [
            (e, "inline code rewritten") for e in checks.changed_inline_entities(fds, texts)
        ]
        if not entities:
            abi_report.append(f"{header}: additive (no class layout, vtable or inline body changed)")
            continue
        includers = checks.includers_of(tree, name, lib_sources)
        for entity, detail in entities:
            users = checks.users_outside(tree, entity, includers, overlay_sources)
            abi_report.append(f"{header}: {entity}: {detail}; users outside the overlay: {len(users)}")
            if users:
                problems.append(f"{header} changes {entity} ({detail}), used by {users[0]} which is not in the overlay"
                                + (f" (and {len(users) - 1} more)" if len(users) > 1 else ""))
    report["abi"] = abi_report
    if problems:
        raise ui.UserError(problems[0] + "; make the header change additive or confined to overlay sources")
    return selected



def prepare(opts: Options) -> Prepared:
    """Everything before compiling: tree/stack checks, venv, codegen, TU set, ABI check."""
    sh = Shell(verbose=not opts.quiet)
    cache = paths.cache_dir()
    root = opts.overlay_dir
    stack = Stack.load(opts.stack_dir.resolve())
    tree, state = applied_tree(opts.torch_src, stack, sh)
    venv = opts.venv
    # preflight before the venv (its first creation downloads ~3.5 GB): the compiler, and the
    # headers of the Python a new venv is made from
    tc = cc.Toolchain.detect(opt=opts.opt, use_ccache=opts.use_ccache)
    if not (venv / "pyvenv.cfg").is_file():
        base = opts.base_python or getattr(sys, "_base_executable", None) or sys.executable
        try:
            check_python_headers(Path(interpreter_facts(base)["include"]), Path(base))
        except (OSError, subprocess.CalledProcessError):
            pass  # an interpreter that does not run: making the venv says so
    info = ensure_venv(venv, cache, sh, base_python=opts.base_python, build_only=opts.build_only)
    check_python_headers(info.python_include, real_python(venv))
    build = root / "build"
    layout = cc.Layout(tree=tree.path, build=build, torch_dir=info.torch_dir, python_include=info.python_include)
    report: dict = {"tree": str(tree.path), "stack": stack_hash(stack), "patches": len(stack)}

    gen = codegen.run_codegen(tree.path, layout.gen, sh)
    same = codegen.functions_h_matches_wheel(gen, info.torch_dir)
    report["functions_h_identical_to_wheel"] = same
    if not same:
        raise ui.UserError(
            "the patched codegen's Functions.h differs from the wheel's: generated node classes would change layout "
            "for every source that includes it; keep Functions.h unchanged (put new code in Functions.cpp)"
        )
    _write_if_changed(layout.gen / generated.SHIMS_FILE, generated.render_shims(tree.path))
    lib_dir = info.torch_dir / "lib"
    expected = {name: generated.build_id(lib_dir / name) for name in ("libtorch_cpu.so", "libtorch_python.so")}
    # the stock version even when the venv has a patched wheel installed ("2.6.0+fca.<id>"): the stamp,
    # compiled into the library, must not change with what is installed
    stamp = {"tree": str(tree.path), "stack": report["stack"], "torch": info.version.split("+")[0], "build_ids": expected}
    _write_if_changed(layout.gen / generated.STAMP_FILE, generated.render_stamp(stamp, expected))

    selected = tuset.select_tus(tree.path, stack.touched)
    selected += [
        tuset.TU(generated.SHIMS_FILE, tuset.CPU, "helpers libtorch does not export (stateless copies, bridges to its state)", generated=True),
        tuset.TU(generated.STAMP_FILE, tuset.CPU, "build stamp + refuses a different torch", generated=True),
    ]
    pin_dir = _pin_headers(tree, state.base, stack, build)
    selected = check_header_abi(tree.path, stack, layout, selected, pin_dir, report)
    report["tus"] = [{"path": t.path, "lib": t.lib, "reason": t.reason} for t in selected]

    return Prepared(sh, root, stack, tree, venv, info, tc, build, layout, selected, stamp, report)



def check_python_headers(include: Path, python: Path) -> None:
    if not (include / "Python.h").is_file():
        raise ui.UserError(f"Python headers are missing ({include}/Python.h); install the dev package of {python} (e.g. python3-dev)")



def _pin_headers(tree, base: str | None, stack: Stack, build: Path) -> Path:
    """Pinned copies of the headers the stack changes (for the ABI comparison)."""
    pin_dir = build / "pin-headers"
    headers = [p for p in stack.touched if p.endswith(".h")]
    if not headers:
        return pin_dir
    if getattr(tree, "read_at", None) is None or base is None:
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
    p.report.update(result)
    objects = [p.layout.object_path(t) for t in p.selected]
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
    (p.root / STAMP_JSON).write_text(json.dumps({**p.stamp, "lib": str(lib)}, indent=1, sort_keys=True) + "\n")
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
