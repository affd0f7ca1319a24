"""``ca``: compiled-autograd workloads, stock venv vs overlay venv (and the peer, stock 2.7),
interleaved; the instruction counts (callgrind) of what happens once per process and of the
steady-state backward; the table of medians and ratios, and its plot."""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import statistics
from pathlib import Path
from typing import Sequence

from .. import ui
from .core import PEER, PEER_LABEL, Setup, ensure_overlay, ensure_stock_venv, overlay_stack_id
from .workloads import (INSTRUCTION_MODES, ca_sample, check_workloads, ensure_callgrind, instructions_sample,
                        served_in_turns, worker_env)

# what ``ca`` measures (its --modes): the timed modes, then the instruction counts (INSTRUCTION_MODES)
CA_MODES = ("capture", "first-aot_eager", "first-inductor", "recompiles", "steady",
            "instructions-capture", "instructions-aot_eager", "instructions-inductor", "instructions-steady")
PAIRED_MODES = {"capture": 20, "steady": 40}  # mode -> sample pairs per rep


def pairs_key(base: str) -> str:
    """Where the per-pair overlay/``base`` ratios of a paired mode are kept in the samples."""
    return "pairs" if base == "stock" else f"pairs-{base}"


def paired_sample(setup: Setup, workload: str, mode: str, pairs: int, first: str, envs: dict[str, dict[str, str]],
                  base: str = "stock") -> tuple[dict[str, dict], list[float]]:
    """The overlay's and ``base``'s (stock, or the peer) workers set up one after the other
    (``first`` first), then sampled in turns (``core.in_turns``): per venv the summary a one-shot
    worker gives, plus the overlay/``base`` ratio of each pair."""
    order = (first, "overlay" if first == base else base)
    ready, times, finals, errors = served_in_turns(setup, {k: (k, envs[k]) for k in order}, workload, mode, pairs)
    if errors:  # nothing to pair with: the caller samples the other alone
        return {k: {"error": e} for k, e in errors.items()}, []
    summaries = {}
    for kind in order:
        summary = {k: v for k, v in ready[kind].items() if k in ("first_seconds", "captures")}
        summary.update(seconds=statistics.median(times[kind]), samples=times[kind],
                       peak_rss_mb=finals[kind].get("peak_rss_mb", 0))
        summaries[kind] = summary
    return summaries, [o / s for s, o in zip(times[base], times["overlay"])]


class Steps:
    """What a ``ca`` run in ``out_dir`` has done, for ``--resume``: ``samples.json`` (the
    samples, rewritten after each step) and ``steps.json`` (the steps done, the stack the
    overlay was built from, and how many runs wrote them).  A step is a whole unit of the
    run (one instruction count; one timed sample of every venv; one paired sampling), so a
    run stopped midway keeps only whole steps and a resumed one repeats none."""

    def __init__(self, out_dir: Path, stack: str, resume: bool):
        self.samples_path, self.steps_path = out_dir / "samples.json", out_dir / "steps.json"
        self.stack = stack
        self.samples: dict[tuple[str, ...], list[dict]] = {}
        self.done: set[str] = set()
        self.run = 0
        out_dir.mkdir(parents=True, exist_ok=True)
        if not resume:
            return
        if self.steps_path.exists():
            steps = json.loads(self.steps_path.read_text())
            if steps["stack"] != stack:
                raise ui.UserError(f"{out_dir} holds samples of the stack {steps['stack']}, the overlay is "
                                   f"{stack}: rerun without --resume, or with another --out")
            self.done, self.run = set(steps["done"]), steps["runs"]
        if self.samples_path.exists():
            self.samples = {tuple(k.split("|")): v for k, v in json.loads(self.samples_path.read_text()).items()}
            if not self.steps_path.exists():  # a finished run of a tool without steps.json: its counts are whole
                self.done = {"|".join(k) for k in self.samples if k[1] in INSTRUCTION_MODES}

    def add(self, step: str, got: dict[tuple[str, ...], list[dict]]) -> None:
        """Record a whole step's samples and write both files (each replaced at once)."""
        for key, values in got.items():
            self.samples.setdefault(key, []).extend(values)
        self.done.add(step)
        for path, data in ((self.samples_path, {"|".join(k): v for k, v in self.samples.items()}),
                           (self.steps_path, {"stack": self.stack, "runs": self.run + 1, "done": sorted(self.done)})):
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1))
            tmp.replace(path)


