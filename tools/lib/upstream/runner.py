"""Running upstream test files: one pytest per file, or a file's shards side by side (each its own junit,
log, state and Inductor cache), within a time limit, merged into one :class:`FileRun` per file."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import signal
import time
from pathlib import Path
from typing import Mapping, Sequence

from .. import jobs, ui
from ..shell import Shell
from .plugin import PCH_ENV, PCH_FILES, PLUGIN_MODULE, write_plugin
from .profiles import Suite, combine_k
from .report import STRICT_ENV
from .results import (BAD, RERUN_SUFFIX, FileRun, TestResult, read_collection, read_junit, read_progress, results_for_file,
                      with_reruns)
from .target import Target

HEARTBEAT_S = float(os.environ.get("FCA_UPSTREAM_HEARTBEAT_S", "60"))
CACHE_HOME_STAMP = ".fca-cache-home"
# MultiProcessTestCase._check_return_codes (torch/testing/_internal/common_distributed.py) raises this for a
# rank still running at the test's time limit (300 s unless DISTRIBUTED_TESTS_DEFAULT_TIMEOUT says otherwise):
# the test hung, its own checks did not fail.  A rank that crashed or failed an assertion reads otherwise.
RANK_HANG = "terminated or timed out after"


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How each file runs (from run_upstream_tests.py's command line)."""

    k: str | None = None  # and-ed with each file's own -k
    shard: tuple[int, int] | None = None  # only this shard (I, N) of each file
    jobs: int = 1  # each file as this many concurrent shards, 1/N..N/N
    timeout_s: float = 120 * 60  # per file
    strict: bool = False  # the stack's strict capture (STRICT_ENV)
    pch: bool = True  # load_inline with torch/extension.h's precompiled header
    rerun_hangs: bool = True  # run a test whose rank hung (RANK_HANG) once more, in a pytest of its own
    verbose: bool = False  # also stream pytest's output


@dataclasses.dataclass(frozen=True)
class Part:
    """One pytest process of a file: the whole file, or one of upstream's shards of it."""

    shard: tuple[int, int] | None
    xml: Path
    log: Path
    state: Path


def upstream_has_shard_options(tests_dir: Path) -> bool:
    conftest = tests_dir / "conftest.py"
    return conftest.is_file() and "shard_addoptions" in conftest.read_text(errors="replace") \
        and (tests_dir / "pytest_shard_custom.py").is_file()


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


