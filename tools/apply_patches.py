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
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import apply, paths, ui
from .lib.pinned_source import ensure_pinned_source
from .lib.shell import Shell
from .lib.stack import Stack


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


def resolve_tree(args: argparse.Namespace, sh: Shell) -> Path:
    if args.torch_src is not None:
        return args.torch_src
    return ensure_pinned_source(paths.resolve_cache(args.cache_dir), sh, tarball=args.tarball)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    sh = Shell(verbose=not args.quiet)
    stack = Stack.load(args.stack.resolve())
    tree_path = resolve_tree(args, sh)
    mode = "check" if args.check else "status" if args.status else "revert" if args.revert else "apply"
    req = apply.Request(tree_path, stack, mode, args.three_way, default_tree=args.torch_src is None)
    ui.out(apply.run(req, sh))
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
