#!/usr/bin/env python3
"""Carry the stack's commits to another base (a fork's branch, a later tag).

In a git checkout with the stack applied, ``--onto REF`` replays every commit above the stack's
base (found by content, as apply_patches finds it) onto REF with ``git rebase --onto REF BASE``.
At a conflict it stops with the tree in git's rebase state, names the conflicting files and
prints the next commands: resolve, ``git add``, then ``--continue``; or ``--abort``, which puts
HEAD, the branch, the index and the working tree back exactly as they were.  Once every commit
is replayed it prints the export command for the new base (``export_patches.py --base REF
--new-base``: the stack dir gets a pin.sha256 of REF's content, so apply_patches accepts REF).

Exit codes: 0 done, 1 stopped at a conflict, 2 usage, 3 bad input (dirty tree, no stack applied,
unknown REF, no rebase of this tool's in progress).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .export_patches import open_git_tree
from .lib import paths, ui
from .lib.shell import Shell
from .lib.stack import Stack
from .lib.tree import GitTree

STATE_FILE = "fca-rebase-stack.json"
# Only what the command line says: no autostash, autosquash or ref updates from the user's config.
REBASE_CONFIG = ("-c", "rebase.autoStash=false", "-c", "rebase.autoSquash=false", "-c", "rebase.updateRefs=false")


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("rebase_stack.py", __doc__)
    p.add_argument("--torch-src", type=Path, help="git checkout with the stack applied (default: the pinned source in the cache)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR,
                   help="the stack dir whose commits the tree has (default: %(default)s)")
    p.add_argument("--cache-dir", type=Path, help="cache dir for the pinned source")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--onto", metavar="REF", help="the new base: a branch, tag or commit of the checkout")
    mode.add_argument("--continue", dest="cont", action="store_true", help="go on after resolving a conflict and `git add`")
    mode.add_argument("--abort", action="store_true", help="stop and restore the tree as it was before --onto")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the result")
    return p


def _cmd(tree: Path, *extra: str) -> str:
    return shlex.join(["python", "tools/rebase_stack.py", "--torch-src", str(tree), *extra])


def export_command(tree: Path, onto: str) -> str:
    return shlex.join(["python", "tools/export_patches.py", "--torch-src", str(tree), "--base", onto,
                       "--new-base", "--stack", "DIR"])


def _in_rebase(tree: GitTree) -> bool:
    return any((tree.git_dir / d).exists() for d in ("rebase-merge", "rebase-apply"))


def _load_state(tree: GitTree) -> dict:
    path = tree.git_dir / STATE_FILE
    if not path.is_file():
        raise ui.UserError(f"no rebase_stack run is in progress in {tree.path}; start one with `{_cmd(tree.path, '--onto', 'REF')}`")
    return json.loads(path.read_text())


def _stopped(tree: GitTree, state: dict) -> int:
    """Report the conflict git's rebase stopped at, with the complete next commands; exit code 1."""
    files = tree.git("diff", "--name-only", "--diff-filter=U", log=False).split()
    stopped = tree.git("log", "-1", "--format=%h %s", "REBASE_HEAD", log=False).strip() if (tree.git_dir / "REBASE_HEAD").exists() else "?"
    q = shlex.quote(str(tree.path))
    ui.out("\n".join([
        f"{tree.path}: conflict replaying {stopped} onto {state['onto_ref']}",
        *(f"  conflict: {f}" for f in files),
        f"resolve the conflicts, then run: git -C {q} add {shlex.join(files) if files else 'FILE...'} && {_cmd(tree.path, '--continue')}",
        f"or restore the tree as it was: {_cmd(tree.path, '--abort')}",
    ]))
    return ui.EXIT_FAILED


def _finish(tree: GitTree, state: dict) -> int:
    (tree.git_dir / STATE_FILE).unlink()
    n = len(tree.git("rev-list", f"{state['onto']}..HEAD", log=False).split())
    ui.out(f"{tree.path}: replayed the stack onto {state['onto_ref']} ({state['onto'][:12]}): {n} commit(s) above it")
    ui.out(f"export the stack for that base: {export_command(tree.path, state['onto'])}")
    return ui.EXIT_OK