class Runner:
    """Runs the files of one target, one after the other, with their junit, logs and state in ``junit_dir``."""

    def __init__(self, options: RunOptions, target: Target, junit_dir: Path, cache: Path, sh: Shell) -> None:
        self.options = options
        self.target = target
        self.junit_dir = junit_dir
        self.sh = sh
        self.plugin_dir = write_plugin(junit_dir)
        self.cache_env = cache_env(cache, target.cache_key)
        self.upstream_shard = upstream_has_shard_options(target.tests_dir)
        self.start = time.monotonic()

    def remove_pch(self) -> None:
        """torch/extension.h's precompiled header out of the target (before and after a run)."""
        torch_file = self.target.probe.get("torch_file")
        if self.options.pch and torch_file:
            for name in PCH_FILES:
                (Path(torch_file).parent / "include" / "torch" / name).unlink(missing_ok=True)

    def parts(self, suite: Suite) -> list[Part]:
        """--shard I/N: that shard; --jobs N: shards 1/N..N/N, each with its own junit, log and state; else the file."""
        def part(shard: tuple[int, int] | None, stem: str) -> Part:
            return Part(shard, *(self.junit_dir / f"{stem}{ext}" for ext in (".xml", ".log", ".state")))

        n = self.options.jobs
        if self.options.shard or n == 1:
            return [part(self.options.shard, suite.slug)]
        return [part((i, n), f"{suite.slug}.{i}of{n}") for i in range(1, n + 1)]

    def job(self, suite: Suite, part: Part, tests: Sequence[str] = ()) -> jobs.Job:
        """The pytest of one part of ``suite``, or (``tests``) of these tests of its file only."""
        where = [f"{suite.file}::{t}" for t in tests] if tests else [suite.file]
        argv = [*self.target.python_argv, "-m", "pytest", *where, "-p", "no:cacheprovider", "-p", PLUGIN_MODULE,
                f"--junitxml={part.xml}", "-q"]
        k = None if tests else combine_k(suite.k, self.options.k)
        if k:
            argv += ["-k", k]
        env = {**shard_cache_env(self.cache_env, part.shard), "PYTHONPATH": str(self.plugin_dir),
               "FCA_UPSTREAM_STATE": str(part.state)}
        if self.options.strict:
            env[STRICT_ENV] = "1"
        if self.options.pch:
            env[PCH_ENV] = "1"
        if part.shard:
            i, n = part.shard
            if self.upstream_shard:
                argv += ["--shard-id", str(i), "--num-shards", str(n)]
            else:
                env["FCA_UPSTREAM_SHARD"] = f"{i}/{n}"
        return jobs.Job(tuple(argv), part.log, self.target.tests_dir, tuple(env.items()))

    def label(self, index: int, total: int) -> str:
        return f"[{index}/{total} {ui.fmt_seconds(time.monotonic() - self.start)}]"

    def run(self, suite: Suite, index: int, total: int) -> FileRun:
        parts = self.parts(suite)
        for part in parts:
            reset(part)
        k = combine_k(suite.k, self.options.k)
        sel = f" -k {shlex.quote(k)}" if k else ""
        shard = self.options.shard
        how = f" shard {shard[0]}/{shard[1]}" if shard else f" as {len(parts)} concurrent shards" if len(parts) > 1 else ""
        ui.info(f"{self.label(index, total)} {suite.file}{sel}{how} ...")
        t0 = time.monotonic()
        outcomes = self._execute(parts, suite, index, total)
        seconds = time.monotonic() - t0
        run = merge_parts(suite.file, [self._collect(suite, part, rc, problem, seconds)
                                       for part, (rc, problem) in zip(parts, outcomes)])
        c = run.counts()
        summary = ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no tests"
        ui.info(f"{self.label(index, total)} {suite.file}: {summary} in {ui.fmt_seconds(seconds)}"
                + (f"  !! {run.problem}" if run.problem else ""))
        again = hung_tests(run) if self.options.rerun_hangs else []
        return self._rerun(suite, run, again, index, total) if again else run

    def _rerun(self, suite: Suite, run: FileRun, tests: Sequence[str], index: int, total: int) -> FileRun:
        """``run`` with ``tests`` run once more, in one pytest of their own (upstream's CI reruns a failed test
        in a new process the same way); each rerun result keeps its first run's outcome in ``first``."""
        part = Part(None, *(self.junit_dir / f"{suite.slug}{RERUN_SUFFIX}{ext}" for ext in (".xml", ".log", ".state")))
        reset(part)
        ui.info(f"{self.label(index, total)} {suite.file}: {len(tests)} test(s) hung (a rank ran past "
                f"MultiProcessTestCase's time limit); running them once more: {' '.join(tests)}")
        t0 = time.monotonic()
        [ended] = jobs.run_all(self.sh, [self.job(suite, part, tests)], limit_s=self.options.timeout_s,
                               beat_s=HEARTBEAT_S, on_beat=lambda *_: None, tee=self.options.verbose)
        if ended.unstarted:
            raise ui.UserError(ended.unstarted)
        seconds = time.monotonic() - t0
        results = self._collect(suite, part, ended.returncode, None, seconds).results
        again = {t: results[t] for t in tests if t in results}
        ui.info(f"{self.label(index, total)} {suite.file}: once more, "
                + (", ".join(f"{t} {r.outcome}" for t, r in again.items()) or f"no result ({log_tail(part.log)})")
                + f" in {ui.fmt_seconds(seconds)}")
        return dataclasses.replace(with_reruns(run, again), seconds=run.seconds + seconds)

    def _execute(self, parts: Sequence[Part], suite: Suite, index: int, total: int) -> list[tuple[int | None, str | None]]:
        """Run the parts' pytest processes concurrently; (returncode, problem) per part."""
        limit = self.options.timeout_s

        def beat(seconds: float, ended: Mapping[int, jobs.Ended]) -> None:
            ui.info(f"{self.label(index, total)}   {suite.file}: {progress_line([p.state for p in parts])}, "
                    f"{ui.fmt_seconds(seconds)} in this file")

        ended = jobs.run_all(self.sh, [self.job(suite, part) for part in parts], limit_s=limit, beat_s=HEARTBEAT_S,
                             on_beat=beat, tee=self.options.verbose)
        for e in ended:
            if e.unstarted:
                raise ui.UserError(e.unstarted)
        timed_out = f"timed out after {ui.fmt_seconds(limit)} (--timeout); results up to then are from the progress log"
        return [(None, timed_out) if e.timed_out else verdict(e.returncode, part.log) for e, part in zip(ended, parts)]

    def _collect(self, suite: Suite, part: Part, rc: int | None, problem: str | None, seconds: float) -> FileRun:
        coll = read_collection(part.state)
        collected, selected = coll if coll else (None, None)
        if part.xml.is_file():
            results, coll_problem = results_for_file(read_junit(part.xml), suite.file)
            if coll_problem and not problem:
                problem = coll_problem
            elif coll_problem:
                problem = f"{coll_problem}; {problem}"
        else:
            results = read_progress(part.state)
            if not problem:
                problem = f"pytest (exit {rc}) wrote no {part.xml.name}: {log_tail(part.log)}"
        complete = not suite.k and not self.options.k and not self.options.shard and problem is None
        return FileRun(suite.file, results, collected, selected, rc, seconds, problem,
                       part.xml if part.xml.is_file() else None, part.log, complete)


