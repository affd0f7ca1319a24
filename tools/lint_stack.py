#!/usr/bin/env python3
"""Lint the files the stack touches with the pinned tree's own linters, at its versions.

Reads the patched tree's .lintrunner.toml (which linter covers which files,
the adapter it runs, the tool versions its init_command pins; clang-format's
version from tools/linter/adapters/s3_init_config.json), installs those
versions into a venv of their own (<cache>/venvs/lint, made once), and runs
the tree's adapters on every file of the stack that the linter covers: what
upstream's lint job would report on the patched files.  Also checks that no
public header the stack touches carries a project-prefixed macro (FCA_...).

  python tools/lint_stack.py                  # FLAKE8, RUFF, PYFMT, CLANGFORMAT on the default tree
  python tools/lint_stack.py --linters RUFF   # one of them
  python tools/lint_stack.py --mypy           # MYPY too (minutes: it type-checks what the files import)
  python tools/lint_stack.py --fix            # rewrite the stack's commits formatted (PYFMT, CLANGFORMAT)

--fix runs the formatters on every commit of the stack in turn and writes
new commits whose trees are the formatted states (so no commit depends on a
later one's formatting and nothing conflicts), moves the tree's HEAD to the
new top, and prints the commands that export the stack.

The tree must have the stack applied (python tools/apply_patches.py).

Exit codes: 0 clean (or fixed), 1 lint findings, 2 usage, 3 bad input (stack not
applied, unknown linter, a linter's environment cannot be installed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):  # run as `python tools/<name>.py`: import the repo's tools/ as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from .lib import lint, paths, ui
from .lib.overlay.build import applied_tree
from .lib.shell import Shell
from .lib.stack import Stack
from .lib.tree import Tree, TreeState


def lint_venv(reqs: list[str], cache: Path, sh: Shell) -> Path:
    """``<cache>/venvs/lint`` with exactly ``reqs`` (reinstalled when the list changes)."""
    venv = cache / "venvs" / "lint"
    stamp = venv / ".fca-lint.json"
    key = hashlib.sha256("\n".join(reqs).encode()).hexdigest()[:16]
    if stamp.is_file() and json.loads(stamp.read_text()).get("key") == key:
        return venv
    with ui.step(f"lint venv {venv}: {', '.join(r.split(';')[0].strip() for r in reqs)}"):
        if not (venv / "pyvenv.cfg").is_file():
            sh.run(sys.executable, "-m", "venv", str(venv))
        proc = sh.run(str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs,
                      check=False)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise ui.UserError(f"cannot install the linters into {venv} ({tail}); check the network or pip's index")
    stamp.write_text(json.dumps({"key": key, "requirements": reqs}) + "\n")
    return venv


def tree_with_stack(args: argparse.Namespace, stack: Stack, sh: Shell, cache: Path) -> tuple[Tree, TreeState]:
    if args.torch_src and not args.torch_src.is_dir():
        raise ui.UserError(f"--torch-src {args.torch_src.resolve()} does not exist; pass a PyTorch checkout with the stack applied")
    return applied_tree(args.torch_src, stack, sh, cache)


def run_linter(linter: lint.Linter, tree: Path, files: list[str], python: str, clang_format: str, raw: bool = False):
    """The adapter's messages on ``files`` (``raw``: the JSON dicts, with original/replacement)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="fca-lint-") as pathsfile:
        pathsfile.write("\n".join(files) + "\n")
        pathsfile.flush()
        # quiet, as before: the step line says which linter runs on how many files
        proc = Shell(verbose=False).run(*lint.argv(linter, python, Path(pathsfile.name), clang_format), cwd=tree,
                                        check=False, log=False)
    found = lint.parse_messages(proc.stdout, raw=raw)
    if proc.returncode != 0 and not found:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ui.OperationFailed(f"{linter.code}'s adapter failed (exit {proc.returncode}): {tail}")
    return found


FORMATTERS = ("PYFMT", "CLANGFORMAT")


def format_in_place(wt: Path, files: list[str], linters: dict[str, lint.Linter], python: str, clang_format: str) -> int:
    """Apply the formatters' replacements to ``files`` in the checkout ``wt``; returns how many files changed."""
    changed = 0
    for code in FORMATTERS:
        covered = [p for p in files if linters[code].covers(p)]
        if not covered:
            continue
        for m in run_linter(linters[code], wt, covered, python, clang_format, raw=True):
            f = wt / m["path"]
            if m.get("replacement") is not None and f.is_file() and f.read_text() == m.get("original"):
                f.write_text(m["replacement"])
                changed += 1
    return changed