def bench_ca(setup: Setup, reps: int, workloads: Sequence[str], modes: Sequence[str], out_dir: Path, jobs: int = 1,
             peer: bool = False, resume: bool = False) -> dict:
    """Stock vs overlay (and the peer, stock 2.7, with ``peer``), interleaved in one run
    (A B B A ...): the samples per (workload, mode, venv).

    ``capture`` and ``steady`` are sampled in pairs (``paired_sample``): the overlay with
    stock, and with the peer; their per-pair ratios are kept under (workload, mode,
    ``pairs_key(base)``).  With ``resume``, the steps an earlier run in ``out_dir`` did
    (``Steps``) are kept and not run again."""
    ensure_stock_venv(setup)
    ensure_overlay(setup)
    check_workloads(workloads)
    steps = Steps(out_dir, overlay_stack_id(setup), resume)
    # first-inductor samples are cold: a new run drops the Inductor caches an earlier run in
    # `out_dir` left, and a resumed run's are its own (a step stopped midway may have filled
    # the last one's)
    if not resume:
        shutil.rmtree(out_dir / "inductor", ignore_errors=True)
    tag = f"-run{steps.run}" if resume else ""
    kinds_all = ("stock", "overlay", PEER) if peer else ("stock", "overlay")
    bases = ("stock", PEER) if peer else ("stock",)
    instruction_modes = [m for m in modes if m in INSTRUCTION_MODES]
    paired = [m for m in modes if m in PAIRED_MODES]
    total = (reps * (len(modes) - len(instruction_modes)) + len(instruction_modes)) * len(workloads) * len(kinds_all)
    total += reps * len(paired) * len(workloads) * (len(bases) - 1)  # the overlay once more per extra base
    progress = ui.Progress(total, "ca benchmark")

    def kept(step: str, w: str, mode: str, kinds: Sequence[str]) -> bool:
        """Whether an earlier run did ``step`` (then its samples count as progress)."""
        if step not in steps.done:
            return False
        for kind in kinds:
            progress.advance(f"{w} {mode} {kind} (kept from {steps.samples_path.name})")
        return True

    # instruction counts first, `jobs` at a time: a count does not depend on the load
    # (the timed samples after them run one at a time)
    tasks = [(w, mode, kind) for w in workloads for mode in instruction_modes for kind in kinds_all
             if not kept(f"{w}|{mode}|{kind}", w, mode, (kind,))]
    if tasks:
        ensure_callgrind(setup)  # built once, not per thread
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(instructions_sample, setup, kind, w, mode, worker_env(setup, kind, f"0{tag}", out_dir),
                               out_dir): (w, mode, kind) for w, mode, kind in tasks}
        for future in concurrent.futures.as_completed(futures):
            w, mode, kind = futures[future]
            steps.add(f"{w}|{mode}|{kind}", {(w, mode, kind): [future.result()]})
            progress.advance(f"{w} {mode} {kind} (under valgrind)")
    for rep in range(reps):
        for w in workloads:
            for mode in modes:
                if mode in INSTRUCTION_MODES:
                    continue  # counted above
                kinds = kinds_all[rep % len(kinds_all):] + kinds_all[:rep % len(kinds_all)]  # each goes first in turn
                envs = {kind: worker_env(setup, kind, f"{rep}{tag}", out_dir) for kind in kinds_all}
                if mode in PAIRED_MODES:
                    for base in bases:
                        pair = ("overlay", base) if rep % 2 else (base, "overlay")
                        step = f"{rep}|{w}|{mode}|{base}"
                        if kept(step, w, mode, pair):
                            continue
                        summaries, ratios = paired_sample(setup, w, mode, PAIRED_MODES[mode], pair[0], envs, base)
                        got: dict[tuple[str, ...], list[dict]] = {}
                        for kind in pair:
                            if kind not in summaries:  # the other one failed: sampled on its own
                                summaries[kind] = ca_sample(setup, kind, w, mode, envs[kind])
                            got[(w, mode, kind)] = [summaries[kind]]
                            progress.advance(f"{w} {mode} {kind}" + (f" ({len(ratios)} paired samples)" if ratios else ""))
                        got[(w, mode, pairs_key(base))] = [{"seconds": r} for r in ratios]
                        steps.add(step, got)
                    continue
                step = f"{rep}|{w}|{mode}"
                if kept(step, w, mode, kinds):
                    continue
                got = {}
                for kind in kinds:
                    got[(w, mode, kind)] = [ca_sample(setup, kind, w, mode, envs[kind])]
                    progress.advance(f"{w} {mode} {kind}")
                steps.add(step, got)
    return steps.samples


