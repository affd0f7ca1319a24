"""``tools/bench.py first``: the first backward under compiled autograd, the way a user pays for it.

Stock 2.6, the stack (its default, and its opt-in dynamic first capture) and stock 2.7 side by side in one
run, cell by cell (a workload and a route), in turns: per turn one fresh interpreter per side
(tools/lib/bench_first.py), the order of the sides rotated every turn.  A sample is the first
backward at batch 4 and a second one at batch 8 (a new size), in process CPU time and wall time,
split into the backend's compile (the time inside the real backend, through a ``timed`` wrapper)
and CA's own (the rest: the capture, Dynamo's trace of the CA graph, running it).  Then, one
process per side and route, the CA captures and Dynamo compiles of the MLP over a batch-size sweep.

The rendering below (medians, spreads, ratios, the tables) is pure: the tests feed it hand-made
samples.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Iterable, Sequence

WORKER = Path(__file__).resolve().parent / "bench_first.py"
ROUTES = ("ca-compile", "ca-compile-dynamic", "config", "config-dynamic")
ROUTE_WHAT = {
    "ca-compile": "`compiled_autograd._enable(lambda gm: torch.compile(gm, backend=timed))` around an eager "
                  "forward + `loss.backward()`",
    "ca-compile-dynamic": "the same with `torch.compile(gm, backend=timed, dynamic=True)`",
    "config": "`torch._dynamo.config.compiled_autograd = True`; `torch.compile(train_step, backend=timed)` of "
              "forward + `loss.backward()`",
    "config-dynamic": "the same with `torch.compile(train_step, backend=timed, dynamic=True)`",
}
WORKLOADS = ("mlp16", "copyslices", "autograd_function", "compiled_forward", "twotensor", "hf_bert", "hf_gpt2", "hf_t5")
WORKLOAD_WHAT = {
    "mlp16": "16 x (Linear(64, 64) + ReLU)",
    "copyslices": "in place on views of a non-leaf (CopySlices)",
    "autograd_function": "a Python `autograd.Function`",
    "compiled_forward": "a `torch.compile`d submodule (its backward an AOT backward) between eager layers",
    "twotensor": "a `TwoTensor` parameter and input, eager forward",
    "hf_bert": "`BertForMaskedLM`, 2 layers, hidden 128, vocab 1000, seq 32",
    "hf_gpt2": "`GPT2LMHeadModel`, 2 layers, hidden 128, vocab 1000, seq 32",
    "hf_t5": "`T5ForConditionalGeneration`, 2+2 layers, d_model 128, vocab 1000, seq 32",
}
HF_WORKLOADS = tuple(w for w in WORKLOADS if w.startswith("hf_"))
# side label -> (venv kind for tools/bench.py's _in_venv, extra environment)
SIDES = {
    "2.6": ("stock", {}),
    "stack": ("overlay", {}),
    "stack-dynamic-first": ("overlay", {"FCA_BENCH_DYNAMIC_FIRST": "1"}),
    "2.7": ("torch27", {}),
}
BASE, STACK, PEER = "2.7", "stack", "2.6"  # the ratios: stack (and dynamic-first) over 2.7, and over 2.6
SWEEP_WORKLOAD = "mlp16"
SWEEP_BATCHES = (4, 8, 16, 32)
BATCHES = (4, 8)


# ---------------------------------------------------------------------------------- pure: numbers


def median_spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    if not values:
        raise ValueError("no values")
    return statistics.median(values), min(values), max(values)


def rotated(order: Sequence[str], turn: int) -> list[str]:
    """``order`` rotated left by ``turn``: each side goes first in turn."""
    k = turn % len(order) if order else 0
    return list(order[k:]) + list(order[:k])


def step_value(sample: dict, step: int, key: str) -> float | None:
    """A step's metric; ``own_cpu`` / ``own_wall`` is the total less the backend's; ``sum_<key>`` the
    sum over the sample's steps (whatever ``step``)."""
    steps = sample.get("steps") or []
    if key.startswith("sum_"):  # only a sample whose every step ran
        return sum(step_value(sample, i, key[4:]) for i in range(len(steps))) if steps and "error" not in sample else None
    if step >= len(steps):
        return None
    s = steps[step]
    if key.startswith("own_"):
        kind = key[4:]
        return s[kind] - s[f"backend_{kind}"]
    return s.get(key)


