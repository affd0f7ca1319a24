"""Expectations: the stock baseline of each file (test/expectations/<file>.json), the stack's recorded
changes (changes.json), and the comparison of a run with them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Mapping, Sequence

from .. import paths, ui
from .profiles import file_slug, normalize_file
from .results import BAD, OUTCOMES, PASSLIKE, FileRun, junit_meta, now_iso

CHANGE_OUTCOMES: tuple[str, ...] = OUTCOMES + ("removed",)
EXPECTATIONS_DIR = paths.REPO_ROOT / "test" / "expectations"
CHANGES_FILE = "changes.json"


@dataclasses.dataclass(frozen=True)
class Baseline:
    file: str
    tests: Mapping[str, str]
    meta: Mapping[str, object]


@dataclasses.dataclass(frozen=True)
class Change:
    test: str
    file: str
    outcome: str
    reason: str
    patch: str


def expectation_path(exp_dir: Path, file: str) -> Path:
    return exp_dir / f"{file_slug(file)}.json"


def load_baseline(exp_dir: Path, file: str) -> Baseline | None:
    path = expectation_path(exp_dir, file)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        tests = data["tests"]
    except (ValueError, KeyError, TypeError) as err:
        raise ui.UserError(f"{path}: not an expectation file ({err}); re-record it with --baseline --record-baseline") from None
    bad = sorted({v for v in tests.values() if v not in OUTCOMES})
    if bad:
        raise ui.UserError(f"{path}: unknown outcome {bad[0]!r} (known: {', '.join(OUTCOMES)})")
    return Baseline(file, dict(tests), data.get("measured", {}))


def load_changes(exp_dir: Path, series: Sequence[str] | None = None, applied: Sequence[str] | None = None) -> list[Change]:
    """``changes.json``: what the stack intends to change, each with reason and patch; with ``applied``
    (the patches of the tree under test, a prefix of ``series``), only those patches' changes."""
    path = exp_dir / CHANGES_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise ui.UserError(f"{path}: invalid JSON ({err})") from None
    if not isinstance(data, list):
        raise ui.UserError(f"{path}: expected a JSON list of {{test, file, outcome, reason, patch}}")
    changes: list[Change] = []
    seen: set[tuple[str, str]] = set()
    for i, entry in enumerate(data):
        where = f"{path}: entry {i}"
        if not isinstance(entry, dict):
            raise ui.UserError(f"{where}: expected an object")
        missing = [k for k in ("test", "file", "outcome", "reason", "patch") if not entry.get(k)]
        if missing:
            raise ui.UserError(f"{where}: missing {', '.join(missing)}")
        if entry["outcome"] not in CHANGE_OUTCOMES:
            raise ui.UserError(f"{where}: outcome {entry['outcome']!r} is not one of {', '.join(CHANGE_OUTCOMES)}")
        if series is not None and entry["patch"] not in series:
            raise ui.UserError(f"{where}: patch {entry['patch']!r} is not in patches/series")
        ch = Change(entry["test"], normalize_file(entry["file"]), entry["outcome"], entry["reason"], entry["patch"])
        if (ch.file, ch.test) in seen:
            raise ui.UserError(f"{where}: {ch.file}::{ch.test} is recorded twice")
        seen.add((ch.file, ch.test))
        if applied is None or ch.patch in applied:
            changes.append(ch)
    return changes


def counts_of(tests: Mapping[str, str]) -> dict[str, int]:
    c = {o: 0 for o in OUTCOMES}
    for v in tests.values():
        c[v] += 1
    return c


def write_baseline(exp_dir: Path, file: str, tests: Mapping[str, str], meta: Mapping[str, object]) -> Path:
    path = expectation_path(exp_dir, file)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "file": file,
        "what": "outcome of every test of this file on stock torch==2.6.0, full profile (tools/run_upstream_tests.py)",
        "measured": dict(meta),
        "counts": counts_of(tests),
        "tests": {k: tests[k] for k in sorted(tests)},
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)
    return path


def merged_baseline(old: Baseline | None, run: FileRun, *, replace: bool) -> dict[str, str]:
    tests = {} if (replace or old is None) else dict(old.tests)
    tests.update({tid: r.outcome for tid, r in run.results.items()})
    return tests


def record_baselines(exp_dir: Path, runs: Sequence[FileRun], baselines: Mapping[str, Baseline | None],
                     probe: Mapping[str, str] | None) -> tuple[list[str], list[str]]:
    """Write the expectation files from ``runs``: those of a run (``probe``: what ran them) or of imported
    junit (None).  A whole file's run replaces its expectations, any other updates the tests it has; a file
    with a problem is refused.  Returns (the files written, the files refused with why)."""
    written, refused = [], []
    for run in runs:
        if run.problem:
            refused.append(f"{run.file} ({run.problem})")
            continue
        old = baselines.get(run.file)
        replace = run.complete and probe is not None
        tests = merged_baseline(old, run, replace=replace)
        if probe is not None:
            meta = {"source": "run", "date": now_iso(), "torch": probe.get("torch"), "pytest": probe.get("pytest"),
                    "python": probe.get("py"), "seconds": round(run.seconds, 1), "whole_file": run.complete}
        else:
            jm = junit_meta(run.junit) if run.junit else {}
            meta = {"source": f"junit {run.junit.name if run.junit else '?'}", "imported": now_iso(),
                    "junit_timestamp": jm.get("timestamp"), "seconds": round(float(jm.get("time", run.seconds) or 0), 1)}
        if not replace and old is not None:
            meta["updated_from"] = dict(old.meta)
        written.append(str(write_baseline(exp_dir, run.file, tests, meta)))
    return written, refused