def ratio_of(samples, workload: str, mode: str, key: str, base: str = "stock") -> tuple[float, str] | None:
    """overlay/``base`` for one metric: the median of the per-pair ratios where the metric was
    sampled in pairs (with their count and IQR), else the ratio of the medians (no note)."""
    pairs = [x["seconds"] for x in samples.get((workload, mode, pairs_key(base)), [])] if key == "seconds" else []
    if pairs:
        q = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0]] * 3
        return statistics.median(pairs), f"{len(pairs)} pairs, IQR {q[0]:.2f}-{q[2]:.2f}"
    s, _ = cell(samples, workload, mode, base, key)
    o, _ = cell(samples, workload, mode, "overlay", key)
    if s is None or o is None or not s:
        return None
    return o / s, ""


def metric_rows(mode: str) -> list[tuple[str, str]]:
    if mode == "recompiles":
        return [("captures_batch", "CA captures, batch sizes 4,8,16,8,32"), ("compiles_batch", "Dynamo compiles, batch sizes"),
                ("captures_stride", "CA captures, stride/offset-only changes"), ("compiles_stride", "Dynamo compiles, stride/offset-only")]
    if mode == "capture":
        return [("first_seconds", "CA capture, first in the process (s)"), ("seconds", "CA capture, repeated (s)"),
                ("captures", "CA captures per backward")]
    if mode in INSTRUCTION_MODES:
        label = {"instructions-capture": "CA capture, first in the process (instructions)",
                 "instructions-aot_eager": "first backward, aot_eager (instructions)",
                 "instructions-inductor": "first backward, inductor (instructions, g++ not counted)",
                 "instructions-steady": "steady-state backward, aot_eager (instructions per backward, 40 counted)"}[mode]
        return [("instructions", label)]
    label = {"first-aot_eager": "first backward, aot_eager (s)", "first-inductor": "first backward, inductor (s)",
             "steady": "steady-state backward (s)"}[mode]
    return [("seconds", label)]


def fmt(key: str):
    """How a metric's values are shown."""
    if key.endswith("seconds"):
        return lambda v: f"{v:.3f}"
    if key == "instructions":  # a steady-state backward is a few million: 4 digits either way
        return lambda v: f"{v / 1e6:.{3 if v < 1e7 else 1}f}M"
    return lambda v: f"{v:g}"


def ratio_digits(key: str) -> int:
    # a count repeats to 0.1-0.8%: a third digit says something; a one-shot time's does not
    return 3 if key == "instructions" else 2


