"""tools/apply_patches.py on real v2.6.0 trees with a real 6-patch stack."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, copy_stack, git, git_state, run_tool, snapshot
from samplestack import PATCHES, build_stack


@pytest.fixture(scope="session")
def six_patch_stack(pinned_source: Path, tmp_path_factory) -> Path:
    """A real 6-patch stack exported from commits on the real pin."""
    work = tmp_path_factory.mktemp("six")
    repo = work / "authoring checkout"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(pinned_source), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-B", "main", "v2.6.0"], check=True)
    build_stack(repo)
    stack = work / "stack"
    stack.mkdir()
    shutil.copy(REPO_ROOT / "patches" / "pin.sha256", stack / "pin.sha256")
    res = run_tool("export_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    return stack


@pytest.fixture
def stack(six_patch_stack: Path, tmp_path: Path) -> Path:
    return copy_stack(six_patch_stack, tmp_path / "my stack")


def test_apply_makes_one_commit_per_patch_keeping_author_and_message(pin_clone, stack):
    repo = pin_clone()
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    log = git(repo, "log", "--format=%an <%ae>|%aI|%B%x00", "-6").split("\x00")
    entries = [e.strip("\n") for e in log if e.strip()]
    assert len(entries) == 6
    newest = entries[0]
    assert newest.startswith("Ada Lovelace <ada@example.com>|2025-02-06T12:00:00+00:00|")
    assert PATCHES[5][0] in newest and "Test Plan: pytest test/tools" in newest
    names = (stack / "series").read_text().split()
    assert f"\n\nFca-Stack-Patch: {names[5]} " in newest  # how apply knows its own commits
    assert git(repo, "log", "--format=%s", "-7").splitlines() == [p[0] for p in reversed(PATCHES)] + ["PyTorch v2.6.0 (pin)"]
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "torch/csrc/dynamo/compiled_autograd.cpp").is_file()


def test_apply_then_export_gives_identical_bytes(pin_clone, stack, tmp_path):
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    again = copy_stack(stack, tmp_path / "again")
    for f in again.glob("*.patch"):
        f.unlink()
    res = run_tool("export_patches", "--torch-src", repo, "--stack", again)
    assert res.returncode == 0, res.stderr
    assert snapshot(again) == snapshot(stack)
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--check").returncode == 0


def test_rerun_on_patched_tree_is_a_noop_that_says_so(pin_clone, stack):
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0
    assert "all 6 patches are already applied; nothing to do" in res.stdout
    assert git_state(repo) == before


def test_status_lists_applied_prefix(pin_clone, stack):
    repo = pin_clone()
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status")
    assert res.returncode == 0 and "0/6 patches" in res.stdout
    # Apply only the first two by hand with git am, as a user might.
    names = (stack / "series").read_text().split()
    git(repo, "am", "-q", "-k", *(str(stack / n) for n in names[:2]))
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status")
    assert "2/6 patches" in res.stdout
    assert res.stdout.count("[x]") == 2 and res.stdout.count("[ ]") == 4
    # ... and apply finishes the rest.
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    assert "6/6 patches" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout


def _break_patch(stack: Path, index: int) -> str:
    """Change a context line of patch ``index`` so that it cannot apply; returns its name."""
    name = (stack / "series").read_text().split()[index]
    text = (stack / name).read_text()
    broken = text.replace("\n namespace torch::autograd {\n", "\n namespace torch::not_autograd {\n", 1)
    assert broken != text
    (stack / name).write_text(broken)
    return name


def test_conflict_in_middle_patch_leaves_git_tree_untouched(pin_clone, stack):
    repo = pin_clone()
    name = _break_patch(stack, 2)
    before, files_before = git_state(repo), snapshot(repo, ["torch/csrc/dynamo/compiled_autograd.h", "build_variables.bzl"])
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 1
    assert name in res.error_line
    assert "torch/csrc/autograd/functions/tensor.cpp: hunk #1 (@@ -15,6 +15,7 @@" in res.error_line
    assert git_state(repo) == before
    assert snapshot(repo, ["torch/csrc/dynamo/compiled_autograd.h", "build_variables.bzl"]) == files_before


def test_conflict_in_middle_patch_leaves_plain_tree_untouched(pin_copy, stack):
    tree = pin_copy()
    name = _break_patch(stack, 2)
    before = snapshot(tree)
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack)
    assert res.returncode == 1 and name in res.error_line and "tensor.cpp: hunk #1" in res.error_line
    assert snapshot(tree) == before


def test_check_reports_conflict_and_writes_nothing(pin_clone, stack):
    repo = pin_clone()
    before = git_state(repo)
    ok = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--check")
    assert ok.returncode == 0 and "all 6 remaining patch(es) apply cleanly" in ok.stdout
    name = _break_patch(stack, 2)
    bad = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--check")
    assert bad.returncode == 1 and name in bad.error_line
    assert git_state(repo) == before


def test_dirty_tree_is_refused_and_edits_are_kept(pin_clone, stack):
    repo = pin_clone()
    target = repo / "torch/_dynamo/compiled_autograd.py"
    target.write_text(target.read_text() + "# my precious local edit\n")
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 3
    assert "uncommitted changes" in res.error_line and "torch/_dynamo/compiled_autograd.py" in res.error_line
    assert target.read_text().endswith("# my precious local edit\n")
    assert git_state(repo) == before


def test_untracked_file_in_the_way_of_a_created_file_is_refused(pin_clone, stack):
    repo = pin_clone()
    mine = repo / "torch/csrc/dynamo/compiled_autograd.cpp"
    mine.write_text("// mine\n")
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 3 and "untracked file torch/csrc/dynamo/compiled_autograd.cpp" in res.error_line
    assert mine.read_text() == "// mine\n"


def test_wrong_pin_is_detected_by_content(pin_clone, stack):
    repo = pin_clone()
    f = repo / "torch/csrc/autograd/engine.cpp"
    f.write_text(f.read_text().replace("namespace torch::autograd {", "namespace torch::autograd { // 2.7", 1))
    git(repo, "commit", "-qam", "pretend to be another release")
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 3
    assert "is not PyTorch v2.6.0: torch/csrc/autograd/engine.cpp differs from the pin" in res.error_line


def test_wrong_pin_in_plain_tree(pin_copy, stack):
    tree = pin_copy()
    (tree / "version.txt").write_text("2.7.0a0\n")
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--status")
    assert res.returncode == 3 and "version.txt differs from the pin" in res.error_line


@pytest.mark.parametrize("failpoint", ["git-before-tree", "git-before-ref"])
def test_killed_git_apply_is_recovered_by_next_run(pin_clone, stack, failpoint):
    repo = pin_clone()
    killed = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, env={"FCA_FAILPOINT": failpoint})
    assert killed.returncode == -9
    assert (repo / ".git" / "fca-apply-journal.json").exists()
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status")
    assert status.returncode == 3 and "interrupted run" in status.error_line
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert "recovering from an interrupted apply" in res.stderr
    assert git(repo, "status", "--porcelain") == ""
    assert "6/6 patches" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout


def test_killed_plain_apply_is_recovered_by_next_run(pin_copy, stack):
    tree = pin_copy()
    pristine = snapshot(tree)
    killed = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, env={"FCA_FAILPOINT": "plain-mid-write"})
    assert killed.returncode == -9
    assert (tree / ".fca-apply-journal").is_dir()
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--revert")
    assert res.returncode == 0, res.stderr
    assert "recovering from an interrupted apply" in res.stderr
    assert snapshot(tree) == pristine


def test_plain_tree_apply_status_revert(pin_copy, stack):
    tree = pin_copy("plain tree")
    pristine = snapshot(tree)
    assert run_tool("apply_patches", "--torch-src", tree, "--stack", stack).returncode == 0
    assert (tree / "torch/csrc/dynamo/compiled_autograd.cpp").is_file()
    assert "test stack: prologue" in (tree / "torch/_functorch/_aot_autograd/runtime_wrappers.py").read_text()
    assert "6/6 patches" in run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--status").stdout
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--revert")
    assert res.returncode == 0, res.stderr
    assert snapshot(tree) == pristine


def test_plain_tree_with_local_edit_is_refused(pin_copy, stack):
    tree = pin_copy()
    assert run_tool("apply_patches", "--torch-src", tree, "--stack", stack).returncode == 0
    f = tree / "torch/_dynamo/compiled_autograd.py"
    f.write_text(f.read_text() + "# local edit\n")
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--revert")
    assert res.returncode == 3 and "no prefix of the stack explains it" in res.error_line
    assert f.read_text().endswith("# local edit\n")


def test_git_revert_returns_to_the_pin(pin_clone, stack):
    repo = pin_clone()
    pin = git(repo, "rev-parse", "HEAD")
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--revert")
    assert res.returncode == 0, res.stderr
    assert git(repo, "rev-parse", "HEAD") == pin
    assert not (repo / "torch/csrc/dynamo/compiled_autograd.cpp").exists()
    assert git(repo, "status", "--porcelain") == ""


def _applied_with_a_user_commit_on_top(repo: Path, stack: Path) -> Path:
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    (repo / "NOTES.md").write_text("mine\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "my work")
    return repo


def test_user_commits_above_the_stack_block_revert(pin_clone, stack):
    repo = _applied_with_a_user_commit_on_top(pin_clone(), stack)
    assert "(1 commit(s) above the stack)" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--revert")
    assert res.returncode == 3 and "1 commit(s) sit above the stack" in res.error_line
    assert (repo / "NOTES.md").read_text() == "mine\n"


def _edit_patch(stack: Path, index: int) -> str:
    """Change what patch ``index`` adds (one comment), as a developer editing the stack would."""
    name = (stack / "series").read_text().split()[index]
    lines = (stack / name).read_text().split("\n")
    i = next(i for i, line in enumerate(lines) if line.startswith("+") and not line.startswith("+++") and line[1:].strip())
    path = next(line for line in reversed(lines[:i]) if line.startswith("+++ "))
    lines[i] += "  # edited:" if path.endswith(".py") else "  // edited:"
    (stack / name).write_text("\n".join(lines))
    return name


def test_an_edited_stack_replaces_the_commits_apply_made_from_the_old_one(pin_clone, stack):
    repo = pin_clone()
    pin = git(repo, "rev-parse", "HEAD")
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    _edit_patch(stack, 3)
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout
    assert "3/6 patches" in status and "(3 commit(s) from an older version of the stack" in status
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert "dropping 3 commit(s) of an older version of the stack" in res.stderr
    assert "6/6 patches" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout
    assert git(repo, "status", "--porcelain") == "" and "edited:" in git(repo, "show", "HEAD~2")
    assert git(repo, "rev-list", "--count", f"{pin.strip()}..HEAD").strip() == "6"
    _edit_patch(stack, 0)  # the first patch: nothing of the stack matches any more; revert still knows the pin
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--revert")
    assert res.returncode == 0, res.stderr
    assert git(repo, "rev-parse", "HEAD") == pin and git(repo, "status", "--porcelain") == ""


def test_a_patch_whose_message_alone_changed_is_committed_again(pin_clone, stack):
    """Patch-ids see the diff alone: a patch file whose commit message was edited (a reworded
    commit, exported) is not applied until its commit carries the new message, so that export
    --check agrees with the applied tree."""
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    name = (stack / "series").read_text().split()[4]
    text = (stack / name).read_text()
    subject = next(line for line in text.split("\n") if line.startswith("Subject: "))
    (stack / name).write_text(text.replace(subject, subject + " (reworded)", 1))
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout
    assert "4/6 patches" in status and "(2 commit(s) from an older version of the stack" in status
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert git(repo, "log", "-1", "--format=%s", "HEAD~1").strip().endswith("(reworded)")
    assert run_tool("export_patches", "--torch-src", repo, "--stack", stack, "--check").returncode == 0


def test_an_edited_stack_never_drops_a_user_commit(pin_clone, stack):
    repo = _applied_with_a_user_commit_on_top(pin_clone(), stack)
    _edit_patch(stack, 3)
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 3 and "4 commit(s) sit above patch 3 of the stack" in res.error_line
    top = git(repo, "rev-parse", "HEAD~4").strip()
    assert f"`git -C {repo} switch -c fca-stack {top} && python tools/apply_patches.py" in res.error_line
    assert git_state(repo) == before and (repo / "NOTES.md").read_text() == "mine\n"


def test_the_revert_hint_is_a_complete_command_that_keeps_the_users_commits(pin_clone, stack):
    repo = _applied_with_a_user_commit_on_top(pin_clone(), stack)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--revert")
    assert res.returncode == 3
    hint = re.search(r"`(git [^`]+)`", res.error_line)
    assert hint and "<" not in hint.group(1)
    subprocess.run(hint.group(1), shell=True, check=True, capture_output=True)
    assert git(repo, "log", "--format=%s", "-2").splitlines() == ["my work", "PyTorch v2.6.0 (pin)"]
    assert "0/6 patches" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout


def test_after_a_reset_round_trip_an_edited_patch_replaces_apply_s_old_commit(pin_clone, stack):
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "reset", "-q", "--hard", "HEAD@{1}")
    _edit_patch(stack, 5)
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout
    assert "5/6 patches" in status and "(1 commit(s) from an older version of the stack" in status
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert "dropping 1 commit(s)" in res.stderr and "edited:" in git(repo, "show", "HEAD")
    assert git(repo, "rev-list", "--count", "v2.6.0..HEAD").strip() == "6"


def test_a_rebased_copy_of_the_stack_is_recognised(pin_clone, stack):
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    git(repo, "checkout", "-q", "-b", "other", "v2.6.0")
    (repo / "NOTES.md").write_text("unrelated\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "an unrelated commit")
    git(repo, "checkout", "-q", "main")
    git(repo, "rebase", "-q", "other")
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status")
    assert status.returncode == 0 and "6/6 patches" in status.stdout and "commit(s)" not in status.stdout
    _edit_patch(stack, 5)  # ... as apply's own commits, which an edited stack replaces
    assert "(1 commit(s) from an older version" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout


def test_a_commit_of_apply_s_changed_by_hand_is_the_users(pin_clone, stack):
    repo = pin_clone()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack).returncode == 0
    (repo / "NOTES.md").write_text("mine\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "--amend", "--no-edit")  # the trailer stays, the diff is no longer apply's
    _edit_patch(stack, 5)
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 3 and "1 commit(s) sit above patch 5 of the stack" in res.error_line
    assert git_state(repo) == before


def test_paths_with_spaces(pin_clone, stack):
    repo = pin_clone("a checkout with spaces")
    assert " " in str(stack)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert "6/6 patches" in run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "--status").stdout


def _readonly_prefix(tree: Path) -> list[str]:
    """Run the tool in a user+mount namespace where ``tree`` is bind-mounted read-only
    (works as root, where chmod would not stop writes)."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a user+mount namespace here: {probe.stderr.decode().strip()}")
    q = str(tree).replace("'", "'\\''")
    return ["unshare", "-rm", "sh", "-c", f"mount --bind -o ro '{q}' '{q}' && exec \"$@\"", "sh"]