def cell(samples: Iterable[dict], workload: str, route: str, side: str) -> list[dict]:
    return [s for s in samples if s["workload"] == workload and s["route"] == route and s["side"] == side]


def values(samples: Iterable[dict], workload: str, route: str, side: str, step: int, key: str) -> list[float]:
    """A metric of a cell's samples that ran ``step`` (a sample that failed at a later step counts)."""
    got = (step_value(s, step, key) for s in cell(samples, workload, route, side))
    return [v for v in got if v is not None]


def failed_later(samples: Iterable[dict], workload: str, route: str, side: str, step: int) -> bool:
    """Whether a sample of the cell ran ``step`` and failed at a later one."""
    return any("error" in s and s.get("failed_step", 0) > step for s in cell(samples, workload, route, side))


def failure(samples: Iterable[dict], workload: str, route: str, side: str) -> str | None:
    """The first error of a cell's samples, shortened ("wrong grads" for wrong gradients), or None."""
    errors = [s["error"] for s in cell(samples, workload, route, side) if "error" in s]
    if not errors:
        return None
    if errors[0].startswith("WrongGradients"):
        return "wrong grads"
    return "fails: " + errors[0][:70].replace("|", "/")


def turn_ratios(samples: Sequence[dict], workload: str, route: str, num: str, den: str, step: int,
                key: str) -> list[float]:
    """num/den of the samples taken in the same turn: each turn's pair ran minutes apart at most."""
    by_turn: dict[int, dict[str, float]] = {}
    for side in (num, den):
        for s in cell(samples, workload, route, side):
            v = step_value(s, step, key)
            if v is not None:
                by_turn.setdefault(s.get("turn", 0), {})[side] = v
    return [d[num] / d[den] for _, d in sorted(by_turn.items()) if num in d and den in d and d[den] > 0]


def ratio(samples: Sequence[dict], workload: str, route: str, num: str, den: str, step: int = 0,
          key: str = "cpu") -> tuple[float, float, float] | None:
    """(ratio of the medians, min and max of the per-turn ratios), or None where a side has no value."""
    a, b = values(samples, workload, route, num, step, key), values(samples, workload, route, den, step, key)
    if not a or not b or statistics.median(b) <= 0:
        return None
    per_turn = turn_ratios(samples, workload, route, num, den, step, key) or [statistics.median(a) / statistics.median(b)]
    return statistics.median(a) / statistics.median(b), min(per_turn), max(per_turn)


# ---------------------------------------------------------------------------------- pure: rendering


def fmt_s(v: float) -> str:
    return f"{v:.3f}" if v < 10 else f"{v:.2f}"


def fmt_median(vals: Sequence[float]) -> str:
    """``median (min-max)``; one value alone; "-" for none."""
    if not vals:
        return "-"
    m, lo, hi = median_spread(vals)
    return fmt_s(m) if len(vals) == 1 else f"{fmt_s(m)} ({fmt_s(lo)}-{fmt_s(hi)})"


def fmt_ratio(r: tuple[float, float, float] | None, bold_above: float | None = None) -> str:
    if r is None:
        return "-"
    m, lo, hi = r
    text = f"{m:.2f}" if lo == hi == m else f"{m:.2f} ({lo:.2f}-{hi:.2f})"
    return f"**{text}**" if bold_above is not None and m > bold_above else text


def _shown(samples, w, route, side, step, key) -> str:
    """The cell's median (min-max); "*" where a sample failed at a later step; else why none."""
    vals = values(samples, w, route, side, step, key)
    if vals:
        return fmt_median(vals) + (" *" if failed_later(samples, w, route, side, step) else "")
    return failure(samples, w, route, side) or "-"