def render_ca_table(samples, workloads, modes, reps, out_dir: Path) -> str:
    """Per workload and metric: stock and overlay medians and their ratio, then the peer's
    (stock 2.7) median and overlay/peer where the peer was run ("-" otherwise)."""
    lines = [f"| workload | metric | stock median | overlay median | ratio | {PEER_LABEL} median | overlay/{PEER_LABEL} "
             "| spread stock / overlay (min-max); paired ratios |",
             "|---|---|---|---|---|---|---|---|"]
    plot_rows = []
    for w in workloads:
        for mode in modes:
            for key, label in metric_rows(mode):
                cells = {}
                for kind in ("stock", "overlay", PEER):
                    vals = [s[key] for s in samples.get((w, mode, kind), []) if key in s]
                    errs = [s["error"] for s in samples.get((w, mode, kind), []) if "error" in s]
                    cells[kind] = (vals, errs)
                (sv, se), (ov, oe), (pv, pe) = cells["stock"], cells["overlay"], cells[PEER]
                shown = fmt(key)

                def median(vals, errs):
                    return shown(statistics.median(vals)) if vals else f"fails: {errs[0][:60]}" if errs else "-"

                r = ratio_of(samples, w, mode, key) if sv and ov else None
                ratio = f"{r[0]:.{ratio_digits(key)}f}" if r else "-"
                rp = ratio_of(samples, w, mode, key, PEER) if pv and ov else None
                ratio_peer = f"{rp[0]:.{ratio_digits(key)}f}" if rp else "-"
                spread = (f"{shown(min(sv))}-{shown(max(sv))} / {shown(min(ov))}-{shown(max(ov))}" if sv and ov else "-")
                if r and r[1]:
                    spread += f"; {r[1]}"
                if rp and rp[1]:
                    spread += f"; vs {PEER_LABEL}: {rp[1]}"
                lines.append(f"| {w} | {label} | {median(sv, se)} | {median(ov, oe)} | {ratio} | {median(pv, pe)} "
                             f"| {ratio_peer} | {spread} |")
                if key == "seconds" and sv and ov:
                    plot_rows.append((f"{w}\n{mode}", statistics.median(sv), statistics.median(ov)))
    rss = []
    for kind in ("stock", "overlay", PEER) if any(k[2] == PEER for k in samples) else ("stock", "overlay"):
        vals = [s["peak_rss_mb"] for k, v in samples.items() if k[2] == kind for s in v if "peak_rss_mb" in s]
        rss.append(f"{kind} {max(vals):.0f} MB" if vals else f"{kind} -")
    table = "\n".join(lines) + f"\n\nPeak RSS (max over workers): {', '.join(rss)}. {reps} interleaved reps per cell.\n"
    (out_dir / "ca.md").write_text(table)
    (out_dir / "ca.png").unlink(missing_ok=True)  # never a stale plot from an earlier run
    plot(plot_rows, out_dir / "ca.png")
    return table


def cell(samples, workload: str, mode: str, kind: str, key: str) -> tuple[float | None, str | None]:
    """(median of ``key`` over the samples, the kind of the first failure, e.g. "WrongGradients", or None)."""
    cell = samples.get((workload, mode, kind), [])
    vals = [x[key] for x in cell if key in x]
    errors = [x["error"].split(":", 1)[0] for x in cell if "error" in x]
    return (statistics.median(vals) if vals else None), (errors[0] if errors else None)


# Capture time is judged by paired samples (repeated captures) and, for what happens once
# per process (the first capture, the first backward), by instruction counts: one-shot
# timings here spread 10-40% within a cell, so a <= 1.00 verdict on 3 of them is decided
# by noise; the instructions of the same region are not.  The steady state is judged by
# its instruction count too: its paired-time median moved 0.03-0.04 between runs here, as
# much as the tolerance.  The times stay in the workloads table.
def plot(rows, path: Path) -> None:
    """A bar chart of stock's and the overlay's medians per (workload, mode) row, where matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        ui.info("matplotlib not installed (`pip install -e .`); skipping the plot")
        return
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.9), 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r[1] for r in rows], width=0.4, label="stock 2.6.0")
    ax.bar([x + 0.2 for x in xs], [r[2] for r in rows], width=0.4, label="overlay (stack)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in rows], fontsize=7)
    ax.set_ylabel("seconds (median)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)

