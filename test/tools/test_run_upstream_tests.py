"""tools/run_upstream_tests.py: real upstream runs, the comparator, expectations, CLI errors."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, export_stack, git, run_tool, snapshot
from tools.lib import paths, ui
from tools.lib import upstream as up
from tools.lib.shell import Shell
from tools.lib.upstream import runner
from tools.lib.upstream import target as up_target

TCA = up.TCA
# Fast tests of test_compiled_autograd.py (a few seconds together on stock 2.6.0):
# 4 pass, 1 skips (needs CUDA) in the committed baseline.
FAST_K = ("test_torch_compile_api_eager or TestAutogradWithCompiledAutograd and test_grad_nonleaf"
          " or test_cudagraphs_cpu_division")
FAST_PASSED = {
    "TestCompiledAutograd::test_torch_compile_api_eager",
    "TestAutogradWithCompiledAutograd::test_grad_nonleaf",
    "TestAutogradWithCompiledAutograd::test_grad_nonleaf_many_outputs",
    "TestAutogradWithCompiledAutograd::test_grad_nonleaf_register_hook",
}
FAST_SKIPPED = {"TestCompiledAutograd::test_cudagraphs_cpu_division"}


# -- the comparator (pure) ------------------------------------------------------------------

@pytest.mark.parametrize(
    "baseline, now, kind",
    [
        ("passed", "passed", None),
        ("failed", "failed", None),
        ("skipped", "skipped", None),
        ("passed", "failed", up.REGRESSION),
        ("passed", "error", up.REGRESSION),
        ("passed", "xfailed", up.REGRESSION),
        ("failed", "passed", up.UNEXPECTED_PASS),
        ("error", "passed", up.UNEXPECTED_PASS),
        ("xfailed", "passed", up.UNEXPECTED_PASS),
        ("xfailed", "xpassed", up.UNEXPECTED_PASS),
        ("passed", "skipped", up.NOW_SKIPPED),  # a skip is never a pass
        (None, "passed", up.NEW),
        (None, "skipped", up.NEW),
        ("passed", None, up.MISSING),
        ("failed", "error", up.CHANGED),
        ("skipped", "passed", up.CHANGED),
        ("xfailed", "skipped", up.CHANGED),
        (None, None, None),
    ],
)
def test_classify(baseline, now, kind):
    assert up.classify(baseline, now) == kind


def test_classify_with_a_recorded_change():
    ch = up.Change("T::t", TCA, "passed", "P1 proxies the node", "0001-x.patch")
    assert up.classify("failed", "passed", ch) == up.EXPECTED_CHANGE
    assert up.classify("failed", "failed", ch) == up.CHANGE_NOT_MET
    assert up.classify(None, "passed", ch) == up.EXPECTED_CHANGE  # a new test the stack adds
    assert up.classify(None, None, ch) == up.CHANGE_NOT_MET
    gone = up.Change("T::t", TCA, "removed", "test deleted", "0001-x.patch")
    assert up.classify("passed", None, gone) == up.EXPECTED_CHANGE
    assert up.classify("passed", "passed", gone) == up.CHANGE_NOT_MET


def _run(results: dict[str, str], collected=None, selected=None, file=TCA, problem=None) -> up.FileRun:
    return up.FileRun(
        file, {t: up.TestResult(t, o, 1.0) for t, o in results.items()},
        frozenset(collected) if collected is not None else None,
        frozenset(selected) if selected is not None else None, problem=problem,
    )


def _base(tests: dict[str, str], file=TCA) -> up.Baseline:
    return up.Baseline(file, tests, {})


def test_compare_counts_filters_and_flags_every_kind():
    base = _base({"A::ok": "passed", "A::reg": "passed", "A::fix": "failed", "A::skip": "passed",
                  "A::gone": "passed", "A::crash": "passed", "A::deselected": "passed", "A::xf": "xfailed",
                  "A::rec": "failed"})
    run = _run(
        {"A::ok": "passed", "A::reg": "failed", "A::fix": "passed", "A::skip": "skipped", "A::new": "passed",
         "A::xf": "xfailed", "A::rec": "passed"},
        collected={"A::ok", "A::reg", "A::fix", "A::skip", "A::new", "A::crash", "A::deselected", "A::xf", "A::rec"},
        selected={"A::ok", "A::reg", "A::fix", "A::skip", "A::new", "A::crash", "A::xf", "A::rec"},
    )
    changes = [up.Change("A::rec", TCA, "passed", "P4 fixes it", "0004-p4.patch")]
    cmp = up.compare([run], {TCA: base}, changes)
    kinds = {d.test: d.kind for d in cmp.diffs}
    assert kinds == {
        "A::reg": up.REGRESSION,
        "A::fix": up.UNEXPECTED_PASS,
        "A::skip": up.NOW_SKIPPED,
        "A::new": up.NEW,
        "A::gone": up.MISSING,  # never collected: gone from the file
        "A::crash": up.MISSING,  # selected, no result
        "A::rec": up.EXPECTED_CHANGE,
    }
    assert {d.test for d in cmp.failures} == set(kinds) - {"A::rec"}
    assert [d.reason for d in cmp.diffs if d.test == "A::rec"] == ["P4 fixes it"]
    assert cmp.filtered == 1  # A::deselected: -k/shard/profile left it out, not MISSING
    assert cmp.now_counts["passed"] == 4 and cmp.now_counts["skipped"] == 1  # the skip is not a pass
    assert cmp.baseline_counts["passed"] == 5 and sum(cmp.baseline_counts.values()) == 8
    assert not cmp.ok


def test_compare_ok_and_problem_and_no_baseline():
    run = _run({"A::t": "passed"}, collected={"A::t"}, selected={"A::t"})
    assert up.compare([run], {TCA: _base({"A::t": "passed"})}, []).ok
    crashed = _run({"A::t": "passed"}, collected={"A::t"}, selected={"A::t"}, problem="pytest was killed by signal 11")
    assert not up.compare([crashed], {TCA: _base({"A::t": "passed"})}, []).ok
    cmp = up.compare([run], {TCA: None}, [])
    assert cmp.no_baseline == [TCA] and [d.kind for d in cmp.diffs] == [up.NEW]


def test_report_lists_differences_reasons_skips_and_slowest():
    base = _base({f"A::t{i}": "passed" for i in range(20)} | {"A::f": "failed", "A::r": "failed"})
    res = {f"A::t{i}": "passed" for i in range(19)} | {"A::t19": "skipped", "A::f": "passed", "A::r": "passed"}
    run = _run(res, collected=set(res), selected=set(res))
    run.results["A::t3"] = up.TestResult("A::t3", "passed", 99.5)
    changes = [up.Change("A::r", TCA, "passed", "P5 stops baking sizes", "0005-p5.patch")]
    cmp = up.compare([run], {TCA: base}, changes)
    info = up.RunInfo("ci", "patched tree on the overlay", "torch X", "/t/test", "profile ci", "now", 12.0)
    text = up.render_report(info, [run], cmp)
    assert "FAILED: 2 unexpected difference(s)" in text
    assert "| NOW SKIPPED | `A::t19` |" in text and "| UNEXPECTED PASS | `A::f` |" in text
    assert "UNEXPECTED |" in text and "| EXPECTED CHANGE | `A::r` | `inductor/test_compiled_autograd.py` | failed | passed | P5 stops baking sizes |" in text
    assert "Skipped now: 1 (never counted as passes)" in text
    slow = text.split("## Slowest tests")[1].splitlines()
    assert slow[4].startswith("| 99.5 | `A::t3`") and len([l for l in slow if l.startswith("| ")]) == 15 + 1


HANG = "RuntimeError: Process 1 terminated or timed out after 305.0 seconds"


def test_only_a_test_whose_rank_hung_runs_once_more():
    run = _run({"A::hung": "failed", "A::fails": "failed", "A::ok": "passed", "A::err": "error"})
    run.results["A::hung"] = up.TestResult("A::hung", "failed", 305.0, HANG)
    run.results["A::fails"] = up.TestResult("A::fails", "failed", 1.0, "RuntimeError: Process 1 exited with error code 10 and exception:")
    run.results["A::err"] = up.TestResult("A::err", "error", 305.0, HANG.replace("Process 1", "Process 0"))
    assert runner.hung_tests(run) == ["A::err", "A::hung"]
    again = up.with_reruns(run, {"A::hung": up.TestResult("A::hung", "passed", 2.0)})
    assert again.results["A::hung"] == up.TestResult("A::hung", "passed", 2.0, "", f"failed: {HANG}")
    assert again.results["A::err"] == run.results["A::err"]  # no second result: the first stands
    assert run.results["A::hung"].outcome == "failed"  # the first run's FileRun is not changed


def test_report_lists_the_tests_that_ran_once_more_and_compares_their_second_outcome():
    run = _run({"A::hung": "failed", "A::ok": "passed"}, collected={"A::hung", "A::ok"}, selected={"A::hung", "A::ok"})
    run.results["A::hung"] = up.TestResult("A::hung", "failed", 305.0, HANG)
    run = up.with_reruns(run, {"A::hung": up.TestResult("A::hung", "passed", 2.0)})
    base = _base({"A::hung": "passed", "A::ok": "passed"})
    info = up.RunInfo("full", "patched tree on the overlay", "torch X", "/t/test", "profile full", "now", 12.0)
    text = up.render_report(info, [run], up.compare([run], {TCA: base}, []))
    assert "**OK: every outcome is as expected**" in text
    assert "- ran once more: 1 test(s) whose rank hung (see Reruns)" in text
    assert f"| `A::hung` | `{TCA}` | failed: {HANG} | passed |" in text
    plain = up.render_report(info, [_run({"A::ok": "passed"})], up.compare([_run({"A::ok": "passed"})], {TCA: base}, []))
    assert "Reruns" not in plain and "ran once more" not in plain


def test_strict_capture_violations_are_counted_and_listed_by_node():
    msg = ("torch._dynamo.compiled_autograd.CompiledAutogradStrictError: compiled autograd strict capture: "
           "MulBackward0 (NodeCall 2) used the metadata of a dummy (a guard on Eq(u0, 4))")
    res = {"A::ok": "passed", "A::v1": "failed", "A::v2": "failed", "A::other": "failed"}
    run = _run(res, collected=set(res), selected=set(res))
    run.results["A::v1"] = up.TestResult("A::v1", "failed", 1.0, msg)
    run.results["A::v2"] = up.TestResult("A::v2", "error", 1.0, msg.replace("MulBackward0 (NodeCall 2)", "CopySlices (NodeCall 1)"))
    run.results["A::other"] = up.TestResult("A::other", "failed", 1.0, "AssertionError: 1 != 2")
    found = up.strict_violations([run])
    assert [(v.test, v.node) for v in found] == [("A::v1", "MulBackward0 (NodeCall 2)"), ("A::v2", "CopySlices (NodeCall 1)")]
    cmp = up.compare([run], {TCA: _base(res)}, [])
    plain = up.RunInfo("ci", "m", "t", "d", "s", "now", 1.0)
    assert "Strict capture" not in up.render_report(plain, [run], cmp)
    text = up.render_report(dataclasses.replace(plain, strict=True), [run], cmp)
    assert "Strict-mode violations (`TORCH_COMPILED_AUTOGRAD_STRICT_DUMMIES=1`): **2** (target 0)." in text
    assert "| `A::v1` | `inductor/test_compiled_autograd.py` | MulBackward0 (NodeCall 2) |" in text


# -- junit ----------------------------------------------------------------------------------

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="8" time="3.0" timestamp="2026-11-29T15:27:00">
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_a" time="1.5"/>
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_b[x-1]" time="0.1"><failure message="AssertionError: 1 != 2">tb</failure></testcase>
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_c" time="0.1"><error message="failed on setup">tb</error></testcase>
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_d" time="0"><skipped type="pytest.skip" message="requires cuda">s</skipped></testcase>
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_e" time="0"><skipped type="pytest.xfail" message="known">s</skipped></testcase>
<testcase classname="test.inductor.test_compiled_autograd.TestCompiledAutograd" name="test_f" time="0"><failure message="[XPASS(strict)] known">x</failure></testcase>
<testcase classname="inductor.test_compiled_autograd.Outer.Inner" name="test_g" time="0"/>
<testcase classname="test.test_autograd.TestAutograd" name="test_h" time="0"/>
<testcase classname="" name="test.dynamo.test_hooks" time="0"><error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_and_ids(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text(JUNIT)
    results, problem = up.results_for_file(up.read_junit(xml), TCA)
    assert problem is None
    assert {t: r.outcome for t, r in results.items()} == {
        "TestCompiledAutograd::test_a": "passed",
        "TestCompiledAutograd::test_b[x-1]": "failed",
        "TestCompiledAutograd::test_c": "error",
        "TestCompiledAutograd::test_d": "skipped",
        "TestCompiledAutograd::test_e": "xfailed",
        "TestCompiledAutograd::test_f": "xpassed",
        "Outer::Inner::test_g": "passed",  # rootdir-independent, nested class
    }
    assert results["TestCompiledAutograd::test_b[x-1]"].message == "AssertionError: 1 != 2"
    assert results["TestCompiledAutograd::test_a"].seconds == 1.5
    _, problem = up.results_for_file(up.read_junit(xml), "dynamo/test_hooks.py")
    assert problem == "collection error: collection failure"
    split = up.split_junit_by_file(xml, [TCA, "test_autograd.py"])
    assert set(split) == {TCA, "test_autograd.py"} and set(split["test_autograd.py"]) == {"TestAutograd::test_h"}
    with pytest.raises(ui.UserError, match="test.test_autograd.TestAutograd belong to none of the files"):
        up.split_junit_by_file(xml, [TCA])
    assert up.nodeid_test_id("test/inductor/test_compiled_autograd.py::A::t[1::2]") == "A::t[1::2]"


CPP_FAILURE = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" failures="2" tests="3" time="1.0">
<testcase classname="test.dynamo.test_hooks.HooksTests" name="test_a" time="0.1"><failure message="torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:">Traceback
CppCompileError: C++ compile error
/c/x1/cx1abc.cpp:2:10: fatal error: /gone/inductor/2r/c2r.h: No such file or directory
compilation terminated.</failure></testcase>
<testcase classname="test.dynamo.test_hooks.HooksTests" name="test_b" time="0.1"><failure message="torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:">Traceback
/c/y2/cy2def.cpp:2:10: fatal error: /gone/inductor/2r/c2r.h: No such file or directory</failure></testcase>
<testcase classname="test.dynamo.test_hooks.HooksTests" name="test_c" time="0.1"><failure message="AssertionError: 1 != 2">tb</failure></testcase>
</testsuite></testsuites>
"""


