"""tools/lib/shell.py: feeding a file to a command with progress; starting a background job; talking to a
process over pipes."""

from __future__ import annotations

import pytest

from tools.lib import ui
from tools.lib.shell import CommandError, Shell


@pytest.fixture(autouse=True)
def _not_quiet(monkeypatch):
    monkeypatch.setattr(ui, "_QUIET", False)


def test_feed_counts_every_byte_it_gives_the_command(tmp_path, capsys):
    source = tmp_path / "in"
    source.write_bytes(b"x" * 3_000_000)
    out = tmp_path / "out"
    progress = ui.Progress.bytes(3_000_000, "copying", every=60)
    Shell().feed("sh", "-c", f"cat > '{out}'", source=source, progress=progress)
    assert out.read_bytes() == source.read_bytes() and progress.done == 3_000_000
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"$ sh -c 'cat > '\"'\"'{out}'\"'\"'' < {source}"  # copy-pasteable, with the redirect
    assert err[-1].startswith("[3.0 MB/3.0 MB 100% ") and err[-1].endswith("s] copying")


def test_feed_reports_a_command_that_stops_reading_by_its_exit_code_and_message(tmp_path):
    source = tmp_path / "in"
    source.write_bytes(b"x" * 5_000_000)  # more than a pipe holds: the writer sees the pipe break
    with pytest.raises(CommandError) as err:
        Shell(verbose=False).feed("sh", "-c", "head -c 10 >/dev/null; echo 'bad archive' >&2; exit 2",
                                  source=source, progress=ui.Progress.bytes(5_000_000, "unpacking"))
    assert err.value.returncode == 2 and str(err.value).endswith("failed with exit code 2: bad archive")


def test_feed_says_a_missing_program_is_to_be_installed(tmp_path):
    source = tmp_path / "in"
    source.write_bytes(b"x")
    with pytest.raises(ui.UserError, match="`no-such-tar` is not installed or not on PATH"):
        Shell(verbose=False).feed("no-such-tar", source=source, progress=ui.Progress.bytes(1, "x"))


def test_start_runs_a_job_in_its_own_group_with_its_output_in_a_file_and_logs_it(tmp_path, capsys):
    out = tmp_path / "logs" / "job.log"
    proc = Shell(cwd=tmp_path).start("sh", "-c", 'echo "$FCA_X"; echo err >&2; ps -o pgid= -p $$',
                                     output=out, env={"FCA_X": "one"})
    assert proc.wait(timeout=60) == 0
    lines = out.read_text().split()
    assert lines[:2] == ["one", "err"]
    assert int(lines[2]) == proc.pid  # its own process group: kill_group stops it and its children
    (logged,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("$ ")]
    assert logged.startswith("$ FCA_X=one sh -c ")
    assert logged.endswith(f" > {out} 2>&1 &")


def test_start_keeps_the_users_locale_and_drops_what_it_is_told_to(tmp_path, monkeypatch):
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.setenv("FCA_DROP_ME", "1")
    out = tmp_path / "env.log"
    proc = Shell().start("sh", "-c", 'echo "lc_all=$LC_ALL drop=$FCA_DROP_ME lang=$LANG"', output=out,
                         unset=["FCA_DROP_ME"])
    assert proc.wait(timeout=60) == 0
    assert out.read_text().strip() == "lc_all= drop= lang=C.UTF-8"


def test_run_starts_the_executable_it_is_given_under_the_name_argv_names():
    proc = Shell(verbose=False).run("fca-named", "-c", 'echo "$0"', executable="/bin/sh")
    assert proc.stdout == "fca-named\n"


def test_call_passes_output_through_in_the_users_locale_and_returns_the_exit_code(monkeypatch, capfd):
    monkeypatch.setenv("LANG", "xx_XX.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    code = Shell(verbose=False).call("sh", "-c", 'echo "$LANG ${LC_ALL:-unset} $FCA_X"; exit 3', env={"FCA_X": "y"})
    assert code == 3 and capfd.readouterr().out == "xx_XX.UTF-8 unset y\n"


def test_spawn_talks_to_a_process_over_pipes_with_its_stderr_in_a_file_and_logs_it(tmp_path, capsys):
    with open(tmp_path / "err.log", "w+") as err:
        proc = Shell().spawn("sh", "-c", 'echo ready; echo chatter >&2; while read x; do echo "got $x $FCA_X"; done',
                             stderr=err, env={"FCA_X": "one"})
        assert proc.stdout.readline() == "ready\n"
        proc.stdin.write("a\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "got a one\n"
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        err.seek(0)
        assert err.read() == "chatter\n"
    (logged,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("$ ")]
    assert logged.startswith("$ FCA_X=one sh -c ") and logged.endswith(f" 2> {tmp_path / 'err.log'}")

