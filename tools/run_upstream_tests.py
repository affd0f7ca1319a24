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
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib import upstream as up
from .lib.shell import Shell, kill_group

OVERLAY_TOOL = paths.REPO_ROOT / "tools" / "overlay.py"
HEARTBEAT_S = float(os.environ.get("FCA_UPSTREAM_HEARTBEAT_S", "60"))
CONSOLE_LIMIT = 60  # rows of the differences table printed to the console

PROBE = (
    "import json, os, sys, pytest, torch; print(json.dumps({'torch': torch.__version__, "
    "'torch_file': os.path.realpath(torch.__file__), 'pytest': pytest.__version__, 'python': sys.executable, "
    "'py': '%d.%d.%d' % sys.version_info[:3]}))"
)


class Target:
    """Where the tests run: the python command, the test dir, the cache key."""

    def __init__(self, mode: str, python_argv: list[str], tree: Path, tests_dir: Path, cache_key: str) -> None:
        self.mode = mode
        self.python_argv = python_argv
        self.tree = tree
        self.tests_dir = tests_dir
        self.cache_key = cache_key
        self.probe: dict = {}

    @property
    def describe(self) -> str:
        p = self.probe
        what = {"overlay": "overlay venv (patched tree on the stock wheel)", "stock": "stock wheel (baseline)",
                "build": "source build", "wheel": "venv with the patched wheel"}[self.mode]
        return f"{p.get('torch', '?')} from {p.get('torch_file', '?')}, {what}; pytest {p.get('pytest', '?')}, python {p.get('py', '?')}"


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


