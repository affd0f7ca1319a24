"""Free-disk preflight before a big download or unpack.

A full disk half-way through a 27 MB source fetch, a 770 MB wheel or a 3.5 GB
venv leaves a half-written file or tree behind and an ENOSPC traceback from
whatever program hit it; checking first turns that into one line that says how
much is free, how much is needed and what to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tools.lib import ui

MB = 10**6
GB = 10**9


def free_bytes(path: Path) -> tuple[Path, int]:
    """(the nearest existing directory at or above ``path``, the bytes free on its disk): a cache dir
    that is not made yet lives on the disk of its first existing parent."""
    where = Path(path).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    return where, shutil.disk_usage(where).free


def check_free_disk(path: Path, need_bytes: int, what: str) -> None:
    """Raise a one-line :class:`ui.UserError` (exit 3) when ``path``'s disk has less than ``need_bytes``
    free for ``what`` (say what takes the space, e.g. "the pinned PyTorch source")."""
    _, free = free_bytes(path)
    if free < need_bytes:
        raise ui.UserError(
            f"{path}: {ui.fmt_bytes(free)} free on its disk, {what} needs {ui.fmt_bytes(need_bytes)}; "
            "free some space there, or set FCA_CACHE_DIR to a directory on a larger disk"
        )
