"""Every tool has --help and meaningful exit codes, as a script and as a console script."""

from __future__ import annotations

import pytest

from conftest import run_tool

TOOLS = ["apply_patches", "export_patches", "vendor", "squash", "fetch_pinned_source", "build_wheel", "gpu_check"]
ALL_TOOLS = TOOLS + ["overlay", "run_upstream_tests", "build_torch", "bench", "lint_stack", "rebase_stack", "check_prefixes"]


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_help_exits_zero_and_describes_the_tool_and_its_exit_codes(tool):
    res = run_tool(tool, "--help")
    assert res.returncode == 0
    assert res.stdout.startswith("usage: ")
    assert "Exit codes: 0 " in res.stdout


@pytest.mark.parametrize("tool, args", [("export_patches", ["--check"]), ("vendor", ["--check"]),
                                        ("squash", ["-o", "out.patch"]), ("lint_stack", []),
                                        ("rebase_stack", ["--abort"])])
def test_a_missing_torch_src_is_said_not_to_exist(tool, args, tmp_path):
    res = run_tool(tool, "--torch-src", tmp_path / "nope", *args)
    assert res.returncode == 3
    assert res.error_line.startswith(f"error: --torch-src {tmp_path / 'nope'} does not exist")


@pytest.mark.parametrize("tool", TOOLS)
def test_unknown_option_is_a_usage_error(tool):
    res = run_tool(tool, "--no-such-option")
    assert res.returncode == 2 and "unrecognized arguments" in res.stderr


def test_missing_tree_is_a_clear_error(tmp_path):
    res = run_tool("apply_patches", "--torch-src", tmp_path / "nope")
    assert res.returncode == 3
    assert res.error_line == f"error: {tmp_path / 'nope'} is not a directory; pass --torch-src with a PyTorch v2.6.0 checkout"


def test_stack_dir_without_series_is_a_clear_error(tmp_path):
    res = run_tool("apply_patches", "--stack", tmp_path, "--status")
    assert res.returncode == 3 and "series is missing" in res.error_line


def test_series_naming_a_missing_patch_is_a_clear_error(tmp_path):
    (tmp_path / "series").write_text("0001-gone.patch\n")
    res = run_tool("apply_patches", "--stack", tmp_path, "--status")
    assert res.returncode == 3 and "series:1: 0001-gone.patch does not exist" in res.error_line


def test_build_wheel_refuses_a_python_torch_has_no_wheel_for(tmp_path):
    old = tmp_path / "python3.8"
    # what the interpreter probe (version, headers, libpython dir) prints on CPython 3.8
    old.write_text('#!/bin/sh\necho \'{"version": "3.8", "include": "/usr/include/python3.8", "libdir": "/usr/lib"}\'\n')
    old.chmod(0o755)
    res = run_tool("build_wheel", "--python", old)
    assert res.returncode == 3
    assert res.error_line == f"error: {old} is Python 3.8; torch 2.6.0 has wheels for CPython 3.9, 3.10, 3.11, 3.12, 3.13"
    res = run_tool("build_wheel", "--python", tmp_path / "none")
    assert res.returncode == 3 and res.error_line.startswith(f"error: cannot run {tmp_path / 'none'}")
