"""tools/bench.py and tools/lib/bench/: the report's pieces that are not measurements (targets, the one-patch
edit), the workers' protocol, the overlay built first, ``--resume``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, run_tool
from tools.lib import paths, ui
from tools.lib.bench import ca, core, memory, report, sizes, workloads
from tools.lib.bench.stack import edit_one_patch
from tools.lib.shell import Shell


def _setup() -> core.Setup:
    """What a benchmark run works in, as tools/bench.py makes it (the cache of $FCA_CACHE_DIR)."""
    return core.Setup(paths.cache_dir(), Shell(verbose=False))


def _samples(**cells):
    # cells: mode__key=(stock, overlay), the mode's first "-" written "_"; None for a failing venv
    samples = {}
    for name, (stock, overlay) in cells.items():
        mode, key = name.split("__")
        for workload in ("mlp",):
            for kind, value in (("stock", stock), ("overlay", overlay)):
                samples[(workload, mode.replace("_", "-", 1), kind)] = (
                    [{"error": "WrongGradients: differ from eager"}] if value is None else [{key: value}, {key: value}]
                )
    return samples


def _rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_targets_judge_capture_ratio_stride_recaptures_and_steady_state():
    samples = _samples(capture__seconds=(0.40, 0.30), recompiles__captures_stride=(1, 1),
                       instructions_steady__instructions=(3.0e6, 3.06e6))
    rows = _rows(report.render_targets(samples, ["mlp"], ["capture", "recompiles", "instructions-steady"]))
    assert [(r[0].split(":")[0], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("repeated CA capture", "0.4000", "0.3000", "0.75", "yes"),
        ("CA captures for stride/offset-only changes", "1", "1", "+0", "yes"),
        ("steady-state backward, aot_eager, instructions per backward", "3.000M", "3.060M", "1.020", "yes"),
    ]


def test_targets_say_no_when_the_overlay_is_slower_or_recaptures_more():
    samples = _samples(capture__seconds=(0.40, 0.48), recompiles__captures_stride=(1, 2),
                       instructions_steady__instructions=(3.0e6, 3.3e6))
    rows = _rows(report.render_targets(samples, ["mlp"], ["capture", "recompiles", "instructions-steady"]))
    assert [r[5] for r in rows] == ["**no**", "**no**", "**no**"]
    assert rows[0][4] == "1.20" and rows[1][4] == "+1" and rows[2][4] == "1.100"


def test_a_steady_state_more_than_3_percent_below_stock_is_a_miss_too():
    """"Within 3% of stock" either way: the same aten graph runs on both sides, so a count far
    below stock's says the two sides did not do the same work."""
    samples = _samples(instructions_steady__instructions=(3.0e6, 2.88e6))
    assert _rows(report.render_targets(samples, ["mlp"], ["instructions-steady"]))[0][4:] == ["0.960", "**no**"]


def test_the_steady_state_is_judged_by_its_instruction_count_and_its_time_is_a_metric(tmp_path):
    """Its paired-time median moved 0.03-0.04 between runs here, as much as the tolerance."""
    samples = _samples(steady__seconds=(0.010, 0.020), instructions_steady__instructions=(3.0e6, 3.0e6))
    modes = ["steady", "instructions-steady"]
    assert [r[4:] for r in _rows(report.render_targets(samples, ["mlp"], modes))] == [["1.000", "yes"]]
    table = ca.render_ca_table(samples, ["mlp"], modes, 1, tmp_path)
    assert "| mlp | steady-state backward (s) | 0.010 | 0.020 | 2.00 |" in table
    assert "| mlp | steady-state backward, aot_eager (instructions per backward, 40 counted) | 3.000M | 3.000M | 1.000 |" in table


def test_a_workload_failing_on_stock_is_not_judged_not_counted_as_a_number():
    samples = _samples(capture__seconds=(None, 0.30))
    row = _rows(report.render_targets(samples, ["mlp"], ["capture"]))[0]
    assert row[0].startswith("repeated CA capture")
    assert row[2] == "-" and row[3] == "0.3000"
    assert row[5] == "not judged: fails on stock (WrongGradients)"


def test_a_metric_no_worker_measured_is_left_out():
    # the instruction modes were asked for but never sampled: no rows for them
    samples = _samples(capture__seconds=(0.4, 0.3))
    rows = _rows(report.render_targets(samples, ["mlp"], ["capture", "instructions-capture", "instructions-aot_eager"]))
    assert [r[0].split(":")[0] for r in rows] == ["repeated CA capture"]


