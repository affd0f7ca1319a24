"""``sizes``: compiled autograd over new batch sizes and sequence lengths: CA captures and Dynamo
compiles on stock, on the stack (a static first capture), and on the stack with its opt-in dynamic
first capture; then what the dynamic first capture costs on same-shape work, the stack both ways in
one venv: steady-state backward (paired samples, both backends) and first backward."""

from __future__ import annotations

import concurrent.futures
import statistics
from pathlib import Path
from typing import Sequence

from .. import ui
from .core import PEER, Setup, ensure_overlay, ensure_stock_venv, spread
from .workloads import (SEQ_WORKLOADS, ca_sample, check_workloads, ensure_callgrind, instructions_sample,
                        served_in_turns, worker_env)

# the stack run both ways in one venv (tools/workers/bench_workloads.py: FCA_BENCH_CA_DYNAMIC)
SIZES_SIDES = {"stock": ("stock", {}), "stack": ("overlay", {"FCA_BENCH_CA_DYNAMIC": "0"}),
               "stack, dynamic first capture": ("overlay", {"FCA_BENCH_CA_DYNAMIC": "1"}),
               "stack, dynamic graph inputs": ("overlay", {"FCA_BENCH_CA_DYNAMIC": "2"})}
# the ways compared with the static first capture ("0", the default): the opt-in, and with dynamic graph inputs
SIZES_WAYS = {"1": "dynamic capture (opt-in)", "2": "dynamic capture and graph inputs"}
SIZES_BACKENDS = ("aot_eager", "inductor")
# stock torch==2.7.0, the peer, where its venv exists (tools/requirements/torch27-venv.txt says how)
SIZES_PEER = ("torch 2.7.0", PEER)
# the sides of the torch.compile(dynamic=True) table
SIZES_DYNAMIC_SIDES = ("stock", "stack", "stack, dynamic first capture", SIZES_PEER[0])


def paired_static_dynamic(setup: Setup, workload: str, backend: str, pairs: int, env: dict[str, str],
                          dynamic: str = "1") -> list[float]:
    """Steady-state backward, the stack static ("0") vs ``dynamic`` (a FCA_BENCH_CA_DYNAMIC
    value), sampled in turns: the dynamic/static ratio of each pair."""
    sides = {way: ("overlay", {**env, "FCA_BENCH_CA_DYNAMIC": way, "FCA_BENCH_STEADY_BACKEND": backend})
             for way in ("0", dynamic)}
    _, times, _, errors = served_in_turns(setup, sides, workload, "steady", pairs)
    for way, error in errors.items():
        raise ui.UserError(f"{workload} steady ({backend}, FCA_BENCH_CA_DYNAMIC={way}): {error}")
    return [d / s for s, d in zip(times["0"], times[dynamic])]



def sizes_instructions(setup: Setup, workloads: Sequence[str], out_dir: Path, jobs: int
                       ) -> dict[tuple[str, str, str], dict]:
    """Instructions (callgrind) per steady-state backward, per workload and backend (keys
    ``(w, backend, way)``), and of the first backward with aot_eager, capture and compile
    (keys ``(w, "first-aot_eager", way)``), the stack static ("0") and each dynamic way,
    ``jobs`` at a time."""
    ensure_callgrind(setup)  # built once, not per thread
    ways = ("0", *SIZES_WAYS)
    tasks = [(w, b, way, "instructions-steady", {"FCA_BENCH_STEADY_BACKEND": b})
             for w in workloads for b in SIZES_BACKENDS for way in ways]
    tasks += [(w, "first-aot_eager", way, "instructions-aot_eager", {}) for w in workloads for way in ways]
    progress = ui.Progress(len(tasks), "instructions, static and dynamic")
    got = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(instructions_sample, setup, "overlay", w, mode, {"FCA_BENCH_CA_DYNAMIC": way, **env},
                               out_dir): (w, b, way) for w, b, way, mode, env in tasks}
        for future in concurrent.futures.as_completed(futures):
            got[futures[future]] = future.result()
            progress.advance(" ".join(futures[future]))
    return got


def sizes_counts(setup: Setup, workloads: Sequence[str], sides: dict[str, tuple[str, dict[str, str]]], out_dir: Path,
                 progress) -> list[str]:
    """The rows of a captures / compiles table: one ``sizes`` worker per workload and side."""
    rows = []
    for w in workloads:
        got = {}
        for side, (kind, env) in sides.items():
            got[side] = ca_sample(setup, kind, w, "sizes", {**worker_env(setup, kind, 0, out_dir), **env})
            progress.advance(f"{w} sizes {side}")
        for sweep in ("batch", "seq") if w in SEQ_WORKLOADS else ("batch",):
            cells = [r["error"][:60] if "error" in r else f"{r[f'captures_{sweep}']} / {r[f'compiles_{sweep}']}"
                     for r in got.values()]
            rows.append(f"| {w} | {sweep} | " + " | ".join(cells) + " |")
    return rows


