"""Where things live: the repo, the stack, the cache."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / "tools"
DEFAULT_STACK_DIR = REPO_ROOT / "patches"
DEFAULT_VENDOR_DIR = REPO_ROOT / "vendored_torch_patches"


def cache_dir() -> Path:
    """``$FCA_CACHE_DIR``, else ``$XDG_CACHE_HOME/fca``, else ``~/.cache/fca``."""
    explicit = os.environ.get("FCA_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "fca").resolve()


def resolve_cache(option: Path | None) -> Path:
    """The cache a CLI works in: its ``--cache-dir`` when given, else :func:`cache_dir`.  A CLI calls
    this once and passes the result down; library code takes the cache as a parameter."""
    return option.expanduser().resolve() if option is not None else cache_dir()


def wheelhouse(cache: Path) -> Path:
    """The wheels pip downloads once and every venv installs from (torch==2.6.0, its CUDA
    libraries, the tools' pins): ``<cache>/wheels``."""
    return cache / "wheels"
