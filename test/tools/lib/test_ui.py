"""tools/lib/ui.py: progress lines for items and for bytes."""

from __future__ import annotations

import re
import threading
import time

import pytest

from tools.lib import ui


@pytest.fixture(autouse=True)
def _not_quiet(monkeypatch):
    monkeypatch.setattr(ui, "_QUIET", False)


def _lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_fmt_bytes_uses_decimal_units_like_apt_and_pip():
    assert [ui.fmt_bytes(n) for n in (999, 27_212_640, 3_500_000_000)] == ["999 B", "27.2 MB", "3.5 GB"]


def test_item_progress_keeps_its_format(capsys):
    progress = ui.Progress(2, "compile")
    progress.advance("a.cpp")
    progress.advance("b.cpp")
    assert [re.sub(r" \d+\.\ds\]", " Ts]", l) for l in _lines(capsys)] == ["[1/2 Ts] compile: a.cpp", "[2/2 Ts] compile: b.cpp"]


def test_byte_progress_shows_done_total_percent_and_time_at_most_every_interval(capsys):
    progress = ui.Progress.bytes(27_212_640, "unpacking x.tar.xz", every=60)
    for done in (1_000_000, 2_000_000, 13_606_320):
        progress.update(done)  # only the first one: the others come within the interval
    progress.update(27_212_640, force=True)
    assert _lines(capsys) == ["[1.0 MB/27.2 MB 3% 0.0s] unpacking x.tar.xz", "[27.2 MB/27.2 MB 100% 0.0s] unpacking x.tar.xz"]


def test_watch_growth_reports_a_file_another_writer_fills(tmp_path, capsys):
    target = tmp_path / "download"

    def writer() -> None:
        with open(target, "wb") as f:
            for _ in range(4):
                f.write(b"x" * 250_000)
                f.flush()
                time.sleep(0.3)

    with ui.watch_growth(target, 1_000_000, "downloading download", every=0.2):
        thread = threading.Thread(target=writer)
        thread.start()
        thread.join()
    lines = _lines(capsys)
    assert lines[-1].startswith("[1.0 MB/1.0 MB 100% ") and lines[-1].endswith("s] downloading download")
    partial = [l for l in lines[:-1] if re.fullmatch(r"\[(\d+\.\d kB|\d+ B)/1\.0 MB \d{1,2}% \d+\.\ds\] downloading download", l)]
    assert partial, lines  # it said how far it was while the writer was still writing
