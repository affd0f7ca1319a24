"""The compiled-autograd workload worker (``tools/workers/bench_workloads.py``) seen from the
tooling: its workloads' names, its argv in a venv, one-shot and served samples, and the
instruction count (callgrind) of the region a mode times.  ``ca`` and ``sizes`` sample through it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import callgrind, ui
from ..shell import Shell
from .core import PEER, WORKERS, Setup, answer_of, in_turns, in_venv, venv_env

WORKER = WORKERS / "bench_workloads.py"
# the worker's WORKLOADS and SEQ_WORKLOADS (it runs in a torch venv; the tooling does not import it)
WORKLOADS = ("mlp", "transformer", "copyslices", "autograd_function", "cpp_function", "compiled_forward", "twotensor",
             "dtensor")
SEQ_WORKLOADS = ("transformer",)

# instruction counts (tools/lib/callgrind.py) of what a worker mode times: the first CA
# capture in the process, the first backward with aot_eager, with Inductor, the 40
# steady-state backwards (per backward).  They repeat to within 1% (0.1-0.8% between two
# runs here), so one sample per venv whatever --reps, taken before the timed ones.
INSTRUCTION_MODES = {"instructions-capture": "capture", "instructions-aot_eager": "first-aot_eager",
                     "instructions-inductor": "first-inductor", "instructions-steady": "steady"}


def check_workloads(workloads) -> None:
    """Refuse a workload the worker does not have."""
    for w in workloads:
        if w not in WORKLOADS:
            raise ui.UserError(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")


def worker_argv(setup: Setup, venv_kind: str, workload: str, mode: str, *extra: str) -> list[str]:
    return in_venv(setup, venv_kind, WORKER, workload, mode, *extra)


def worker_env(setup: Setup, kind: str, rep: int | str, out_dir: Path) -> dict[str, str]:
    """A worker's environment: its cache dirs, and for the overlay worker what ``overlay.py run``
    gives a command (:func:`core.venv_env`: its C++ extensions in a dir per stack, since torch's
    JIT loader does not rebuild an extension when the torch headers change); the stock venvs'
    headers never change."""
    env = {**venv_env(setup, kind), "TORCHINDUCTOR_CACHE_DIR": str(out_dir / "inductor" / f"{kind}-{rep}")}
    if kind in ("stock", PEER):
        env["TORCH_EXTENSIONS_DIR"] = str(setup.cache / "bench" / kind / "extensions")
    return env


def ca_sample(setup: Setup, venv_kind: str, workload: str, mode: str, env: dict[str, str]) -> dict:
    """One one-shot worker's answer."""
    return answer_of(setup, worker_argv(setup, venv_kind, workload, mode), env)


def served_in_turns(setup: Setup, sides: dict[str, tuple[str, dict[str, str]]], workload: str, mode: str,
                    pairs: int):
    """:func:`core.in_turns` of two ``--serve`` workers, one per side (label -> (venv kind, env))."""
    return in_turns(setup, {side: (worker_argv(setup, kind, workload, mode, "--serve"), env)
                            for side, (kind, env) in sides.items()}, pairs)


def callgrind_dir(setup: Setup) -> Path:
    """Where the callgrind control library and the compiler wrapper are built."""
    return setup.cache / "bench" / "callgrind"


def ensure_callgrind(setup: Setup) -> None:
    """The control library and the compiler wrapper, built once before counts run in threads."""
    callgrind.ensure_ctl_lib(callgrind_dir(setup), setup.sh)
    callgrind.ensure_cxx_wrapper(callgrind_dir(setup))


def callgrind_env(sh: Shell, env: dict[str, str], cache: Path) -> dict[str, str]:
    """``env`` plus what a worker under callgrind needs: the region library, and counts
    that depend on the code alone."""
    return {**env, "FCA_BENCH_CALLGRIND_CTL": str(callgrind.ensure_ctl_lib(cache, sh)), "PYTHONHASHSEED": "0",
            # Inductor compiles in this process (a worker pool's work would not be counted),
            # with no AVX-512 in its kernels, which run under valgrind
            "TORCHINDUCTOR_COMPILE_THREADS": "1", "CXX": str(callgrind.ensure_cxx_wrapper(cache)),
            # kernels on one thread: valgrind runs threads one at a time, and OpenMP workers
            # spinning for work there count instructions that depend on scheduling (a
            # transformer's Inductor steady-state backward read 9.7 M with the machine's
            # threads and 4.2 M on one; its dynamic/static ratio 1.13, and 1.005 on one)
            "OMP_NUM_THREADS": "1"}


def instructions_sample(setup: Setup, kind: str, workload: str, mode: str, env: dict[str, str], out_dir: Path) -> dict:
    """One worker run under callgrind: ``{"instructions": n}`` for the region the worker mode
    times, or ``{"error": ...}``.  The overlay worker runs the overlay venv's python (its
    torch is the patched wheel) with the C++ extensions dir ``overlay.py run`` would pick,
    and must have run the stack's C++."""
    env = callgrind_env(setup.sh, {**venv_env(setup, kind), **env}, callgrind_dir(setup))
    runs = out_dir / "callgrind"
    runs.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=f"{workload}-{mode}-{kind}-", dir=runs)) / "callgrind.out"
    env["TORCHINDUCTOR_CACHE_DIR"] = str(out.parent / "inductor")  # cold, as in a first-backward sample
    argv = callgrind.wrap(worker_argv(setup, kind, workload, INSTRUCTION_MODES[mode]), out)
    worker = answer_of(setup, argv, env, timeout=3600, how=" under valgrind")
    return instructions_result(kind, worker, out)


def instructions_result(kind: str, worker: dict, out: Path) -> dict:
    """The sample for a worker's answer: its error, or the region's count, per piece where the
    region was several (``"regions": n``, the steady-state backwards).  An overlay worker
    that ran stock C++ is an error: its count would be stock's under the overlay's name."""
    if "error" in worker:
        return {"error": worker["error"]}
    if kind == "overlay" and not worker.get("patched_cxx"):
        return {"error": "OverlayNotLoaded: the overlay worker ran stock C++; the overlay library was not in effect"}
    return {"instructions": callgrind.region_instructions(out) / worker.get("regions", 1)}
