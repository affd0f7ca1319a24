"""The markdown report of a run: verdict, outcome counts, files, differences, strict-capture
violations, slowest tests."""

from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

from .. import ui
from .expectations import Comparison, Diff
from .results import OUTCOMES, FileRun

# -- strict capture -------------------------------------------------------------------------

# P5's strict capture: the env var turns on torch._dynamo.config.compiled_autograd_strict_dummies
# in every pytest process; a violation raises CompiledAutogradStrictError, whose message starts
# with the marker (and names the autograd node).
STRICT_ENV = "TORCH_COMPILED_AUTOGRAD_STRICT_DUMMIES"
STRICT_MARKER = "compiled autograd strict capture:"


@dataclasses.dataclass(frozen=True)
class Violation:
    file: str
    test: str
    node: str  # what the error names: "<Node> (NodeCall i)", or "?" if the message was cut
    message: str


def strict_violations(runs: Sequence[FileRun]) -> list[Violation]:
    """Tests that failed because a strict capture read a dummy's metadata."""
    out = []
    for run in runs:
        for r in sorted(run.results.values(), key=lambda r: r.id):
            if r.outcome in ("failed", "error") and STRICT_MARKER in r.message:
                rest = r.message.split(STRICT_MARKER, 1)[1].strip()
                node = rest.split(" used the metadata", 1)[0] if " used the metadata" in rest else "?"
                out.append(Violation(run.file, r.id, node, r.message))
    return out


def render_strict(violations: Sequence[Violation]) -> list[str]:
    lines = ["", "## Strict capture", "", f"Strict-mode violations (`{STRICT_ENV}=1`): **{len(violations)}** (target 0)."]
    if violations:
        by_node = collections.Counter(v.node for v in violations)
        lines += ["", "| node | tests |", "|---|---:|"]
        lines += [f"| {_cell(n)} | {c} |" for n, c in sorted(by_node.items(), key=lambda kv: (-kv[1], kv[0]))]
        lines += ["", "| test | file | node |", "|---|---|---|"]
        lines += [f"| `{_cell(v.test)}` | `{v.file}` | {_cell(v.node)} |" for v in violations]
    return lines


# -- report ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RunInfo:
    profile: str
    mode: str  # overlay | stock | build | junit
    target: str  # one line: what torch ran
    tests_dir: str
    selection: str  # -k / shard / files
    started: str
    seconds: float
    recorded: tuple[str, ...] = ()
    strict: bool = False  # run with P5's strict capture (STRICT_ENV)


def _cell(text: str | None) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def _short(message: str, limit: int = 160) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


