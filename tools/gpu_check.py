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
import ast
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import run_upstream_tests as rut
from tools.lib import disk, paths, ui
from tools.lib import upstream as up
from tools.lib.overlay.package import VERSION_PREFIX
from tools.lib.overlay.torch_hook import STAMP_NAME
from tools.lib.overlay.venv import LOCK, installed_torch_version, interpreter_facts, site_packages, wheelhouse
from tools.lib.pinned_source import source_root
from tools.lib.shell import Shell
from tools.lib.wheel import WheelName

TOTAL_BUDGET_S = 480  # the whole run on one H100: 8 minutes
HEARTBEAT_S = float(os.environ.get("FCA_GPU_CHECK_HEARTBEAT_S", "30"))
PROGRAMS_SCRIPT = paths.REPO_ROOT / "examples" / "cuda_programs.py"
VENDORED_TESTS = paths.DEFAULT_VENDOR_DIR / "test" / up.TCA
FRESH_VENV_BYTES = 6 * disk.GB  # a torch 2.6.0 venv is 5.7 GB installed (tools/lib/overlay/venv.py)
PIP_ENV = (("PIP_DISABLE_PIP_VERSION_CHECK", "1"),)

# upstream's tests of inductor/test_compiled_autograd.py that need CUDA: the ones its stock baseline
# (test/expectations/, recorded on CPU) has as skipped, each for want of a GPU, and two that pass on the
# CPU but do more with CUDA.  The stack changes none of them, so both sides run the same test.
_NO_GPU = "skipped without a GPU (the CPU baseline)"
CUDA_TESTS: tuple[tuple[str, str], ...] = (
    ("TestCompiledAutograd::test_issue106555", _NO_GPU + ": HAS_GPU, reentrant checkpoints around compiled code"),
    ("TestCompiledAutograd::test_logging_tensor_flaky", _NO_GPU + ": HAS_GPU, a Triton test then a LoggingTensor"),
    ("TestCompiledAutograd::test_custom_fn_output_metadata", _NO_GPU + ": HAS_GPU, a custom Function's grads need no casts"),
    ("TestCompiledAutograd::test_free_activation_memory", _NO_GPU + ": HAS_GPU, activations freed in the graph"),
    ("TestCompiledAutograd::test_free_activation_memory_subclass", _NO_GPU + ": HAS_GPU"),
    ("TestCompiledAutograd::test_cudagraphs_cpu_division", _NO_GPU + ": HAS_CUDA, cudagraphs with a CPU scalar"),
    ("TestCompiledAutograd::test_cudagraphs_sdpa", _NO_GPU + ": HAS_CUDA, cudagraphs of SDPA's backward"),
    ("TestCompiledAutograd::test_cudagraphs_cpu_scalar_used_in_python_custom_op",
     _NO_GPU + ": HAS_CUDA, a Python Function's saved CPU scalar under cudagraphs"),
    ("TestCompiledAutograd::test_cudagraphs_cpu_scalar_used_in_cpp_custom_op",
     _NO_GPU + ": HAS_CUDA, a C++ Function's saved CPU scalar under cudagraphs"),
    ("TestAutogradWithCompiledAutograd::test_callback_propagates_errors_from_device_thread", _NO_GPU + ": TEST_CUDA"),
    ("TestAutogradWithCompiledAutograd::test_graph_save_on_cpu_cuda", _NO_GPU + ": TEST_CUDA, save_on_cpu"),
    ("TestCustomOpWithCompiledAutograd::test_impl_device_cuda", _NO_GPU + ": TEST_CUDA"),
    ("TestCustomOpWithCompiledAutograd::test_impl_multiple", _NO_GPU + ": TEST_CUDA"),
    ("TestCustomOpWithCompiledAutograd::test_impl_separate", _NO_GPU + ": TEST_CUDA"),
    ("TestCompiledAutograd::test_cudagraphs_cpu_graph", "runs on the CPU too: cudagraphs on, a CPU graph skipped"),
    ("TestAutogradWithCompiledAutograd::test_type_conversions",
     "really runs only with CUDA (without, the file's known_failing_tests makes it a no-op), then its .cuda() branch"),
)


