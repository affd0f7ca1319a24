"""What a pytest run of a file produced: results read from junit XML, or from the plugin's progress
state when pytest died before writing it.

Test ids are relative to their file: ``Class::test_name[params]`` (pytest's node id without the
file part), so the same test has the same id whatever rootdir pytest chose (``test.inductor.x.Class``
or ``inductor.x.Class`` in the junit classname).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .. import ui

OUTCOMES: tuple[str, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
# a file's tests that ran once more (runner.py): <junit-dir>/<file slug>.rerun.xml beside <file slug>[.IofN].xml
RERUN_SUFFIX = ".rerun"
BAD = frozenset({"failed", "error"})
PASSLIKE = frozenset({"passed", "xpassed"})


@dataclasses.dataclass(frozen=True)
class TestResult:
    id: str
    outcome: str
    seconds: float = 0.0
    message: str = ""
    first: str = ""  # a test that ran again (runner.py's reruns): its first run's "outcome: message"


@dataclasses.dataclass
class FileRun:
    """What one pytest run of one file produced."""

    file: str
    results: dict[str, TestResult]
    collected: frozenset[str] | None = None  # ids collected before -k/shard filtering (None: unknown)
    selected: frozenset[str] | None = None  # ids left to run after filtering (None: unknown)
    returncode: int | None = None
    seconds: float = 0.0
    problem: str | None = None  # crash, timeout, collection error, pytest usage error
    junit: Path | None = None
    log: Path | None = None
    complete: bool = False  # the whole file ran (no -k, no shard): a baseline may be replaced

    def counts(self) -> dict[str, int]:
        c = {o: 0 for o in OUTCOMES}
        for r in self.results.values():
            c[r.outcome] += 1
        return c


def module_parts(file: str) -> list[str]:
    return file.removesuffix(".py").split("/")


def _match_module(classname: str, file: str) -> list[str] | None:
    """Class path inside ``file`` for a junit classname, or None if it belongs elsewhere."""
    parts = classname.split(".") if classname else []
    mod = module_parts(file)
    for j in range(len(parts) - len(mod), -1, -1):
        if parts[j : j + len(mod)] == mod:
            return parts[j + len(mod) :]
    return None


def junit_test_id(classname: str, name: str, file: str) -> str | None:
    cls = _match_module(classname, file)
    if cls is None:
        return None
    return "::".join([*cls, name])


def nodeid_test_id(nodeid: str) -> str:
    """``test/inductor/x.py::Class::test`` -> ``Class::test``."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


_COMPILER_ERROR = re.compile(r"^\S+:\d+(?::\d+)?: (?:fatal )?error: .*$", re.M)


def _with_compiler_error(message: str, body: str | None) -> str:
    """Append the first compiler diagnostic of the traceback: 'C++ compile error' alone says nothing."""
    m = _COMPILER_ERROR.search(body or "")
    if not m:
        return message
    diag = m.group(0).split(": ", 1)[1]  # drop the generated file's path, so one cause groups as one
    return f"{_first_line(message)} -- {diag}"


def junit_outcome(tc: ET.Element) -> tuple[str, str]:
    failure, error, skipped = tc.find("failure"), tc.find("error"), tc.find("skipped")
    if failure is not None:
        msg = failure.get("message", "")
        kind = "xpassed" if msg.startswith("[XPASS(strict)]") else "failed"
        return kind, _with_compiler_error(msg, failure.text)
    if error is not None:
        return "error", _with_compiler_error(error.get("message", ""), error.text)
    if skipped is not None:
        kind = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        return kind, skipped.get("message", "")
    return "passed", ""


def _first_line(text: str, limit: int = 200) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def read_junit(xml: Path) -> list[tuple[str, str, str, str, float]]:
    """(classname, name, outcome, message, seconds) per testcase."""
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, OSError) as err:
        raise ui.UserError(f"{xml}: not a readable junit XML file ({err})") from None
    rows = []
    for tc in root.iter("testcase"):
        outcome, msg = junit_outcome(tc)
        try:
            secs = float(tc.get("time", "0") or 0)
        except ValueError:
            secs = 0.0
        rows.append((tc.get("classname", ""), tc.get("name", ""), outcome, _first_line(msg), secs))
    return rows


def junit_meta(xml: Path) -> dict:
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return {}
    return {k: suite.get(k) for k in ("timestamp", "time", "tests") if suite.get(k) is not None}


