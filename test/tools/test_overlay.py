"""tools/overlay.py: the overlay is live, transparent, and refuses what it cannot run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, WHERE_DEFINED, export_stack, git, run_tool
from tools.lib import paths
from tools.lib.overlay import checks, compile as cc, generated, install
from tools.lib.overlay.venv import TORCH_VERSION, site_packages, validate_torch
from tools.lib.ui import UserError

OVERLAY = paths.cache_dir() / "overlay"
VENV = OVERLAY / "venv"

MUL_APPLY_WITH_SAVED = (
    "_ZN5torch8autograd9generated12MulBackward016apply_with_savedERKSt6vectorIN2at6TensorESaIS5_EE"
    "RNS_6dynamo8autograd18SwapSavedVariablesE"
)
CA_INIT = "_ZN5torch6dynamo8autograd37torch_c_dynamo_compiled_autograd_initEv"
MUL_VTABLE = "_ZTVN5torch8autograd9generated12MulBackward0E"


def in_overlay(code: str, *extra: str, args: tuple[str, ...] = (), env: dict[str, str] | None = None,
               timeout: int = HANG_TIMEOUT) -> subprocess.CompletedProcess:
    """``overlay.py [extra] run -- python -c CODE [args]``: overlay options before ``run``, script args after."""
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "overlay.py"), *extra, "run", "--", "python", "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


WHERE = WHERE_DEFINED + """
import sys
import torch
for name in sys.argv[1:]:
    assert where(name), name
    print(name, where(name))
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
        capture_output=True, text=True, timeout=HANG_TIMEOUT,
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


COPY_SLICES_APPLY = "_ZN5torch8autograd10CopySlices5applyEOSt6vectorIN2at6TensorESaIS4_EE"


