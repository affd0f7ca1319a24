#!/usr/bin/env python3
"""Check that the stack is bisectable: each prefix applies, builds and passes upstream's tests.

For each prefix P1..Pk asked for (default: every prefix, the whole stack included):
  1. a stack dir with the first k patches of the series (and the pin manifest);
  2. a git worktree of the pinned source at the pin, and ``apply_patches.py`` on it;
  3. ``overlay.py build`` of that tree (one overlay dir and venv under --work-dir, reused by
     every prefix: ccache makes a rebuild cheap);
  4. ``run_upstream_tests.py`` on it (the ci profile by default), with the recorded changes of
     the prefix's own patches only.
The pinned source in the cache is never touched: every prefix gets its own worktree.  A table at
the end gives, per prefix, the stage reached, the time and the test report.

Exit codes: 0 every prefix passed, 1 a prefix failed (the table says where), 2 usage, 3 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib.pin import PIN
from .lib.pinned_source import ensure_pinned_source
from .lib.shell import CommandError, Shell
from .lib.stack import Stack

TOOLS = paths.TOOLS_DIR
STAGES = ("apply", "build", "tests")


@dataclasses.dataclass(frozen=True)
class Prefix:
    """The first ``k`` patches of the stack, and where this run keeps its pieces."""

    k: int
    top: str  # the patch file the prefix ends on
    work: Path

    @property
    def stack_dir(self) -> Path:
        return self.work / f"stack-{self.k}"

    @property
    def tree(self) -> Path:
        return self.work / f"tree-{self.k}"

    @property
    def report(self) -> Path:
        return self.work / f"report-{self.k}.md"

    @property
    def junit_dir(self) -> Path:
        return self.work / f"junit-{self.k}"


@dataclasses.dataclass
class Outcome:
    prefix: Prefix
    reached: str = ""  # the last stage that passed
    failed: str = ""  # the stage that failed, "" if none
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def parse_prefixes(spec: Sequence[int] | None, start: int | None, n: int) -> list[int]:
    """The prefix lengths to check, in order: ``--prefixes``, ``--from K`` (K..n) or every one (1..n)."""
    ks = list(spec) if spec else list(range(start or 1, n + 1))
    bad = [k for k in ks if not 1 <= k <= n]
    if bad:
        raise ui.UserError(f"prefix {bad[0]} is outside the stack's 1..{n} patches", exit_code=ui.EXIT_USAGE)
    return sorted(set(ks))


def write_prefix_stack(stack: Stack, k: int, dest: Path) -> None:
    """``dest``: the series' first ``k`` patches, their files and the pin manifest, as a stack dir."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    names = stack.names[:k]
    (dest / "series").write_text("".join(f"{name}\n" for name in names))
    for name in names:
        shutil.copy2(stack.dir / name, dest / name)
    for extra in sorted(stack.dir.iterdir()):  # the pin manifest and whatever else is not a patch
        if extra.is_file() and extra.name != "series" and not extra.name.endswith(".patch"):
            shutil.copy2(extra, dest / extra.name)


def fresh_worktree(pinned: Path, dest: Path, sh: Shell) -> None:
    """A detached worktree of the pinned source at the pin, replacing the one a previous run left."""
    if dest.exists() and sh.git_proc("worktree", "remove", "--force", str(dest), cwd=pinned, check=False).returncode != 0:
        shutil.rmtree(dest)  # not a worktree of ``pinned`` (any more): a leftover dir
    sh.git("worktree", "prune", cwd=pinned)
    sh.git("worktree", "add", "--detach", str(dest), PIN.git_tag, cwd=pinned)


def tool(sh: Shell, name: str, *args: str) -> None:
    """Run one of our tools with this interpreter; its output goes to our log (stderr)."""
    sh.run(sys.executable, str(TOOLS / name), *args, capture=False, chatter=True)


