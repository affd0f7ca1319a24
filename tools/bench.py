#!/usr/bin/env python3
"""Benchmarks (not tests): measured side by side in one run, reported as medians.

``stack``: apply (cold, no-op, one patch changed), status, export and revert
of the real stack on clones of the pin, repeated; prints a markdown table.
``overlay``: overlay build times (cold without ccache, no-op, one .cpp changed).
``wheel``: the patched wheel's build time (cold, objects built), size, and
``import torch`` time against stock, paired.
``ca``: compiled-autograd workloads, stock venv vs overlay venv, interleaved; and the
instruction counts (callgrind) of what happens once per process and of the
steady-state backward.
``sizes``: compiled autograd over new batch sizes and sequence lengths: CA captures and
Dynamo compiles on stock, on the stack (a static first capture), and on the stack with its opt-in
dynamic first capture; then what the dynamic first capture costs on same-shape work, the stack both
ways in one venv: steady-state backward (paired samples, both backends) and first backward.
``models``: real models (HF and timm) through the pinned tree's own benchmarks/dynamo harness,
``--training --accuracy --compiled-autograd``, on stock 2.6, the stack and stock 2.7: the
harness's accuracy verdict and CA captures/compiles per model, backend and venv.
``memory``: activation checkpointing (plain, non-reentrant, selective) on an 8-block MLP, eager
vs compiled autograd, on stock 2.6, the stack and stock 2.7: the bytes the forward keeps and the
backward's peak, from the profiler's memory events.
``first``: the first backward under compiled autograd as a user pays for it, stock 2.6 / the stack
(default and opt-in dynamic first capture) / stock 2.7 in turns, CA's own time apart from the backend's
(tools/lib/bench/first.py).
``report``: all of them in one markdown report (results/report.md), with the
targets judged from the same run (docs/benchmarks.md).

Exit codes: 0 ok, 2 usage, 3 bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib.bench import ca, first, first_report, memory, models, overlay, report, sizes, stack, wheel
from .lib.bench.core import PEER, PEER_LABEL, Setup
from .lib.bench.workloads import WORKLOADS
from .lib.shell import Shell


def _peer(setup: Setup, args) -> bool:
    """Whether ``ca``/``report`` run the peer: asked for (no ``--no-peer``) and its venv exists."""
    if args.no_peer:
        return False
    if not setup.peer_available():
        ui.info(f"no {PEER_LABEL} column: {setup.venv(PEER)} is missing "
                "(tools/requirements/torch27-venv.txt says how to make it)")
    return setup.peer_available()


def _add_resume_arg(parser) -> None:
    parser.add_argument("--resume", action="store_true",
                        help="keep the steps an earlier run with the same --out did (its samples.json and steps.json) "
                             "and run the rest; a run stopped midway loses at most the step it was on")


def _add_first_parser(sub) -> None:
    f = sub.add_parser("first", help="the first backward under compiled autograd, as a user pays for it: stock 2.6, "
                       "the stack (default and opt-in dynamic first capture), stock 2.7, in turns; CA's own time vs the backend's")
    f.add_argument("--reps", type=int, default=3, help="turns: samples per cell and side (default: %(default)s)")
    f.add_argument("--workloads", nargs="+", default=list(first_report.WORKLOADS), help="default: all (%(default)s)")
    f.add_argument("--routes", nargs="+", default=list(first_report.ROUTES), choices=first_report.ROUTES, help="default: all")
    f.add_argument("--sides", nargs="+", default=list(first_report.SIDES), choices=list(first_report.SIDES),
                   help="default: all (2.7 where its venv exists: tools/requirements/torch27-venv.txt)")
    f.add_argument("--backend", default="aot_eager", choices=("aot_eager", "inductor"), help="default: %(default)s")
    f.add_argument("--batches", type=int, nargs="+", default=list(first_report.BATCHES),
                   help="the batch size of each step in a sample: the first backward, then new sizes (default: %(default)s)")
    f.add_argument("--as-installed", action="store_true",
                   help="measure the patched wheel installed in the overlay venv as it is, even where patches/ has "
                        "changed since it was built (the report names its stack); default: build it for the "
                        "current stack first, as `ca` does")
    f.add_argument("--no-sweep", action="store_true", help="leave out the captures / compiles over a batch-size sweep")
    f.add_argument("-o", "--out", type=Path, default=paths.REPO_ROOT / "docs" / "results" / "bench-first-backward.md",
                   help="the markdown report (default: %(default)s)")
    f.add_argument("--json", type=Path, default=None,
                   help="the raw samples (default: beside --out, named <out>-samples.json)")
    f.add_argument("--from-json", type=Path, nargs="+", default=None, metavar="JSON",
                   help="run nothing: render the report of earlier runs' samples (several: merged)")


def main(argv: Sequence[str] | None = None) -> int:
    p = ui.arg_parser("bench.py", __doc__)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("stack", help="apply/export timings of the real stack (patches/) on clones of the pin")
    s.add_argument("--reps", type=int, default=5, help="repetitions (default: %(default)s)")
    o = sub.add_parser("overlay", help="overlay build timings: cold, no-op, one .cpp changed")
    o.add_argument("--reps", type=int, default=1, help="repetitions (default: %(default)s)")
    w = sub.add_parser("wheel", help="patched wheel: build time cold and warm, size, import time vs stock (paired)")
    w.add_argument("--reps", type=int, default=1, help="cold/warm build repetitions (default: %(default)s)")
    w.add_argument("--pairs", type=int, default=20, help="import-time pairs (default: %(default)s)")
    c = sub.add_parser("ca", help="compiled-autograd workloads: stock venv vs overlay venv, interleaved")
    c.add_argument("--reps", type=int, default=3, help="repetitions of each timed mode (default: %(default)s)")
    c.add_argument("--workloads", nargs="+", default=None, help="default: all")
    c.add_argument("--modes", nargs="+", default=list(ca.CA_MODES), choices=ca.CA_MODES, help="what to measure (default: all)")
    c.add_argument("--out", type=Path, default=paths.REPO_ROOT / "results", help="results dir (default: %(default)s, gitignored)")
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="instruction counts run at a time (default: %(default)s, the cores)")
    c.add_argument("--no-peer", action="store_true",
                   help="leave out stock torch 2.7.0 (default: a third venv where it exists: tools/requirements/torch27-venv.txt)")
    _add_resume_arg(c)
    z = sub.add_parser("sizes", help="captures/compiles over new sizes (stock, stack static, stack) and the dynamic path's cost")
    z.add_argument("--reps", type=int, default=3, help="first-backward workers each way (default: %(default)s)")
    z.add_argument("--pairs", type=int, default=40, help="steady-state sample pairs (default: %(default)s)")
    z.add_argument("--workloads", nargs="+", default=["mlp", "transformer", "compiled_forward"], help="default: %(default)s")
    z.add_argument("--out", type=Path, default=paths.REPO_ROOT / "results", help="results dir (default: %(default)s, gitignored)")
    z.add_argument("--instructions", action="store_true", help="also count instructions per steady-state backward (callgrind)")
    z.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="instruction counts run at a time (default: %(default)s)")
    z.add_argument("--counts-only", action="store_true", help="only the captures / compiles tables (a few minutes)")
    m = sub.add_parser("models", help="real HF/timm models through the pinned tree's benchmarks/dynamo harness, "
                       "--compiled-autograd, stock 2.6 vs the stack vs stock 2.7")
    m.add_argument("--models", nargs="+", default=None, help="harness model names (default: the built-in six)")
    m.add_argument("--backends", nargs="+", default=["aot_eager"], choices=models.BACKENDS, help="default: %(default)s")
    m.add_argument("--modes", nargs="+", default=["accuracy"], choices=models.MODES,
                   help="the harness's --accuracy or --performance; sizes: CA captures and Dynamo graphs over "
                        "batch sizes 2, 3, 4 (and a shorter sequence for HF) in one process; sizes-dynamic: the same "
                        "with the harness's --dynamic-shapes; capture: the time of compiled autograd's capture of "
                        "the backward, first in the process and repeated (default: %(default)s)")
    m.add_argument("--sides", nargs="+", default=None, choices=models.SIDES,
                   help="default: all (stock 2.7 where its venv exists: tools/requirements/torch27-venv.txt)")
    m.add_argument("--timeout", type=float, default=1800, help="seconds per harness run (default: %(default)s)")
    m.add_argument("--out", type=Path, default=paths.REPO_ROOT / "results" / "models",
                   help="logs and raw results (default: %(default)s, gitignored)")
    m.add_argument("--from-outcomes", type=Path, nargs="+", default=None, metavar="JSON",
                   help="run nothing: render the report from outcomes.json files of earlier runs (later ones win)")
    mem = sub.add_parser("memory", help="saved-tensor memory (checkpointing, save_on_cpu): bytes kept by the forward "
                         "and the backward's peak, eager vs compiled autograd, stock 2.6 vs the stack vs stock 2.7")
    mem.add_argument("--programs", nargs="+", default=list(memory.PROGRAMS), choices=memory.PROGRAMS, help="default: all")
    mem.add_argument("--backend", default="aot_eager", choices=memory.BACKENDS,
                     help="what compiles compiled autograd's graph (default: %(default)s)")
    _add_first_parser(sub)
    r = sub.add_parser("report", help="all of it in one report (results/report.md): ca with its targets, stack, overlay")
    r.add_argument("--reps", type=int, default=3, help="ca reps (default: %(default)s)")
    r.add_argument("--workloads", nargs="+", default=None, help="default: all")
    r.add_argument("--modes", nargs="+", default=list(ca.CA_MODES), choices=ca.CA_MODES, help="what to measure (default: all)")
    r.add_argument("--stack-reps", type=int, default=3, help="repetitions of the stack timings (default: %(default)s)")
    r.add_argument("--overlay-reps", type=int, default=1, help="0 skips the overlay build timings")
    r.add_argument("--out", type=Path, default=paths.REPO_ROOT / "results", help="results dir (default: %(default)s, gitignored)")
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="instruction counts run at a time (default: %(default)s, the cores)")
    r.add_argument("--no-peer", action="store_true",
                   help="leave out stock torch 2.7.0 (default: a third venv where it exists: tools/requirements/torch27-venv.txt)")
    _add_resume_arg(r)
    args = p.parse_args(argv)
    setup = Setup(paths.cache_dir(), Shell(verbose=False))
    if args.what == "stack":
        ui.out(stack.bench_stack(setup, args.reps))
    elif args.what == "overlay":
        ui.out(overlay.bench_overlay(setup, args.reps))
    elif args.what == "wheel":
        ui.out(wheel.bench_wheel(setup, args.reps, args.pairs))
    elif args.what == "ca":
        args.out.mkdir(parents=True, exist_ok=True)
        workloads = args.workloads or list(WORKLOADS)
        samples = ca.bench_ca(setup, args.reps, workloads, args.modes, args.out.resolve(), args.jobs, _peer(setup, args),
                              args.resume)
        ui.out(ca.render_ca_table(samples, workloads, args.modes, args.reps, args.out.resolve()))
    elif args.what == "sizes":
        args.out.mkdir(parents=True, exist_ok=True)
        ui.out(sizes.bench_sizes(setup, args.reps, args.pairs, args.workloads, args.out.resolve(), args.instructions,
                                 args.jobs, args.counts_only))
    elif args.what == "memory":
        ui.out(memory.bench_memory(setup, args.programs, args.backend))
    elif args.what == "models" and args.from_outcomes:
        ui.out(models.render_models(args.from_outcomes))
    elif args.what == "models":
        ui.out(models.bench_models(setup, args.models, args.backends, args.sides, args.out.resolve(), args.timeout,
                                   args.modes))
    elif args.what == "first":
        ui.out(first.main(setup, args))
    elif args.what == "report":
        args.out.mkdir(parents=True, exist_ok=True)
        ui.out(report.bench_report(setup, args.reps, args.workloads or list(WORKLOADS), args.modes, args.out.resolve(),
                                   args.stack_reps, args.overlay_reps, args.jobs, _peer(setup, args), args.resume))
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
