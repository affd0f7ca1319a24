#!/usr/bin/env python3
"""Build the patched torch wheel: torch-2.6.0+fca.<stack id>-cpXY-cpXY-linux_x86_64.whl.

The wheel is the stock torch==2.6.0 wheel (the same file pip installs, fetched
once into the cache and checked against the registry's sha256) plus what the
overlay builds from the patched tree: the overlay library in torch/lib/
(runpath $ORIGIN), its stamp, the patched .py files and headers, and a loader
in torch/__init__.py that loads the library before libtorch.  `pip install`
of it is the whole install: no LD_PRELOAD, no wrapper, no environment
variable, in every Python process that imports torch.  Without --torch-src the
tree is the pinned source in the cache, fetched and patched (apply_patches.py)
first when needed.

  python tools/build_wheel.py            # -> dist/torch-2.6.0+fca.<id>-cp311-cp311-linux_x86_64.whl
  pip install dist/torch-2.6.0+fca.*.whl # into any venv of that Python

--python PY builds for another CPython (3.9-3.13, the versions torch 2.6.0 has
wheels for): the overlay is compiled against that Python's headers and a
torch==2.6.0 venv made from it (<cache>/overlay-cpXY).  The default is this
interpreter's Python, whose build is the shared overlay (<cache>/overlay).

Exit codes: 0 built, 1 build failed, 2 usage, 3 bad input (stack not applied,
unsupported Python, missing compiler or headers, stock wheel hash mismatch).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import apply, paths, ui, wheel
from .lib.overlay import build as ob, package
from .lib.overlay.venv import InterpreterError, install_wheel, interpreter_facts
from .lib.pinned_source import ensure_pinned_source
from .lib.shell import Shell
from .lib.stack import Stack

SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")  # CPython versions torch 2.6.0 publishes wheels for


def python_version(python: str) -> str:
    try:
        out = interpreter_facts(python)["version"]
    except InterpreterError as err:
        raise ui.UserError(f"{err}; pass an installed CPython with --python") from None
    if out not in SUPPORTED:
        raise ui.UserError(f"{python} is Python {out}; torch 2.6.0 has wheels for CPython {', '.join(SUPPORTED)}")
    return out


def options_for(args: argparse.Namespace, version: str, cache: Path) -> ob.Options:
    """The shared overlay for this interpreter's Python; a build of its own for another Python."""
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    shared = version == own and not args.python
    if args.overlay_dir:
        root = args.overlay_dir.resolve()
    elif shared:
        root = ob.default_overlay_dir(cache)
    else:
        root = cache / f"overlay-cp{version.replace('.', '')}"
    return ob.Options(
        overlay_dir=root, venv=root / "venv", cache=cache, stack_dir=args.stack, torch_src=args.torch_src,
        jobs=args.jobs, use_ccache=not args.no_ccache, quiet=args.quiet, base_python=args.python,
        build_only=not shared,  # another Python's venv only builds: torch and its dependencies
    )


def build_wheel(args: argparse.Namespace, cache: Path) -> Path:
    t0 = time.monotonic()
    version = python_version(args.python or sys.executable)
    opts = options_for(args, version, cache)
    if args.torch_src is None:  # the built-in default: the pinned source in the cache, with the stack applied
        sh = Shell(verbose=not args.quiet)
        ui.info(apply.apply_stack(ensure_pinned_source(cache, sh), Stack.load(args.stack.resolve()), sh))
    with ob.locked(opts.overlay_dir, "wheel build"):
        made = package.make(ob.build(opts), (args.output or Path("dist")).resolve())
    out, counts = made.path, made.counts
    ui.out(
        f"wheel: {out} ({out.stat().st_size / 1e6:.0f} MB; {counts['copied']} stock files copied, {counts['changed']} changed, "
        f"{counts['added']} added) in {ui.fmt_seconds(time.monotonic() - t0)}\n"
        f"sha256: {wheel.file_sha256(out)}\n"
        f"install: pip install {out}"
    )
    return out


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("build_wheel.py", __doc__)
    p.add_argument("-o", "--output", type=Path, help="directory for the wheel (default: ./dist)")
    p.add_argument("--python", help="CPython to build for (default: this interpreter's version)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="the patch stack (default: patches/)")
    p.add_argument("--torch-src", type=Path, help="the patched tree (default: the pinned source, stack applied)")
    p.add_argument("--jobs", type=int, help="parallel compile jobs (default: min(2, cores))")
    p.add_argument("--overlay-dir", type=Path, metavar="DIR",
                   help="where the overlay objects and the build venv live (default: <cache>/overlay for this "
                        "interpreter's Python, <cache>/overlay-cpXY for another)")
    p.add_argument("--no-ccache", action="store_true", help="do not use ccache even if installed")
    p.add_argument("--venv", type=Path, metavar="DIR",
                   help="also install the wheel into DIR (created with the pinned test environment if missing; "
                        "only torch is reinstalled if it exists)")
    p.add_argument("-q", "--quiet", action="store_true", help="only the result line")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    cache = paths.cache_dir()  # resolved once; everything below takes it from here
    out = build_wheel(args, cache)
    if args.venv:
        t0 = time.monotonic()
        install_wheel(args.venv.resolve(), out, cache, Shell(verbose=not args.quiet), base_python=args.python)
        ui.out(f"installed into {args.venv} in {ui.fmt_seconds(time.monotonic() - t0)}")
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