def test_read_only_plain_tree_gives_clear_error(pin_copy, stack):
    tree = pin_copy()
    before = snapshot(tree)
    res = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, prefix=_readonly_prefix(tree))
    assert res.returncode == 3
    assert "cannot write to the tree" in res.error_line and "Read-only file system" in res.error_line
    assert snapshot(tree) == before
    # Read-only modes still work on a read-only tree.
    status = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--status", prefix=_readonly_prefix(tree))
    assert status.returncode == 0 and "0/6 patches" in status.stdout


def test_read_only_git_tree_gives_clear_error(pin_clone, stack):
    repo = pin_clone()
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack, prefix=_readonly_prefix(repo))
    assert res.returncode == 3 and "Read-only file system" in res.error_line
    assert git_state(repo) == before


def test_empty_stack_on_default_pinned_source(tmp_path):
    """The main command with no arguments: fetch (cached) and apply the repo's own stack."""
    res = run_tool("apply_patches")
    assert res.returncode == 0, res.stderr
    assert "nothing to do" in res.stdout or "applied" in res.stdout


# -- 3-way apply onto a tree off the pin (the repo's own stack) ------------------------------------------------


@pytest.fixture
def real_stack(tmp_path: Path) -> Path:
    return copy_stack(REPO_ROOT / "patches", tmp_path / "real stack")