def apply_prefix(prefix: Prefix, stack: Stack, pinned: Path, sh: Shell) -> None:
    """The prefix's stack dir, and its worktree of ``pinned`` with apply_patches.py run on it."""
    write_prefix_stack(stack, prefix.k, prefix.stack_dir)
    fresh_worktree(pinned, prefix.tree, sh)
    tool(sh, "apply_patches.py", "-q", "--torch-src", str(prefix.tree), "--stack", str(prefix.stack_dir))


def check(prefix: Prefix, stack: Stack, pinned: Path, args: argparse.Namespace, sh: Shell) -> Outcome:
    out = Outcome(prefix)
    t0 = time.monotonic()
    overlay = ["--overlay-dir", str(args.work_dir / "overlay"), "--stack", str(prefix.stack_dir)]
    steps = {
        "apply": lambda: apply_prefix(prefix, stack, pinned, sh),
        "build": lambda: tool(sh, "overlay.py", *overlay, "build", "--torch-src", str(prefix.tree)),
        "tests": lambda: tool(sh, "run_upstream_tests.py", "--profile", args.profile, *overlay, "--torch-src", str(prefix.tree),
                              "--report", str(prefix.report), "--junit-dir", str(prefix.junit_dir),
                              *(["--files", *args.files] if args.files else []), *(["-k", args.k] if args.k else []),
                              *(["--strict-capture"] if args.strict_capture else []), "--jobs", str(args.jobs)),
    }
    for stage in STAGES[: 2 if args.no_tests else 3]:
        ui.info(f"==> prefix {prefix.k} ({prefix.top}): {stage} [{ui.fmt_seconds(time.monotonic() - t0)}]")
        try:
            steps[stage]()
        except CommandError:
            out.failed = stage
            break
        out.reached = stage
    out.seconds = time.monotonic() - t0
    return out


def render(outcomes: Sequence[Outcome], tests_ran: bool) -> str:
    rows = ["| prefix | top patch | result | time | report |", "|---|---|---|---:|---|"]
    for o in outcomes:
        result = f"FAILED at {o.failed}" if o.failed else ("passed" if tests_ran else "applies and builds")
        report = str(o.prefix.report) if tests_ran and o.reached in ("build", "tests") else "-"
        rows.append(f"| P1-P{o.prefix.k} | `{o.prefix.top}` | {result} | {ui.fmt_seconds(o.seconds)} | {report} |")
    return "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("check_prefixes.py", __doc__)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--prefixes", type=int, nargs="+", metavar="K", help="check these prefix lengths (P1..PK each)")
    which.add_argument("--from", dest="start", type=int, metavar="K", help="check prefixes K..N (after changing patch K)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="the stack (default: %(default)s)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="stack dirs, worktrees, overlay, reports (default: <cache>/prefixes; the overlay venv is ~6 GB)")
    p.add_argument("--profile", choices=("ci", "full"), default="ci", help="upstream test profile (default: %(default)s)")
    p.add_argument("--files", nargs="+", metavar="F", help="only these test files (relative to test/)")
    p.add_argument("-k", help="pytest -k expression, passed to run_upstream_tests.py")
    p.add_argument("--strict-capture", action="store_true", help="run the tests with P5's strict capture")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="run each test file as N concurrent shards (run_upstream_tests.py --jobs; default: %(default)s)")
    p.add_argument("--no-tests", action="store_true", help="only apply and build each prefix")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    stack = Stack.load(args.stack.resolve())
    ks = parse_prefixes(args.prefixes, args.start, len(stack))
    cache = paths.cache_dir()  # resolved once; everything below takes it from here
    args.work_dir = (args.work_dir or cache / "prefixes").resolve()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    sh = Shell(verbose=not args.quiet)
    pinned = ensure_pinned_source(cache, sh)
    outcomes = []
    for k in ks:
        outcomes.append(check(Prefix(k, stack.names[k - 1], args.work_dir), stack, pinned, args, sh))
        ui.info(render(outcomes[-1:], not args.no_tests))
    ui.out(render(outcomes, not args.no_tests))
    return ui.EXIT_OK if all(o.ok for o in outcomes) else ui.EXIT_FAILED


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
