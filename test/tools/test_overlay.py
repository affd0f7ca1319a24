"""tools/overlay.py: the overlay is live, transparent, and refuses what it cannot run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT, export_stack, git, run_tool
from tools.lib import paths
from tools.lib.overlay import compile as cc, generated, install
from tools.lib.overlay.venv import TORCH_VERSION, validate_torch
from tools.lib.ui import UserError

OVERLAY = paths.cache_dir() / "overlay"
VENV = OVERLAY / "venv"

MUL_APPLY_WITH_SAVED = (
    "_ZN5torch8autograd9generated12MulBackward016apply_with_savedERKSt6vectorIN2at6TensorESaIS5_EE"
    "RNS_6dynamo8autograd18SwapSavedVariablesE"
)
CA_INIT = "_ZN5torch6dynamo8autograd37torch_c_dynamo_compiled_autograd_initEv"
MUL_VTABLE = "_ZTVN5torch8autograd9generated12MulBackward0E"


@pytest.fixture(scope="session")
def overlay(pinned_source) -> Path:
    """The overlay for the repo's stack, built (incrementally) by the real tool."""
    assert run_tool("apply_patches").returncode == 0
    res = run_tool("overlay", "build")
    assert res.returncode == 0, res.stderr[-3000:]
    return OVERLAY / "lib" / cc.LIB_NAME


def in_overlay(code: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "overlay.py"), *extra, "run", "--", "python", "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=900,
    )


WHERE = """
import ctypes, sys
import torch
class Dl_info(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
libc = ctypes.CDLL(None)
libc.dlsym.restype = ctypes.c_void_p
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(Dl_info)]
for name in sys.argv[1:]:
    addr = libc.dlsym(None, name.encode())
    info = Dl_info()
    assert addr and libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)), name
    print(name, info.dli_fname.decode())
"""


def test_generated_functions_h_is_byte_identical_to_the_wheel(overlay):
    gen = OVERLAY / "build" / "gen" / "torch/csrc/autograd/generated/Functions.h"
    wheel = next(VENV.glob("lib/python3*/site-packages/torch/include/torch/csrc/autograd/generated/Functions.h"))
    assert gen.read_bytes() == wheel.read_bytes()
    # the _foreach_ nodes that match_differentiability_info adds are there too
    assert "struct TORCH_API ForeachAddBackward0List" in gen.read_text()


def test_generated_nodes_and_ca_entry_point_resolve_into_the_overlay(overlay):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "overlay.py"), "run", "--", "python", "-c", WHERE,
         MUL_APPLY_WITH_SAVED, CA_INIT, MUL_VTABLE],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    resolved = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert resolved == {MUL_APPLY_WITH_SAVED: str(overlay), CA_INIT: str(overlay), MUL_VTABLE: str(overlay)}