def test_report_groups_unexpected_differences_by_message_with_the_compiler_diagnostic(tmp_path):
    """141 regressions with one cause read as one line: the compiler's own error, not 'C++ compile error'."""
    (tmp_path / "r.xml").write_text(CPP_FAILURE)
    results, _ = up.results_for_file(up.read_junit(tmp_path / "r.xml"), "dynamo/test_hooks.py")
    base = _base({t: "passed" for t in results}, file="dynamo/test_hooks.py")
    run = up.FileRun("dynamo/test_hooks.py", results, frozenset(results), frozenset(results))
    text = up.render_report(up.RunInfo("ci", "m", "t", "d", "s", "now", 1.0), [run],
                            up.compare([run], {"dynamo/test_hooks.py": base}, []), limit=5)
    diag = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: -- "
            "fatal error: /gone/inductor/2r/c2r.h: No such file or directory")
    assert f"| REGRESSION | `HooksTests::test_a` | `dynamo/test_hooks.py` | passed | failed | UNEXPECTED | {diag} |" in text
    groups = text.split("## Unexpected differences by message")[1]
    assert f"| 2 | {diag} | `dynamo/test_hooks.py::HooksTests::test_a` |" in groups
    assert "| 1 | AssertionError: 1 != 2 | `dynamo/test_hooks.py::HooksTests::test_c` |" in groups


