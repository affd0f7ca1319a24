"""tools/lib/ui.py: progress lines for items and for bytes."""

from __future__ import annotations

import re
import threading

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


class FakeClock:
    """A monotonic clock the test moves by hand: elapsed times do not depend on the machine's load."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_byte_progress_shows_done_total_percent_and_time_at_most_every_interval(capsys):
    clock = FakeClock()
    progress = ui.Progress.bytes(27_212_640, "unpacking x.tar.xz", every=60, clock=clock)
    clock.now += 1.25
    for done in (1_000_000, 2_000_000, 13_606_320):
        progress.update(done)  # only the first one: the others come within the interval
        clock.now += 20
    progress.update(20_000_000)  # 60 s after the first line: shown
    progress.update(27_212_640, force=True)
    assert _lines(capsys) == [
        "[1.0 MB/27.2 MB 3% 1.2s] unpacking x.tar.xz",
        "[20.0 MB/27.2 MB 73% 1m01s] unpacking x.tar.xz",
        "[27.2 MB/27.2 MB 100% 1m01s] unpacking x.tar.xz",
    ]


def test_watch_growth_reports_a_file_another_writer_fills(tmp_path, capsys):
    target = tmp_path / "download"
    with ui.watch_growth(target, 1_000_000, "downloading download", every=0.05) as progress:
        seen: list[int] = []
        polled = threading.Condition()
        update = progress.update

        def recording_update(done: int, *args, **kwargs) -> None:
            update(done, *args, **kwargs)
            with polled:
                seen.append(done)
                polled.notify_all()

        progress.update = recording_update  # the watcher's thread calls it through the attribute
        with open(target, "wb") as f:
            for i in range(1, 5):
                f.write(b"x" * 250_000)
                f.flush()
                with polled:  # the watcher saw this much before the writer goes on, however slow the machine
                    assert polled.wait_for(lambda: seen and seen[-1] == 250_000 * i, timeout=60), seen
    lines = _lines(capsys)
    assert lines[-1].startswith("[1.0 MB/1.0 MB 100% ") and lines[-1].endswith("s] downloading download")
    partial = [l for l in lines[:-1] if re.fullmatch(r"\[(\d+\.\d kB|\d+ B)/1\.0 MB \d{1,2}% \d+\.\ds\] downloading download", l)]
    assert partial, lines  # it said how far it was while the writer was still writing
