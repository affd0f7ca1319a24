"""tools/gpu_check.py and tools/lib/gpu_check*.py: the GPU readiness check.  No GPU, no torch, no venv here:
the CPU path, the plan, the input checks, and the run itself on fake venvs whose python plays torch, pytest and
the programs."""

from __future__ import annotations

import contextlib
import io
import json
import py_compile
import shlex
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, ToolResult, run_tool
from tools import gpu_check as gc
from tools.lib import gpu_check as gcl
from tools.lib import ui
from tools.lib import upstream as up

WHEEL_NAME = "torch-2.6.0+fca.0123abcd-cp311-cp311-linux_x86_64.whl"
TAG = "cp%d%d" % sys.version_info[:2]


@pytest.fixture
def inputs(tmp_path):
    """A wheel file, a wheelhouse with stock torch, a patched tree's test/ (nothing in them is run)."""
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = dist / WHEEL_NAME.replace("cp311", TAG)
    wheel.write_bytes(b"")
    house = tmp_path / "house"
    house.mkdir()
    (house / f"torch-2.6.0-{TAG}-{TAG}-manylinux1_x86_64.whl").write_bytes(b"")
    tree = tmp_path / "tree"
    (tree / "test" / "inductor").mkdir(parents=True)
    (tree / "test" / "conftest.py").write_text("")
    (tree / "test" / up.TCA).write_bytes(gcl.VENDORED_TESTS.read_bytes())
    return {"wheel": wheel, "house": house, "tree": tree, "report": tmp_path / "report"}


