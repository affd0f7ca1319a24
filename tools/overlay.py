#!/usr/bin/env python3
"""Run the patched tree on the stock torch==2.6.0 wheel, without a source build.

  plan           print which TUs would be compiled and why, and the header ABI check
  build          codegen + compile only what the stack changes (plus the generated
                 nodes and the compiled-autograd entry point) against the wheel,
                 link one library, check it, install it into a dedicated venv
  run -- CMD     run CMD in that venv; its Python preloads the overlay
  env            print the shell environment for the venv (`eval "$(... env)"`)
  status         what is built and installed, from which tree/stack
  clean          restore the venv's stock torch files and drop the wrappers

The venv's bin/python is a wrapper that puts the library in LD_PRELOAD; the
library is removed from LD_PRELOAD again inside Python, so compilers and other
non-Python children never load it, while Python children (sys.executable)
always do.

Exit codes: 0 ok, 1 build/check failed, 2 usage, 3 bad input (wrong torch or
ABI, missing compiler or headers, stack not applied, stale overlay).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.lib import paths, ui
from tools.lib.overlay import checks, codegen, compile as cc, generated, install, tus as tuset
from tools.lib.overlay.venv import TorchInfo, check_torch, ensure_venv, real_python
from tools.lib.pinned_source import ensure_pinned_source
from tools.lib.shell import Shell
from tools.lib.stack import Stack, write_contents
from tools.lib.tree import open_tree

STAMP_JSON = "stamp.json"


def overlay_root(args: argparse.Namespace) -> Path:
    return (args.overlay_dir.resolve() if args.overlay_dir else paths.cache_dir() / "overlay")


def venv_dir(args: argparse.Namespace) -> Path:
    return args.venv.resolve() if args.venv else overlay_root(args) / "venv"


def stack_hash(stack: Stack) -> str:
    h = hashlib.sha256()
    for f in [stack.dir / "series", *stack.files]:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def resolve_tree(args: argparse.Namespace, sh: Shell) -> Path:
    if args.torch_src:
        return args.torch_src.resolve()
    return ensure_pinned_source(paths.cache_dir(), sh)


def _python_link_info(info: TorchInfo) -> tuple[str, str]:
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ldlib = f"python{info.python_version}"
    return libdir, ldlib


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


def prepare(args: argparse.Namespace) -> tuple:
    """Everything before compiling: tree/stack checks, venv, codegen, TU set, ABI check."""
    sh = Shell(verbose=not args.quiet)
    cache = paths.cache_dir()
    root = overlay_root(args)
    stack = Stack.load(args.stack.resolve())
    tree_path = resolve_tree(args, sh)
    tree = open_tree(tree_path, sh)
    state = tree.state(stack)
    tree.verify_base(stack, state)
    if state.applied != len(stack):
        raise ui.UserError(
            f"{tree.path} has {state.applied}/{len(stack)} patches applied; apply the stack first: "
            f"python tools/apply_patches.py{' --torch-src ' + shlex.quote(str(tree.path)) if args.torch_src else ''}"
        )
    venv = venv_dir(args)
    info = ensure_venv(venv, cache, sh)
    check_python_headers(info.python_include, real_python(venv))
    tc = cc.Toolchain.detect(opt=args.opt, use_ccache=not args.no_ccache)
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
    stamp = {"tree": str(tree.path), "stack": report["stack"], "torch": info.version, "build_ids": expected}
    _write_if_changed(layout.gen / generated.STAMP_FILE, generated.render_stamp(stamp, expected))

    selected = tuset.select_tus(tree.path, stack.touched)
    selected += [
        tuset.TU(generated.SHIMS_FILE, tuset.CPU, "helpers libtorch does not export (stateless copies, bridges to its state)", generated=True),
        tuset.TU(generated.STAMP_FILE, tuset.CPU, "build stamp + refuses a different torch", generated=True),
    ]
    pin_dir = _pin_headers(tree, state.base, stack, build)
    selected = check_header_abi(tree.path, stack, layout, selected, pin_dir, report)
    report["tus"] = [{"path": t.path, "lib": t.lib, "reason": t.reason} for t in selected]

    return sh, root, stack, tree, venv, info, tc, build, layout, selected, stamp, report


def check_python_headers(include: Path, python: Path) -> None:
    if not (include / "Python.h").is_file():
        raise ui.UserError(f"Python headers are missing ({include}/Python.h); install the dev package of {python} (e.g. python3-dev)")


def cmd_plan(args: argparse.Namespace) -> int:
    *_, selected, _stamp, report = prepare(args)
    ui.out("overlay plan: translation units and why")
    for t in selected:
        ui.out(f"  {t.lib:6} {t.path}  -- {t.reason}")
    abi = report.get("abi")
    ui.out("header ABI check: " + (abi if isinstance(abi, str) else ""))
    for line in abi if isinstance(abi, list) else []:
        ui.out(f"  {line}")
    return ui.EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    sh, root, stack, tree, venv, info, tc, build, layout, selected, stamp, report = prepare(args)
    jobs = args.jobs or min(2, os.cpu_count() or 1)
    result = cc.compile_all(tc, layout, selected, jobs)
    report.update(result)
    objects = [layout.object_path(t) for t in selected]
    lib = root / "lib" / cc.LIB_NAME
    lib.parent.mkdir(parents=True, exist_ok=True)
    link_key = hashlib.sha256("".join(f"{o}:{o.stat().st_mtime_ns}:{o.stat().st_size}\n" for o in objects).encode()).hexdigest()
    link_key_file = build / "link-key"
    if lib.is_file() and link_key_file.is_file() and link_key_file.read_text() == link_key:
        ui.info(f"link: objects unchanged, keeping {lib}")
    else:
        with ui.step("link (check every undefined symbol, then the library)"):
            libdir, ldlib = _python_link_info(info)
            cc.link(layout, objects, lib, libdir, ldlib)
        with ui.step("static initializer check"):
            checks.check_static_inits(objects, allow=[layout.object_path(selected[-1]).name])
        link_key_file.write_text(link_key)
    (root / STAMP_JSON).write_text(json.dumps({**stamp, "lib": str(lib)}, indent=1, sort_keys=True) + "\n")
    if args.no_install:
        ui.out(f"overlay: {lib} built and checked ({len(result['compiled'])} compiled, {len(result['reused'])} unchanged; "
               f"not installed) in {ui.fmt_seconds(time.monotonic() - t0)}")
        return ui.EXIT_OK
    with ui.step(f"install into {venv}"):
        record = install.install(venv, info.torch_dir, tree.path, stack.touched, lib, root / "state")
    report["installed_files"] = sorted(record["files"])
    report["seconds_total"] = round(time.monotonic() - t0, 1)
    (root / "build-report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    ui.out(
        f"overlay: {lib} ({len(selected)} TUs: {len(result['compiled'])} compiled, {len(result['reused'])} unchanged; "
        f"{len(record['files'])} file(s) installed) in {ui.fmt_seconds(time.monotonic() - t0)}\n"
        f"run: python tools/overlay.py run -- python -c 'import torch'"
    )
    return ui.EXIT_OK


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


def load_stamp(args: argparse.Namespace) -> dict:
    stamp = overlay_root(args) / STAMP_JSON
    if not stamp.is_file():
        raise ui.UserError("no overlay is built; run `python tools/overlay.py build` first")
    return json.loads(stamp.read_text())


def check_fresh(args: argparse.Namespace, stamp: dict) -> None:
    stack = Stack.load(args.stack.resolve())
    if stamp["stack"] != stack_hash(stack):
        raise ui.UserError(
            f"the overlay was built from another stack/tree (stack {stamp['stack']}, now {stack_hash(stack)}); "
            "rebuild it: python tools/overlay.py build"
        )
    if not Path(stamp["lib"]).is_file():
        raise ui.UserError(f"{stamp['lib']} is missing; rebuild it: python tools/overlay.py build")


def overlay_env(args: argparse.Namespace) -> dict[str, str]:
    venv = venv_dir(args)
    stamp = load_stamp(args)
    return {
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "FCA_OVERLAY_LIB": stamp["lib"],
        "PYTHONNOUSERSITE": "1",
    }


def cmd_env(args: argparse.Namespace) -> int:
    check_fresh(args, load_stamp(args))
    for k, v in overlay_env(args).items():
        ui.out(f"export {k}={shlex.quote(v)}")
    return ui.EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ui.UserError("nothing to run: python tools/overlay.py run -- CMD [ARGS...]")
    check_fresh(args, load_stamp(args))
    env = {**os.environ, **overlay_env(args)}
    try:
        return subprocess.call(command, env=env)
    except FileNotFoundError:
        raise ui.UserError(f"`{command[0]}` not found in the overlay venv or on PATH") from None


def cmd_status(args: argparse.Namespace) -> int:
    root = overlay_root(args)
    stamp_path = root / STAMP_JSON
    if not stamp_path.is_file():
        ui.out(f"overlay: not built ({root})")
        return ui.EXIT_OK
    stamp = json.loads(stamp_path.read_text())
    installed = (root / "state" / install.MANIFEST).is_file()
    try:
        check_fresh(args, stamp)
        fresh = "up to date with the stack"
    except ui.UserError as err:
        fresh = f"STALE: {err}"
    ui.out(f"overlay: {stamp['lib']}\n  tree: {stamp['tree']}\n  stack: {stamp['stack']} ({fresh})\n"
           f"  torch: {stamp['torch']}\n  installed in {venv_dir(args)}: {'yes' if installed else 'no'}")
    return ui.EXIT_OK


def cmd_clean(args: argparse.Namespace) -> int:
    root = overlay_root(args)
    venv = venv_dir(args)
    n = install.uninstall(venv, root / "state") if venv.exists() else 0
    for name in (STAMP_JSON,):
        (root / name).unlink(missing_ok=True)
    lib = root / "lib" / cc.LIB_NAME
    lib.unlink(missing_ok=True)
    if args.all:
        import shutil

        shutil.rmtree(root / "build", ignore_errors=True)
    if venv.exists():
        check_torch(venv, Shell(verbose=False))
    ui.out(f"overlay: removed; {n} stock file(s) restored in {venv}" + ("; build dir removed" if args.all else ""))
    return ui.EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="overlay.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--overlay-dir", type=Path, help="where builds live (default: $FCA_CACHE_DIR/overlay)")
    p.add_argument("--venv", type=Path, help="the overlay venv (default: <overlay-dir>/venv)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR)
    p.add_argument("-q", "--quiet", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build and install the overlay for the current stack")
    pl = sub.add_parser("plan", help="print the TU set (with reasons) and the header ABI check; compile nothing")
    for q in (b, pl):
        q.add_argument("--torch-src", type=Path, help="the patched tree (default: the pinned source, stack applied)")
        q.add_argument("--jobs", type=int, help="parallel compile jobs (default: min(2, cores))")
        q.add_argument("--opt", default="-O1", help="optimisation flag (default: %(default)s)")
        q.add_argument("--no-ccache", action="store_true", help="do not use ccache even if installed")
    b.add_argument("--no-install", action="store_true", help="build and check the library, leave the venv alone")
    r = sub.add_parser("run", help="run a command in the overlay venv")
    r.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("env", help="print the environment for a shell")
    sub.add_parser("status", help="what is built and installed")
    c = sub.add_parser("clean", help="restore the stock venv")
    c.add_argument("--all", action="store_true", help="also delete the build dir (objects, generated sources)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    return {"build": cmd_build, "plan": cmd_plan, "run": cmd_run, "env": cmd_env, "status": cmd_status, "clean": cmd_clean}[args.cmd](args)


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
