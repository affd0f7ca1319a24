"""Run pytest beside a load generator: the suite must not depend on the machine being idle.

The load is what a shared CI machine adds: two processes that spin on a core each, and a file
writer that writes, syncs and deletes 64 MB files in a loop (free disk moves under the tests).
All three stop when pytest ends, or after ``--seconds`` at the latest.

    python test/under_load.py                          # the fast tier (-m "not slow") under load
    python test/under_load.py --repeat 20 -- test/tools/lib/test_ui.py test/tools/lib/test_disk.py
    python test/under_load.py -- -q                    # the whole suite under load

Everything after ``--`` goes to pytest (default: ``-m "not slow"``).  Exit code: pytest's, of the
first run that failed (0 when every run passed); 2 for a usage error.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CHUNK = 1 << 20


def spin(deadline: float, stop) -> None:
    """Keep one core busy until ``stop`` is set or ``deadline`` passes."""
    while not stop.is_set() and time.monotonic() < deadline:
        sum(i * i for i in range(20_000))


def write_files(directory: str, mb: int, deadline: float, stop, written) -> None:
    """Write ``mb`` MB to a file, fsync it, delete it, again, until told to stop: the free disk and the
    page cache move under the tests as they do beside a build or a download."""
    block = os.urandom(CHUNK)
    path = Path(directory) / "load.bin"
    while not stop.is_set() and time.monotonic() < deadline:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(block)
                with written.get_lock():
                    written.value += CHUNK
                if stop.is_set():
                    break
            f.flush()
            os.fsync(f.fileno())
        path.unlink()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="under_load.py", description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 every run passed, else pytest's code of the first failing run; 2 usage.")
    parser.add_argument("--seconds", type=float, default=3 * 3600, help="stop the load after this long at the latest (default 3 h)")
    parser.add_argument("--busy", type=int, default=2, help="processes that spin on a core each (default 2)")
    parser.add_argument("--write-mb", type=int, default=64, help="size of each file the writer writes (default 64)")
    parser.add_argument("--repeat", type=int, default=1, help="run pytest this many times in a row (default 1)")
    args = parser.parse_args(ours)
    if args.repeat < 1 or args.busy < 0 or args.write_mb < 1:
        parser.error("--repeat and --write-mb must be at least 1, --busy at least 0")
    pytest_args = pytest_args or ["-m", "not slow"]

    ctx = multiprocessing.get_context("spawn")
    stop, written = ctx.Event(), ctx.Value("q", 0)
    deadline = time.monotonic() + args.seconds
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fca-load-") as scratch:
        load = [ctx.Process(target=spin, args=(deadline, stop), daemon=True) for _ in range(args.busy)]
        load.append(ctx.Process(target=write_files, args=(scratch, args.write_mb, deadline, stop, written), daemon=True))
        for proc in load:
            proc.start()
        print(f"under_load: {args.busy} busy process(es) and a {args.write_mb} MB file writer for at most "
              f"{args.seconds:.0f} s; $ {sys.executable} -m pytest {' '.join(pytest_args)}", flush=True)
        rc = 0
        try:
            for run in range(1, args.repeat + 1):
                code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=REPO_ROOT).returncode
                print(f"under_load: run {run}/{args.repeat}: exit {code} "
                      f"({time.monotonic() - start:.0f} s so far, load {'on' if time.monotonic() < deadline else 'ended'})", flush=True)
                if code and not rc:
                    rc = code
        finally:
            stop.set()
            for proc in load:
                proc.join(timeout=30)
                if proc.is_alive():
                    proc.kill()
    print(f"under_load: {'passed' if rc == 0 else f'failed (exit {rc})'}; {args.repeat} run(s) in "
          f"{time.monotonic() - start:.0f} s, the writer wrote {written.value / 1e9:.1f} GB", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