def _junit(*cases: str) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="1">'
            + "".join(cases) + "</testsuite></testsuites>")


def test_an_imported_rerun_junit_replaces_the_first_runs_outcome_whatever_the_order(tmp_path):
    """--from-junit shards/*/junit/*.xml: the glob puts x.rerun.xml before x.xml; its results still win."""
    cls = 'classname="test.distributed._tensor.test_dtensor.DTensorTest"'
    rerun = tmp_path / f"distributed___tensor__test_dtensor{up.RERUN_SUFFIX}.xml"
    (tmp_path / "distributed___tensor__test_dtensor.xml").write_text(_junit(
        f'<testcase {cls} name="test_a" time="305"><failure message="{HANG}">tb</failure></testcase>',
        f'<testcase {cls} name="test_b" time="1"/>'))
    rerun.write_text(_junit(f'<testcase {cls} name="test_a" time="2"/>'))
    xmls = sorted(tmp_path.glob("*.xml"))
    assert xmls[0] == rerun
    [run] = up.import_junit(xmls, ["distributed/_tensor/test_dtensor.py"])
    assert run.results["DTensorTest::test_a"] == up.TestResult("DTensorTest::test_a", "passed", 2.0, "", f"failed: {HANG}")
    assert run.results["DTensorTest::test_b"].outcome == "passed" and not run.results["DTensorTest::test_b"].first


def test_collection_error_in_an_imported_junit_fails_the_run(tmp_path):
    (tmp_path / "r.xml").write_text(JUNIT)
    exp = tmp_path / "exp"
    up.write_baseline(exp, "dynamo/test_hooks.py", {"HooksTests::test_a": "passed"}, {})
    (exp / "changes.json").write_text("[]")
    res = run_tool("run_upstream_tests", "--from-junit", tmp_path / "r.xml", "--files", TCA, "test_autograd.py",
                   "dynamo/test_hooks.py", "--expectations", exp, "--report", tmp_path / "r.md")
    assert res.returncode == 1
    report = (tmp_path / "r.md").read_text()
    assert "| `dynamo/test_hooks.py` | 0 | 0 | 0 | 0 | 0 | 0 | 0.0s | - | collection error: collection failure |" in report
    assert "without a result because their file died before collection finished: 1." in report


def test_bad_junit_is_a_clear_error(tmp_path):
    (tmp_path / "bad.xml").write_text("<testsuite")
    with pytest.raises(ui.UserError, match="not a readable junit XML"):
        up.read_junit(tmp_path / "bad.xml")


# -- expectations ---------------------------------------------------------------------------

def test_expectation_round_trip_merge_and_replace(tmp_path):
    path = up.write_baseline(tmp_path, TCA, {"B::t": "failed", "A::t": "passed"}, {"source": "test"})
    assert path.name == "inductor__test_compiled_autograd.json"
    data = json.loads(path.read_text())
    assert list(data["tests"]) == ["A::t", "B::t"] and data["counts"]["failed"] == 1
    base = up.load_baseline(tmp_path, TCA)
    run = _run({"A::t": "failed", "C::t": "skipped"})
    assert up.merged_baseline(base, run, replace=False) == {"A::t": "failed", "B::t": "failed", "C::t": "skipped"}
    assert up.merged_baseline(base, run, replace=True) == {"A::t": "failed", "C::t": "skipped"}
    assert up.load_baseline(tmp_path, "test_autograd.py") is None
    path.write_text(json.dumps({"tests": {"A::t": "flaky"}}))
    with pytest.raises(ui.UserError, match="unknown outcome 'flaky'"):
        up.load_baseline(tmp_path, TCA)