def _rebase(tree: GitTree, state: dict, *args: str) -> int:
    proc = tree.sh.git_proc(*REBASE_CONFIG, "rebase", *args, check=False, env={"GIT_EDITOR": "true"})
    if proc.returncode == 0 and not _in_rebase(tree):
        return _finish(tree, state)
    if _in_rebase(tree):
        return _stopped(tree, state)
    (tree.git_dir / STATE_FILE).unlink()  # git refused to start: nothing to continue or abort
    detail = (proc.stderr or proc.stdout).strip().splitlines()
    raise ui.OperationFailed(f"`git rebase {shlex.join(args)}` failed: {detail[-1] if detail else f'exit code {proc.returncode}'}")


def start(tree: GitTree, stack_dir: Path, onto_ref: str) -> int:
    if (tree.git_dir / STATE_FILE).is_file() or _in_rebase(tree):
        raise ui.UserError(f"a rebase is already in progress in {tree.path}; finish it with `{_cmd(tree.path, '--continue')}` "
                           f"or undo it with `{_cmd(tree.path, '--abort')}`")
    proc = tree.sh.git_proc("rev-parse", "--verify", "--quiet", f"{onto_ref}^{{commit}}", check=False, log=False)
    if proc.returncode != 0:
        raise ui.UserError(f"{tree.path} has no commit {onto_ref!r}; fetch it or pass a branch, tag or commit it has")
    onto = proc.stdout.strip()
    dirty = tree.git("status", "--porcelain", "--untracked-files=no", log=False)
    if dirty:
        raise ui.UserError(f"{tree.path} has uncommitted changes ({dirty.split()[-1]}, ...); commit or discard them first")
    stack = Stack.load(stack_dir.resolve())
    st = tree.state(stack)
    if st.applied == 0:
        raise ui.UserError(f"no patch of {stack.dir / 'series'} is applied in {tree.path}; apply the stack first: "
                           f"`python tools/apply_patches.py --torch-src {shlex.quote(str(tree.path))}`")
    assert st.base is not None
    head = tree.head()
    branch = tree.sh.git_proc("symbolic-ref", "--quiet", "--short", "HEAD", check=False, log=False).stdout.strip()
    state = {"onto": onto, "onto_ref": onto_ref, "base": st.base, "head": head, "branch": branch}
    (tree.git_dir / STATE_FILE).write_text(json.dumps(state, indent=1))
    n = len(tree.git("rev-list", f"{st.base}..{head}", log=False).split())
    ui.info(f"replaying {n} commit(s) above {st.base[:12]} onto {onto_ref} ({onto[:12]})")
    return _rebase(tree, state, "--onto", onto, st.base, *([branch] if branch else []))


def cont(tree: GitTree) -> int:
    state = _load_state(tree)
    if not _in_rebase(tree):  # finished with git's own `rebase --continue`
        return _finish(tree, state)
    unresolved = tree.git("diff", "--name-only", "--diff-filter=U", log=False).split()
    if unresolved:
        raise ui.OperationFailed(f"{', '.join(unresolved)} still conflict(s); resolve, then "
                                 f"`git -C {shlex.quote(str(tree.path))} add {shlex.join(unresolved)} && {_cmd(tree.path, '--continue')}`")
    return _rebase(tree, state, "--continue")


def abort(tree: GitTree) -> int:
    state = _load_state(tree)
    if _in_rebase(tree):
        tree.git(*REBASE_CONFIG, "rebase", "--abort")
    else:  # the rebase finished (or was ended by hand): put the branch back where it was
        if state["branch"]:
            tree.git("checkout", "-q", state["branch"])
            tree.git("reset", "-q", "--hard", state["head"])
        else:
            tree.git("checkout", "-q", "--detach", state["head"])
    (tree.git_dir / STATE_FILE).unlink()
    where = f"branch {state['branch']}" if state["branch"] else "detached HEAD"
    ui.out(f"{tree.path}: aborted; {where} is back at {state['head'][:12]}")
    return ui.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    sh = Shell(verbose=not args.quiet)
    tree = open_git_tree(args, paths.resolve_cache(args.cache_dir), sh, "rebase_stack")
    if args.cont:
        return cont(tree)
    if args.abort:
        return abort(tree)
    return start(tree, args.stack, args.onto)


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
