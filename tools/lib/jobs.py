"""Commands run side by side in the background, within one time limit.

Each job starts with :meth:`Shell.start` (its own process group, the user's locale, logged as a
``$`` line), its stdout and stderr to its log file; the caller hears of progress through a
heartbeat callback.  What still runs at the limit, or when the caller is interrupted, is stopped
with its children.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from . import ui
from .shell import Shell, kill_group


@dataclasses.dataclass(frozen=True)
class Job:
    """One background command: what runs, where, with which environment overrides, its output to ``log``."""

    argv: tuple[str, ...]
    log: Path
    cwd: Path | None = None
    env: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Ended:
    """How a job ended: its exit code, or None when it was stopped at the limit or never started."""

    returncode: int | None
    seconds: float
    unstarted: str = ""  # why it could not be started

    @property
    def timed_out(self) -> bool:
        return self.returncode is None and not self.unstarted


Beat = Callable[[float, Mapping[int, Ended]], None]  # (seconds so far, the jobs ended by now, by index)


def run_all(sh: Shell, jobs: Sequence[Job], *, limit_s: float, beat_s: float, on_beat: Beat,
            poll_s: float = 1.0, tee: bool = False) -> list[Ended]:
    """Start every job at once and wait for them, at most ``limit_s`` seconds; ``on_beat`` is called every
    ``beat_s`` seconds while any runs.  ``tee`` also copies each job's output to stderr as it comes.
    A job that cannot be started ends at once with ``unstarted`` saying why; the others still run."""
    procs: dict[int, subprocess.Popen] = {}
    tees: list[threading.Thread] = []
    ended: dict[int, Ended] = {}
    t0 = time.monotonic()
    try:
        for i, job in enumerate(jobs):
            try:
                procs[i] = sh.start(*job.argv, output=None if tee else job.log, cwd=job.cwd, env=dict(job.env))
            except ui.UserError as err:
                ended[i] = Ended(None, 0.0, unstarted=str(err))
                continue
            if tee:
                tees.append(threading.Thread(target=_tee, args=(procs[i].stdout, job.log), daemon=True))
                tees[-1].start()
        next_beat = t0 + beat_s
        while len(ended) < len(jobs):
            now = time.monotonic()
            for i, proc in procs.items():
                if i not in ended and proc.poll() is not None:
                    ended[i] = Ended(proc.returncode, now - t0)
            if len(ended) == len(jobs):
                break
            if now - t0 > limit_s:
                for i, proc in procs.items():
                    if i not in ended:
                        kill_group(proc)
                        ended[i] = Ended(None, now - t0)
                break
            if now >= next_beat:
                next_beat = now + beat_s
                on_beat(now - t0, ended)
            time.sleep(poll_s)
    except BaseException:  # interrupted (^C), or a failure of our own: no job outlives the caller
        for proc in procs.values():
            kill_group(proc)
        raise
    finally:
        for thread in tees:
            thread.join(timeout=5)
    return [ended[i] for i in range(len(jobs))]


def _tee(stream: IO[bytes], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        for chunk in iter(stream.readline, b""):
            out.write(chunk)
            out.flush()
            sys.stderr.write(chunk.decode(errors="replace"))
            sys.stderr.flush()
