"""Free-disk preflight before a big download or unpack.

A full disk half-way through a 27 MB source fetch, a 770 MB wheel or a 3.5 GB
venv leaves a half-written file or tree behind and an ENOSPC traceback from
whatever program hit it; checking first turns that into one line that says how
much is free, how much is needed and what to do.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from . import ui

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


def _record_files(dist_info: Path) -> list[tuple[str, str, int]]:
    """(path relative to site-packages, sha256 hash, size) of each hashed file in a dist-info's RECORD."""
    rows = []
    for line in (dist_info / "RECORD").read_text().splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256=") and parts[2].isdigit():
            rows.append((parts[0], parts[1][len("sha256="):], int(parts[2])))
    return rows


def share_installed_files(site: Path, store: Path, dist_prefixes: tuple[str, ...]) -> int:
    """Hard-link the files of the distributions in ``site`` whose dist-info name starts with one of
    ``dist_prefixes`` to one copy per content in ``store`` (keyed by the sha256 pip recorded), so that
    several venvs installed from the same wheels hold those bytes once.  Only for packages nothing
    writes into (pip replaces or unlinks files, never rewrites them).  Store entries no venv links to
    any more are removed.  A file that cannot be linked (another disk, a changed file) stays a copy.
    Returns the bytes now shared rather than copied."""
    store.mkdir(parents=True, exist_ok=True)
    saved = 0
    for dist_info in sorted(site.glob("*.dist-info")):
        if not dist_info.name.lower().startswith(dist_prefixes) or not (dist_info / "RECORD").is_file():
            continue
        for rel, digest, size in _record_files(dist_info):
            target, kept = site / rel, store / digest
            try:
                st = target.stat()
                if st.st_size != size:
                    continue  # not the recorded bytes any more
                if not kept.exists():
                    os.link(target, kept)
                elif not os.path.samefile(target, kept) and kept.stat().st_size == size:
                    tmp = target.with_name(target.name + ".fca-link")
                    os.link(kept, tmp)
                    os.replace(tmp, target)
                    saved += size
            except OSError:
                continue
    for kept in store.iterdir():
        if kept.is_file() and kept.stat().st_nlink == 1:
            kept.unlink()
    return saved
