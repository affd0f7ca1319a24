"""The plain-directory kind of :mod:`tree`: the stack applied to copies in memory, written back
under a journal holding the originals."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Literal

from . import failpoint, ui
from .pin import describe_mismatch
from .shell import Shell
from .stack import PatchConflict, Stack, apply_to_contents, read_tree_files
from .tree_base import TreeState, check_writable

PLAIN_JOURNAL_DIR = ".fca-apply-journal"


class PlainTree:
    kind: Literal["plain"] = "plain"

    def __init__(self, path: Path, sh: Shell) -> None:
        self.path = path
        self.sh = sh

    def check_writable(self) -> None:
        check_writable(self.path, "the tree")

    def ensure_clean(self, stack: Stack) -> None:
        """Local edits show up as a state no prefix of the stack explains (see ``state``)."""

    def _journal_dir(self) -> Path:
        return self.path / PLAIN_JOURNAL_DIR

    def has_journal(self) -> bool:
        return self._journal_dir().exists()

    def recover(self) -> bool:
        jdir = self._journal_dir()
        record_path = jdir / "journal.json"
        if not jdir.exists():
            return False
        if record_path.exists():
            record = json.loads(record_path.read_text())
            ui.info(f"recovering from an interrupted {record['op']} in {self.path} (journal {jdir})")
            for path, existed in record["paths"].items():
                target = self.path / path
                if existed:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(target.name + ".fca-tmp")
                    shutil.copy2(jdir / "orig" / path, tmp)
                    os.replace(tmp, target)
                elif target.exists():
                    target.unlink()
        shutil.rmtree(jdir)
        return True

    def state(self, stack: Stack) -> TreeState:
        contents = read_tree_files(self.path, stack.watched)
        if not stack.manifest.mismatches(contents):
            return TreeState(applied=0)
        pairs = list(zip(stack.files, stack.patches))
        for k in range(len(stack), 0, -1):
            try:
                states = apply_to_contents(self.sh, contents, list(reversed(pairs[:k])), reverse=True)
            except PatchConflict:
                continue
            if not stack.manifest.mismatches(states[-1]):
                return TreeState(applied=k)
        bad = stack.manifest.mismatches(contents)
        raise ui.UserError(
            describe_mismatch(self.path, bad).replace(
                "; check out", ", and no prefix of the stack explains it (local edits?); check out"
            )
        )

    def verify_base(self, stack: Stack, state: TreeState) -> None:
        """``state`` already proved the base by content."""

    def base_mismatches(self, stack: Stack, state: TreeState) -> list[tuple[str, str, str]]:
        return []

    def check(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> None:
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), remaining)

    def _write(self, op: str, new: dict[str, bytes | None], modes: dict[str, int]) -> None:
        current = read_tree_files(self.path, list(new))
        changed = [p for p in new if new[p] != current[p]]
        jdir = self._journal_dir()
        (jdir / "orig").mkdir(parents=True)
        for p in changed:
            if current[p] is not None:
                dest = jdir / "orig" / p
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.path / p, dest)
        (jdir / "journal.json").write_text(
            json.dumps({"op": op, "paths": {p: current[p] is not None for p in changed}}, indent=1)
        )
        for i, p in enumerate(changed):
            if i == len(changed) // 2:
                failpoint.hit("plain-mid-write")
            target = self.path / p
            data = new[p]
            if data is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".fca-tmp")
            tmp.write_bytes(data)
            if p in modes:
                os.chmod(tmp, modes[p])
            elif current[p] is not None:
                shutil.copymode(self.path / p, tmp)
            os.replace(tmp, target)
        shutil.rmtree(jdir)

    def apply(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> list[str]:
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        states = apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), remaining)
        for _, pf in remaining:
            ui.info(f"  applied {pf.name}")
        self._write("apply", states[-1], {})
        return []

    def revert(self, stack: Stack, state: TreeState) -> None:
        pairs = list(zip(stack.files, stack.patches))[: state.applied]
        states = apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), list(reversed(pairs)), reverse=True)
        self._write("revert", states[-1], {})

    def drop_stale(self, state: TreeState) -> None:
        """A plain tree's state is a prefix of the stack by content: there are no stale commits."""

    def describe(self) -> str:
        return "plain directory (no git)"
