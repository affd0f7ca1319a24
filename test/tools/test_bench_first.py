"""tools/bench.py first: the medians, ratios and tables of tools/lib/bench/first_report.py, on hand-made
samples (no torch, nothing run)."""

from __future__ import annotations

import json

import pytest

from tools import bench
from tools.lib import paths
from tools.lib.bench import core, first as fd, first_report as fr
from tools.lib.shell import Shell


def _step(cpu, backend, capture=0.1, captures=1, compiles=1, batch=4, step_cpu=None):
    return {"batch": batch, "cpu": cpu, "wall": cpu * 2, "backend_cpu": backend, "backend_wall": backend * 2,
            "capture_cpu": capture, "capture_wall": capture * 2, "step_cpu": step_cpu or cpu + 0.5,
            "step_wall": (step_cpu or cpu + 0.5) * 2, "captures": captures, "compiles": compiles}


def _sample(side, turn, first, second=None, workload="mlp16", route="ca-compile", **kw):
    steps = [_step(*first, **kw), _step(*(second or first), batch=8, **kw)]
    return {"workload": workload, "route": route, "side": side, "turn": turn, "steps": steps, "peak_rss_mb": 500.0}


def _rows(lines):
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


@pytest.fixture
def samples():
    # per turn: (cpu, backend) of the first backward on each side
    got = []
    for turn, (s26, stack, dyn, s27) in enumerate([((2.0, 0.5), (1.2, 0.4), (1.1, 0.4), (1.0, 0.4)),
                                                       ((2.2, 0.5), (1.4, 0.5), (1.0, 0.4), (1.0, 0.4)),
                                                       ((2.1, 0.6), (1.3, 0.4), (1.2, 0.5), (1.3, 0.5))]):
        got += [_sample("2.6", turn, s26), _sample("stack", turn, stack), _sample("stack-dynamic-first", turn, dyn),
                _sample("2.7", turn, s27)]
    return got