def failure_groups(diffs: Sequence[Diff]) -> list[tuple[str, list[Diff]]]:
    """Unexpected differences grouped by message, largest group first: 141 regressions read as one cause."""
    groups: dict[str, list[Diff]] = {}
    for d in diffs:
        groups.setdefault(_short(d.message) or f"(no message: now {d.now or 'missing'})", []).append(d)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def render_report(info: RunInfo, runs: Sequence[FileRun], cmp: Comparison, *, limit: int | None = None) -> str:
    """Markdown.  ``limit`` caps each long list (console); the file gets everything."""
    n_fail = len(cmp.failures)
    verdict = "OK: every outcome is as expected" if cmp.ok else (
        f"FAILED: {n_fail} unexpected difference(s)" + (f", {len(cmp.problems)} file problem(s)" if cmp.problems else "")
    )
    if info.recorded:
        verdict = (f"RECORDED: the baseline of {len(info.recorded)} file(s) was written from these results; the differences "
                   f"below are against the previous expectations ({n_fail} would have failed)")
    lines = [
        f"# Upstream tests: profile `{info.profile}`, {info.mode}",
        "",
        f"- result: **{verdict}**",
        f"- torch: {info.target}",
        f"- tests from: `{info.tests_dir}`",
        f"- selection: {info.selection}",
        f"- started {info.started}, took {ui.fmt_seconds(info.seconds)}",
    ]
    if info.strict:
        lines.append(f"- strict capture: `{STRICT_ENV}=1` (violations: see Strict capture)")
    for f in info.recorded:
        lines.append(f"- recorded baseline: `{f}`")
    reruns = [(run.file, r) for run in runs for r in sorted(run.results.values(), key=lambda r: r.id) if r.first]
    if reruns:
        lines.append(f"- ran once more: {len(reruns)} test(s) whose rank hung (see Reruns); the outcomes above are "
                     "the second run's")
    lines += ["", "## Outcomes", "", "| outcome | baseline | now |", "|---|---:|---:|"]
    for o in OUTCOMES:
        lines.append(f"| {o} | {cmp.baseline_counts[o]} | {cmp.now_counts[o]} |")
    lines.append(f"| total | {sum(cmp.baseline_counts.values())} | {sum(cmp.now_counts.values())} |")
    lines += [
        "",
        f"Skipped now: {cmp.now_counts['skipped']} (never counted as passes).  "
        f"Baseline tests outside this run's selection (-k, shard, profile): {cmp.filtered}."
        + (f"  Baseline tests without a result because their file died before collection finished: {cmp.unknown}."
           if cmp.unknown else ""),
        "",
        "## Files",
        "",
        "| file | " + " | ".join(OUTCOMES) + " | time | pytest exit | problem |",
        "|---|" + "---:|" * len(OUTCOMES) + "---:|---:|---|",
    ]
    for run in runs:
        c = run.counts()
        lines.append(
            f"| `{run.file}` | " + " | ".join(str(c[o]) for o in OUTCOMES)
            + f" | {ui.fmt_seconds(run.seconds)} | {'-' if run.returncode is None else run.returncode} | {_cell(run.problem)} |"
        )
    if cmp.no_baseline:
        lines += ["", "No baseline (every test is NEW) for: " + ", ".join(f"`{f}`" for f in cmp.no_baseline)
                  + ".  Record it on stock torch: `python tools/run_upstream_tests.py --baseline --profile full --files "
                  + " ".join(cmp.no_baseline) + " --record-baseline`."]
    lines += ["", "## Differences", ""]
    if not cmp.diffs:
        lines.append("None.")
    else:
        lines += ["| verdict | test | file | baseline | now | reason | message |", "|---|---|---|---|---|---|---|"]
        ordered = sorted(cmp.diffs, key=lambda d: (not d.failing, d.kind, d.file, d.test))
        shown = ordered if limit is None else ordered[:limit]
        for d in shown:
            reason = d.reason if d.reason else ("UNEXPECTED" if d.failing else "")
            lines.append(f"| {d.kind} | `{_cell(d.test)}` | `{d.file}` | {_cell(d.baseline)} | {_cell(d.now)} | {_cell(reason)} "
                         f"| {_cell(_short(d.message))} |")
        if len(shown) < len(ordered):
            lines.append(f"| ... | {len(ordered) - len(shown)} more in the report file | | | | | |")
    kinds: dict[str, int] = {}
    for d in cmp.diffs:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    if kinds:
        lines += ["", "By kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))]
    groups = failure_groups(cmp.failures)
    if groups:
        lines += ["", "## Unexpected differences by message", "", "| count | message | e.g. |", "|---:|---|---|"]
        for msg, ds in groups[: 10 if limit is not None else None]:
            lines.append(f"| {len(ds)} | {_cell(msg)} | `{_cell(ds[0].file)}::{_cell(ds[0].test)}` |")
        if limit is not None and len(groups) > 10:
            lines.append(f"| ... | {len(groups) - 10} more messages in the report file | |")
    if reruns:
        lines += ["", "## Reruns", "",
                  "A distributed test whose rank hung (MultiProcessTestCase's time limit) runs once more, in a pytest of "
                  "its own; its outcome is the second run's.", "",
                  "| test | file | first run | once more |", "|---|---|---|---|"]
        lines += [f"| `{_cell(r.id)}` | `{f}` | {_cell(_short(r.first))} | {r.outcome} |" for f, r in reruns]
    if info.strict:
        lines += render_strict(strict_violations(runs))
    slow = sorted((r for run in runs for r in ((run.file, x) for x in run.results.values())), key=lambda fr: -fr[1].seconds)[:15]
    lines += ["", "## Slowest tests", "", "| seconds | test | file | outcome |", "|---:|---|---|---|"]
    for f, r in slow:
        lines.append(f"| {r.seconds:.1f} | `{_cell(r.id)}` | `{f}` | {r.outcome} |")
    return "\n".join(lines) + "\n"
