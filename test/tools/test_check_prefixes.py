"""tools/check_prefixes.py: prefixes of the real stack, each applied to its own worktree of the real pin."""

from __future__ import annotations


import pytest

from conftest import REPO_ROOT, git, git_state, run_tool
from tools import check_prefixes as cp
from tools.lib import ui
from tools.lib.shell import Shell
from tools.lib.stack import Stack

STACK = Stack.load(REPO_ROOT / "patches")


def test_a_prefix_stack_dir_is_the_first_k_patches_with_the_pin_manifest(tmp_path):
    cp.write_prefix_stack(STACK, 3, tmp_path / "s")
    prefix = Stack.load(tmp_path / "s")  # the manifest is required by default
    assert prefix.names == STACK.names[:3]
    assert (tmp_path / "s" / "pin.sha256").read_bytes() == (REPO_ROOT / "patches" / "pin.sha256").read_bytes()
    assert sorted(p.name for p in (tmp_path / "s").glob("*.patch")) == sorted(STACK.names[:3])


def test_prefixes_default_to_every_prefix_and_from_k_to_the_top():
    assert cp.parse_prefixes(None, None, 4) == [1, 2, 3, 4]
    assert cp.parse_prefixes(None, 3, 4) == [3, 4]
    assert cp.parse_prefixes([4, 2, 2], None, 4) == [2, 4]


def test_a_prefix_outside_the_stack_is_a_usage_error():
    with pytest.raises(ui.UserError, match="outside the stack's 1..4 patches") as err:
        cp.parse_prefixes([5], None, 4)
    assert err.value.exit_code == ui.EXIT_USAGE
    res = run_tool("check_prefixes", "--prefixes", "0")
    assert res.returncode == ui.EXIT_USAGE and "outside the stack" in res.stderr


def test_a_prefix_applies_in_its_own_worktree_and_leaves_the_pinned_checkout_alone(pin_clone, tmp_path):
    pinned = pin_clone()
    before = git_state(pinned)
    prefix = cp.Prefix(2, STACK.names[1], tmp_path / "work")
    for _ in range(2):  # the second run replaces the worktree the first one left
        cp.apply_prefix(prefix, STACK, pinned, Shell(verbose=False))
    subjects = git(prefix.tree, "log", "--format=%s", "v2.6.0..HEAD").splitlines()
    assert len(subjects) == 2 and subjects[-1].startswith("[functional autograd] Proxy opaque calls")
    assert git(prefix.tree, "status", "--porcelain") == ""
    after = git_state(pinned)
    for key in ("HEAD", "rev", "refs", "index", "status"):  # objects: the worktree's commits live in the shared store
        assert after[key] == before[key], key


def test_a_leftover_dir_where_the_worktree_goes_is_replaced(pin_clone, tmp_path):
    pinned = pin_clone()
    prefix = cp.Prefix(1, STACK.names[0], tmp_path / "work")
    (prefix.tree / "stale").mkdir(parents=True)
    cp.apply_prefix(prefix, STACK, pinned, Shell(verbose=False))
    assert not (prefix.tree / "stale").exists()
    assert len(git(prefix.tree, "log", "--format=%s", "v2.6.0..HEAD").splitlines()) == 1


def test_the_table_names_the_stage_a_prefix_failed_at(tmp_path):
    ok = cp.Outcome(cp.Prefix(1, "0001-a.patch", tmp_path), reached="tests", seconds=61)
    bad = cp.Outcome(cp.Prefix(2, "0002-b.patch", tmp_path), reached="apply", failed="build", seconds=5)
    table = cp.render([ok, bad], tests_ran=True)
    assert "| P1-P1 | `0001-a.patch` | passed | 1m01s |" in table
    assert "| P1-P2 | `0002-b.patch` | FAILED at build | 5.0s | - |" in table
