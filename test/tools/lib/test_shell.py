"""tools/lib/shell.py: feeding a file to a command with progress."""

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
