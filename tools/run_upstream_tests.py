#!/usr/bin/env python3
"""Run upstream PyTorch test files on the patched tree and compare with the stock baseline.

Targets (where torch comes from):
  default          the overlay venv (python tools/overlay.py run -- python -m pytest ...),
                   test files from the tree the overlay was built from; --overlay-dir,
                   --venv and --stack select another overlay (as given to overlay.py build)
  --baseline       stock torch==2.6.0 in <cache>/venvs/stock, test files as of the pin
  --torch-build P  a source build of P (tools/build_torch.py --mode develop), run with --python
  --wheel-venv D   a venv whose torch is the patched wheel (tools/build_wheel.py --venv D),
                   test files from the pinned source with the stack applied (or --torch-src)

One pytest (8.3.x) per file, cwd <tree>/test (upstream's conftest and pytest.ini
apply; the tree root is never put on sys.path), --junitxml per file,
-p no:cacheprovider.  -k is passed through (and-ed with the profile's), --shard
I/N uses upstream's --shard-id/--num-shards; --jobs N runs a file as the
N shards 1/N..N/N at once (own junit, log and state each, <slug>.<i>of<N>.*)
and merges them into one result per file.  Inductor and C++ extension caches
persist under <cache>/test-caches/<stack hash | stock | build-...>.

Every outcome is compared with test/expectations/<file>.json (stock 2.6.0,
full profile) and test/expectations/changes.json (what the stack intends, with
reason and patch).  Failing differences: REGRESSION (passed -> failed/error/
xfailed), UNEXPECTED PASS (failed/error/xfailed -> passed), NOW SKIPPED (a skip
never counts as a pass), NEW (not in the baseline), MISSING (selected but no
result, or gone), RECORDED CHANGE NOT MET; unless recorded in changes.json.
The markdown report (default <cache>/reports/upstream-<profile>[-stock|-build|-wheel|-junit].md)
is also printed.

--record-baseline (with --baseline or --from-junit) writes the expectation
files from the results: a whole-file run replaces a file's expectations, a
-k/shard run or a junit import updates the tests it has.

Exit codes: 0 as expected, 1 unexpected differences or a file crashed/timed
out, 2 usage, 3 bad input (no overlay built, stale overlay, wrong pytest/torch).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib import upstream as up
from .lib.shell import Shell
from .lib.upstream.runner import Runner, RunOptions
from .lib.upstream.target import Target, check_tree, pristine_tests, probe

OVERLAY_TOOL = paths.REPO_ROOT / "tools" / "overlay.py"
CONSOLE_LIMIT = 60  # rows of the differences table printed to the console

# -- argument handling ----------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_upstream_tests.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("--profile", choices=sorted(up.PROFILES), default="ci",
                   help="ci: all of test_compiled_autograd.py + -k selections (<= 45 min cold, one file at a time); full: every test of every file (default: %(default)s)")
    p.add_argument("--files", nargs="+", metavar="F", help="only these files (relative to test/); the profile's -k applies to the ones it lists")
    p.add_argument("--shard", metavar="I/N", help="run shard I of N of each file (upstream's sha256 split of node ids)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="run each file as N concurrent pytest processes, upstream's shards 1/N..N/N, merged into one "
                        "result per file (default: %(default)s)")
    p.add_argument("-k", dest="k", metavar="EXPR", help="pytest -k expression (and-ed with the profile's)")
    p.add_argument("--all-tests", action="store_true", help="ignore the profile's -k selections: every test of the chosen files")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--baseline", action="store_true", help="run on stock torch==2.6.0 (<cache>/venvs/stock) with the pin's test files")
    target.add_argument("--torch-build", type=Path, metavar="PATH", help="run on a source build of PATH (setup.py develop), tests from PATH/test")
    target.add_argument("--wheel-venv", type=Path, metavar="DIR",
                        help="run on a venv whose torch is the patched wheel (`build_wheel.py --venv DIR`), "
                             "tests from the patched tree (the pinned source, or --torch-src)")
    p.add_argument("--python", help="interpreter of the --torch-build (default: this one)")
    p.add_argument("--overlay-dir", type=Path, metavar="DIR",
                   help="the overlay to run on, as built by `overlay.py --overlay-dir DIR build` (default: <cache>/overlay)")
    p.add_argument("--venv", type=Path, metavar="DIR", help="that overlay's venv, as given to overlay.py (default: <overlay-dir>/venv)")
    p.add_argument("--stack", type=Path, metavar="DIR",
                   help="the stack that overlay was built from, as given to overlay.py (default: patches/)")
    p.add_argument("--torch-src", type=Path, metavar="TREE",
                   help="tree whose test/ to use (default: the overlay's tree; for --baseline the pinned source)")
    p.add_argument("--report", type=Path, help="markdown report (default: <cache>/reports/upstream-<profile>[-mode].md)")
    p.add_argument("--junit-dir", type=Path, help="junit XML, pytest log and state per file (default: <cache>/reports/junit-<profile>-<mode>)")
    p.add_argument("--record-baseline", action="store_true", help="write the expectation files from the results (needs --baseline or --from-junit)")
    p.add_argument("--from-junit", nargs="+", type=Path, metavar="XML", help="do not run: import these junit files (whole files; the profile's -k is ignored)")
    p.add_argument("--list", action="store_true", help="print the profile (files, -k, measured time, baseline counts) and exit")
    p.add_argument("--expectations", type=Path, default=up.EXPECTATIONS_DIR, help="expectation dir (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=120, metavar="MIN", help="per-file time limit in minutes (default: %(default)s)")
    p.add_argument("--strict-capture", action="store_true",
                   help=f"run with P5's strict capture ({up.STRICT_ENV}=1): a read of a dummy's metadata during a "
                        "compiled autograd capture raises; the report counts and lists the violations")
    p.add_argument("--no-pch", dest="pch", action="store_false",
                   help="compile the tests' load_inline extensions without torch/extension.h's precompiled header "
                        "(default: the first load_inline without flags of its own builds it, the others use it, "
                        "the run removes it after; saves ~40 s per extension on 2 cores)")
    p.add_argument("--no-rerun-hangs", dest="rerun_hangs", action="store_false",
                   help="report a distributed test whose rank hung (MultiProcessTestCase's time limit) as it is "
                        "(default: run it once more in a pytest of its own; the report lists it under Reruns)")
    p.add_argument("-v", "--verbose", action="store_true", help="also stream pytest's output (always in <junit-dir>/<file>.log)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines; only the report")
    return p


def usage(message: str) -> ui.UserError:
    return ui.UserError(message, exit_code=ui.EXIT_USAGE)


def check_args(args: argparse.Namespace) -> None:
    if args.record_baseline and not (args.baseline or args.from_junit):
        raise usage("--record-baseline records the stock baseline: use it with --baseline (or --from-junit XML)")
    if args.strict_capture and (args.baseline or args.from_junit):
        raise usage("--strict-capture turns on the stack's strict capture (P5): stock torch and imported junit have none; drop it")
    if args.python and not args.torch_build:
        raise usage("--python is the interpreter of a source build: use it with --torch-build PATH")
    overlay_only = [opt for opt, _ in given_overlay_options(args) if not (opt == "--stack" and args.wheel_venv)]
    if overlay_only and mode_of(args) != "overlay":
        other = ("--from-junit" if args.from_junit else "--baseline" if args.baseline else
                 "--wheel-venv" if args.wheel_venv else "--torch-build")
        what = f"{overlay_only[0]} selects" if len(overlay_only) == 1 else f"{', '.join(overlay_only)} select"
        raise usage(f"{what} the overlay to run on, which {other} does not use: drop {'it' if len(overlay_only) == 1 else 'them'}")
    if args.from_junit:
        if args.torch_build:
            raise usage("--from-junit imports results instead of running: it cannot be combined with --torch-build")
        if args.k or args.shard:
            raise usage("--from-junit imports whole junit files: -k and --shard do not apply")
        for xml in args.from_junit:
            if not xml.is_file():
                raise ui.UserError(f"--from-junit {xml}: no such file")
    if args.shard:
        up.parse_shard(args.shard)
    if args.jobs < 1:
        raise usage(f"--jobs must be at least 1, not {args.jobs}")
    if args.jobs > 1 and (args.shard or args.from_junit):
        raise usage(f"--jobs splits each file into upstream's shards: drop {'--shard' if args.shard else '--from-junit'} "
                    "or --jobs")
    if args.timeout <= 0:
        raise usage(f"--timeout must be positive, not {args.timeout:g}")


def select_suites(profile: up.Profile, files: Sequence[str] | None) -> list[up.Suite]:
    if not files:
        return list(profile.suites)
    out = []
    for f in files:
        name = up.normalize_file(f)
        if not name.endswith(".py"):
            raise ui.UserError(f"--files {f}: expected a test file like inductor/test_compiled_autograd.py", exit_code=ui.EXIT_USAGE)
        out.append(profile.suite(name) or up.Suite(name))
    return list(dict((s.file, s) for s in out).values())


def mode_of(args: argparse.Namespace) -> str:
    if args.from_junit:
        return "junit"
    if args.baseline:
        return "stock"
    if args.torch_build:
        return "build"
    if args.wheel_venv:
        return "wheel"
    return "overlay"


# -- --list ---------------------------------------------------------------------------------

def cmd_list(profile: up.Profile, suites: Sequence[up.Suite], exp_dir: Path) -> int:
    total = sum(s.estimate_s for s in suites)
    ui.out(f"profile {profile.name}: {profile.summary}")
    ui.out(f"measured (cold caches, 2 cores, stock): ~{ui.fmt_seconds(total)} for {len(suites)} file(s)")
    for s in suites:
        base = up.load_baseline(exp_dir, s.file)
        if base is None:
            counts = "no baseline recorded"
        else:
            c = up.counts_of(base.tests)
            counts = f"baseline {len(base.tests)}: " + ", ".join(f"{v} {k}" for k, v in c.items() if v)
        est = f"~{ui.fmt_seconds(s.estimate_s)}" if s.estimate_s else "not measured"
        ui.out(f"  {s.file}  [{est}]  {('-k ' + shlex.quote(s.k)) if s.k else 'all tests'}")
        ui.out(f"      {s.why or 'requested with --files'}; {counts}")
    return ui.EXIT_OK


# -- targets --------------------------------------------------------------------------------

def given_overlay_options(args: argparse.Namespace) -> list[tuple[str, Path]]:
    return [(opt, v) for opt, v in (("--overlay-dir", args.overlay_dir), ("--venv", args.venv), ("--stack", args.stack)) if v]


def overlay_options(args: argparse.Namespace) -> list[str]:
    """--overlay-dir/--venv/--stack as given, for every overlay.py command (absolute: overlay.py runs elsewhere)."""
    return [a for opt, v in given_overlay_options(args) for a in (opt, str(v.resolve()))]


def overlay_command(args: argparse.Namespace, *command: str) -> str:
    return shlex.join(["python", "tools/overlay.py", *overlay_options(args), *command])


def read_overlay_stamp(args: argparse.Namespace) -> dict:
    """The stamp of the overlay to run on (``args.cache``: the cache dir its default place is in)."""
    from .overlay import STAMP_JSON, overlay_root

    stamp = overlay_root(args) / STAMP_JSON
    if not stamp.is_file():
        raise ui.UserError(
            f"no overlay is built ({stamp} is missing): build it with `{overlay_command(args, 'build')}`, "
            "or run the stock baseline with --baseline"
        )
    try:
        data = json.loads(stamp.read_text())
        data["stack"], data["tree"]
    except (ValueError, KeyError, TypeError):
        raise ui.UserError(f"{stamp} is unreadable; rebuild the overlay: {overlay_command(args, 'build')}") from None
    return data


def resolve_target(args: argparse.Namespace, cache: Path, sh: Shell) -> Target:
    if args.baseline:
        from .lib.overlay.venv import ensure_venv, venv_python
        from .lib.pinned_source import ensure_pinned_source

        tree = args.torch_src.resolve() if args.torch_src else ensure_pinned_source(cache, sh)
        check_tree(tree, "--torch-src")
        venv = cache / "venvs" / "stock"
        ensure_venv(venv, cache, sh)
        target = Target("stock", (str(venv_python(venv)),), tree, pristine_tests(tree, cache, sh), "stock")
    elif args.torch_build:
        tree = args.torch_build.resolve()
        check_tree(tree, "--torch-build")
        key = "build-" + hashlib.sha256(str(tree).encode()).hexdigest()[:12]
        target = Target("build", (args.python or sys.executable,), tree, tree / "test", key)
    elif args.wheel_venv:
        target = wheel_target(args, cache, sh)
    else:
        stamp = read_overlay_stamp(args)
        tree = Path(stamp["tree"]).resolve()
        if args.torch_src and args.torch_src.resolve() != tree:
            raise ui.UserError(
                f"the overlay was built from {tree}, not {args.torch_src}: its test files would not match; "
                f"rebuild it with `{overlay_command(args, 'build', '--torch-src', str(args.torch_src))}` or drop --torch-src"
            )
        check_tree(tree, "the overlay's tree")
        python = (sys.executable, str(OVERLAY_TOOL), "-q", *overlay_options(args), "run", "--", "python")
        target = Target("overlay", python, tree, tree / "test", stamp["stack"])
    return probe(target, sh)


def wheel_target(args: argparse.Namespace, cache: Path, sh: Shell) -> Target:
    """A venv with the patched wheel: its stamp must name the stack the tests come from."""
    from .lib.overlay.build import stack_hash
    from .lib.overlay.torch_hook import STAMP_NAME
    from .lib.overlay.venv import venv_python
    from .lib.pinned_source import ensure_pinned_source
    from .lib.stack import Stack

    venv = args.wheel_venv.resolve()
    stamp_file = next(iter(sorted(venv.glob(f"lib/python3*/site-packages/torch/lib/{STAMP_NAME}"))), None)
    fix = f"python tools/build_wheel.py --venv {shlex.quote(str(venv))}"
    if stamp_file is None:
        raise ui.UserError(f"{venv} has no patched torch wheel installed; install one with `{fix}`")
    stamp = json.loads(stamp_file.read_text())
    want = stack_hash(Stack.load((args.stack or paths.DEFAULT_STACK_DIR).resolve()))
    if stamp.get("stack") != want:
        raise ui.UserError(f"the wheel in {venv} was built from another stack ({stamp.get('stack')}, now {want}); "
                           f"rebuild and reinstall it: {fix}")
    tree = args.torch_src.resolve() if args.torch_src else ensure_pinned_source(cache, sh)
    check_tree(tree, "--torch-src" if args.torch_src else "the pinned source")
    return Target("wheel", (str(venv_python(venv)),), tree, tree / "test", want)


# -- main -----------------------------------------------------------------------------------

def junit_files(suites: Sequence[up.Suite], explicit_files: bool) -> list[str]:
    """The files an imported junit may hold: those chosen, or without --files any file of any profile."""
    files = [s.file for s in suites]
    if explicit_files:
        return files
    return list(dict.fromkeys(files + [s.file for p in up.PROFILES.values() for s in p.suites]))


def run_options(args: argparse.Namespace) -> RunOptions:
    return RunOptions(k=args.k, shard=up.parse_shard(args.shard) if args.shard else None, jobs=args.jobs,
                      timeout_s=args.timeout * 60, strict=args.strict_capture, pch=args.pch,
                      rerun_hangs=args.rerun_hangs, verbose=args.verbose)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    check_args(args)
    profile = up.PROFILES[args.profile]
    suites = select_suites(profile, args.files)
    if args.all_tests:
        suites = [dataclasses.replace(s, k=None, estimate_s=0) if s.k else s for s in suites]  # not measured
    args.expectations = args.expectations.resolve()
    if args.list:
        return cmd_list(profile, suites, args.expectations)
    sh = Shell(verbose=not args.quiet)
    cache = args.cache = paths.cache_dir()  # overlay_root (read_overlay_stamp) finds the default overlay under args.cache
    mode = mode_of(args)
    from .lib.stack import Stack

    # --stack may be a prefix of the stack (check_prefixes.py): the later patches' changes are not in its tree
    applied = Stack.load(args.stack.resolve(), need_manifest=False).names if args.stack else None
    changes = up.load_changes(args.expectations, Stack.load(paths.DEFAULT_STACK_DIR, need_manifest=False).names, applied)
    if args.baseline:
        changes = []  # stock torch with the pin's tests: the stack's recorded changes do not apply
    started = up.now_iso()
    t0 = time.monotonic()
    target: Target | None = None
    if args.from_junit:
        runs = up.import_junit(args.from_junit, junit_files(suites, bool(args.files)))
        describe = "imported junit: " + ", ".join(str(x) for x in args.from_junit) + (" (stock baseline)" if args.baseline else "")
        tests_dir = "-"
    else:
        target = resolve_target(args, cache, sh)
        describe = target.describe
        tests_dir = str(target.tests_dir)
        for s in suites:
            if not (target.tests_dir / s.file).is_file():
                raise ui.UserError(f"{s.file}: no such test file in {target.tests_dir}")
        junit_dir = (args.junit_dir or cache / "reports" / f"junit-{args.profile}-{mode}").resolve()
        junit_dir.mkdir(parents=True, exist_ok=True)
        runner = Runner(run_options(args), target, junit_dir, cache, sh)
        ui.info(f"==> {len(suites)} file(s) of profile {profile.name} on {describe}; caches: "
                f"{cache / 'test-caches' / target.cache_key}; junit + logs: {junit_dir}")
        runner.remove_pch()
        try:
            runs = [runner.run(s, i, len(suites)) for i, s in enumerate(suites, 1)]
        finally:
            runner.remove_pch()
    baselines = {r.file: up.load_baseline(args.expectations, r.file) for r in runs}
    cmp = up.compare(runs, baselines, changes)
    recorded: list[str] = []
    refused: list[str] = []
    if args.record_baseline:
        recorded, refused = up.record_baselines(args.expectations, runs, baselines, target.probe if target else None)
    selection = ", ".join(filter(None, [
        f"files {' '.join(s.file for s in suites)}" if args.files else f"profile {profile.name} ({len(suites)} files)",
        f"-k {shlex.quote(args.k)}" if args.k else "", f"shard {args.shard}" if args.shard else "",
    ]))
    if not args.from_junit:
        selection += "".join(f"; profile -k on {s.file}: {shlex.quote(s.k)}" for s in suites if s.k)
    info = up.RunInfo(args.profile, {"overlay": "patched tree on the overlay", "stock": "stock baseline",
                                     "build": "source build", "wheel": "patched wheel", "junit": "imported junit"}[mode],
                      describe, tests_dir, selection, started, time.monotonic() - t0, tuple(recorded),
                      strict=args.strict_capture)
    suffix = {"overlay": "", "stock": "-stock", "build": "-build", "wheel": "-wheel", "junit": "-junit"}[mode]
    report = (args.report or cache / "reports" / f"upstream-{args.profile}{suffix}.md").resolve()
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(up.render_report(info, runs, cmp))
    ui.out(up.render_report(info, runs, cmp, limit=CONSOLE_LIMIT).rstrip())
    ui.out(f"\nreport: {report}")
    if args.record_baseline:
        for r in refused:
            ui.out(f"NOT recorded: {r}")
        return ui.EXIT_FAILED if refused else ui.EXIT_OK
    return ui.EXIT_OK if cmp.ok else ui.EXIT_FAILED


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
