"""tools/lint_stack.py: the pinned tree's own linters, at its versions, on the files the stack touches."""

from __future__ import annotations

import pytest

from conftest import export_stack, git, run_tool
from tools.lib import lint


@pytest.mark.parametrize("pattern, path, hit", [
    ("**/*.py", "torch/_dynamo/compiled_autograd.py", True),
    ("**/*.py", "setup.py", True),
    ("torch/csrc/**/*.h", "torch/csrc/dynamo/compiled_autograd.h", True),
    ("torch/csrc/*.h", "torch/csrc/dynamo/compiled_autograd.h", False),
    ("c10/**/*.h", "torch/csrc/c10/x.h", False),
    ("test/test_[a-c]*.py", "test/test_autograd.py", True),
])
def test_globs_follow_lintrunner(pattern, path, hit):
    assert lint._glob_match(pattern, path) is hit


def test_linters_and_versions_come_from_the_pinned_tree(pinned_source):
    linters = lint.load(pinned_source)
    assert "flake8==6.1.0" in linters["FLAKE8"].requirements
    assert "ruff==0.7.4" in linters["RUFF"].requirements
    assert linters["CLANGFORMAT"].covers("torch/csrc/dynamo/compiled_autograd.h")
    assert not linters["CLANGFORMAT"].covers("torch/_dynamo/compiled_autograd.py")
    assert lint.clang_format_version(pinned_source) == "17.0.6"
    reqs = lint.venv_requirements(pinned_source, ["FLAKE8", "CLANGFORMAT"], linters)
    assert reqs[-1] == "clang-format==17.0.6" and len(reqs) == len(set(reqs))


def test_a_project_macro_in_a_header_is_a_finding_and_elsewhere_not():
    found = lint.project_macros("torch/csrc/x.h", "#define FCA_PACK(T) T\nint fca_ok;\n")
    assert [(m.line, m.code) for m in found] == [(1, "HYGIENE")] and "FCA_PACK" in found[0].description
    assert lint.project_macros("torch/csrc/x.cpp", "#define FCA_PACK(T) T\n") == []


def test_the_stack_is_lint_clean_with_the_trees_own_linters(pinned_source):
    assert run_tool("apply_patches").returncode == 0
    res = run_tool("lint_stack", "-q")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "lint: 0 finding(s)" in res.stdout and "HYGIENE: 0 in" in res.stdout


BADLY_FORMATTED = "\n\ndef fca_lint_probe(a,b):\n    return {'a':a,'b':b}\n"


def test_findings_fail_the_run_and_fix_rewrites_the_commits_formatted(pin_clone, tmp_path):
    """A commit with unformatted Python and a project macro in a header: exit 1 naming both; --fix
    formats the commit (same message, same files) and leaves the macro, which no formatter fixes."""
    repo = pin_clone()
    (repo / "torch/_dynamo/compiled_autograd.py").write_text((repo / "torch/_dynamo/compiled_autograd.py").read_text() + BADLY_FORMATTED)
    header = repo / "torch/csrc/dynamo/compiled_autograd.h"
    header.write_text(header.read_text() + "\n#define FCA_LINT_PROBE 1\n")
    git(repo, "commit", "-qam", "[compiled autograd] lint probe\n\nTest Plan: lint_stack finds it")
    stack = export_stack(repo, tmp_path / "stack")
    git(repo, "reset", "-q", "--hard", "v2.6.0")
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    res = run_tool("lint_stack", "--torch-src", repo, "--stack", stack, "-q")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "torch/_dynamo/compiled_autograd.py: PYFMT/format" in res.stdout
    assert "torch/csrc/dynamo/compiled_autograd.h:" in res.stdout and "HYGIENE/project-macro (error): FCA_LINT_PROBE" in res.stdout

    res = run_tool("lint_stack", "--torch-src", repo, "--stack", stack, "--fix", "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'def fca_lint_probe(a, b):\n    return {"a": a, "b": b}\n' in (repo / "torch/_dynamo/compiled_autograd.py").read_text()
    assert git(repo, "log", "--format=%s", "v2.6.0..HEAD").splitlines() == ["[compiled autograd] lint probe"]
    fixed = export_stack(repo, tmp_path / "fixed")
    git(repo, "reset", "-q", "--hard", "v2.6.0")
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", fixed).returncode == 0
    res = run_tool("lint_stack", "--torch-src", repo, "--stack", fixed, "-q")
    assert res.returncode == 1 and "PYFMT: 0 in" in res.stdout and "HYGIENE: 1 in" in res.stdout, res.stdout
