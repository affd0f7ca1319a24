"""tools/rebase_stack.py: the real stack, applied to clones of the real pin, carried onto a fork's branch."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, copy_stack, git, run_tool, snapshot

CONFLICT_FILE = "test/inductor/test_compiled_autograd.py"


@pytest.fixture
def real_stack(tmp_path: Path) -> Path:
    return copy_stack(REPO_ROOT / "patches", tmp_path / "real stack")


def _names(stack: Path) -> list[str]:
    return (stack / "series").read_text().split()


def _applied(pin_clone, stack: Path) -> Path:
    repo = pin_clone()
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    return repo


def _fork(repo: Path, path: str, old: str, new: str) -> None:
    """Branch `fork` at the pin with one commit replacing ``old`` by ``new`` in ``path`` (built in a
    scratch index, so HEAD and the working tree stay)."""
    blob = git(repo, "show", f"v2.6.0:{path}")
    assert blob.count(old) == 1
    sha = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=blob.replace(old, new),
                         capture_output=True, text=True, check=True).stdout.strip()
    env = {"GIT_INDEX_FILE": str(repo.parent / "fork.index")}
    git(repo, "read-tree", "v2.6.0", env=env)
    git(repo, "update-index", "--cacheinfo", f"100644,{sha},{path}", env=env)
    tree = git(repo, "write-tree", env=env).strip()
    commit = git(repo, "commit-tree", tree, "-p", "v2.6.0", "-m", f"fork: change {path}").strip()
    git(repo, "branch", "fork", commit)


def _conflicting_fork(repo: Path, stack: Path) -> None:
    """A fork commit that edits a line of CONFLICT_FILE, unique at the pin, that patch 3 removes."""
    pin = git(repo, "show", f"v2.6.0:{CONFLICT_FILE}").split("\n")
    text = (stack / _names(stack)[2]).read_text().split(f"diff --git a/{CONFLICT_FILE} ", 1)[1].split("\ndiff --git ", 1)[0]
    line = next(l[1:] for l in text.split("\n") if l.startswith("-") and not l.startswith("---")
                and l[1:].strip() and pin.count(l[1:]) == 1)
    _fork(repo, CONFLICT_FILE, "\n" + line + "\n", "\n" + line + "  # fork\n")


def _vendored_equal(repo: Path, skip: str = "") -> None:
    vendored = REPO_ROOT / "vendored_torch_patches"
    for copy in (p for p in vendored.rglob("*") if p.is_file() and p.name not in ("README.md", "NOTICE")):
        path = str(copy.relative_to(vendored))
        if path != skip:
            assert (repo / path).read_bytes() == copy.read_bytes(), path


def _export(stdout: str, dest: Path) -> Path:
    line = next(l for l in stdout.splitlines() if l.startswith("export the stack for that base: "))
    argv = shlex.split(line.split(": ", 1)[1])
    assert argv[:2] == ["python", "tools/export_patches.py"] and argv[-2:] == ["--stack", "DIR"]
    res = run_tool("export_patches", *argv[2:-1], dest)
    assert res.returncode == 0, res.stderr
    return dest


def test_onto_a_base_with_an_unrelated_change_replays_every_commit(pin_clone, real_stack, tmp_path):
    repo = _applied(pin_clone, real_stack)
    subjects = git(repo, "log", "--format=%s", "v2.6.0..HEAD")
    _fork(repo, "README.md", "## License\n", "## License (our fork)\n")
    res = run_tool("rebase_stack", "--torch-src", repo, "--stack", real_stack, "--onto", "fork")
    assert res.returncode == 0, res.stderr
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(repo, "log", "--format=%s", "fork..HEAD") == subjects
    assert len(subjects.splitlines()) == len(_names(real_stack)) > 0
    assert git(repo, "status", "--porcelain") == ""
    assert "## License (our fork)" in (repo / "README.md").read_text()
    _vendored_equal(repo)
    # an unpinned file changed: the export for the new base is the same stack, byte for byte
    out = _export(res.stdout, tmp_path / "exported")
    for name in _names(real_stack) + ["series", "pin.sha256"]:
        assert (out / name).read_bytes() == (real_stack / name).read_bytes(), name


def test_a_conflict_stops_naming_the_file_and_abort_restores_the_tree(pin_clone, real_stack):
    repo = _applied(pin_clone, real_stack)
    _conflicting_fork(repo, real_stack)
    watched = sorted({CONFLICT_FILE, *(str(p.relative_to(REPO_ROOT / "vendored_torch_patches"))
                                       for p in (REPO_ROOT / "vendored_torch_patches").rglob("*")
                                       if p.is_file() and p.name not in ("README.md", "NOTICE"))})
    before = {"head": git(repo, "rev-parse", "HEAD"), "branch": git(repo, "symbolic-ref", "HEAD"),
              "index": git(repo, "ls-files", "-s", "--debug"), "status": git(repo, "status", "--porcelain", "--ignored"),
              "files": snapshot(repo, watched)}
    res = run_tool("rebase_stack", "--torch-src", repo, "--stack", real_stack, "--onto", "fork")
    assert res.returncode == 1, res.stderr
    assert f"  conflict: {CONFLICT_FILE}" in res.stdout
    assert f"git -C {repo} add {CONFLICT_FILE} && python tools/rebase_stack.py --torch-src {repo} --continue" in res.stdout
    assert f"python tools/rebase_stack.py --torch-src {repo} --abort" in res.stdout
    assert "<<<<<<<" in (repo / CONFLICT_FILE).read_text()
    res = run_tool("rebase_stack", "--torch-src", repo, "--abort")
    assert res.returncode == 0, res.stderr
    after = {"head": git(repo, "rev-parse", "HEAD"), "branch": git(repo, "symbolic-ref", "HEAD"),
             "index": git(repo, "ls-files", "-s", "--debug"), "status": git(repo, "status", "--porcelain", "--ignored"),
             "files": snapshot(repo, watched)}
    assert {k: v for k, v in after.items() if k != "index"} == {k: v for k, v in before.items() if k != "index"}
    strip = lambda s: [l for l in s.splitlines() if not l.lstrip().startswith(("ctime:", "mtime:", "dev:", "size:"))]  # noqa: E731
    assert strip(after["index"]) == strip(before["index"])


def test_resolve_and_continue_finishes_and_the_export_is_consistent_with_the_new_base(pin_clone, real_stack, tmp_path):
    repo = _applied(pin_clone, real_stack)
    _conflicting_fork(repo, real_stack)
    assert run_tool("rebase_stack", "--torch-src", repo, "--stack", real_stack, "--onto", "fork").returncode == 1
    res = run_tool("rebase_stack", "--torch-src", repo, "--continue")
    assert res.returncode == 1 and CONFLICT_FILE in res.error_line  # not resolved yet
    git(repo, "checkout", "--theirs", CONFLICT_FILE)  # the patch's side
    git(repo, "add", CONFLICT_FILE)
    res = run_tool("rebase_stack", "--torch-src", repo, "--continue")
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(git(repo, "rev-list", "fork..HEAD").split()) == len(_names(real_stack))
    assert git(repo, "status", "--porcelain") == ""
    _vendored_equal(repo)
    out = _export(res.stdout, tmp_path / "exported")
    assert _names(out) == _names(real_stack)
    pinned = dict(reversed(l.split("  ", 1)) for l in (out / "pin.sha256").read_text().splitlines() if not l.startswith("#"))
    fork_blob = git(repo, "show", f"fork:{CONFLICT_FILE}").encode()
    assert pinned[CONFLICT_FILE] == hashlib.sha256(fork_blob).hexdigest()  # the new base's, not the pin's
    status = run_tool("apply_patches", "--torch-src", repo, "--stack", out, "--status")
    n = len(_names(real_stack))
    assert status.returncode == 0 and f"{n}/{n} patches" in status.stdout and "differs" not in status.stdout


def test_a_dirty_tree_is_refused_and_left_alone(pin_clone, real_stack):
    repo = _applied(pin_clone, real_stack)
    _fork(repo, "README.md", "## License\n", "## License (our fork)\n")
    (repo / CONFLICT_FILE).write_text((repo / CONFLICT_FILE).read_text() + "# mine\n")
    head = git(repo, "rev-parse", "HEAD")
    res = run_tool("rebase_stack", "--torch-src", repo, "--stack", real_stack, "--onto", "fork")
    assert res.returncode == 3 and "uncommitted changes" in res.error_line
    assert git(repo, "rev-parse", "HEAD") == head and (repo / CONFLICT_FILE).read_text().endswith("# mine\n")
    assert not (repo / ".git" / "fca-rebase-stack.json").exists()