def _pin_line(stack: Path, repo: Path, index: int, kind: str, only: str | None = None) -> tuple[str, str, str]:
    """(file, hunk header, line) of patch ``index`` (in file ``only`` if given): a line of the pin that one
    of its hunks removes (``kind`` "-") or has as its first context line, 3 lines off the change (" ");
    unique in the file."""
    name = (stack / "series").read_text().split()[index]
    path, hunk, body = "", "", []
    hunks: list[tuple[str, str, list[str]]] = []
    for line in (stack / name).read_text().split("\n"):
        if line.startswith("diff --git "):
            path = line.rsplit(" b/", 1)[1]
        elif line.startswith("@@"):
            hunk, body = line, []
            hunks.append((path, hunk, body))
        elif hunks and line[:1] in (" ", "+", "-"):
            body.append(line)
    for path, hunk, body in hunks:
        if only is not None and path != only:
            continue
        candidates = [body[0]] if kind == " " and all(l.startswith(" ") for l in body[:3]) else [l for l in body if l[:1] == kind]
        pin = (repo / path).read_text().split("\n") if (repo / path).is_file() else []
        for line in candidates:
            if line[1:].strip() and pin.count(line[1:]) == 1:
                return path, hunk, line[1:]
    raise AssertionError(f"no unique {kind!r} line in {name}")


