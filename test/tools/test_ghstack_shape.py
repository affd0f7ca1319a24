"""The applied stack has the shape ghstack needs (tools/lib/ghstack_shape.py), on the real pin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, export_stack, git, run_tool
from tools.lib import patchfile
from tools.lib.ghstack_shape import check_stack_shape, message_problems
from samplestack import PATCHES, build_stack
from tools.lib.shell import Shell

SH = Shell(verbose=False)
GOOD = "[compiled autograd] Do a thing\n\nWhy it matters.\n\nTest Plan: pytest test/tools\n"


def test_sample_stack_exported_and_applied_has_the_ghstack_shape(pin_clone, tmp_path):
    author = pin_clone("author")
    build_stack(author)
    stack = export_stack(author, tmp_path / "stack")
    series = (stack / "series").read_text().split()
    assert len(series) == len(PATCHES)

    repo = pin_clone("fresh")
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr

    assert check_stack_shape(repo, "v2.6.0", SH, series=series) == []
    # The shape the check vouches for, spelled out.
    commits = git(repo, "rev-list", "--reverse", "v2.6.0..HEAD").split()
    assert len(commits) == len(series)
    assert git(repo, "rev-list", "--merges", "v2.6.0..HEAD") == ""
    assert git(repo, "rev-parse", f"{commits[0]}^1") == git(repo, "rev-parse", "v2.6.0^{commit}")
    for commit in commits:
        message = git(repo, "log", "-1", "--format=%B", commit)
        assert message.startswith(("[compiled autograd] ", "[functional autograd] ", "[DTensor] ", "[dynamo] ", "[inductor] ", "[fx] "))
        assert "\nTest Plan:" in message and "ghstack-source-id" not in message

    # The check is about the stack as a whole: a wrong series or a shorter stack is caught.
    assert check_stack_shape(repo, "v2.6.0", SH, series=series[:-1])[0] == (
        f"{len(series)} commit(s) above v2.6.0 but the series has {len(series) - 1} entries"
    )
    swapped = [series[1], series[0], *series[2:]]
    problems = check_stack_shape(repo, "v2.6.0", SH, series=swapped)
    assert problems[0].startswith("commit 1 (") and problems[0].endswith(f"does not match series entry 1 ({series[1]})")
    # apply_patches.py itself does not depend on the check (it may be wired in later).
    assert "ghstack_shape" not in (REPO_ROOT / "tools" / "apply_patches.py").read_text()


# -- failure modes, on a checkout-less clone of the pin (commits made with commit-tree) ---------

@pytest.fixture(scope="module")
def bare_pin(pinned_source: Path, tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("shape") / "pin"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(pinned_source), str(repo)], check=True)
    return repo


def _commit(repo: Path, message: str, *parents: str) -> str:
    args = ["commit-tree", "v2.6.0^{tree}"]
    for p in parents:
        args += ["-p", p]
    return git(repo, *args, "-m", message).strip()


def _stack(repo: Path, *messages: str) -> str:
    head = "v2.6.0"
    for m in messages:
        head = _commit(repo, m, head)
    return head


def test_good_commits_pass(bare_pin):
    head = _stack(bare_pin, GOOD, GOOD.replace("[compiled", "[functional").replace("Do a thing", "Another"))
    assert check_stack_shape(bare_pin, "v2.6.0", SH, head=head) == []
    assert check_stack_shape(bare_pin, "v2.6.0", SH, head="v2.6.0") == []


def test_merge_commit_is_reported(bare_pin):
    left = _stack(bare_pin, GOOD)
    right = _stack(bare_pin, GOOD.replace("Do a thing", "Other side"))
    merge = _commit(bare_pin, GOOD.replace("Do a thing", "Merge"), left, right)
    problems = check_stack_shape(bare_pin, "v2.6.0", SH, head=merge)
    assert f"commit {merge[:12]} is a merge; ghstack needs a linear stack (rebase it)" in problems
    assert f"commit {right[:12]} is not on the first-parent chain from v2.6.0 (it came in through a merge)" in problems


def test_stack_not_on_the_pin_is_reported(bare_pin):
    pin = git(bare_pin, "rev-parse", "v2.6.0^{commit}").strip()
    orphan = git(bare_pin, "commit-tree", "v2.6.0^{tree}", "-m", GOOD).strip()  # no parent at all
    assert check_stack_shape(bare_pin, "v2.6.0", SH, head=orphan) == [
        f"{orphan} does not descend from v2.6.0 ({pin[:12]}); rebase the stack onto it"
    ]
    # The pin only comes in through a merge: the bottom of the first-parent chain is not on it.
    on_pin = _stack(bare_pin, GOOD)
    merge = _commit(bare_pin, GOOD.replace("Do a thing", "Merge"), orphan, on_pin)
    problems = check_stack_shape(bare_pin, "v2.6.0", SH, head=merge)
    assert f"the bottom commit {orphan[:12]} does not sit on v2.6.0 ({pin[:12]})" in problems
    assert f"commit {merge[:12]} is a merge; ghstack needs a linear stack (rebase it)" in problems
    # Any base works, and a missing one is reported.
    two = _commit(bare_pin, GOOD, on_pin)
    assert check_stack_shape(bare_pin, on_pin, SH, head=two) == []
    assert check_stack_shape(bare_pin, "no-such-tag", SH, head=two) == [f"{bare_pin} has no commit 'no-such-tag' (the pin the stack sits on)"]


@pytest.mark.parametrize("message, problem", [
    ("Do a thing\n\nWhy.\n\nTest Plan: ci\n", "subject 'Do a thing' does not start with [compiled autograd] or [functional autograd] or [DTensor] or [dynamo] or [inductor] or [fx]"),
    ("[compiled autograd] Do a thing\n\nTest Plan: ci\n", "the message has no body (say what the change does and why)"),
    ("[compiled autograd] Do a thing\n\nWhy it matters.\n", "the message has no `Test Plan:` section"),
    ("[compiled autograd] Do a thing\nWhy, on the subject's next line.\n\nTest Plan: ci\n", "the subject is not followed by a blank line"),
    (GOOD + "\nghstack-source-id: abc\nghstack-source-id: def\n", "trailer `ghstack-source-id` appears 2 times (ghstack expects at most one)"),
    (GOOD + "\nPull Request resolved: https://github.com/pytorch/pytorch/pull/1\n"
            "Pull Request resolved: https://github.com/pytorch/pytorch/pull/2\n",
     "trailer `pull request resolved` appears 2 times (ghstack expects at most one)"),
])
def test_message_problems(bare_pin, message, problem):
    assert message_problems(message) == [problem]
    head = _stack(bare_pin, message)
    assert check_stack_shape(bare_pin, "v2.6.0", SH, head=head) == [f"commit {head[:12]}: {problem}"]


def test_every_patch_of_the_stack_has_an_upstream_style_message():
    # the messages as they travel in patches/
    for name in (REPO_ROOT / "patches" / "series").read_text().split():
        assert message_problems(patchfile.load(REPO_ROOT / "patches" / name).message) == [], name


def test_ghstack_trailers_are_fine_once_but_not_shared(bare_pin):
    one = GOOD + "\nghstack-source-id: 1111\nPull Request resolved: https://github.com/pytorch/pytorch/pull/7\n"
    assert message_problems(one) == []
    other = one.replace("Do a thing", "Another").replace("1111", "2222").replace("/7", "/8")
    assert check_stack_shape(bare_pin, "v2.6.0", SH, head=_stack(bare_pin, one, other)) == []
    dup = one.replace("Do a thing", "Copied")
    first = _stack(bare_pin, one)
    head = _commit(bare_pin, dup, first)
    problems = check_stack_shape(bare_pin, "v2.6.0", SH, head=head)
    assert problems == [
        f"commits {first[:12]} and {head[:12]} share `ghstack-source-id: 1111`; ghstack would map both to one pull request",
        f"commits {first[:12]} and {head[:12]} share `pull request resolved: https://github.com/pytorch/pytorch/pull/7`; "
        "ghstack would map both to one pull request",
    ]