def results_for_file(rows: Iterable[tuple[str, str, str, str, float]], file: str) -> tuple[dict[str, TestResult], str | None]:
    """The rows of ``file`` as results; the second value is a collection error message, if any."""
    results: dict[str, TestResult] = {}
    problem = None
    for classname, name, outcome, msg, secs in rows:
        if not classname:  # collection error of a module: name is the dotted module path
            if name.split(".")[-len(module_parts(file)):] == module_parts(file):
                problem = f"collection error: {msg or 'see the log'}"
            continue
        tid = junit_test_id(classname, name, file)
        if tid is not None:
            results[tid] = TestResult(tid, outcome, secs, msg)
    return results, problem


def split_junit_by_file(xml: Path, files: Sequence[str]) -> dict[str, dict[str, TestResult]]:
    """Assign each testcase of a junit file to one of ``files`` (longest module match)."""
    out: dict[str, dict[str, TestResult]] = {}
    unknown: set[str] = set()
    for classname, name, outcome, msg, secs in read_junit(xml):
        if not classname:
            continue  # a collection error: see results_for_file
        best = None
        for f in files:
            cls = _match_module(classname, f) if classname else None
            if cls is not None and (best is None or len(module_parts(f)) > len(module_parts(best))):
                best = f
        if best is None:
            unknown.add(classname or name)
            continue
        tid = junit_test_id(classname, name, best)
        assert tid is not None
        out.setdefault(best, {})[tid] = TestResult(tid, outcome, secs, msg)
    if unknown:
        raise ui.UserError(
            f"{xml}: tests of {sorted(unknown)[0]}"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
            + " belong to none of the files of this run; pass them with --files"
        )
    return out


def read_progress(state_dir: Path) -> dict[str, TestResult]:
    """Outcomes from the plugin's progress file (used when pytest died before writing junit)."""
    out: dict[str, TestResult] = {}
    f = state_dir / "progress.tsv"
    if not f.is_file():
        return out
    for line in f.read_text(errors="replace").splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0] in OUTCOMES:
            tid = nodeid_test_id(parts[2])
            try:
                secs = float(parts[1])
            except ValueError:
                secs = 0.0
            out[tid] = TestResult(tid, parts[0], secs)
    return out


def read_collection(state_dir: Path) -> tuple[frozenset[str], frozenset[str]] | None:
    f = state_dir / "collected.json"
    if not f.is_file():
        return None
    try:
        data = json.loads(f.read_text())
    except ValueError:
        return None
    return (frozenset(nodeid_test_id(n) for n in data["collected"]),
            frozenset(nodeid_test_id(n) for n in data["selected"]))


def with_reruns(run: FileRun, again: Mapping[str, TestResult]) -> FileRun:
    """``run`` with the results of the tests that ran again; each keeps its first run's outcome in ``first``."""
    def said(r: TestResult) -> str:
        return f"{r.outcome}: {r.message}" if r.message else r.outcome

    results = dict(run.results)
    for tid, r in again.items():
        results[tid] = dataclasses.replace(r, first=said(results[tid]) if tid in results else "")
    return dataclasses.replace(run, results=results)


def import_junit(xmls: Sequence[Path], files: Sequence[str]) -> list[FileRun]:
    """The results of ``files`` in junit files made elsewhere, one FileRun per file they have, in ``files``' order.

    A ``*.rerun.xml`` (the tests of a file that ran once more) is read after the others: its results replace the
    first run's, as in the run that wrote it."""
    runs: dict[str, FileRun] = {}
    for xml in sorted(xmls, key=lambda x: x.name.endswith(f"{RERUN_SUFFIX}.xml")):
        rows = read_junit(xml)
        by_file = split_junit_by_file(xml, files)
        for f, results in by_file.items():
            run = runs.setdefault(f, FileRun(f, {}, junit=xml.resolve()))
            if xml.name.endswith(f"{RERUN_SUFFIX}.xml"):
                runs[f] = run = with_reruns(run, results)
            else:
                run.results.update(results)
            run.seconds += sum(r.seconds for r in results.values())
        for f in files:
            _, problem = results_for_file([r for r in rows if not r[0]], f)
            if problem:
                run = runs.setdefault(f, FileRun(f, {}, junit=xml.resolve()))
                run.problem = problem
    if not runs:
        raise ui.UserError(f"{xmls[0]}: no test results of {', '.join(files)}")
    order = {f: i for i, f in enumerate(files)}
    return sorted(runs.values(), key=lambda r: order.get(r.file, len(order)))


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
