#!/usr/bin/env python3
"""Build a patched PyTorch v2.6.0 checkout from source (minimal CPU configuration).

For machines that can afford a full source build (hours; >= 20 GiB of disk,
>= 2 GiB of memory per compile job).  The tree needs the third_party sources:
a checkout with its git submodules, or PyTorch's release tarball imported by
tools/fetch_pinned_source.py --source github-release (third_party included, no
.gitmodules), patched with tools/apply_patches.py:

    git clone --recursive https://github.com/pytorch/pytorch -b v2.6.0 PATH
    # or: PATH=$(python tools/fetch_pinned_source.py --source github-release)
    python tools/apply_patches.py --torch-src PATH
    python tools/build_torch.py --torch-src PATH --mode develop

Without --torch-src the tree is the release tarball's checkout when it was
fetched, else the Debian one behind the default pinned source, which has
third_party stripped and so cannot be built (the error says what to do).

Modes: --mode develop (`python setup.py develop`: `import torch` from that
interpreter then loads the tree in place) or --mode wheel
(`python setup.py bdist_wheel`: a wheel in PATH/dist/).  --dry-run prints the
exact plan (environment and command, one per line, copy-pasteable) and runs
nothing.

Exit codes: 0 built (or planned), 1 the build failed, 2 usage, 3 bad input
(a preflight check failed: missing submodules, compiler, cmake, disk, memory,
Python headers or build deps).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib import source_build as sb
from .lib.pinned_source import is_ready, release_root, source_root
from .lib.shell import Shell

# -- the CLI --------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="build_torch.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Build environment (minimal CPU configuration):\n  "
            + " ".join(f"{k}={v}" for k, v in sb.BUILD_ENV)
            + f"\n  MAX_JOBS = min(cores, memory / {sb.GIB_PER_JOB:g} GiB) unless --jobs;"
            " CMAKE_C/CXX_COMPILER_LAUNCHER=ccache when ccache is on PATH.\n"
            "\nPreflight checks, in this order; each stops the run with a one-line `error: ...` (exit 3)\n"
            "before anything is built:\n"
            "  1. the tree: a PyTorch source tree whose version.txt says 2.6.0\n"
            "  2. third_party sources: git submodules, or the release tarball's (the Debian tarball strips them)\n"
            f"  3. C and C++ compilers ($CC/$CXX, else cc/c++): GCC >= {sb.version_text(sb.MIN_GCC)} or Clang >= {sb.version_text(sb.MIN_CLANG)}\n"
            f"  4. cmake >= {sb.version_text(sb.MIN_CMAKE)}\n"
            "  5. ninja: only a WARNING when missing (setup.py falls back to Makefiles, slower)\n"
            f"  6. the Python (--python): >= {sb.version_text(sb.MIN_PYTHON)}, C headers (Python.h), pyyaml, typing_extensions,\n"
            "     setuptools (+ wheel for --mode wheel); numpy missing is a warning\n"
            f"  7. free disk at the tree >= {sb.fmt_gib(sb.MIN_DISK_BYTES)}\n"
            f"  8. memory: >= {sb.MIN_GIB_PER_JOB:g} GiB per job; --jobs is reduced to fit, the run fails if one job does not fit\n"
            "A stack that is not applied to the tree is a warning (building stock PyTorch is allowed).\n"
            "--dry-run prints the plan on stdout (and the preflight findings that need no command on stderr).\n"
            "\nAfter a develop build, run upstream's tests on it with\n"
            "  python tools/run_upstream_tests.py --torch-build PATH\n"
            "\nExit codes: 0 built (or planned), 1 build failed, 2 usage, 3 preflight failed."
        ),
    )
    p.add_argument("--torch-src", type=Path, help="the patched PyTorch v2.6.0 checkout to build (default: the release tarball's checkout from `fetch_pinned_source.py --source github-release`, else the Debian pinned source, which lacks third_party and so only explains what to do)")
    p.add_argument("--cache-dir", type=Path, help="cache dir of the pinned source (default: $FCA_CACHE_DIR or ~/.cache/fca)")
    p.add_argument("--mode", choices=("develop", "wheel"), default="develop", help="develop: `setup.py develop` (in place); wheel: `setup.py bdist_wheel` into PATH/dist (default: %(default)s)")
    p.add_argument("--python", default=sys.executable, help="interpreter to build with (default: this one, %(default)s)")
    p.add_argument("--jobs", type=int, help=f"MAX_JOBS (default: min(cores, memory / {sb.GIB_PER_JOB:g} GiB))")
    p.add_argument("--dry-run", action="store_true", help="print the plan (env and command, copy-pasteable) and exit without running anything")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the result; the build's output goes to build/fca-build-torch.log in the tree")
    return p


def resolve_tree(args: argparse.Namespace, cache: Path) -> Path:
    if args.torch_src is not None:
        return args.torch_src.expanduser().resolve()
    if is_ready(release_root(cache)):  # fetched with --source github-release: it has third_party
        return release_root(cache)
    root = source_root(cache)
    if not root.is_dir():
        raise ui.UserError(
            f"no --torch-src and no pinned source at {root}; the pinned source could not be built anyway "
            f"(the Debian tarball strips third_party): {sb.CLONE_HINT}"
        )
    return root


def _python_path(python: str) -> str:
    found = shutil.which(python) if os.sep not in python else python
    return str(Path(found).absolute()) if found else python


def dry_run(tree: Path, args: argparse.Namespace, python: str) -> int:
    findings: list[str] = []
    jobs = args.jobs or 1
    if not tree.is_dir():
        sb.check_tree(tree)  # nothing to plan for: the error says what to pass
    for check in (
        lambda: sb.check_tree(tree),
        lambda: sb.check_version((tree / "version.txt").read_text(errors="replace"), tree),
        lambda: sb.check_submodules(tree),
        lambda: sb.check_disk(sb.free_disk(tree), tree),
    ):
        try:
            check()
        except (ui.UserError, OSError) as err:
            findings.append(f"a real run would stop: {err}")
    try:
        jobs, note = sb.plan_jobs(sb.cpu_count(), sb.available_memory(), args.jobs)
        if note:
            findings.append(note)
    except ui.UserError as err:
        if err.exit_code == ui.EXIT_USAGE:
            raise
        findings.append(f"a real run would stop: {err}")
    bindir = str(Path(python).parent) if os.sep in python else None
    extra = bindir if bindir and bindir not in os.environ.get("PATH", "").split(os.pathsep) else None
    env = sb.build_env(jobs, shutil.which("ccache"), extra)
    for line in sb.render_plan(tree, env, sb.build_command(python, args.mode)):
        ui.out(line)
    for finding in findings:
        ui.info(f"warning: {finding}")
    ui.info("dry run: nothing was run (compiler, cmake and Python are checked by a real run)")
    blockers = [f for f in findings if f.startswith("a real run would stop")]
    if blockers:
        ui.info(f"dry run: {len(blockers)} blocker(s) above; exit {ui.EXIT_BAD_INPUT}")
        return ui.EXIT_BAD_INPUT
    return ui.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    sh = Shell(verbose=not args.quiet)
    python = _python_path(args.python)
    if args.jobs is not None and args.jobs < 1:
        raise ui.UserError(f"--jobs must be at least 1, not {args.jobs}", exit_code=ui.EXIT_USAGE)
    cache = paths.resolve_cache(args.cache_dir)
    tree = resolve_tree(args, cache)
    if args.dry_run:
        return dry_run(tree, args, python)

    warnings: list[str] = []
    with ui.step(f"preflight checks for {tree}"):
        sb.check_tree(tree)
        sb.check_version((tree / "version.txt").read_text(errors="replace"), tree)
        sb.check_submodules(tree)
        note = sb.stack_note(tree, sh)
        if note:
            warnings.append(note)
        py = sb.probe_python(sh, python)
        search_path = os.pathsep.join([py["bindir"], os.environ.get("PATH", "")])
        cc = os.environ.get("CC") or "cc"
        cxx = os.environ.get("CXX") or "c++"
        c_desc = sb.check_compiler(sb.tool_version(sh, cc, search_path), what="C compiler", command=cc)
        cxx_desc = sb.check_compiler(sb.tool_version(sh, cxx, search_path), what="C++ compiler", command=cxx)
        cmake_desc = sb.check_cmake(sb.tool_version(sh, "cmake", search_path))
        ninja_warning = sb.check_ninja(sb.which("ninja", search_path))
        if ninja_warning:
            warnings.append(ninja_warning)
        warnings += sb.check_python(python, py["version"], py["include"], py["has_header"], py["missing"], mode=args.mode)
        sb.check_disk(sb.free_disk(tree), tree)
        jobs, jobs_note = sb.plan_jobs(sb.cpu_count(), sb.available_memory(), args.jobs)
        if jobs_note:
            warnings.append(jobs_note)
    for w in warnings:
        ui.info(f"warning: {w}")
    ccache = sb.which("ccache", search_path)
    path_dirs = os.environ.get("PATH", "").split(os.pathsep)
    extra = py["bindir"] if py["bindir"] not in path_dirs else None
    env = sb.build_env(jobs, ccache, extra)
    command = sb.build_command(python, args.mode)
    ui.info(
        f"plan: {args.mode} build of {tree} with Python {sb.version_text(py['version'])}, C {c_desc}, C++ {cxx_desc}, cmake {cmake_desc}, "
        f"{'ninja' if not ninja_warning else 'make'}, MAX_JOBS={jobs}, ccache {'on' if ccache else 'off'}"
    )
    sb.run_build(sh, tree, env, command, quiet=args.quiet)
    report(tree, python, args.mode)
    return ui.EXIT_OK


def report(tree: Path, python: str, mode: str) -> None:
    q = shlex.quote
    if mode == "develop":
        ui.out(f"{tree}: built in develop mode; `import torch` in {python} now loads {tree / 'torch'}")
        ui.out(f"run upstream's tests on it: python tools/run_upstream_tests.py --torch-build {q(str(tree))}")
        return
    wheels = sorted((tree / "dist").glob("torch-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise ui.OperationFailed(f"the build finished but {tree / 'dist'} has no torch-*.whl")
    ui.out(f"{tree}: built {wheels[-1]}")
    ui.out(f"install it: {q(python)} -m pip install {q(str(wheels[-1]))}")
    ui.out(f"run upstream's tests on the tree: python tools/run_upstream_tests.py --torch-build {q(str(tree))}")


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
