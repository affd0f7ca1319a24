"""The recipes of docs/contributing.md, run as written: on a scratch clone of the pin (TREE) and a
scratch copy of patches/ (STACK), with each `<...>` filled in, so the docs cannot rot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, copy_stack, git, run_tool
from test_rebase_stack import CONFLICT_FILE, _conflicting_fork, _fork

DOC = REPO_ROOT / "docs" / "contributing.md"
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")
FILE = "torch/_dynamo/compiled_autograd.py"  # the last patch changes it
N = len((REPO_ROOT / "patches" / "series").read_text().split())  # patches in the stack

# $EDITOR for the recipes: resolves conflict markers to the replayed commit's side, else appends a line.
EDITOR = """import re, sys
f = sys.argv[1]
text = open(f).read()
if "<<<<<<< " in text:
    text = re.sub(r"<<<<<<< [^\\n]*\\n.*?\\n=======\\n(.*?)>>>>>>> [^\\n]*\\n", r"\\1", text, flags=re.S)
else:
    text += "# recipe edit\\n"
open(f, "w").write(text)
"""


def recipes() -> dict[str, str]:
    """The first bash block of every `### ` recipe under `## Recipes`, by title; "" is the set-up."""
    text = DOC.read_text().split("\n## Recipes\n", 1)[1].split("\n## ", 1)[0]
    blocks: dict[str, str] = {}
    for title, body in re.findall(r"(?:^|\n)(?:### ([^\n]+)\n)?((?:(?!\n### ).)*)", text, flags=re.S):
        m = re.search(r"```bash\n(.*?)```", body, flags=re.S)
        if m:
            blocks.setdefault(title, m.group(1))
    return blocks


@pytest.fixture
def scratch(pin_clone, tmp_path: Path):
    """(TREE, STACK, run): the set-up block done; run(title, **fill) runs that recipe's block."""
    tree, stack = pin_clone(), copy_stack(REPO_ROOT / "patches", tmp_path / "stack")
    editor = tmp_path / "editor"
    editor.write_text(f"#!{sys.executable}\n{EDITOR}")
    editor.chmod(0o755)
    env = {**os.environ, "TREE": str(tree), "STACK": str(stack), "EDITOR": str(editor),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    blocks = recipes()

    def run(title: str, **fill: str) -> subprocess.CompletedProcess:
        block = "".join(l for l in blocks[title].splitlines(keepends=True) if not re.match(r"(TREE|STACK)=", l))
        for key, value in fill.items():
            block = block.replace(f"<{key.replace('_', ' ')}>", value)
        assert not PLACEHOLDER.search(re.sub(r"#.*", "", block)), block  # every <...> filled in
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=HANG_TIMEOUT)
        assert proc.returncode == 0, f"{title}:\n{block}\n{proc.stdout}\n{proc.stderr}"
        return proc

    run("")
    return tree, stack, run


def _series(stack: Path) -> list[str]:
    return (stack / "series").read_text().split()


def _commit_of(tree: Path, n: int) -> str:
    return git(tree, "rev-list", "--reverse", "v2.6.0..HEAD").split()[n - 1]


def test_the_docs_have_every_recipe():
    assert set(recipes()) == {"", "Add a patch", "Edit a patch", "Drop a patch", "Move to a new base", "Resolve a conflict"}


def test_add_a_patch(scratch):
    tree, stack, run = scratch
    run("Add a patch", file=FILE, subject="log the reset", what_and_why="Why.", how="pytest")
    names = _series(stack)
    assert len(names) == N + 1 and names[-1] == f"{N + 1:04d}-compiled-autograd-log-the-reset.patch"
    assert "+# recipe edit\n" in (stack / names[-1]).read_text()


def test_edit_a_patch(scratch):
    tree, stack, run = scratch
    before = _series(stack)
    run("Edit a patch", file=FILE, commit=_commit_of(tree, N))
    assert _series(stack) == before
    assert "+# recipe edit\n" in (stack / before[N - 1]).read_text()
    assert (stack / before[0]).read_bytes() == (REPO_ROOT / "patches" / before[0]).read_bytes()
    status = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--status")
    assert f"{N}/{N} patches" in status.stdout and "commit(s)" not in status.stdout


def test_drop_a_patch(scratch):
    tree, stack, run = scratch
    before = _series(stack)
    run("Drop a patch", commit=_commit_of(tree, N))
    assert _series(stack) == before[: N - 1] and not (stack / before[N - 1]).exists()


def test_move_to_a_new_base(scratch):
    tree, stack, run = scratch
    _fork(tree, "README.md", "## License\n", "## License (our fork)\n")
    run("Move to a new base", new_base="fork")
    assert len(git(tree, "rev-list", "fork..HEAD").split()) == N
    for name in _series(stack) + ["pin.sha256"]:
        assert (stack / name).read_bytes() == (REPO_ROOT / "patches" / name).read_bytes(), name


def test_resolve_a_conflict(scratch):
    tree, stack, run = scratch
    _conflicting_fork(tree, stack)
    stopped = run_tool("rebase_stack", "--torch-src", tree, "--stack", stack, "--onto", "fork")
    assert stopped.returncode == 1 and CONFLICT_FILE in stopped.stdout
    proc = run("Resolve a conflict", file=CONFLICT_FILE, new_base="fork")
    assert proc.stdout.splitlines()[0] == CONFLICT_FILE
    assert len(git(tree, "rev-list", "fork..HEAD").split()) == N and git(tree, "status", "--porcelain") == ""
    status = run_tool("apply_patches", "--torch-src", tree, "--stack", stack, "--status")
    assert f"{N}/{N} patches" in status.stdout and "differs" not in status.stdout