def _commit_edits(repo: Path, edits: list[tuple[str, str, str]], message: str) -> None:
    for path, old, new in edits:
        f = repo / path
        f.write_text(f.read_text().replace(old + "\n", new + "\n", 1))
    git(repo, "commit", "-qam", message)


def _off_the_pin(repo: Path, stack: Path) -> list[tuple[str, str, str]]:
    """Commit changes to two pinned files that no patch changes, each 3 lines from a patch's change:
    one in a file the stack first touches there (merged against the pin's blob), one in a file earlier
    patches changed (merged against what they made of it); returns the edits (file, old, new)."""
    edits = []
    for index, only in ((4, "torch/_dynamo/config.py"), (3, "test/inductor/test_compiled_autograd.py")):
        path, _, line = _pin_line(stack, repo, index, " ", only)
        edits.append((path, line, line + "  # local change"))
    _commit_edits(repo, edits, "my unrelated changes")
    return edits


def test_a_tree_off_the_pin_is_refused_naming_every_differing_file_and_3way(pin_clone, real_stack):
    repo = pin_clone()
    edits = _off_the_pin(repo, real_stack)
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack)
    assert res.returncode == 3
    for path, _, _ in edits:
        assert f"{path} differs from the pin" in res.error_line
    assert f"`python tools/apply_patches.py --torch-src {repo} --stack '{real_stack}' --3way`" in res.error_line
    assert git_state(repo) == before


