"""The core every benchmark shares: where a run finds its venvs (:class:`Setup`), the overlay built
for the current stack, running a worker script in a venv and reading its JSON answer (one-shot, or
served and sampled in turns), timing tables, and the machine's facts."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .. import paths, ui
from ..shell import Shell, kill_group
from ..stack import Stack

# the scripts that run inside a torch venv (torch and the standard library), by path
WORKERS = paths.TOOLS_DIR / "workers"
# stock torch==2.7.0, the peer: a third venv where it exists (tools/requirements/torch27-venv.txt says how)
PEER = "torch27"
PEER_LABEL = "2.7"
SETTLE_S = 0.02  # idle gap before each sample: the other worker's OpenMP threads stop spinning


@dataclasses.dataclass(frozen=True)
class Setup:
    """What a benchmark run works in: the cache dir (venvs, the overlay, the pinned source) and the
    Shell that runs its commands."""

    cache: Path
    sh: Shell

    @property
    def overlay_dir(self) -> Path:
        return self.cache / "overlay"

    def venv(self, kind: str) -> Path:
        """The venv of a side: ``stock`` (2.6), ``torch27`` (the peer) or ``overlay`` (the stack)."""
        return self.overlay_dir / "venv" if kind == "overlay" else self.cache / "venvs" / kind

    def peer_available(self) -> bool:
        return (self.venv(PEER) / "bin" / "python").exists()


def in_venv(setup: Setup, venv_kind: str, script: Path, *args: str) -> list[str]:
    """argv running ``script`` with the python of the stock 2.6, the 2.7 or the setup's overlay venv
    (whose torch is the stack's wheel, built and installed by :func:`ensure_overlay`); an overlay
    worker runs in :func:`venv_env`'s environment, as ``overlay.py run`` would run it."""
    from ..overlay.venv import venv_python

    return [str(venv_python(setup.venv(venv_kind))), str(script), *args]


def venv_env(setup: Setup, venv_kind: str) -> dict[str, str]:
    """The environment a worker in the venv gets on top of the caller's: for the overlay venv, what
    ``overlay.py run`` gives a command (PATH, no user site, the stack's C++ extensions dir)."""
    if venv_kind != "overlay":
        return {}
    from ..overlay import install

    return install.run_env(setup.overlay_dir, setup.venv("overlay"), overlay_stack_id(setup))


def last_answer(output: str, code: int, how: str = "") -> dict:
    """A worker's answer: the last JSON line of its output, or ``{"error": ...}`` (with the last other
    line) when it exited non-zero or printed none; ``how`` says how it ran (" under valgrind")."""
    lines = output.splitlines()
    answers = [line for line in lines if line.startswith("{")]
    if code != 0 or not answers:
        said = [line for line in lines if line.strip() and not line.startswith("{")]
        return {"error": f"worker exit {code}{how}: {(said or [''])[-1].strip()[:200]}"}
    return json.loads(answers[-1])


def answer_of(setup: Setup, argv: list[str], env: dict[str, str] | None = None, timeout: float = 1800,
              how: str = "") -> dict:
    """Run a worker to its end (a job of its own, its output to a file; after ``timeout`` seconds, or
    when the run is interrupted, it and its children are stopped and the error raised); its answer
    (:func:`last_answer`)."""
    with tempfile.TemporaryDirectory(prefix="fca-worker-") as tmp:
        log = Path(tmp) / "worker.log"
        proc = setup.sh.start(*argv, output=log, env=env)
        try:
            code = proc.wait(timeout=timeout)
        except BaseException:  # subprocess.TimeoutExpired, KeyboardInterrupt: no worker left behind
            kill_group(proc)
            raise
        return last_answer(log.read_text(errors="replace"), code, how)


class Worker:
    """A worker started with ``--serve``: one JSON answer per request line."""

    def __init__(self, setup: Setup, argv: list[str], env: dict[str, str]):
        self.stderr = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a chatty worker never blocks on it
        self.proc = setup.sh.spawn(*argv, stderr=self.stderr, env=env)

    def answer(self) -> dict:
        while line := self.proc.stdout.readline():
            if line.startswith("{"):
                return json.loads(line)
        code = self.proc.wait()
        self.stderr.seek(0)
        err = self.stderr.read().strip().splitlines()
        return {"error": f"worker exit {code}: {(err or [''])[-1][:200]}"}

    def ask(self, request: str) -> dict:
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def close(self) -> dict:
        self.proc.stdin.close()
        last = self.answer()
        self.proc.wait(timeout=120)
        self.stderr.close()
        return last


def in_turns(setup: Setup, sides: dict[str, tuple[list[str], dict[str, str]]], pairs: int):
    """Two ``--serve`` workers, one per side (label -> (argv, env)), set up one after the other in
    the dict's order, then sampled in turns, the order flipping every pair.  Returns (ready answers,
    times, final answers, errors); errors maps a side to its error (a failed setup: the sides that
    failed; a failed sample: that side), and then nothing else is meaningful."""
    order = tuple(sides)
    workers, ready = {}, {}
    try:
        for side in order:  # one at a time: a first capture is timed during setup
            workers[side] = Worker(setup, *sides[side])
            ready[side] = workers[side].answer()
        if any("error" in r for r in ready.values()):
            return ready, {}, {}, {k: r["error"] for k, r in ready.items() if "error" in r}
        times: dict[str, list[float]] = {k: [] for k in order}
        for i in range(pairs):
            for side in (order if i % 2 == 0 else order[::-1]):
                time.sleep(SETTLE_S)
                got = workers[side].ask("sample")
                if "error" in got or "seconds" not in got:
                    return ready, times, {}, {side: got.get("error", "no sample")}
                times[side].append(got["seconds"])
        finals = {k: w.close() for k, w in workers.items()}
    finally:
        for w in workers.values():
            if w.proc.poll() is None:
                w.proc.kill()
    return ready, times, finals, {}


def ensure_overlay(setup: Setup) -> None:
    """The default overlay, built for the current stack, so that a benchmark works from a fresh
    clone: when it is not the build of patches/, apply the stack to the pinned source and build and
    install the overlay (first time ~5 min: the venv and the wheel download, then the compile), as
    ``apply_patches.py`` and ``overlay.py build`` do, showing their progress."""
    from ..apply import apply_stack
    from ..overlay import build as ob, install, package
    from ..pinned_source import ensure_pinned_source

    if ob.stale_reason(setup.overlay_dir, paths.DEFAULT_STACK_DIR) is None:
        return
    ui.info("the overlay is not built for the current stack: applying the stack and building it")
    sh = Shell()  # the setup's steps are shown as the tools would show them
    tree = ensure_pinned_source(setup.cache, sh)
    ui.info(apply_stack(tree, Stack.load(paths.DEFAULT_STACK_DIR), sh))
    with ob.locked(setup.overlay_dir, "overlay build"):
        built = ob.build(ob.Options(overlay_dir=setup.overlay_dir, venv=setup.venv("overlay"), cache=setup.cache,
                                    torch_src=tree))
        made = package.make(built, setup.overlay_dir / "wheel" / "dist", prune=True)
        install.install(setup.venv("overlay"), made.path, setup.overlay_dir / "state", built.prepared.sh)


def overlay_stack_id(setup: Setup) -> str:
    """The stack the built overlay is of (its build stamp)."""
    from ..overlay import build as ob

    return json.loads((setup.overlay_dir / ob.STAMP_JSON).read_text())["stack"]


def ensure_stock_venv(setup: Setup) -> None:
    from ..overlay.venv import ensure_venv

    ensure_venv(setup.venv("stock"), setup.cache, setup.sh)


def clone(sh: Shell, src: Path, dest: Path) -> None:
    """A clone of the pinned source at the pin, sharing its objects."""
    sh.git("clone", "-q", "--shared", "--no-checkout", str(src), str(dest))
    sh.git("-C", str(dest), "checkout", "-q", "-B", "main", "v2.6.0")


def tool(sh: Shell, name: str, *args: str | Path) -> None:
    """``python tools/<name>.py -q ARGS`` as a user runs it (what a benchmark times)."""
    sh.run(sys.executable, str(paths.TOOLS_DIR / f"{name}.py"), "-q", *map(str, args))


def timed(timings: dict[str, list[float]], label: str, fn: Callable[[], object]) -> object:
    """Run ``fn``, adding its wall time to ``timings[label]``; its result."""
    start = time.perf_counter()
    got = fn()
    timings.setdefault(label, []).append(time.perf_counter() - start)
    return got


def timing_table(title: str, timings: dict[str, list[float]], digits: int) -> str:
    """A markdown table of the median, min and max of each label's times (label -> seconds of each
    repetition, in the order first run)."""
    lines = [f"| {title} | median | min | max |", "|---|---|---|---|"]
    for label, values in timings.items():
        lines.append(f"| {label} | {statistics.median(values):.{digits}f} s | {min(values):.{digits}f} s "
                     f"| {max(values):.{digits}f} s |")
    return "\n".join(lines)


def spread(xs: list[float]) -> str:
    """``median (IQR q1-q3, n=N)``."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"{statistics.median(xs):.3f} (IQR {q[0]:.3f}-{q[2]:.3f}, n={len(xs)})"


def machine_facts() -> str:
    """The date, the cores, the CPU and memory, and the stack measured: a report's first line."""
    cpu = "unknown CPU"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                   if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        kb = int(next(l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal")))
        mem = f", {kb / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        pass
    stack = Stack.load(paths.DEFAULT_STACK_DIR).names
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores ({cpu}){mem}; "
            f"stock torch==2.6.0 vs the overlay of the {len(stack)}-patch stack ({', '.join(p[:4] for p in stack)})")