def bench_sizes(setup: Setup, reps: int, pairs: int, workloads: Sequence[str], out_dir: Path,
                instructions: bool = False, jobs: int = 1, counts_only: bool = False) -> str:
    """The ``sizes`` report: the captures / compiles tables, then (unless ``counts_only``) the
    dynamic ways' cost on same-shape work, and with ``instructions`` their instruction counts."""
    check_workloads(workloads)
    ensure_stock_venv(setup)
    ensure_overlay(setup)
    sides = dict(SIZES_SIDES)
    if setup.peer_available():
        sides[SIZES_PEER[0]] = (SIZES_PEER[1], {})
    dynamic_sides = {side: (kind, {**env, "FCA_BENCH_COMPILE_DYNAMIC": "1"})
                     for side, (kind, env) in sides.items() if side in SIZES_DYNAMIC_SIDES}
    steps = len(workloads) * (len(sides) + len(dynamic_sides)
                              + (0 if counts_only else len(SIZES_BACKENDS) * len(SIZES_WAYS) * (1 + 2 * reps)))
    progress = ui.Progress(steps, "sizes benchmark")
    lines = ["### Captures and Dynamo compiles over new sizes", "",
             "Batch sizes 8, 16, 24, 32, 40, 48 (sequence lengths 16, 24, 40, 56 at batch 8 where the "
             "workload has one); grads cleared before each backward and checked against eager's; "
             "`torch.compile(backend=\"aot_eager\")` after compiled autograd.", "",
             "| workload | sweep (captures / compiles) | " + " | ".join(sides) + " |",
             "|---|---|" + "---:|" * len(sides)]
    lines += sizes_counts(setup, workloads, sides, out_dir, progress)
    lines += ["", "The same with `torch.compile(..., dynamic=True)` for compiled autograd's compiler and for a "
              "compiled forward (`FCA_BENCH_COMPILE_DYNAMIC=1`): what a user who wants no size recompile writes. "
              "A compile counts the forward's graphs too.", "",
              "| workload | sweep (captures / compiles) | " + " | ".join(dynamic_sides) + " |",
              "|---|---|" + "---:|" * len(dynamic_sides)]
    lines += sizes_counts(setup, workloads, dynamic_sides, out_dir, progress)
    if counts_only:
        return "\n".join(lines)
    lines += ["", "### What the dynamic paths cost on same-shape work (the stack, each way / static first capture)", "",
              f"Steady state: median of the per-pair ratios of {pairs} paired backwards (a static and a dynamic "
              f"worker sampled in turns); first backward (capture + compile): ratio of the medians of {reps} "
              "one-shot workers each way, alternating.", "",
              "| workload | backend | way | steady-state backward | first backward | first, static / this way (s) |",
              "|---|---|---|---:|---:|---|"]
    for w in workloads:
        for backend in SIZES_BACKENDS:
            for dynamic, label in SIZES_WAYS.items():
                ratios = paired_static_dynamic(setup, w, backend, pairs, worker_env(setup, "overlay", 0, out_dir), dynamic)
                progress.advance(f"{w} steady {backend} {label} ({len(ratios)} pairs)")
                firsts: dict[str, list[float]] = {"0": [], dynamic: []}
                for rep in range(reps):
                    for way in (("0", dynamic) if rep % 2 == 0 else (dynamic, "0")):
                        r = ca_sample(setup, "overlay", w, f"first-{backend}",
                                      {**worker_env(setup, "overlay", rep, out_dir), "FCA_BENCH_CA_DYNAMIC": way})
                        if "seconds" not in r:
                            raise ui.UserError(f"{w} first-{backend} (FCA_BENCH_CA_DYNAMIC={way}): {r.get('error')}")
                        firsts[way].append(r["seconds"])
                        progress.advance(f"{w} first-{backend} FCA_BENCH_CA_DYNAMIC={way}")
                st, dy = statistics.median(firsts["0"]), statistics.median(firsts[dynamic])
                lines.append(f"| {w} | {backend} | {label} | {spread(ratios)} | {dy / st:.3f} | {st:.2f} / {dy:.2f} |")
    if instructions:
        counts = sizes_instructions(setup, workloads, out_dir, jobs)
        lines += ["", "Instructions per steady-state backward (callgrind; the 40 timed backwards after the "
                  "warm-up, per backward) and of the first backward with aot_eager (capture and compile, "
                  "one process each), the stack static vs dynamic:", "",
                  "| workload | backend | way | static | this way | this way / static |", "|---|---|---|---:|---:|---:|"]
        for w in workloads:
            for b in (*SIZES_BACKENDS, "first-aot_eager"):
                shown = "aot_eager, first backward" if b == "first-aot_eager" else b
                for dynamic, label in SIZES_WAYS.items():
                    st, dy = counts[(w, b, "0")], counts[(w, b, dynamic)]
                    if "error" in st or "error" in dy:
                        lines.append(f"| {w} | {shown} | {label} | {st.get('error', '')[:60]} | {dy.get('error', '')[:60]} | |")
                        continue
                    lines.append(f"| {w} | {shown} | {label} | {st['instructions']:,.0f} | {dy['instructions']:,.0f} | "
                                 f"{dy['instructions'] / st['instructions']:.4f} |")
    return "\n".join(lines)

