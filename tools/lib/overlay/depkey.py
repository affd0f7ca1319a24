"""Content keys for g++ results: the command line plus the digest of every file the
compiler read (its ``-MD`` dependency list).  A result is reused exactly when none
of the files it saw changed; compiles (``compile.tu_key``) and the header ABI
probes (``checks.class_layouts``) share this.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Sequence


def file_digest(path: Path, memo: dict[str, str]) -> str:
    key = str(path)
    if key not in memo:
        try:
            memo[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        except FileNotFoundError:
            memo[key] = "missing"
    return memo[key]


def read_deps(dfile: Path) -> list[str]:
    """The prerequisites of a make-style dependency file (``-MD``/``-MMD``); [] if absent."""
    if not dfile.is_file():
        return []
    text = dfile.read_text().replace("\\\n", " ")
    _, _, rest = text.partition(":")
    return [p for p in rest.split() if p]


def content_key(argv: Sequence[str], inputs: Iterable[Path], deps: Iterable[str], memo: dict[str, str]) -> str:
    h = hashlib.sha256()
    h.update("\0".join(argv).encode())
    for path in inputs:
        h.update(file_digest(path, memo).encode())
    for dep in deps:
        h.update(dep.encode() + b"=" + file_digest(Path(dep), memo).encode())
    return h.hexdigest()
