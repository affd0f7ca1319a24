"""tools/vendor.py: post-stack copies of touched upstream files, with drift check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import REPO_ROOT, run_tool
from samplestack import build_stack


def _stack_from(repo: Path, tmp_path: Path) -> Path:
    stack = tmp_path / "stack"
    stack.mkdir()
    shutil.copy(REPO_ROOT / "patches" / "pin.sha256", stack / "pin.sha256")
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    return stack


def test_repo_vendor_dir_is_up_to_date(pinned_source):
    res = run_tool("vendor", "--check")
    assert res.returncode == 0, res.stdout + res.stderr


def test_empty_stack_vendors_nothing(pinned_source, tmp_path):
    # A clone at the pin of its own: the shared pinned source may carry commits of any stack on top,
    # which an empty stack cannot tell from user commits.
    pin = tmp_path / "pin"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", "-b", "v2.6.0", str(pinned_source), str(pin)],
                   check=True, capture_output=True)
    stack = tmp_path / "stack"
    stack.mkdir()
    (stack / "series").write_text("")
    shutil.copy(REPO_ROOT / "patches" / "pin.sha256", stack / "pin.sha256")
    out = tmp_path / "vendor"
    res = run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", pin)
    assert res.returncode == 0, res.stderr
    # No PyTorch file is vendored, so there is nothing for a NOTICE to cover.
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["README.md"]
    assert "(none: the stack is empty)" in (out / "README.md").read_text()
    assert "NOTICE" not in (out / "README.md").read_text()


def test_vendor_holds_post_stack_files_and_check_detects_drift(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo)
    stack = _stack_from(repo, tmp_path)
    out = tmp_path / "vendor"
    res = run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo)
    assert res.returncode == 0, res.stderr
    vendored = out / "torch/csrc/dynamo/compiled_autograd.cpp"
    assert vendored.read_bytes() == (repo / "torch/csrc/dynamo/compiled_autograd.cpp").read_bytes()
    assert (out / "build_variables.bzl").read_bytes() == (repo / "build_variables.bzl").read_bytes()
    assert "| `build_variables.bzl` |" in (out / "README.md").read_text()
    assert run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo, "--check").returncode == 0
    # A hand edit is drift.
    vendored.write_text(vendored.read_text() + "// hand edit\n")
    res = run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo, "--check")
    assert res.returncode == 1 and "torch/csrc/dynamo/compiled_autograd.cpp" in res.stdout
    # An extra file is drift too; regenerating removes both.
    (out / "extra.txt").write_text("x")
    assert run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo, "--check").returncode == 1
    assert run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo).returncode == 0
    assert not (out / "extra.txt").exists()
    assert run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo, "--check").returncode == 0


def test_notice_carries_pytorchs_copyright_lines_and_check_covers_it(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo, 2)
    stack = _stack_from(repo, tmp_path)
    out = tmp_path / "vendor"
    assert run_tool("vendor", "--stack", stack, "--vendor-dir", out, "--torch-src", repo).returncode == 0
    notice = (out / "NOTICE").read_text()
    pin_license = (repo / "LICENSE").read_text()
    copyright_lines = pin_license[: pin_license.index("Redistribution and use")].strip("\n")
    assert "Copyright (c) 2016-     Facebook, Inc            (Adam Paszke)" in copyright_lines
    assert copyright_lines in notice  # verbatim, every line of it
    assert "Redistribution and use" not in notice and "../LICENSE" in notice
    assert "modified by the patches of patches/series (0001 to 0002)" in notice
    assert "see NOTICE" in (out / "README.md").read_text()
    args = ("--stack", stack, "--vendor-dir", out, "--torch-src", repo)
    assert run_tool("vendor", *args).stdout.strip().endswith("3 vendored file(s) (0 written, 0 removed)")
    # An edited or a missing NOTICE is drift; regenerating restores it.
    (out / "NOTICE").write_text(notice.replace("Adam Paszke", "someone"))
    res = run_tool("vendor", *args, "--check")
    assert res.returncode == 1 and "e.g. NOTICE" in res.stdout
    (out / "NOTICE").unlink()
    assert run_tool("vendor", *args, "--check").returncode == 1
    assert run_tool("vendor", *args).returncode == 0
    assert (out / "NOTICE").read_text() == notice


def test_repo_notice_and_license_name_pytorch(pinned_source):
    """The committed NOTICE copies the pin's copyright lines; the top-level LICENSE reproduces PyTorch's."""
    notice = (REPO_ROOT / "vendored_torch_patches" / "NOTICE").read_text()
    license_text = (REPO_ROOT / "LICENSE").read_text()
    adam = "Copyright (c) 2016-     Facebook, Inc            (Adam Paszke)"
    assert adam in notice and adam in (pinned_source / "LICENSE").read_text()
    assert "Code derived from PyTorch" in license_text and adam in license_text
    assert "vendored_torch_patches/" in license_text
