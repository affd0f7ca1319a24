#!/usr/bin/env python3
"""Run the patched tree on the stock torch==2.6.0 wheel, without a source build.

  plan           print which TUs would be compiled and why, and the header ABI check
  build          codegen + compile only what the stack changes (plus the generated
                 nodes and the compiled-autograd entry point) against the stock wheel,
                 link one library, check it, write the patched wheel (the one
                 build_wheel.py writes) and pip-install it into a dedicated venv
  run -- CMD     run CMD in that venv
  env            print the shell environment for the venv (`eval "$(... env)"`)
  status         what is built and installed, from which tree/stack
  clean          reinstall the stock torch wheel in the venv

The venv's torch is the patched wheel: plain `python`, its children and
Inductor's workers all run the stack's C++, with no wrapper or LD_PRELOAD.
`run` and `env` also point TORCH_EXTENSIONS_DIR (unless set) at a dir of the
overlay's, one per stack: torch's JIT loader does not rebuild a C++ extension
when torch's headers change.

Exit codes: 0 ok, 1 build/check failed, 2 usage, 3 bad input (wrong torch or
ABI, missing compiler or headers, stack not applied, stale overlay).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib.overlay import build as ob, checks, compile as cc, install, package
from .lib.overlay.build import STAMP_JSON
from .lib.overlay.venv import check_torch, installed_torch_version, interpreter_facts, real_python
from .lib.shell import Shell


def overlay_root(args: argparse.Namespace) -> Path:
    return args.overlay_dir.resolve() if args.overlay_dir else ob.default_overlay_dir(args.cache)


def venv_dir(args: argparse.Namespace) -> Path:
    return args.venv.resolve() if args.venv else overlay_root(args) / "venv"


def options(args: argparse.Namespace) -> ob.Options:
    """The build options of a `build` or `plan` command line."""
    return ob.Options(
        overlay_dir=overlay_root(args), venv=venv_dir(args), cache=args.cache, stack_dir=args.stack, torch_src=args.torch_src,
        opt=args.opt, jobs=args.jobs, use_ccache=not args.no_ccache, quiet=args.quiet,
    )


def cmd_plan(args: argparse.Namespace) -> int:
    prepared = ob.prepare(options(args))
    ui.out("overlay plan: translation units and why")
    for t in prepared.selected:
        ui.out(f"  {t.lib:6} {t.path}  -- {t.reason}")
    abi = prepared.abi
    ui.out("header ABI check: " + ("" if abi.lines else checks.NO_HEADER_CHANGED))
    for line in abi.lines:
        ui.out(f"  {line}")
    return ui.EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    with ob.locked(overlay_root(args), "overlay build"):
        return _build(args)


def _build(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    built = ob.build(options(args))
    p, lib, result = built.prepared, built.lib, built.result
    venv = p.venv
    if args.no_install:
        ui.out(f"overlay: {lib} built and checked ({len(result.compiled)} compiled, {len(result.reused)} unchanged; "
               f"not installed) in {ui.fmt_seconds(time.monotonic() - t0)}")
        return ui.EXIT_OK
    made = package.make(built, p.root / "wheel" / "dist", prune=True)
    install.install(venv, made.path, p.root / "state", p.sh)
    report = {**ob.build_report(built), "wheel": made.path.name, "seconds_total": round(time.monotonic() - t0, 1)}
    (p.root / "build-report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    ui.out(
        f"overlay: {lib} ({len(p.selected)} TUs: {len(result.compiled)} compiled, {len(result.reused)} unchanged); "
        f"{made.path.name} installed into {venv} in {ui.fmt_seconds(time.monotonic() - t0)}\n"
        f"run: python tools/overlay.py run -- python -c 'import torch'"
    )
    return ui.EXIT_OK


def load_stamp(args: argparse.Namespace) -> dict:
    stamp = ob.read_stamp(overlay_root(args))
    if stamp is None:
        raise ui.UserError(ob.NOT_BUILT)
    return stamp


def check_fresh(args: argparse.Namespace) -> None:
    reason = ob.stale_reason(overlay_root(args), args.stack)
    if reason:
        raise ui.UserError(reason)


def check_installed(args: argparse.Namespace, stamp: dict) -> None:
    """The venv's torch is the wheel of the overlay's stack."""
    want, have = package.version_of(stamp["stack"]), installed_torch_version(venv_dir(args))
    if have != want:
        raise ui.UserError(f"{venv_dir(args)} has torch {have or '(none)'}, not the overlay's {want}; "
                           "install it: python tools/overlay.py build")


def overlay_env(args: argparse.Namespace) -> dict[str, str]:
    return install.run_env(overlay_root(args), venv_dir(args), load_stamp(args)["stack"])


def cmd_env(args: argparse.Namespace) -> int:
    stamp = load_stamp(args)
    check_fresh(args)
    check_installed(args, stamp)
    for k, v in overlay_env(args).items():
        ui.out(f"export {k}={shlex.quote(v)}")
    return ui.EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ui.UserError("nothing to run: python tools/overlay.py run -- CMD [ARGS...]")
    stamp = load_stamp(args)
    check_fresh(args)
    check_installed(args, stamp)
    # the user's command, as their shell would run it (locale, output, exit code), in the venv
    return Shell(verbose=False).call(*command, env=overlay_env(args), log=False)


def cmd_status(args: argparse.Namespace) -> int:
    try:
        with ob.locked(overlay_root(args), "overlay status", wait=False):
            return _status(args)
    except ob.Busy as busy:
        ui.out(f"overlay: {busy}; ask again when it is done")
        return ui.EXIT_OK


def _status(args: argparse.Namespace) -> int:
    root = overlay_root(args)
    stamp_path = root / STAMP_JSON
    if not stamp_path.is_file():
        ui.out(f"overlay: not built ({root})")
        return ui.EXIT_OK
    stamp = json.loads(stamp_path.read_text())
    record = install.installed(root / "state")
    have = installed_torch_version(venv_dir(args)) if venv_dir(args).exists() else None
    installed = f"yes ({record['wheel']})" if record and have == record["version"] else f"no (torch {have or 'missing'})"
    try:
        check_fresh(args)
        fresh = "up to date with the stack"
    except ui.UserError as err:
        fresh = f"STALE: {err}"
    ui.out(f"overlay: {stamp['lib']}\n  tree: {stamp['tree']}\n  stack: {stamp['stack']} ({fresh})\n"
           f"  torch: {stamp['torch']}\n  installed in {venv_dir(args)}: {installed}")
    return ui.EXIT_OK


def cmd_clean(args: argparse.Namespace) -> int:
    with ob.locked(overlay_root(args), "overlay clean"):
        return _clean(args)


def _clean(args: argparse.Namespace) -> int:
    root = overlay_root(args)
    venv = venv_dir(args)
    sh = Shell(verbose=not args.quiet)
    replaced = None
    if (venv / "pyvenv.cfg").is_file():
        replaced = install.uninstall(venv, root / "state", interpreter_facts(str(real_python(venv)))["version"], args.cache, sh)
    (root / STAMP_JSON).unlink(missing_ok=True)
    (root / "lib" / cc.LIB_NAME).unlink(missing_ok=True)
    shutil.rmtree(root / "wheel", ignore_errors=True)
    if args.all:
        shutil.rmtree(root / "build", ignore_errors=True)
    if venv.exists():
        check_torch(venv, sh)
    what = f"stock torch reinstalled in {venv} (was {replaced})" if replaced else f"{venv} already had stock torch"
    ui.out(f"overlay: removed; {what}" + ("; build dir removed" if args.all else ""))
    return ui.EXIT_OK


COMMANDS = ("build", "plan", "run", "env", "status", "clean")


def _global_options(p: argparse.ArgumentParser, in_subcommand: bool) -> None:
    """--overlay-dir/--venv/--stack/-q, accepted before or after the subcommand (after it, they
    only set what was given: argparse.SUPPRESS keeps a subcommand from resetting the defaults)."""
    def d(value):
        return argparse.SUPPRESS if in_subcommand else value

    p.add_argument("--overlay-dir", type=Path, default=d(None),
                   help="where the overlay's build, library and install state live (default: $FCA_CACHE_DIR/overlay)")
    p.add_argument("--venv", type=Path, default=d(None), help="the overlay venv (default: <overlay-dir>/venv)")
    p.add_argument("--stack", type=Path, default=d(paths.DEFAULT_STACK_DIR),
                   help=f"the patch stack the overlay is built from (default: {paths.DEFAULT_STACK_DIR})")
    p.add_argument("-q", "--quiet", action="store_true", default=d(False), help="no progress lines; only results")


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("overlay.py", __doc__)
    _global_options(p, in_subcommand=False)
    sub = p.add_subparsers(dest="cmd", metavar="{" + ",".join(COMMANDS) + "}")
    b = sub.add_parser("build", help="build and install the overlay for the current stack")
    pl = sub.add_parser("plan", help="print the TU set (with reasons) and the header ABI check; compile nothing")
    for q in (b, pl):
        q.add_argument("--torch-src", type=Path, help="the patched tree (default: the pinned source, stack applied)")
        q.add_argument("--jobs", type=int, help="parallel compile jobs (default: min(2, cores))")
        q.add_argument("--opt", default="-O1", help="optimisation flag (default: %(default)s)")
        q.add_argument("--no-ccache", action="store_true", help="do not use ccache even if installed")
    b.add_argument("--no-install", action="store_true", help="build and check the library, leave the venv alone")
    r = sub.add_parser("run", help="run a command in the overlay venv")
    r.add_argument("command", nargs=argparse.REMAINDER, help="the command, after `--`")
    e = sub.add_parser("env", help="print the environment for a shell")
    st = sub.add_parser("status", help="what is built and installed")
    c = sub.add_parser("clean", help="reinstall stock torch in the venv; drop the library and the wheel")
    c.add_argument("--all", action="store_true", help="also delete the build dir (objects, generated sources)")
    for q in (b, pl, r, e, st, c):
        _global_options(q, in_subcommand=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    args, extra = p.parse_known_args(argv)
    if extra:
        p.error("unrecognized arguments: " + " ".join(extra))
    if args.cmd is None:
        p.error("a command is required: " + ", ".join(COMMANDS))
    ui.set_quiet(args.quiet)
    args.cache = paths.cache_dir()  # resolved once; everything below takes it from here
    return {"build": cmd_build, "plan": cmd_plan, "run": cmd_run, "env": cmd_env, "status": cmd_status, "clean": cmd_clean}[args.cmd](args)


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
