"""Real models: the pinned tree's own ``benchmarks/dynamo`` harness with ``--compiled-autograd``,
run unchanged on stock torch 2.6, on the stack and on stock torch 2.7 (``tools/bench.py models``): the
harness's accuracy verdict and CA captures/compiles per model, backend and venv.

Data first: :data:`MODELS` (what runs), :class:`Side` (where), :class:`Outcome` (what the harness
said); then small functions that build the command, parse the harness's CSV and render the report.
The harness and its model code come from pip packages pinned in ``tools/requirements/models.txt``
(installed with ``--no-deps`` into ``<cache>/bench/models``, outside the venvs, so the venvs the
upstream tests use stay as they are); torchvision, the one that is built against torch, is
installed per torch version.  Nothing is downloaded from a model hub (tools/workers/models_driver.py).

Three modes (:data:`MODES`): ``accuracy`` and ``performance`` are the harness's own
(``--accuracy``, ``--performance``: its verdict; speedup over eager and compile latency, its
``compilation_latency``); ``sizes`` runs one training step per size of :func:`sizes_of` in one
process (the driver's ``--fca-sizes``) and reports CA captures and compiles and Dynamo graphs
after each step: what a new batch size or sequence length costs; ``sizes-dynamic`` is the same
with the harness's ``--dynamic-shapes`` (sizes dynamic from the first compile, as
``torch.compile(dynamic=True)``), so that no forward recompile forces a new backward;
``capture`` times compiled autograd's capture of the model's backward (the driver's
``--fca-capture``): the first in the process, then :data:`CAPTURE_STEPS` - 1 repeated ones, the
capture cache cleared before each.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Sequence

from .. import paths, ui
from ..shell import Shell, kill_group
from .core import PEER, Setup, WORKERS, ensure_overlay, ensure_stock_venv, machine_facts

REQUIREMENTS = paths.TOOLS_DIR / "requirements" / "models.txt"
DRIVER = WORKERS / "models_driver.py"
# torch minor version -> the torchvision release built against it
TORCHVISION = {"2.6": "0.21.0", "2.7": "0.22.0"}


@dataclasses.dataclass(frozen=True)
class Model:
    suite: str  # the harness script: huggingface | timm_models
    name: str  # the harness's model name (its --only)
    batch_size: int  # small enough for 2 cores
    what: str  # the kind of model it stands for
    short_seq: int | None = None  # HF: a second sequence length (the suite's default is the first)


MODELS: tuple[Model, ...] = (
    Model("huggingface", "DistilBertForMaskedLM", 2, "BERT-class encoder", 256),
    Model("huggingface", "DistillGPT2", 2, "GPT-2-class decoder", 256),
    Model("huggingface", "T5Small", 1, "T5 encoder-decoder", 512),
    Model("timm_models", "regnety_002", 2, "residual convnet with BatchNorm (RegNetY)"),
    Model("timm_models", "vit_base_patch16_224", 1, "ViT"),
    Model("timm_models", "lcnet_050", 2, "in-place hard-swish activations, depthwise convs"),
)


MODES = ("accuracy", "performance", "sizes", "sizes-dynamic", "capture")
# sizes mode: three batch sizes past 1 (a size of 1 is specialized by every torch), then, for a
# model with a sequence dim, the last batch size at its short sequence length
SIZES_BATCHES = (2, 3, 4)
# performance mode: the harness's --repeat (eager and compiled timed in turns), small for 2 cores
PERFORMANCE_REPEAT = 10
# capture mode: training steps per process, each backward captured anew (the first is the first
# capture in the process, the rest are repeated captures)
CAPTURE_STEPS = 6


def sizes_of(model: Model) -> list[tuple[int, int | None]]:
    """The sizes mode's steps: (batch, sequence length or None for the suite's default)."""
    steps: list[tuple[int, int | None]] = [(b, None) for b in SIZES_BATCHES]
    return steps + ([(SIZES_BATCHES[-1], model.short_seq)] if model.short_seq else [])


@dataclasses.dataclass(frozen=True)
class Side:
    label: str
    python: Path
    torch_minor: str  # "2.6" or "2.7": which torchvision goes with it


@dataclasses.dataclass(frozen=True)
class Outcome:
    model: str
    backend: str
    side: str
    verdict: str  # the harness's accuracy column (pass, fail_accuracy, eager_fail_to_run, ...) or how it died
    captures: int | None = None  # CA captures the harness counted
    compiles: int | None = None
    seconds: float = 0.0  # wall time of the whole harness process
    log: str = ""
    mode: str = "accuracy"  # one of MODES
    speedup: float | None = None  # performance: the harness's speedup over eager
    compile_s: float | None = None  # performance: the harness's compilation_latency
    # performance: of compile_s, the seconds spent waiting for Inductor's C++ kernel builds (g++), the
    # harness's ``async_compile.wait`` in its compilation metrics
    cpp_wait_s: float | None = None
    # sizes: per step {batch, seq, shape, error, ca_captures, ca_compiles, dynamo_graphs};
    # capture: per step {step, error, capture_s, ca_captures}
    steps: list | None = None

    @property
    def repeated_capture_s(self) -> list[float]:
        """capture: the repeated captures' seconds (every step but the first)."""
        return [st["capture_s"] for st in (self.steps or [])[1:] if st.get("capture_s") is not None]

    @property
    def repeated_capture_median_s(self) -> float | None:
        """capture: the median of the repeated captures' seconds."""
        reps = self.repeated_capture_s
        return statistics.median(reps) if reps else None

    @property
    def first_capture_s(self) -> float | None:
        """capture: the first capture's seconds in its process."""
        return (self.steps or [{}])[0].get("capture_s")

    @property
    def passed(self) -> bool:
        return self.verdict.startswith("pass") or (self.mode != "accuracy" and self.verdict == "ok")


