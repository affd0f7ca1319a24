#!/usr/bin/env python3
"""Apply the patch stack to a PyTorch v2.6.0 tree (the main job).

With no arguments: fetch (if needed) the pinned source into the cache and apply
``patches/series`` to it.  ``--torch-src PATH`` targets your own checkout.

On a git checkout every patch becomes one commit (author, date, subject and body
kept, like ``git am -k``, plus an ``Fca-Stack-Patch:`` trailer by which the tool
knows its commits): the result is ready for ``ghstack``.  On a plain directory
the files are patched in place.  All-or-nothing: if any patch fails, the tree is
exactly as before and the error names the patch, file and hunk.  ``--3way``
applies onto a checkout whose pinned files differ from the pin (your own
commits), merging a patch that does not apply as is against the pin's blobs.

Modes: apply (default), --check (dry run, writes nothing), --status, --revert.
Exit codes: 0 ok, 1 a patch does not apply, 2 usage, 3 bad input (dirty tree,
wrong pin, unwritable tree, missing tool).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib.pin import describe_mismatch
from .lib.pinned_source import ensure_pinned_source
from .lib.shell import Shell
from .lib.stack import Stack
from .lib.tree import TreeState, open_tree


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="apply_patches.py",
        description=__doc__.split("\n\n")[0],
        epilog="Exit codes: 0 ok, 1 patch does not apply, 2 usage, 3 bad input.",
    )
    p.add_argument("--torch-src", type=Path, help="PyTorch v2.6.0 tree to patch (default: the pinned source in the cache)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="stack dir with series + patches (default: %(default)s)")
    p.add_argument("--cache-dir", type=Path, help="cache dir for the pinned source (default: $FCA_CACHE_DIR or ~/.cache/fca)")
    p.add_argument("--tarball", type=Path, help="use this Debian orig tarball instead of downloading it")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="dry run: verify the pin and that every remaining patch applies; write nothing")
    mode.add_argument("--status", action="store_true", help="print which patches are applied")
    mode.add_argument("--revert", action="store_true", help="remove the applied patches (the tree returns to the pin)")
    p.add_argument("--3way", dest="three_way", action="store_true",
                   help="git checkouts whose pinned files differ from the pin: merge a patch that does not apply as is "
                        "against the pin's blobs (a conflict changes nothing and names file, hunk and lines)")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the result")
    return p


def command(args: argparse.Namespace, tree: Path, *extra: str) -> str:
    """The apply command for this tree and stack, with ``extra`` options, ready to paste."""
    argv = ["python", "tools/apply_patches.py"]
    if args.torch_src is not None:
        argv += ["--torch-src", str(tree)]
    if args.stack.resolve() != paths.DEFAULT_STACK_DIR.resolve():
        argv += ["--stack", str(args.stack.resolve())]
    return shlex.join(argv + list(extra))


def resolve_tree(args: argparse.Namespace, sh: Shell) -> Path:
    if args.torch_src is not None:
        return args.torch_src
    cache = args.cache_dir.resolve() if args.cache_dir else paths.cache_dir()
    return ensure_pinned_source(cache, sh, tarball=args.tarball)


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    sh = Shell(verbose=not args.quiet)
    stack = Stack.load(args.stack.resolve())
    tree_path = resolve_tree(args, sh)
    tree = open_tree(tree_path, sh)
    if args.three_way and tree.kind != "git":
        raise ui.UserError(
            f"--3way needs a git checkout (it merges against the pin's blobs); {tree.path} is a plain directory"
        )
    writes = not (args.check or args.status)
    if writes:
        tree.check_writable()
    if tree.has_journal():
        if not writes:
            raise ui.UserError(
                f"an interrupted run left {tree.path} half-updated; recover it first: "
                f"`{command(args, tree.path)}` (or `{command(args, tree.path, '--revert')}`)"
            )
        tree.recover()
    state = tree.state(stack)
    remaining = len(stack) - state.applied
    off_pin = tree.base_mismatches(stack, state)
    off_pin_files = ", ".join(bad[0] for bad in off_pin)
    # A base off the pin is fine for --3way, and for looking at or reverting a stack applied there.
    if off_pin and not args.three_way:
        if not ((args.status or args.revert or remaining == 0) and (state.applied or state.stale)):
            raise ui.UserError(
                f"{describe_mismatch(tree.path, off_pin)}; or apply the stack onto these changes "
                f"by 3-way merges: `{command(args, tree.path, '--3way')}`"
            )
    elif off_pin:
        ui.info(f"--3way: {len(off_pin)} pinned file(s) differ from the pin ({off_pin_files}); "
                "a patch that does not apply as is is merged against the pin's blobs")

    if args.status:
        ui.out(format_status(stack, state, tree.describe(), tree.path, off_pin_files))
        return ui.EXIT_OK

    tree.ensure_clean(stack)
    if args.revert:
        if state.applied == 0 and not state.stale:
            ui.out(f"{tree.path}: no patch of the stack is applied; nothing to revert")
            return ui.EXIT_OK
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
        ui.out(f"{tree.path}: reverted {n} patch(es); the tree is at {where}")
        return ui.EXIT_OK

    if state.stale and not args.check:
        with ui.step(f"dropping {state.stale} commit(s) of an older version of the stack from {tree.path}"):
            tree.drop_stale(state)
    if remaining == 0:
        what = "the stack is empty" if len(stack) == 0 else f"all {len(stack)} patches are already applied"
        ui.out(f"{tree.path}: {what}; nothing to do")
        return ui.EXIT_OK
    if state.on_top:
        assert state.top is not None
        rerun = command(args, tree.path, *(["--3way"] if args.three_way else []))
        raise ui.UserError(
            f"{state.on_top} commit(s) sit above patch {state.applied} of the stack in {tree.path}; "
            f"to apply the rest on a fresh branch at the stack's top, run "
            f"`git -C {shlex.quote(str(tree.path))} switch -c fca-stack {state.top} && {rerun}`"
        )
    if args.check:
        with ui.step(f"checking {remaining} patch(es) against {tree.path}"):
            tree.check(stack, state, three_way=args.three_way)
        ui.out(f"{tree.path}: all {remaining} remaining patch(es) apply cleanly (nothing written)")
        return ui.EXIT_OK
    with ui.step(f"applying {remaining} patch(es) to {tree.path}"):
        tree.apply(stack, state, three_way=args.three_way)
    ui.out(f"{tree.path}: applied {remaining} patch(es); {len(stack)}/{len(stack)} applied")
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