@pytest.mark.parametrize(
    "entries, message",
    [
        ({"test": "A::t"}, "expected a JSON list"),
        ([{"test": "A::t", "file": TCA, "outcome": "passed", "reason": "r"}], "missing patch"),
        ([{"test": "A::t", "file": TCA, "outcome": "green", "reason": "r", "patch": "p"}], "outcome 'green' is not one of"),
        ([{"test": "A::t", "file": TCA, "outcome": "passed", "reason": "r", "patch": "0009-nope.patch"}], "is not in patches/series"),
        ([{"test": "A::t", "file": TCA, "outcome": "passed", "reason": "r", "patch": "0001-a.patch"}] * 2, "recorded twice"),
    ],
)
def test_changes_file_is_validated(tmp_path, entries, message):
    (tmp_path / "changes.json").write_text(json.dumps(entries))
    with pytest.raises(ui.UserError, match=message):
        up.load_changes(tmp_path, ["0001-a.patch"])


def test_a_prefix_of_the_stack_expects_only_its_own_patches_changes(tmp_path):
    entries = [{"test": f"A::t{i}", "file": TCA, "outcome": "passed", "reason": "r", "patch": p}
               for i, p in enumerate(["0001-a.patch", "0002-b.patch", "0001-a.patch"])]
    (tmp_path / "changes.json").write_text(json.dumps(entries))
    series = ["0001-a.patch", "0002-b.patch"]
    assert len(up.load_changes(tmp_path, series)) == 3
    assert [c.test for c in up.load_changes(tmp_path, series, applied=series[:1])] == ["A::t0", "A::t2"]


def test_every_new_test_is_recorded_with_the_patch_that_adds_it():
    # check_prefixes.py expects at a prefix only its own patches' changes: a new test recorded
    # under another patch would be expected where it does not exist yet, or not where it does
    patches = {p.name: p.read_text() for p in (REPO_ROOT / "patches").glob("*.patch")}
    added = {name: set(re.findall(r"^\+\s+def (test_\w+)\(", text, re.M)) for name, text in patches.items()}
    wrong = []
    for c in up.load_changes(up.EXPECTATIONS_DIR, list(patches)):
        test = c.test.split("::")[-1]  # a parametrized test is its def's name plus "_<params>"
        # the first patch whose diff adds the def (a later one may show it as re-added: diff alignment)
        adder = next((p for p in sorted(added) if any(test == d or test.startswith(d + "_") for d in added[p])), None)
        if c.reason.startswith("new test") and adder != c.patch:
            wrong.append(f"{c.test}: recorded under {c.patch}, added by {adder}")
    assert not wrong, "\n".join(wrong)


def test_committed_expectations_are_valid_and_measured():
    changes = up.load_changes(up.EXPECTATIONS_DIR, [l.strip() for l in (REPO_ROOT / "patches" / "series").read_text().splitlines() if l.strip() and not l.startswith("#")])
    assert isinstance(changes, list)
    base = up.load_baseline(up.EXPECTATIONS_DIR, TCA)
    assert base is not None, "the stock baseline of test_compiled_autograd.py must be committed"
    c = up.counts_of(base.tests)
    # DESIGN section 4: 514 tests, 496 passed, 1 failed, 14 skipped, 3 xfailed on stock 2.6.0
    assert len(base.tests) == 514 and c["failed"] == 1
    assert base.tests["TestCompiledAutograd::test_autograd_cpp_node_saved_float"] == "failed"
    assert str(base.meta.get("source", "")).startswith(("junit", "run"))
    for t in FAST_PASSED:
        assert base.tests[t] == "passed"
    for t in FAST_SKIPPED:
        assert base.tests[t] == "skipped"


# -- profiles -------------------------------------------------------------------------------

def test_profiles_are_frozen_data_and_name_existing_files(pinned_source):
    import dataclasses

    from _pytest.mark.expression import Expression

    assert set(up.PROFILES) == {"ci", "full"}
    for prof in up.PROFILES.values():
        with pytest.raises(dataclasses.FrozenInstanceError):
            prof.name = "x"  # type: ignore[misc]
        assert prof.suites[0].file == TCA and prof.suites[0].k is None
        for s in prof.suites:
            assert (pinned_source / "test" / s.file).is_file(), s.file
            if s.k:
                Expression.compile(s.k)  # a valid -k expression
    full_files = [s.file for s in up.FULL.suites]
    # full: every test, except test_aotdispatch's op sweeps (hours, documented), test_fx's
    # TestFX (its setUp loads a torchbind test library the wheels do not ship), of
    # test_export only those of a retraced GraphModule's node meta and of test_c10d_gloo
    # only DDP's and the reducer's, less the sparse-grad ones (they hang now and then), and
    # test_python_dispatch less the test that leaks a registration into the tests after it
    assert {s.file: s.k for s in up.FULL.suites if s.k} == {
        "functorch/test_aotdispatch.py": "not TestEagerFusionOpInfo and not TestEagerFusionModuleInfo",
        "test_fx.py": "not TestFX",
        "distributed/test_c10d_gloo.py": "(DistributedDataParallelTest or ReducerTest) and not sparse",
        "test_python_dispatch.py": "not test_fallthrough_for_dense_key_with_meta_in_tls",
        "dynamo/test_export.py": "preserve_fx_node_metadata",
        "test_decomp.py": "upsample or interpolate or affine_grid or fractional_max_pool or shrink"}
    assert {s.file for s in up.CI.suites} <= set(full_files)
    assert all(s.estimate_s > 0 for p in up.PROFILES.values() for s in p.suites)
    assert up.CI.estimate_s <= 45 * 60


def test_every_file_of_the_full_profile_has_a_measured_baseline():
    for s in up.FULL.suites:
        base = up.load_baseline(up.EXPECTATIONS_DIR, s.file)
        assert base is not None and base.tests, s.file
        assert base.meta.get("source") in ("run",) or str(base.meta.get("source")).startswith("junit "), s.file


