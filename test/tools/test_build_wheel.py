"""tools/build_wheel.py: a real patched wheel, installed by real pip into a fresh venv, runs the stack everywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, WHERE_DEFINED, run_tool
from tools.lib import paths, stock_wheel, wheel
from tools.lib.bench import models as bench_models
from tools.lib.overlay import torch_hook
from tools.lib.overlay.venv import share_cuda_libraries
from tools.lib.shell import Shell

HOUSE = paths.wheelhouse(paths.cache_dir())
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
MUL_APPLY_WITH_SAVED = (
    "_ZN5torch8autograd9generated12MulBackward016apply_with_savedERKSt6vectorIN2at6TensorESaIS5_EE"
    "RNS_6dynamo8autograd18SwapSavedVariablesE"
)

# What a user checks after `pip install`: where compiled autograd's C++ comes from, what the
# capture of an MLP's backward records, and whether its grads are eager's.
PROBE = WHERE_DEFINED + textwrap.dedent(
    """
    import json, os, sys
    import torch
    from torch._dynamo import compiled_autograd

    graphs = []
    def compiler(gm):
        graphs.append(gm)
        return torch.compile(gm, backend="aot_eager", fullgraph=True)

    def grads(compiled):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        loss = (model(torch.randn(5, 8)) * 3.0).sigmoid().sum()
        if compiled:
            with compiled_autograd._enable(compiler):
                loss.backward()
        else:
            loss.backward()
        return [p.grad for p in model.parameters()]

    eager, ca = grads(False), grads(True)
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    print(json.dumps({
        "mul_apply_with_saved": where(sys.argv[1]),
        "aten_calls": sum(t.startswith("aten.") for t in targets),
        "ops_calls": sum(".ops." in t or t.startswith("ops.") for t in targets),
        "grads_equal": all(torch.allclose(a, b) for a, b in zip(eager, ca)),
        "ld_preload": os.environ.get("LD_PRELOAD", ""),
    }))
    """
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FCA_OVERLAY_LIB", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def run_py(venv: Path, *args: str, timeout: int = HANG_TIMEOUT, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "python"), *args], capture_output=True, text=True, timeout=timeout,
                          env=kwargs.pop("env", clean_env()), **kwargs)


def probe(venv: Path) -> dict:
    proc = run_py(venv, "-c", PROBE, MUL_APPLY_WITH_SAVED)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess:
    return run_py(venv, "-m", "pip", "--disable-pip-version-check", *args, timeout=HANG_TIMEOUT)


@pytest.fixture(scope="session")
def fca_wheel(overlay, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    res = run_tool("build_wheel", "-o", out)
    assert res.returncode == 0, res.stderr[-3000:]
    (path,) = out.glob("torch-2.6.0+fca.*.whl")
    return path


@pytest.fixture(scope="session")
def wheel_venv(fca_wheel, tmp_path_factory) -> Path:
    """A fresh plain venv that already has an unrelated package, then `pip install <the wheel>`."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    assert pip(venv, "install", "-q", "--no-index", "--find-links", str(HOUSE), "iniconfig").returncode == 0
    proc = pip(venv, "install", "-q", "--no-index", "--find-links", str(HOUSE), str(fca_wheel))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # 3.4 GB of CUDA libraries and triton: one copy with the cache's venvs for the session
    share_cuda_libraries(venv, HOUSE)
    return venv


def read_member(whl: Path, suffix: str) -> str:
    with zipfile.ZipFile(whl) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(suffix)]
        return zf.read(name).decode()