def reset(part: Part) -> None:
    """No junit or state of an earlier run of ``part`` left."""
    shutil.rmtree(part.state, ignore_errors=True)
    part.state.mkdir(parents=True)
    part.xml.unlink(missing_ok=True)


def hung_tests(run: FileRun) -> list[str]:
    """The tests of ``run`` that failed because a rank hung (RANK_HANG), in id order."""
    return sorted(r.id for r in run.results.values() if r.outcome in BAD and RANK_HANG in r.message)


def verdict(rc: int, log: Path) -> tuple[int, str | None]:
    if rc in (0, 1, 5):  # ok, tests failed, no tests collected
        return rc, None
    if rc < 0:
        return rc, f"pytest was killed by signal {-rc} ({_signame(-rc)})"
    what = {2: "interrupted (collection errors?)", 3: "internal error", 4: "usage error"}.get(rc, "unexpected exit")
    return rc, f"pytest exit code {rc}, {what}: {log_tail(log)}"


def merge_parts(file: str, runs: Sequence[FileRun]) -> FileRun:
    """One FileRun from the concurrent shards of a file (a single run is returned as is)."""
    if len(runs) == 1:
        return runs[0]
    results: dict[str, TestResult] = {}
    for r in runs:
        results.update(r.results)

    def union(sets):
        return None if any(x is None for x in sets) else frozenset().union(*sets)

    problems = [f"shard {i}/{len(runs)}: {r.problem}" for i, r in enumerate(runs, 1) if r.problem]
    rcs = [r.returncode for r in runs]
    return FileRun(file, results, union([r.collected for r in runs]), union([r.selected for r in runs]),
                   None if None in rcs else max(rcs), max(r.seconds for r in runs),
                   "; ".join(problems) or None, runs[0].junit, runs[0].log,
                   all(r.complete for r in runs))


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"


def log_tail(log: Path) -> str:
    """The line of a pytest log that says what went wrong: its last error, else its last line."""
    try:
        lines = [l.strip() for l in log.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "no log"
    for l in reversed(lines):
        if l.startswith(("ERROR", "E ", "error:")) or "Error" in l:
            return l[:300]
    return lines[-1][:300] if lines else "no output"


def progress_line(states: Sequence[Path]) -> str:
    done: dict[str, TestResult] = {}
    for state in states:
        done.update(read_progress(state))
    colls = [read_collection(state) for state in states]
    total = f"/{sum(len(c[1]) for c in colls)}" if all(colls) else ""
    if not any(colls) and not done:
        return "collecting"
    bad = sum(1 for r in done.values() if r.outcome in BAD)
    return f"{len(done)}{total} tests done" + (f" ({bad} failed)" if bad else "")