def fix_stack(tree: Path, base: str, stack: Stack, linters: dict[str, lint.Linter], venv: Path, sh: Shell) -> str:
    """New commits, one per stack commit, whose trees are that commit's state with the touched files
    formatted; returns the new top.  Built from states (not by replaying diffs), so nothing conflicts."""
    git = lambda *a, cwd=tree: sh.run("git", *a, cwd=cwd, log=False).stdout.strip()  # noqa: E731
    commits = git("rev-list", "--reverse", f"{base}..HEAD").split()
    parent = base
    python, clang_format = str(venv / "bin" / "python"), str(venv / "bin" / "clang-format")
    with tempfile.TemporaryDirectory(prefix="fca-lint-fix-") as tmp:
        wt = Path(tmp) / "wt"
        git("worktree", "add", "-q", "--detach", str(wt), base)
        try:
            progress = ui.Progress(len(commits), "format the stack's commits")
            for c in commits:
                git("checkout", "-q", "-f", "--detach", c, cwd=wt)  # drops the last commit's formatting
                files = sorted(p for p in stack.touched if (wt / p).is_file())
                n = format_in_place(wt, files, linters, python, clang_format)
                git("add", "--", *files, cwd=wt)
                new_tree = git("write-tree", cwd=wt)
                fmt = "%an%x00%ae%x00%ad%x00%B"
                name, email, date, message = git("log", "-1", "--date=raw", f"--format={fmt}", c).split("\0", 3)
                env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
                       "GIT_COMMITTER_DATE": date}
                parent = sh.run("git", "commit-tree", new_tree, "-p", parent, input=message.rstrip("\n") + "\n",
                                cwd=tree, env=env, log=False).stdout.strip()
                progress.advance(f"{c[:12]} -> {parent[:12]} ({n} file(s) formatted)")
        finally:
            git("worktree", "remove", "--force", str(wt))
    return parent


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ui.set_quiet(args.quiet)
    t0 = time.monotonic()
    sh = Shell(verbose=not args.quiet)
    cache = paths.cache_dir()  # resolved once; everything below takes it from here
    stack = Stack.load(args.stack.resolve())
    tree_obj, state = tree_with_stack(args, stack, sh, cache)
    tree = tree_obj.path
    linters = lint.load(tree)
    codes = [c.strip().upper() for c in args.linters.split(",") if c.strip()] + (["MYPY"] if args.mypy else [])
    unknown = [c for c in codes if c not in linters]
    if unknown:
        raise ui.UserError(f"{tree}/.lintrunner.toml has no linter {unknown[0]}; its linters: {', '.join(sorted(linters))}")
    # one venv for every default linter (and MYPY once asked for): no reinstall between runs
    venv = lint_venv(lint.venv_requirements(tree, list(dict.fromkeys([*lint.LINTERS, *codes])), linters), cache, sh)
    if args.fix:
        if sh.run("git", "status", "--porcelain", "--untracked-files=no", cwd=tree, log=False).stdout.strip():
            raise ui.UserError(f"{tree} has uncommitted changes; commit or stash them before --fix")
        top = fix_stack(tree, state.base, stack, linters, venv, sh)
        sh.run("git", "reset", "-q", "--hard", top, cwd=tree)
        ui.out(f"lint: the stack's commits in {tree} are rewritten formatted (HEAD {top[:12]}) in "
               f"{ui.fmt_seconds(time.monotonic() - t0)}\n"
               "next: python tools/export_patches.py && python tools/vendor.py && python tools/lint_stack.py")
        return ui.EXIT_OK
    touched = sorted(p for p in stack.touched if (tree / p).is_file())
    findings: list[lint.Message] = []
    counts = {}
    for code in codes:
        files = [p for p in touched if linters[code].covers(p)]
        if not files:
            counts[code] = "no file"
            continue
        with ui.step(f"{code} on {len(files)} file(s)"):
            found = run_linter(linters[code], tree, files, str(venv / "bin" / "python"), str(venv / "bin" / "clang-format"))
        counts[code] = f"{len(found)} in {len(files)} file(s)"
        findings += found
    hygiene = [m for p in touched for m in lint.project_macros(p, (tree / p).read_text(errors="replace"))]
    counts["HYGIENE"] = f"{len(hygiene)} in {sum(p.endswith(lint.HEADER_SUFFIXES) for p in touched)} header(s)"
    findings += hygiene
    for m in findings:
        ui.out(m.render())
    summary = "; ".join(f"{c}: {n}" for c, n in counts.items())
    ui.out(f"lint: {len(findings)} finding(s) on {len(touched)} file(s) the stack touches ({summary}) "
           f"in {ui.fmt_seconds(time.monotonic() - t0)}")
    return ui.EXIT_FAILED if findings else ui.EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = ui.arg_parser("lint_stack.py", __doc__)
    p.add_argument("--torch-src", type=Path, help="the patched tree (default: the pinned source, stack applied)")
    p.add_argument("--stack", type=Path, default=paths.DEFAULT_STACK_DIR, help="the patch stack (default: patches/)")
    p.add_argument("--linters", default=",".join(lint.LINTERS),
                   help="comma-separated .lintrunner.toml codes to run (default: %(default)s)")
    p.add_argument("--mypy", action="store_true", help="also run MYPY (slow: it type-checks the files' imports)")
    p.add_argument("--fix", action="store_true",
                   help="rewrite the stack's commits in the tree formatted by PYFMT and CLANGFORMAT (git checkouts only)")
    p.add_argument("-q", "--quiet", action="store_true", help="only the findings and the result line")
    return p


def entry() -> int:
    return ui.run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
