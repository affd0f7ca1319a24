"""``tools/bench.py first``, its report: the data of a run (routes, workloads, sides) and the pure
functions from a run's samples to the markdown (medians, spreads, per-turn ratios, the tables),
and several runs merged into one.  The tests feed them hand-made samples; tools/lib/bench/first.py
takes the samples.
"""

from __future__ import annotations

import statistics
from typing import Iterable, Sequence

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
# side label -> (venv kind for core.in_venv, extra environment)
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


