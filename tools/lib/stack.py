"""The patch stack as data (``series`` + patch files + pin manifest), and the
scratch-dir engine that applies patches to file contents without touching a tree.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from . import patchfile, ui
from .pin import Manifest, manifest_paths
from .shell import Shell

SERIES = "series"

Contents = Mapping[str, "bytes | None"]  # path -> content (None: absent)


@dataclasses.dataclass(frozen=True)
class Stack:
    dir: Path
    files: tuple[Path, ...]  # in series order
    patches: tuple[patchfile.PatchFile, ...]
    manifest: Manifest

    @staticmethod
    def load(stack_dir: Path, *, need_manifest: bool = True) -> "Stack":
        series = stack_dir / SERIES
        if not series.is_file():
            raise ui.UserError(f"{series} is missing: a stack dir holds a `series` file (one patch file name per line)")
        files: list[Path] = []
        for lineno, line in enumerate(series.read_text().splitlines(), 1):
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            path = stack_dir / name
            if not path.is_file():
                raise ui.UserError(f"{series}:{lineno}: {name} does not exist; fix the series or re-export the stack")
            files.append(path)
        patches = tuple(patchfile.load(p) for p in files)
        manifest = Manifest.load(stack_dir) if need_manifest else Manifest({})
        stack = Stack(stack_dir, tuple(files), patches, manifest)
        if need_manifest:
            missing = sorted(set(stack.touched) - set(manifest.entries))
            if missing:
                raise ui.UserError(
                    f"{stack_dir / 'pin.sha256'} does not cover {missing[0]}, which the stack touches; "
                    "regenerate it with tools/export_patches.py"
                )
        return stack

    def __len__(self) -> int:
        return len(self.files)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.files)

    @property
    def touched(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for p in self.patches:
            for path in p.touched:
                seen[path] = None
        return tuple(seen)

    @property
    def created(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(path for p in self.patches for path in p.created))

    @property
    def watched(self) -> list[str]:
        """Every path whose content decides the tree's state: manifest + touched."""
        return manifest_paths(list(self.manifest.entries) + list(self.touched))


class PatchConflict(ui.OperationFailed):
    def __init__(self, patch: patchfile.PatchFile, detail: str, *, reverse: bool = False) -> None:
        self.patch = patch
        self.detail = detail
        verb = "reverse-apply" if reverse else "apply"
        super().__init__(f"patch {patch.name} does not {verb}: {detail}")


_FAILED_AT = re.compile(r"error: patch failed: (.+):(\d+)")
_ERROR = re.compile(r"error: (.+)")


def describe_apply_failure(patch: patchfile.PatchFile, stderr: str) -> str:
    """Turn ``git apply`` errors into 'file X hunk #N (@@ ...) does not apply'."""
    m = _FAILED_AT.search(stderr)
    if m:
        path, line = m.group(1), int(m.group(2))
        hunk = patch.hunk_at(path, line)
        where = f"hunk #{hunk.index} ({hunk.header.strip()})" if hunk else f"the hunk at line {line}"
        return f"{path}: {where} does not match"
    for line in stderr.splitlines():
        e = _ERROR.match(line.strip())
        if e:
            return e.group(1)
    return stderr.strip().splitlines()[-1] if stderr.strip() else "git apply failed"


def _changed_ranges(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int, int]]:
    """(a_start, a_end, b_start, b_end) of every run of lines that differs from ``a`` to ``b``."""
    ops = difflib.SequenceMatcher(None, a, b).get_opcodes()
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _quote_lines(lines: list[bytes], limit: int = 3) -> str:
    shown = [line.decode("utf-8", "replace").strip() for line in lines[:limit]]
    more = f" (+{len(lines) - limit} more)" if len(lines) > limit else ""
    return " / ".join(f"`{line}`" for line in shown) + more if shown else "nothing"


def describe_merge_conflict(patch: patchfile.PatchFile, path: str, base: bytes, ours: bytes, theirs: bytes) -> str:
    """Name the hunk of ``patch`` whose change to ``path`` overlaps the tree's own change, with the lines
    on both sides: ``base`` is the file as the patch expects it, ``ours`` as the tree has it, ``theirs``
    the patch applied to ``base``."""
    b, o, t = base.splitlines(), ours.splitlines(), theirs.splitlines()
    hunks = next((f.hunks for f in patch.files if path in f.paths), ())
    for tb1, tb2, t1, t2 in _changed_ranges(b, t):
        for ob1, ob2, o1, o2 in _changed_ranges(b, o):
            if ob1 <= tb2 and tb1 <= ob2:  # overlapping or adjacent, as git's merge sees a conflict
                hunk = next((h for h in hunks if h.old_start - 1 <= tb2 and tb1 <= h.old_start - 1 + h.old_len), None)
                where = f"hunk #{hunk.index} ({hunk.header.strip()})" if hunk else f"the change at line {tb1 + 1}"
                return (
                    f"3-way merge conflict in {path}: {where} changes {_quote_lines(b[tb1:tb2])} "
                    f"to {_quote_lines(t[t1:t2])}, where the tree has {_quote_lines(o[o1:o2])} (line {o1 + 1})"
                )
    return f"3-way merge conflict in {path}"


def write_contents(root: Path, contents: Contents) -> None:
    for path, data in contents.items():
        if data is None:
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _read_contents(root: Path, paths: Sequence[str]) -> dict[str, bytes | None]:
    result: dict[str, bytes | None] = {}
    for path in paths:
        target = root / path
        result[path] = target.read_bytes() if target.is_file() else None
    return result


def apply_to_contents(
    sh: Shell,
    contents: Contents,
    patches: Sequence[tuple[Path, patchfile.PatchFile]],
    *,
    reverse: bool = False,
) -> list[dict[str, bytes | None]]:
    """Apply ``patches`` in order to ``contents`` in a scratch dir.

    Returns the contents after each patch (same keys as ``contents`` plus any
    file a patch touches).  Raises :class:`PatchConflict` naming patch, file and
    hunk.  Nothing outside the scratch dir is written.
    """
    keys = list(dict.fromkeys(list(contents) + [p for _, pf in patches for p in pf.touched]))
    states: list[dict[str, bytes | None]] = []
    with tempfile.TemporaryDirectory(prefix="fca-apply-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        write_contents(root, contents)
        env = {"GIT_CEILING_DIRECTORIES": tmp}
        for path, pf in patches:
            args = ["apply", "--whitespace=nowarn"] + (["-R"] if reverse else []) + [str(path)]
            proc = sh.run(*Shell.git_argv(*args), cwd=root, env=env, check=False, log=False)
            if proc.returncode != 0:
                raise PatchConflict(pf, describe_apply_failure(pf, proc.stderr), reverse=reverse)
            states.append(_read_contents(root, keys))
    return states


def final_contents(sh: Shell, contents: Contents, stack: "Stack") -> dict[str, bytes | None]:
    """``contents`` with the whole stack applied (a copy of them for an empty stack)."""
    pairs = list(zip(stack.files, stack.patches))
    return apply_to_contents(sh, contents, pairs)[-1] if pairs else dict(contents)


def read_tree_files(tree: Path, paths: Sequence[str]) -> dict[str, bytes | None]:
    return _read_contents(tree, paths)


def file_mode(tree: Path, path: str) -> int | None:
    try:
        return stat.S_IMODE(os.stat(tree / path).st_mode)
    except FileNotFoundError:
        return None


def copy_tree_files(src: Path, dst: Path, paths: Sequence[str]) -> None:
    for path in paths:
        s = src / path
        if s.is_file():
            d = dst / path
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)
