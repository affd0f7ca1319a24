"""gpu_check.py's steps and their run: the inputs the command lines are made of, the frozen Step table
and the builders of each step's command per side, the plan, and running a plan's steps within their budgets
(tools/gpu_check.py is the command; tools/lib/gpu_check_report.py judges what the run left and writes it up)."""

from __future__ import annotations

import ast
import dataclasses
import os
import shlex
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import disk, jobs, paths, ui
from . import upstream as up
from .overlay.torch_hook import STAMP_NAME
from .shell import Shell

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
        """Where upstream.write_plugin puts the pytest plugin for a junit dir (the report dir)."""
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
    sides = list(commands)

    def beat(seconds: float, ended: Mapping[int, jobs.Ended]) -> None:
        state = ", ".join(f"{s}: {_outcome(commands[s], logs[s], ended[i]).describe() if i in ended else 'running'}"
                          for i, s in enumerate(sides))
        ui.info(f"[{step.name} {ui.fmt_seconds(seconds)} of {ui.fmt_seconds(budget)}] {state}")

    todo = [jobs.Job(commands[s].argv, logs[s], commands[s].cwd, commands[s].env) for s in sides]
    # a short poll: the steps of a quick run (the tests' fakes) take no longer than they must
    ended = jobs.run_all(sh, todo, limit_s=budget, beat_s=HEARTBEAT_S, on_beat=beat, poll_s=0.05)
    return {s: _outcome(commands[s], logs[s], e) for s, e in zip(sides, ended)}


def _outcome(command: Command, log: Path, ended: jobs.Ended) -> Outcome:
    if ended.unstarted:
        return Outcome(command.line(), 127, 0.0, log, skipped=f"cannot start it: {ended.unstarted}")
    return Outcome(command.line(), ended.returncode, ended.seconds, log, timed_out=ended.timed_out)


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
    if up.write_plugin(inp.report_dir) != inp.plugin_dir:
        raise ui.OperationFailed(f"upstream.write_plugin no longer writes to {inp.plugin_dir}: update gpu_check.py")
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
