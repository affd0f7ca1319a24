#!/usr/bin/env python3
"""Benchmarks (not tests): measured side by side in one run, reported as medians.

``stack``: apply, status, export and check of the sample 6-patch stack on a
clone of the real pin, repeated; prints a markdown table.
``overlay``: overlay build times (cold without ccache, no-op, one .cpp changed).

Exit codes: 0 ok, 2 usage, 3 bad input.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.lib import paths, ui
from tools.lib.pinned_source import ensure_pinned_source
from tools.lib.samplestack import build_stack
from tools.lib.shell import Shell

TOOLS = paths.REPO_ROOT / "tools"


def _tool(name: str, *args: str | Path) -> None:
    subprocess.run([sys.executable, str(TOOLS / f"{name}.py"), "-q", *map(str, args)], check=True, capture_output=True)


def _clone(src: Path, dest: Path) -> None:
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(src), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "-B", "main", "v2.6.0"], check=True)


def bench_stack(reps: int) -> str:
    sh = Shell(verbose=False)
    pin = ensure_pinned_source(paths.cache_dir(), sh)
    timings: dict[str, list[float]] = {}

    def timed(label: str, fn: Callable[[], None]) -> None:
        start = time.perf_counter()
        fn()
        timings.setdefault(label, []).append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory(prefix="fca-bench-") as tmp:
        work = Path(tmp)
        author = work / "author"
        _clone(pin, author)
        build_stack(author)
        stack = work / "stack"
        stack.mkdir()
        shutil.copy(paths.DEFAULT_STACK_DIR / "pin.sha256", stack / "pin.sha256")
        _tool("export_patches", "--torch-src", author, "--stack", stack)
        for i in range(reps):
            ui.info(f"[{i + 1}/{reps}] stack benchmark")
            target = work / f"t{i}"
            _clone(pin, target)
            timed("apply --check (6 patches, git)", lambda: _tool("apply_patches", "--torch-src", target, "--stack", stack, "--check"))
            timed("apply (6 patches, git)", lambda: _tool("apply_patches", "--torch-src", target, "--stack", stack))
            timed("apply, already applied (no-op)", lambda: _tool("apply_patches", "--torch-src", target, "--stack", stack))
            timed("status", lambda: _tool("apply_patches", "--torch-src", target, "--stack", stack, "--status"))
            out = work / f"export{i}"
            shutil.copytree(stack, out)
            timed("export (6 patches)", lambda: _tool("export_patches", "--torch-src", target, "--stack", out))
            timed("export --check", lambda: _tool("export_patches", "--torch-src", target, "--stack", out, "--check"))
            timed("revert (6 patches, git)", lambda: _tool("apply_patches", "--torch-src", target, "--stack", stack, "--revert"))
            shutil.rmtree(target)
    lines = [f"| operation ({reps} reps, wall incl. Python start) | median | min | max |", "|---|---|---|---|"]
    for label, values in timings.items():
        lines.append(f"| {label} | {statistics.median(values):.2f} s | {min(values):.2f} s | {max(values):.2f} s |")
    return "\n".join(lines)


def bench_overlay(reps: int) -> str:
    """Cold build (no ccache), no-op rebuild, rebuild after changing one .cpp; on a clone of the pin."""
    sh = Shell(verbose=False)
    pin = ensure_pinned_source(paths.cache_dir(), sh)
    venv = paths.cache_dir() / "overlay" / "venv"
    timings: dict[str, list[float]] = {}

    def build(label: str, tree: Path, ov: Path) -> None:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, str(TOOLS / "overlay.py"), "-q", "--overlay-dir", str(ov), "--venv", str(venv), "build",
             "--torch-src", str(tree), "--no-ccache", "--no-install"],
            check=True, capture_output=True,
        )
        timings.setdefault(label, []).append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory(prefix="fca-bench-overlay-") as tmp:
        work = Path(tmp)
        tree = work / "tree"
        _clone(pin, tree)
        _tool("apply_patches", "--torch-src", tree)
        for i in range(reps):
            ui.info(f"[{i + 1}/{reps}] overlay benchmark: cold build")
            ov = work / f"ov{i}"
            build("cold build (no ccache, 2 jobs; codegen + 5 TUs + link + checks)", tree, ov)
            build("no-op rebuild", tree, ov)
            target = tree / "torch/csrc/dynamo/python_compiled_autograd.cpp"
            original = target.read_bytes()
            target.write_bytes(original + f"\n// bench edit {i}\n".encode())
            build("rebuild after changing one .cpp (python_compiled_autograd.cpp)", tree, ov)
            target.write_bytes(original)
            shutil.rmtree(ov)
    lines = [f"| overlay build ({reps} reps, wall) | median | min | max |", "|---|---|---|---|"]
    for label, values in timings.items():
        lines.append(f"| {label} | {statistics.median(values):.1f} s | {min(values):.1f} s | {max(values):.1f} s |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("stack", help="apply/export timings of a 6-patch stack on the real pin")
    s.add_argument("--reps", type=int, default=5)
    o = sub.add_parser("overlay", help="overlay build timings: cold, no-op, one .cpp changed")
    o.add_argument("--reps", type=int, default=1)
    args = p.parse_args(argv)
    if args.what == "stack":
        ui.out(bench_stack(args.reps))
    elif args.what == "overlay":
        ui.out(bench_overlay(args.reps))
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
