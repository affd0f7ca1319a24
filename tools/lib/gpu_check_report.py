"""What a gpu_check.py run says: the verdict from what the steps left (the wheel's tests against stock
torch's, the programs' grads), the one-line summary, and the markdown and json reports."""

from __future__ import annotations

import dataclasses
import json
from typing import Sequence

from . import ui
from . import upstream as up
from .gpu_check import CUDA_TESTS, Inputs, Outcome, Planned, Run, Side, log_tail, program_names, total_budget

# the differences (tools/lib/upstream/expectations.py's kinds, the stock run as the baseline) that fail the check:
# the wheel does worse than stock, or there is nothing to compare
FAILING = frozenset({up.REGRESSION, up.NOW_SKIPPED, up.MISSING, up.NEW})


@dataclasses.dataclass
class Verdict:
    problems: list[str]
    probes: dict[str, dict]
    tests: dict[str, dict[str, up.TestResult]]  # side -> test id -> result
    diffs: list[up.Diff]
    programs: dict[str, dict]  # side -> cuda_programs.py's json

    @property
    def ok(self) -> bool:
        return not self.problems


def read_probe(outcome: Outcome | None) -> dict:
    if outcome is None or outcome.log is None or not outcome.log.is_file():
        return {}
    for line in reversed(outcome.log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return {}
    return {}


def read_tests(inp: Inputs, side: Side, outcome: Outcome | None) -> tuple[dict[str, up.TestResult], str | None]:
    """The side's results (junit; the plugin's progress file where pytest died first) and a problem, if any."""
    if outcome is None or outcome.skipped:
        return {}, f"not run ({outcome.skipped if outcome else 'no tests step'})"
    xml = inp.tests_xml(side)
    if xml.is_file() and not outcome.timed_out:
        results, problem = up.results_for_file(up.read_junit(xml), up.TCA)
        return results, problem
    results = up.read_progress(inp.tests_state(side))
    return results, f"pytest {outcome.describe()}, no junit: {log_tail(outcome.log)}"


def judge(inp: Inputs, run: Run) -> Verdict:
    problems: list[str] = []
    for step, outcomes in run.outcomes.items():
        for side, o in outcomes.items():
            if o.timed_out:
                problems.append(f"{side}: the {step} step ran past its budget ({ui.fmt_seconds(o.seconds)}): {log_tail(o.log)}")
            elif o.returncode not in (0, None) and step not in ("tests", "programs"):
                probe = read_probe(o) if step == "probe" else {}
                if probe and not probe.get("cuda_available"):
                    problems.append(f"{side}: torch {probe.get('torch')} (CUDA {probe.get('cuda')}) sees no CUDA device "
                                    f"(the probe step, {o.describe()}); is the driver new enough for CUDA {probe.get('cuda')}?")
                else:
                    problems.append(f"{side}: the {step} step failed ({o.describe()}): {log_tail(o.log)}")
    probes = {side: read_probe(run.outcomes.get("probe", {}).get(side)) for side in ("wheel", "stock")}
    sides = {s.name: s for s in inp.sides}
    tests: dict[str, dict[str, up.TestResult]] = {}
    for name, side in sides.items():
        outcome = run.outcomes.get("tests", {}).get(name)
        tests[name], problem = read_tests(inp, side, outcome)
        if problem and outcome is not None and not outcome.skipped and not outcome.timed_out:  # else said above
            problems.append(f"{name}: tests: {problem}")
    diffs = []  # only where both sides have results: else the problems above say why there are none
    for test, _ in CUDA_TESTS if tests["wheel"] and tests["stock"] else ():
        stock, wheel = tests["stock"].get(test), tests["wheel"].get(test)
        kind = up.classify(stock.outcome if stock else None, wheel.outcome if wheel else None)
        if kind is None and stock is None and wheel is None:
            kind = up.MISSING
        if kind is not None:
            diffs.append(up.Diff(up.TCA, test, stock.outcome if stock else None, wheel.outcome if wheel else None, kind,
                                 message=(wheel or stock).message if (wheel or stock) else ""))
    bad = [d for d in diffs if d.kind in FAILING]
    if bad:
        problems.append(f"tests: {len(bad)} worse on the wheel than on stock, e.g. {bad[0].test}: {bad[0].kind} "
                        f"(stock {bad[0].baseline or 'no result'}, wheel {bad[0].now or 'no result'}) {bad[0].message}".rstrip())
    skipped = [r for r in tests["wheel"].values() if r.outcome == "skipped"]
    if skipped:
        problems.append(f"tests: {len(skipped)} CUDA test(s) skipped on the wheel, e.g. {skipped[0].id}: "
                        f"{skipped[0].message or 'no reason given'} (on a CUDA machine they must run)")
    programs: dict[str, dict] = {}
    for name, side in sides.items():
        f = inp.programs_json(side)
        outcome = run.outcomes.get("programs", {}).get(name)
        if outcome is None or outcome.skipped or outcome.timed_out:  # said above
            continue
        if f.is_file():
            programs[name] = json.loads(f.read_text())
        else:
            problems.append(f"{name}: programs: {outcome.describe()}, no results: {log_tail(outcome.log)}")
    wrong = [p for p in programs.get("wheel", {}).get("programs", []) if p.get("ok") is not True]
    if wrong:
        problems.append(f"programs: {len(wrong)} differ from eager on the wheel, e.g. {wrong[0]['name']}: {wrong[0]['verdict']}")
    return Verdict(problems, probes, tests, diffs, programs)


def counts(results: dict[str, up.TestResult]) -> str:
    c = {o: 0 for o in up.OUTCOMES}
    for r in results.values():
        c[r.outcome] += 1
    return ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no results"


def program_counts(data: dict) -> str:
    ps = data.get("programs", [])
    return f"{sum(1 for p in ps if p.get('ok') is True)}/{len(ps)}" if ps else "none"


def summary(v: Verdict, run: Run, budget: float) -> str:
    head = "gpu check OK" if v.ok else f"gpu check FAILED ({len(v.problems)} problem(s), first: {v.problems[0]})"
    return (f"{head}; {len(CUDA_TESTS)} CUDA tests: wheel {counts(v.tests['wheel'])}, stock {counts(v.tests['stock'])}; "
            f"programs giving eager's grads: wheel {program_counts(v.programs.get('wheel', {}))}, stock "
            f"{program_counts(v.programs.get('stock', {}))}; {ui.fmt_seconds(run.seconds)} of a "
            f"{ui.fmt_seconds(budget)} budget")


def _cell(text: object) -> str:
    return str(text if text not in (None, "") else "-").replace("|", "\\|").replace("\n", " ")


def render_markdown(inp: Inputs, steps: Sequence[Planned], run: Run, v: Verdict, why: str, started: str) -> str:
    budget = total_budget(steps)
    lines = ["# GPU check: the patched wheel against stock torch 2.6.0", "",
             f"- result: **{'OK' if v.ok else 'FAILED'}**", f"- started {started}, took {ui.fmt_seconds(run.seconds)} "
             f"of a {ui.fmt_seconds(budget)} budget", f"- machine: {why}",
             f"- wheel: `{inp.wheel or inp.sides[0].venv}`", f"- tests from: `{inp.tests_dir}`"]
    for side in ("wheel", "stock"):
        p = v.probes.get(side) or {}
        lines.append(f"- {side}: torch {p.get('torch', '?')} (CUDA {p.get('cuda', '?')}, stack {p.get('stack') or '-'}) "
                     f"on {p.get('device') or '?'}, python {p.get('python', '?')}")
    if v.problems:
        lines += ["", "## Problems", ""] + [f"- {_cell(p)}" for p in v.problems]
    lines += ["", "## Steps", "", "| step | budget | wheel | stock |", "|---|---:|---|---|"]
    for p in steps:
        o = run.outcomes.get(p.step.name, {})
        lines.append(f"| {p.step.name} | {p.budget_s:g}s | "
                     + " | ".join(_cell(o[s].describe() if s in o else "-") for s in ("wheel", "stock")) + " |")
    lines += ["", f"## Upstream's CUDA tests (`{up.TCA}`)", "",
              f"Wheel: {counts(v.tests['wheel'])}.  Stock: {counts(v.tests['stock'])}.", "",
              "| test | stock | wheel | difference | why it is here |", "|---|---|---|---|---|"]
    kinds = {d.test: d for d in v.diffs}
    for test, why_here in CUDA_TESTS:
        s, w = v.tests["stock"].get(test), v.tests["wheel"].get(test)
        d = kinds.get(test)
        diff = "-" if d is None else (d.kind + (" (fails the check)" if d.kind in FAILING else ""))
        lines.append(f"| `{test}` | {_cell(s.outcome if s else None)} | {_cell(w.outcome if w else None)} | {diff} "
                     f"| {_cell(why_here)} |")
    messages = [(side, r) for side in ("wheel", "stock") for r in v.tests[side].values() if r.message and r.outcome != "passed"]
    if messages:
        lines += ["", "| side | test | outcome | message |", "|---|---|---|---|"]
        lines += [f"| {side} | `{r.id}` | {r.outcome} | {_cell(r.message)} |" for side, r in messages]
    lines += ["", "## Programs (`examples/cuda_programs.py`)", ""]
    for side in ("wheel", "stock"):
        data = v.programs.get(side, {})
        lines.append(f"- {side}: C++ extension: {data.get('extension', '-')}")
    lines += ["", "| program | stock | wheel |", "|---|---|---|"]
    by_side = {side: {p["name"]: p for p in v.programs.get(side, {}).get("programs", [])} for side in ("wheel", "stock")}
    for name in program_names():
        cells = []
        for side in ("stock", "wheel"):
            p = by_side[side].get(name)
            cells.append("-" if p is None else f"{p['verdict']} (captures {p.get('captures', '-')}"
                         + (f", cudagraph skips {p['cudagraph_skips']}" if p.get("cudagraph_skips") else "")
                         + f", {p.get('seconds', '-')}s)")
        lines.append(f"| `{name}` | " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "## Commands", ""]
    for p in steps:
        lines += [f"- {p.step.name}, {side}: `{c.line()}`" for side, c in p.commands.items()]
    return "\n".join(lines) + "\n"


def render_json(inp: Inputs, steps: Sequence[Planned], run: Run, v: Verdict, why: str, started: str) -> str:
    data = {
        "verdict": "OK" if v.ok else "FAILED",
        "summary": summary(v, run, total_budget(steps)),
        "problems": v.problems,
        "started": started,
        "seconds": round(run.seconds, 1),
        "budget_s": total_budget(steps),
        "machine": why,
        "wheel": str(inp.wheel) if inp.wheel else None,
        "wheelhouse": str(inp.wheelhouse) if inp.wheelhouse else None,
        "venvs": {s.name: {"path": str(s.venv), "reused": s.reused} for s in inp.sides},
        "tests_dir": str(inp.tests_dir),
        "probe": v.probes,
        "steps": [{"name": p.step.name, "budget_s": p.budget_s,
                   "sides": {s: {"command": o.command, "returncode": o.returncode, "seconds": round(o.seconds, 1),
                                 "timed_out": o.timed_out, "skipped": o.skipped, "log": str(o.log) if o.log else None}
                             for s, o in run.outcomes.get(p.step.name, {}).items()}} for p in steps],
        "tests": {"file": up.TCA, "selected": [t for t, _ in CUDA_TESTS],
                  **{side: {t: r.outcome for t, r in sorted(v.tests[side].items())} for side in ("wheel", "stock")},
                  "differences": [{"test": d.test, "stock": d.baseline, "wheel": d.now, "kind": d.kind,
                                   "fails": d.kind in FAILING, "message": d.message} for d in v.diffs]},
        "programs": v.programs,
    }
    return json.dumps(data, indent=1) + "\n"
