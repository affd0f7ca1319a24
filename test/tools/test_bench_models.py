"""tools/bench.py models (tools/lib/bench/models.py): the harness command, its CSV, the report's verdicts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, run_tool
from tools.lib.bench import models as bm
from tools.lib.shell import Shell
from tools.lib.ui import UserError

CSV = (
    "dev,name,batch_size,accuracy,calls_captured,unique_graphs,graph_breaks,unique_graph_breaks,"
    "autograd_captures,autograd_compiles,cudagraph_skips\n"
    "cpu,lcnet_050,2,pass,755,2,5,4,1,1,0\n"
)
STOCK = bm.Side("stock 2.6", Path("/stock/python"), "2.6")
STACK = bm.Side("stack", Path("/stack/python"), "2.6")
SIDES = ["stock 2.6", "stack"]


def _o(model, side, verdict, captures=1):
    return bm.Outcome(model, "aot_eager", side, verdict, captures, captures, 10.0)


def test_the_harness_runs_training_accuracy_with_compiled_autograd_on_cpu_for_one_model():
    argv = bm.harness_argv(STACK, Path("/t/benchmarks/dynamo"), bm.find_model("lcnet_050"), "inductor", Path("/o.csv"))
    assert argv[:4] == ["/stack/python", str(bm.DRIVER), "/t/benchmarks/dynamo", "timm_models"]
    assert " ".join(argv[4:]) == ("--training --accuracy --device cpu --backend inductor --compiled-autograd "
                                  "--only lcnet_050 --batch-size 2 --output /o.csv")


def test_the_default_set_has_three_hf_and_three_timm_models():
    assert [m.suite for m in bm.MODELS].count("huggingface") == 3
    assert [m.suite for m in bm.MODELS].count("timm_models") == 3


def test_an_unknown_model_is_refused_with_the_choices():
    with pytest.raises(UserError, match="choose from DistilBertForMaskedLM"):
        bm.find_model("resnet9000")


def test_the_verdict_and_ca_counts_come_from_the_harness_csv():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "aot_eager", STACK, CSV, "", 0, 12.5, False)
    assert (o.verdict, o.captures, o.compiles, o.passed) == ("pass", 1, 1, True)


def test_a_harness_that_dies_before_its_csv_row_is_a_crash_with_its_last_exception_line():
    log = "Traceback (most recent call last):\n  File x\ntorch._dynamo.exc.TorchRuntimeError: Failed running call_function\n"
    o = bm.outcome_of(bm.find_model("lcnet_050"), "aot_eager", STACK, None, log, 1, 3.0, False)
    assert o.verdict == "crash (exit 1): torch._dynamo.exc.TorchRuntimeError: Failed running call_function"
    assert not o.passed and o.captures is None


def test_a_killed_run_is_a_timeout_not_a_crash():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "aot_eager", STACK, None, "", -9, 1800.0, True)
    assert o.verdict == "timeout"


def test_a_model_passing_on_stock_and_failing_on_the_stack_is_a_regression_and_misses_the_target():
    models = [bm.find_model("lcnet_050"), bm.find_model("regnety_002")]
    outcomes = [_o("lcnet_050", "stock 2.6", "pass"), _o("lcnet_050", "stack", "fail_accuracy"),
                _o("regnety_002", "stock 2.6", "pass"), _o("regnety_002", "stack", "pass")]
    report = bm.render(outcomes, models, ["aot_eager"], SIDES)
    assert "| aot_eager | 2/2 | 1/2 |" in report
    assert "aot_eager: the stack passes 1, the best peer 2: NOT met" in report
    assert "REGRESSION, passes on stock 2.6 but not on the stack: lcnet_050" in report


def test_the_stack_passing_where_stock_fails_meets_the_target_with_no_regression():
    models = [bm.find_model("lcnet_050")]
    outcomes = [_o("lcnet_050", "stock 2.6", "fail_accuracy"), _o("lcnet_050", "stack", "pass")]
    report = bm.render(outcomes, models, ["aot_eager"], SIDES)
    assert "the stack passes 1, the best peer 0: met" in report and "REGRESSION" not in report


def test_more_ca_captures_than_stock_are_named():
    models = [bm.find_model("lcnet_050")]
    outcomes = [_o("lcnet_050", "stock 2.6", "pass", 1), _o("lcnet_050", "stack", "pass", 2)]
    assert "CA captures above stock 2.6's: lcnet_050" in bm.render(outcomes, models, ["aot_eager"], SIDES)


def test_the_driver_refuses_an_unknown_suite_with_its_usage():
    res = subprocess.run([sys.executable, str(bm.DRIVER), "/x", "torchbench"], capture_output=True, text=True)
    assert res.returncode == 1 and "usage: models_driver.py HARNESS_DIR {huggingface,timm_models}" in res.stderr


def test_models_help_names_the_sides_and_backends():
    res = run_tool("bench", "models", "--help")
    assert res.returncode == 0 and "stock-2.7" in res.stdout and "inductor" in res.stdout


def test_an_unknown_model_on_the_command_line_exits_3():
    res = run_tool("bench", "models", "--models", "resnet9000", "--sides", "stack")
    assert res.returncode == 3 and "unknown model 'resnet9000'" in res.stderr


def test_saved_outcomes_render_again_and_a_later_file_replaces_a_cell(tmp_path):
    import dataclasses
    import json

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([dataclasses.asdict(_o("lcnet_050", "stack", "crash (exit 1): OSError: hub")),
                                 dataclasses.asdict(_o("lcnet_050", "stock 2.6", "pass"))]))
    second.write_text(json.dumps([dataclasses.asdict(_o("lcnet_050", "stack", "pass"))]))
    res = run_tool("bench", "models", "--from-outcomes", first, second)
    assert res.returncode == 0, res.stderr
    assert "| lcnet_050 (bs 2) | in-place hard-swish activations, depthwise convs | aot_eager | pass (1/1), 10 s | pass (1/1), 10 s |" in res.stdout
    assert "| aot_eager | 1/1 | 1/1 |" in res.stdout


PERF_CSV = (
    "dev,name,batch_size,speedup,abs_latency,compilation_latency,compression_ratio,eager_peak_mem,dynamo_peak_mem,"
    "calls_captured,unique_graphs,graph_breaks,unique_graph_breaks,autograd_captures,autograd_compiles,cudagraph_skips\n"
    "cpu,lcnet_050,2,1.254,31.5,42.75,0.9,0.1,0.1,755,2,5,4,1,1,0\n"
)


def _step(batch, captures, graphs, seq=None, error=None):
    return {"batch": batch, "seq": seq, "shape": [batch], "error": error, "ca_captures": captures,
            "ca_compiles": captures, "dynamo_graphs": graphs}


def test_performance_mode_runs_the_harness_performance_experiment_with_few_repeats():
    argv = bm.harness_argv(STACK, Path("/t"), bm.find_model("lcnet_050"), "inductor", Path("/o.csv"), "performance")
    assert " ".join(argv[4:8]) == f"--training --performance --repeat {bm.PERFORMANCE_REPEAT}"


def test_sizes_mode_gives_the_driver_three_batch_sizes_and_for_hf_a_short_sequence():
    argv = bm.harness_argv(STACK, Path("/t"), bm.find_model("DistilBertForMaskedLM"), "aot_eager", Path("/o.csv"), "sizes")
    assert argv[4:6] == ["--fca-sizes", "2,3,4,4:256"]
    assert argv[argv.index("--batch-size") + 1] == "2"
    assert bm.sizes_of(bm.find_model("lcnet_050")) == [(2, None), (3, None), (4, None)]


def test_sizes_dynamic_mode_adds_the_harness_dynamic_shapes_flag_to_the_same_steps():
    model = bm.find_model("T5Small")
    plain = bm.harness_argv(STACK, Path("/t"), model, "aot_eager", Path("/o.csv"), "sizes")
    dynamic = bm.harness_argv(STACK, Path("/t"), model, "aot_eager", Path("/o.csv"), "sizes-dynamic")
    assert plain[4:6] == dynamic[4:6] == ["--fca-sizes", "2,3,4,4:512"]
    assert "--dynamic-shapes" in dynamic and "--dynamic-shapes" not in plain


def test_speedup_and_compile_latency_come_from_the_harness_performance_csv():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "inductor", STACK, PERF_CSV, "", 0, 99.0, False, "performance")
    assert (o.verdict, o.speedup, o.compile_s, o.captures, o.passed) == ("ok", 1.254, 42.75, 1, True)


METRICS_CSV = (
    "dev,name,batch_size,_compile.compile_inner,compile_fx_inner,async_compile.wait\n"
    "cpu,lcnet_050,2,40.1,35.2,21.5\n"
)


def test_the_cpp_kernel_build_wait_comes_from_the_harness_compilation_metrics():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "inductor", STACK, PERF_CSV, "", 0, 99.0, False, "performance",
                      metrics_csv=METRICS_CSV)
    assert (o.compile_s, o.cpp_wait_s) == (42.75, 21.5)


def test_a_run_without_compilation_metrics_has_no_cpp_kernel_build_wait():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "inductor", STACK, PERF_CSV, "", 0, 99.0, False, "performance")
    assert o.cpp_wait_s is None


def test_a_performance_row_with_no_speedup_is_a_failure():
    csv_text = "dev,name,batch_size,speedup,abs_latency\ncpu,lcnet_050,2,0.0,0.0\n"
    log = "RuntimeError: boom\n"
    o = bm.outcome_of(bm.find_model("lcnet_050"), "inductor", STACK, csv_text, log, 0, 9.0, False, "performance")
    assert o.verdict == "fail: RuntimeError: boom" and not o.passed


def test_sizes_counts_come_from_the_last_step_and_a_failed_step_fails_the_cell():
    model = bm.find_model("lcnet_050")
    ok = bm.outcome_of(model, "aot_eager", STACK, None, "", 0, 9.0, False, "sizes", [_step(2, 1, 2), _step(3, 1, 3)])
    assert (ok.verdict, ok.captures, ok.passed) == ("ok", 1, True)
    bad = bm.outcome_of(model, "aot_eager", STACK, None, "", 0, 9.0, False, "sizes",
                        [_step(2, 1, 2), _step(3, 1, 3, error="RuntimeError: shape")])
    assert bad.verdict == "fail: RuntimeError: shape" and not bad.passed


def test_a_sizes_run_that_died_before_its_steps_is_a_crash():
    o = bm.outcome_of(bm.find_model("lcnet_050"), "aot_eager", STACK, None, "OSError: no\n", 1, 9.0, False, "sizes")
    assert o.verdict == "crash (exit 1): OSError: no"


def test_the_sizes_report_shows_the_counts_after_each_step_per_side():
    model = bm.find_model("lcnet_050")
    outcomes = [bm.Outcome("lcnet_050", "aot_eager", "stock 2.6", "ok", 2, 2, 9.0, mode="sizes",
                           steps=[_step(2, 1, 2), _step(3, 2, 4), _step(4, 2, 4)]),
                bm.Outcome("lcnet_050", "aot_eager", "stack", "ok", 1, 1, 9.0, mode="sizes",
                           steps=[_step(2, 1, 2), _step(3, 1, 3), _step(4, 1, 3)])]
    report = bm.render(outcomes, [model], ["aot_eager"], SIDES)
    assert ("| lcnet_050 (bs 2 → bs 3 → bs 4) | in-place hard-swish activations, depthwise convs | aot_eager | "
            "CA captures 1 → 2 → 2; Dynamo graphs 2 → 4 → 4 | CA captures 1 → 1 → 1; Dynamo graphs 2 → 3 → 3 |") in report
    assert "CA captures above stock 2.6's: none" in report


def test_a_compile_latency_above_2_7s_is_named():
    model = bm.find_model("lcnet_050")
    outcomes = [bm.Outcome("lcnet_050", "inductor", side, "ok", 1, 1, 9.0, mode="performance", speedup=1.1, compile_s=c)
                for side, c in (("stock 2.6", 40.0), ("stack", 41.0), ("stock 2.7", 39.0))]
    report = bm.render(outcomes, [model], ["inductor"], ["stock 2.6", "stack", "stock 2.7"])
    assert "| 1.10x, compile 40 s (1/1) | 1.10x, compile 41 s (1/1) | 1.10x, compile 39 s (1/1) |" in report
    assert "inductor: compile latency above 2.7's: lcnet_050" in report


def test_a_compile_latency_above_2_7s_only_in_the_cpp_kernel_builds_is_not_named_less_them():
    model = bm.find_model("lcnet_050")
    outcomes = [bm.Outcome("lcnet_050", "inductor", side, "ok", 1, 1, 9.0, mode="performance", speedup=1.1,
                           compile_s=c, cpp_wait_s=w)
                for side, c, w in (("stock 2.6", 46.0, 26.0), ("stack", 46.0, 26.0), ("stock 2.7", 40.0, 21.0))]
    report = bm.render(outcomes, [model], ["inductor"], ["stock 2.6", "stack", "stock 2.7"])
    assert "| 1.10x, compile 46 s (C++ 26 s) (1/1) | 1.10x, compile 46 s (C++ 26 s) (1/1) |" in report
    assert "inductor: compile latency above 2.7's: lcnet_050" in report
    assert "inductor: the same less the C++ kernel builds: lcnet_050" in report  # 20 s against 19 s
    outcomes[1] = dataclasses.replace(outcomes[1], compile_s=44.0)
    report = bm.render(outcomes, [model], ["inductor"], ["stock 2.6", "stack", "stock 2.7"])
    assert "inductor: the same less the C++ kernel builds: none" in report  # 18 s against 19 s


def test_each_mode_gets_its_own_section_and_outcomes_saved_before_modes_load_as_accuracy(tmp_path):
    import dataclasses
    import json

    old = dataclasses.asdict(_o("lcnet_050", "stack", "pass"))
    del old["mode"], old["speedup"], old["compile_s"], old["steps"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps([old]))
    (loaded,) = bm.load_outcomes([path])
    assert loaded.mode == "accuracy"
    perf = bm.Outcome("lcnet_050", "aot_eager", "stack", "ok", 1, 1, 9.0, mode="performance", speedup=1.0, compile_s=5.0)
    report = bm.render([loaded, perf], [bm.find_model("lcnet_050")], ["aot_eager"], ["stack"])
    assert report.index("### Accuracy") < report.index("### Performance") and "### Sizes" not in report


def _cap(step, seconds, error=None):
    return {"step": step, "error": error, "capture_s": None if error else seconds, "ca_captures": step + 1}


def test_capture_mode_gives_the_driver_its_steps_at_the_model_batch_size():
    argv = bm.harness_argv(STACK, Path("/t"), bm.find_model("DistillGPT2"), "aot_eager", Path("/o.csv"), "capture")
    assert argv[4:8] == ["--fca-capture", str(bm.CAPTURE_STEPS), "--training", "--performance"]
    assert argv[argv.index("--batch-size") + 1] == "2"


def test_capture_cell_shows_the_first_capture_and_the_median_of_the_repeated_ones():
    steps = [_cap(0, 0.5), _cap(1, 0.25), _cap(2, 0.21), _cap(3, 0.3)]
    o = bm.outcome_of(bm.find_model("DistillGPT2"), "aot_eager", STACK, None, "", 0, 9.0, False, "capture", steps)
    assert (o.verdict, o.captures, o.passed, o.first_capture_s) == ("ok", 4, True, 0.5)
    assert bm._cell(o) == "first 500 ms; repeated 250 ms (210-300) (4 captures)"


def test_a_failed_capture_step_fails_the_cell():
    steps = [_cap(0, 0.5), _cap(1, 0, error="RuntimeError: boom")]
    o = bm.outcome_of(bm.find_model("DistillGPT2"), "aot_eager", STACK, None, "", 0, 9.0, False, "capture", steps)
    assert o.verdict == "fail: RuntimeError: boom" and not o.passed
    assert bm._cell(o).endswith("first 500 ms; repeated - (2 captures)")


def test_a_capture_above_2_7s_is_named_first_and_repeated_apart():
    model = bm.find_model("DistillGPT2")
    outcomes = [bm.Outcome("DistillGPT2", "aot_eager", side, "ok", 3, None, 9.0, mode="capture",
                           steps=[_cap(0, first), _cap(1, rep), _cap(2, rep)])
                for side, first, rep in (("stock 2.6", 2.0, 1.0), ("stack", 0.5, 0.2), ("stock 2.7", 0.4, 0.3))]
    report = bm.render(outcomes, [model], ["aot_eager"], ["stock 2.6", "stack", "stock 2.7"])
    assert "### Capture" in report
    assert "- aot_eager: first capture above 2.7's: DistillGPT2 (target: none)" in report
    assert "- aot_eager: repeated capture (median) above 2.7's: none (target: none)" in report
    assert "CA captures above stock 2.6's" not in report  # every step captures, on purpose


def test_the_driver_refuses_a_capture_without_a_number_of_steps():
    res = subprocess.run([sys.executable, str(bm.DRIVER), "/x", "timm_models", "--fca-capture", "x"],
                         capture_output=True, text=True, env={"FCA_SIZES_OUT": "/tmp/x.json"})
    assert res.returncode == 1 and "--fca-capture needs a number of steps" in res.stderr


def test_the_driver_refuses_malformed_sizes_with_their_form():
    res = subprocess.run([sys.executable, str(bm.DRIVER), "/x", "timm_models", "--fca-sizes", "2,x"],
                         capture_output=True, text=True, env={"FCA_SIZES_OUT": "/tmp/x.json"})
    assert res.returncode == 1 and "--fca-sizes takes B[:S],B[:S],..." in res.stderr


def test_a_file_that_is_not_saved_outcomes_exits_3(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    res = run_tool("bench", "models", "--from-outcomes", bad)
    assert res.returncode == 3 and "not an outcomes.json of bench.py models" in res.stderr


def _models_on_the_stack(tmp_path, *args, timeout=HANG_TIMEOUT, sides=("stack",)):
    """``bench.py models --sides SIDES ARGS``, run for real: (its result, its outcomes.json)."""
    import json

    out = tmp_path / "models"
    res = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "bench.py"), "models", "--sides", *sides,
                          *args, "--out", str(out), "--timeout", "1200"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res, json.loads((out / "outcomes.json").read_text())


def test_real_models_pass_the_harness_accuracy_check_on_the_stack_in_one_capture(overlay, tmp_path):
    # The pinned tree's benchmarks/dynamo harness, unchanged, on the stack: a timm convnet with
    # in-place activations and an HF BERT-class encoder, training, compiled autograd (aot_eager).
    out = tmp_path / "models"
    res, outcomes = _models_on_the_stack(tmp_path, "--models", "lcnet_050", "DistilBertForMaskedLM", timeout=HANG_TIMEOUT)
    outcomes = {o["model"]: o for o in outcomes}
    for name in ("lcnet_050", "DistilBertForMaskedLM"):
        o = outcomes[name]
        assert (o["verdict"], o["captures"]) == ("pass", 1), (name, o["verdict"], (out / "stack" / f"{name}-aot_eager" / "harness.log").read_text()[-3000:])
    assert "| aot_eager | 2/2 |" in res.stdout


def test_new_batch_sizes_capture_no_more_often_on_the_stack_than_on_stock(overlay, tmp_path):
    # The harness's timm convnet, one process, training steps at batch 2, 3 and 4, the forward
    # compiled, the backward under compiled autograd, stock 2.6 and the stack side by side: at the
    # static first capture (the default) no size costs the stack a capture that stock does not pay.
    _, outcomes = _models_on_the_stack(tmp_path, "--models", "lcnet_050", "--modes", "sizes", sides=("stock-2.6", "stack"))
    counts = {}
    for o in outcomes:
        steps = o["steps"]
        assert o["verdict"] == "ok" and [s["shape"][0] for s in steps] == [2, 3, 4], (o["side"], o["verdict"], steps)
        counts[o["side"]] = [s["ca_captures"] for s in steps]
    assert counts["stack"][0] == 1 and all(a <= b for a, b in zip(counts["stack"], counts["stock 2.6"])), counts


def test_every_backward_of_a_real_model_is_captured_anew_and_timed_on_the_stack(overlay, tmp_path):
    # The harness's timm convnet, one process, CAPTURE_STEPS training steps, the capture cache
    # cleared before each after the first: each step captures once more, and its capture is timed.
    res, (o,) = _models_on_the_stack(tmp_path, "--models", "lcnet_050", "--modes", "capture")
    steps = o["steps"]
    assert o["verdict"] == "ok", (o["verdict"], steps)
    assert [s["ca_captures"] for s in steps] == list(range(1, bm.CAPTURE_STEPS + 1)), steps
    assert all(0 < s["capture_s"] < 60 for s in steps), steps
    assert "| lcnet_050 (bs 2) |" in res.stdout and "repeated" in res.stdout


def test_packages_installed_from_the_same_pins_in_another_checkout_are_not_installed_again(tmp_path):
    # the stamp records a requirements file's content, not its path: a CI clone's
    # tools/requirements/models.txt is the same install as this checkout's
    first, second = tmp_path / "a" / "models.txt", tmp_path / "b" / "models.txt"
    for f in (first, second):
        f.parent.mkdir()
        f.write_text("timm==1.0.15\n")
    calls = tmp_path / "calls"
    pip = tmp_path / "python"  # stands in for `python -m pip install --target DIR ...`: makes DIR
    pip.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nwhile [ "$1" != --target ]; do shift; done; mkdir -p "$2"\n')
    pip.chmod(0o755)
    target = tmp_path / "site"
    bm.pip_target(pip, target, ["-r", str(first)], "the packages", Shell(verbose=False))
    bm.pip_target(pip, target, ["-r", str(second)], "the packages", Shell(verbose=False))
    assert len(calls.read_text().splitlines()) == 1
    second.write_text("timm==1.0.16\n")
    bm.pip_target(pip, target, ["-r", str(second)], "the packages", Shell(verbose=False))
    assert len(calls.read_text().splitlines()) == 2


def test_transformers_programs_give_eager_grads_on_the_stack(overlay):
    # examples/transformers_programs.py on the overlay venv, transformers from the harness's packages:
    # tiny Llama (eager, SDPA checkpointed, compiled), Mistral, GPT-2 checkpointed, BERT checkpointed
    # and compiled, BART, T5 compiled, Qwen2-MoE, ViT-MAE, two sequence lengths each
    from test_build_wheel import clean_env, program_verdicts
    from tools.lib import paths

    venv = paths.cache_dir() / "overlay" / "venv"
    pythonpath = bm.ensure_packages(paths.cache_dir(), bm.Side("stack", venv / "bin" / "python", "2.6"),
                                    Shell(verbose=False))
    lines = program_verdicts(venv, "transformers_programs.py", 10, env=clean_env(PYTHONPATH=pythonpath))
    # the first backward captures, the second (a new length, grads to accumulate into) once more
    assert set(lines.values()) == {"ok captures=2"}, lines