def test_one_shot_regions_are_judged_by_their_instruction_counts_not_their_times(tmp_path):
    """A first capture or first backward happens once per process; its time is 3 one-shot samples
    that spread 10-40%, so the target reads the instruction count of the same region."""
    samples = _samples(first_aot_eager__seconds=(0.50, 0.60), instructions_aot_eager__instructions=(1.2e9, 1.08e9),
                       instructions_capture__instructions=(1.0e8, 1.1e8))
    rows = _rows(report.render_targets(samples, ["mlp"], ["first-aot_eager", "instructions-capture", "instructions-aot_eager"]))
    assert [(r[0].split(":")[0], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("first CA capture in a fresh process, instructions", "100.0M", "110.0M", "1.100", "**no**"),
        ("first backward (capture + compile), aot_eager, instructions", "1200.0M", "1080.0M", "0.900", "yes"),
    ]
    table = ca.render_ca_table(samples, ["mlp"], ["first-aot_eager", "instructions-aot_eager"], 1, tmp_path)
    assert "| mlp | first backward, aot_eager (s) | 0.500 | 0.600 | 1.20 |" in table
    assert "| mlp | first backward, aot_eager (instructions) | 1200.0M | 1080.0M | 0.900 |" in table


def test_one_patch_edit_changes_one_added_line_of_the_last_patch(tmp_path):
    stack = shutil.copytree(paths.DEFAULT_STACK_DIR, tmp_path / "stack")
    series = (stack / "series").read_text().split()
    before = {p: (stack / p).read_text() for p in series}
    edit_one_patch(stack)
    changed = [p for p in series if (stack / p).read_text() != before[p]]
    assert changed == [series[-1]]
    old, new = before[series[-1]].split("\n"), (stack / series[-1]).read_text().split("\n")
    diff = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(old) == len(new) and len(diff) == 1
    assert diff[0][0].startswith("+") and diff[0][1] == diff[0][0] + " (bench edit)"


def test_the_edited_stack_applies_and_only_the_last_patch_is_reapplied(pin_clone, tmp_path):
    repo = pin_clone()
    stack = shutil.copytree(paths.DEFAULT_STACK_DIR, tmp_path / "stack")
    assert run_tool("apply_patches", "--torch-src", repo, "--stack", stack, "-q").returncode == 0
    edit_one_patch(stack)
    res = run_tool("apply_patches", "--torch-src", repo, "--stack", stack)
    assert res.returncode == 0, res.stderr
    assert "applied 1 patch(es)" in res.stdout
    log = subprocess.run(["git", "log", "-1", "-p"], cwd=repo, capture_output=True, text=True).stdout
    assert "(bench edit)" in log


def _worker_module(name: str):
    """A worker script of tools/workers/ imported by path (it imports torch only when it runs)."""
    import importlib.util
    import sys

    sys.path.insert(0, str(core.WORKERS))  # a worker imports its neighbours by name
    try:
        spec = importlib.util.spec_from_file_location(f"fca_worker_{name}", core.WORKERS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(core.WORKERS))


def test_the_names_the_tooling_offers_are_the_workers_own():
    """The tooling does not import the workers (they run inside a torch venv): its copies of their
    workload and program names must be theirs."""
    workers = _worker_module("bench_workloads")
    assert workloads.WORKLOADS == tuple(workers.WORKLOADS) and workloads.SEQ_WORKLOADS == workers.SEQ_WORKLOADS
    assert memory.PROGRAMS == _worker_module("bench_memory").PROGRAMS


def test_report_help_names_its_parts():
    res = run_tool("bench", "report", "--help")
    assert res.returncode == 0
    for flag in ("--reps", "--stack-reps", "--overlay-reps", "--out"):
        assert flag in res.stdout


def test_paired_samples_are_judged_by_the_median_of_their_per_pair_ratios():
    samples = _samples(capture__seconds=(0.40, 0.30))  # the ratio of the medians would be 0.75
    samples[("mlp", "capture", "pairs")] = [{"seconds": r} for r in (1.10, 1.02, 0.98, 1.04, 1.20)]
    row = _rows(report.render_targets(samples, ["mlp"], ["capture"]))[0]
    assert row[4].startswith("1.04 (5 pairs, IQR")
    assert row[5] == "**no**"


def test_paired_workers_sample_stock_and_overlay_in_turns(overlay, stock_python, tmp_path):
    """The real protocol: two --serve workers, set up one after the other, then one sample each per pair."""
    envs = {k: {"TORCH_EXTENSIONS_DIR": str(tmp_path / k)} for k in ("stock", "overlay")}
    summaries, ratios = ca.paired_sample(_setup(), "mlp", "capture", 3, "overlay", envs)
    assert set(summaries) == {"stock", "overlay"}
    for summary in summaries.values():
        assert len(summary["samples"]) == 3 and summary["captures"] == 1
        assert summary["first_seconds"] > 0 and summary["peak_rss_mb"] > 0
    assert ratios == [o / s for s, o in zip(summaries["stock"]["samples"], summaries["overlay"]["samples"])]


def test_a_worker_failing_at_setup_is_reported_and_the_other_is_not_paired(overlay, stock_python, tmp_path):
    envs = {k: {} for k in ("stock", "overlay")}
    summaries, ratios = ca.paired_sample(_setup(), "twotensor", "capture", 2, "stock", envs)
    assert ratios == []
    assert list(summaries) == ["stock"] and summaries["stock"]["error"]


def test_the_ca_table_comes_with_a_png_plot_of_stock_and_overlay(tmp_path):
    samples = _samples(capture__seconds=(0.40, 0.30), steady__seconds=(0.010, 0.0102))
    table = ca.render_ca_table(samples, ["mlp"], ["capture", "steady"], 2, tmp_path)
    assert "| mlp | CA capture, repeated (s) | 0.400 | 0.300 | 0.75 |" in table
    assert (tmp_path / "ca.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_overlay_worker_runs_as_overlay_py_run_would_run_it(tmp_path, monkeypatch):
    """The overlay worker runs with the overlay venv's python in the environment `overlay.py run`
    gives a command: the venv first on PATH, and C++ extensions in a dir per stack, since torch's
    JIT loader does not rebuild an extension when the torch headers change.  The stock worker
    keeps its own extensions dir."""
    from tools.lib.overlay import build as ob

    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    setup = core.Setup(cache=tmp_path, sh=Shell(verbose=False))
    setup.overlay_dir.mkdir()
    (setup.overlay_dir / ob.STAMP_JSON).write_text(json.dumps({"stack": "0123abcd"}))
    env = workloads.worker_env(setup, "overlay", 0, tmp_path)
    assert env["TORCH_EXTENSIONS_DIR"] == str(setup.overlay_dir / "state" / "torch_extensions" / "0123abcd")
    assert env["PATH"].split(os.pathsep)[0] == str(setup.overlay_dir / "venv" / "bin")
    assert core.in_venv(setup, "overlay", Path("w.py"), "a")[0] == str(setup.overlay_dir / "venv" / "bin" / "python")
    stock = workloads.worker_env(setup, "stock", 0, tmp_path)["TORCH_EXTENSIONS_DIR"]
    assert Path(stock).parts[-3:] == ("bench", "stock", "extensions")


def test_a_first_backward_that_computes_wrong_gradients_is_an_error_not_a_time(overlay, stock_python, tmp_path):
    """Stock 2.6's compiled autograd computes wrong gradients for in-place updates of views
    (CopySlices; its compiled graph loses the in-place copy), so its first-backward time is not a
    baseline; the overlay's first backward is checked against eager the same way and passes."""
    env = {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    stock = workloads.ca_sample(_setup(), "stock", "copyslices", "first-aot_eager", env)
    assert stock.get("error", "").startswith("WrongGradients: the first backward's gradients differ from eager"), stock
    assert "seconds" not in stock
    ov = workloads.ca_sample(_setup(), "overlay", "copyslices", "first-aot_eager", env)
    assert "error" not in ov and ov["seconds"] > 0, ov


CAPTURE_MLP_THEN_CHECK_AS_CPP_FUNCTION = r"""
import sys
sys.path.insert(0, sys.argv[1])
import bench_workloads as bw
torch, ca, counters, params, make_loss = bw._setup("mlp")
check = bw._graph_check("cpp_function", ca)
if check is None:
    print("no check")
    sys.exit(0)
try:
    bw._one_capture(torch, ca, counters, make_loss, check)
except bw.StaleExtension as err:
    print("stale:", err)
"""


def test_a_capture_without_an_opaque_cpp_node_op_is_refused_as_a_stale_extension_on_the_overlay(overlay, stock_python, tmp_path):
    """The cpp_function workload checks its first graph: on the overlay a C++ Function must be one
    CppNode_* op (an MLP graph has none, so it stands for an extension built against stale headers);
    stock traces the Function inline, so there is nothing to check."""
    script = tmp_path / "check.py"
    script.write_text(CAPTURE_MLP_THEN_CHECK_AS_CPP_FUNCTION)
    lib = str(paths.TOOLS_DIR / "workers")
    ov = subprocess.run([str(paths.cache_dir() / "overlay" / "venv" / "bin" / "python"), str(script), lib],
                        capture_output=True, text=True, timeout=HANG_TIMEOUT)
    assert ov.stdout.startswith("stale: the C++ Function was traced inline"), ov.stdout + ov.stderr[-2000:]
    stock = subprocess.run([stock_python, str(script), lib],
                           capture_output=True, text=True, timeout=HANG_TIMEOUT)
    assert stock.stdout.strip() == "no check", stock.stdout + stock.stderr[-2000:]


def test_the_benchmark_applies_the_stack_and_builds_the_overlay_when_it_is_not_up_to_date(monkeypatch, tmp_path):
    """From a fresh clone `report` needs no other command: a stale or missing overlay is built first, by
    the library calls `apply_patches.py` and `overlay.py build` make (the real build is the `overlay`
    fixture's; here only the order and the error are checked)."""
    from tools.lib import apply, pinned_source
    from tools.lib.overlay import build as ob

    ran = []
    monkeypatch.setattr(pinned_source, "ensure_pinned_source", lambda cache, sh: ran.append(("pin", cache)) or tmp_path / "src")
    monkeypatch.setattr(apply, "apply_stack", lambda tree, stack, sh: ran.append(("apply", tree)) or "applied")

    def build(opts):
        ran.append(("build", opts.torch_src, opts.overlay_dir))
        raise ui.OperationFailed("the link failed")

    monkeypatch.setattr(ob, "build", build)
    setup = core.Setup(tmp_path / "cache", Shell(verbose=False))  # a cache dir with no overlay built in it
    with pytest.raises(ui.OperationFailed, match="the link failed"):
        core.ensure_overlay(setup)
    assert ran == [("pin", tmp_path / "cache"), ("apply", tmp_path / "src"),
                   ("build", tmp_path / "src", tmp_path / "cache" / "overlay")]


def test_an_up_to_date_overlay_is_used_as_it_is(overlay, monkeypatch):
    from tools.lib.overlay import build as ob

    monkeypatch.setattr(ob, "build", lambda *a, **kw: pytest.fail("nothing to build"))
    core.ensure_overlay(_setup())


def _worker_result(argv: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=HANG_TIMEOUT)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-2000:]
    return json.loads(lines[-1])


def test_the_overlay_venvs_own_python_runs_the_stacks_cpp_as_valgrind_starts_it(overlay, stock_python, tmp_path):
    """The instruction modes start the overlay venv's python directly (under valgrind, no wrapper):
    its torch is the patched wheel, so compiled autograd's C++ is the stack's; stock's is not."""
    from tools.lib.overlay.venv import venv_python

    python = venv_python(paths.cache_dir() / "overlay" / "venv")
    assert python.is_symlink()
    argv = [str(python), str(workloads.WORKER), "mlp", "capture"]
    env = {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    result = _worker_result(argv, env)
    assert result["patched_cxx"] is True and "seconds" in result
    stock = _worker_result([stock_python, *argv[1:]], env)
    assert stock["patched_cxx"] is False


def test_an_overlay_count_taken_on_stock_cpp_is_an_error_not_a_number(tmp_path):
    """Were the library not in effect, the count would be stock C++ under the overlay's name."""
    (tmp_path / "callgrind.out.1").write_text("totals: 1000\n")
    worker = {"workload": "mlp", "seconds": 9.0, "patched_cxx": False}
    assert workloads.instructions_result("overlay", worker, tmp_path / "callgrind.out")["error"].startswith("OverlayNotLoaded")
    assert workloads.instructions_result("stock", worker, tmp_path / "callgrind.out") == {"instructions": 1000}
    assert workloads.instructions_result("overlay", {**worker, "patched_cxx": True}, tmp_path / "callgrind.out") == {"instructions": 1000}
    assert workloads.instructions_result("stock", {"error": "WrongGradients: x"}, tmp_path / "callgrind.out") == {"error": "WrongGradients: x"}


def test_a_count_of_several_regions_is_given_per_region(tmp_path):
    (tmp_path / "callgrind.out.1").write_text("totals: 1000\n")
    worker = {"workload": "mlp", "seconds": 0.01, "patched_cxx": True, "regions": 40}
    assert workloads.instructions_result("overlay", worker, tmp_path / "callgrind.out") == {"instructions": 25}


def test_workers_under_callgrind_run_kernels_on_one_thread(tmp_path):
    """Valgrind runs threads one at a time, and OpenMP workers spinning there count
    instructions that depend on scheduling: counts taken with the machine's threads
    compared the same Inductor graph at 1.13. The caller's own variables stay."""
    env = workloads.callgrind_env(Shell(verbose=False), {"OMP_NUM_THREADS": "8", "TORCH_EXTENSIONS_DIR": "x"}, tmp_path)
    assert env["OMP_NUM_THREADS"] == "1"
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    assert env["TORCH_EXTENSIONS_DIR"] == "x"
    assert Path(env["FCA_BENCH_CALLGRIND_CTL"]).is_file()


def test_instruction_samples_count_the_first_capture_in_each_venv(overlay, stock_python, tmp_path):
    """The real thing, under valgrind: one count per venv for the region the capture mode times."""
    for kind in ("stock", "overlay"):
        got = workloads.instructions_sample(_setup(), kind, "mlp", "instructions-capture", {"TORCH_EXTENSIONS_DIR": str(tmp_path / kind)}, tmp_path)
        assert set(got) == {"instructions"}, got
        assert 10**6 < got["instructions"] < 10**10, got


def test_instruction_samples_count_the_steady_state_backwards_and_not_their_warm_up(overlay, stock_python, tmp_path):
    """The steady count is per backward over the 40 timed ones (mlp: about 3.5 M each), far
    below the warm-up's capture and compile (about 10^9): a region left running over it, or
    a total not divided by 40, would be out of these bounds."""
    for kind in ("stock", "overlay"):
        got = workloads.instructions_sample(_setup(), kind, "mlp", "instructions-steady", {"TORCH_EXTENSIONS_DIR": str(tmp_path / kind)}, tmp_path)
        assert set(got) == {"instructions"}, got
        assert 10**5 < got["instructions"] < 2 * 10**7, got


def test_a_new_batch_size_recaptures_on_stock_and_the_stack_but_not_with_the_dynamic_first_capture(overlay, stock_python, tmp_path):
    """`bench.py sizes`'s counts, from the real workers: stock and the stack (a static first
    capture by default) take 2 captures and 3 compiles over the batch sweep, the stack with its
    opt-in dynamic first capture 1 and 2, and 1 and 1 with its graph's inputs dynamic too."""
    env = {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    got = {side: workloads.ca_sample(_setup(), kind, "mlp", "sizes", {**env, **side_env})
           for side, (kind, side_env) in sizes.SIZES_SIDES.items()}
    counts = {side: (r.get("captures_batch"), r.get("compiles_batch"), r.get("error")) for side, r in got.items()}
    assert counts == {"stock": (2, 3, None), "stack": (2, 3, None), "stack, dynamic first capture": (1, 2, None),
                      "stack, dynamic graph inputs": (1, 1, None)}


def test_with_torch_compile_dynamic_the_dynamic_first_capture_captures_once_over_the_batch_sweep(
        overlay, stock_python, tmp_path):
    """`bench.py sizes`'s second table: with `torch.compile(..., dynamic=True)` for compiled
    autograd's compiler and for the forward, the stack takes stock's 2 captures over the batch
    sweep at its default (a static first capture), and with its opt-in dynamic first capture 1
    capture and 2 Dynamo compiles for the backward: the first with the capture's sizes as
    constants, as 2.7's static first capture has them, then the capture's graph, dynamic, at the
    first new size (the compiled forward's own graph is the third one there)."""
    env = {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext"), "FCA_BENCH_COMPILE_DYNAMIC": "1"}
    ways = {"stock": ("stock", {}), "stack": ("overlay", {}),
            "stack, dynamic first capture": ("overlay", {"FCA_BENCH_CA_DYNAMIC": "1"})}
    counts = {(side, w): (r.get("captures_batch"), r.get("compiles_batch"), r.get("error"))
              for side, (kind, way_env) in ways.items() for w in ("mlp", "compiled_forward")
              for r in [workloads.ca_sample(_setup(), kind, w, "sizes", {**env, **way_env})]}
    assert counts == {("stock", "mlp"): (2, 2, None), ("stock", "compiled_forward"): (2, 3, None),
                      ("stack", "mlp"): (2, 2, None), ("stack", "compiled_forward"): (2, 3, None),
                      ("stack, dynamic first capture", "mlp"): (1, 2, None),
                      ("stack, dynamic first capture", "compiled_forward"): (1, 3, None)}


def test_the_static_and_dynamic_steady_workers_are_sampled_in_pairs(overlay, tmp_path):
    ratios = sizes.paired_static_dynamic(_setup(), "mlp", "aot_eager", 3, {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")})
    assert len(ratios) == 3 and all(r > 0 for r in ratios)


def _with_peer(samples, **cells):
    # cells: mode__key=value for the peer (stock 2.7), as _samples writes stock and overlay
    for name, value in cells.items():
        mode, key = name.split("__")
        samples[("mlp", mode.replace("_", "-", 1), core.PEER)] = [{key: value}, {key: value}]
    return samples


def test_the_peer_judges_the_capture_and_reports_the_first_backward():
    samples = _with_peer(_samples(capture__seconds=(0.40, 0.30), instructions_capture__instructions=(2.0e8, 1.0e8),
                                  instructions_aot_eager__instructions=(1.2e9, 1.0e9)),
                         capture__seconds=0.25, instructions_capture__instructions=1.2e8,
                         instructions_aot_eager__instructions=0.8e9)
    samples[("mlp", "capture", ca.pairs_key(core.PEER))] = [{"seconds": r} for r in (1.18, 1.20, 1.22)]
    rows = _rows(report.render_targets(samples, ["mlp"], ["capture", "instructions-capture", "instructions-aot_eager"]))
    peer_rows = [(r[0].split(":")[0], r[2], r[3], r[4].split(" ")[0], r[5]) for r in rows if "/2.7" in r[0]]
    assert peer_rows == [
        ("repeated CA capture", "0.2500", "0.3000", "1.20", "**no**"),  # the median of the pairs, not of the times
        ("first CA capture in a fresh process, instructions", "120.0M", "100.0M", "0.833", "yes"),
        ("first backward (capture + compile), aot_eager, instructions", "800.0M", "1000.0M", "1.250", "reported"),
    ]
    assert len(rows) == 6  # and the three stock rows as before


def test_without_the_peer_there_are_no_peer_targets_and_its_columns_are_empty(tmp_path):
    samples = _samples(capture__seconds=(0.40, 0.30))
    assert not [r for r in _rows(report.render_targets(samples, ["mlp"], ["capture"])) if "2.7" in r[0]]
    table = ca.render_ca_table(samples, ["mlp"], ["capture"], 1, tmp_path)
    assert "| mlp | CA capture, repeated (s) | 0.400 | 0.300 | 0.75 | - | - |" in table


def test_the_ca_table_gives_the_peers_median_and_the_overlay_over_it(tmp_path):
    samples = _with_peer(_samples(instructions_capture__instructions=(2.0e8, 1.0e8)),
                         instructions_capture__instructions=1.25e8)
    table = ca.render_ca_table(samples, ["mlp"], ["instructions-capture"], 1, tmp_path)
    assert "| 200.0M | 100.0M | 0.500 | 125.0M | 0.800 |" in table
    assert "2.7 median | overlay/2.7" in table.splitlines()[0]


def test_checkpointing_keeps_eager_s_bytes_to_the_backward_and_recomputes_once_per_backward(overlay, stock_python):
    """Non-reentrant checkpointing under compiled autograd: the forward keeps what eager keeps; stock
    2.6 recomputes each block once per saved tensor (P9), so its backward peaks far above the stack's."""
    stack, stock = memory.memory_sample(_setup(), "overlay", "checkpoint"), memory.memory_sample(_setup(), "stock", "checkpoint")
    assert stack["grads_equal_eager"] and stock["grads_equal_eager"], (stack, stock)
    assert stack["ca_alive_after_forward"] == stack["eager_alive_after_forward"]
    assert stack["ca_backward_peak"] < stock["ca_backward_peak"] / 2, (stack, stock)


def test_selective_checkpointing_gives_eager_s_grads_and_peak_under_compiled_autograd(overlay, stock_python):
    stack, stock = memory.memory_sample(_setup(), "overlay", "selective"), memory.memory_sample(_setup(), "stock", "selective")
    assert stack["grads_equal_eager"], stack
    assert stack["ca_backward_peak"] <= 1.10 * stack["eager_backward_peak"], stack
    assert stock["error"].startswith("RuntimeError: Trying to backward an extra time"), stock


@pytest.mark.parametrize("backend, programs", [
    ("aot_eager", ("checkpoint_then_plain", "plain_then_checkpoint")),
    ("inductor", ("checkpoint_then_plain",)),  # one: each Inductor compile takes a minute here
])
def test_hooked_and_plain_saved_tensors_in_one_backward_peak_at_eager_s_bytes(overlay, backend, programs):
    """Half the blocks checkpointed, half plain, in either order: the graph is split at the hooked
    saved Tensors' unpacks, and each plain activation is freed after its last use as in eager, so
    the steady backward peaks no higher than eager's, whatever compiles the pieces."""
    for program in programs:
        r = memory.memory_sample(_setup(), "overlay", program, backend)
        assert r["grads_equal_eager"], r
        assert r["ca_backward_peak"] <= 1.02 * r["eager_backward_peak"], r


class _Stopped(Exception):
    """The run was killed here (a test's stand-in for the session's end)."""


def _scripted_ca(monkeypatch, stack: str = "stack-a", stop_after: int | None = None) -> list[tuple[str, ...]]:
    """``bench_ca``'s scheduling with its samplers replaced by ones that record each call (and
    stop the run after ``stop_after`` calls): what ``--resume`` keeps and reruns, in seconds."""
    from tools.lib import callgrind
    from tools.lib.overlay import venv

    calls: list[tuple[str, ...]] = []

    def record(*call):
        if stop_after is not None and len(calls) == stop_after:
            raise _Stopped
        calls.append(call)

    def instructions(setup, kind, w, mode, env, out_dir):
        record(w, mode, kind, env["TORCHINDUCTOR_CACHE_DIR"])
        return {"instructions": 1e6}

    def one(setup, kind, w, mode, env):
        record(w, mode, kind, env["TORCHINDUCTOR_CACHE_DIR"])
        return {"seconds": 0.5}

    def paired(setup, w, mode, pairs, first, envs, base):
        record(w, mode, first, base)
        return {"overlay": {"seconds": 0.4}, base: {"seconds": 0.5}}, [0.8] * pairs

    monkeypatch.setattr(venv, "ensure_venv", lambda *a, **kw: None)
    monkeypatch.setattr(callgrind, "ensure_ctl_lib", lambda *a: None)
    monkeypatch.setattr(callgrind, "ensure_cxx_wrapper", lambda *a: None)
    monkeypatch.setattr(ca, "ensure_overlay", lambda setup: None)
    monkeypatch.setattr(ca, "overlay_stack_id", lambda setup: stack)
    monkeypatch.setattr(ca, "instructions_sample", instructions)
    monkeypatch.setattr(ca, "ca_sample", one)
    monkeypatch.setattr(ca, "paired_sample", paired)
    return calls


_RESUME_RUN = dict(reps=2, workloads=["mlp", "transformer"], modes=["instructions-capture", "capture", "first-aot_eager"],
                   jobs=1, peer=True)


def test_a_resumed_ca_run_runs_only_the_steps_the_stopped_run_had_not_finished(monkeypatch, tmp_path):
    whole = _scripted_ca(monkeypatch)
    expected = ca.bench_ca(_setup(), out_dir=tmp_path / "whole", **_RESUME_RUN)
    stopped = _scripted_ca(monkeypatch, stop_after=10)
    with pytest.raises(_Stopped):
        ca.bench_ca(_setup(), out_dir=tmp_path / "out", **_RESUME_RUN)
    rest = _scripted_ca(monkeypatch)
    samples = ca.bench_ca(_setup(), out_dir=tmp_path / "out", resume=True, **_RESUME_RUN)
    assert samples == expected
    # 6 counts and 2 paired steps done; the timed step it stopped in (3 venvs, 2 sampled) is redone whole
    assert [c[:3] for c in stopped[8:]] == [("mlp", "first-aot_eager", "stock"), ("mlp", "first-aot_eager", "overlay")]
    assert [c[:3] for c in rest] == [c[:3] for c in whole[8:]]
    assert json.loads((tmp_path / "out" / "samples.json").read_text()) == json.loads((tmp_path / "whole" / "samples.json").read_text())


def test_without_resume_a_ca_run_starts_over_in_the_same_dir(monkeypatch, tmp_path):
    _scripted_ca(monkeypatch)
    first = ca.bench_ca(_setup(), out_dir=tmp_path, **_RESUME_RUN)
    again = _scripted_ca(monkeypatch)
    assert ca.bench_ca(_setup(), out_dir=tmp_path, **_RESUME_RUN) == first
    assert len(again) == 6 + 2 * 2 * (2 + 3)  # counts; per rep and workload two paired steps and three timed samples


def test_a_resumed_run_gives_inductor_cache_dirs_of_its_own(monkeypatch, tmp_path):
    _scripted_ca(monkeypatch, stop_after=10)
    with pytest.raises(_Stopped):
        ca.bench_ca(_setup(), out_dir=tmp_path, **_RESUME_RUN)
    rest = _scripted_ca(monkeypatch)
    ca.bench_ca(_setup(), out_dir=tmp_path, resume=True, **_RESUME_RUN)
    timed = [Path(c[3]).name for c in rest if c[1] == "first-aot_eager"]
    assert timed[:3] == ["stock-0-run1", "overlay-0-run1", "torch27-0-run1"]


def test_resume_refuses_the_samples_of_another_stack(monkeypatch, tmp_path):
    _scripted_ca(monkeypatch, stack="stack-a", stop_after=8)  # in a timed step: every count recorded
    with pytest.raises(_Stopped):
        ca.bench_ca(_setup(), out_dir=tmp_path, **_RESUME_RUN)
    _scripted_ca(monkeypatch, stack="stack-b")
    with pytest.raises(ui.UserError, match="holds samples of the stack stack-a, the overlay is stack-b"):
        ca.bench_ca(_setup(), out_dir=tmp_path, resume=True, **_RESUME_RUN)


def test_resume_keeps_the_instruction_counts_of_a_finished_run_that_wrote_no_steps_file(monkeypatch, tmp_path):
    _scripted_ca(monkeypatch)
    ca.bench_ca(_setup(), out_dir=tmp_path, **{**_RESUME_RUN, "modes": ["instructions-capture"]})
    (tmp_path / "steps.json").unlink()
    rest = _scripted_ca(monkeypatch)
    ca.bench_ca(_setup(), out_dir=tmp_path, resume=True, **_RESUME_RUN)
    assert not [c for c in rest if c[1].startswith("instructions-")]


def test_the_report_gives_the_command_that_made_it_with_its_defaults_left_out():
    modes = [m for m in ca.CA_MODES if m != "instructions-inductor"]
    assert report.report_command(3, ca.CA_MODES, 3, 1, False) == "python tools/bench.py report --reps 3"
    assert report.report_command(2, modes, 3, 1, True) == (
        "python tools/bench.py report --reps 2 --modes " + " ".join(modes) + " --resume")


def test_a_new_ca_run_drops_the_inductor_caches_an_earlier_run_left_and_a_resumed_one_keeps_them(monkeypatch, tmp_path):
    left = tmp_path / "inductor" / "stock-0" / "fxgraph"
    left.mkdir(parents=True)
    resumed = _scripted_ca(monkeypatch)
    ca.bench_ca(_setup(), out_dir=tmp_path, resume=True, **_RESUME_RUN)
    assert left.exists()  # not used: the resumed run's dirs are its own, with or without steps.json
    assert {Path(c[3]).name for c in resumed if c[1] == "first-aot_eager"} == {
        f"{kind}-{rep}-run0" for kind in ("stock", "overlay", "torch27") for rep in (0, 1)}
    _scripted_ca(monkeypatch)
    ca.bench_ca(_setup(), out_dir=tmp_path, **_RESUME_RUN)
    assert not left.exists()
