#!/usr/bin/env python3
"""Export the commits above the pin as the patch stack (``patches/``).

Writes one ``NNNN-<slug>.patch`` per commit (``git format-patch -k`` with every
setting that varies between machines pinned: zero commit ids, full blob ids, no
diffstat, no signature, user config ignored), the ``series`` file, and the pin
manifest ``pin.sha256`` (SHA-256 at the pin of every file the stack touches,
plus anchors).  Output is byte-stable: apply then export gives the same bytes.
``--base REF --new-base`` exports a stack carried to another base (rebase_stack.py): pin.sha256
then records REF's content, so the stack dir is consistent with that base.
Each patch is by its commit's author, or by --author for every patch (only the
From: line differs; the repository is not changed).  The ``Fca-Stack-Patch:``
trailer apply_patches writes into its commits is left out.

Exit codes: 0 written (or --check: up to date), 1 --check found differences,
2 usage, 3 bad input (no pin in history, merge commits, wrong pin, an --author
that is not "Name <email>").
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import tempfile
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import patchfile, paths, ui
from .lib.ghstack_shape import SUBJECT_PREFIXES
from .lib.identity import PROJECT_AUTHOR, parse_ident
from .lib.pin import MANIFEST_NAME, PIN, Manifest, describe_mismatch, manifest_paths
from .lib.shell import Shell
from .lib.stack import SERIES
from .lib.tree import GitTree, strip_stack_mark

PATCH_NAME = re.compile(r"^\d{4}-.*\.patch$")

FORMAT_PATCH_ARGS = (
    "format-patch", "-1", "--stdout", "--keep-subject", "--no-stat", "--no-signature",
    "--full-index", "--zero-commit", "--no-renames", "--binary", "--no-numbered",
    "--no-thread", "--no-to", "--no-cc", "--no-add-header", "--encoding=UTF-8",
)
# Ignore the user's and the system's git config entirely for byte-stable output.
ISOLATED_CONFIG = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}



def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("export_patches.py", __doc__)
    p.add_argument("--torch-src", type=Path, help="git checkout with the stack as commits above the pin (default: the pinned source in the cache)")
    p.add_argument("--base", help=f"the pin commit (default: tag {PIN.git_tag})")
    p.add_argument("--new-base", action="store_true",
                   help="--base is another base than the pin (a fork's branch, a later tag; see rebase_stack.py): "
                        "write pin.sha256 from its content instead of checking it against the stack dir's")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="stack dir to write (default: %(default)s)")
    p.add_argument("--cache-dir", type=Path, help="cache dir for the pinned source")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the stack dir differs from the commits")
    p.add_argument("--author", metavar='"NAME <EMAIL>"',
                   help="the author (From:) of every exported patch, e.g. the project's "
                        f"{PROJECT_AUTHOR!r} (default: each commit's own author); the rest of each patch is unchanged")
    p.add_argument("-q", "--quiet", action="store_true", help="only print the result")
    return p


def render_stack(tree: GitTree, base: str, old_manifest: Manifest | None,
                 author: tuple[str, str] | None = None) -> dict[str, bytes]:
    """Every file of the stack dir, by name, as bytes (every patch by ``author`` (name, email) if given)."""
    merges = tree.git("rev-list", "--merges", f"{base}..HEAD", log=False).split()
    if merges:
        raise ui.UserError(f"commit {merges[0][:12]} above the pin is a merge; the stack must be linear (rebase it)")
    commits = tree.git("rev-list", "--reverse", f"{base}..HEAD", log=False).split()
    out: dict[str, bytes] = {}
    series: list[str] = []
    touched: list[str] = []
    with _scratch_objects(tree) as env:
        for i, commit in enumerate(commits, 1):
            commit = _export_copy(tree, commit, author, env)
            text = tree.sh.run(*Shell.git_argv(*FORMAT_PATCH_ARGS, commit), env=env, log=False, binary=True).stdout
            pf = patchfile.parse(text.decode("utf-8", "surrogateescape"))
            name = f"{i:04d}-{patchfile.slugify(pf.subject)}.patch"
            _lint(name, pf)
            out[name] = text
            series.append(name)
            touched.extend(pf.touched)
    out[SERIES] = "".join(f"{n}\n" for n in series).encode()
    wanted = manifest_paths(touched)
    base_contents = tree.read_at(base, wanted)
    if old_manifest is not None:
        known = {p: base_contents[p] for p in wanted if p in old_manifest.entries}
        bad = Manifest({p: old_manifest.entries[p] for p in known}).mismatches(known)
        if bad:
            raise ui.UserError(describe_mismatch(tree.path, bad).replace("is not", f"(at {base[:12]}) is not"))
    out[MANIFEST_NAME] = Manifest.from_contents(base_contents).render().encode()
    return out


@contextlib.contextmanager
def _scratch_objects(tree: GitTree):
    """The environment format-patch runs in: no user config, and a throwaway object dir in front of the
    repository's, so the commit copies export makes never land in the user's repository."""
    with tempfile.TemporaryDirectory(prefix="fca-export-") as tmp:
        yield {**ISOLATED_CONFIG, "GIT_OBJECT_DIRECTORY": tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(tree.objects)}


def _export_copy(tree: GitTree, commit: str, author: tuple[str, str] | None, env: dict[str, str]) -> str:
    """``commit``, or a copy of it without apply_patches' ``Fca-Stack-Patch:`` trailer and (``author``)
    by ``author``, nothing else differing (tree, parent, author date, committer), so its patch differs
    only there; git itself then writes the From: header (quoting, RFC 2047 for non-ASCII names)."""
    raw = tree.sh.run(*Shell.git_argv("cat-file", "commit", commit), env=env, log=False, binary=True).stdout
    header, sep, message = raw.partition(b"\n\n")
    lines = header.split(b"\n")
    if author is not None:
        i = next(n for n, line in enumerate(lines) if line.startswith(b"author "))
        when = lines[i].rsplit(b" ", 2)[1:]  # the author date: epoch seconds and zone
        lines[i] = b" ".join([b"author", f"{author[0]} <{author[1]}>".encode(), *when])
    copy = b"\n".join(lines) + sep + strip_stack_mark(message)
    if copy == raw:
        return commit
    hashed = tree.sh.run(*Shell.git_argv("hash-object", "-t", "commit", "-w", "--stdin"), input=copy, env=env,
                         log=False, binary=True)
    return hashed.stdout.decode().strip()


def _lint(name: str, pf: patchfile.PatchFile) -> None:
    if not pf.subject.startswith(SUBJECT_PREFIXES):
        ui.info(f"warning: {name}: subject should start with {' or '.join(SUBJECT_PREFIXES)}")
    if "\nTest Plan:" not in pf.message:
        ui.info(f"warning: {name}: the commit message has no `Test Plan:` section")


def resolve_base(tree: GitTree, base: str | None) -> str:
    rev = base or PIN.git_tag
    proc = tree.sh.run(*Shell.git_argv("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"), check=False, log=False)
    if proc.returncode != 0:
        raise ui.UserError(f"{tree.path} has no commit {rev!r}; pass --base with the v{PIN.version} commit the stack sits on")
    return proc.stdout.strip()


def diff_stack_dir(stack_dir: Path, rendered: dict[str, bytes]) -> tuple[list[str], list[str]]:
    """(files to write, stale patch files to delete)."""
    changed = [n for n, data in rendered.items() if not (stack_dir / n).is_file() or (stack_dir / n).read_bytes() != data]
    stale = sorted(p.name for p in stack_dir.glob("*.patch") if PATCH_NAME.match(p.name) and p.name not in rendered) if stack_dir.is_dir() else []
    return changed, stale


def open_git_tree(args: argparse.Namespace, cache: Path, sh: Shell, tool: str) -> GitTree:
    """The git checkout --torch-src names (default: the pinned source in ``cache``), which ``tool`` needs
    with the stack as commits."""
    if args.torch_src is not None:
        src = args.torch_src
    else:
        from .lib.pinned_source import ensure_pinned_source

        src = ensure_pinned_source(cache, sh)
    if not Path(src).exists():
        raise ui.UserError(f"--torch-src {src} does not exist; pass a git checkout with the stack as commits above the pin")
    if not (Path(src) / ".git").exists():
        raise ui.UserError(f"{src} is not a git checkout; {tool} needs the stack as commits (apply it with tools/apply_patches.py)")
    return GitTree(Path(src).resolve(), sh)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    author = parse_ident(args.author, "--author") if args.author is not None else None
    if args.new_base and args.base is None:
        raise ui.UserError("--new-base needs --base REF, the commit the stack now sits on", exit_code=ui.EXIT_USAGE)
    sh = Shell(verbose=not args.quiet)
    tree = open_git_tree(args, paths.resolve_cache(args.cache_dir), sh, "export")
    base = resolve_base(tree, args.base)
    stack_dir = args.stack.resolve()
    old_manifest = Manifest.load(stack_dir) if (stack_dir / MANIFEST_NAME).is_file() and not args.new_base else None
    rendered = render_stack(tree, base, old_manifest, author)
    changed, stale = diff_stack_dir(stack_dir, rendered)
    npatches = len(rendered) - 2
    if args.check:
        if changed or stale:
            first = (changed + stale)[0]
            ui.out(f"{stack_dir}: out of date with {tree.path} ({len(changed)} changed, {len(stale)} stale, e.g. {first}); run tools/export_patches.py")
            return ui.EXIT_FAILED
        ui.out(f"{stack_dir}: up to date ({npatches} patch(es))")
        return ui.EXIT_OK
    stack_dir.mkdir(parents=True, exist_ok=True)
    for name in changed:
        tmp = stack_dir / (name + ".tmp")
        tmp.write_bytes(rendered[name])
        tmp.replace(stack_dir / name)
    for name in stale:
        (stack_dir / name).unlink()
    ui.out(f"{stack_dir}: exported {npatches} patch(es) from {tree.path} ({len(changed)} file(s) written, {len(stale)} removed)")
    return ui.EXIT_OK


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
