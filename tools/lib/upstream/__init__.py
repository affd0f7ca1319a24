"""Upstream test runs: which files (profiles), what a run produced (results), what it should have produced
(expectations), and the report; ``target`` and ``runner`` run pytest for tools/run_upstream_tests.py.

Everything the package exports here is pure (files in, values out) except the expectation writers, so
callers say ``up.load_baseline``, ``up.compare``, ``up.TCA`` without knowing which module holds what.
"""

from .expectations import (CHANGE_NOT_MET, CHANGE_OUTCOMES, CHANGED, CHANGES_FILE, EXPECTATIONS_DIR, EXPECTED_CHANGE,
                           FAILING_KINDS, MISSING, NEW, NOW_SKIPPED, REGRESSION, UNEXPECTED_PASS, Baseline, Change,
                           Comparison, Diff, classify, compare, counts_of, expectation_path, load_baseline, load_changes,
                           merged_baseline, record_baselines, write_baseline)
from .plugin import PCH_ENV, PCH_FILES, PLUGIN_MODULE, PLUGIN_SOURCE, write_plugin
from .profiles import (CI, DTENSOR_COMPILE, FULL, PROFILES, TCA, Profile, Suite, combine_k, file_slug, normalize_file,
                       parse_shard, shard_of)
from .report import STRICT_ENV, STRICT_MARKER, RunInfo, Violation, failure_groups, render_report, render_strict, strict_violations
from .results import (BAD, OUTCOMES, PASSLIKE, RERUN_SUFFIX, FileRun, TestResult, import_junit, junit_meta, junit_outcome, junit_test_id,
                      module_parts, nodeid_test_id, now_iso, read_collection, read_junit, read_progress, results_for_file,
                      split_junit_by_file, with_reruns)

__all__ = [
    "BAD", "CHANGED", "CHANGES_FILE", "CHANGE_NOT_MET", "CHANGE_OUTCOMES", "CI", "DTENSOR_COMPILE", "EXPECTATIONS_DIR",
    "EXPECTED_CHANGE", "FAILING_KINDS", "FULL", "MISSING", "NEW", "NOW_SKIPPED", "OUTCOMES", "PASSLIKE", "PCH_ENV",
    "PCH_FILES", "PLUGIN_MODULE", "PLUGIN_SOURCE", "PROFILES", "REGRESSION", "RERUN_SUFFIX", "STRICT_ENV", "STRICT_MARKER", "TCA",
    "UNEXPECTED_PASS", "Baseline", "Change", "Comparison", "Diff", "FileRun", "Profile", "RunInfo", "Suite", "TestResult",
    "Violation", "classify", "combine_k", "compare", "counts_of", "expectation_path", "failure_groups", "file_slug",
    "import_junit", "junit_meta", "junit_outcome", "junit_test_id", "load_baseline", "load_changes", "merged_baseline",
    "module_parts", "nodeid_test_id", "normalize_file", "now_iso", "parse_shard", "read_collection", "read_junit",
    "read_progress", "record_baselines", "render_report", "render_strict", "results_for_file", "shard_of",
    "split_junit_by_file", "strict_violations", "with_reruns", "write_baseline", "write_plugin",
]
