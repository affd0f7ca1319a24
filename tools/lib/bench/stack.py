"""``stack``: apply (cold, no-op, one patch changed), status, export and revert of the real stack on
clones of the pin, repeated, as a user runs the tools (``apply_patches.py``, ``export_patches.py``:
their wall time, Python's start included, is what is measured)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .. import paths, ui
from ..pinned_source import ensure_pinned_source
from ..stack import Stack
from .core import Setup, clone, timed, timing_table, tool


def edit_one_patch(stack: Path) -> None:
    """Change the content of the stack's last patch (one added comment line gets a suffix)."""
    last = Stack.load(stack, need_manifest=False).files[-1]
    lines = last.read_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("+") and line.lstrip("+ ").startswith(("#", "//")):
            lines[i] = line + " (bench edit)"
            last.write_text("\n".join(lines))
            return
    raise ui.UserError(f"{last.name}: no added comment line to edit for the one-patch-changed timing")


def bench_stack(setup: Setup, reps: int, stack: Path = paths.DEFAULT_STACK_DIR) -> str:
    """apply/status/export/revert of ``stack`` (default: the real patches/) on clones of the pin."""
    sh = setup.sh
    pin = ensure_pinned_source(setup.cache, sh)
    n = len(Stack.load(stack))
    timings: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="fca-bench-") as tmp:
        work = Path(tmp)
        edited = work / "edited"
        shutil.copytree(stack, edited)
        edit_one_patch(edited)
        for i in range(reps):
            ui.info(f"[{i + 1}/{reps}] stack benchmark ({n} patches)")
            target = work / f"t{i}"
            clone(sh, pin, target)
            out = work / f"export{i}"  # a copy of the edited stack that export rewrites
            shutil.copytree(edited, out)
            apply, export = ("apply_patches", "--torch-src", target), ("export_patches", "--torch-src", target, "--stack", out)
            runs = [(f"apply --check ({n} patches)", (*apply, "--stack", stack, "--check")),
                    (f"apply, cold ({n} patches)", (*apply, "--stack", stack)),
                    ("apply, already applied (no-op)", (*apply, "--stack", stack)),
                    ("apply after one patch changed (the last)", (*apply, "--stack", edited)),
                    ("status", (*apply, "--stack", edited, "--status")),
                    (f"export ({n} patches)", export),
                    ("export --check", (*export, "--check")),
                    (f"revert ({n} patches)", (*apply, "--stack", edited, "--revert"))]
            for label, argv in runs:
                timed(timings, label, lambda: tool(sh, *argv))
            shutil.rmtree(target)
    return timing_table(f"operation ({reps} reps, wall incl. Python start)", timings, 2)
