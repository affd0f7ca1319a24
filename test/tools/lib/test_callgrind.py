"""tools/lib/callgrind.py: instruction counts of a region, on a real process under real valgrind."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import HANG_TIMEOUT
from tools.lib import callgrind, ui
from tools.lib.shell import Shell

SH = Shell(verbose=False)

REGION = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
n = int(sys.argv[2])
import json, decimal  # outside the region: not counted

def work(n):  # locals and small ints: the same work per iteration, nothing allocated
    total = 0
    for i in range(n):
        total += i & 7
    return total

work(1000)  # warm (the interpreter specializes the loop's bytecode)
if sys.argv[3] == "one":  # one region of n iterations
    lib.fca_callgrind_start()
    total = work(n)
    lib.fca_callgrind_stop()
else:  # two pieces of n // 2, with 4 n iterations between them that are not counted
    lib.fca_callgrind_zero()
    total = 0
    for _ in range(2):
        lib.fca_callgrind_resume()
        total += work(n // 2)
        lib.fca_callgrind_pause()
        work(4 * n)
    lib.fca_callgrind_dump()
print(total)
"""

def _count(tmp_path, lib, n: int, shape: str = "one") -> int:
    script = tmp_path / "region.py"
    script.write_text(REGION)
    out = tmp_path / f"{shape}-n{n}" / "callgrind.out"
    out.parent.mkdir()
    proc = subprocess.run(callgrind.wrap([sys.executable, str(script), str(lib), str(n), shape], out),
                          capture_output=True, text=True, timeout=HANG_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) == sum(i & 7 for i in range(n))
    return callgrind.region_instructions(out)


def test_the_count_covers_the_region_only_and_grows_with_its_work(tmp_path):
    """A loop of 400k iterations costs about twice one of 200k; the interpreter's start
    and the imports before the region (tens of millions of instructions) are not in it."""
    lib = callgrind.ensure_ctl_lib(tmp_path / "ctl", SH)
    small, large = _count(tmp_path, lib, 200_000), _count(tmp_path, lib, 400_000)
    assert 1.8 < large / small < 2.2, (small, large)
    per_iteration = (large - small) / 200_000
    assert small < 1.2 * 200_000 * per_iteration  # almost nothing but the loop


def test_a_region_in_pieces_counts_the_pieces_and_not_the_work_between_them(tmp_path):
    """Two resumed-and-paused pieces of 100k iterations each cost what one region of 200k
    does; the 800k iterations run between and after them (paused) are not counted."""
    lib = callgrind.ensure_ctl_lib(tmp_path / "ctl", SH)
    one, pieces = _count(tmp_path, lib, 200_000), _count(tmp_path, lib, 200_000, "pieces")
    assert 0.95 < pieces / one < 1.05, (one, pieces)


def test_the_control_library_is_built_once_per_source(tmp_path):
    lib = callgrind.ensure_ctl_lib(tmp_path, SH)
    mtime = lib.stat().st_mtime_ns
    assert callgrind.ensure_ctl_lib(tmp_path, SH) == lib and lib.stat().st_mtime_ns == mtime
    assert lib.name.startswith("libfca_callgrind_ctl-") and lib.read_bytes()[:4] == b"\x7fELF"


def test_a_run_whose_region_never_started_is_an_error_not_zero(tmp_path):
    (tmp_path / "callgrind.out").write_text("totals: 0\n")  # the exit dump alone: no region dump
    with pytest.raises(ui.UserError, match="the region never ran"):
        callgrind.region_instructions(tmp_path / "callgrind.out")