# -- the steps (data) -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Command:
    """One process of a step: what runs, where, with which environment overrides."""

    argv: tuple[str, ...]
    cwd: Path | None = None
    env: tuple[tuple[str, str], ...] = ()

    def line(self) -> str:
        """Copy-pasteable, as Shell logs it: ``cd DIR && VAR=value ... argv``."""
        where = f"cd {shlex.quote(str(self.cwd))} && " if self.cwd is not None else ""
        env = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env)
        return f"{where}{env}{shlex.join(self.argv)}"


@dataclasses.dataclass(frozen=True)
class Side:
    """The wheel's side or stock torch's: its venv and its files under the report dir."""

    name: str  # "wheel" | "stock"
    venv: Path
    reused: bool  # given with --venv / --stock-venv: not made, not installed
    install: tuple[str, ...]  # what pip installs into a fresh venv
    dir: Path  # <report-dir>/<name>

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def caches_env(self) -> tuple[tuple[str, str], ...]:
        """Inductor's and the C++ extensions' caches: this run's own, per side (a cold, honest run)."""
        return (("TORCHINDUCTOR_CACHE_DIR", str(self.dir / "caches" / "inductor")),
                ("TORCH_EXTENSIONS_DIR", str(self.dir / "caches" / "extensions")))


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What the steps' command lines are made of (resolved and checked from the command line)."""

    wheel: Path | None  # None: --venv
    wheelhouse: Path | None  # None: both venvs reused
    base_python: str  # makes the fresh venvs
    tests_dir: Path  # <patched tree>/test
    report_dir: Path
    sides: tuple[Side, ...]  # wheel, stock

    @property
    def plugin_dir(self) -> Path:
        """Where run_upstream_tests.write_plugin puts the pytest plugin for a junit dir (the report dir)."""
        return self.report_dir / ".plugin"

    def tests_xml(self, side: Side) -> Path:
        return side.dir / "tests.xml"

    def tests_state(self, side: Side) -> Path:
        return side.dir / "tests-state"

    def programs_json(self, side: Side) -> Path:
        return side.dir / "programs.json"


def venv_command(inp: Inputs, side: Side) -> Command | None:
    if side.reused:
        return None
    return Command((inp.base_python, "-m", "venv", "--clear", str(side.venv)))