def test_median_spread_and_rotation():
    assert fr.median_spread([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    assert fr.median_spread([1.0, 2.0]) == (1.5, 1.0, 2.0)
    with pytest.raises(ValueError):
        fr.median_spread([])
    order = ["a", "b", "c", "d"]
    assert [fr.rotated(order, t)[0] for t in range(5)] == ["a", "b", "c", "d", "a"]
    assert sorted(fr.rotated(order, 2)) == order


def test_own_time_is_the_total_less_the_backend():
    s = _sample("stack", 0, (1.2, 0.4))
    assert fr.step_value(s, 0, "own_cpu") == pytest.approx(0.8)
    assert fr.step_value(s, 0, "own_wall") == pytest.approx(1.6)
    assert fr.step_value(s, 5, "cpu") is None


def test_ratio_is_of_the_medians_with_the_per_turn_range(samples):
    med, lo, hi = fr.ratio(samples, "mlp16", "ca-compile", "stack", "2.7")
    assert med == pytest.approx(1.3 / 1.0)
    # per-turn: 1.2/1.0, 1.4/1.0, 1.3/1.3
    assert (lo, hi) == (pytest.approx(1.0), pytest.approx(1.4))
    own = fr.ratio(samples, "mlp16", "ca-compile", "stack", "2.7", key="own_cpu")
    assert own[0] == pytest.approx(0.9 / 0.6)  # stack own 0.8, 0.9, 0.9; 2.7 own 0.6, 0.6, 0.8
    assert fr.ratio(samples, "mlp16", "ca-compile", "stack", "missing") is None


def test_main_table_shows_medians_spreads_and_bolds_slower_than_2_7(samples):
    rows = _rows(fr.render_main(samples))
    assert rows == [["mlp16", "ca-compile", "2.100 (2.000-2.200)", "1.300 (1.200-1.400)", "1.100 (1.000-1.200)",
                     "1.000 (1.000-1.300)", "**1.30 (1.00-1.40)**", "**1.10 (0.92-1.10)**", "0.62 (0.60-0.64)"]]
    header = fr.render_main(samples)[0]
    assert "stack / 2.7" in header and "stack-dynamic-first / 2.7" in header and "stack / 2.6" in header


def test_a_failing_or_wrong_side_shows_why_and_has_no_ratio(samples):
    samples = [s for s in samples if s["side"] != "2.6"]
    samples.append({"workload": "mlp16", "route": "ca-compile", "side": "2.6", "turn": 0,
                    "error": "WrongGradients: compiled autograd's gradients differ from eager"})
    samples.append({"workload": "mlp16", "route": "config", "side": "2.7", "turn": 0,
                    "error": "AssertionError: fake mode | from tracing context"})
    samples.append(_sample("stack", 0, (1.0, 0.3), route="config"))
    rows = _rows(fr.render_main(samples))
    assert rows[0][2] == "wrong grads" and rows[0][-1] == "-"
    assert rows[1][1] == "config" and rows[1][5].startswith("fails: AssertionError: fake mode / from")
    assert rows[1][6] == "-"


def test_split_gives_own_with_capture_and_backend(samples):
    rows = _rows(fr.render_split(samples))
    assert rows[0][3] == "0.900 (0.100) / 0.400"  # stack: own 0.8, 1.0, 0.9; backend 0.4, 0.5, 0.4
    assert rows[0][5] == "0.600 (0.100) / 0.400"  # 2.7: own 0.6, 0.6, 0.8
    assert rows[0][6] == "**1.50 (1.12-1.50)**"  # per turn: 0.8/0.6, 0.9/0.6, 0.9/0.8
    assert rows[0][7] == "1.00 (0.80-1.25)"


def test_second_backward_and_counts():
    got = [_sample("stack", 0, (1.0, 0.3), (0.01, 0.0), captures=1, compiles=2),
           _sample("2.7", 0, (0.9, 0.3), (0.8, 0.3), captures=2, compiles=2)]
    got[1]["steps"][1]["captures"] = 2
    got[0]["steps"][1]["captures"] = 1
    rows = _rows(fr.render_second(got))
    assert rows[0][:6] == ["mlp16", "ca-compile", "0.010", "0.800", "0.01", "0.59"]  # (1.0 + 0.01) / (0.9 + 0.8)
    assert rows[0][6:] == ["1 / 2", "2 / 2"]
    assert fr.step_value(got[0], 0, "sum_cpu") == pytest.approx(1.01)


def test_counts_list_each_distinct_value():
    got = [_sample("2.6", t, (1.0, 0.3), captures=c) for t, c in enumerate((2, 2, 3))]
    assert fr.counts(got, "mlp16", "ca-compile", "2.6") == "2 / 1, 3 / 1"


def test_sweep_table():
    sweep = [_sample(side, 0, (1.0, 0.3), captures=c, compiles=c + 1, route=route)
             for route, side, c in (("ca-compile", "2.6", 3), ("ca-compile", "stack", 1), ("config", "2.6", 2),
                                    ("config", "stack", 1))]
    rows = _rows(fr.render_sweep(sweep))
    assert rows == [["ca-compile", "3 / 4", "1 / 2"], ["config", "2 / 3", "1 / 2"]]


def test_slower_than_2_7_says_by_how_much_and_whose_time(samples):
    lines = fr.slower_than_base(samples)
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("- mlp16, ca-compile: 1.30 (1.00-1.40)")
    assert "+300 ms" in line and "CA's own +300 ms" in line and "the backend +0 ms" in line
    assert fr.slower_than_base(samples, threshold=2.0) == []


def test_render_whole_report_and_json_round_trip(samples, tmp_path):
    sweep = [_sample("stack", 0, (1.0, 0.3), route="ca-compile")]
    data = {"meta": {"reps": 3, "backend": "aot_eager", "batches": [4, 8], "sweep_batches": [4, 8, 16, 32],
                     "command": "python tools/bench.py first"},
            "samples": samples, "sweep": sweep}
    text = fr.render(json.loads(json.dumps(data)))
    for heading in ("## First backward, CPU seconds", "## Where the stack's default first backward is slower",
                    "## CA's own time and the backend's", "## First backward, wall seconds", "## Second backward",
                    "## CA captures / Dynamo compiles, `mlp16` over batch sizes 4, 8, 16, 32"):
        assert heading in text
    assert "- mlp16, ca-compile: 1.30" in text
    assert "Peak RSS (max over samples): 2.6 500 MB" in text


def test_the_first_subcommand_renders_an_earlier_runs_json(samples, tmp_path):
    src = tmp_path / "run.json"
    src.write_text(json.dumps({"meta": {"reps": 3}, "samples": samples, "sweep": []}))
    out = tmp_path / "first.md"
    assert bench.main(["first", "--from-json", str(src), str(src), "-o", str(out)]) == 0
    assert "## First backward, CPU seconds" in out.read_text()


def test_unknown_workload_is_a_usage_error(tmp_path):
    from tools.lib import ui

    with pytest.raises(ui.UserError):
        bench.main(["first", "--workloads", "nope", "-o", str(tmp_path / "x.md")])


def test_the_stacks_worker_is_the_overlay_venvs_python_and_the_others_go_through_bench(monkeypatch, tmp_path):
    monkeypatch.setenv("FCA_CACHE_DIR", str(tmp_path))
    setup = core.Setup(paths.cache_dir(), Shell(verbose=False))
    argv = fd.worker_argv(setup, "overlay", "mlp16", "config")
    assert argv == [str(tmp_path / "overlay" / "venv" / "bin" / "python"), str(fd.WORKER), "mlp16", "config"]
    assert fd.worker_argv(setup, "torch27", "mlp16", "config")[0] == str(tmp_path / "venvs" / "torch27" / "bin" / "python")


def test_merge_puts_runs_together(samples):
    a = {"meta": {"reps": 3, "workloads": ["mlp16"], "routes": ["ca-compile"], "command": "A", "stack_wheel": "w"},
         "samples": samples[:4], "sweep": [samples[0]]}
    b = {"meta": {"reps": 3, "workloads": ["hf_bert"], "routes": ["config"], "command": "B", "stack_wheel": "w"},
         "samples": samples[4:], "sweep": []}
    m = fr.merge([a, b])
    assert m["meta"]["workloads"] == ["mlp16", "hf_bert"] and m["meta"]["routes"] == ["ca-compile", "config"]
    assert m["meta"]["command"] == "A`; `B" and m["meta"]["stack_wheel"] == "w" and m["meta"]["reps"] == 3
    assert len(m["samples"]) == len(samples) and len(m["sweep"]) == 1


def test_slower_over_both_backwards_sums_the_steps():
    got = [_sample("stack", 0, (1.0, 0.3), (0.9, 0.3)), _sample("2.7", 0, (1.2, 0.3), (0.5, 0.3))]
    assert fr.slower_than_base(got) == []  # the first: 1.0 vs 1.2
    (line,) = fr.slower_than_base(got, key="sum_cpu")  # both: 1.9 vs 1.7
    assert line.startswith("- mlp16, ca-compile: 1.12 (1.900 s vs 1.700 s, +200 ms: CA's own +200 ms")
    assert "the backend +0 ms" in line


def test_a_sample_failing_at_the_new_size_keeps_its_first_backward():
    ok = _sample("stack", 0, (1.0, 0.3), (0.5, 0.2))
    failed = _sample("2.7", 0, (0.8, 0.3))
    del failed["steps"][1]
    failed.update(error="RuntimeError: !has_symbolic_sizes_strides_ INTERNAL ASSERT FAILED", failed_step=1)
    got = [ok, failed]
    assert fr.values(got, "mlp16", "ca-compile", "2.7", 0, "cpu") == [0.8]
    assert fr.values(got, "mlp16", "ca-compile", "2.7", 1, "cpu") == []
    assert fr.step_value(failed, 0, "sum_cpu") is None  # no total of a sample that did not run every step
    main = _rows(fr.render_main(got))[0]
    assert main[2:5] == ["1.000", "0.800 *", "**1.25**"]
    second = _rows(fr.render_second(got))[0]
    assert second[3].startswith("fails: RuntimeError: !has_symbolic") and second[4] == "-"
    assert second[-1].startswith("fails: RuntimeError")
    text = fr.render({"samples": got})
    assert fr.LATER_FAILED in text


def test_wrong_gradients_at_the_first_step_leave_no_time():
    wrong = {"workload": "mlp16", "route": "ca-compile", "side": "2.6", "turn": 0, "steps": [],
             "error": "WrongGradients: differ", "failed_step": 0}
    got = [wrong, _sample("stack", 0, (1.0, 0.3))]
    assert _rows(fr.render_main(got))[0][2] == "wrong grads"
