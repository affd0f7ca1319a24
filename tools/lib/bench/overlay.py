"""``overlay``: overlay build times on a clone of the pin with the stack applied: a cold build (no
ccache), a no-op rebuild, a rebuild after changing one .cpp; each as ``overlay.py build`` runs for a
user (its wall time is what is measured)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from .. import paths, ui
from ..apply import apply_stack
from ..pinned_source import ensure_pinned_source
from ..stack import Stack
from .core import Setup, clone, timed, timing_table

CHANGED = "torch/csrc/dynamo/python_compiled_autograd.cpp"  # the .cpp the third build follows a change of


def bench_overlay(setup: Setup, reps: int) -> str:
    """Cold build (no ccache), no-op rebuild, rebuild after changing one .cpp; on a clone of the pin."""
    sh = setup.sh
    pin = ensure_pinned_source(setup.cache, sh)
    timings: dict[str, list[float]] = {}

    def build(label: str, tree: Path, ov: Path) -> None:
        timed(timings, label, lambda: sh.run(
            sys.executable, str(paths.TOOLS_DIR / "overlay.py"), "-q", "--overlay-dir", str(ov),
            "--venv", str(setup.venv("overlay")), "build", "--torch-src", str(tree), "--no-ccache", "--no-install"))

    with tempfile.TemporaryDirectory(prefix="fca-bench-overlay-") as tmp:
        work = Path(tmp)
        tree = work / "tree"
        clone(sh, pin, tree)
        apply_stack(tree, Stack.load(paths.DEFAULT_STACK_DIR), sh)
        for i in range(reps):
            ui.info(f"[{i + 1}/{reps}] overlay benchmark: cold build")
            ov = work / f"ov{i}"
            build("cold build (no ccache, 2 jobs: codegen, TUs, link, checks)", tree, ov)
            build("no-op rebuild", tree, ov)
            target = tree / CHANGED
            original = target.read_bytes()
            target.write_bytes(original + f"\n// bench edit {i}\n".encode())
            build("rebuild after changing one .cpp (python_compiled_autograd.cpp)", tree, ov)
            target.write_bytes(original)
            shutil.rmtree(ov)
    return timing_table(f"overlay build ({reps} reps, wall)", timings, 1)
