"""``tools/bench.py first``: the first backward under compiled autograd, the way a user pays for it.

Stock 2.6, the stack (its default, and its opt-in dynamic first capture) and stock 2.7 side by side in one
run, cell by cell (a workload and a route), in turns: per turn one fresh interpreter per side
(tools/workers/bench_first.py), the order of the sides rotated every turn.  A sample is the first
backward at batch 4 and a second one at batch 8 (a new size), in process CPU time and wall time,
split into the backend's compile (the time inside the real backend, through a ``timed`` wrapper)
and CA's own (the rest: the capture, Dynamo's trace of the CA graph, running it).  Then, one
process per side and route, the CA captures and Dynamo compiles of the MLP over a batch-size sweep.

This module takes the samples; tools/lib/bench/first_report.py renders them.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .. import ui
from ..overlay.venv import installed_torch_version, venv_python
from .core import PEER, WORKERS, Setup, answer_of, ensure_overlay, ensure_stock_venv, in_venv, machine_facts
from .first_report import (BATCHES, HF_WORKLOADS, ROUTES, SIDES, SWEEP_BATCHES, SWEEP_WORKLOAD, WORKLOADS, merge,
                           render, rotated)

WORKER = WORKERS / "bench_first.py"


def worker_argv(setup: Setup, kind: str, *args: str) -> list[str]:
    """The worker in a side's venv.  The stack's is the overlay venv's own python, whose torch is the
    patched wheel (as ``bench.py models`` runs it); ``--as-installed`` measures it as it is, even once
    patches/ differs from the stack the wheel was built from."""
    return in_venv(setup, kind, WORKER, *args)


def run(setup: Setup, reps: int, workloads: Sequence[str], routes: Sequence[str], side_names: Sequence[str], backend: str,
        json_out: Path, batches: Sequence[int] = BATCHES, sweep: bool = True,
        sweep_batches: Sequence[int] = SWEEP_BATCHES, command: str = "", as_installed: bool = False) -> dict:
    """Sample every cell on every side, in turns; the sweep after the first turn.  The JSON of the
    run is rewritten to ``json_out`` after every sample.  The stack's sides run the patched wheel of
    the overlay venv: built for the current stack first (``core.ensure_overlay``), unless
    ``as_installed``."""
    sides = [s for s in SIDES if s in side_names]
    if "2.6" in sides:
        ensure_stock_venv(setup)
    stack_wheel = None
    if any(SIDES[s][0] == "overlay" for s in sides):
        if not as_installed:
            ensure_overlay(setup)
        stack_wheel = installed_torch_version(setup.venv("overlay"))
        if not stack_wheel or "+fca" not in stack_wheel:
            raise ui.UserError(f"{setup.venv('overlay')} has torch {stack_wheel or '(none)'}, not a patched "
                               "wheel: python tools/overlay.py build")
    if "2.7" in sides and not setup.peer_available():
        ui.info(f"no 2.7 side: {setup.venv(PEER)} is missing (tools/requirements/torch27-venv.txt)")
        sides.remove("2.7")
    pythonpath = ensure_hf_packages(setup, sides) if any(w in HF_WORKLOADS for w in workloads) else ""
    data = {"meta": {"reps": reps, "backend": backend, "batches": list(batches), "sweep_batches": list(sweep_batches),
                     "sides": sides, "workloads": list(workloads), "routes": list(routes), "command": command,
                     "stack_wheel": stack_wheel,
                     "machine": machine_facts() + ("; and stock torch==2.7.0" if "2.7" in sides else "")},
            "samples": [], "sweep": []}
    cells = [(w, r) for w in workloads for r in routes]
    total = reps * len(cells) * len(sides) + (len(routes) * len(sides) if sweep else 0)
    progress = ui.Progress(total, "first-backward benchmark")
    json_out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        tmp = json_out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(json_out)

    def sample(side: str, w: str, route: str, bs: Sequence[int]) -> dict:
        kind, env = SIDES[side]
        with tempfile.TemporaryDirectory(prefix="fca-first-") as tmp:
            env = {**env, "TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor"),  # cold every sample
                   "TORCH_EXTENSIONS_DIR": str(Path(tmp) / "extensions")}
            if w in HF_WORKLOADS:
                env["PYTHONPATH"] = pythonpath
            if kind == "overlay":
                env["PYTHONNOUSERSITE"] = "1"
            argv = worker_argv(setup, kind, w, route, "--backend", backend, "--batches", *map(str, bs))
            start = time.monotonic()
            got = answer_of(setup, argv, env)
        return {**got, "side": side, "workload": w, "route": route, "process_wall": time.monotonic() - start}

    if sweep:  # counts: one process per route and side
        for route in routes:
            for side in sides:
                data["sweep"].append(sample(side, SWEEP_WORKLOAD, route, sweep_batches))
                save()
                progress.advance(f"sweep {route} {side}")
    # cell by cell, so that a run stopped midway leaves whole cells; in a cell, `reps` turns of
    # every side, the order rotated every turn
    for w, route in cells:
        for turn in range(reps):
            for i, side in enumerate(rotated(sides, turn)):
                got = sample(side, w, route, batches)
                data["samples"].append({**got, "turn": turn, "position": i})
                save()
                progress.advance(f"{w} {route} turn {turn + 1} {side}"
                                 + (f" ({got['error'][:60]})" if "error" in got else ""))
    return data


def ensure_hf_packages(setup: Setup, sides: Sequence[str]) -> str:
    """transformers and its pure-Python dependencies (tools/requirements/models.txt), installed once with
    ``--no-deps`` outside the venvs (as ``bench.py models`` does: the venvs stay as the upstream tests
    use them); the PYTHONPATH that puts them in front.  Every side's venv is Python 3.11: one dir."""
    from . import models as bm

    python = venv_python(setup.venv("stock" if "2.6" in sides else "overlay"))
    site, _ = bm.site_dirs(setup.cache, bm.Side("any", python, "2.6"))
    bm.pip_target(python, site, ["-r", str(bm.REQUIREMENTS)], "transformers and its packages (tools/requirements/models.txt)",
                  setup.sh)
    return str(site)


def main(setup: Setup, args) -> str:
    """``bench.py first``: run, write the JSON and the markdown, return the markdown."""
    for w in args.workloads:
        if w not in WORKLOADS:
            raise ui.UserError(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
    out = args.out.resolve()
    json_out = (args.json or out.with_name(out.stem + "-samples.json")).resolve()
    if args.from_json:
        data = merge([json.loads(f.read_text()) for f in args.from_json])
    else:
        command = "python tools/bench.py first" + (f" --reps {args.reps}" if args.reps != 3 else "")
        if list(args.workloads) != list(WORKLOADS):
            command += " --workloads " + " ".join(args.workloads)
        if list(args.routes) != list(ROUTES):
            command += " --routes " + " ".join(args.routes)
        if args.backend != "aot_eager":
            command += f" --backend {args.backend}"
        if list(args.batches) != list(BATCHES):
            command += " --batches " + " ".join(map(str, args.batches))
        if list(args.sides) != list(SIDES):
            command += " --sides " + " ".join(args.sides)
        if args.no_sweep:
            command += " --no-sweep"
        if args.as_installed:
            command += " --as-installed"
        data = run(setup, args.reps, args.workloads, args.routes, args.sides, args.backend, json_out, args.batches,
                   not args.no_sweep, SWEEP_BATCHES, command, args.as_installed)
    text = render(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    ui.info(f"wrote {out}" + ("" if args.from_json else f" and {json_out}"))
    return text


