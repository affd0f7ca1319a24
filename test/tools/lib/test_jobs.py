"""tools/lib/jobs.py: commands side by side, each its output to its log, stopped at the time limit."""

from __future__ import annotations

import os
import time

import pytest

from tools.lib import jobs, ui
from tools.lib.shell import Shell


@pytest.fixture(autouse=True)
def _not_quiet(monkeypatch):
    monkeypatch.setattr(ui, "_QUIET", False)


def _never(seconds, ended):
    raise AssertionError(f"no heartbeat expected ({seconds:.1f}s, {dict(ended)})")


def test_jobs_run_at_once_each_with_its_log_and_exit_code(tmp_path, capsys):
    todo = [jobs.Job(("sh", "-c", f'echo "$FCA_N" > started.{n}; while [ ! -e started.{3 - n} ]; do sleep 0.01; done; '
                                  f'echo "job $FCA_N"; exit {n}'), tmp_path / f"{n}.log", tmp_path, (("FCA_N", str(n)),))
            for n in (1, 2)]
    ended = jobs.run_all(Shell(), todo, limit_s=60, beat_s=60, on_beat=_never, poll_s=0.01)
    assert [e.returncode for e in ended] == [1, 2]  # each waited for the other to start: they ran at once
    assert [(tmp_path / f"{n}.log").read_text() for n in (1, 2)] == ["job 1\n", "job 2\n"]
    logged = [line for line in capsys.readouterr().err.splitlines() if line.startswith("$ ")]
    assert logged[0].startswith(f"$ cd {tmp_path} && FCA_N=1 sh -c ") and logged[0].endswith(f" > {tmp_path / '1.log'} 2>&1 &")


def test_a_job_past_the_limit_is_stopped_with_its_children_and_the_beat_says_so(tmp_path):
    pid_file = tmp_path / "child.pid"
    todo = [jobs.Job(("sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"), tmp_path / "slow.log"),
            jobs.Job(("true",), tmp_path / "quick.log")]
    beats = []
    t0 = time.monotonic()
    ended = jobs.run_all(Shell(verbose=False), todo, limit_s=1.0, beat_s=0.2,
                         on_beat=lambda s, e: beats.append(sorted(e)), poll_s=0.05)
    assert time.monotonic() - t0 < 30
    assert ended[0].timed_out and ended[0].returncode is None and ended[0].seconds >= 1.0
    assert ended[1].returncode == 0 and not ended[1].timed_out
    assert beats and beats[-1] == [1]  # the quick one had ended, the slow one still ran
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # the child of the stopped job goes with it (reaped by init: give it a moment)
            os.kill(child, 0)
            time.sleep(0.05)


def test_a_job_that_cannot_start_ends_at_once_and_the_others_run(tmp_path):
    todo = [jobs.Job(("fca-no-such-program",), tmp_path / "a.log"), jobs.Job(("true",), tmp_path / "b.log")]
    ended = jobs.run_all(Shell(verbose=False), todo, limit_s=60, beat_s=60, on_beat=_never, poll_s=0.01)
    assert ended[0].unstarted.startswith("`fca-no-such-program` is not installed") and not ended[0].timed_out
    assert ended[1].returncode == 0


def test_tee_copies_the_output_to_stderr_and_the_log(tmp_path, capfd):
    todo = [jobs.Job(("sh", "-c", "echo teed"), tmp_path / "t" / "tee.log")]
    ended = jobs.run_all(Shell(verbose=False), todo, limit_s=60, beat_s=60, on_beat=_never, poll_s=0.01, tee=True)
    assert ended[0].returncode == 0
    assert (tmp_path / "t" / "tee.log").read_text() == "teed\n"
    assert "teed" in capfd.readouterr().err