def check(*args) -> ToolResult:
    """The tool in this process (as run_tool runs it, without the interpreter's start-up): exit code and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = ui.run_main(gc.main, [str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return ToolResult(code, out.getvalue(), err.getvalue())


def args_of(i, *extra) -> list:
    return ["--wheel", i["wheel"], "--wheelhouse", i["house"], "--torch-src", i["tree"], "--report-dir", i["report"],
            "--python", sys.executable, *extra]


def test_without_cuda_it_prints_one_line_saying_what_it_would_run(inputs):
    res = run_tool("gpu_check", *args_of(inputs, "--no-cuda"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("\n") == 1
    line = res.stdout.strip()
    assert line.startswith("no CUDA here (--no-cuda): on a CUDA machine this would install "
                           f"{inputs['wheel'].name} and stock torch 2.6.0 into fresh venvs from {inputs['house']}")
    assert f"16 CUDA tests of {up.TCA} and 8 programs of examples/cuda_programs.py" in line
    assert "(5 steps, budget 7m55s); --plan prints the commands" in line
    assert not inputs["report"].exists()  # nothing made, nothing run


def test_a_machine_whose_nvidia_smi_lists_no_gpu_is_a_machine_without_cuda(inputs, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    smi.chmod(0o755)
    res = run_tool("gpu_check", *args_of(inputs), env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("no CUDA here (`nvidia-smi -L` lists no GPU: No devices were found): ")
    assert res.stdout.count("\n") == 1 and not inputs["report"].exists()


def test_cuda_is_detected_from_nvidia_smi_or_proc_without_torch(tmp_path, monkeypatch):
    from tools.lib.shell import Shell

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    proc = tmp_path / "gpus"
    assert gc.detect_cuda(Shell(verbose=False), proc) == (False, f"no nvidia-smi on PATH and no {proc}")
    (proc / "0000:01:00.0").mkdir(parents=True)
    assert gc.detect_cuda(Shell(verbose=False), proc) == (True, f"1 GPU(s) in {proc} (no nvidia-smi on PATH)")
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)'\n")
    smi.chmod(0o755)
    assert gc.detect_cuda(Shell(verbose=False), proc) == (True, "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)")
    assert "torch" not in sys.modules


def test_plan_prints_each_command_line_and_budget_and_runs_nothing(inputs):
    res = run_tool("gpu_check", *args_of(inputs, "--plan"))
    assert res.returncode == 0, res.stderr
    r, py, lock = inputs["report"].resolve(), sys.executable, REPO_ROOT / "tools" / "requirements" / "torch-venv.txt"
    tests = inputs["tree"].resolve() / "test"
    lines = res.stdout.splitlines()
    assert f"   wheel: $ {shlex.join([py, '-m', 'venv', '--clear', str(r / 'wheel' / 'venv')])}" in lines
    assert f"   stock: $ {shlex.join([py, '-m', 'venv', '--clear', str(r / 'stock' / 'venv')])}" in lines
    pip = ["-m", "pip", "install", "-q", "--no-index", "--find-links", str(inputs["house"].resolve())]
    assert ("   wheel: $ PIP_DISABLE_PIP_VERSION_CHECK=1 "
            + shlex.join([str(r / "wheel/venv/bin/python"), *pip, str(inputs["wheel"].resolve()), "-r", str(lock)])) in lines
    assert ("   stock: $ PIP_DISABLE_PIP_VERSION_CHECK=1 "
            + shlex.join([str(r / "stock/venv/bin/python"), *pip, "-r", str(lock)])) in lines
    node_ids = [f"{up.TCA}::{t}" for t, _ in gcl.CUDA_TESTS]
    assert (f"   stock: $ cd {tests} && PYTHONPATH={r / '.plugin'} FCA_UPSTREAM_STATE={r / 'stock/tests-state'} "
            f"TORCHINDUCTOR_CACHE_DIR={r / 'stock/caches/inductor'} TORCH_EXTENSIONS_DIR={r / 'stock/caches/extensions'} "
            + shlex.join([str(r / "stock/venv/bin/python"), "-m", "pytest", "-p", "no:cacheprovider", "-p",
                          "fca_upstream_plugin", f"--junitxml={r / 'stock/tests.xml'}", "-q", *node_ids])) in lines
    assert (f"   wheel: $ cd {r / 'wheel'} && TORCHINDUCTOR_CACHE_DIR={r / 'wheel/caches/inductor'} "
            f"TORCH_EXTENSIONS_DIR={r / 'wheel/caches/extensions'} "
            + shlex.join([str(r / "wheel/venv/bin/python"), str(REPO_ROOT / "examples/cuda_programs.py"), "--backend",
                          "inductor", "--build-dir", str(r / "wheel/cpp-build"), "--json", str(r / "wheel/programs.json")])
            ) in lines
    assert [l.split(" [")[0] for l in lines if l[:1].isdigit()] == ["1. venv", "2. install", "3. probe", "4. tests",
                                                                     "5. programs"]
    assert lines[-1] == ("budget: venv 15s + install 120s + probe 20s + tests 165s + programs 155s = 475s "
                         "(7m55s; the whole run on one H100: at most 480s)")
    assert not inputs["report"].exists()


def test_the_budgets_fit_eight_minutes():
    assert all(step.budget_s > 0 for step in gcl.STEPS)
    assert sum(step.budget_s for step in gcl.STEPS) <= gcl.TOTAL_BUDGET_S == 480


def test_reused_venvs_leave_their_venv_and_install_steps_out(inputs, tmp_path):
    wheel_venv, stock_venv = fake_venv(tmp_path / "w", patched=True), fake_venv(tmp_path / "s", patched=False)
    res = check("--venv", wheel_venv, "--stock-venv", stock_venv, "--torch-src", inputs["tree"],
                "--report-dir", inputs["report"], "--plan", "--budget-scale", "2")
    assert res.returncode == 0, res.stderr
    assert [l.split(" [")[0] for l in res.stdout.splitlines() if l[:1].isdigit()] == ["1. probe", "2. tests", "3. programs"]
    assert f"   wheel: $ cd {inputs['report'].resolve() / 'wheel'} && {wheel_venv.resolve()}/bin/python -c " in res.stdout
    assert res.stdout.splitlines()[-1] == ("budget: probe 40s + tests 330s + programs 310s = 680s "
                                           "(11m20s; the whole run on one H100: at most 480s)")
    res = check("--venv", wheel_venv, "--wheelhouse", inputs["house"], "--torch-src", inputs["tree"],
                "--report-dir", inputs["report"], "--python", sys.executable, "--no-cuda")
    assert res.returncode == 0, res.stderr
    assert "would install stock torch 2.6.0 into a fresh venv from" in res.stdout


@pytest.mark.parametrize("extra, message", [
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["--assume-cuda", "--no-cuda"], "not allowed with argument"),
    (["--venv", "v"], "error: --venv reuses a venv with the wheel already installed: drop --wheel, or --venv to install it"),
    (["--budget-scale", "0"], "error: --budget-scale must be positive, not 0"),
    (["--budget", "tests"], "error: --budget tests: expected STEP=SECONDS, a step of venv, install, probe, tests, "
                            "programs and a positive number"),
])
def test_usage_errors_exit_2(inputs, extra, message):
    res = check(*args_of(inputs, *extra))
    assert res.returncode == 2 and message in res.stderr


def test_a_wheelhouse_beside_two_reused_venvs_is_a_usage_error(inputs, tmp_path):
    res = check("--venv", tmp_path, "--stock-venv", tmp_path, "--wheelhouse", inputs["house"])
    assert res.returncode == 2
    assert res.error_line == ("error: --wheelhouse is for installing fresh venvs, and --venv and --stock-venv reuse both: "
                              "drop --wheelhouse")


def test_a_missing_wheel_is_bad_input_with_what_to_do(inputs, tmp_path):
    gone = tmp_path / WHEEL_NAME
    for mode in ("--assume-cuda", "--plan", "--no-cuda"):  # checked before anything runs, whatever the machine
        res = (run_tool("gpu_check", *args_of({**inputs, "wheel": gone}, mode)) if mode == "--assume-cuda"
               else check(*args_of({**inputs, "wheel": gone}, mode)))
        assert res.returncode == 3
        assert res.stderr.strip().splitlines() == [
            f"error: --wheel {gone}: no such file; build the wheel with `python tools/build_wheel.py` "
            "(it prints the wheel's path) or pass the path of one"]
        assert not inputs["report"].exists()


def test_wrong_inputs_are_named(inputs, tmp_path):
    other = tmp_path / "torch-2.6.0-cp311-cp311-linux_x86_64.whl"
    other.write_bytes(b"")
    res = check(*args_of({**inputs, "wheel": other}, "--no-cuda"))
    assert res.returncode == 3 and "not a patched torch wheel" in res.error_line
    empty = tmp_path / "empty"
    empty.mkdir()
    res = check(*args_of({**inputs, "house": empty}, "--no-cuda"))
    assert res.returncode == 3
    assert res.error_line.startswith(f"error: wheelhouse {empty} has no torch-2.6.0-{TAG} wheel: fill it where pip can download")
    (inputs["tree"] / "test" / up.TCA).write_text("# the pin's, not the stack's\n")
    res = check(*args_of(inputs, "--no-cuda"))
    assert res.returncode == 3
    assert res.error_line == (f"error: --torch-src {inputs['tree']}: test/{up.TCA} is not the stack's "
                              f"(vendored_torch_patches/test/{up.TCA}); apply the stack: "
                              f"`python tools/apply_patches.py --torch-src {inputs['tree']}`")
    wheel_venv = fake_venv(tmp_path / "w", patched=True)
    res = check("--venv", wheel_venv, "--stock-venv", wheel_venv, "--torch-src", inputs["tree"], "--plan")
    assert res.returncode == 3
    assert res.error_line.startswith(f"error: --stock-venv {wheel_venv} has torch 2.6.0+fca.0123abcd with the stack, "
                                     "not stock torch==2.6.0")


def test_the_cuda_tests_are_the_ones_the_cpu_baseline_skips_and_exist_unchanged_by_the_stack():
    baseline = up.load_baseline(up.EXPECTATIONS_DIR, up.TCA)
    chosen = [t for t, _ in gcl.CUDA_TESTS]
    assert len(set(chosen)) == len(chosen) == 16
    assert all(t in baseline.tests for t in chosen)  # upstream's own tests, not the stack's new ones
    assert {t for t, o in baseline.tests.items() if o == "skipped"} <= set(chosen)
    vendored = gcl.VENDORED_TESTS.read_text()
    for test in chosen:
        if test.startswith("TestCompiledAutograd::"):
            assert f"def {test.split('::')[1]}(" in vendored


def test_the_programs_script_compiles_and_lists_its_programs(tmp_path):
    py_compile.compile(str(gcl.PROGRAMS_SCRIPT), cfile=str(tmp_path / "cuda_programs.pyc"), doraise=True)
    names = gcl.program_names()
    assert names == ["cuda_mlp", "cuda_transformer", "side_stream_backward", "cudagraphs_cpu_scalars",
                     "cpp_function_cuda", "cpp_function_cpu_scalar_cudagraphs", "activation_checkpointing",
                     "dtensor_nccl"]
    source = gcl.PROGRAMS_SCRIPT.read_text()
    assert all(f"\ndef {n}(flag):" in source for n in names)


# -- the run, on fake venvs ---------------------------------------------------------------------

# bin/python of a fake venv: plays the probe, pytest (a junit file) and cuda_programs.py (its json)
# from the venv's fake.json, sleeping there when told to
FAKE_PYTHON = r'''
import json, sys, time
from pathlib import Path
conf = json.loads((Path(__file__).resolve().parent.parent / "fake.json").read_text())
args = sys.argv[1:]
def act(step):
    time.sleep(conf.get("sleep", {}).get(step, 0))
    if step in conf.get("crash", ()):
        print("Fatal Python error: Segmentation fault")
        sys.exit(139)
if args[:1] == ["-c"]:
    act("probe"); print("a warning first"); print(json.dumps(conf["probe"]))
    sys.exit(0 if conf["probe"]["cuda_available"] else 1)
if args[:2] == ["-m", "pytest"]:
    act("tests")
    xml = next(a.split("=", 1)[1] for a in args if a.startswith("--junitxml="))
    bodies = {"passed": "", "failed": '<failure message="AssertionError: boom">trace</failure>',
              "skipped": '<skipped type="pytest.skip" message="requires gpu">skip</skipped>'}
    cases = []
    for a in args:
        if "::" in a:
            _, cls, name = a.split("::")
            body = bodies[conf["tests"].get(cls + "::" + name, "passed")]
            cases.append(f'<testcase classname="inductor.test_compiled_autograd.{cls}" name="{name}" time="0.5">{body}</testcase>')
    Path(xml).write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest">' + "".join(cases) + "</testsuite></testsuites>")
    sys.exit(1 if "failed" in conf["tests"].values() else 0)
if args and args[0].endswith("cuda_programs.py"):
    act("programs")
    verdicts = {n: conf["programs"].get(n, "ok") for n in conf["names"]}
    programs = [{"name": n, "verdict": v, "ok": v == "ok", "captures": 1, "cudagraph_skips": 0, "seconds": 0.1}
                for n, v in verdicts.items()]
    Path(args[args.index("--json") + 1]).write_text(json.dumps({"extension": "fake", "programs": programs}))
    sys.exit(0 if all(p["ok"] for p in programs) else 1)
sys.exit(f"fake python: unexpected arguments {args}")
'''


def fake_venv(root: Path, patched: bool, tests=None, programs=None, cuda=True, sleep=None, crash=()) -> Path:
    site = root / "lib" / "python3.11" / "site-packages"
    version = "2.6.0+fca.0123abcd" if patched else "2.6.0"
    for d in (f"torch-{version}.dist-info", "pytest-8.3.5.dist-info", "torch/lib"):
        (site / d).mkdir(parents=True, exist_ok=True)
    if patched:
        (site / "torch" / "lib" / "fca_overlay.json").write_text('{"stack": "0123abcd"}\n')
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(f"#!{sys.executable}\n" + FAKE_PYTHON)
    python.chmod(0o755)
    probe = {"torch": version, "cuda": "12.4", "cuda_available": cuda, "device": "NVIDIA H100 80GB HBM3" if cuda else None,
             "stack": "0123abcd" if patched else None, "python": "3.11.7"}
    (root / "fake.json").write_text(json.dumps({"probe": probe, "tests": tests or {}, "programs": programs or {},
                                                "names": gcl.program_names(), "sleep": sleep or {},
                                                "crash": list(crash)}))
    return root


def check_on_fakes(inputs, wheel_venv, stock_venv, *extra):
    return check("--venv", wheel_venv, "--stock-venv", stock_venv, "--torch-src", inputs["tree"],
                 "--report-dir", inputs["report"], "--assume-cuda", *extra)


def test_a_run_where_the_wheel_does_as_well_as_stock_passes_and_writes_its_reports(inputs, tmp_path):
    cpp_fails = {"cpp_function_cuda": "FAIL RuntimeError: Attempting to trace a potentially unsafe C++ autograd function"}
    res = check_on_fakes(inputs, fake_venv(tmp_path / "w", patched=True),
                         fake_venv(tmp_path / "s", patched=False, programs=cpp_fails))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("\n") == 1
    assert res.stdout.startswith("gpu check OK; 16 CUDA tests: wheel 16 passed, stock 16 passed; programs giving "
                                 "eager's grads: wheel 8/8, stock 7/8; ")
    report = inputs["report"].resolve()
    assert res.stdout.strip().endswith(f"budget; report: {report / 'gpu-check.md'}")
    data = json.loads((report / "gpu-check.json").read_text())
    assert data["verdict"] == "OK" and data["problems"] == [] and data["tests"]["differences"] == []
    assert data["probe"]["wheel"]["stack"] == "0123abcd" and data["probe"]["stock"]["stack"] is None
    assert [s["name"] for s in data["steps"]] == ["probe", "tests", "programs"]
    assert data["steps"][1]["sides"]["wheel"]["returncode"] == 0
    md = (report / "gpu-check.md").read_text()
    assert "- result: **OK**" in md
    assert "| `TestCompiledAutograd::test_cudagraphs_sdpa` | passed | passed | - |" in md
    assert "| `cpp_function_cuda` | FAIL RuntimeError: Attempting to trace" in md


def test_a_run_where_the_wheel_does_worse_fails_and_says_where(inputs, tmp_path):
    regression = {"TestCompiledAutograd::test_cudagraphs_sdpa": "failed",
                  "TestCustomOpWithCompiledAutograd::test_impl_multiple": "skipped"}
    res = check_on_fakes(inputs, fake_venv(tmp_path / "w", patched=True, tests=regression,
                                           programs={"side_stream_backward": "WRONG grads"}),
                         fake_venv(tmp_path / "s", patched=False))
    assert res.returncode == 1
    assert res.stdout.startswith("gpu check FAILED (3 problem(s), first: tests: 2 worse on the wheel than on stock, "
                                 "e.g. TestCompiledAutograd::test_cudagraphs_sdpa: REGRESSION (stock passed, wheel failed) "
                                 "AssertionError: boom); 16 CUDA tests: wheel 14 passed, 1 failed, 1 skipped, stock 16 passed")
    data = json.loads((inputs["report"] / "gpu-check.json").read_text())
    assert data["verdict"] == "FAILED"
    assert data["problems"][1:] == [
        "tests: 1 CUDA test(s) skipped on the wheel, e.g. TestCustomOpWithCompiledAutograd::test_impl_multiple: "
        "requires gpu (on a CUDA machine they must run)",
        "programs: 1 differ from eager on the wheel, e.g. side_stream_backward: WRONG grads"]
    assert {(d["test"], d["kind"], d["fails"]) for d in data["tests"]["differences"]} == {
        ("TestCompiledAutograd::test_cudagraphs_sdpa", "REGRESSION", True),
        ("TestCustomOpWithCompiledAutograd::test_impl_multiple", "NOW SKIPPED", True)}


def test_a_stock_failure_the_wheel_passes_is_reported_not_failed(inputs, tmp_path):
    res = check_on_fakes(inputs, fake_venv(tmp_path / "w", patched=True),
                         fake_venv(tmp_path / "s", patched=False,
                                   tests={"TestCompiledAutograd::test_cudagraphs_cpu_division": "failed"}))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((inputs["report"] / "gpu-check.json").read_text())
    assert [(d["kind"], d["fails"]) for d in data["tests"]["differences"]] == [("UNEXPECTED PASS", False)]


def test_a_step_past_its_budget_is_killed_and_a_failed_probe_stops_its_side(inputs, tmp_path):
    res = check_on_fakes(inputs, fake_venv(tmp_path / "w", patched=True, sleep={"tests": 60}),
                         fake_venv(tmp_path / "s", patched=False, cuda=False), "--budget", "tests=0.5")
    assert res.returncode == 1
    data = json.loads((inputs["report"] / "gpu-check.json").read_text())
    tests = data["steps"][1]["sides"]
    assert tests["wheel"]["timed_out"] and tests["wheel"]["seconds"] < 10
    assert tests["stock"]["skipped"] == "its probe step failed"
    stock_probe, wheel_tests = data["problems"][:2]
    assert stock_probe.startswith("stock: torch 2.6.0 (CUDA 12.4) sees no CUDA device (the probe step, exit 1 in ")
    assert stock_probe.endswith("); is the driver new enough for CUDA 12.4?")
    assert wheel_tests.startswith("wheel: the tests step ran past its budget (") and wheel_tests.endswith("): no output")
    assert "programs: the wheel 8/8" not in res.stdout and "programs giving eager's grads: wheel 8/8, stock none" in res.stdout


def test_a_crashed_step_is_named_with_its_last_words(inputs, tmp_path):
    res = check_on_fakes(inputs, fake_venv(tmp_path / "w", patched=True, crash=["programs"]),
                         fake_venv(tmp_path / "s", patched=False, crash=["tests"]))
    assert res.returncode == 1
    data = json.loads((inputs["report"] / "gpu-check.json").read_text())
    assert [p.split(" in ")[0] for p in data["problems"]] == ["stock: tests: pytest exit 139", "wheel: programs: exit 139"]
    assert all(p.endswith(": Fatal Python error: Segmentation fault") for p in data["problems"])
