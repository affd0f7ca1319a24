"""Instruction counts of one region of a Python process, with valgrind's callgrind.

Timings on a shared 2-core machine move 10-40% between runs; the number of
instructions a region executes does not (0.1-0.8% between two runs of the same
code here).  The process runs under ``valgrind --tool=callgrind
--instr-atstart=no``, so everything up to the region (interpreter start, ``import
torch``) runs uninstrumented; the region itself calls two C functions of a tiny
library built here (``callgrind.h`` client requests: zero the counters and start
instrumenting, then stop and dump), loaded with ctypes.  A region in pieces (the 40
steady-state backwards, not the Python between them) zeroes once, resumes and pauses
instrumentation around each piece, and dumps once.  The count is the total of that
dump.  Child processes (Inductor's g++) are not counted.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from . import ui
from .shell import Shell

CTL_SOURCE = r"""
#include <valgrind/callgrind.h>
/* the measured region: counters zeroed, instrumentation on ... off, one dump */
void fca_callgrind_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void fca_callgrind_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("fca region"); }
/* a region in pieces: zero once, then resume ... pause around each piece, one dump */
void fca_callgrind_zero(void) { CALLGRIND_ZERO_STATS; }
void fca_callgrind_resume(void) { CALLGRIND_START_INSTRUMENTATION; }
void fca_callgrind_pause(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void fca_callgrind_dump(void) { CALLGRIND_DUMP_STATS_AT("fca region"); }
"""

HEADER = Path("/usr/include/valgrind/callgrind.h")


def missing() -> str | None:
    """Why instruction counts cannot be taken here (with what to install), or None."""
    if shutil.which("valgrind") is None or not HEADER.exists():
        return "valgrind (with its headers) is not installed: `apt-get install valgrind`"
    if shutil.which("gcc") is None:
        return "gcc is not installed: `apt-get install gcc`"
    return None


def ensure_ctl_lib(cache: Path, sh: Shell) -> Path:
    """The start/stop library, built once per source text under ``cache`` (``sh`` runs gcc)."""
    why = missing()
    if why:
        raise ui.UserError(f"instruction counts need valgrind: {why}")
    digest = hashlib.sha256(CTL_SOURCE.encode()).hexdigest()[:12]
    lib = cache / f"libfca_callgrind_ctl-{digest}.so"
    if not lib.exists():
        with tempfile.TemporaryDirectory(dir=_made(cache)) as tmp:  # concurrent callers each build their own
            src = Path(tmp) / "ctl.c"
            src.write_text(CTL_SOURCE)
            sh.run("gcc", "-O1", "-shared", "-fPIC", "-o", str(Path(tmp) / lib.name), str(src))
            (Path(tmp) / lib.name).replace(lib)
    return lib


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


CXX_WRAPPER = """#!/bin/sh
# g++ for code valgrind will run: Inductor compiles with -march=native, and valgrind
# has no AVX-512 (the later flag wins; a no-op on CPUs without it)
exec g++ "$@" -mno-avx512f
"""


def ensure_cxx_wrapper(cache: Path) -> Path:
    """A ``CXX`` for Inductor in a process under valgrind (its kernels run in it)."""
    digest = hashlib.sha256(CXX_WRAPPER.encode()).hexdigest()[:12]
    path = cache / f"g++-no-avx512-{digest}"
    if not path.exists():
        with tempfile.TemporaryDirectory(dir=_made(cache)) as tmp:
            (Path(tmp) / path.name).write_text(CXX_WRAPPER)
            (Path(tmp) / path.name).chmod(0o755)
            (Path(tmp) / path.name).replace(path)
    return path


def wrap(argv: list[str], out_file: Path) -> list[str]:
    """``argv`` run under callgrind, instrumenting nothing until the region starts.
    ``argv[0]`` must be an ELF executable (a venv's real ``python3.X``), not a script:
    valgrind does not follow the exec of a wrapper script into its child."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}", *argv]


_TOTAL = re.compile(r"^totals:\s*(\d+)", re.M)


def region_instructions(out_file: Path) -> int:
    """Instructions of the region: the ``totals:`` of its dump, the file named
    ``--callgrind-out-file`` plus the dump's number (``.1``; the file without a suffix
    is the final dump at exit, empty since instrumentation stopped)."""
    dumps = sorted(out_file.parent.glob(out_file.name + ".*"))
    if not dumps:
        raise ui.UserError(f"callgrind wrote no dump next to {out_file}: the region never ran")
    match = _TOTAL.search(dumps[-1].read_text(errors="replace"))
    if not match:
        raise ui.UserError(f"{dumps[-1]}: no totals line")
    return int(match.group(1))