def test_shard_split_is_upstreams(pinned_source):
    spec = importlib.util.spec_from_file_location("pytest_shard_custom", pinned_source / "test" / "pytest_shard_custom.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    plugin = mod.PytestShardPlugin(None)
    ids = [f"test/{TCA}::TestCompiledAutograd::test_{i}" for i in range(40)]
    for n in (2, 3, 7):
        for nid in ids:
            assert plugin.filter_items_by_shard([type("I", (), {"nodeid": nid})], up.shard_of(nid, n), n), (nid, n)
    assert up.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(ui.UserError):
            up.parse_shard(bad)


def test_plugin_source_compiles():
    compile(up.PLUGIN_SOURCE, up.PLUGIN_MODULE, "exec")


# -- CLI: usage and bad input ---------------------------------------------------------------

def test_test_caches_are_kept_in_place_and_emptied_when_copied(tmp_path, monkeypatch):
    """Inductor's cache names headers by absolute path: a copied cache dir would fail every compile."""
    env = runner.cache_env(tmp_path / "a", "k")
    kernel = Path(env["TORCHINDUCTOR_CACHE_DIR"]) / "2r" / "c2r.h"
    kernel.parent.mkdir()
    kernel.write_text("// cached")
    assert runner.cache_env(tmp_path / "a", "k") == env and kernel.is_file()  # same place: reused
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    env_b = runner.cache_env(tmp_path / "b", "k")
    assert not (Path(env_b["TORCHINDUCTOR_CACHE_DIR"]) / "2r").exists()  # copied: emptied
    assert Path(env_b["TORCH_EXTENSIONS_DIR"]).is_dir()
    assert kernel.is_file()  # the original is untouched
    legacy = tmp_path / "c" / "test-caches" / "k" / "inductor" / "x"
    legacy.mkdir(parents=True)
    runner.cache_env(tmp_path / "c", "k")
    assert not legacy.exists()  # no record of where it was made: emptied


def test_each_shard_gets_an_inductor_cache_of_its_own(tmp_path):
    """Concurrent shards sharing one Inductor cache race when a test clears it."""
    env = runner.cache_env(tmp_path, "k")
    assert runner.shard_cache_env(env, None) == env
    one, two = runner.shard_cache_env(env, (1, 2)), runner.shard_cache_env(env, (2, 2))
    assert one["TORCHINDUCTOR_CACHE_DIR"] != two["TORCHINDUCTOR_CACHE_DIR"]
    assert Path(one["TORCHINDUCTOR_CACHE_DIR"]).is_dir() and Path(two["TORCHINDUCTOR_CACHE_DIR"]).is_dir()
    assert one["TORCH_EXTENSIONS_DIR"] == env["TORCH_EXTENSIONS_DIR"]  # extension builds lock their own dirs
    assert runner.shard_cache_env(env, (1, 2)) == one  # the same shard, the same (warm) cache


def test_help():
    res = run_tool("run_upstream_tests", "--help")
    assert res.returncode == 0 and res.stdout.startswith("usage: ")
    for text in ("--profile {ci,full}", "--baseline", "--torch-build", "--record-baseline", "--from-junit", "--shard",
                 "--overlay-dir DIR", "--venv DIR", "--stack DIR", "REGRESSION", "UNEXPECTED PASS", "Exit codes"):
        assert text in res.stdout, text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "nightly"], "invalid choice: 'nightly'"),
        (["--record-baseline"], "error: --record-baseline records the stock baseline: use it with --baseline (or --from-junit XML)"),
        (["--python", "/usr/bin/python3"], "error: --python is the interpreter of a source build: use it with --torch-build PATH"),
        (["--shard", "3/2"], "error: --shard 3/2: need 1 <= I <= N"),
        (["--shard", "half"], "error: --shard 'half': expected I/N, e.g. 1/4"),
        (["--from-junit", __file__, "-k", "x"], "error: --from-junit imports whole junit files: -k and --shard do not apply"),
        (["--files", "inductor/test_compiled_autograd"], "expected a test file like"),
        (["--jobs", "0"], "error: --jobs must be at least 1, not 0"),
        (["--jobs", "2", "--shard", "1/2"], "error: --jobs splits each file into upstream's shards: drop --shard or --jobs"),
        (["--baseline", "--venv", "/v"], "error: --venv selects the overlay to run on, which --baseline does not use: drop it"),
        (["--baseline", "--strict-capture"], "error: --strict-capture turns on the stack's strict capture (P5): stock torch"),
        (["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_usage_errors(args, message):
    res = run_tool("run_upstream_tests", *args)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr


def test_missing_overlay_is_a_clear_error(tmp_path):
    res = run_tool("run_upstream_tests", "--files", TCA, env={"FCA_CACHE_DIR": str(tmp_path)})
    assert res.returncode == 3
    assert res.error_line == (
        f"error: no overlay is built ({tmp_path}/overlay/stamp.json is missing): build it with "
        "`python tools/overlay.py build`, or run the stock baseline with --baseline"
    )
    res = run_tool("run_upstream_tests", "--overlay-dir", tmp_path / "ov", "--files", TCA)
    assert res.returncode == 3 and f"build it with `python tools/overlay.py --overlay-dir {tmp_path / 'ov'} build`" in res.error_line


def test_stale_overlay_is_a_clear_error(tmp_path, pinned_source):
    (tmp_path / "overlay" / "lib").mkdir(parents=True)
    lib = tmp_path / "overlay" / "lib" / "libfca_overlay.so"
    lib.write_bytes(b"")
    (tmp_path / "overlay" / "stamp.json").write_text(json.dumps(
        {"stack": "0000000000000000", "tree": str(pinned_source), "lib": str(lib), "torch": "2.6.0", "build_ids": {}}))
    res = run_tool("run_upstream_tests", "--files", TCA, env={"FCA_CACHE_DIR": str(tmp_path)})
    assert res.returncode == 3
    assert res.error_line.startswith("error: overlay: the overlay was built from another stack/tree"), res.stderr[-2000:]


def test_torch_build_that_is_not_built_is_refused(tmp_path, pinned_source, stock_python):
    res = run_tool("run_upstream_tests", "--torch-build", pinned_source, "--python", stock_python, "--files", TCA)
    assert res.returncode == 3
    assert f"imports torch from {Path(stock_python).parent.parent}" in res.error_line
    assert f"not from {pinned_source}: build it with `python tools/build_torch.py --torch-src {pinned_source} --mode develop`" in res.error_line
    res = run_tool("run_upstream_tests", "--torch-build", tmp_path / "nope")
    assert res.returncode == 3 and "has no test/conftest.py" in res.error_line


def test_all_tests_drops_the_profile_selections():
    res = run_tool("run_upstream_tests", "--list", "--profile", "ci", "--files", "functorch/test_aotdispatch.py", "--all-tests")
    assert res.returncode == 0 and "functorch/test_aotdispatch.py  [not measured]  all tests" in res.stdout


def test_list_shows_files_selections_times_and_baselines():
    res = run_tool("run_upstream_tests", "--list", "--profile", "ci")
    assert res.returncode == 0
    assert res.stdout.startswith("profile ci: ")
    for s in up.CI.suites:
        assert s.file in res.stdout
    assert f"{TCA}  [~" in res.stdout and "baseline 514: 496 passed, 1 failed, 14 skipped, 3 xfailed" in res.stdout


# -- real upstream runs ---------------------------------------------------------------------

@pytest.fixture(scope="session")
def stock_run(tmp_path_factory, stock_python, pinned_source):
    """The CLI on stock torch: 5 fast tests of test_compiled_autograd.py, compared with the committed baseline."""
    out = tmp_path_factory.mktemp("stock")
    res = run_tool("run_upstream_tests", "--baseline", "--files", TCA, "-k", FAST_K,
                   "--junit-dir", out / "junit", "--report", out / "report.md")
    return res, out


def test_stock_run_matches_the_committed_baseline(stock_run):
    res, out = stock_run
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert "**OK: every outcome is as expected**" in report
    assert "| passed | 4 | 4 |" in report and "| skipped | 1 | 1 |" in report
    assert "Baseline tests outside this run's selection (-k, shard, profile): 509." in report
    assert "## Differences\n\nNone." in report
    assert report.rstrip() in res.stdout  # printed to the console as well
    # progress lines with elapsed time, the exact pytest command, persistent caches
    assert "[1/1 " in res.stderr and f"] {TCA}: 4 passed, 1 skipped in " in res.stderr
    assert "TORCHINDUCTOR_CACHE_DIR=" in res.stderr and "/test-caches/stock/inductor" in res.stderr
    assert "-p no:cacheprovider" in res.stderr and "--junitxml=" in res.stderr
    xml = out / "junit" / "inductor__test_compiled_autograd.xml"
    results, problem = up.results_for_file(up.read_junit(xml), TCA)
    assert problem is None
    assert {t for t, r in results.items() if r.outcome == "passed"} == FAST_PASSED
    assert {t for t, r in results.items() if r.outcome == "skipped"} == FAST_SKIPPED
    assert "Running 5 items in this shard" in (out / "junit" / "inductor__test_compiled_autograd.log").read_text()


def test_real_junit_through_the_comparator(stock_run, tmp_path):
    """The real junit XML against a doctored baseline: every kind of difference, via --from-junit."""
    _, out = stock_run
    xml = out / "junit" / "inductor__test_compiled_autograd.xml"
    exp = tmp_path / "exp"
    real = up.load_baseline(up.EXPECTATIONS_DIR, TCA)
    tests = {t: real.tests[t] for t in FAST_PASSED | FAST_SKIPPED}
    tests["TestCompiledAutograd::test_torch_compile_api_eager"] = "failed"  # -> UNEXPECTED PASS
    tests["TestAutogradWithCompiledAutograd::test_grad_nonleaf"] = "xfailed"  # -> recorded below
    tests["TestCompiledAutograd::test_cudagraphs_cpu_division"] = "passed"  # -> NOW SKIPPED
    del tests["TestAutogradWithCompiledAutograd::test_grad_nonleaf_many_outputs"]  # -> NEW
    tests["TestCompiledAutograd::test_not_in_the_xml"] = "passed"  # -> MISSING
    up.write_baseline(exp, TCA, tests, {"source": "test"})
    (exp / "changes.json").write_text(json.dumps([
        {"test": "TestAutogradWithCompiledAutograd::test_grad_nonleaf", "file": TCA, "outcome": "passed",
         "reason": "P4 makes it pass", "patch": "0001-a.patch"}]))
    # the recorded change names a patch; validate against a series that has it
    res = run_tool("run_upstream_tests", "--from-junit", xml, "--expectations", exp, "--report", tmp_path / "r.md")
    assert res.returncode == 3 and "patch '0001-a.patch' is not in patches/series" in res.error_line
    (exp / "changes.json").write_text("[]")
    res = run_tool("run_upstream_tests", "--from-junit", xml, "--expectations", exp, "--report", tmp_path / "r.md")
    assert res.returncode == 1
    report = (tmp_path / "r.md").read_text()
    assert "FAILED: 5 unexpected difference(s)" in report
    for kind, test in [(up.UNEXPECTED_PASS, "TestCompiledAutograd::test_torch_compile_api_eager"),
                       (up.UNEXPECTED_PASS, "TestAutogradWithCompiledAutograd::test_grad_nonleaf"),
                       (up.NOW_SKIPPED, "TestCompiledAutograd::test_cudagraphs_cpu_division"),
                       (up.NEW, "TestAutogradWithCompiledAutograd::test_grad_nonleaf_many_outputs"),
                       (up.MISSING, "TestCompiledAutograd::test_not_in_the_xml")]:
        assert f"| {kind} | `{test}` |" in report, (kind, test)
    # record it: the baseline takes the junit's outcomes
    res = run_tool("run_upstream_tests", "--from-junit", xml, "--expectations", exp, "--record-baseline",
                   "--report", tmp_path / "r2.md")
    assert res.returncode == 0, res.stderr[-2000:]
    rec = up.load_baseline(exp, TCA)
    assert {t for t, o in rec.tests.items() if o == "passed"} == FAST_PASSED | {"TestCompiledAutograd::test_not_in_the_xml"}
    assert rec.meta["source"] == f"junit {xml.name}"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_timeout_kills_pytest_and_fails_the_run(stock_python, tmp_path, jobs):
    res = run_tool("run_upstream_tests", "--baseline", "--files", TCA, "-k", FAST_K, "--timeout", "0.05", "--jobs", jobs,
                   "--junit-dir", tmp_path / "j", "--report", tmp_path / "r.md")
    assert res.returncode == 1
    report = (tmp_path / "r.md").read_text()
    assert "timed out after 3.0s (--timeout)" in report
    # killed before collection: nothing to compare; after it (a warm machine collects in 3 s): the
    # tests that got no result are MISSING
    assert re.search(r"\*\*FAILED: \d+ unexpected difference\(s\), 1 file problem\(s\)\*\*", report), report[:600]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path / "j") not in ps  # the pytest we started (and its children) are gone


HANGS_ONCE = """
import os, pathlib, time

# The first pytest of this file (not a rank it spawns, nor a later pytest): its ranks hang, and it gives
# them 5 s.  A later pytest keeps the 300 s limit and its ranks do not hang.
MARK = pathlib.Path(os.environ["FCA_TEST_HANG_MARK"])
if not MARK.exists():
    MARK.touch()
    os.environ["FCA_TEST_HANG_NOW"] = "1"  # the ranks inherit it
    os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = "5"

from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests


class HangTest(MultiProcessTestCase):
    @property
    def world_size(self):
        return 1

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_rank_hangs_in_the_first_pytest(self):
        if os.environ.get("FCA_TEST_HANG_NOW"):
            time.sleep(600)


if __name__ == "__main__":
    run_tests()
"""


def test_a_test_whose_rank_hangs_runs_once_more_in_a_pytest_of_its_own(stock_python, tmp_path, monkeypatch):
    """A real MultiProcessTestCase whose rank sleeps past the time limit in the first pytest only: the hang is
    rerun, alone, and passes."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_hangs_once.py").write_text(HANGS_ONCE)
    monkeypatch.setenv("FCA_TEST_HANG_MARK", str(tmp_path / "hung"))
    target = up_target.Target("stock", (stock_python,), tmp_path, tests, "hang")
    r = runner.Runner(runner.RunOptions(timeout_s=300), target, tmp_path / "j", tmp_path / "cache", Shell(verbose=False))
    hung = r.run(up.Suite("test_hangs_once.py"), 1, 1).results["HangTest::test_rank_hangs_in_the_first_pytest"]
    assert (tmp_path / "hung").exists()
    assert hung.outcome == "passed" and hung.first.startswith("failed: RuntimeError: Process 0 terminated or timed out"), hung
    assert re.search(r"^1 passed in ", (tmp_path / "j" / "test_hangs_once.rerun.log").read_text(), re.M)


def test_sharded_run_uses_upstreams_split_and_records_what_ran(stock_run, tmp_path):
    """--baseline --shard 2/2 -k ... --record-baseline: upstream's split; only the tests that ran are updated."""
    exp = tmp_path / "exp"
    shutil.copytree(up.EXPECTATIONS_DIR, exp)
    committed = up.load_baseline(exp, TCA)
    res = run_tool("run_upstream_tests", "--baseline", "--files", TCA, "-k", FAST_K, "--shard", "2/2",
                   "--junit-dir", tmp_path / "j", "--report", tmp_path / "r.md", "--expectations", exp, "--record-baseline")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "--shard-id 2 --num-shards 2" in res.stderr
    want = {t for t in FAST_PASSED | FAST_SKIPPED if up.shard_of(f"test/{TCA}::{t}", 2) == 2}
    results, _ = up.results_for_file(up.read_junit(tmp_path / "j" / "inductor__test_compiled_autograd.xml"), TCA)
    assert set(results) == want and want
    assert "**RECORDED: the baseline of 1 file(s) was written from these results; the differences below are against " \
           "the previous expectations (0 would have failed)**" in (tmp_path / "r.md").read_text()
    rec = up.load_baseline(exp, TCA)
    assert rec.tests == committed.tests  # same outcomes, nothing dropped
    assert rec.meta["source"] == "run" and rec.meta["torch"].startswith("2.6.0") and rec.meta["whole_file"] is False
    assert rec.meta["updated_from"] == dict(committed.meta)


def test_jobs_run_upstreams_shards_at_once_and_merge_them_into_one_result(stock_run, tmp_path):
    """--jobs 2: shards 1/2 and 2/2 of the file run concurrently; the report is the whole selection's."""
    res = run_tool("run_upstream_tests", "--baseline", "--files", TCA, "-k", FAST_K, "--jobs", "2",
                   "--junit-dir", tmp_path / "j", "--report", tmp_path / "r.md")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "--shard-id 1 --num-shards 2" in res.stderr and "--shard-id 2 --num-shards 2" in res.stderr
    assert f"{TCA} -k " in res.stderr and " as 2 concurrent shards ..." in res.stderr
    assert f"] {TCA}: 4 passed, 1 skipped in " in res.stderr
    report = (tmp_path / "r.md").read_text()
    assert "**OK: every outcome is as expected**" in report
    assert "| passed | 4 | 4 |" in report and "| skipped | 1 | 1 |" in report
    assert "Baseline tests outside this run's selection (-k, shard, profile): 509." in report
    spans = []
    for i in (1, 2):
        xml = tmp_path / "j" / f"inductor__test_compiled_autograd.{i}of2.xml"
        results, problem = up.results_for_file(up.read_junit(xml), TCA)
        assert problem is None
        assert set(results) == {t for t in FAST_PASSED | FAST_SKIPPED if up.shard_of(f"test/{TCA}::{t}", 2) == i}
        meta = up.junit_meta(xml)
        start = datetime.datetime.fromisoformat(meta["timestamp"]).timestamp()
        spans.append((start, start + float(meta["time"])))
    (s1, e1), (s2, e2) = spans
    assert s1 < e2 and s2 < e1, spans  # the two pytest sessions overlapped in time


def test_baseline_uses_the_pins_tests_when_the_stack_changes_them(pin_clone, pinned_source, tmp_path):
    """A tree whose stack edits test files: --baseline runs the pin's test/ (extracted from git), not the patched one."""
    from samplestack import build_stack
    from tools.lib.shell import Shell
    from tools.lib.upstream.target import pristine_tests

    repo = pin_clone()
    build_stack(repo)
    stack = tmp_path / "stack"
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    sh = Shell(verbose=False)
    tests = pristine_tests(repo, tmp_path / "cache", sh, stack)
    assert tests != repo / "test" and (tests.parent / "pytest.ini").is_file()
    assert "# test stack: TwoTensor test" in (repo / "test" / TCA).read_text()
    assert "# test stack" not in (tests / TCA).read_text()
    assert pristine_tests(repo, tmp_path / "cache", sh, stack) == tests  # cached
    assert not (tests.parent.parent / "torch").exists()  # nothing that could shadow the installed torch
    # the repo's own stack on the pinned source: whatever it changes, the baseline gets the pin's tests
    pristine = pristine_tests(pinned_source, tmp_path / "cache", sh)
    assert (pristine / TCA).read_text() == git(pinned_source, "show", f"v2.6.0:test/{TCA}")


def test_record_baseline_from_junit_updates_only_its_tests(stock_run, tmp_path):
    """--from-junit --record-baseline updates the tests the junit has and keeps the others."""
    _, out = stock_run
    exp = tmp_path / "exp"
    up.write_baseline(exp, TCA, {"TestCompiledAutograd::test_torch_compile_api_eager": "failed", "Other::t": "passed"}, {})
    (exp / "changes.json").write_text("[]")
    res = run_tool("run_upstream_tests", "--from-junit", out / "junit" / "inductor__test_compiled_autograd.xml",
                   "--baseline", "--expectations", exp, "--record-baseline", "--report", tmp_path / "r.md")
    assert res.returncode == 0, res.stderr[-2000:]
    rec = up.load_baseline(exp, TCA)
    assert rec.tests["TestCompiledAutograd::test_torch_compile_api_eager"] == "passed"
    assert rec.tests["Other::t"] == "passed" and len(rec.tests) == 6
    assert rec.meta["updated_from"] == {}


@pytest.fixture(scope="session")
def overlay_built(pinned_source) -> None:
    """The overlay for the repo's stack, built (incrementally) by the real tool, as test_overlay.py does."""
    assert run_tool("apply_patches").returncode == 0
    res = run_tool("overlay", "build")
    assert res.returncode == 0, res.stderr[-3000:]


def test_default_run_is_the_patched_tree_on_the_overlay(overlay_built, tmp_path):
    """The default target: `overlay.py run -- python -m pytest` on the overlay's tree, compared with the baseline."""
    res = run_tool("run_upstream_tests", "--files", TCA, "-k", FAST_K, "--junit-dir", tmp_path / "j",
                   "--report", tmp_path / "r.md")
    report = (tmp_path / "r.md").read_text()
    assert "overlay.py -q run -- python -m pytest inductor/test_compiled_autograd.py" in res.stderr
    assert "overlay venv (patched tree on the stock wheel)" in report
    stamp = json.loads((paths.cache_dir() / "overlay" / "stamp.json").read_text())
    assert f"/test-caches/{stamp['stack']}/inductor" in res.stderr
    # with no recorded change for these tests, the patched tree must match stock
    changes = {(c.file, c.test) for c in up.load_changes(up.EXPECTATIONS_DIR)}
    if not changes & {(TCA, t) for t in FAST_PASSED | FAST_SKIPPED}:
        assert res.returncode == 0, report
        assert "| passed | 4 | 4 |" in report and "| skipped | 1 | 1 |" in report


# A deliberate Python-only break for the end-to-end test below (never in patches/): every gradient compiled
# autograd accumulates into a leaf is doubled.  Of FAST_K it fails test_torch_compile_api_eager (measured).
BREAK_AT = "        self.stack.close()\n"
BREAK = (
    "        # DELIBERATELY BROKEN by the tooling's own test: every gradient accumulated into a leaf is doubled\n"
    "        fx_graph = self.fx_tracer.graph\n"
    "        for node in list(fx_graph.find_nodes(op=\"call_function\", target=torch.ops.inductor.accumulate_grad_.default)):\n"
    "            with fx_graph.inserting_before(node):\n"
    "                node.update_arg(1, fx_graph.call_function(torch.ops.aten.mul.Tensor, (node.args[1], 2)))\n"
)
BROKEN = "TestCompiledAutograd::test_torch_compile_api_eager"


def test_a_deliberately_broken_patch_fails_the_run_with_a_readable_report(pin_clone, tmp_path):
    """Issue #4 end to end with the real tools: a broken patch in a throwaway stack is applied to a clone of the
    pin, built into a throwaway overlay (--overlay-dir/--venv/--stack) and run through upstream's tests; the run
    fails and says which test broke and why.  The real overlay is left alone.  Slow: venv from the wheelhouse,
    overlay compile, 5 upstream tests (a few minutes)."""
    from tools.lib.overlay import install

    real = paths.cache_dir() / "overlay"
    watched = ["stamp.json", "lib/libfca_overlay.so", f"state/{install.RECORD_JSON}"] + [
        str(f.relative_to(real)) for f in real.glob("venv/lib/python3*/site-packages/torch/_dynamo/compiled_autograd.py")]
    before = snapshot(real, watched)

    repo = pin_clone()
    ca = repo / "torch/_dynamo/compiled_autograd.py"
    assert ca.read_text().count(BREAK_AT) == 1
    ca.write_text(ca.read_text().replace(BREAK_AT, BREAK_AT + BREAK))
    date = {"GIT_AUTHOR_DATE": "2025-03-01T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-03-01T12:00:00+00:00"}
    git(repo, "commit", "-qam", "[test] Deliberately broken: compiled autograd doubles accumulated gradients", env=date)
    stack = export_stack(repo, tmp_path / "stack")
    git(repo, "reset", "-q", "--hard", "v2.6.0")
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "DELIBERATELY BROKEN" in ca.read_text()

    exp = tmp_path / "exp"  # the committed stock baseline; no recorded changes (those belong to the real stack)
    shutil.copytree(up.EXPECTATIONS_DIR, exp)
    (exp / up.CHANGES_FILE).write_text("[]")
    ov = ["--overlay-dir", tmp_path / "ov", "--venv", tmp_path / "venv", "--stack", stack]
    test_caches = None
    try:
        res = run_tool("overlay", *ov, "build", "--torch-src", repo, timeout=HANG_TIMEOUT)  # a new venv, every TU
        assert res.returncode == 0, res.stderr[-3000:]
        stamp = json.loads((tmp_path / "ov" / "stamp.json").read_text())
        test_caches = paths.cache_dir() / "test-caches" / stamp["stack"]
        res = run_tool("run_upstream_tests", *ov, "--torch-src", repo, "--files", TCA, "-k", FAST_K,
                       "--expectations", exp, "--report", tmp_path / "r.md", "--junit-dir", tmp_path / "j")
    finally:
        shutil.rmtree(tmp_path / "venv", ignore_errors=True)  # 5 GB
        if test_caches is not None:
            shutil.rmtree(test_caches, ignore_errors=True)
    report = (tmp_path / "r.md").read_text()
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"overlay.py -q --overlay-dir {tmp_path / 'ov'} --venv {tmp_path / 'venv'} --stack {stack} run -- python -m pytest" in res.stderr
    assert f"/test-caches/{stamp['stack']}/inductor" in res.stderr
    assert "**FAILED: 1 unexpected difference(s)**" in report
    regression = (f"| REGRESSION | `{BROKEN}` | `{TCA}` | passed | failed | UNEXPECTED | "
                  "AssertionError: Tensor-likes are not close! |")
    group = f"| 1 | AssertionError: Tensor-likes are not close! | `{TCA}::{BROKEN}` |"
    assert regression in report and group in report.split("## Unexpected differences by message")[1]
    assert "| passed | 4 | 3 |" in report and "| failed | 0 | 1 |" in report
    for line in ("FAILED: 1 unexpected difference(s)", regression, group):  # the console says the same
        assert line in res.stdout, line
    assert snapshot(real, watched) == before  # the real stack's overlay and venv were not touched