def install_command(inp: Inputs, side: Side) -> Command | None:
    if side.reused:
        return None
    assert inp.wheelhouse is not None
    return Command((str(side.python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(inp.wheelhouse),
                    *side.install), env=PIP_ENV)


PROBE = (
    'import json, os, sys, torch; lib = os.path.join(os.path.dirname(torch.__file__), "lib", "' + STAMP_NAME + '"); '
    'ok = torch.cuda.is_available(); print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, '
    '"cuda_available": ok, "device": torch.cuda.get_device_name(0) if ok else None, '
    '"stack": json.load(open(lib)).get("stack") if os.path.exists(lib) else None, '
    '"python": sys.version.split()[0], "torch_file": torch.__file__})); sys.exit(0 if ok else 1)'
)


def probe_command(inp: Inputs, side: Side) -> Command:
    return Command((str(side.python), "-c", PROBE), cwd=side.dir)


def tests_command(inp: Inputs, side: Side) -> Command:
    """pytest on upstream's CUDA tests as run_upstream_tests runs a file: cwd <tree>/test, its plugin
    (collection and progress state), junit, no cache provider; the tests by node id."""
    argv = (str(side.python), "-m", "pytest", "-p", "no:cacheprovider", "-p", up.PLUGIN_MODULE,
            f"--junitxml={inp.tests_xml(side)}", "-q", *(f"{up.TCA}::{test}" for test, _ in CUDA_TESTS))
    env = (("PYTHONPATH", str(inp.plugin_dir)), ("FCA_UPSTREAM_STATE", str(inp.tests_state(side))), *side.caches_env())
    return Command(argv, cwd=inp.tests_dir, env=env)


def programs_command(inp: Inputs, side: Side) -> Command:
    argv = (str(side.python), str(PROGRAMS_SCRIPT), "--backend", "inductor", "--build-dir", str(side.dir / "cpp-build"),
            "--json", str(inp.programs_json(side)))
    return Command(argv, cwd=side.dir, env=side.caches_env())


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    what: str
    command: Callable[[Inputs, Side], Command | None]  # None: not for this side (a reused venv)
    budget_s: int  # wall time of the step, both sides at once, on one H100 (16 cores)
    gate: bool = False  # a side whose run of this step fails runs none of the later steps


# Budgets: the CPU-side parts measured on the 2-core machine (docs/testing.md, "On a GPU machine"),
# the GPU parts estimated from the CPU runs of the same tests and programs.
STEPS: tuple[Step, ...] = (
    Step("venv", "fresh venvs (python -m venv --clear)", venv_command, 15, gate=True),
    Step("install", "pip install from the wheelhouse, offline", install_command, 120, gate=True),
    Step("probe", "import torch: versions, the GPU it sees, the stack's stamp", probe_command, 20, gate=True),
    Step("tests", f"{len(CUDA_TESTS)} CUDA tests of upstream's {up.TCA}", tests_command, 165),
    Step("programs", f"{PROGRAMS_SCRIPT.relative_to(paths.REPO_ROOT)}: grads compared with eager's", programs_command,
         155),
)


@dataclasses.dataclass(frozen=True)
class Planned:
    """A step of this run: its command per side, its budget (the table's, scaled or overridden)."""

    step: Step
    commands: dict[str, Command]
    budget_s: float


def plan(inp: Inputs, scale: float = 1.0, budgets: dict[str, float] | None = None) -> list[Planned]:
    """Each step with its command per side; a step with none (both venvs reused) is left out."""
    out = []
    for step in STEPS:
        commands = {side.name: c for side in inp.sides if (c := step.command(inp, side)) is not None}
        if commands:
            out.append(Planned(step, commands, (budgets or {}).get(step.name, step.budget_s * scale)))
    return out


def total_budget(steps: Sequence[Planned]) -> float:
    return sum(p.budget_s for p in steps)


def program_names(script: Path = PROGRAMS_SCRIPT) -> list[str]:
    """The names in the script's ``PROGRAMS`` list, read without importing it (it imports torch)."""
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROGRAMS" for t in node.targets):
            return [e.id for e in node.value.elts if isinstance(e, ast.Name)]
    return []


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


def resolve_inputs(args: argparse.Namespace) -> Inputs:
    """Check every input before anything runs (a usage error is exit 2, a wrong input exit 3)."""
    cache = paths.cache_dir()
    report = (args.report_dir or cache / "reports" / "gpu-check").resolve()
    if report.exists() and not report.is_dir():
        raise ui.UserError(f"--report-dir {report} is a file; pass a directory")
    installs = not (args.venv and args.stock_venv)
    base, version = python_version(args) if installs else ("", "")
    tag = cpython_tag(version) if installs else ""
    wheel = None
    if not args.venv:
        wheel = check_wheel(args.wheel, tag) if args.wheel else default_wheel(tag)
    house = check_wheelhouse(args.wheelhouse or wheelhouse(cache), tag) if installs else None
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


# -- running the steps ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One side's run of one step."""

    command: str
    returncode: int | None  # None: killed at the budget, or not run
    seconds: float
    log: Path | None
    timed_out: bool = False
    skipped: str = ""  # why it did not run

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.skipped

    def describe(self) -> str:
        if self.skipped:
            return f"not run ({self.skipped})"
        if self.timed_out:
            return f"killed at its budget after {ui.fmt_seconds(self.seconds)}"
        return f"exit {self.returncode} in {ui.fmt_seconds(self.seconds)}"


def log_tail(log: Path | None) -> str:
    try:
        lines = [l.strip() for l in log.read_text(errors="replace").splitlines() if l.strip()] if log else []
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no output"


def run_step(step: Step, commands: dict[str, Command], budget: float, sh: Shell, logs: dict[str, Path]) -> dict[str, Outcome]:
    """Run the step's commands at once, each in its own process group, its output to its log; kill what is
    still running when the budget is spent."""
    procs: dict[str, subprocess.Popen] = {}
    files = {}
    t0 = time.monotonic()
    done: dict[str, Outcome] = {}
    try:
        for side, command in commands.items():
            sh.log(command.argv, command.cwd, dict(command.env))
            logs[side].parent.mkdir(parents=True, exist_ok=True)
            files[side] = open(logs[side], "wb")
            try:
                procs[side] = subprocess.Popen(command.argv, cwd=command.cwd, env={**os.environ, **dict(command.env)},
                                               stdout=files[side], stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as err:
                done[side] = Outcome(command.line(), 127, 0.0, logs[side], skipped=f"cannot start it: {err.strerror}")
        next_beat = t0 + HEARTBEAT_S
        while len(done) < len(commands):
            now = time.monotonic()
            for side, proc in procs.items():
                if side not in done and proc.poll() is not None:
                    done[side] = Outcome(commands[side].line(), proc.returncode, now - t0, logs[side])
            if len(done) == len(commands):
                break
            if now - t0 > budget:
                for side, proc in procs.items():
                    if side not in done:
                        rut._kill_group(proc)
                        done[side] = Outcome(commands[side].line(), None, now - t0, logs[side], timed_out=True)
                break
            if now >= next_beat:
                next_beat = now + HEARTBEAT_S
                state = ", ".join(f"{s}: {done[s].describe() if s in done else 'running'}" for s in commands)
                ui.info(f"[{step.name} {ui.fmt_seconds(now - t0)} of {ui.fmt_seconds(budget)}] {state}")
            time.sleep(0.05)  # a short poll: the steps of a quick run (the tests' fakes) take no longer than they must
    except KeyboardInterrupt:
        for proc in procs.values():
            rut._kill_group(proc)
        raise
    finally:
        for f in files.values():
            f.close()
    return done


@dataclasses.dataclass
class Run:
    """What the steps left: each step's outcome per side, and how long they took."""

    outcomes: dict[str, dict[str, Outcome]] = dataclasses.field(default_factory=dict)  # step -> side -> outcome
    seconds: float = 0.0


def execute(inp: Inputs, steps: Sequence[Planned], sh: Shell) -> Run:
    fresh = [s for s in inp.sides if not s.reused]
    inp.report_dir.mkdir(parents=True, exist_ok=True)
    if fresh:
        disk.check_free_disk(inp.report_dir, FRESH_VENV_BYTES * len(fresh), f"{len(fresh)} fresh torch 2.6.0 venv(s)")
    if rut.write_plugin(inp.report_dir) != inp.plugin_dir:
        raise ui.OperationFailed(f"run_upstream_tests.write_plugin no longer writes to {inp.plugin_dir}: update gpu_check.py")
    for side in inp.sides:
        for d in (side.dir, inp.tests_state(side), *(Path(v) for _, v in side.caches_env())):
            d.mkdir(parents=True, exist_ok=True)
        for stale in (inp.tests_xml(side), inp.programs_json(side), *inp.tests_state(side).glob("*")):
            stale.unlink(missing_ok=True)
    run = Run()
    stopped: dict[str, str] = {}  # side -> why its later steps do not run
    t0 = time.monotonic()
    for i, planned in enumerate(steps, 1):
        step, commands, budget = planned.step, planned.commands, planned.budget_s
        runnable = {s: c for s, c in commands.items() if s not in stopped}
        logs = {s: inp.report_dir / s / f"{step.name}.log" for s in commands}
        with ui.step(f"[{i}/{len(steps)}] {step.name} (budget {ui.fmt_seconds(budget)}): {step.what}"):
            outcomes = run_step(step, runnable, budget, sh, logs) if runnable else {}
        for side, command in commands.items():
            if side not in runnable:
                outcomes[side] = Outcome(command.line(), None, 0.0, None, skipped=stopped[side])
            o = outcomes[side]
            ui.info(f"    {side}: {o.describe()}" + ("" if o.ok else f": {log_tail(o.log)}"))
            if step.gate and not o.ok and side not in stopped:
                stopped[side] = f"its {step.name} step failed"
        run.outcomes[step.name] = outcomes
    run.seconds = time.monotonic() - t0
    return run


# -- what the run says ------------------------------------------------------------------------

# the differences (tools/lib/upstream.py's kinds, the stock run as the baseline) that fail the check:
# the wheel does worse than stock, or there is nothing to compare
FAILING = frozenset({up.REGRESSION, up.NOW_SKIPPED, up.MISSING, up.NEW})


@dataclasses.dataclass
class Verdict:
    problems: list[str]
    probes: dict[str, dict]
    tests: dict[str, dict[str, up.TestResult]]  # side -> test id -> result
    diffs: list[up.Diff]
    programs: dict[str, dict]  # side -> cuda_programs.py's json

    @property
    def ok(self) -> bool:
        return not self.problems


def read_probe(outcome: Outcome | None) -> dict:
    if outcome is None or outcome.log is None or not outcome.log.is_file():
        return {}
    for line in reversed(outcome.log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return {}
    return {}


def read_tests(inp: Inputs, side: Side, outcome: Outcome | None) -> tuple[dict[str, up.TestResult], str | None]:
    """The side's results (junit; the plugin's progress file where pytest died first) and a problem, if any."""
    if outcome is None or outcome.skipped:
        return {}, f"not run ({outcome.skipped if outcome else 'no tests step'})"
    xml = inp.tests_xml(side)
    if xml.is_file() and not outcome.timed_out:
        results, problem = up.results_for_file(up.read_junit(xml), up.TCA)
        return results, problem
    results = up.read_progress(inp.tests_state(side))
    return results, f"pytest {outcome.describe()}, no junit: {log_tail(outcome.log)}"


def judge(inp: Inputs, run: Run) -> Verdict:
    problems: list[str] = []
    for step, outcomes in run.outcomes.items():
        for side, o in outcomes.items():
            if o.timed_out:
                problems.append(f"{side}: the {step} step ran past its budget ({ui.fmt_seconds(o.seconds)}): {log_tail(o.log)}")
            elif o.returncode not in (0, None) and step not in ("tests", "programs"):
                probe = read_probe(o) if step == "probe" else {}
                if probe and not probe.get("cuda_available"):
                    problems.append(f"{side}: torch {probe.get('torch')} (CUDA {probe.get('cuda')}) sees no CUDA device "
                                    f"(the probe step, {o.describe()}); is the driver new enough for CUDA {probe.get('cuda')}?")
                else:
                    problems.append(f"{side}: the {step} step failed ({o.describe()}): {log_tail(o.log)}")
    probes = {side: read_probe(run.outcomes.get("probe", {}).get(side)) for side in ("wheel", "stock")}
    sides = {s.name: s for s in inp.sides}
    tests: dict[str, dict[str, up.TestResult]] = {}
    for name, side in sides.items():
        outcome = run.outcomes.get("tests", {}).get(name)
        tests[name], problem = read_tests(inp, side, outcome)
        if problem and outcome is not None and not outcome.skipped and not outcome.timed_out:  # else said above
            problems.append(f"{name}: tests: {problem}")
    diffs = []  # only where both sides have results: else the problems above say why there are none
    for test, _ in CUDA_TESTS if tests["wheel"] and tests["stock"] else ():
        stock, wheel = tests["stock"].get(test), tests["wheel"].get(test)
        kind = up.classify(stock.outcome if stock else None, wheel.outcome if wheel else None)
        if kind is None and stock is None and wheel is None:
            kind = up.MISSING
        if kind is not None:
            diffs.append(up.Diff(up.TCA, test, stock.outcome if stock else None, wheel.outcome if wheel else None, kind,
                                 message=(wheel or stock).message if (wheel or stock) else ""))
    bad = [d for d in diffs if d.kind in FAILING]
    if bad:
        problems.append(f"tests: {len(bad)} worse on the wheel than on stock, e.g. {bad[0].test}: {bad[0].kind} "
                        f"(stock {bad[0].baseline or 'no result'}, wheel {bad[0].now or 'no result'}) {bad[0].message}".rstrip())
    skipped = [r for r in tests["wheel"].values() if r.outcome == "skipped"]
    if skipped:
        problems.append(f"tests: {len(skipped)} CUDA test(s) skipped on the wheel, e.g. {skipped[0].id}: "
                        f"{skipped[0].message or 'no reason given'} (on a CUDA machine they must run)")
    programs: dict[str, dict] = {}
    for name, side in sides.items():
        f = inp.programs_json(side)
        outcome = run.outcomes.get("programs", {}).get(name)
        if outcome is None or outcome.skipped or outcome.timed_out:  # said above
            continue
        if f.is_file():
            programs[name] = json.loads(f.read_text())
        else:
            problems.append(f"{name}: programs: {outcome.describe()}, no results: {log_tail(outcome.log)}")
    wrong = [p for p in programs.get("wheel", {}).get("programs", []) if p.get("ok") is not True]
    if wrong:
        problems.append(f"programs: {len(wrong)} differ from eager on the wheel, e.g. {wrong[0]['name']}: {wrong[0]['verdict']}")
    return Verdict(problems, probes, tests, diffs, programs)


def counts(results: dict[str, up.TestResult]) -> str:
    c = {o: 0 for o in up.OUTCOMES}
    for r in results.values():
        c[r.outcome] += 1
    return ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no results"


def program_counts(data: dict) -> str:
    ps = data.get("programs", [])
    return f"{sum(1 for p in ps if p.get('ok') is True)}/{len(ps)}" if ps else "none"


def summary(v: Verdict, run: Run, budget: float) -> str:
    head = "gpu check OK" if v.ok else f"gpu check FAILED ({len(v.problems)} problem(s), first: {v.problems[0]})"
    return (f"{head}; {len(CUDA_TESTS)} CUDA tests: wheel {counts(v.tests['wheel'])}, stock {counts(v.tests['stock'])}; "
            f"programs giving eager's grads: wheel {program_counts(v.programs.get('wheel', {}))}, stock "
            f"{program_counts(v.programs.get('stock', {}))}; {ui.fmt_seconds(run.seconds)} of a "
            f"{ui.fmt_seconds(budget)} budget")


def _cell(text: object) -> str:
    return str(text if text not in (None, "") else "-").replace("|", "\\|").replace("\n", " ")


def render_markdown(inp: Inputs, steps: Sequence[Planned], run: Run, v: Verdict, why: str, started: str) -> str:
    budget = total_budget(steps)
    lines = ["# GPU check: the patched wheel against stock torch 2.6.0", "",
             f"- result: **{'OK' if v.ok else 'FAILED'}**", f"- started {started}, took {ui.fmt_seconds(run.seconds)} "
             f"of a {ui.fmt_seconds(budget)} budget", f"- machine: {why}",
             f"- wheel: `{inp.wheel or inp.sides[0].venv}`", f"- tests from: `{inp.tests_dir}`"]
    for side in ("wheel", "stock"):
        p = v.probes.get(side) or {}
        lines.append(f"- {side}: torch {p.get('torch', '?')} (CUDA {p.get('cuda', '?')}, stack {p.get('stack') or '-'}) "
                     f"on {p.get('device') or '?'}, python {p.get('python', '?')}")
    if v.problems:
        lines += ["", "## Problems", ""] + [f"- {_cell(p)}" for p in v.problems]
    lines += ["", "## Steps", "", "| step | budget | wheel | stock |", "|---|---:|---|---|"]
    for p in steps:
        o = run.outcomes.get(p.step.name, {})
        lines.append(f"| {p.step.name} | {p.budget_s:g}s | "
                     + " | ".join(_cell(o[s].describe() if s in o else "-") for s in ("wheel", "stock")) + " |")
    lines += ["", f"## Upstream's CUDA tests (`{up.TCA}`)", "",
              f"Wheel: {counts(v.tests['wheel'])}.  Stock: {counts(v.tests['stock'])}.", "",
              "| test | stock | wheel | difference | why it is here |", "|---|---|---|---|---|"]
    kinds = {d.test: d for d in v.diffs}
    for test, why_here in CUDA_TESTS:
        s, w = v.tests["stock"].get(test), v.tests["wheel"].get(test)
        d = kinds.get(test)
        diff = "-" if d is None else (d.kind + (" (fails the check)" if d.kind in FAILING else ""))
        lines.append(f"| `{test}` | {_cell(s.outcome if s else None)} | {_cell(w.outcome if w else None)} | {diff} "
                     f"| {_cell(why_here)} |")
    messages = [(side, r) for side in ("wheel", "stock") for r in v.tests[side].values() if r.message and r.outcome != "passed"]
    if messages:
        lines += ["", "| side | test | outcome | message |", "|---|---|---|---|"]
        lines += [f"| {side} | `{r.id}` | {r.outcome} | {_cell(r.message)} |" for side, r in messages]
    lines += ["", "## Programs (`examples/cuda_programs.py`)", ""]
    for side in ("wheel", "stock"):
        data = v.programs.get(side, {})
        lines.append(f"- {side}: C++ extension: {data.get('extension', '-')}")
    lines += ["", "| program | stock | wheel |", "|---|---|---|"]
    by_side = {side: {p["name"]: p for p in v.programs.get(side, {}).get("programs", [])} for side in ("wheel", "stock")}
    for name in program_names():
        cells = []
        for side in ("stock", "wheel"):
            p = by_side[side].get(name)
            cells.append("-" if p is None else f"{p['verdict']} (captures {p.get('captures', '-')}"
                         + (f", cudagraph skips {p['cudagraph_skips']}" if p.get("cudagraph_skips") else "")
                         + f", {p.get('seconds', '-')}s)")
        lines.append(f"| `{name}` | " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "## Commands", ""]
    for p in steps:
        lines += [f"- {p.step.name}, {side}: `{c.line()}`" for side, c in p.commands.items()]
    return "\n".join(lines) + "\n"


def render_json(inp: Inputs, steps: Sequence[Planned], run: Run, v: Verdict, why: str, started: str) -> str:
    data = {
        "verdict": "OK" if v.ok else "FAILED",
        "summary": summary(v, run, total_budget(steps)),
        "problems": v.problems,
        "started": started,
        "seconds": round(run.seconds, 1),
        "budget_s": total_budget(steps),
        "machine": why,
        "wheel": str(inp.wheel) if inp.wheel else None,
        "wheelhouse": str(inp.wheelhouse) if inp.wheelhouse else None,
        "venvs": {s.name: {"path": str(s.venv), "reused": s.reused} for s in inp.sides},
        "tests_dir": str(inp.tests_dir),
        "probe": v.probes,
        "steps": [{"name": p.step.name, "budget_s": p.budget_s,
                   "sides": {s: {"command": o.command, "returncode": o.returncode, "seconds": round(o.seconds, 1),
                                 "timed_out": o.timed_out, "skipped": o.skipped, "log": str(o.log) if o.log else None}
                             for s, o in run.outcomes.get(p.step.name, {}).items()}} for p in steps],
        "tests": {"file": up.TCA, "selected": [t for t, _ in CUDA_TESTS],
                  **{side: {t: r.outcome for t, r in sorted(v.tests[side].items())} for side in ("wheel", "stock")},
                  "differences": [{"test": d.test, "stock": d.baseline, "wheel": d.now, "kind": d.kind,
                                   "fails": d.kind in FAILING, "message": d.message} for d in v.diffs]},
        "programs": v.programs,
    }
    return json.dumps(data, indent=1) + "\n"


# -- main -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    check_usage(args)
    inp = resolve_inputs(args)
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
