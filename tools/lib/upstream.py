"""Upstream test runs: profiles (data), junit parsing, expectations, comparison, report.

Everything here is pure (files in, values out) except the expectation writers;
running pytest lives in ``tools/run_upstream_tests.py``.

Test ids are relative to their file: ``Class::test_name[params]`` (pytest's
node id without the file part), so the same test has the same id whatever
rootdir pytest chose (``test.inductor.x.Class`` or ``inductor.x.Class`` in the
junit classname).

Profiles
--------
``full`` runs every test of the files below; ``ci`` runs all of
``inductor/test_compiled_autograd.py`` and ``-k`` selections of the others in
the areas the stack touches.  Why these files (all exist at v2.6.0):

* ``inductor/test_compiled_autograd.py`` -- CA itself (514 tests: CA graphs,
  hooks, custom C++ and Python Functions, and ``TestAutogradWithCompiledAutograd``,
  i.e. most of test_autograd.py re-run under CA).  Every patch changes it.
* ``test_autograd.py`` -- the eager engine.  P3/P4/P5 change code eager autograd
  runs too (``engine.cpp`` validate_outputs, ``python_function.cpp`` PyNode,
  ``custom_function.h`` CppNode, ``input_buffer.cpp``, CopySlices in
  ``functions/tensor.cpp``): eager regressions must show up here.
* ``dynamo/test_autograd_function.py`` -- ``autograd.Function`` under Dynamo
  (P4 makes every PyNode a proxied call, the AOT-generated ``CompiledFunction``
  included).
* ``dynamo/test_hooks.py`` and ``dynamo/test_backward_higher_order_ops.py`` --
  tensor/module hooks under Dynamo, with and without CA (the hooks' HOPs end up
  in CA graphs).
* ``inductor/test_distributed_patterns.py`` -- FSDP-like patterns (resize_,
  set_, hooks, ``AccumulateGrad``) compiled end to end with CA.
* ``dynamo/test_aot_autograd.py`` and ``functorch/test_aotdispatch.py`` -- AOT
  Autograd's backward (``CompiledFunction``, runtime wrappers, prologue and
  epilogue: P4/P6); aotdispatch also covers subclass wrapping (``TwoTensor``).
  The one exception to "every test" in ``full``: aotdispatch's op x dtype
  sweeps (``TestEagerFusionOpInfo``/``ModuleInfo``, 1,610 of its 2,069 tests)
  are left out -- a 1/20 shard of them ran 60 of 110 tests in 9 min, i.e.
  about 5 h on 2 cores, and they test AOT Autograd per operator, not CA.  Run
  them on purpose with ``--files functorch/test_aotdispatch.py --all-tests -k TestEagerFusionOpInfo``
  (no baseline is recorded for them: record one first).
* ``dynamo/test_subclasses.py`` -- tensor subclasses through Dynamo/AOT,
  forward and backward (P6's goal).
* ``dynamo/test_activation_checkpointing.py`` -- checkpointing, some of it
  under CA (recomputation inside a CA-captured backward).
* ``dynamo/test_bytecode_utils.py`` -- Dynamo's bytecode helpers; P36 shares
  an inlined function's cleaned bytecode between the tracers that inline it.

Not chosen: ``distributed/...`` (needs a process group), the compiled
optimizer tests (no autograd graph), OpInfo-wide suites beyond aotdispatch
(hours, no CA).

Measured times are in each :class:`Suite` (``estimate_s``: cold caches, 2
cores, stock torch 2.6.0, pytest start-up included): ci ~36 min (27.5 of them
test_compiled_autograd.py), full ~42 min.  ``run_upstream_tests.py --list``
prints them with the baseline counts.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import datetime as _dt
import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import paths, ui

OUTCOMES: tuple[str, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
CHANGE_OUTCOMES: tuple[str, ...] = OUTCOMES + ("removed",)
BAD = frozenset({"failed", "error"})
PASSLIKE = frozenset({"passed", "xpassed"})
EXPECTATIONS_DIR = paths.REPO_ROOT / "test" / "expectations"
CHANGES_FILE = "changes.json"


# -- profiles (data) ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Suite:
    """One upstream test file (relative to the tree's ``test/``), optionally narrowed by ``-k``."""

    file: str
    k: str | None = None
    why: str = ""
    estimate_s: int = 0  # measured: cold caches, 2 cores, stock torch

    @property
    def slug(self) -> str:
        return file_slug(self.file)


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    suites: tuple[Suite, ...]

    @property
    def estimate_s(self) -> int:
        return sum(s.estimate_s for s in self.suites)

    def suite(self, file: str) -> Suite | None:
        return next((s for s in self.suites if s.file == file), None)


TCA = "inductor/test_compiled_autograd.py"

# -k selections.  Keep in mind that -k matches substrings of every name in a
# test's chain (module, class, test): "grad" would select all of TestAOTAutograd.
_K_AUTOGRAD = (
    "hook or Function or function or inplace or in_place or view or copy_slices or CopySlices"
    " or saved or accumulate or retain_grad or reentrant or custom"
)
# AOT Autograd proper + the same tests through Dynamo; the cache variant re-runs them again
_K_AOTDISPATCH_CI = "TestAOTAutograd and not TestAOTAutogradWithCache"
# the op x dtype sweeps (1,360 OpInfo + 250 ModuleInfo tests, hours on 2 cores, not CA-specific)
_K_AOTDISPATCH_FULL = "not TestEagerFusionOpInfo and not TestEagerFusionModuleInfo"
_K_SUBCLASSES = "backward or grad or autograd or TwoTensor or two_tensor"
DTENSOR_COMPILE = "distributed/_tensor/test_dtensor_compile.py"
# the fake-process-group compile tests and the compiled autograd ones; not the 4-rank end-to-end ones
_K_DTENSOR = "not TestDTensorCompileE2E"

# estimate_s: wall time per file (pytest start-up included), measured 2026-11-29 on the 2-core machine,
# cold caches, stock torch.  ci: one cold `--baseline --profile ci` run of the files after
# test_compiled_autograd.py (8m54s together).  full: whole-file runs while another pytest loaded the
# machine (upper bounds).  test_compiled_autograd.py: DESIGN section 4 (27.5 min cold; 49 min when the
# machine is shared).
# the whole file in both profiles (its other tests need a GPU or take seconds)
_REPLICATE_SUITE = Suite("distributed/_composable/test_replicate_with_compiler.py",
                         why="DDP and replicate() with compiled autograd, 2 gloo ranks on CPU (P18)", estimate_s=80)
_RECOMPILES_SUITE = Suite("dynamo/test_recompiles.py",
                          why="Dynamo's recompile guards, a global dict looked up by a local Tensor (P21)", estimate_s=20)
_BYTECODE_SUITE = Suite("dynamo/test_bytecode_utils.py",
                        why="Dynamo's bytecode helpers, an inlined function's bytecode cleaned once (P36)", estimate_s=15)
# the vector ISA pick (the tests that read pick_vec_isa / valid_vec_isa_list), not the file's kernels
_CPU_REPRO_SUITE = Suite("inductor/test_cpu_repro.py", k="simd or vec_isa",
                         why="Inductor's vector ISA pick: candidates checked in order, none after the one picked (P40)",
                         estimate_s=15)
# TestFX's setUp loads a torchbind test library that the wheels do not ship: every other class
# (the fx passes' suites it imports, functional and vision tracing, the API surface)
_FX_SUITE = Suite("test_fx.py", k="not TestFX",
                  why="fx graphs: Node argument normalization, users, find-nodes filing, the passes (P37)",
                  estimate_s=45)

# P23's kernel at the Python key for inductor::accumulate_grad_: the subclasses that meet it.
# (test_python_dispatch.py is not here: on stock 2.6 a failing Python registration of aten::neg
# leaks into the tests after it, 73 of 119 fail in one process, and which ones depends on the shard.)
_SUBCLASS_SUITE = Suite("test_subclass.py", why="Tensor subclasses and parametrizations (P23)", estimate_s=10)
# P15/P16's Python metas and affine_grid's decomposition: the decomposition checks of the ops
# whose backwards they cover
_K_DECOMP = "upsample or interpolate or affine_grid or fractional_max_pool or shrink"
_DECOMP_SUITE = Suite("test_decomp.py", k=_K_DECOMP,
                      why="decompositions and metas of the upsample, affine_grid, shrink and fractional max-pool ops "
                          "(P15/P16)", estimate_s=175)

FULL = Profile(
    name="full",
    summary="every test of the CA-related upstream files (except test_aotdispatch's OpInfo/ModuleInfo sweeps)",
    suites=(
        Suite(TCA, why="compiled autograd itself (every patch)", estimate_s=1650),
        Suite("test_autograd.py", why="eager engine: PyNode, CppNode, validate_outputs, CopySlices, InputBuffer",
              estimate_s=147),
        Suite("dynamo/test_autograd_function.py", why="autograd.Function under Dynamo (P4)", estimate_s=18),
        Suite("dynamo/test_hooks.py", why="hooks under Dynamo and CA", estimate_s=80),
        Suite("dynamo/test_backward_higher_order_ops.py", why="backward hook HOPs in CA graphs", estimate_s=45),
        Suite("inductor/test_distributed_patterns.py", why="FSDP-like patterns compiled with CA", estimate_s=138),
        Suite("dynamo/test_aot_autograd.py", why="AOT Autograd backward through Dynamo (P4)", estimate_s=104),
        Suite("functorch/test_aotdispatch.py", k=_K_AOTDISPATCH_FULL,
              why="AOT backward, runtime wrappers, subclass wrapping (P4/P6); without the op sweeps "
                  "(a 1/20 shard of them ran 9 min for 60 of 110 tests: ~5 h for all)", estimate_s=178),
        Suite("dynamo/test_subclasses.py", why="tensor subclasses forward+backward (P6)", estimate_s=119),
        Suite("dynamo/test_activation_checkpointing.py", why="recomputation inside CA-captured backward (27/30 need a GPU)",
              estimate_s=51),
        Suite(DTENSOR_COMPILE, why="DTensor under torch.compile and compiled autograd (P10/P11/P19/P20)", estimate_s=160),
        _REPLICATE_SUITE,
        _RECOMPILES_SUITE,
        _BYTECODE_SUITE,
        _FX_SUITE,
        _CPU_REPRO_SUITE,
        _SUBCLASS_SUITE,
        _DECOMP_SUITE,
    ),
)

CI = Profile(
    name="ci",
    summary="all of test_compiled_autograd.py + -k selections in the areas the stack touches (<= 45 min cold, 2 cores, one file at a time)",
    suites=(
        Suite(TCA, why="compiled autograd itself (every patch)", estimate_s=1650),
        Suite("test_autograd.py", k=_K_AUTOGRAD, why="eager hooks, Functions, views/CopySlices, saved tensors (348/636)",
              estimate_s=59),
        Suite("dynamo/test_autograd_function.py", why="autograd.Function under Dynamo (P4)", estimate_s=20),
        Suite("dynamo/test_backward_higher_order_ops.py", why="backward hook HOPs in CA graphs", estimate_s=36),
        Suite("dynamo/test_hooks.py", why="hooks under Dynamo and CA", estimate_s=68),
        Suite("inductor/test_distributed_patterns.py", why="FSDP-like patterns compiled with CA", estimate_s=115),
        Suite("dynamo/test_aot_autograd.py", why="AOT Autograd backward through Dynamo (P4)", estimate_s=125),
        Suite("functorch/test_aotdispatch.py", k=_K_AOTDISPATCH_CI,
              why="AOT backward and runtime wrappers, eager and through Dynamo (P4/P6) (250/2069)", estimate_s=77),
        Suite("dynamo/test_subclasses.py", k=_K_SUBCLASSES, why="subclasses with backward (P6) (17/109)", estimate_s=31),
        Suite(DTENSOR_COMPILE, k=_K_DTENSOR, why="DTensor under torch.compile and compiled autograd, 2 gloo ranks (P10/P11/P19/P20)",
              estimate_s=100),
        _REPLICATE_SUITE,
        _RECOMPILES_SUITE,
        _BYTECODE_SUITE,
        _FX_SUITE,
        _CPU_REPRO_SUITE,
        _SUBCLASS_SUITE,
        _DECOMP_SUITE,
    ),
)

PROFILES: Mapping[str, Profile] = {p.name: p for p in (CI, FULL)}


def file_slug(file: str) -> str:
    """``inductor/test_compiled_autograd.py`` -> ``inductor__test_compiled_autograd``."""
    return file.removesuffix(".py").replace("/", "__")


def normalize_file(file: str) -> str:
    """Accept ``test/inductor/x.py``, ``./inductor/x.py`` or ``inductor/x.py``; return it relative to test/."""
    f = file.strip()
    while f.startswith("./"):
        f = f[2:]
    return f[len("test/"):] if f.startswith("test/") else f


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1-based, like upstream's --shard-id/--num-shards)."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ui.UserError(f"--shard {text!r}: expected I/N, e.g. 1/4", exit_code=ui.EXIT_USAGE) from None
    if n < 1 or not 1 <= i <= n:
        raise ui.UserError(f"--shard {text}: need 1 <= I <= N", exit_code=ui.EXIT_USAGE)
    return i, n


def combine_k(*exprs: str | None) -> str | None:
    parts = [e for e in exprs if e]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return " and ".join(f"({p})" for p in parts)


# -- results --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TestResult:
    id: str
    outcome: str
    seconds: float = 0.0
    message: str = ""


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


# -- expectations ---------------------------------------------------------------------------

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


def write_plugin(junit_dir: Path) -> Path:
    """The pytest plugin (PLUGIN_SOURCE) as a module in ``junit_dir/.plugin``, for ``-p PLUGIN_MODULE``: its dir."""
    plugin_dir = junit_dir / ".plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    f = plugin_dir / f"{PLUGIN_MODULE}.py"
    if not f.is_file() or f.read_text() != PLUGIN_SOURCE:
        f.write_text(PLUGIN_SOURCE)
    return plugin_dir


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
    if info.strict:
        lines += render_strict(strict_violations(runs))
    slow = sorted((r for run in runs for r in ((run.file, x) for x in run.results.values())), key=lambda fr: -fr[1].seconds)[:15]
    lines += ["", "## Slowest tests", "", "| seconds | test | file | outcome |", "|---:|---|---|---|"]
    for f, r in slow:
        lines.append(f"| {r.seconds:.1f} | `{_cell(r.id)}` | `{f}` | {r.outcome} |")
    return "\n".join(lines) + "\n"


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def shard_of(nodeid: str, num_shards: int) -> int:
    """1-based shard of a node id, exactly as upstream's pytest_shard_custom computes it."""
    return int.from_bytes(hashlib.sha256(nodeid.encode()).digest(), "little") % num_shards + 1


# -- the pytest plugin (written next to the junit files, loaded with -p) --------------------

PCH_ENV = "FCA_UPSTREAM_PCH"
# what a run that used the precompiled header leaves in <torch>/include/torch/: removed
# after the run and before one (a header left by another build of torch could be stale:
# its signature is the compile command, not the headers' contents)
PCH_FILES = ("extension.h.gch", "extension.h.sign", "extension.h.fca-lock")

PLUGIN_MODULE = "fca_upstream_plugin"
PLUGIN_SOURCE = '''\
"""Loaded into upstream pytest runs by tools/run_upstream_tests.py (generated; do not edit).

Writes collected.json (node ids before and after -k/shard filtering) and one
line per finished test to progress.tsv, into $FCA_UPSTREAM_STATE.  With
$FCA_UPSTREAM_SHARD=I/N it shards like upstream's pytest_shard_custom (for
trees whose conftest lacks --shard-id/--num-shards).  With
$FCA_UPSTREAM_PCH=1, load_inline uses torch/extension.h's precompiled header
(torch's own use_pch): the run's first eligible call builds it.
"""
import hashlib
import json
import os

import pytest

_DIR = os.environ.get("FCA_UPSTREAM_STATE", "")
_SHARD = os.environ.get("FCA_UPSTREAM_SHARD", "")
_phase = {}


def _write(name, text, mode="w"):
    if _DIR:
        with open(os.path.join(_DIR, name), mode) as f:
            f.write(text)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    before = [i.nodeid for i in items]
    yield
    if _SHARD:
        i, n = (int(x) for x in _SHARD.split("/"))
        items[:] = [it for it in items
                    if int.from_bytes(hashlib.sha256(it.nodeid.encode()).digest(), "little") % n == i - 1]
    _write("collected.json", json.dumps({"collected": before, "selected": [i.nodeid for i in items]}))


def pytest_configure(config):
    if os.environ.get("FCA_UPSTREAM_PCH") == "1":
        _use_the_precompiled_header()


def _use_the_precompiled_header():
    # load_inline without compiler flags of its own uses torch/extension.h's
    # precompiled header (torch's use_pch); the first such call of the run
    # builds it.  A lock next to the header keeps every compile of any shard
    # off the header while it is written (shared while compiling, exclusive
    # while building), and nothing removes it mid-run (load_inline without
    # use_pch would); the runner removes it after the run.
    import fcntl

    from torch.utils import cpp_extension

    plain = cpp_extension.load_inline
    lock_path = os.path.join(cpp_extension._TORCH_PATH, "include", "torch", "extension.h.fca-lock")

    def load_inline(*args, **kwargs):
        eligible = len(args) <= 4 and not kwargs.get("extra_cflags") and not kwargs.get("extra_include_paths")
        with open(lock_path, "a") as lock:
            if eligible and kwargs.get("use_pch", True):
                kwargs["use_pch"] = True
                fcntl.flock(lock, fcntl.LOCK_EX)
                cpp_extension._check_and_build_extension_h_precompiler_headers(None, None)
            fcntl.flock(lock, fcntl.LOCK_SH)
            return plain(*args, **kwargs)

    cpp_extension.load_inline = load_inline
    cpp_extension.remove_extension_h_precompiler_headers = lambda: None


_RANK = {"passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 2, "failed": 3, "error": 4}


def pytest_runtest_logreport(report):
    if report.failed:
        if report.when != "call":
            outcome = "error"
        elif str(report.longrepr).startswith("[XPASS(strict)]"):
            outcome = "xpassed"
        else:
            outcome = "failed"
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
    cur = _phase.setdefault(report.nodeid, ["passed", 0.0])
    cur[1] += report.duration
    if _RANK[outcome] > _RANK[cur[0]]:
        cur[0] = outcome
    if report.when == "teardown":
        outcome, secs = _phase.pop(report.nodeid)
        _write("progress.tsv", "%s\\t%.3f\\t%s\\n" % (outcome, secs, report.nodeid), "a")
'''


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