def find_model(name: str) -> Model:
    for m in MODELS:
        if m.name == name:
            return m
    raise ui.UserError(f"unknown model {name!r}; choose from {', '.join(m.name for m in MODELS)}")


def harness_argv(side: Side, harness_dir: Path, model: Model, backend: str, csv_path: Path,
                 mode: str = "accuracy") -> list[str]:
    head = [str(side.python), str(DRIVER), str(harness_dir), model.suite]
    batch = model.batch_size
    if mode == "accuracy":
        flags = ["--training", "--accuracy"]
    elif mode == "performance":
        flags = ["--training", "--performance", "--repeat", str(PERFORMANCE_REPEAT)]
    elif mode == "capture":  # the driver's own experiment at the model's batch size
        head += ["--fca-capture", str(CAPTURE_STEPS)]
        flags = ["--training", "--performance"]
    else:  # sizes: the driver's own experiment; the harness loads the model at the first size
        steps = sizes_of(model)
        head += ["--fca-sizes", ",".join(f"{b}:{s}" if s else str(b) for b, s in steps)]
        flags, batch = ["--training", "--performance"], steps[0][0]
        if mode == "sizes-dynamic":
            flags.append("--dynamic-shapes")
    return head + flags + ["--device", "cpu", "--backend", backend, "--compiled-autograd", "--only", model.name,
                           "--batch-size", str(batch), "--output", str(csv_path)]


def parse_row(text: str, model: str) -> dict[str, str] | None:
    """The harness CSV's row for ``model`` (the last one, if a rerun appended), or None."""
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r.get("name") == model]
    return rows[-1] if rows else None


def _number(value: str | None, kind=int):
    """A CSV cell as ``kind`` (int or float), or None if empty or not a number."""
    try:
        return kind(value) if value not in (None, "") else None
    except ValueError:
        return None


