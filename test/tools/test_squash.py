"""tools/squash.py: the whole stack as one combined patch, byte-stable."""

from __future__ import annotations

import subprocess

from conftest import export_stack, git, run_tool
from samplestack import build_stack


def test_squash_lists_the_patches_and_applies_to_the_pin_as_the_whole_stack(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo)
    stack = export_stack(repo, tmp_path / "stack")
    out = tmp_path / "squash.patch"
    res = run_tool("squash", "--stack", stack, "--torch-src", repo, "-o", out)
    assert res.returncode == 0, res.stderr
    text = out.read_text()
    subjects = git(repo, "log", "--reverse", "--format=%s", "v2.6.0..HEAD").splitlines()
    assert f"(squash of {len(subjects)} patches)" in text.splitlines()[2]
    listed = [line.split(". ", 1)[1] for line in text.split("Patches:\n", 1)[1].split("\n\n", 1)[0].splitlines()
              if not line.strip().startswith("(")]
    assert listed == subjects
    # applied to a fresh pin checkout, it gives the stack's files
    fresh = pin_clone("fresh")
    proc = subprocess.run(["git", "apply", "--index", str(out)], cwd=fresh, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert git(fresh, "diff", "--cached", "--stat") == git(repo, "diff", "--stat", "v2.6.0", "HEAD")
    assert git(fresh, "write-tree") == git(repo, "rev-parse", "HEAD^{tree}")


def test_squash_is_byte_stable_and_check_detects_a_difference(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo)
    stack = export_stack(repo, tmp_path / "stack")
    first = run_tool("squash", "--stack", stack, "--torch-src", repo, "-q")
    second = run_tool("squash", "--stack", stack, "--torch-src", repo, "-q")
    assert first.returncode == 0 and first.stdout and first.stdout == second.stdout
    out = tmp_path / "squash.patch"
    out.write_text(first.stdout)
    assert run_tool("squash", "--stack", stack, "--torch-src", repo, "-o", out, "--check").returncode == 0
    out.write_text(first.stdout.replace("Patches:", "Patches (edited):"))
    res = run_tool("squash", "--stack", stack, "--torch-src", repo, "-o", out, "--check")
    assert res.returncode == 1 and "run tools/squash.py -o" in res.stdout


def test_squash_check_needs_an_output_file():
    res = run_tool("squash", "--check")
    assert res.returncode == 2 and "--check compares with a file: give it with -o FILE" in res.stderr
