"""What every kind of tree shares: its state, the stack mark apply writes into commits, and
:class:`Tree`, the protocol the git and the plain tree both follow (see :mod:`tree`)."""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import Literal, Protocol

from . import ui
from .shell import Shell
from .stack import Stack


@dataclasses.dataclass(frozen=True)
class TreeState:
    applied: int  # how many patches of the series (a prefix) are applied
    on_top: int = 0  # git: commits above the stack's top
    base: str | None = None  # git: the commit the stack sits on
    stale: int = 0  # git: commits above the applied prefix that apply_patches made from an older stack
    top: str | None = None  # git: the applied prefix's top commit (what `stale` sits on)


TRAILER = "Fca-Stack-Patch"
_MARK = re.compile(rf"^{TRAILER}: (.+) ([0-9a-f]{{40}}) ([0-9a-f]{{40}})$")


@dataclasses.dataclass(frozen=True)
class StackMark:
    """What the ``Fca-Stack-Patch: NAME PATCH-ID DIFF-ID`` trailer of a commit apply made says."""

    name: str  # the patch file it was made from
    patch_id: str  # `git patch-id --stable` of that patch file
    diff_id: str  # ... of the commit's diff as made (not patch_id when a 3-way merge changed the context)

    def line(self) -> str:
        return f"{TRAILER}: {self.name} {self.patch_id} {self.diff_id}"

    @staticmethod
    def find(message: str) -> "StackMark | None":
        for line in reversed(message.splitlines()):
            m = _MARK.match(line)
            if m:
                return StackMark(*m.groups())
        return None


def strip_stack_mark(message: bytes) -> bytes:
    """``message`` without its ``Fca-Stack-Patch:`` line(s) (and the blank line that set one apart)."""
    lines = message.split(b"\n")
    prefix = f"{TRAILER}: ".encode()
    i = 0
    while i < len(lines):
        if not lines[i].startswith(prefix):
            i += 1
            continue
        del lines[i]
        if i > 0 and lines[i - 1] == b"" and (i == len(lines) - 1 or lines[i] == b""):
            del lines[i - 1]
            i -= 1
    return b"\n".join(lines)


def check_writable(path: Path, what: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".fca-write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ui.UserError(
            f"cannot write to {what} {path} ({err.strerror}); make it writable (or work on a copy) and retry; nothing was changed"
        ) from None


class Tree(Protocol):
    """A PyTorch source tree the stack is applied to; every operation is all-or-nothing, and a run
    killed half-way leaves a journal that ``recover`` undoes."""

    path: Path
    sh: Shell

    @property
    def kind(self) -> Literal["git", "plain"]: ...

    def describe(self) -> str:
        """What the tree is, for a status line (``git checkout, branch main``)."""
        ...

    def check_writable(self) -> None: ...

    def ensure_clean(self, stack: Stack) -> None:
        """Refuse (naming what to do) when local changes are in the way of applying or reverting."""
        ...

    def has_journal(self) -> bool: ...

    def recover(self) -> bool:
        """Undo what a killed run left half-done; True if there was something to undo."""
        ...

    def state(self, stack: Stack) -> TreeState: ...

    def base_mismatches(self, stack: Stack, state: TreeState) -> list[tuple[str, str, str]]:
        """(path, expected, actual) for every pinned file that differs at the stack's base."""
        ...

    def verify_base(self, stack: Stack, state: TreeState) -> None: ...

    def check(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> None: ...

    def apply(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> list[str]: ...

    def revert(self, stack: Stack, state: TreeState) -> None: ...

    def drop_stale(self, state: TreeState) -> None:
        """Move off the commits an older version of the stack left above the applied prefix."""
        ...