LATER_FAILED = "\\* the step at the new batch size failed there (the second backward's table says how)."


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right_from: int = 2) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < right_from else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _cells(samples: Sequence[dict]) -> list[tuple[str, str]]:
    """The (workload, route) cells sampled, in the built-in orders."""
    seen = {(s["workload"], s["route"]) for s in samples}
    ws = [w for w in WORKLOADS if any(k[0] == w for k in seen)] + sorted({w for w, _ in seen} - set(WORKLOADS))
    rs = [r for r in ROUTES if any(k[1] == r for k in seen)]
    return [(w, r) for w in ws for r in rs if (w, r) in seen]


def _sides(samples: Sequence[dict]) -> list[str]:
    got = {s["side"] for s in samples}
    return [s for s in SIDES if s in got] + sorted(got - set(SIDES))


def render_main(samples: Sequence[dict], key: str = "cpu", step: int = 0) -> list[str]:
    """Per workload x route: each side's median (min-max), stack / 2.7, dynamic-first / 2.7, stack / 2.6."""
    sides = _sides(samples)
    ratios = [(n, d) for n, d in ((STACK, BASE), ("stack-dynamic-first", BASE), (STACK, PEER))
              if n in sides and d in sides]
    header = ["workload", "route", *sides, *(f"{n} / {d}" for n, d in ratios)]
    rows = []
    for w, route in _cells(samples):
        rows.append([w, route, *(_shown(samples, w, route, s, step, key) for s in sides),
                     *(fmt_ratio(ratio(samples, w, route, n, d, step, key), bold_above=1.0 if d == BASE else None)
                       for n, d in ratios)])
    return _table(header, rows)


def render_split(samples: Sequence[dict], step: int = 0) -> list[str]:
    """Per workload x route and side: CA's own CPU (total - backend; the capture in brackets) and the
    backend's; then stack / 2.7 of each."""
    sides = _sides(samples)
    header = ["workload", "route", *(f"{s}: own (capture) / backend" for s in sides)]
    both = STACK in sides and BASE in sides
    if both:
        header += [f"own, {STACK} / {BASE}", f"backend, {STACK} / {BASE}"]
    rows = []
    for w, route in _cells(samples):
        row = [w, route]
        for s in sides:
            own, cap, be = (values(samples, w, route, s, step, k) for k in ("own_cpu", "capture_cpu", "backend_cpu"))
            if own:
                row.append(f"{fmt_s(statistics.median(own))} ({fmt_s(statistics.median(cap))}) / "
                           f"{fmt_s(statistics.median(be))}" + (" *" if failed_later(samples, w, route, s, step) else ""))
            else:
                row.append(failure(samples, w, route, s) or "-")
        if both:
            row += [fmt_ratio(ratio(samples, w, route, STACK, BASE, step, "own_cpu"), 1.0),
                    fmt_ratio(ratio(samples, w, route, STACK, BASE, step, "backend_cpu"), 1.0)]
        rows.append(row)
    return _table(header, rows)


def counts(samples: Sequence[dict], w: str, route: str, side: str, step: int = -1) -> str:
    """``captures / compiles`` after ``step`` (the last by default), the same in every sample, else
    each distinct one; a failure's text."""
    got = []
    for s in cell(samples, w, route, side):
        if "error" in s or not s.get("steps"):
            continue
        st = s["steps"][step]
        got.append(f"{st['captures']} / {st['compiles']}")
    if not got:
        return failure(samples, w, route, side) or "-"
    return ", ".join(dict.fromkeys(got))