def test_wheel_is_named_and_tagged_for_this_python_with_the_stock_dependencies(fca_wheel):
    name = wheel.WheelName.parse(fca_wheel.name)
    assert (name.distribution, name.python_tag, name.abi_tag, name.platform_tag) == ("torch", TAG, TAG, "linux_x86_64")
    assert name.version.startswith("2.6.0+fca.")
    assert f"Tag: {TAG}-{TAG}-linux_x86_64\n" in read_member(fca_wheel, ".dist-info/WHEEL")
    meta = read_member(fca_wheel, ".dist-info/METADATA")
    assert f"\nVersion: {name.version}\n" in meta
    stock = stock_wheel.find(HOUSE, PY)
    requires = lambda text: [l for l in text.splitlines() if l.startswith("Requires-Dist:")]  # noqa: E731
    assert requires(meta) == requires(read_member(stock, ".dist-info/METADATA")) and requires(meta)


def test_wheel_record_has_every_file_with_its_sha256_and_size(fca_wheel):
    with zipfile.ZipFile(fca_wheel) as zf:
        files = [n for n in zf.namelist() if not n.endswith("/")]
    assert wheel.verify(fca_wheel) == len(files) - 1  # all but RECORD itself


def test_wheel_holds_the_library_the_patched_files_and_the_loader(fca_wheel, pinned_source, tmp_path):
    with zipfile.ZipFile(fca_wheel) as zf:
        zf.extract("torch/lib/libfca_overlay.so", tmp_path)
        stamp = json.loads(zf.read("torch/lib/fca_overlay.json"))
        init = zf.read("torch/__init__.py").decode()
        ca = zf.read("torch/_dynamo/compiled_autograd.py")
    dyn = subprocess.run(["readelf", "-d", str(tmp_path / "torch/lib/libfca_overlay.so")], capture_output=True, text=True).stdout
    assert "Library runpath: [$ORIGIN]" in dyn
    assert stamp["version"] == wheel.WheelName.parse(fca_wheel.name).version
    assert set(stamp["build_ids"]) == {"libtorch_cpu.so", "libtorch_python.so"}
    assert ca == (pinned_source / "torch/_dynamo/compiled_autograd.py").read_bytes()
    assert init.count("    _fca_load_overlay()\n") == 2
    assert init.index("def _fca_load_overlay") < init.index("_load_global_deps()\n    _fca_load_overlay()")