def pristine_tests(tree: Path, cache: Path, sh: Shell, stack_dir: Path = paths.DEFAULT_STACK_DIR) -> Path:
    """The pin's test/ dir: the tree's own if the stack leaves tests alone there, else extracted from git.

    The baseline is stock torch running the pin's tests; a patch that changes a
    test must show up as a difference against it, so patched tests are not used.
    """
    from .lib.stack import Stack
    from .lib.tree import open_tree

    stack = Stack.load(stack_dir)
    t = open_tree(tree, sh)
    state = t.state(stack)
    t.verify_base(stack, state)
    changes_tests = [p for p in stack.touched if p.startswith("test/") or p == "pytest.ini"]
    if state.applied == 0 or not changes_tests:
        return tree / "test"
    if getattr(t, "read_at", None) is None or not state.base:
        raise ui.UserError(
            f"{tree} has {state.applied} patch(es) applied that change test files, and is not a git checkout: "
            "pass --torch-src with an unpatched v2.6.0 tree for the baseline"
        )
    dest = cache / "upstream-tests" / state.base[:16]
    if not (dest / ".complete").is_file():
        with ui.step(f"extracting the pin's test/ ({state.base[:12]}) into {dest}"):
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
            archive = sh.run(*Shell.git_argv("-C", str(tree), "archive", "--format=tar", state.base, "test", "pytest.ini"),
                             binary=True).stdout
            sh.run("tar", "-xf", "-", "-C", str(tmp), input=archive, binary=True, log=False)
            (tmp / ".complete").write_text(state.base + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
    return dest / "test"


def resolve_target(args: argparse.Namespace, cache: Path, sh: Shell) -> Target:
    if args.baseline:
        from .lib.overlay.venv import ensure_venv, venv_python
        from .lib.pinned_source import ensure_pinned_source

        tree = args.torch_src.resolve() if args.torch_src else ensure_pinned_source(cache, sh)
        _check_tree(tree, "--torch-src")
        venv = cache / "venvs" / "stock"
        ensure_venv(venv, cache, sh)
        target = Target("stock", [str(venv_python(venv))], tree, pristine_tests(tree, cache, sh), "stock")
    elif args.torch_build:
        tree = args.torch_build.resolve()
        _check_tree(tree, "--torch-build")
        import hashlib

        key = "build-" + hashlib.sha256(str(tree).encode()).hexdigest()[:12]
        target = Target("build", [args.python or sys.executable], tree, tree / "test", key)
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
        _check_tree(tree, "the overlay's tree")
        python = [sys.executable, str(OVERLAY_TOOL), "-q", *overlay_options(args), "run", "--", "python"]
        target = Target("overlay", python, tree, tree / "test", stamp["stack"])
    probe(target, sh)
    return target


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
    _check_tree(tree, "--torch-src" if args.torch_src else "the pinned source")
    return Target("wheel", [str(venv_python(venv))], tree, tree / "test", want)


def _check_tree(tree: Path, what: str) -> None:
    if not (tree / "test" / "conftest.py").is_file():
        raise ui.UserError(f"{what} {tree} has no test/conftest.py: expected a PyTorch v2.6.0 tree")


def probe(target: Target, sh: Shell) -> None:
    """Check the target's python imports torch and pytest 8.3 (not the tree's torch/, except for a build)."""
    argv = [*target.python_argv, "-c", PROBE]
    sh.log(argv, target.tests_dir, None)
    env = {**os.environ, "PYTHONPATH": ""}
    proc = subprocess.run(argv, cwd=target.tests_dir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
        if target.mode == "overlay" and errors:
            raise ui.UserError(f"overlay: {errors[-1][len('error: '):]}")
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ui.UserError(f"`{shlex.join(target.python_argv)}` cannot import torch and pytest ({tail})")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    target.probe = data
    if not data["pytest"].startswith("8.3."):
        raise ui.UserError(
            f"{data['python']} has pytest {data['pytest']}; upstream's 2.6 test/conftest.py needs pytest 8.3.x "
            "(pip install 'pytest>=8.3,<8.4')"
        )
    in_tree = Path(data["torch_file"]).is_relative_to(target.tree / "torch")
    if target.mode == "build" and not in_tree:
        raise ui.UserError(
            f"{data['python']} imports torch from {data['torch_file']}, not from {target.tree}: build it with "
            f"`python tools/build_torch.py --torch-src {target.tree} --mode develop` or pass --python"
        )
    if target.mode != "build" and in_tree:
        raise ui.UserError(f"{data['python']} imports torch from the source tree {target.tree}; it must use the venv's torch")


# -- running one file -----------------------------------------------------------------------

def upstream_has_shard_options(tests_dir: Path) -> bool:
    conftest = tests_dir / "conftest.py"
    return conftest.is_file() and "shard_addoptions" in conftest.read_text(errors="replace") \
        and (tests_dir / "pytest_shard_custom.py").is_file()


CACHE_HOME_STAMP = ".fca-cache-home"


def cache_env(cache: Path, key: str) -> dict[str, str]:
    """Inductor and torch-extension cache dirs for one target, reused between runs.

    Inductor's cached graphs name their headers by absolute path, so a cache dir that was copied or moved
    makes every later compile fail ("fatal error: <old dir>/....h: No such file or directory").  The dir
    records where it was made; anywhere else it is emptied before use.
    """
    root = cache / "test-caches" / key
    home = str(root.resolve())
    stamp = root / CACHE_HOME_STAMP
    recorded = stamp.read_text().strip() if stamp.is_file() else None
    if root.is_dir() and recorded != home:
        why = f"made at {recorded}" if recorded else "has no record of where it was made"
        ui.info(f"test caches {root} {why}: emptying them (Inductor's cache is not relocatable)")
        shutil.rmtree(root)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"), "TORCH_EXTENSIONS_DIR": str(root / "extensions")}
    for v in env.values():
        Path(v).mkdir(parents=True, exist_ok=True)
    if recorded != home:
        stamp.write_text(home + "\n")
    return env


def shard_cache_env(env: dict[str, str], shard: tuple[int, int] | None) -> dict[str, str]:
    """The cache dirs of one pytest process: a shard gets an Inductor cache of its own.

    Concurrent shards sharing one Inductor cache race: a test that clears the cache (upstream's
    AOTAutograd-cache tests remove its ``aotautograd`` dir) fails with "Directory not empty" while the
    other shard writes there.  The split of tests into shards is fixed, so each shard's cache stays warm.
    """
    if shard is None:
        return dict(env)
    i, n = shard
    inductor = Path(f"{env['TORCHINDUCTOR_CACHE_DIR']}-{i}of{n}")
    inductor.mkdir(parents=True, exist_ok=True)
    return {**env, "TORCHINDUCTOR_CACHE_DIR": str(inductor)}


@dataclasses.dataclass(frozen=True)
class Part:
    """One pytest process of a file: the whole file, or one of upstream's shards of it."""

    shard: tuple[int, int] | None
    xml: Path
    log: Path
    state: Path


class Runner:
    def __init__(self, args: argparse.Namespace, target: Target, junit_dir: Path, cache: Path, sh: Shell) -> None:
        self.args = args
        self.target = target
        self.junit_dir = junit_dir
        self.sh = sh
        self.plugin_dir = up.write_plugin(junit_dir)
        self.cache_env = cache_env(cache, target.cache_key)
        self.shard = up.parse_shard(args.shard) if args.shard else None
        self.upstream_shard = upstream_has_shard_options(target.tests_dir)
        self.start = time.monotonic()

    def remove_pch(self) -> None:
        """torch/extension.h's precompiled header out of the target (before and after a run)."""
        torch_file = self.target.probe.get("torch_file")
        if self.args.pch and torch_file:
            for name in up.PCH_FILES:
                (Path(torch_file).parent / "include" / "torch" / name).unlink(missing_ok=True)

    def parts(self, suite: up.Suite) -> list[Part]:
        """--shard I/N: that shard; --jobs N: shards 1/N..N/N, each with its own junit, log and state; else the file."""
        def part(shard: tuple[int, int] | None, stem: str) -> Part:
            return Part(shard, *(self.junit_dir / f"{stem}{ext}" for ext in (".xml", ".log", ".state")))

        n = self.args.jobs
        if self.shard or n == 1:
            return [part(self.shard, suite.slug)]
        return [part((i, n), f"{suite.slug}.{i}of{n}") for i in range(1, n + 1)]

    def argv(self, suite: up.Suite, part: Part) -> tuple[list[str], dict[str, str]]:
        argv = [*self.target.python_argv, "-m", "pytest", suite.file, "-p", "no:cacheprovider", "-p", up.PLUGIN_MODULE,
                f"--junitxml={part.xml}", "-q"]
        k = up.combine_k(suite.k, self.args.k)
        if k:
            argv += ["-k", k]
        env = {**shard_cache_env(self.cache_env, part.shard), "PYTHONPATH": str(self.plugin_dir),
               "FCA_UPSTREAM_STATE": str(part.state)}
        if self.args.strict_capture:
            env[up.STRICT_ENV] = "1"
        if self.args.pch:
            env[up.PCH_ENV] = "1"
        if part.shard:
            i, n = part.shard
            if self.upstream_shard:
                argv += ["--shard-id", str(i), "--num-shards", str(n)]
            else:
                env["FCA_UPSTREAM_SHARD"] = f"{i}/{n}"
        return argv, env

    def label(self, index: int, total: int) -> str:
        return f"[{index}/{total} {ui.fmt_seconds(time.monotonic() - self.start)}]"

    def run(self, suite: up.Suite, index: int, total: int) -> up.FileRun:
        parts = self.parts(suite)
        commands = []
        for part in parts:
            shutil.rmtree(part.state, ignore_errors=True)
            part.state.mkdir(parents=True)
            part.xml.unlink(missing_ok=True)
            commands.append(self.argv(suite, part))
        k = up.combine_k(suite.k, self.args.k)
        sel = f" -k {shlex.quote(k)}" if k else ""
        how = f" shard {self.args.shard}" if self.shard else f" as {len(parts)} concurrent shards" if len(parts) > 1 else ""
        ui.info(f"{self.label(index, total)} {suite.file}{sel}{how} ...")
        for argv, extra_env in commands:
            self.sh.log(argv, self.target.tests_dir, extra_env)
        t0 = time.monotonic()
        outcomes = self._execute(parts, commands, suite, index, total)
        seconds = time.monotonic() - t0
        run = merge_parts(suite.file, [self._collect(suite, part, rc, problem, seconds)
                                       for part, (rc, problem) in zip(parts, outcomes)])
        c = run.counts()
        summary = ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no tests"
        ui.info(f"{self.label(index, total)} {suite.file}: {summary} in {ui.fmt_seconds(seconds)}"
                + (f"  !! {run.problem}" if run.problem else ""))
        return run

    def _execute(self, parts: Sequence[Part], commands, suite: up.Suite, index: int, total: int) -> list[tuple[int | None, str | None]]:
        """Run the parts' pytest processes concurrently; (returncode, problem) per part."""
        limit = self.args.timeout * 60
        procs: list[subprocess.Popen] = []
        tees: list[threading.Thread] = []
        logs = []
        rcs: dict[int, int] = {}
        try:
            for part, (argv, extra_env) in zip(parts, commands):
                logf = open(part.log, "wb")
                logs.append(logf)
                try:
                    proc = subprocess.Popen(argv, cwd=self.target.tests_dir, env={**os.environ, **extra_env},
                                            start_new_session=True, stdout=subprocess.PIPE if self.args.verbose else logf,
                                            stderr=subprocess.STDOUT)
                except FileNotFoundError as err:
                    raise ui.UserError(f"cannot run {argv[0]}: {err.strerror}") from None
                procs.append(proc)
                if self.args.verbose:
                    tees.append(threading.Thread(target=_tee, args=(proc.stdout, logf), daemon=True))
                    tees[-1].start()
            t0 = time.monotonic()
            next_beat = t0 + HEARTBEAT_S
            while True:
                for i, proc in enumerate(procs):
                    if i not in rcs and proc.poll() is not None:
                        rcs[i] = proc.returncode
                if len(rcs) == len(procs):
                    break
                time.sleep(1.0)
                now = time.monotonic()
                if now - t0 > limit:
                    for i, proc in enumerate(procs):
                        if i not in rcs:
                            kill_group(proc)
                    problem = f"timed out after {ui.fmt_seconds(limit)} (--timeout); results up to then are from the progress log"
                    return [_verdict(rcs[i], part.log) if i in rcs else (None, problem) for i, part in enumerate(parts)]
                if now >= next_beat:
                    next_beat = now + HEARTBEAT_S
                    ui.info(f"{self.label(index, total)}   {suite.file}: {_progress_line([p.state for p in parts])}, "
                            f"{ui.fmt_seconds(now - t0)} in this file")
        except KeyboardInterrupt:
            for proc in procs:
                kill_group(proc)
            raise
        finally:
            for tee in tees:
                tee.join(timeout=5)
            for logf in logs:
                logf.close()
        return [_verdict(rcs[i], part.log) for i, part in enumerate(parts)]

    def _collect(self, suite, part: Part, rc, problem, seconds) -> up.FileRun:
        coll = up.read_collection(part.state)
        collected, selected = coll if coll else (None, None)
        if part.xml.is_file():
            results, coll_problem = up.results_for_file(up.read_junit(part.xml), suite.file)
            if coll_problem and not problem:
                problem = coll_problem
            elif coll_problem:
                problem = f"{coll_problem}; {problem}"
        else:
            results = up.read_progress(part.state)
            if not problem:
                problem = f"pytest (exit {rc}) wrote no {part.xml.name}: {_log_tail(part.log)}"
        complete = not suite.k and not self.args.k and not self.shard and problem is None
        return up.FileRun(suite.file, results, collected, selected, rc, seconds, problem,
                          part.xml if part.xml.is_file() else None, part.log, complete)


def _verdict(rc: int, log: Path) -> tuple[int, str | None]:
    if rc in (0, 1, 5):  # ok, tests failed, no tests collected
        return rc, None
    if rc < 0:
        return rc, f"pytest was killed by signal {-rc} ({_signame(-rc)})"
    what = {2: "interrupted (collection errors?)", 3: "internal error", 4: "usage error"}.get(rc, "unexpected exit")
    return rc, f"pytest exit code {rc}, {what}: {_log_tail(log)}"


def merge_parts(file: str, runs: Sequence[up.FileRun]) -> up.FileRun:
    """One FileRun from the concurrent shards of a file (a single run is returned as is)."""
    if len(runs) == 1:
        return runs[0]
    results: dict[str, up.TestResult] = {}
    for r in runs:
        results.update(r.results)

    def union(sets):
        return None if any(x is None for x in sets) else frozenset().union(*sets)

    problems = [f"shard {i}/{len(runs)}: {r.problem}" for i, r in enumerate(runs, 1) if r.problem]
    rcs = [r.returncode for r in runs]
    return up.FileRun(file, results, union([r.collected for r in runs]), union([r.selected for r in runs]),
                      None if None in rcs else max(rcs), max(r.seconds for r in runs),
                      "; ".join(problems) or None, runs[0].junit, runs[0].log,
                      all(r.complete for r in runs))


def _tee(stream, logf) -> None:
    for chunk in iter(lambda: stream.readline(), b""):
        logf.write(chunk)
        logf.flush()
        sys.stderr.write(chunk.decode(errors="replace"))
        sys.stderr.flush()


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"


def _log_tail(log: Path) -> str:
    try:
        lines = [l.strip() for l in log.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "no log"
    for l in reversed(lines):
        if l.startswith(("ERROR", "E ", "error:")) or "Error" in l:
            return l[:300]
    return lines[-1][:300] if lines else "no output"


def _progress_line(states: Sequence[Path]) -> str:
    done: dict[str, up.TestResult] = {}
    for state in states:
        done.update(up.read_progress(state))
    colls = [up.read_collection(state) for state in states]
    total = f"/{sum(len(c[1]) for c in colls)}" if all(colls) else ""
    if not any(colls) and not done:
        return "collecting"
    bad = sum(1 for r in done.values() if r.outcome in up.BAD)
    return f"{len(done)}{total} tests done" + (f" ({bad} failed)" if bad else "")


# -- import junit ---------------------------------------------------------------------------

def import_junit(xmls: Sequence[Path], suites: Sequence[up.Suite], explicit_files: bool) -> list[up.FileRun]:
    files = [s.file for s in suites]
    if not explicit_files:  # any file of any profile may appear in an imported junit
        files = list(dict.fromkeys(files + [s.file for p in up.PROFILES.values() for s in p.suites]))
    runs: dict[str, up.FileRun] = {}
    for xml in xmls:
        rows = up.read_junit(xml)
        by_file = up.split_junit_by_file(xml, files)
        for f, results in by_file.items():
            run = runs.setdefault(f, up.FileRun(f, {}, junit=xml.resolve()))
            run.results.update(results)
            run.seconds += sum(r.seconds for r in results.values())
        for f in files:
            _, problem = up.results_for_file([r for r in rows if not r[0]], f)
            if problem:
                run = runs.setdefault(f, up.FileRun(f, {}, junit=xml.resolve()))
                run.problem = problem
    if not runs:
        raise ui.UserError(f"{xmls[0]}: no test results of {', '.join(files)}")
    order = {f: i for i, f in enumerate(files)}
    return sorted(runs.values(), key=lambda r: order.get(r.file, len(order)))


# -- main -----------------------------------------------------------------------------------

def record(args: argparse.Namespace, runs: Sequence[up.FileRun], baselines: dict, target: Target | None) -> tuple[list[str], list[str]]:
    written, refused = [], []
    for run in runs:
        if run.problem:
            refused.append(f"{run.file} ({run.problem})")
            continue
        old = baselines.get(run.file)
        replace = run.complete and target is not None
        tests = up.merged_baseline(old, run, replace=replace)
        if target is not None:
            meta = {"source": "run", "date": up.now_iso(), "torch": target.probe.get("torch"),
                    "pytest": target.probe.get("pytest"), "python": target.probe.get("py"),
                    "seconds": round(run.seconds, 1), "whole_file": run.complete}
        else:
            jm = up.junit_meta(run.junit) if run.junit else {}
            meta = {"source": f"junit {run.junit.name if run.junit else '?'}", "imported": up.now_iso(),
                    "junit_timestamp": jm.get("timestamp"), "seconds": round(float(jm.get("time", run.seconds) or 0), 1)}
        if not replace and old is not None:
            meta["updated_from"] = dict(old.meta)
        written.append(str(up.write_baseline(args.expectations, run.file, tests, meta)))
    return written, refused


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
    cache = paths.cache_dir()
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
        runs = import_junit(args.from_junit, suites, bool(args.files))
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
        runner = Runner(args, target, junit_dir, cache, sh)
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
        recorded, refused = record(args, runs, baselines, target)
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