def render_second(samples: Sequence[dict]) -> list[str]:
    """The second backward (a new batch size): CPU medians, stack / 2.7 of it and of both backwards
    together, and captures / compiles after both."""
    sides = _sides(samples)
    header = ["workload", "route", *(f"{s}: 2nd bw" for s in sides)]
    both = STACK in sides and BASE in sides
    if both:
        header += [f"2nd, {STACK} / {BASE}", f"1st + 2nd, {STACK} / {BASE}"]
    header += [f"{s}: captures / compiles" for s in sides]
    rows = []
    for w, route in _cells(samples):
        row = [w, route, *(_shown(samples, w, route, s, 1, "cpu") for s in sides)]
        if both:
            row += [fmt_ratio(ratio(samples, w, route, STACK, BASE, 1, "cpu"), 1.0),
                    fmt_ratio(ratio(samples, w, route, STACK, BASE, 0, "sum_cpu"), 1.0)]
        row += [counts(samples, w, route, s) for s in sides]
        rows.append(row)
    return _table(header, rows)


def render_steps(samples: Sequence[dict]) -> list[str]:
    """config routes: the whole first step (the forward's trace and compile, then the backward)."""
    cfg = [s for s in samples if s["route"].startswith("config")]
    if not cfg:
        return []
    sides = _sides(cfg)
    header = ["workload", "route", *sides]
    both = STACK in sides and BASE in sides
    if both:
        header.append(f"{STACK} / {BASE}")
    rows = []
    for w, route in _cells(cfg):
        row = [w, route, *(_shown(cfg, w, route, s, 0, "step_cpu") for s in sides)]
        if both:
            row.append(fmt_ratio(ratio(cfg, w, route, STACK, BASE, 0, "step_cpu"), 1.0))
        rows.append(row)
    return _table(header, rows)


def render_sweep(sweep: Sequence[dict], batches: Sequence[int] = SWEEP_BATCHES) -> list[str]:
    """CA captures / Dynamo compiles of the sweep workload, per route and side."""
    if not sweep:
        return []
    sides = _sides(sweep)
    rows = []
    for route in [r for r in ROUTES if any(s["route"] == r for s in sweep)]:
        rows.append([route, *(counts(sweep, sweep[0]["workload"], route, s) for s in sides)])
    return _table(["route", *sides], rows, right_from=1)


def slower_than_base(samples: Sequence[dict], side: str = STACK, step: int = 0, key: str = "cpu",
                     threshold: float = 1.0) -> list[str]:
    """One line per cell where ``side``'s median is above 2.7's (ratio above ``threshold``): by how
    much, and how much of the difference is CA's own and how much the backend's."""
    lines = []
    for w, route in _cells(samples):
        r = ratio(samples, w, route, side, BASE, step, key)
        if r is None or r[0] <= threshold:
            continue
        prefix = "sum_" if key.startswith("sum_") else ""
        kind = key.split("_")[-1]
        own, cap, be = (f"{prefix}{part}_{kind}" for part in ("own", "capture", "backend"))
        med = {(s, k): statistics.median(values(samples, w, route, s, step, k) or [0.0])
               for s in (side, BASE) for k in (key, own, cap, be)}
        d = {k: med[(side, k)] - med[(BASE, k)] for k in (key, own, cap, be)}
        lines.append(f"- {w}, {route}: {fmt_ratio(r)} ({fmt_s(med[(side, key)])} s vs {fmt_s(med[(BASE, key)])} s, "
                     f"{d[key] * 1e3:+.0f} ms: CA's own {d[own] * 1e3:+.0f} ms, of it the capture "
                     f"{d[cap] * 1e3:+.0f} ms; the backend {d[be] * 1e3:+.0f} ms)")
    return lines


