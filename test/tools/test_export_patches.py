"""tools/export_patches.py: byte-stable export of the commits above the pin."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import REPO_ROOT, git, git_state, run_tool, snapshot
from samplestack import build_stack


def _fresh_stack_dir(tmp_path: Path, name: str = "stack") -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(REPO_ROOT / "patches" / "pin.sha256", d / "pin.sha256")
    return d


def test_export_writes_numbered_patches_series_and_manifest(pin_clone, tmp_path):
    repo = pin_clone()
    subjects = build_stack(repo, 3)
    stack = _fresh_stack_dir(tmp_path)
    res = run_tool("export_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    series = (stack / "series").read_text().split()
    assert series == [
        "0001-compiled-autograd-declare-a-python-compiler-interface.patch",
        "0002-compiled-autograd-add-compiled-autograd-cpp-to-libtorch-cpu.patch",
        "0003-compiled-autograd-copybackwards-proxies-a-functional-call.patch",
    ]
    first = (stack / series[0]).read_text()
    assert first.startswith("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n")
    assert f"Subject: {subjects[0]}\n" in first  # -k: no [PATCH] prefix, subject kept whole
    assert "\n-- \n" not in first  # no signature (git version)
    assert "index 739ccdae" not in first and "\nindex " in first  # full blob ids, no abbreviation
    manifest = (stack / "pin.sha256").read_text()
    assert "absent  torch/csrc/dynamo/compiled_autograd.cpp" in manifest
    assert "  build_variables.bzl\n" in manifest


def test_export_is_independent_of_user_git_config(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo, 3)
    plain = _fresh_stack_dir(tmp_path, "plain")
    assert run_tool("export_patches", "--torch-src", repo, "--stack", plain).returncode == 0
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[diff]\n\tnoprefix = true\n\talgorithm = histogram\n[format]\n\tsignature = hello\n\tnumbered = true\n"
        "\theaders = X-Custom: 1\n[core]\n\tabbrev = 7\n"
    )
    git(repo, "config", "diff.mnemonicPrefix", "true")
    configured = _fresh_stack_dir(tmp_path, "configured")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", configured, env={"HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert snapshot(configured) == snapshot(plain)


def test_export_check_detects_out_of_date_stack(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo, 2)
    stack = _fresh_stack_dir(tmp_path)
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--check").returncode == 0
    (repo / "torch/_dynamo/compiled_autograd.py").write_text("# rewritten\n")
    git(repo, "commit", "-qam", "[compiled autograd] more\n\nTest Plan: none")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--check")
    assert res.returncode == 1 and "out of date" in res.stdout


def test_export_removes_stale_patches(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo, 3)
    stack = _fresh_stack_dir(tmp_path)
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0 and "1 removed" in res.stdout
    assert sorted(p.name[:4] for p in stack.glob("*.patch")) == ["0001", "0002"]


def test_export_refuses_merge_commits(pin_clone, tmp_path):
    repo = pin_clone()
    git(repo, "checkout", "-q", "-b", "side")
    build_stack(repo, 1)
    git(repo, "checkout", "-q", "main")
    (repo / "NOTES.md").write_text("x\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "notes")
    git(repo, "merge", "-q", "--no-edit", "side")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", _fresh_stack_dir(tmp_path))
    assert res.returncode == 3 and "is a merge; the stack must be linear" in res.error_line


def test_export_refuses_a_base_that_is_not_the_pin(pin_clone, tmp_path):
    repo = pin_clone()
    (repo / "version.txt").write_text("2.7.0a0\n")
    git(repo, "commit", "-qam", "bump")
    build_stack(repo, 1)
    res = run_tool("export_patches", "--torch-src", repo, "--stack", _fresh_stack_dir(tmp_path), "--base", "HEAD~1")
    assert res.returncode == 3 and "version.txt differs from the pin" in res.error_line


def test_export_without_pin_tag_asks_for_base(pin_clone, tmp_path):
    repo = pin_clone()
    git(repo, "tag", "-d", "v2.6.0")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", _fresh_stack_dir(tmp_path))
    assert res.returncode == 3 and "pass --base" in res.error_line


def test_export_warns_about_messages_without_test_plan(pin_clone, tmp_path):
    repo = pin_clone()
    (repo / "torch/_dynamo/compiled_autograd.py").write_text("# x\n")
    git(repo, "commit", "-qam", "Fix things")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", _fresh_stack_dir(tmp_path))
    assert res.returncode == 0
    assert "subject should start with [compiled autograd]" in res.stderr
    assert "no `Test Plan:` section" in res.stderr


def _patches(stack: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(stack.iterdir())}


def test_author_sets_every_patchs_from_line_and_nothing_else(pin_clone, tmp_path):
    repo = pin_clone()
    build_stack(repo, 3)
    before = git_state(repo)
    own = _fresh_stack_dir(tmp_path, "own")
    assert run_tool("export_patches", "--torch-src", repo, "--stack", own).returncode == 0
    for author, from_line in [
        ("Grace Hopper <grace@example.com>", b"From: Grace Hopper <grace@example.com>\n"),
        ("Zoë Müller <zoe@example.com>", b"From: =?UTF-8?q?Zo=C3=AB=20M=C3=BCller?= <zoe@example.com>\n"),
    ]:
        other = tmp_path / f"by-{author[:4]}"
        shutil.copytree(own, other)
        res = run_tool("export_patches", "--torch-src", repo, "--stack", other, "--author", author)
        assert res.returncode == 0, res.stderr
        got, want = _patches(other), _patches(own)
        assert got.keys() == want.keys() and got["series"] == want["series"]
        assert got["pin.sha256"] == want["pin.sha256"]
        for name in (n for n in got if n.endswith(".patch")):
            assert want[name].count(b"\nFrom: Ada Lovelace <ada@example.com>\n") == 1
            assert got[name] == want[name].replace(b"\nFrom: Ada Lovelace <ada@example.com>\n", b"\n" + from_line)
        assert run_tool("export_patches", "--torch-src", repo, "--stack", other, "--author", author, "--check").returncode == 0
        assert run_tool("export_patches", "--torch-src", repo, "--stack", other, "--check").returncode == 1
    assert git_state(repo) == before  # the re-authored copies live in a scratch object dir


def test_a_patch_exported_with_author_applies_as_a_commit_by_that_author(pin_clone, tmp_path):
    repo = pin_clone("author")
    build_stack(repo, 2)
    stack = _fresh_stack_dir(tmp_path)
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--author", "Zoë Müller <zoe@example.com>").returncode == 0
    target = pin_clone("target")
    assert run_tool("apply_patches", "--torch-src", target, "--stack", stack).returncode == 0
    assert git(target, "log", "-2", "--format=%an <%ae> %ad", "--date=iso-strict").splitlines() == [
        "Zoë Müller <zoe@example.com> 2025-02-02T12:00:00+00:00",
        "Zoë Müller <zoe@example.com> 2025-02-01T12:00:00+00:00",
    ]


@pytest.mark.parametrize("bad", ["Grace Hopper", "<grace@example.com>", "Grace <grace>", "Grace <a@b> x",
                                 "Gr<ace <g@example.com>", "Grace <g @example.com>", ""])
def test_author_must_be_name_and_email(bad, tmp_path):
    res = run_tool("export_patches", "--torch-src", tmp_path / "never-read", "--author", bad)
    assert res.returncode == 3
    assert res.error_line.startswith(f"error: --author {bad!r} is not \"Name <email>\"")
    assert res.stderr.count("\n") == 1  # one line, before anything else is read


def test_new_base_writes_the_manifest_of_that_base_and_needs_base(pin_clone, tmp_path):
    repo = pin_clone()
    (repo / "version.txt").write_text("2.7.0a0\n")
    git(repo, "commit", "-qam", "bump")
    build_stack(repo, 1)
    res = run_tool("export_patches", "--torch-src", repo, "--stack", _fresh_stack_dir(tmp_path), "--new-base")
    assert res.returncode == 2 and "--new-base needs --base REF" in res.error_line
    stack = _fresh_stack_dir(tmp_path, "new base")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--base", "HEAD~1", "--new-base")
    assert res.returncode == 0, res.stderr
    digest = hashlib.sha256(b"2.7.0a0\n").hexdigest()
    assert f"{digest}  version.txt\n" in (stack / "pin.sha256").read_text()
