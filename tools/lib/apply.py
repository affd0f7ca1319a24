"""Applying the stack to a tree, as a library call: the modes of ``tools/apply_patches.py`` (apply,
check, status, revert), shared by that CLI, ``build_wheel.py`` and ``bench.py``.  Each returns the
result line the CLI prints; bad input raises :class:`ui.UserError` naming the command to run next,
and a patch that does not apply raises from the tree (which is left exactly as it was)."""

from __future__ import annotations

import dataclasses
import functools
import shlex
from pathlib import Path
from typing import Literal

from . import ui
from .pin import describe_mismatch
from .shell import Shell
from .stack import Stack
from .tree import TreeState, open_tree

Mode = Literal["apply", "check", "status", "revert"]


def rerun_command(tree: Path | None, stack_dir: Path, *extra: str) -> str:
    """``python tools/apply_patches.py [--torch-src TREE] [--stack DIR] EXTRA...``, ready to paste;
    no ``--torch-src`` for the pinned source in the cache (``tree`` None), no ``--stack`` for patches/."""
    from . import paths

    argv = ["python", "tools/apply_patches.py"]
    if tree is not None:
        argv += ["--torch-src", str(tree)]
    if stack_dir.resolve() != paths.DEFAULT_STACK_DIR.resolve():
        argv += ["--stack", str(stack_dir.resolve())]
    return shlex.join(argv + list(extra))


@dataclasses.dataclass(frozen=True)
class Request:
    tree: Path
    stack: Stack
    mode: Mode = "apply"
    three_way: bool = False
    # the tree is the pinned source in the cache, which the commands an error names leave implied
    default_tree: bool = False


def format_status(stack: Stack, state: TreeState, tree_desc: str, tree: Path, off_pin: str = "") -> str:
    lines = [f"{tree} ({tree_desc}): {state.applied}/{len(stack)} patches of {stack.dir / 'series'} applied"]
    for i, name in enumerate(stack.names):
        lines.append(f"  [{'x' if i < state.applied else ' '}] {name}")
    if state.on_top:
        lines.append(f"  ({state.on_top} commit(s) above the stack)")
    if state.stale:
        lines.append(f"  ({state.stale} commit(s) from an older version of the stack, made by apply_patches; "
                     "applying replaces them)")
    if off_pin:
        lines.append(f"  (the stack's base differs from the pin in {off_pin})")
    return "\n".join(lines)


def run(req: Request, sh: Shell) -> str:
    """Carry out ``req`` on its tree; return the result line."""
    stack = req.stack
    tree = open_tree(req.tree, sh)
    rerun = functools.partial(rerun_command, None if req.default_tree else req.tree, stack.dir)
    if req.three_way and tree.kind != "git":
        raise ui.UserError(
            f"--3way needs a git checkout (it merges against the pin's blobs); {tree.path} is a plain directory"
        )
    writes = req.mode in ("apply", "revert")
    if writes:
        tree.check_writable()
    if tree.has_journal():
        if not writes:
            raise ui.UserError(
                f"an interrupted run left {tree.path} half-updated; recover it first: "
                f"`{rerun()}` (or `{rerun('--revert')}`)"
            )
        tree.recover()
    state = tree.state(stack)
    remaining = len(stack) - state.applied
    off_pin = tree.base_mismatches(stack, state)
    off_pin_files = ", ".join(bad[0] for bad in off_pin)
    # A base off the pin is fine for --3way, and for looking at or reverting a stack applied there.
    if off_pin and not req.three_way:
        if not ((req.mode in ("status", "revert") or remaining == 0) and (state.applied or state.stale)):
            raise ui.UserError(
                f"{describe_mismatch(tree.path, off_pin)}; or apply the stack onto these changes "
                f"by 3-way merges: `{rerun('--3way')}`"
            )
    elif off_pin:
        ui.info(f"--3way: {len(off_pin)} pinned file(s) differ from the pin ({off_pin_files}); "
                "a patch that does not apply as is is merged against the pin's blobs")

    if req.mode == "status":
        return format_status(stack, state, tree.describe(), tree.path, off_pin_files)

    tree.ensure_clean(stack)
    if req.mode == "revert":
        if state.applied == 0 and not state.stale:
            return f"{tree.path}: no patch of the stack is applied; nothing to revert"
        if state.on_top:
            assert state.base is not None and state.top is not None
            raise ui.UserError(
                f"{state.on_top} commit(s) sit above the stack in {tree.path}; to keep them and take the stack "
                f"out from under them, run `git -C {shlex.quote(str(tree.path))} rebase --onto {state.base} {state.top}`"
            )
        n = state.applied + state.stale
        with ui.step(f"reverting {n} patch(es) in {tree.path}"):
            tree.revert(stack, state)
        where = f"the stack's base {state.base[:12]}" if off_pin and state.base else "the pin"
        return f"{tree.path}: reverted {n} patch(es); the tree is at {where}"

    if state.stale and req.mode != "check":
        with ui.step(f"dropping {state.stale} commit(s) of an older version of the stack from {tree.path}"):
            tree.drop_stale(state)
    if remaining == 0:
        what = "the stack is empty" if len(stack) == 0 else f"all {len(stack)} patches are already applied"
        return f"{tree.path}: {what}; nothing to do"
    if state.on_top:
        assert state.top is not None
        again = rerun(*(["--3way"] if req.three_way else []))
        raise ui.UserError(
            f"{state.on_top} commit(s) sit above patch {state.applied} of the stack in {tree.path}; "
            f"to apply the rest on a fresh branch at the stack's top, run "
            f"`git -C {shlex.quote(str(tree.path))} switch -c fca-stack {state.top} && {again}`"
        )
    if req.mode == "check":
        with ui.step(f"checking {remaining} patch(es) against {tree.path}"):
            tree.check(stack, state, three_way=req.three_way)
        return f"{tree.path}: all {remaining} remaining patch(es) apply cleanly (nothing written)"
    with ui.step(f"applying {remaining} patch(es) to {tree.path}"):
        tree.apply(stack, state, three_way=req.three_way)
    return f"{tree.path}: applied {remaining} patch(es); {len(stack)}/{len(stack)} applied"


def apply_stack(tree: Path, stack: Stack, sh: Shell) -> str:
    """Apply ``stack`` to ``tree`` (a no-op when it is applied already); return the result line."""
    return run(Request(tree, stack), sh)