def render(data: dict) -> str:
    """The markdown report of a run's JSON (``{"meta": ..., "samples": [...], "sweep": [...]}``)."""
    meta, samples, sweep = data.get("meta", {}), data.get("samples", []), data.get("sweep", [])
    reps = meta.get("reps", "?")
    backend = meta.get("backend", "aot_eager")
    lines = ["# First backward under compiled autograd: stock 2.6, the stack, stock 2.7", ""]
    if meta.get("machine"):
        lines += [f"Machine and date: {meta['machine']}." + (
            f" The stack's sides ran the patched wheel `torch=={meta['stack_wheel']}`." if meta.get("stack_wheel") else ""),
            ""]
    lines += [
        f"Command: `{meta.get('command', 'python tools/bench.py first')}`. Backend `{backend}`, wrapped in a "
        "`timed(gm, example_inputs)` that adds up the time spent inside it. Each sample is a fresh interpreter "
        "(`torch.set_num_threads(1)` before any work, Inductor compiling in the process) that runs one training "
        f"step at batch {meta.get('batches', BATCHES)[0]} and then one at batch {meta.get('batches', BATCHES)[-1]}; "
        f"per workload and route, {reps} turns of every side, the order of the sides rotated every turn. "
        "Process CPU time (`time.process_time()` and waited-for children), seconds: median (min-max) of the "
        "turns; a ratio is that of the medians, (min-max) of the ratios of the samples of one turn. A ratio "
        "above 1.00 against 2.7 is in bold.", "",
        "First backward = the first `loss.backward()` under compiled autograd: CA's capture, Dynamo's trace of "
        "the CA graph, the backend's compile of it, and running it. `ca-compile*` routes: the `loss.backward()` call. "
        "`config*` routes (Dynamo breaks the graph at `backward()`): from the forward's compiled graph's last "
        "return before CA's first capture (or first run of a captured graph) to the end of the step.", "",
        "Sides: **2.6** stock torch==2.6.0; **stack** the patch stack (overlay venv) at its defaults (a static "
        "first capture); **stack-dynamic-first** the stack with `torch._dynamo.config."
        "compiled_autograd_dynamic_first_capture = True` (the opt-in: one capture for every size); **2.7** stock torch==2.7.0. Routes:", "",
    ]
    lines += [f"- `{r}`: {ROUTE_WHAT[r]}" for r in ROUTES if any(s["route"] == r for s in samples + sweep)]
    lines += ["", "Workloads:", ""]
    lines += [f"- `{w}`: {WORKLOAD_WHAT.get(w, w)}" for w in WORKLOADS if any(s["workload"] == w for s in samples)]
    later = any("error" in s and s.get("failed_step", 0) > 0 for s in samples)
    legend = ["", LATER_FAILED] if later else []
    lines += ["", "## First backward, CPU seconds", ""] + render_main(samples, "cpu") + legend
    lines += ["", "## Where the stack's default first backward is slower than 2.7's (CPU)", ""]
    lines += slower_than_base(samples) or ["- nowhere"]
    opt_in = slower_than_base(samples, "stack-dynamic-first")
    if opt_in:
        lines += ["", "The stack with its opt-in dynamic first capture, where slower than 2.7's:", ""] + opt_in
    both = slower_than_base(samples, key="sum_cpu")
    lines += ["", "Both backwards together (the first, then one at a new batch size), where the stack's default is "
              "slower than 2.7's:", ""] + (both or ["- nowhere"])
    lines += ["", "## CA's own time and the backend's, first backward, CPU seconds (medians)", "",
              "own = the first backward less the time inside the backend: CA's capture (in brackets: "
              "`begin_capture` to `end_capture`'s return), Dynamo's trace of the CA graph, running it. "
              "backend = inside the real backend (AOTAutograd and the backend's compile).", ""]
    lines += render_split(samples) + legend
    lines += ["", "## First backward, wall seconds", ""] + render_main(samples, "wall") + legend
    lines += ["", "## Second backward (a new batch size), CPU seconds; CA captures / Dynamo compiles after both", "",
              "Dynamo compiles count the forward's graphs too on the `config*` routes.", ""]
    lines += render_second(samples)
    steps = render_steps(samples)
    if steps:
        lines += ["", "## `config*` routes: the whole first step (forward trace and compile, then the backward), "
                  "CPU seconds", ""] + steps
    if sweep:
        sb = meta.get("sweep_batches", SWEEP_BATCHES)
        lines += ["", f"## CA captures / Dynamo compiles, `{sweep[0]['workload']}` over batch sizes "
                  f"{', '.join(map(str, sb))} (one process per side and route)", ""] + render_sweep(sweep, sb)
    rss = {}
    for s in samples + sweep:
        if "peak_rss_mb" in s:
            rss[s["side"]] = max(rss.get(s["side"], 0.0), s["peak_rss_mb"])
    if rss:
        lines += ["", "Peak RSS (max over samples): " + ", ".join(f"{k} {v:.0f} MB" for k, v in rss.items()) + "."]
    enables = {s["side"]: s["enable"] for s in samples if "enable" in s}
    if enables:
        lines += ["", "Compiled autograd's context manager on each side: " +
                  "; ".join(f"{k} `{v}`" for k, v in enables.items()) + "."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------- running


def worker_argv(kind: str, *args: str) -> list[str]:
    """The worker in a side's venv.  The stack's is the overlay venv's own python, whose torch is the
    patched wheel (as ``bench.py models`` runs it): ``overlay.py run`` would refuse it once patches/
    differs from the stack the wheel was built from, and ``--as-installed`` measures it as it is."""
    from .. import bench
    from . import paths
    from .overlay.venv import venv_python

    if kind == "overlay":
        return [str(venv_python(paths.cache_dir() / "overlay" / "venv")), str(WORKER), *args]
    return bench._in_venv(kind, WORKER, *args)


def run(reps: int, workloads: Sequence[str], routes: Sequence[str], side_names: Sequence[str], backend: str,
        json_out: Path, batches: Sequence[int] = BATCHES, sweep: bool = True,
        sweep_batches: Sequence[int] = SWEEP_BATCHES, command: str = "", as_installed: bool = False) -> dict:
    """Sample every cell on every side, in turns; the sweep after the first turn.  The JSON of the
    run is rewritten to ``json_out`` after every sample.  The stack's sides run the patched wheel of
    the overlay venv: built for the current stack first (``bench._ensure_overlay``), unless
    ``as_installed``."""
    from .. import bench
    from . import paths, ui
    from .overlay.venv import ensure_venv, installed_torch_version
    from .shell import Shell

    cache = paths.cache_dir()
    sides = [s for s in SIDES if s in side_names]
    if "2.6" in sides:
        ensure_venv(cache / "venvs" / "stock", cache, Shell(verbose=False))
    stack_wheel = None
    if any(SIDES[s][0] == "overlay" for s in sides):
        if not as_installed:
            bench._ensure_overlay()
        stack_wheel = installed_torch_version(cache / "overlay" / "venv")
        if not stack_wheel or "+fca" not in stack_wheel:
            raise ui.UserError(f"{cache / 'overlay' / 'venv'} has torch {stack_wheel or '(none)'}, not a patched "
                               "wheel: python tools/overlay.py build")
    if "2.7" in sides and not bench.peer_available():
        ui.info(f"no 2.7 side: {cache / 'venvs' / bench.PEER} is missing (tools/requirements/torch27-venv.txt)")
        sides.remove("2.7")
    pythonpath = ensure_hf_packages(sides) if any(w in HF_WORKLOADS for w in workloads) else ""
    data = {"meta": {"reps": reps, "backend": backend, "batches": list(batches), "sweep_batches": list(sweep_batches),
                     "sides": sides, "workloads": list(workloads), "routes": list(routes), "command": command,
                     "stack_wheel": stack_wheel,
                     "machine": bench.machine_facts() + ("; and stock torch==2.7.0" if "2.7" in sides else "")},
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
            argv = worker_argv(kind, w, route, "--backend", backend, "--batches", *map(str, bs))
            start = time.monotonic()
            got = bench._answer_of(argv, env)
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


def merge(runs: Sequence[dict]) -> dict:
    """Several runs' JSON as one: their samples and sweeps, the first run's meta with the workloads,
    routes, commands and stack wheels of all."""
    if not runs:
        raise ValueError("no runs")
    meta = dict(runs[0].get("meta", {}))
    for key in ("workloads", "routes"):
        meta[key] = list(dict.fromkeys(x for r in runs for x in r.get("meta", {}).get(key, [])))
    meta["command"] = "`; `".join(dict.fromkeys(r.get("meta", {}).get("command", "") for r in runs if r.get("meta")))
    wheels = list(dict.fromkeys(r.get("meta", {}).get("stack_wheel") for r in runs if r.get("meta", {}).get("stack_wheel")))
    meta["stack_wheel"] = ", ".join(wheels) or None
    reps = list(dict.fromkeys(r.get("meta", {}).get("reps") for r in runs))
    meta["reps"] = reps[0] if len(reps) == 1 else "/".join(map(str, reps))
    return {"meta": meta, "samples": [s for r in runs for s in r.get("samples", [])],
            "sweep": [s for r in runs for s in r.get("sweep", [])]}


def ensure_hf_packages(sides: Sequence[str]) -> str:
    """transformers and its pure-Python dependencies (tools/requirements/models.txt), installed once with
    ``--no-deps`` outside the venvs (as ``bench.py models`` does: the venvs stay as the upstream tests
    use them); the PYTHONPATH that puts them in front.  Every side's venv is Python 3.11: one dir."""
    from . import bench_models as bm, paths
    from .overlay.venv import venv_python

    cache = paths.cache_dir()
    python = venv_python(cache / "venvs" / "stock") if "2.6" in sides else venv_python(cache / "overlay" / "venv")
    site, _ = bm.site_dirs(cache, bm.Side("any", python, "2.6"))
    bm.pip_target(python, site, ["-r", str(bm.REQUIREMENTS)], "transformers and its packages (tools/requirements/models.txt)")
    return str(site)


def main(args) -> str:
    """``bench.py first``: run, write the JSON and the markdown, return the markdown."""
    from . import ui

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
        data = run(args.reps, args.workloads, args.routes, args.sides, args.backend, json_out, args.batches,
                   not args.no_sweep, SWEEP_BATCHES, command, args.as_installed)
    text = render(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    ui.info(f"wrote {out}" + ("" if args.from_json else f" and {json_out}"))
    return text


def add_parser(sub, repo_root: Path) -> None:
    f = sub.add_parser("first", help="the first backward under compiled autograd, as a user pays for it: stock 2.6, "
                       "the stack (default and opt-in dynamic first capture), stock 2.7, in turns; CA's own time vs the backend's")
    f.add_argument("--reps", type=int, default=3, help="turns: samples per cell and side (default: %(default)s)")
    f.add_argument("--workloads", nargs="+", default=list(WORKLOADS), help="default: all (%(default)s)")
    f.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES, help="default: all")
    f.add_argument("--sides", nargs="+", default=list(SIDES), choices=list(SIDES),
                   help="default: all (2.7 where its venv exists: tools/requirements/torch27-venv.txt)")
    f.add_argument("--backend", default="aot_eager", choices=("aot_eager", "inductor"), help="default: %(default)s")
    f.add_argument("--batches", type=int, nargs="+", default=list(BATCHES),
                   help="the batch size of each step in a sample: the first backward, then new sizes (default: %(default)s)")
    f.add_argument("--as-installed", action="store_true",
                   help="measure the patched wheel installed in the overlay venv as it is, even where patches/ has "
                        "changed since it was built (the report names its stack); default: build it for the "
                        "current stack first, as `ca` does")
    f.add_argument("--no-sweep", action="store_true", help="leave out the captures / compiles over a batch-size sweep")
    f.add_argument("-o", "--out", type=Path, default=repo_root / "docs" / "results" / "bench-first-backward.md",
                   help="the markdown report (default: %(default)s)")
    f.add_argument("--json", type=Path, default=None,
                   help="the raw samples (default: beside --out, named <out>-samples.json)")
    f.add_argument("--from-json", type=Path, nargs="+", default=None, metavar="JSON",
                   help="run nothing: render the report of earlier runs' samples (several: merged)")