# -- comparison -----------------------------------------------------------------------------

# kinds of difference; the bool says whether it fails the run
REGRESSION = "REGRESSION"  # baseline passed, now failed/error/xfailed
UNEXPECTED_PASS = "UNEXPECTED PASS"  # baseline failed/error/xfailed, now passed
NOW_SKIPPED = "NOW SKIPPED"  # baseline passed, now skipped: a skip is never a pass
NEW = "NEW"  # not in the baseline
MISSING = "MISSING"  # in the baseline, in the run's selection, no result
CHANGE_NOT_MET = "RECORDED CHANGE NOT MET"  # changes.json says X, the run says Y
EXPECTED_CHANGE = "EXPECTED CHANGE"  # changes.json says X and the run says X
CHANGED = "CHANGED"  # harmless difference (failed<->error, skipped->passed, ...)
FAILING_KINDS = frozenset({REGRESSION, UNEXPECTED_PASS, NOW_SKIPPED, NEW, MISSING, CHANGE_NOT_MET})


def classify(baseline: str | None, now: str | None, change: Change | None = None) -> str | None:
    """The kind of difference between a baseline outcome and the run's (None: no difference).

    ``now`` None means selected but no result.  Callers drop tests the run
    filtered out (-k, shard, profile) before calling this.
    """
    if change is not None:
        want = None if change.outcome == "removed" else change.outcome
        if now == want:
            return EXPECTED_CHANGE
        return CHANGE_NOT_MET
    if now is None:
        return MISSING if baseline is not None else None
    if baseline is None:
        return NEW
    if now == baseline:
        return None
    if now in BAD and baseline not in BAD:
        return REGRESSION
    if now == "xfailed" and baseline in PASSLIKE:
        return REGRESSION
    if now in PASSLIKE and baseline in BAD | {"xfailed"}:
        return UNEXPECTED_PASS
    if now == "skipped" and baseline in PASSLIKE:
        return NOW_SKIPPED
    return CHANGED


@dataclasses.dataclass(frozen=True)
class Diff:
    file: str
    test: str
    baseline: str | None
    now: str | None
    kind: str
    reason: str = ""  # from changes.json
    message: str = ""  # first line of this run's failure/skip message

    @property
    def failing(self) -> bool:
        return self.kind in FAILING_KINDS


@dataclasses.dataclass
class Comparison:
    diffs: list[Diff]
    baseline_counts: dict[str, int]  # baseline outcomes of the tests in the run's selection
    now_counts: dict[str, int]
    filtered: int  # baseline tests the selection left out
    unknown: int  # baseline tests of files that died before collection finished (the problem fails the run)
    no_baseline: list[str]  # files without an expectation file
    problems: list[tuple[str, str]]  # (file, problem)

    @property
    def failures(self) -> list[Diff]:
        return [d for d in self.diffs if d.failing]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.problems


def compare(runs: Sequence[FileRun], baselines: Mapping[str, Baseline | None], changes: Sequence[Change]) -> Comparison:
    by_key = {(c.file, c.test): c for c in changes}
    diffs: list[Diff] = []
    bcounts = {o: 0 for o in OUTCOMES}
    ncounts = {o: 0 for o in OUTCOMES}
    filtered = 0
    unknown = 0
    no_baseline = []
    problems = []
    for run in runs:
        base = baselines.get(run.file)
        if base is None:
            no_baseline.append(run.file)
        btests: Mapping[str, str] = base.tests if base else {}
        if run.problem:
            problems.append((run.file, run.problem))
        recorded = {t for (f, t) in by_key if f == run.file}
        for tid in sorted(set(btests) | set(run.results) | recorded):
            res = run.results.get(tid)
            if res is None and run.collected is not None and tid in run.collected and tid not in (run.selected or ()):
                filtered += tid in btests
                continue
            if res is None and run.collected is None and run.problem:
                unknown += 1  # not collected: cannot tell selected from filtered; the problem is the failure
                continue
            if tid in btests:
                bcounts[btests[tid]] += 1
            if res is not None:
                ncounts[res.outcome] += 1
            change = by_key.get((run.file, tid))
            kind = classify(btests.get(tid), res.outcome if res else None, change)
            if kind is not None:
                diffs.append(Diff(run.file, tid, btests.get(tid), res.outcome if res else None, kind,
                                  change.reason if change else "", res.message if res else ""))
    return Comparison(diffs, bcounts, ncounts, filtered, unknown, no_baseline, problems)
