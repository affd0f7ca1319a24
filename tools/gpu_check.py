#!/usr/bin/env python3
"""Check the patched wheel on a CUDA machine against stock torch 2.6.0: upstream's CUDA tests and held-out CUDA programs.

What the CPU machines that build and test the wheel cannot run, in one command of at most
8 minutes on one H100.  Each step runs the same command for the wheel and for stock
torch==2.6.0 at once, each side in its own venv, within the step's time budget:

  venv      fresh venvs for both (python -m venv --clear)
  install   pip install --no-index --find-links WHEELHOUSE, offline: the wheel with the
            pinned test environment (tools/requirements/torch-venv.txt), and stock torch
            with the same
  probe     import torch: its version, the GPU it sees, the stack's stamp
  tests     upstream's CUDA tests of inductor/test_compiled_autograd.py, from the patched
            tree, by node id (the tests its CPU baseline skips for want of a GPU, and two
            that do more where CUDA is)
  programs  examples/cuda_programs.py: held-out programs, grads compared with eager's

--venv and --stock-venv reuse venvs made before (for a machine that cannot install them):
their side's venv and install steps are left out.  --budget-scale F and --budget STEP=S
change the budgets (the plan's add up to 475 s).  The wheel passes when no test does worse
on it than on stock torch in the same run (REGRESSION, NOW SKIPPED, MISSING; a test stock
fails and the wheel passes is reported, not failed), no CUDA test skips on it, and every
program gives eager's grads on it; stock's outcomes are reported beside the wheel's.  The
markdown and json reports, each step's log, the junit and the fresh venvs go to
--report-dir (default <cache>/reports/gpu-check).

Without CUDA (nvidia-smi -L lists no GPU; without nvidia-smi, no /proc/driver/nvidia/gpus)
it prints one line saying what it would run and exits 0.  --plan prints every step's
command lines and budget and runs nothing.  CUDA is detected without importing torch;
--assume-cuda and --no-cuda override the detection.

Exit codes: 0 the wheel passed (or no CUDA here, or --plan), 1 a check failed, or a step
failed or ran past its budget, 2 usage, 3 bad input (no wheel, no wheelhouse, a venv
without the right torch, no patched test tree).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib import upstream as up
from .lib.gpu_check import (CUDA_TESTS, PROGRAMS_SCRIPT, STEPS, TOTAL_BUDGET_S, VENDORED_TESTS, Inputs, Planned,
                                 Side, execute, plan, program_names, total_budget)
from .lib.gpu_check_report import judge, render_json, render_markdown, summary
from .lib.overlay.package import VERSION_PREFIX
from .lib.overlay.torch_hook import STAMP_NAME
from .lib.overlay.venv import LOCK, installed_torch_version, interpreter_facts, site_packages
from .lib.pinned_source import source_root
from .lib.shell import Shell
from .lib.wheel import WheelName


# -- the command line -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("gpu_check.py", __doc__)
    p.add_argument("--wheel", type=Path, metavar="PATH",
                   help="the patched wheel (default: the newest dist/torch-2.6.0+fca.*.whl for the venvs' Python)")
    p.add_argument("--wheelhouse", type=Path, metavar="DIR",
                   help="wheels to install from, offline: stock torch 2.6.0 and the pinned test environment "
                        "(default: <cache>/wheels, which build_wheel.py fills; ~3.5 GB)")
    p.add_argument("--venv", type=Path, metavar="DIR", help="reuse this venv with the patched wheel installed (no --wheel)")
    p.add_argument("--stock-venv", type=Path, metavar="DIR", help="reuse this venv with stock torch==2.6.0 installed")
    p.add_argument("--python", metavar="PY", help="the interpreter the fresh venvs are made from (default: this one's; "
                                                  "its version must be the wheel's)")
    p.add_argument("--torch-src", type=Path, metavar="TREE",
                   help="the patched v2.6.0 tree whose test/ to run (default: the pinned source, <cache>/src/...)")
    p.add_argument("--report-dir", type=Path, metavar="DIR",
                   help="reports, logs, junit and the fresh venvs (default: <cache>/reports/gpu-check)")
    p.add_argument("--budget-scale", type=float, default=1.0, metavar="F",
                   help="multiply every step's budget by F, for a slower machine (default: %(default)s)")
    p.add_argument("--budget", action="append", default=[], metavar="STEP=SECONDS",
                   help=f"one step's budget instead ({', '.join(s.name for s in STEPS)}); may be repeated")
    p.add_argument("--plan", action="store_true", help="print each step's command lines and budget; run nothing")
    cuda = p.add_mutually_exclusive_group()
    cuda.add_argument("--assume-cuda", action="store_true", help="run as if CUDA were there (skip the detection)")
    cuda.add_argument("--no-cuda", action="store_true", help="act as on a machine without CUDA (print what would run)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines; only the result")
    return p


def usage(message: str) -> ui.UserError:
    return ui.UserError(message, exit_code=ui.EXIT_USAGE)


def check_usage(args: argparse.Namespace) -> None:
    if args.wheel and args.venv:
        raise usage("--venv reuses a venv with the wheel already installed: drop --wheel, or --venv to install it")
    if args.venv and args.stock_venv and (args.wheelhouse or args.python):
        extra = "--wheelhouse" if args.wheelhouse else "--python"
        raise usage(f"{extra} is for installing fresh venvs, and --venv and --stock-venv reuse both: drop {extra}")
    if not args.budget_scale > 0:
        raise usage(f"--budget-scale must be positive, not {args.budget_scale:g}")
    args.budgets = budget_overrides(args.budget)


def budget_overrides(given: Sequence[str]) -> dict[str, float]:
    out = {}
    names = [s.name for s in STEPS]
    for text in given:
        name, _, value = text.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if name not in names or not seconds > 0:
            raise usage(f"--budget {text}: expected STEP=SECONDS, a step of {', '.join(names)} and a positive number")
        out[name] = seconds
    return out


def python_version(args: argparse.Namespace) -> tuple[str, str]:
    """(the interpreter that makes the fresh venvs, its X.Y)."""
    if not args.python:
        base = getattr(sys, "_base_executable", None) or sys.executable
        return base, "%d.%d" % sys.version_info[:2]
    try:
        return args.python, interpreter_facts(args.python)["version"]
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as err:
        raise ui.UserError(f"--python {args.python}: cannot run it ({err}); pass an installed CPython") from None


def cpython_tag(version: str) -> str:
    return "cp" + version.replace(".", "")


def default_wheel(tag: str) -> Path:
    dist = paths.REPO_ROOT / "dist"
    found = sorted(dist.glob(f"torch-{VERSION_PREFIX}*-{tag}-{tag}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ui.UserError(f"no patched wheel for {tag} in {dist}: build one with `python tools/build_wheel.py` "
                           "(`--python python3.X` for another Python), or pass --wheel PATH")
    return found[-1]


def check_wheel(wheel: Path, tag: str) -> Path:
    if not wheel.is_file():
        raise ui.UserError(f"--wheel {wheel}: no such file; build the wheel with `python tools/build_wheel.py` "
                           "(it prints the wheel's path) or pass the path of one")
    try:
        name = WheelName.parse(wheel.name)
    except ValueError:
        name = None
    if name is None or name.distribution != "torch" or not name.version.startswith(VERSION_PREFIX):
        raise ui.UserError(f"--wheel {wheel}: not a patched torch wheel (expected torch-{VERSION_PREFIX}<id>-cpXY-cpXY-"
                           "linux_x86_64.whl, as tools/build_wheel.py names it)")
    if name.python_tag != tag:
        raise ui.UserError(f"--wheel {wheel.name} is for {name.python_tag}, the venvs' Python is {tag}: pass --python "
                           f"with a CPython {name.python_tag[2]}.{name.python_tag[3:]}, or build the wheel for {tag}")
    return wheel.resolve()


def check_wheelhouse(house: Path, tag: str) -> Path:
    stock = list(house.glob(f"torch-2.6.0-{tag}-*.whl")) if house.is_dir() else []
    if not stock:
        what = "does not exist" if not house.exists() else f"has no torch-2.6.0-{tag} wheel"
        raise ui.UserError(f"wheelhouse {house} {what}: fill it where pip can download (`pip download -d {house} "
                           f"-r {LOCK.relative_to(paths.REPO_ROOT)}`, ~3.5 GB; build_wheel.py fills <cache>/wheels) and "
                           "copy it here, pass --wheelhouse DIR, or reuse venvs with --venv and --stock-venv")
    return house.resolve()


def check_venv(venv: Path, option: str, patched: bool) -> Path:
    venv = venv.resolve()
    fix = "pass a venv made by this tool (<report-dir>/wheel/venv, <report-dir>/stock/venv) or build_wheel.py --venv"
    if not (venv / "bin" / "python").exists():
        raise ui.UserError(f"{option} {venv}: not a venv (no bin/python); {fix}")
    version = installed_torch_version(venv)
    site = site_packages(venv)
    stamped = site is not None and (site / "torch" / "lib" / STAMP_NAME).is_file()
    if patched and (not (version or "").startswith(VERSION_PREFIX) or not stamped):
        raise ui.UserError(f"{option} {venv} has torch {version or 'not installed'}"
                           f"{'' if stamped else ' without the stack'}, not the patched wheel "
                           f"({VERSION_PREFIX}<id>); {fix}")
    if not patched and (version != "2.6.0" or stamped):
        raise ui.UserError(f"{option} {venv} has torch {version or 'not installed'}"
                           f"{' with the stack' if stamped else ''}, not stock torch==2.6.0; {fix}")
    if site is None or not any(site.glob("pytest-8.3.*.dist-info")):
        raise ui.UserError(f"{option} {venv} has no pytest 8.3 (upstream's 2.6 tests need it); install "
                           f"{LOCK.relative_to(paths.REPO_ROOT)} into it, or {fix}")
    return venv


def check_tests(tree: Path, default: bool) -> Path:
    """<tree>/test, with the stack's test_compiled_autograd.py (the vendored copy's bytes)."""
    what = f"the pinned source {tree}" if default else f"--torch-src {tree}"
    fix = ("fetch and patch it with `python tools/apply_patches.py`, or pass --torch-src TREE (a copy of the patched "
           "tree; its test/ and pytest.ini are what runs)") if default else "pass a PyTorch v2.6.0 tree with the stack applied"
    tests = tree / "test"
    if not (tests / "conftest.py").is_file():
        raise ui.UserError(f"{what} has no test/conftest.py: {fix}")
    mine = tests / up.TCA
    if not mine.is_file() or mine.read_bytes() != VENDORED_TESTS.read_bytes():
        raise ui.UserError(f"{what}: test/{up.TCA} is not the stack's ({VENDORED_TESTS.relative_to(paths.REPO_ROOT)}); "
                           f"apply the stack: `python tools/apply_patches.py{'' if default else ' --torch-src ' + str(tree)}`")
    return tests.resolve()


def resolve_inputs(args: argparse.Namespace, cache: Path) -> Inputs:
    """Check every input before anything runs (a usage error is exit 2, a wrong input exit 3)."""
    report = (args.report_dir or cache / "reports" / "gpu-check").resolve()
    if report.exists() and not report.is_dir():
        raise ui.UserError(f"--report-dir {report} is a file; pass a directory")
    installs = not (args.venv and args.stock_venv)
    base, version = python_version(args) if installs else ("", "")
    tag = cpython_tag(version) if installs else ""
    wheel = None
    if not args.venv:
        wheel = check_wheel(args.wheel, tag) if args.wheel else default_wheel(tag)
    house = check_wheelhouse(args.wheelhouse or paths.wheelhouse(cache), tag) if installs else None
    lock = ("-r", str(LOCK))
    sides = (
        Side("wheel", check_venv(args.venv, "--venv", patched=True) if args.venv else report / "wheel" / "venv",
             bool(args.venv), (str(wheel), *lock) if wheel else (), report / "wheel"),
        Side("stock", check_venv(args.stock_venv, "--stock-venv", patched=False) if args.stock_venv
             else report / "stock" / "venv", bool(args.stock_venv), lock, report / "stock"),
    )
    tests = check_tests(args.torch_src.resolve() if args.torch_src else source_root(cache), args.torch_src is None)
    return Inputs(wheel, house, base, tests, report, sides)


# -- no CUDA: what would run ------------------------------------------------------------------


def detect_cuda(sh: Shell, proc_gpus: Path = Path("/proc/driver/nvidia/gpus")) -> tuple[bool, str]:
    """Whether this machine has an NVIDIA GPU, and what says so, without importing torch."""
    smi = shutil.which("nvidia-smi")
    if smi:
        proc = sh.run(smi, "-L", check=False)
        gpus = [l.strip() for l in proc.stdout.splitlines() if l.startswith("GPU ")]
        if proc.returncode == 0 and gpus:
            return True, gpus[0] + (f" (and {len(gpus) - 1} more)" if len(gpus) > 1 else "")
        said = ((proc.stderr or proc.stdout).strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return False, f"`nvidia-smi -L` lists no GPU: {said}"
    if proc_gpus.is_dir() and any(proc_gpus.iterdir()):
        n = len(list(proc_gpus.iterdir()))
        return True, f"{n} GPU(s) in {proc_gpus} (no nvidia-smi on PATH)"
    return False, f"no nvidia-smi on PATH and no {proc_gpus}"


def would_run(inp: Inputs, steps: Sequence[Planned], why: str) -> str:
    """One line: why nothing runs here, and what would on a CUDA machine."""
    fresh = [s for s in inp.sides if not s.reused]
    if len(fresh) == 2:
        assert inp.wheel is not None
        install = f"install {inp.wheel.name} and stock torch 2.6.0 into fresh venvs from {inp.wheelhouse}, then run "
    elif fresh:
        what = inp.wheel.name if fresh[0].name == "wheel" and inp.wheel else "stock torch 2.6.0"
        install = f"install {what} into a fresh venv from {inp.wheelhouse}, then run "
    else:
        install = "run "
    return (f"no CUDA here ({why}): on a CUDA machine this would {install}{len(CUDA_TESTS)} CUDA tests of {up.TCA} "
            f"and {len(program_names())} programs of {PROGRAMS_SCRIPT.relative_to(paths.REPO_ROOT)} on the wheel and on "
            f"stock torch 2.6.0 side by side ({len(steps)} steps, budget {ui.fmt_seconds(total_budget(steps))}); "
            "--plan prints the commands")


def render_plan(inp: Inputs, steps: Sequence[Planned]) -> str:
    lines = [f"gpu_check plan: {inp.wheel.name if inp.wheel else f'the wheel in {inp.sides[0].venv}'} against stock "
             f"torch 2.6.0; each step runs its commands for both sides at once, within its budget",
             f"report dir: {inp.report_dir}", ""]
    for i, p in enumerate(steps, 1):
        lines.append(f"{i}. {p.step.name} [budget {p.budget_s:g}s]: {p.step.what}")
        for side, command in p.commands.items():
            lines.append(f"   {side}: $ {command.line()}")
    total = total_budget(steps)
    parts = " + ".join(f"{p.step.name} {p.budget_s:g}s" for p in steps)
    lines += ["", f"budget: {parts} = {total:g}s ({ui.fmt_seconds(total)}; the whole run on one H100: at most "
                  f"{TOTAL_BUDGET_S}s)"]
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    check_usage(args)
    inp = resolve_inputs(args, paths.cache_dir())
    steps = plan(inp, args.budget_scale, args.budgets)
    if args.plan:
        ui.out(render_plan(inp, steps))
        return ui.EXIT_OK
    sh = Shell(verbose=not args.quiet)
    if args.no_cuda:
        cuda, why = False, "--no-cuda"
    elif args.assume_cuda:
        cuda, why = True, "--assume-cuda"
    else:
        cuda, why = detect_cuda(sh)
    if not cuda:
        ui.out(would_run(inp, steps, why))
        return ui.EXIT_OK
    started = up.now_iso()
    ui.info(f"==> gpu check on {why}: {len(steps)} steps, budget {ui.fmt_seconds(total_budget(steps))}; "
            f"report dir {inp.report_dir}")
    run = execute(inp, steps, sh)
    v = judge(inp, run)
    md = inp.report_dir / "gpu-check.md"
    md.write_text(render_markdown(inp, steps, run, v, why, started))
    (inp.report_dir / "gpu-check.json").write_text(render_json(inp, steps, run, v, why, started))
    ui.out(f"{summary(v, run, total_budget(steps))}; report: {md}")
    return ui.EXIT_OK if v.ok else ui.EXIT_FAILED


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