def last_error(log: str) -> str:
    """The line that says why a harness process died: the last exception line of its output."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception", "Unsupported")) and " " not in head:
            return line[:200]
    return lines[-1][:200] if lines else "no output"


def outcome_of(model: Model, backend: str, side: Side, csv_text: str | None, log: str, code: int,
               seconds: float, timed_out: bool, mode: str = "accuracy", steps: list | None = None,
               metrics_csv: str | None = None) -> Outcome:
    """What one harness process said: its CSV row (accuracy, performance), the driver's steps (sizes),
    or how it died."""
    if (mode.startswith("sizes") or mode == "capture") and steps:  # the driver's steps (capture: no compiles)
        errors = [s["error"] for s in steps if s.get("error")]
        return Outcome(model.name, backend, side.label, f"fail: {errors[0]}" if errors else "ok",
                       steps[-1]["ca_captures"], steps[-1].get("ca_compiles"), seconds, log, mode, steps=steps)
    row = parse_row(csv_text, model.name) if csv_text and mode in ("accuracy", "performance") else None
    if row is not None and mode == "performance":
        speedup = _number(row.get("speedup"), float)
        # the harness's <output>_compilation_metrics.csv: Dynamo's compile times, summed, per model
        metrics = parse_row(metrics_csv, model.name) if metrics_csv else None
        cpp_wait = _number(metrics.get("async_compile.wait"), float) if metrics else None
        return Outcome(model.name, backend, side.label, "ok" if speedup else f"fail: {last_error(log)}",
                       _number(row.get("autograd_captures")), _number(row.get("autograd_compiles")), seconds, log, mode,
                       speedup or None, _number(row.get("compilation_latency"), float), cpp_wait)
    if row is not None:
        return Outcome(model.name, backend, side.label, row.get("accuracy", "?"), _number(row.get("autograd_captures")),
                       _number(row.get("autograd_compiles")), seconds, log, mode)
    verdict = "timeout" if timed_out else f"crash (exit {code}): {last_error(log)}"
    return Outcome(model.name, backend, side.label, verdict, None, None, seconds, log, mode)


def site_dirs(cache: Path, side: Side) -> tuple[Path, Path]:
    """(the torch-independent packages, torchvision for the side's torch), per Python version."""
    from ..overlay.venv import interpreter_facts

    base = cache / "bench" / "models" / f"py{interpreter_facts(str(side.python))['version']}"
    return base / "site", base / f"torchvision-{TORCHVISION[side.torch_minor]}"


def pip_target(python: Path, target: Path, args: Sequence[str], what: str, sh: Shell) -> None:
    """``pip install --no-deps --target`` of ``args`` with ``python``, once: a stamp records what is in
    ``target``, and a failed install leaves no partial dir behind."""
    stamp = target / ".fca-installed"
    # what is asked for, a requirements file by its content: the same pins from another
    # checkout (a CI clone) are the same install
    want = " ".join(Path(a).read_text() if i and args[i - 1] == "-r" else a for i, a in enumerate(args))
    if stamp.is_file() and stamp.read_text() == want:
        return
    ui.info(f"installing {what} into {target} (no deps, once)")
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    res = sh.run(str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                 "--target", str(tmp), *args, check=False)
    if res.returncode != 0:
        raise ui.UserError(f"pip could not install {what} ({res.stderr.strip().splitlines()[-1:]}); "
                           "check the package index, then rerun")
    (tmp / ".fca-installed").write_text(want)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def ensure_packages(cache: Path, side: Side, sh: Shell) -> str:
    """Install what the harness needs for ``side``; the PYTHONPATH that puts it in front."""
    site, tv = site_dirs(cache, side)
    pip_target(side.python, site, ["-r", str(REQUIREMENTS)], "the harness's packages (tools/requirements/models.txt)", sh)
    pip_target(side.python, tv, [f"torchvision=={TORCHVISION[side.torch_minor]}"], f"torchvision for torch {side.torch_minor}",
               sh)
    return os.pathsep.join([str(site), str(tv)])


def run_one(side: Side, harness_dir: Path, model: Model, backend: str, out_dir: Path, pythonpath: str,
            timeout: float, sh: Shell, mode: str = "accuracy") -> Outcome:
    run_dir = out_dir / side.label.replace(" ", "-") / (f"{model.name}-{backend}" + ("" if mode == "accuracy" else f"-{mode}"))
    run_dir.mkdir(parents=True, exist_ok=True)
    csv_path, steps_path = run_dir / "result.csv", run_dir / "sizes.json"
    metrics_path = run_dir / "result_compilation_metrics.csv"  # the harness names it after --output
    for path in (csv_path, steps_path, metrics_path):
        path.unlink(missing_ok=True)
    # cold compiles every run: a warm FX graph / Inductor cache from an earlier run would make the
    # harness's compilation latency a cache lookup
    shutil.rmtree(run_dir / "inductor", ignore_errors=True)
    env = dict(PYTHONPATH=pythonpath, TORCHINDUCTOR_CACHE_DIR=str(run_dir / "inductor"),
               TORCH_EXTENSIONS_DIR=str(run_dir / "extensions"), PYTHONUNBUFFERED="1", FCA_SIZES_OUT=str(steps_path))
    start = time.monotonic()
    timed_out = False
    proc = sh.start(*harness_argv(side, harness_dir, model, backend, csv_path, mode), output=run_dir / "harness.log",
                    cwd=harness_dir, env=env, unset=["LD_PRELOAD"])
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        code = proc.wait()
    seconds = time.monotonic() - start
    text = (run_dir / "harness.log").read_text(errors="replace")
    steps = json.loads(steps_path.read_text()) if steps_path.exists() else None
    return outcome_of(model, backend, side, csv_path.read_text() if csv_path.exists() else None, text, code,
                      seconds, timed_out, mode, steps, metrics_path.read_text() if metrics_path.exists() else None)


def _cell(o: Outcome | None) -> str:
    if o is None:
        return ""
    verdict = o.verdict if len(o.verdict) <= 100 else o.verdict[:99] + "…"
    verdict = verdict.replace("|", "/")
    if o.mode == "performance" and o.speedup is not None:
        cpp = f" (C++ {o.cpp_wait_s:.0f} s)" if o.cpp_wait_s is not None else ""
        compile_s = f", compile {o.compile_s:.0f} s{cpp}" if o.compile_s is not None else ""
        return f"{o.speedup:.2f}x{compile_s} ({o.captures}/{o.compiles})"
    if o.mode == "capture" and o.steps:
        reps = sorted(o.repeated_capture_s)
        first = f"first {o.first_capture_s * 1000:.0f} ms" if o.first_capture_s is not None else "first -"
        repeated = (f"repeated {o.repeated_capture_median_s * 1000:.0f} ms ({reps[0] * 1000:.0f}-{reps[-1] * 1000:.0f})"
                    if reps else "repeated -")
        cell = f"{first}; {repeated} ({o.captures} captures)"
        return cell if o.verdict == "ok" else f"{verdict}; {cell}"
    if o.mode.startswith("sizes") and o.steps:
        arrow = " → ".join
        cell = (f"CA captures {arrow(str(s['ca_captures']) for s in o.steps)}; "
                f"Dynamo graphs {arrow(str(s['dynamo_graphs']) for s in o.steps)}")
        return cell if o.verdict == "ok" else f"{verdict}; {cell}"
    counts = f" ({o.captures}/{o.compiles})" if o.captures is not None else ""
    return f"{verdict}{counts}, {o.seconds:.0f} s"


def load_outcomes(paths_: Sequence[Path]) -> list[Outcome]:
    """Outcomes saved by earlier runs (``outcomes.json``); a later file's cell replaces an earlier one's."""
    by: dict[tuple[str, str, str, str], Outcome] = {}
    for path in paths_:
        try:
            items = json.loads(Path(path).read_text())
            outcomes = [Outcome(**item) for item in items]
        except (OSError, ValueError, TypeError) as e:
            raise ui.UserError(f"{path}: not an outcomes.json of bench.py models ({e})") from None
        for o in outcomes:
            by[(o.model, o.backend, o.side, o.mode)] = o
    return list(by.values())


def _sizes_label(m: Model) -> str:
    steps = sizes_of(m)
    return " → ".join(f"bs {b}" + (f" seq {s}" if s else "") for b, s in steps)


def render(outcomes: Sequence[Outcome], models: Sequence[Model], backends: Sequence[str], sides: Sequence[str]) -> str:
    """The report, one section per mode that has outcomes: per model x backend, each side's cell;
    pass counts per side and backend; the targets judged from the same run."""
    sections = []
    for mode in MODES:
        mine = [o for o in outcomes if o.mode == mode]
        if mine:
            sections.append(_render_mode(mode, mine, models, backends, sides))
    return "\n\n".join(sections)


_MODE_TITLES = {
    "accuracy": "### Accuracy (`--training --accuracy`): the harness's verdict (CA captures/compiles), wall time",
    "performance": (f"### Performance (`--training --performance --repeat {PERFORMANCE_REPEAT}`): speedup over eager, "
                    "the harness's compilation latency (five compiled training steps, the first compiling, minus five eager ones; in brackets the part "
                    "spent waiting for Inductor's C++ kernel builds), (CA captures/compiles)"),
    "sizes": ("### Sizes: one process, one training step per size (batch sizes, then a shorter sequence for HF); "
              "counts after each step (the forward compiled the harness's way, the backward under compiled autograd "
              "with `torch.compile` at its defaults)"),
    "sizes-dynamic": ("### Sizes, dynamic from the start: as above, with the harness's `--dynamic-shapes` (sizes "
                      "dynamic from the first compile, as `torch.compile(dynamic=True)`)"),
    "capture": (f"### Capture: compiled autograd's capture of the backward, from `backward()` to the compiler (the "
                f"identity), {CAPTURE_STEPS} training steps in one process, the capture cache cleared before each "
                "after the first: the first capture in the process; the repeated ones' median (min-max)"),
}


def _render_mode(mode: str, outcomes: Sequence[Outcome], models: Sequence[Model], backends: Sequence[str],
                 sides: Sequence[str]) -> str:
    by = {(o.model, o.backend, o.side): o for o in outcomes}
    models = [m for m in models if any(o.model == m.name for o in outcomes)]
    backends = [b for b in backends if any(o.backend == b for o in outcomes)]
    lines = [_MODE_TITLES[mode], "", "| model | kind | backend | " + " | ".join(sides) + " |",
             "|---|---|---|" + "---|" * len(sides)]
    for m in models:
        size = _sizes_label(m) if mode.startswith("sizes") else f"bs {m.batch_size}"
        for b in backends:
            lines.append(f"| {m.name} ({size}) | {m.what} | {b} | "
                         + " | ".join(_cell(by.get((m.name, b, s))) for s in sides) + " |")
    lines += ["", "| passed | " + " | ".join(sides) + " |", "|---|" + "---:|" * len(sides)]
    counts = {(b, s): sum(1 for m in models if (o := by.get((m.name, b, s))) and o.passed) for b in backends for s in sides}
    for b in backends:
        lines.append(f"| {b} | " + " | ".join(f"{counts[(b, s)]}/{len(models)}" for s in sides) + " |")
    if "stack" not in sides:
        return "\n".join(lines)
    peers = [s for s in sides if s != "stack"]
    lines.append("")
    for b in backends:
        best = max((counts[(b, s)] for s in peers), default=0)
        ok = counts[(b, "stack")] >= best
        lines.append(f"- {b}: the stack passes {counts[(b, 'stack')]}, the best peer {best}: "
                     f"{'met' if ok else 'NOT met'} (target: at least as many as each peer)")
        regressions = [m.name for m in models
                       if (s := by.get((m.name, b, "stock 2.6"))) and s.passed
                       and not ((o := by.get((m.name, b, "stack"))) and o.passed)]
        if regressions:
            lines.append(f"- {b}: REGRESSION, passes on stock 2.6 but not on the stack: {', '.join(regressions)}")
        more = [m.name for m in models
                if (s := by.get((m.name, b, "stock 2.6"))) and (o := by.get((m.name, b, "stack")))
                and s.captures is not None and o.captures is not None and o.captures > s.captures]
        if mode != "capture":  # there every step is a capture, on purpose
            lines.append(f"- {b}: CA captures above stock 2.6's: {', '.join(more) if more else 'none'}")
        elif any(by.get((m.name, b, "stock 2.7")) for m in models):
            for what, seconds in (("first capture", lambda o: o.first_capture_s),
                                  ("repeated capture (median)", lambda o: o.repeated_capture_median_s)):
                slower = _above_2_7(models, b, by, seconds)
                lines.append(f"- {b}: {what} above 2.7's: {', '.join(slower) if slower else 'none'} (target: none)")
        if mode == "performance" and any(by.get((m.name, b, "stock 2.7")) for m in models):
            slower = _above_2_7(models, b, by, lambda o: o.compile_s)
            lines.append(f"- {b}: compile latency above 2.7's: {', '.join(slower) if slower else 'none'} "
                         "(target: none; one process per cell, so a few % is noise)")
            rest = _above_2_7(models, b, by, lambda o: None if None in (o.compile_s, o.cpp_wait_s)
                              else o.compile_s - o.cpp_wait_s)
            lines.append(f"- {b}: the same less the C++ kernel builds: {', '.join(rest) if rest else 'none'}")
    return "\n".join(lines)


def _above_2_7(models: Sequence[Model], backend: str, by: dict, seconds) -> list[str]:
    """The models whose ``seconds(outcome)`` on the stack is above stock 2.7's (both known)."""
    above = []
    for m in models:
        peer, mine = by.get((m.name, backend, "stock 2.7")), by.get((m.name, backend, "stack"))
        if peer and mine and None not in (seconds(peer), seconds(mine)) and seconds(mine) > seconds(peer):
            above.append(m.name)
    return above


def run(setup: Setup, sides: Sequence[Side], models: Sequence[Model], backends: Sequence[str], harness_dir: Path,
        out_dir: Path, timeout: float, modes: Sequence[str] = ("accuracy",)) -> list[Outcome]:
    """Every model x backend x mode on every side, the sides in turns per model (a noisy stretch of the
    machine hits them alike); prints each verdict as it comes."""
    pythonpaths = {s.label: ensure_packages(setup.cache, s, setup.sh) for s in sides}
    progress = ui.Progress(len(models) * len(backends) * len(sides) * len(modes), "models")
    outcomes = []
    for m in models:
        for mode in modes:
            for b in backends:
                for s in sides:
                    o = run_one(s, harness_dir, m, b, out_dir, pythonpaths[s.label], timeout, setup.sh, mode)
                    outcomes.append(o)
                    progress.advance(f"{m.name} {mode} {b} {s.label}: {_cell(o)}")
    return outcomes



BACKENDS = ("aot_eager", "inductor")
SIDES = ("stock-2.6", "stack", "stock-2.7")  # the --sides choices


def bench_models(setup: Setup, names: Sequence[str] | None, backends: Sequence[str], side_names: Sequence[str] | None,
                 out_dir: Path, timeout: float, modes: Sequence[str] = ("accuracy",)) -> str:
    """``models``: the harness on each side; the markdown report (and ``out_dir/outcomes.json``)."""
    from ..overlay.venv import venv_python
    from ..pinned_source import ensure_pinned_source

    models = [find_model(n) for n in names] if names else list(MODELS)
    wanted = side_names or SIDES
    sides = []
    if "stock-2.6" in wanted:
        ensure_stock_venv(setup)
        sides.append(Side("stock 2.6", venv_python(setup.venv("stock")), "2.6"))
    if "stack" in wanted:
        ensure_overlay(setup)
        sides.append(Side("stack", venv_python(setup.venv("overlay")), "2.6"))
    peer = venv_python(setup.venv(PEER))
    if "stock-2.7" in wanted:
        if peer.exists():
            sides.append(Side("stock 2.7", peer, "2.7"))
        elif side_names:
            raise ui.UserError(f"{peer} is missing; make it as tools/requirements/torch27-venv.txt says, then rerun")
        else:
            ui.info(f"no stock 2.7 column: {peer} is missing (tools/requirements/torch27-venv.txt says how to make it)")
    tree = ensure_pinned_source(setup.cache, setup.sh)
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes = run(setup, sides, models, backends, tree / "benchmarks" / "dynamo", out_dir, timeout, modes)
    (out_dir / "outcomes.json").write_text(json.dumps([dataclasses.asdict(o) | {"log": ""} for o in outcomes], indent=1))
    return _header() + render(outcomes, models, backends, [s.label for s in sides])


def _header() -> str:
    return ("Harness: the pinned tree's benchmarks/dynamo, `--training --device cpu --compiled-autograd`, "
            f"one process per cell.\n{machine_facts()}\n\n")


def render_models(files: Sequence[Path]) -> str:
    """``models --from-outcomes``: the report of earlier runs, in the built-in order of models, backends, sides."""
    outcomes = load_outcomes(files)
    names = {o.model for o in outcomes}
    models = [m for m in MODELS if m.name in names] + [find_model(n) for n in sorted(names - {m.name for m in MODELS})]
    backends = [b for b in BACKENDS if any(o.backend == b for o in outcomes)]
    sides = [s for s in ("stock 2.6", "stack", "stock 2.7") if any(o.side == s for o in outcomes)]
    return _header() + render(outcomes, models, backends, sides)