def test_copyslices_in_the_overlay_reaches_the_engines_graph_task_through_the_bridge(overlay):
    # functions/tensor.cpp is in the overlay (the stack changes CopyBackwards),
    # so its CopySlices runs there; with torch.autograd.grad(inputs=...) it marks
    # its fn's next node as needed in the engine's own exec_info, through the
    # add_node_to_current_graph_task_exec_info bridge.  Were the bridge acting
    # on other state, the slice's gradient would be missing.
    tus = json.loads((OVERLAY / "build-report.json").read_text())["tus"]
    if not any(tu["path"] == "torch/csrc/autograd/functions/tensor.cpp" for tu in tus):
        pytest.skip("the stack does not change functions/tensor.cpp")
    code = WHERE.replace("import torch\n", "import torch\n" + textwrap.dedent("""
        base = torch.randn(4, requires_grad=True)
        x = torch.randn(2, requires_grad=True)
        a = base.clone()
        a[:2].mul_(x)
        (g,) = torch.autograd.grad((a * 3).sum(), [base])
        expected = torch.cat([x.detach() * 3, torch.full((2,), 3.0)])
        assert torch.equal(g, expected), (g, expected)
        """), 1)
    proc = in_overlay(code, args=(COPY_SLICES_APPLY,), timeout=HANG_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [COPY_SLICES_APPLY, str(overlay)]


def test_a_bridge_refuses_a_tree_whose_helper_changed(pinned_source, tmp_path):
    # A bridge reimplements a non-exported helper that touches libtorch's state;
    # if the tree's helper is not the one it was written for, the build stops.
    for rel in {s.source for s in generated.SHIMS} | {b.source for b in generated.BRIDGES}:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(pinned_source / rel, tmp_path / rel)
    assert "add_node_to_current_graph_task_exec_info" in generated.render_shims(tmp_path)
    engine = tmp_path / "torch/csrc/autograd/engine.cpp"
    engine.write_text(engine.read_text().replace(
        "current_graph_task->exec_info_[fn].needed_ = true;",
        "current_graph_task->exec_info_[fn].needed_ = fn != nullptr;"))
    with pytest.raises(UserError, match=r"engine.cpp changed the helper the overlay reimplements .*update BRIDGES"):
        generated.render_shims(tmp_path)


CPP_FUNCTION_UNDER_CA = r'''
import sys
import torch
from torch._dynamo import compiled_autograd
from torch.utils.cpp_extension import load_inline

SOURCE = """
struct Square : public torch::autograd::Function<Square> {
  static constexpr bool is_traceable = true;
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad) {
    return {grad[0] * 2 * ctx->get_saved_variables()[0]};
  }
};
torch::Tensor square(const torch::Tensor& x) { return Square::apply(x); }
"""
name, include = sys.argv[1], sys.argv[2:]
mod = load_inline(name=name, cpp_sources=SOURCE, functions="square", extra_include_paths=include)
x = torch.randn(5, requires_grad=True)
mod.square(x).sum().backward()
eager, x.grad = x.grad, None
graphs = []
with torch.autograd.set_multithreading_enabled(False):
    with compiled_autograd._enable(lambda gm: graphs.append(gm) or gm):
        mod.square(x).sum().backward()
assert torch.allclose(eager, x.grad), (eager, x.grad)
print(sorted({n.target.__name__ for n in graphs[0].graph.nodes
              if isinstance(n.target, compiled_autograd.Op) and n.target.__name__.startswith("CppNode_")}))
'''


def _stock_custom_function_h(pinned_source: Path, tmp_path: Path) -> Path:
    """An include dir with the pin's custom_function.h (skip if the stack does not change it)."""
    rel = "torch/csrc/autograd/custom_function.h"
    stock = subprocess.run(["git", "-C", str(pinned_source), "show", f"v2.6.0:{rel}"],
                           capture_output=True, text=True, check=True).stdout
    installed = next(VENV.glob(f"lib/python3*/site-packages/torch/include/{rel}")).read_text()
    if installed == stock:
        pytest.skip("the stack does not change custom_function.h")
    (tmp_path / "stock" / rel).parent.mkdir(parents=True)
    (tmp_path / "stock" / rel).write_text(stock)
    return tmp_path / "stock"


def _built_both_ways(script: str, name: str, pinned_source: Path, tmp_path: Path) -> dict[str, str]:
    """``script``'s last output line for the extension ``name`` built against the pin's
    custom_function.h (``<name>_stock``) and against the installed, patched one (``<name>_patched``)."""
    stock = _stock_custom_function_h(pinned_source, tmp_path)
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    results = {}
    for variant, include in (("stock", [str(stock)]), ("patched", [])):
        proc = in_overlay(script, "-q", args=(f"{name}_{variant}", *include), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[variant] = proc.stdout.strip().splitlines()[-1]
    return results


def test_cpp_function_extension_built_against_stock_headers_keeps_stock_behaviour(overlay, pinned_source, tmp_path):
    # The stack changes CppNode<T>'s inline member functions (not its layout).
    # An extension compiled against the stock custom_function.h carries the
    # stock apply_with_saved: in the overlay its backward is still traced
    # inline, exactly as on stock, with eager-equal grads.  The same source
    # compiled against the installed (patched) headers records one opaque op.
    results = _built_both_ways(CPP_FUNCTION_UNDER_CA, "fca_square", pinned_source, tmp_path)
    assert results == {"stock": "[]", "patched": "['CppNode_Square']"}


MEAN_ROWS_UNDER_CA = r'''
import sys
import torch
from torch._dynamo import compiled_autograd
from torch.utils.cpp_extension import load_inline

SOURCE = """
struct MeanRows : public torch::autograd::Function<MeanRows> {
  static constexpr bool is_traceable = true;
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    return x * 1;
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad) {
    return {grad[0] / at::ones_symint({grad[0].sym_size(0)}, grad[0].options()).sum()};
  }
};
torch::Tensor mean_rows(const torch::Tensor& x) { return MeanRows::apply(x); }
"""
name, include = sys.argv[1], sys.argv[2:]
mod = load_inline(name=name, cpp_sources=SOURCE, functions="mean_rows", extra_include_paths=include)
a, b = torch.randn(5, 3, requires_grad=True), torch.randn(7, 3, requires_grad=True)
loss = lambda: mod.mean_rows(a.sin()).sum() + mod.mean_rows(b.sin()).sum()
loss().backward()
eager, a.grad, b.grad = (a.grad, b.grad), None, None
try:
    with torch.autograd.set_multithreading_enabled(False), compiled_autograd._enable(lambda gm: gm):
        loss().backward()
except compiled_autograd.CompiledAutogradDummySizeError as err:
    print("refused:", str(err).splitlines()[0])
else:
    print("equal" if all(torch.allclose(e, g) for e, g in zip(eager, (a.grad, b.grad))) else "WRONG")
'''


def test_a_stock_header_extension_reading_grad_sizes_is_refused_and_a_rebuilt_one_works(overlay, pinned_source, tmp_path):
    """A C++ Function built against the stock header is traced inline on the capture's placeholder
    grads; a backward that reads a grad's size would read another tensor's (the placeholders of one
    rank share their sizes), so the capture refuses it, naming the node and the fix; built against
    the installed headers it is one opaque op and gives eager's grads."""
    results = _built_both_ways(MEAN_ROWS_UNDER_CA, "fca_mean_rows", pinned_source, tmp_path)
    assert results["patched"] == "equal"
    assert results["stock"].startswith("refused: compiled autograd: torch::autograd::CppNode<MeanRows> (NodeCall ")
    assert "rebuild the C++ extension that defines it against the installed torch's headers" in results["stock"]


def test_python_children_get_the_overlay_and_other_children_see_no_preload(overlay):
    """The venv's torch is the patched wheel: any Python process that imports torch loads the
    overlay (no wrapper, no LD_PRELOAD), and compilers run with nothing preloaded."""
    proc = in_overlay(
        """
        import os, subprocess, sys
        import torch
        assert "libfca_overlay.so" in open("/proc/self/maps").read()
        child = subprocess.run(["sh", "-c", 'echo "[$LD_PRELOAD]"; g++ --version >/dev/null && echo gxx-ok'],
                               capture_output=True, text=True)
        py = subprocess.run([sys.executable, "-c", "import torch; print('libfca_overlay.so' in open('/proc/self/maps').read())"],
                            capture_output=True, text=True)
        print(child.stdout.split(), py.stdout.strip(), sys.executable)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("] ")[0] == "['[]', 'gxx-ok'"
    assert proc.stdout.strip().endswith(f"True {VENV / 'bin' / 'python'}")
    assert (VENV / "bin" / "python").is_symlink()


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
    from tools.lib.overlay.build import check_python_headers

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


def _torch_probe() -> list[str]:
    """The overlay venv's torch as pip and compiled autograd see it: version, patched C++ or not."""
    proc = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import importlib.metadata as m, torch; "
         "print(m.version('torch'), hasattr(torch._C._dynamo.compiled_autograd, 'note_proxied_call'))"],
        capture_output=True, text=True, timeout=HANG_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_build_installs_the_patched_wheel_and_clean_reinstalls_stock(overlay):
    """One build, two installs: the overlay venv's torch is the wheel build_wheel.py makes, installed
    by pip; `clean` puts the stock wheel back, and `build` installs the patched one again."""
    stamp = json.loads((OVERLAY / "stamp.json").read_text())
    patched = f"2.6.0+fca.{stamp['stack']}"
    assert _torch_probe() == [patched, "True"]
    record = install.installed(OVERLAY / "state")
    assert record["version"] == patched and (OVERLAY / "wheel" / "dist" / record["wheel"]).is_file()
    try:
        res = run_tool("overlay", "clean")
        assert res.returncode == 0 and f"stock torch reinstalled in {VENV} (was {patched})" in res.stdout, res.stderr
        assert _torch_probe() == ["2.6.0", "False"]
        res = run_tool("overlay", "run", "--", "python", "-c", "pass")
        assert res.returncode == 3 and "no overlay is built" in res.error_line
    finally:
        res = run_tool("overlay", "build")
    assert res.returncode == 0, res.stderr[-3000:]
    assert _torch_probe() == [patched, "True"]


def test_an_edited_torch_file_stops_clean_and_is_kept(overlay):
    """User edits are never overwritten: a file of the installed wheel edited after pip installed it
    stops `clean` (and a reinstall) with its name; put back, the venv is as it was."""
    target = next(VENV.glob("lib/python3*/site-packages/torch/_dynamo/compiled_autograd.py"))
    original = target.read_bytes()
    target.write_bytes(original + b"# my debugging edit\n")
    try:
        res = run_tool("overlay", "clean")
        assert res.returncode == 3, res.stdout + res.stderr
        assert f"{target} was edited after pip installed it" in res.error_line
        assert target.read_bytes().endswith(b"# my debugging edit\n")
    finally:
        target.write_bytes(original)
    assert install.edited_files(VENV) == []
    assert f"installed in {VENV}: yes" in run_tool("overlay", "status").stdout


def test_a_copied_files_overlay_venv_is_migrated_to_plain_interpreter_links(tmp_path):
    """A venv from the copied-files overlay (bin/python a wrapper that set LD_PRELOAD, a .pth hook,
    installed.json) gets its interpreter links back before pip replaces torch."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    sp = next(venv.glob("lib/python3*/site-packages"))
    links = {p.name: os.readlink(p) for p in (venv / "bin").iterdir() if p.is_symlink()}
    for name in ("python", "python3"):
        (venv / "bin" / name).unlink()
        (venv / "bin" / name).write_text("#!/bin/bash\nexport LD_PRELOAD=/x/libfca_overlay.so\n")
    (sp / "fca_overlay.pth").write_text("import os\n")
    state = tmp_path / "state"
    (state / "stock").mkdir(parents=True)
    (state / install.LEGACY_MANIFEST).write_text(json.dumps(
        {"files": {}, "wrappers": {"python": links["python"], "python3": links["python3"]},
         "pth": str((sp / "fca_overlay.pth").relative_to(venv))}))
    assert install._migrate_legacy(venv, state) is True
    assert {p.name: os.readlink(p) for p in (venv / "bin").iterdir() if p.is_symlink()} == links
    assert not (sp / "fca_overlay.pth").exists() and not (state / "stock").exists()
    assert not (state / install.LEGACY_MANIFEST).exists()
    assert install._migrate_legacy(venv, state) is False


def test_run_keeps_cpp_extensions_per_stack_unless_the_caller_sets_a_dir(overlay, monkeypatch):
    """torch's JIT loader does not rebuild an extension when torch's headers change, so `run`
    defaults TORCH_EXTENSIONS_DIR to a dir of the overlay's for this stack; a caller's wins."""
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    show = "import os; print(os.environ['TORCH_EXTENSIONS_DIR'])"
    stack = json.loads((OVERLAY / "stamp.json").read_text())["stack"]
    assert in_overlay(show).stdout.strip() == str(OVERLAY / "state" / "torch_extensions" / stack)
    assert in_overlay(show, env={**os.environ, "TORCH_EXTENSIONS_DIR": "/mine"}).stdout.strip() == "/mine"


def test_status_and_env(overlay, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    status = run_tool("overlay", "status")
    assert status.returncode == 0 and "up to date with the stack" in status.stdout
    env = run_tool("overlay", "env")
    assert env.returncode == 0
    stamp = json.loads((OVERLAY / "stamp.json").read_text())
    assert f"export VIRTUAL_ENV={VENV}" in env.stdout
    assert f"export TORCH_EXTENSIONS_DIR={OVERLAY / 'state' / 'torch_extensions' / stamp['stack']}" in env.stdout
    assert stamp["torch"].startswith("2.6.0") and set(stamp["build_ids"]) == {"libtorch_cpu.so", "libtorch_python.so"}


def test_abi_probe_leaves_out_the_standard_librarys_classes(tmp_path):
    """A torch header's probe dumps some 30k std:: instantiations; only the header's own
    classes (and those of the headers it includes outside the standard library) are kept."""
    inc = tmp_path / "inc"
    (inc / "fca").mkdir(parents=True)
    (inc / "fca/a.h").write_text("#include <optional>\n#include <vector>\nstruct B { int x; };\n"
                                 "struct A { std::vector<B> bs; std::optional<B> b; virtual ~A(); };\n")
    layouts = checks.class_layouts("fca/a.h", [f"-I{inc}"], [], tmp_path / "abi-probes")
    assert set(layouts) == {"A", "B"}, sorted(layouts)[:10]
    assert layouts["A"].vtable
    cached = json.loads(next((tmp_path / "abi-probes").glob("abi-*.json")).read_text())
    assert set(cached["layouts"]) == {"A", "B"}


def test_abi_probe_is_reused_until_a_header_it_read_changes(tmp_path, monkeypatch):
    """A no-op build must not parse the changed headers again; any edit below them must."""
    inc = tmp_path / "inc"
    (inc / "fca").mkdir(parents=True)
    (inc / "fca/a.h").write_text('#include "fca/b.h"\nstruct A { B b; virtual ~A(); };\n')
    (inc / "fca/b.h").write_text("struct B { int x; };\n")
    cache = tmp_path / "abi-probes"
    first = checks.class_layouts("fca/a.h", [f"-I{inc}"], [], cache)
    assert "size=16" in first["A"].size and first["A"].vtable

    real_run = checks.Shell.run

    def no_compiler(*args, **kwargs):
        raise AssertionError("the probe ran g++ although no header changed")

    monkeypatch.setattr(checks.Shell, "run", no_compiler)
    assert checks.class_layouts("fca/a.h", [f"-I{inc}"], [], cache) == first

    (inc / "fca/b.h").write_text("struct B { int x; long y[2]; };\n")  # only the included header changes
    monkeypatch.setattr(checks.Shell, "run", real_run)
    grown = checks.class_layouts("fca/a.h", [f"-I{inc}"], [], cache)
    assert "size=32" in grown["A"].size


def test_global_options_work_before_or_after_the_subcommand(overlay):
    before = run_tool("overlay", "--venv", VENV, "-q", "status")
    after = run_tool("overlay", "status", "--venv", VENV, "-q")
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout and f"installed in {VENV}: yes" in after.stdout


def test_unknown_option_or_no_command_is_a_usage_error():
    res = run_tool("overlay", "--bogus")
    assert res.returncode == 2 and "unrecognized arguments: --bogus" in res.stderr
    res = run_tool("overlay")
    assert res.returncode == 2 and "a command is required: build, plan, run, env, status, clean" in res.stderr


def test_missing_compiler_is_found_before_a_venv_is_made(pinned_source, tmp_path):
    ov = tmp_path / "ov"
    res = run_tool("overlay", "--overlay-dir", ov, "build", env={"CXX": "/nonexistent/g++"})
    assert res.returncode == 3 and "C++ compiler `/nonexistent/g++` not found" in res.error_line
    assert not (ov / "venv").exists()


def test_status_during_a_build_says_busy(tmp_path):
    from filelock import FileLock

    ov = tmp_path / "ov"
    ov.mkdir()
    with FileLock(str(ov / ".lock")):  # what a running build or clean holds
        res = run_tool("overlay", "--overlay-dir", ov, "status")
    assert res.returncode == 0 and "is busy: another overlay build, install or clean holds" in res.stdout


def test_clean_waits_for_a_running_build(tmp_path):
    from filelock import FileLock

    ov = tmp_path / "ov"
    ov.mkdir()
    lock = FileLock(str(ov / ".lock"))
    lock.acquire()
    try:
        proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "tools" / "overlay.py"), "--overlay-dir", str(ov),
                                 "--venv", str(tmp_path / "no-venv"), "clean"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=3)
    finally:
        lock.release()
    out, err = proc.communicate(timeout=HANG_TIMEOUT)
    assert proc.returncode == 0 and "waiting for another build/clean" in err and "overlay: removed" in out


def test_a_cut_off_compile_key_file_recompiles_instead_of_stopping(overlay):
    # what a full disk or a killed build leaves: an empty tu-keys.json
    keys = OVERLAY / "build" / "tu-keys.json"
    keys.write_text("")
    res = run_tool("overlay", "-q", "build", "--no-install")
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(keys.read_text())  # written again, whole


def test_a_new_venv_on_a_full_disk_is_refused_before_anything_is_made(tmp_path, monkeypatch):
    """The free-disk preflight: a torch venv (and the first download) would not fit; one line, nothing made."""
    import shutil as sh_mod

    from tools.lib.overlay import venv as venv_mod
    from tools.lib.shell import Shell

    monkeypatch.setattr(sh_mod, "disk_usage", lambda p: sh_mod._ntuple_diskusage(10**12, 10**12 - 10**8, 10**8))
    with pytest.raises(UserError, match=r"100.0 MB free on its disk, a torch 2.6.0 venv \(~5.7 GB installed, plus ~3.6 GB"):
        venv_mod._fill(tmp_path / "venv", sys.executable, tmp_path / "house", Shell(verbose=False), "x", download=tmp_path / "r.txt")
    assert not (tmp_path / "venv").exists() and not (tmp_path / "house").exists()


def test_the_stock_and_overlay_venvs_hold_the_cuda_libraries_once(overlay, stock_python):
    """Both are filled from one wheelhouse: nvidia-* and triton are hard links to one copy (~3.4 GB each)."""
    stock_site, overlay_site = site_packages(Path(stock_python).parents[1]), site_packages(VENV)
    for rel in ("nvidia/cublas/lib/libcublas.so.12", "triton/_C/libtriton.so"):
        assert (stock_site / rel).samefile(overlay_site / rel), rel
    assert not (stock_site / "torch/lib/libtorch_cpu.so").samefile(overlay_site / "torch/lib/libtorch_cpu.so")