def test_building_again_gives_the_same_bytes(fca_wheel, tmp_path):
    res = run_tool("build_wheel", "-q", "-o", tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    again = tmp_path / fca_wheel.name
    same = wheel.file_sha256(again) == wheel.file_sha256(fca_wheel)
    again.unlink()
    assert same


def test_plain_venv_with_the_wheel_runs_the_stack_without_preload(wheel_venv):
    got = probe(wheel_venv)
    assert got["mul_apply_with_saved"] == str(next(wheel_venv.glob("lib/python3*/site-packages/torch/lib/libfca_overlay.so")))
    assert got["aten_calls"] == 0 and got["ops_calls"] > 0
    assert got["grads_equal"] and got["ld_preload"] == ""
    assert run_py(wheel_venv, "-c", "import iniconfig").returncode == 0  # the user's package is still there


def test_wheel_version_py_is_the_stock_one_but_for_its_version_line(fca_wheel):
    stock = read_member(stock_wheel.find(HOUSE, PY), "torch/version.py").splitlines(keepends=True)
    ours = read_member(fca_wheel, "torch/version.py").splitlines(keepends=True)
    version = wheel.WheelName.parse(fca_wheel.name).version
    changed = [(a, b) for a, b in zip(stock, ours) if a != b]
    assert len(ours) == len(stock)
    assert changed == [("__version__ = '2.6.0+cu124'\n", f"__version__ = '{version}'\n")]


def test_torch_version_is_pip_s_and_keeps_the_cuda_version(fca_wheel, wheel_venv):
    code = "import importlib.metadata as md, torch; print(torch.__version__, md.version('torch'), torch.version.cuda)"
    proc = run_py(wheel_venv, "-c", code)
    assert proc.returncode == 0, proc.stderr
    version = wheel.WheelName.parse(fca_wheel.name).version
    assert proc.stdout.split() == [version, version, "12.4"]


def test_collect_env_reports_the_wheel_s_version(fca_wheel, wheel_venv):
    proc = run_py(wheel_venv, "-m", "torch.utils.collect_env")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert f"PyTorch version: {wheel.WheelName.parse(fca_wheel.name).version}" in lines
    assert "CUDA used to build PyTorch: 12.4" in lines


def test_torch_use_rtld_global_loads_the_stack_too(wheel_venv):
    # torch/__init__.py's other branch: libtorch loaded with RTLD_GLOBAL
    proc = run_py(wheel_venv, "-c", PROBE, MUL_APPLY_WITH_SAVED, env=clean_env(TORCH_USE_RTLD_GLOBAL="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["mul_apply_with_saved"].endswith("/torch/lib/libfca_overlay.so")
    assert got["aten_calls"] == 0 and got["ops_calls"] > 0 and got["grads_equal"]


CHILD = "print('libfca_overlay.so' in open('/proc/self/maps').read())"


def test_subprocess_spawn_and_torchrun_children_run_the_stack(wheel_venv, tmp_path):
    script = tmp_path / "children.py"
    script.write_text(textwrap.dedent(
        f"""
        import multiprocessing as mp, subprocess, sys
        import torch

        def child(q):
            import torch
            q.put('libfca_overlay.so' in open('/proc/self/maps').read())

        if __name__ == "__main__":
            sub = subprocess.run([sys.executable, "-c", "import torch; {CHILD}"], capture_output=True, text=True)
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start(); p.join()
            print(sub.stdout.strip(), q.get())
        """
    ))
    proc = run_py(wheel_venv, str(script))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True"]
    ranked = tmp_path / "ranked.py"
    ranked.write_text(f"import torch\n{CHILD}\n")
    proc = subprocess.run([str(wheel_venv / "bin" / "torchrun"), "--nproc-per-node=1", str(ranked)],
                          capture_output=True, text=True, timeout=HANG_TIMEOUT, env=clean_env())
    assert proc.returncode == 0 and proc.stdout.split() == ["True"], proc.stderr[-2000:]


CPP_FUNCTION = r"""
#include <torch/extension.h>
struct Square : public torch::autograd::Function<Square> {
  static constexpr bool is_traceable = true;
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    ctx->saved_data["empty"] = std::vector<int64_t>{};
    return x * x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    TORCH_CHECK(ctx->saved_data["empty"].toIntVector().empty());
    return {2 * ctx->get_saved_variables()[0] * g[0]};
  }
};
torch::Tensor square(const torch::Tensor& x) { return Square::apply(x); }
"""

CPP_UNDER_CA = textwrap.dedent(
    """
    import sys, torch
    from torch.utils.cpp_extension import load_inline
    from torch._dynamo import compiled_autograd
    m = load_inline(name="fca_wheel_square", cpp_sources=open(sys.argv[1]).read(), functions="square",
                    build_directory=sys.argv[2])
    graphs = []
    def compiler(gm):
        graphs.append(gm)
        return torch.compile(gm, backend="aot_eager", fullgraph=True)
    x = torch.randn(4, requires_grad=True)
    with compiled_autograd._enable(compiler):
        m.square(x).sum().backward()
    assert torch.allclose(x.grad, 2 * x)
    print(sorted({str(n.target).rsplit(".", 1)[-1] for n in graphs[0].graph.nodes if "CppNode" in str(n.target)}))
    """
)


def test_cpp_extension_built_against_the_installed_headers_records_its_op(wheel_venv, tmp_path):
    src = tmp_path / "square.cpp"
    src.write_text(CPP_FUNCTION)
    (tmp_path / "build").mkdir()
    proc = run_py(wheel_venv, "-c", CPP_UNDER_CA, str(src), str(tmp_path / "build"), timeout=HANG_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "['CppNode_Square']"


@pytest.mark.parametrize("script", ["train_mlp_compiled_autograd.py", "two_tensor_ca.py"])
def test_example_passes_on_the_wheel(wheel_venv, script):
    proc = run_py(wheel_venv, str(REPO_ROOT / "examples" / script))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("verdict: OK")


def program_verdicts(venv: Path, script: str, count: int, *args: str, **kwargs) -> dict:
    """``{program: "ok captures=N"}`` of an examples/ script (run with ``args``) that prints one
    line per program and a verdict; asserts that it ran ``count`` programs, all OK."""
    proc = run_py(venv, str(REPO_ROOT / "examples" / script), *args, timeout=HANG_TIMEOUT, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.strip().splitlines()[:-1])
    assert len(lines) == count and proc.stdout.strip().endswith("verdict: OK")
    return lines


def test_real_programs_give_eager_grads_on_the_wheel(wheel_venv):
    # examples/real_programs.py: ordinary training programs, backward under compiled autograd
    lines = program_verdicts(wheel_venv, "real_programs.py", 31)
    # the first capture is static: a new batch size or sequence length recaptures once with the changed
    # sizes dynamic (as on stock), later sizes reuse that capture; one capture where no size changes; the
    # first accumulation into existing .grad is a new capture, as everywhere, and the vector-Jacobian
    # program runs two backward graphs
    assert {name: v for name, v in lines.items() if v != "ok captures=2"} == {
        "module_hooks": "ok captures=1", "autocast_bf16": "ok captures=1", "inplace_views": "ok captures=1",
        "gradient_penalty": "ok captures=1", "weight_norm_ctc_fft": "ok captures=1",
        "custom_function_flags": "ok captures=1", "flex_attention_compiled": "ok captures=1",
        "grad_accumulation": "ok captures=3", "vector_jacobian": "ok captures=4", "lora_frozen_base": "ok captures=3"}


def test_autograd_api_programs_give_eager_results_on_the_wheel(wheel_venv):
    # examples/autograd_api_programs.py: tied weights, grad layout and identity, sparse grads, QAT,
    # parametrizations, packed LSTM, reentrant checkpointing, backward(inputs=), GradScaler, ...
    lines = program_verdicts(wheel_venv, "autograd_api_programs.py", 30)
    # two captures where the batch size changes (the static first capture, then one dynamic recapture)
    # or a later backward accumulates into existing grads; three where a compiled forward recompiles at
    # its first new size, or both; one where nothing changes but the values
    assert {name for name, v in lines.items() if v == "ok captures=1"} == {
        "index_put_accumulate", "vmap_rule_function", "embedding_bags"}
    assert {name for name, v in lines.items() if v == "ok captures=3"} == {
        "zero_grad_keeps_grads", "compiled_tied_adamw", "compiled_channels_last_bn",
        "compiled_attention_padding_mask", "compiled_module_hooks_every_layer"}
    assert all(v in ("ok captures=1", "ok captures=2", "ok captures=3") for v in lines.values())


def test_runtime_programs_give_eager_results_on_the_wheel(wheel_venv):
    # examples/runtime_programs.py: what changes between steps (frozen layers, dtype, requires_grad,
    # train/eval, ctx attributes, needs_input_grad) and the runtime's features (saved-tensor hooks,
    # materialize_grads, node hooks, DDP, a compiled step that calls backward, ...)
    lines = program_verdicts(wheel_venv, "runtime_programs.py", 24)
    # new ctx attribute values are read at run time, not baked into the capture
    assert lines["ctx_attributes_change_per_step"] == "ok captures=1"
    # unused outputs and a compiled step over new batch sizes: as many captures as stock 2.6 and 2.7
    # (the static first capture; a forward whose outputs go unused changes what the backward runs)
    assert [lines[name] for name in ("unused_output_materialize_both_ways", "compiled_forward_unused_outputs",
                                     "compiled_step_calls_backward")] == ["ok captures=4", "ok captures=3", "ok captures=3"]
    # in-place through view_as_real: its CopySlices runs eagerly in the graph (stock 2.6 and 2.7 raise)
    assert lines["complex_in_place_views"] == "ok captures=2"
    assert all(v in ("ok captures=1", "ok captures=2", "ok captures=3", "ok captures=4") for v in lines.values())


def test_cpp_extension_programs_give_eager_grads_on_the_wheel(wheel_venv):
    # examples/cpp_extension_programs.py: an extension built against the wheel's headers, its C++
    # autograd Functions not traceable: saved non-Tensor data, needs_input_grad, a non-differentiable
    # output, a dirty input, materialize_grads off, a TORCH_LIBRARY op's Autograd kernel. Its build dir
    # is a cache: ninja rebuilds it only when the source, the flags or a header (a new wheel) change
    build = paths.cache_dir() / "examples" / "cpp-extension-programs"
    lines = program_verdicts(wheel_venv, "cpp_extension_programs.py", 5, "aot_eager", str(build))
    # three captures each: the first static; the second batch accumulates into the first's grads (a new
    # capture everywhere), at its own sizes; the third batch size recaptures with the changed sizes dynamic
    # (the shape saved as an int list among them, a size input, P30), which later sizes would reuse
    assert set(lines.values()) == {"ok captures=3"}


def pinned(requirements: str, name: str) -> str:
    """``name==version`` as tools/requirements/``requirements`` pins it."""
    lines = (REPO_ROOT / "tools" / "requirements" / requirements).read_text().splitlines()
    return next(line.strip() for line in lines if line.startswith(f"{name}=="))


def test_torchvision_programs_give_eager_grads_on_the_wheel(wheel_venv):
    # examples/torchvision_programs.py: torchvision from PyPI, built against stock 2.6.0's headers: the
    # backwards of roi_align, roi_pool, ps_roi_align and deform_conv2d are C++ autograd Functions whose
    # compiled_args (stock's, inlined into torchvision) raises; each runs eagerly in the graph instead.
    # Then three classifiers, two of them with stochastic depth (stock 2.6 gets their grads wrong)
    version = bench_models.TORCHVISION["2.6"]
    target = paths.cache_dir() / "examples" / f"torchvision-{version}"
    # with what it needs that the wheel does not, at the pins the repo already has
    needs = [pinned("torch-venv.txt", "numpy"), pinned("models.txt", "pillow")]
    bench_models.pip_target(wheel_venv / "bin" / "python", target, [f"torchvision=={version}", *needs],
                            f"torchvision {version} for examples/torchvision_programs.py", Shell(verbose=False))
    lines = program_verdicts(wheel_venv, "torchvision_programs.py", 8, env=clean_env(PYTHONPATH=str(target)))
    # two captures each: the first static, the second (a new batch or image size) with the changed sizes
    # dynamic, as on stock
    assert set(lines.values()) == {"ok captures=2"}


def test_a_foreign_libtorch_is_refused_at_import_with_one_line(wheel_venv):
    stamp = next(wheel_venv.glob(f"lib/python3*/site-packages/torch/lib/{torch_hook.STAMP_NAME}"))
    original = stamp.read_text()
    data = json.loads(original)
    data["build_ids"]["libtorch_cpu.so"] = "00" * 20
    try:
        stamp.write_text(json.dumps(data))
        proc = run_py(wheel_venv, "-c", "import torch")
    finally:
        stamp.write_text(original)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: torch 2.6.0+fca.")
    assert "built against libtorch_cpu.so with build-id 0000" in last and "has build-id " in last


def test_libtorch_loaded_before_torch_is_refused(wheel_venv):
    code = ("import ctypes, glob, sys; ctypes.CDLL(glob.glob(sys.prefix + '/lib/python3*/site-packages/torch/lib/"
            "libtorch_cpu.so')[0]); import torch")
    proc = run_py(wheel_venv, "-c", code)
    assert proc.returncode == 1 and "libtorch was loaded before the functional compiled autograd overlay" in proc.stderr


def test_a_tampered_wheel_is_refused_by_pip_hash_checking_and_by_its_record(fca_wheel, wheel_venv, tmp_path):
    # pip does not compare a wheel's files with its RECORD (pip 23-26); what refuses a changed file is
    # the wheel's own sha256 in hash-checking mode, and RECORD verification.
    good = wheel.file_sha256(fca_wheel)
    bad = tmp_path / fca_wheel.name
    with zipfile.ZipFile(fca_wheel) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            if info.filename.endswith(".so") and info.filename != "torch/lib/libfca_overlay.so":
                continue  # keep the copy small: the tampering is what matters
            data = src.read(info)
            if info.filename == "torch/_dynamo/compiled_autograd.py":
                data += b"\n# tampered\n"
            dst.writestr(info, data)
    req = tmp_path / "requirements.txt"
    req.write_text(f"torch @ file://{bad} --hash=sha256:{good}\n")
    proc = pip(wheel_venv, "install", "--dry-run", "--no-deps", "--require-hashes", "-r", str(req))
    assert proc.returncode != 0 and "THESE PACKAGES DO NOT MATCH THE HASHES" in proc.stderr
    with pytest.raises(ValueError, match="torch/_dynamo/compiled_autograd.py does not match its RECORD line"):
        wheel.verify(bad)


def test_force_reinstalling_stock_torch_brings_stock_back(wheel_venv):
    # last in this file: it takes the wheel out of the session's venv
    proc = pip(wheel_venv, "install", "-q", "--no-index", "--find-links", str(HOUSE), "--force-reinstall", "--no-deps",
               "torch==2.6.0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = probe(wheel_venv)
    assert got["mul_apply_with_saved"] is None and got["aten_calls"] > 0 and got["ops_calls"] == 0 and got["grads_equal"]
    assert not list(wheel_venv.glob("lib/python3*/site-packages/torch/lib/libfca_overlay.so"))
    assert pip(wheel_venv, "uninstall", "-y", "-q", "torch").returncode == 0
    assert "No module named 'torch'" in run_py(wheel_venv, "-c", "import torch").stderr
    shutil.rmtree(wheel_venv)


def python313() -> str | None:
    """A CPython 3.13 with its headers: $FCA_TEST_PYTHON313, python3.13 on PATH, or pyenv's."""
    import glob

    candidates = [os.environ.get("FCA_TEST_PYTHON313"), shutil.which("python3.13"),
                  *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3.13")))]
    for cand in filter(None, candidates):
        proc = subprocess.run([cand, "-c", "import os, sysconfig; print(os.path.exists("
                                           "os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"],
                              capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip() == "True":
            return cand
    return None


def test_a_wheel_for_python_3_13_runs_the_stack_in_a_313_venv(overlay, tmp_path):
    py = python313()
    if py is None:
        pytest.skip("no CPython 3.13 with headers here (set FCA_TEST_PYTHON313)")
    # a cold 3.13 overlay (its venv, then every TU compiled): 4 min here alone, over 10 with other jobs
    res = run_tool("build_wheel", "--python", py, "-o", tmp_path / "dist", timeout=HANG_TIMEOUT)
    assert res.returncode == 0, res.stderr[-3000:]
    (whl,) = (tmp_path / "dist").glob("torch-2.6.0+fca.*-cp313-cp313-linux_x86_64.whl")
    venv = tmp_path / "venv313"
    subprocess.run([py, "-m", "venv", str(venv)], check=True)
    proc = pip(venv, "install", "-q", "--no-index", "--find-links", str(HOUSE), str(whl))
    assert proc.returncode == 0, proc.stderr[-3000:]
    try:
        got = probe(venv)
    finally:
        shutil.rmtree(venv)  # 5 GB: pytest keeps the temp dirs of its last three runs
    assert got["mul_apply_with_saved"] == str(venv / "lib/python3.13/site-packages/torch/lib/libfca_overlay.so")
    assert got["aten_calls"] == 0 and got["ops_calls"] > 0 and got["grads_equal"]
