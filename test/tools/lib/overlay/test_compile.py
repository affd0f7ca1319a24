"""tools/lib/overlay/compile.py and checks.py: a compile or link step's log, the ABI report's record."""

from __future__ import annotations

from tools.lib import ui
from tools.lib.overlay import checks, compile as cc


def test_a_step_runs_quietly_with_its_command_line_and_output_in_its_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ui, "_QUIET", False)
    monkeypatch.setenv("LD_PRELOAD", "libprofiler.so")
    log = tmp_path / "step.log"
    proc = cc.run_logged(["sh", "-c", 'echo "out [$LD_PRELOAD]"; echo err >&2; exit 2'], log)
    assert proc.returncode == 2
    assert log.read_text() == "$ sh -c 'echo \"out [$LD_PRELOAD]\"; echo err >&2; exit 2'\nout []\nerr\n"
    assert capsys.readouterr().err == ""  # the console shows progress, not command lines


def test_the_abi_report_records_its_lines_or_that_no_header_changed():
    assert checks.AbiReport().as_json() == "no header changed"
    assert checks.AbiReport(("a.h: additive",)).as_json() == ["a.h: additive"]
