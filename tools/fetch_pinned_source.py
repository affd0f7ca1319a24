#!/usr/bin/env python3
"""Fetch PyTorch v2.6.0 offline and import it as a git checkout (the pin).

--source debian (the default) downloads Debian's source package with apt's own
client through a private apt config under the cache dir (the system's sources
are not edited); it has third_party stripped.  --source github-release
downloads PyTorch's release tarball pytorch-v2.6.0.tar.gz (third_party
included, so tools/build_torch.py can build it; $FCA_GITHUB_RELEASE_URL or
--url overrides where from) into a .part file that is renamed only once its
SHA-256 matched (a bad one is deleted, exit 3; a killed download starts over),
and verifies the unpacked tree by the content hashes in patches/pin.sha256.
Either tarball is unpacked and committed as the first commit of a git
repository tagged v2.6.0; the tools use Debian's, else the release's.  Prints
the checkout's path.  Safe to run concurrently (file lock) and after a killed
run (the half-built tree is discarded).  It checks first that the cache dir's
disk has room, and shows the download's and the unpack's progress (bytes of
the total, elapsed time) on stderr.

With --torch-src PATH it instead verifies that your own tree is at the pin, by
the content hashes in patches/pin.sha256.

Exit codes: 0 ok, 1 download/unpack failed, 2 usage, 3 bad input (checksum,
no apt, tree not at the pin, too little free disk).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import paths, ui
from .lib.pin import PIN, RELEASE
from .lib.pinned_source import ensure_pinned_source, ensure_release_source
from .lib.shell import Shell
from .lib.stack import Stack
from .lib.tree import open_tree


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("fetch_pinned_source.py", __doc__)
    p.add_argument("--cache-dir", type=Path, help="where to put it (default: $FCA_CACHE_DIR or ~/.cache/fca)")
    p.add_argument("--source", choices=("debian", "github-release"), default="debian",
                   help=f"debian: Debian's {PIN.tarball} through apt (third_party stripped; default); "
                        f"github-release: PyTorch's {RELEASE.tarball} (third_party included)")
    p.add_argument("--tarball", type=Path, help=f"use this {PIN.tarball} (or with --source github-release, "
                                                 f"{RELEASE.tarball}) instead of downloading it")
    p.add_argument("--debian-mirror", help="Debian archive URI (default: the one configured in /etc/apt)")
    p.add_argument("--url", help=f"--source github-release: download from here (default: $FCA_GITHUB_RELEASE_URL or {RELEASE.url})")
    p.add_argument("--sha256", metavar="HEX", help="--source github-release: the tarball's full SHA-256, "
                                                   "checked instead of the recorded one (see tools/lib/pin.py)")
    p.add_argument("--torch-src", type=Path, help="verify this tree is at the pin instead of fetching")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="stack whose pin manifest to verify against")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the result")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    sh = Shell(verbose=not args.quiet)
    if args.torch_src is not None:
        stack = Stack.load(args.stack.resolve())
        tree = open_tree(args.torch_src, sh)
        state = tree.state(stack)
        tree.verify_base(stack, state)
        ui.out(f"{tree.path}: at PyTorch v{PIN.version} ({len(stack.manifest.entries)} files verified by sha256; {state.applied}/{len(stack)} patches applied)")
        return ui.EXIT_OK
    cache = paths.resolve_cache(args.cache_dir)
    if args.source == "github-release":
        if args.debian_mirror:
            raise ui.UserError("--debian-mirror is for --source debian", exit_code=ui.EXIT_USAGE)
        if args.sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", args.sha256):
            raise ui.UserError(f"--sha256 {args.sha256!r}: expected 64 hex digits", exit_code=ui.EXIT_USAGE)
        root = ensure_release_source(cache, sh, tarball=args.tarball, url=args.url,
                                     sha256=args.sha256.lower() if args.sha256 else None)
    else:
        if args.url or args.sha256:
            raise ui.UserError("--url and --sha256 are for --source github-release", exit_code=ui.EXIT_USAGE)
        root = ensure_pinned_source(cache, sh, tarball=args.tarball, mirror=args.debian_mirror)
    ui.out(str(root))
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