def test_compiled_autograd_backward_in_overlay_matches_eager(overlay):
    proc = in_overlay(
        """
        import torch
        from torch._dynamo import compiled_autograd
        from torch._dynamo.utils import counters

        def grads(compiled):
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
            x = torch.randn(5, 8)
            loss = (model(x) * 3.0).sigmoid().sum()
            if compiled:
                with compiled_autograd._enable(torch.compile(backend="aot_eager", fullgraph=True)):
                    loss.backward()
            else:
                loss.backward()
            return [p.grad for p in model.parameters()]

        eager, ca = grads(False), grads(True)
        assert all(torch.allclose(a, b) for a, b in zip(eager, ca))
        assert counters["compiled_autograd"]["captures"] == 1
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_python_children_get_the_overlay_and_other_children_do_not(overlay):
    proc = in_overlay(
        """
        import os, subprocess, sys
        assert "libfca_overlay.so" in open("/proc/self/maps").read()
        child = subprocess.run(["sh", "-c", 'echo "[$LD_PRELOAD]"; g++ --version >/dev/null && echo gxx-ok'],
                               capture_output=True, text=True)
        py = subprocess.run([sys.executable, "-c", "print('libfca_overlay.so' in open('/proc/self/maps').read())"],
                            capture_output=True, text=True)
        print(child.stdout.split(), py.stdout.strip(), sys.executable)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("] ")[0] == "['[]', 'gxx-ok'"
    assert proc.stdout.strip().endswith(f"True {VENV / 'bin' / 'python'}")


def test_overlay_built_from_another_stack_is_refused(overlay, tmp_path):
    other = tmp_path / "other stack"
    shutil.copytree(paths.DEFAULT_STACK_DIR, other)
    (other / "0001-extra.patch").write_text((REPO_ROOT / "test/tools/data/extra.patch").read_text())
    (other / "series").write_text("0001-extra.patch\n")
    for verb in (["run", "--", "python", "-c", "pass"], ["env"]):
        res = run_tool("overlay", "--stack", other, *verb)
        assert res.returncode == 3 and "built from another stack/tree" in res.error_line, res.stderr


def test_overlay_library_refuses_to_load_into_a_different_torch(overlay, tmp_path):
    """The load-time guard: a stamp expecting other build-ids ends the process with a clear error."""
    src = tmp_path / "stamp.cpp"
    src.write_text(generated.render_stamp({"test": True}, {"libtorch_cpu.so": "00" * 20}))
    lib = tmp_path / "libstamp.so"
    torch_lib = next(VENV.glob("lib/python3*/site-packages/torch/lib"))
    # Like the overlay itself, the library depends on the wheel's libtorch_cpu, so it is loaded at start.
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src), "-Wl,--no-as-needed", f"-L{torch_lib}", "-ltorch_cpu",
                    f"-Wl,-rpath,{torch_lib}"], check=True)
    from tools.lib.overlay.venv import real_python

    proc = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import torch; print('loaded')"],
        executable=str(real_python(VENV)), capture_output=True, text=True, env={"LD_PRELOAD": str(lib), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 3
    assert "built against libtorch_cpu.so with build-id 0000" in proc.stderr
    assert "rebuild it with `python tools/overlay.py build`" in proc.stderr


@pytest.mark.parametrize(
    "version, abi, message",
    [
        ("2.13.0+cpu", False, f"has torch 2.13.0+cpu, but the overlay is built for torch=={TORCH_VERSION}"),
        ("2.6.0+cu124", True, "built with _GLIBCXX_USE_CXX11_ABI=1; the overlay needs the stock torch==2.6.0 wheel"),
    ],
)
def test_wrong_torch_version_or_abi_is_refused(tmp_path, version, abi, message):
    with pytest.raises(UserError, match=message.replace("+", r"\+").replace("(", r"\(")):
        validate_torch(tmp_path, version, abi)
    validate_torch(tmp_path, "2.6.0+cu124", False)


def test_missing_compiler_is_a_clear_error_and_leaves_the_venv_usable(overlay):
    res = run_tool("overlay", "build", env={"CXX": "/nonexistent/g++"})
    assert res.returncode == 3 and "C++ compiler `/nonexistent/g++` not found" in res.error_line
    assert in_overlay("import torch; print(torch.__version__)").stdout.startswith("2.6.0")


def test_missing_python_headers_is_a_clear_error(tmp_path):
    from tools.overlay import check_python_headers

    with pytest.raises(UserError, match="Python headers are missing"):
        check_python_headers(tmp_path, Path("/usr/bin/python3"))


def _wheel_layout(tmp_path: Path, tree: Path) -> cc.Layout:
    torch_dir = next(VENV.glob("lib/python3*/site-packages/torch"))
    import sysconfig

    return cc.Layout(tree=tree, build=tmp_path, torch_dir=torch_dir, python_include=Path(sysconfig.get_paths()["include"]))


def test_unresolved_symbol_is_listed_with_where_it_is_defined(overlay, pinned_source, tmp_path):
    """Without the shim, TypeAndSize::zeros (not exported by libtorch) is reported, with its home."""
    src = tmp_path / "uses_zeros.cpp"
    src.write_text("#include <torch/csrc/autograd/function.h>\nat::Tensor f(torch::autograd::TypeAndSize& t) { return t.zeros(); }\n")
    layout = _wheel_layout(tmp_path, pinned_source)
    obj = tmp_path / "uses_zeros.o"
    subprocess.run(["g++", *cc.COMMON_FLAGS, "-O0", *cc.LIB_FLAGS["cpu"], *layout.include_flags(), "-c", str(src), "-o", str(obj)], check=True)
    (tmp_path / "logs").mkdir()
    with pytest.raises(UserError) as err:
        cc.link(layout, [obj], tmp_path / "lib.so", "", "")
    assert "torch::autograd::TypeAndSize::zeros()" in str(err.value)
    assert "defined in torch/csrc/autograd/function.cpp" in str(err.value)


def test_layout_changing_header_is_refused_naming_entity_and_source(overlay, pin_clone, tmp_path):
    repo = pin_clone()
    header = repo / "torch/csrc/autograd/input_buffer.h"
    text = header.read_text()
    assert "  std::vector<Variable> buffer;\n" in text
    header.write_text(text.replace("  std::vector<Variable> buffer;\n", "  std::vector<Variable> buffer;\n  int64_t fca_extra = 0;\n", 1))
    git(repo, "commit", "-qam", "[compiled autograd] grow InputBuffer\n\nTest Plan: refused by the overlay")
    stack = export_stack(repo, tmp_path / "stack")
    res = run_tool("overlay", "--overlay-dir", tmp_path / "ov", "--venv", VENV, "--stack", stack, "plan", "--torch-src", repo)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "torch/csrc/autograd/input_buffer.h changes torch::autograd::InputBuffer (layout" in res.error_line
    assert "which is not in the overlay" in res.error_line


def test_additive_header_change_passes_the_abi_check(overlay, pin_clone, tmp_path):
    repo = pin_clone()
    header = repo / "torch/csrc/dynamo/compiled_autograd.h"
    header.write_text(header.read_text() + "\nnamespace torch::dynamo::autograd {\nTORCH_API int fca_additive_probe();\n}\n")
    git(repo, "commit", "-qam", "[compiled autograd] additive declaration\n\nTest Plan: passes the ABI check")
    stack = export_stack(repo, tmp_path / "stack")
    res = run_tool("overlay", "--overlay-dir", tmp_path / "ov", "--venv", VENV, "--stack", stack, "plan", "--torch-src", repo)
    assert res.returncode == 0, res.stderr
    assert "torch/csrc/dynamo/compiled_autograd.h: additive" in res.stdout


def test_install_and_clean_restore_stock_files_exactly(tmp_path):
    """File level: patched .py and headers go in, `clean` restores the stock bytes and wrappers."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    sp = next(venv.glob("lib/python3*/site-packages"))
    torch_dir = sp / "torch"
    (torch_dir / "_dynamo").mkdir(parents=True)
    (torch_dir / "include/torch/csrc/dynamo").mkdir(parents=True)
    (torch_dir / "_dynamo/compiled_autograd.py").write_text("stock py\n")
    (torch_dir / "include/torch/csrc/dynamo/compiled_autograd.h").write_text("stock h\n")
    tree = tmp_path / "tree"
    (tree / "torch/_dynamo").mkdir(parents=True)
    (tree / "torch/csrc/dynamo").mkdir(parents=True)
    (tree / "torch/_dynamo/compiled_autograd.py").write_text("patched py\n")
    (tree / "torch/csrc/dynamo/compiled_autograd.h").write_text("patched h\n")
    (tree / "torch/csrc/dynamo/new.h").write_text("new h\n")
    before = {p: p.read_bytes() for p in sp.rglob("*") if p.is_file()}
    links = {p.name: (p.is_symlink(), p.resolve()) for p in (venv / "bin").iterdir()}
    changed = ["torch/_dynamo/compiled_autograd.py", "torch/csrc/dynamo/compiled_autograd.h", "torch/csrc/dynamo/new.h", "test/x.py"]
    record = install.install(venv, torch_dir, tree, changed, tmp_path / "lib.so", tmp_path / "state")
    assert sorted(record["files"]) == [
        "torch/_dynamo/compiled_autograd.py", "torch/include/torch/csrc/dynamo/compiled_autograd.h",
        "torch/include/torch/csrc/dynamo/new.h",
    ]
    assert (torch_dir / "_dynamo/compiled_autograd.py").read_text() == "patched py\n"
    assert "LD_PRELOAD" in (venv / "bin/python").read_text()
    assert install.uninstall(venv, tmp_path / "state") == 3
    assert {p: p.read_bytes() for p in sp.rglob("*") if p.is_file()} == before
    assert {p.name: (p.is_symlink(), p.resolve()) for p in (venv / "bin").iterdir()} == links


def test_clean_refuses_to_overwrite_an_edited_installed_file(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    sp = next(venv.glob("lib/python3*/site-packages"))
    (sp / "torch/_dynamo").mkdir(parents=True)
    (sp / "torch/_dynamo/x.py").write_text("stock\n")
    (tmp_path / "tree/torch/_dynamo").mkdir(parents=True)
    (tmp_path / "tree/torch/_dynamo/x.py").write_text("patched\n")
    install.install(venv, sp / "torch", tmp_path / "tree", ["torch/_dynamo/x.py"], tmp_path / "lib.so", tmp_path / "state")
    (sp / "torch/_dynamo/x.py").write_text("my debugging edit\n")
    with pytest.raises(UserError, match="was edited after the overlay installed it"):
        install.uninstall(venv, tmp_path / "state")
    assert (sp / "torch/_dynamo/x.py").read_text() == "my debugging edit\n"


def test_status_and_env(overlay):
    status = run_tool("overlay", "status")
    assert status.returncode == 0 and "up to date with the stack" in status.stdout
    env = run_tool("overlay", "env")
    assert env.returncode == 0
    assert f"export VIRTUAL_ENV={VENV}" in env.stdout and "export FCA_OVERLAY_LIB=" in env.stdout
    stamp = json.loads((OVERLAY / "stamp.json").read_text())
    assert stamp["torch"].startswith("2.6.0") and set(stamp["build_ids"]) == {"libtorch_cpu.so", "libtorch_python.so"}