def test_3way_applies_the_stack_onto_changes_off_the_pin(pin_clone, real_stack):
    repo = pin_clone()
    edits = _off_the_pin(repo, real_stack)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack, "--3way")
    assert res.returncode == 0, res.stderr
    n = len((real_stack / "series").read_text().split())
    assert res.stderr.count("(3-way merge)") == 2
    assert git(repo, "rev-list", "--count", "HEAD~1..HEAD", f"^HEAD~{n}").strip() == "1"
    assert git(repo, "log", "-1", "--format=%s", f"HEAD~{n}").strip() == "my unrelated changes"
    assert git(repo, "status", "--porcelain") == ""
    vendored = REPO_ROOT / "vendored_torch_patches"
    changed = {path: (old, new) for path, old, new in edits}
    for copy in (p for p in vendored.rglob("*") if p.is_file() and p.name not in ("README.md", "NOTICE")):
        path = str(copy.relative_to(vendored))
        want = copy.read_text()
        if path in changed:
            want = want.replace(changed[path][0] + "\n", changed[path][1] + "\n", 1)
        assert (repo / path).read_text() == want, path


def test_status_and_revert_work_on_a_3way_applied_tree(pin_clone, real_stack):
    repo = pin_clone()
    edits = _off_the_pin(repo, real_stack)
    base = git(repo, "rev-parse", "HEAD").strip()
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack, "--3way").returncode == 0
    n = len((real_stack / "series").read_text().split())
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack, "--status")
    assert status.returncode == 0 and f"{n}/{n} patches" in status.stdout
    assert f"the stack's base differs from the pin in {', '.join(sorted(p for p, _, _ in edits))})" in status.stdout
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack, "--revert")
    assert res.returncode == 0, res.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == base and git(repo, "status", "--porcelain") == ""


def test_3way_conflict_changes_nothing_and_names_file_hunk_and_lines(pin_clone, real_stack):
    repo = pin_clone()
    path, hunk, line = _pin_line(real_stack, repo, 2, "-")
    _commit_edits(repo, [(path, line, line + "  # mine")], "my change to a line patch 3 changes")
    before = git_state(repo)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", real_stack, "--3way")
    assert res.returncode == 1
    name = (real_stack / "series").read_text().split()[2]
    assert f"patch {name} does not apply: 3-way merge conflict in {path}: hunk #" in res.error_line
    assert f"({hunk})" in res.error_line and f"`{line.strip()}  # mine`" in res.error_line
    assert git_state(repo) == before
