"""test/under_load.py: pytest beside a load generator."""

from __future__ import annotations

import subprocess
import sys

from conftest import HANG_TIMEOUT, REPO_ROOT

SCRIPT = REPO_ROOT / "test" / "under_load.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=HANG_TIMEOUT)


def test_a_passing_run_under_load_exits_0_and_says_what_the_load_did():
    proc = _run("--busy", "1", "--write-mb", "4", "--repeat", "2", "--",
                "-q", "-p", "no:cacheprovider", "test/tools/lib/test_disk.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("under_load: passed; 2 run(s) in ") and "the writer wrote" in last
    assert proc.stdout.count(": exit 0 (") == 2


def test_a_failing_run_gives_pytest_s_exit_code():
    proc = _run("--busy", "0", "--", "-q", "-p", "no:cacheprovider", "test/tools/lib/test_disk.py", "-k", "no_such_test")
    assert proc.returncode == 5 and "under_load: failed (exit 5)" in proc.stdout  # 5: pytest collected nothing


def test_bad_options_are_a_usage_error():
    proc = _run("--repeat", "0")
    assert proc.returncode == 2 and "--repeat and --write-mb must be at least 1" in proc.stderr
