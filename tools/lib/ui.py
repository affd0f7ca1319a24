"""User-facing output: one-line errors, progress steps with elapsed time, exit codes.

Every tool funnels failures through :class:`UserError`; ``run_main`` turns it into
``error: <one line>`` on stderr and the error's exit code.  Anything else that
escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

# Exit codes shared by every tool.  0 = success.
EXIT_OK = 0
EXIT_FAILED = 1  # the operation ran and failed (conflicting patch, drift, test failure)
EXIT_USAGE = 2  # bad command line (argparse uses 2 as well)
EXIT_BAD_INPUT = 3  # the input is wrong: wrong pin, dirty tree, wrong torch, missing tool
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """An error the user can fix.  ``str(err)`` is one line that says what to do."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class OperationFailed(UserError):
    """The operation itself failed (a patch does not apply, drift was found)."""

    exit_code = EXIT_FAILED


_QUIET = bool(os.environ.get("FCA_QUIET"))


def set_quiet(quiet: bool) -> None:
    global _QUIET
    _QUIET = quiet


def info(message: str) -> None:
    if not _QUIET:
        print(message, file=sys.stderr, flush=True)


def out(message: str) -> None:
    """The tool's result (stdout), never suppressed."""
    print(message, flush=True)


def fmt_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s"


def fmt_bytes(n: int) -> str:
    """Decimal units, as apt and pip print download sizes (``27.2 MB``)."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """``[  1.2s] title ... done (0.8s)`` around a long step."""
    start = time.monotonic()
    info(f"==> {title} ...")
    try:
        yield
    except BaseException:
        info(f"==> {title}: failed after {fmt_seconds(time.monotonic() - start)}")
        raise
    info(f"==> {title}: done in {fmt_seconds(time.monotonic() - start)}")


class Progress:
    """How far a long step is: ``[i/n elapsed] title: label`` lines for items, and for bytes
    (:meth:`bytes`) ``[12.3 MB/27.2 MB 45% elapsed] title``, at most one line per ``every`` seconds
    so a fast stream of updates does not flood the log."""

    def __init__(self, total: int, title: str, *, unit: Callable[[int], str] = str, percent: bool = False,
                 every: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.title = title
        self.unit = unit
        self.percent = percent
        self.every = every
        self.clock = clock  # seconds, monotonic; the tests pass their own
        self.done = 0
        self.start = clock()
        self.shown = -math.inf

    @classmethod
    def bytes(cls, total: int, title: str, every: float = 2.0, *,
              clock: Callable[[], float] = time.monotonic) -> "Progress":
        return cls(total, title, unit=fmt_bytes, percent=True, every=every, clock=clock)

    def advance(self, label: str) -> None:
        self.update(self.done + 1, label)

    def update(self, done: int, label: str = "", *, force: bool = False) -> None:
        """``done`` of ``total`` so far; prints a line unless one was printed less than ``every`` s ago."""
        self.done = done
        now = self.clock()
        if not force and now - self.shown < self.every:
            return
        self.shown = now
        pct = f" {100 * done // self.total}%" if self.percent and self.total else ""
        text = f": {label}" if label else ""
        total = f"/{self.unit(self.total)}" if self.total else ""  # 0: unknown (a download without a length)
        info(f"[{self.unit(done)}{total}{pct} {fmt_seconds(now - self.start)}] {self.title}{text}")


@contextlib.contextmanager
def watch_growth(path: Path, total: int, title: str, every: float = 2.0) -> Iterator[Progress]:
    """While the block runs another program that writes ``path`` (apt's download of a file of
    ``total`` bytes), print its size every ``every`` seconds, and the final size when the block
    succeeds: the program's own output says nothing until the file is complete."""
    progress = Progress.bytes(total, title, every)
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every):
            progress.update(_size(path), force=True)

    watcher = threading.Thread(target=poll, name="watch_growth", daemon=True)
    watcher.start()
    try:
        yield progress
    finally:
        stop.set()
        watcher.join()
    progress.update(_size(path), force=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # not created yet
        return 0


def run_main(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    try:
        return main(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


def arg_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A tool's parser: the docstring's first paragraph is the description, the rest (notes, the
    exit codes) the epilog of ``--help``."""
    first, _, rest = (doc or "").strip().partition("\n\n")
    return argparse.ArgumentParser(prog=prog, description=first, epilog=rest or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
