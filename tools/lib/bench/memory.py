"""``memory``: activation checkpointing (plain, non-reentrant, selective, save_on_cpu) on an 8-block
MLP, eager vs compiled autograd, on stock 2.6, the stack and stock 2.7: the bytes the forward keeps
and the backward's peak, from the profiler's memory events (``tools/workers/bench_memory.py``)."""

from __future__ import annotations

from typing import Sequence

from .. import ui
from .core import (PEER, PEER_LABEL, WORKERS, Setup, answer_of, ensure_overlay, ensure_stock_venv, in_venv, machine_facts,
                   venv_env)

WORKER = WORKERS / "bench_memory.py"
# the worker's PROGRAMS (it runs in a torch venv; the tooling does not import it)
PROGRAMS = ("plain", "checkpoint", "selective", "checkpoint_then_plain", "plain_then_checkpoint", "save_on_cpu")
BACKENDS = ("aot_eager", "inductor")  # what torch.compile compiles the compiled-autograd graph with


def memory_sample(setup: Setup, venv_kind: str, program: str, backend: str = "aot_eager") -> dict:
    """The worker's answer for ``program`` in one venv, the compiled-autograd graph compiled by ``backend``."""
    return answer_of(setup, in_venv(setup, venv_kind, WORKER, program, backend), venv_env(setup, venv_kind))


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def bench_memory(setup: Setup, programs: Sequence[str], backend: str = "aot_eager") -> str:
    """The worker's MLP programs in each venv, one process per program and venv, the compiled-autograd
    graph compiled by ``backend``: the report."""
    ensure_stock_venv(setup)
    ensure_overlay(setup)
    sides = [("stock 2.6", "stock"), ("stack", "overlay")] + ([(PEER_LABEL, PEER)] if setup.peer_available() else [])
    progress = ui.Progress(len(sides) * len(programs), "memory benchmark")
    rows = ["| program | torch | eager: alive after forward | CA: alive after forward | eager: backward peak | "
            "CA: backward peak | CA / eager peak | CA first backward: peak, / eager | CA grads equal eager's |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for program in programs:
        for label, kind in sides:
            r = memory_sample(setup, kind, program, backend)
            progress.advance(f"{program} {label}")
            if "error" in r:
                rows.append(f"| {program} | {label} | fails: {r['error'][:90]} | | | | | | |")
                continue
            rows.append(f"| {program} | {label} | {_mib(r['eager_alive_after_forward'])} | {_mib(r['ca_alive_after_forward'])} | "
                        f"{_mib(r['eager_backward_peak'])} | {_mib(r['ca_backward_peak'])} | "
                        f"{r['ca_backward_peak'] / r['eager_backward_peak']:.2f} | {_mib(r['ca_first_backward_peak'])}, "
                        f"{r['ca_first_backward_peak'] / r['eager_first_backward_peak']:.2f} | "
                        f"{'yes' if r['grads_equal_eager'] else 'NO'} |")
    return (f"8-block MLP, batch 2048, 256 features, fp32; compiled autograd's graph compiled with `{backend}`; bytes allocated (profiler CPU memory events), relative to "
            f"just before the forward; the second backward of each way (the first captures and compiles), and the "
            f"first backward's peak under compiled autograd apart.\n"
            f"{machine_facts()}\n\n" + "\n".join(rows))
