"""tools/build_torch.py (full source build): CLI, dry run, every preflight failure."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_tool
from tools import build_torch as bt
from tools.lib import source_build as sb
from tools.lib import ui
from tools.lib.pinned_source import READY_MARKER, release_root

GIB = 1 << 30


def _plan_env(stdout: str) -> dict[str, str]:
    env = {}
    for line in stdout.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = value
    return env


# -- CLI ----------------------------------------------------------------------------------

def test_help_exits_zero_and_documents_the_preflight():
    res = run_tool("build_torch", "--help")
    assert res.returncode == 0
    assert res.stdout.startswith("usage: ")
    for text in ("--dry-run", "--mode", "--torch-src", "--python", "--jobs", "USE_CUDA=0", "ninja: only a WARNING",
                 "run_upstream_tests.py --torch-build"):
        assert text in res.stdout, text


def test_unknown_option_and_bad_jobs_are_usage_errors():
    assert run_tool("build_torch", "--no-such-option").returncode == 2
    res = run_tool("build_torch", "--jobs", "0", "--dry-run")
    assert res.returncode == 2 and res.error_line == "error: --jobs must be at least 1, not 0"


def test_dry_run_prints_the_exact_plan_and_runs_nothing(pinned_source):
    res = run_tool("build_torch", "--torch-src", pinned_source, "--dry-run", "--jobs", "1")
    assert res.returncode == 3, res.stderr  # the plan, and a blocker (below): not a clean bill
    lines = res.stdout.splitlines()
    assert lines[0] == f"cd {shlex.quote(str(pinned_source))}"
    env = _plan_env(res.stdout)
    for key, value in sb.BUILD_ENV:
        assert env[key] == value, key
    for key in ("USE_CUDA", "USE_DISTRIBUTED", "USE_MKLDNN", "USE_FBGEMM", "USE_XNNPACK", "USE_KINETO", "USE_NNPACK",
                "USE_QNNPACK", "USE_PYTORCH_QNNPACK", "BUILD_TEST", "USE_ITT", "USE_FLASH_ATTENTION", "USE_MEM_EFF_ATTENTION"):
        assert env[key] == "0", key
    assert env["MAX_JOBS"] == "1"
    if shutil.which("ccache"):
        assert env["CMAKE_C_COMPILER_LAUNCHER"] == env["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    assert lines[-1] == shlex.join([str(Path(sys.executable).absolute()), "setup.py", "develop"])
    assert all(l.startswith(("cd ", "export ")) for l in lines[:-1])
    # Ran nothing: no command was logged, no build started.
    assert not [l for l in res.stderr.splitlines() if l.startswith("$ ")]
    assert not (pinned_source / "build").exists()
    assert "dry run: nothing was run" in res.stderr
    # The Debian import lacks third_party: the dry run says a real run would stop.
    assert "warning: a real run would stop:" in res.stderr and "git clone --recursive" in res.stderr
    # (and a second one where this machine has less free disk than a build needs)
    blockers = 1 + (shutil.disk_usage(pinned_source).free < sb.MIN_DISK_BYTES)
    assert f"dry run: {blockers} blocker(s) above; exit 3" in res.stderr


def test_dry_run_plan_is_copy_pasteable(pinned_source, tmp_path):
    res = run_tool("build_torch", "--torch-src", pinned_source, "--dry-run", "--mode", "wheel")
    assert res.returncode == 3, res.stderr  # the Debian tree lacks third_party; the plan is printed anyway
    lines = res.stdout.splitlines()
    assert lines[-1].endswith(" setup.py bdist_wheel")
    script = "\n".join(lines[:-1] + ["pwd; env"]) + "\n"  # the plan, with the build replaced by a look at the result
    out = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, check=True).stdout
    got = dict(l.split("=", 1) for l in out.splitlines()[1:] if "=" in l)
    assert out.splitlines()[0] == str(pinned_source)
    assert got["USE_CUDA"] == "0" and got["BUILD_TEST"] == "0" and int(got["MAX_JOBS"]) >= 1


def test_dry_run_defaults_to_the_pinned_source(pinned_source):
    res = run_tool("build_torch", "--dry-run")
    assert res.returncode == 3, res.stderr  # the Debian tree lacks third_party
    assert res.stdout.splitlines()[0] == f"cd {shlex.quote(str(pinned_source))}"


def test_real_run_on_the_debian_tree_fails_fast_on_submodules(pinned_source):
    res = run_tool("build_torch", "--torch-src", pinned_source)
    assert res.returncode == 3
    assert res.error_line.startswith(f"error: {pinned_source} lacks the third_party sources a build needs (third_party/pybind11/CMakeLists.txt")
    assert "git clone --recursive https://github.com/pytorch/pytorch -b v2.6.0 PATH" in res.error_line
    assert "python tools/apply_patches.py --torch-src PATH" in res.error_line
    assert "setup.py" not in res.stderr.replace(str(pinned_source), "")  # no build was started
    assert not (pinned_source / "build").exists()


def test_missing_tree_is_a_clear_error(tmp_path):
    res = run_tool("build_torch", "--torch-src", tmp_path / "nope")
    assert res.returncode == 3 and res.error_line.startswith(f"error: {tmp_path / 'nope'} is not a directory; pass --torch-src")
    res = run_tool("build_torch", "--torch-src", tmp_path, "--dry-run")
    assert res.returncode == 3 and "is not a PyTorch source tree" in res.stderr


def test_missing_pinned_source_without_torch_src(tmp_path):
    res = run_tool("build_torch", "--cache-dir", tmp_path)
    assert res.returncode == 3
    assert "no --torch-src and no pinned source" in res.error_line and "git clone --recursive" in res.error_line


def test_dry_run_defaults_to_the_release_checkout_which_has_third_party(tmp_path):
    release_root(tmp_path).parent.mkdir(parents=True)
    root = _complete_tree(release_root(tmp_path), "")  # the release tarball's layout: no .gitmodules
    (root / ".git").mkdir()
    (root / ".git" / READY_MARKER).write_text("")
    res = run_tool("build_torch", "--cache-dir", tmp_path, "--dry-run")
    assert res.stdout.splitlines()[0] == f"cd {shlex.quote(str(root))}"
    assert "third_party" not in res.stderr
    if shutil.disk_usage(root).free < sb.MIN_DISK_BYTES:  # this machine's disk is the one blocker left
        assert res.returncode == 3 and "a real run would stop: only" in res.stderr, res.stderr
    else:
        assert res.returncode == 0, res.stderr
        assert "a real run would stop" not in res.stderr


# -- a full run of the tool on a stand-in tree (the build itself is a stub setup.py) --------

def _complete_tree(root: Path, setup_py: str) -> Path:
    root.mkdir()
    (root / "version.txt").write_text("2.6.0a0\n")
    (root / "setup.py").write_text(setup_py)
    for rel in sb.REQUIRED_THIRD_PARTY:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    return root


def _stub(bindir: Path, name: str, text: str) -> Path:
    path = bindir / name
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\n")
    path.chmod(0o755)
    return path


RECORDING_SETUP_PY = """\
import json, os, sys
json.dump({"argv": sys.argv[1:], "env": dict(os.environ)}, open("recorded.json", "w"))
print("stub build done")
"""


@pytest.fixture
def toolchain(tmp_path, monkeypatch):
    """gcc/cmake/ninja stand-ins on PATH, plenty of memory and disk: the machine's facts, pinned."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stub(bindir, "cc", "cc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.")
    _stub(bindir, "c++", "c++ (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.")
    _stub(bindir, "cmake", "cmake version 3.25.1")
    _stub(bindir, "ninja", "1.11.1")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CC", str(bindir / "cc"))
    monkeypatch.setenv("CXX", str(bindir / "c++"))
    monkeypatch.setattr(sb, "available_memory", lambda: 64 * GIB)
    monkeypatch.setattr(sb, "cpu_count", lambda: 4)
    monkeypatch.setattr(sb, "free_disk", lambda tree: 100 * GIB)
    monkeypatch.setattr(sb, "probe_python", lambda sh, python: {
        "version": [3, 11, 7], "include": "/usr/include/python3.11", "has_header": True, "missing": [], "bindir": str(bindir),
    })
    return bindir


def test_full_run_builds_with_the_plan_and_prints_the_test_hint(tmp_path, toolchain, capsys):
    tree = _complete_tree(tmp_path / "pytorch", RECORDING_SETUP_PY)
    assert bt.main(["--torch-src", str(tree), "--mode", "develop"]) == 0
    recorded = json.loads((tree / "recorded.json").read_text())
    assert recorded["argv"] == ["develop"]
    for key, value in sb.BUILD_ENV:
        assert recorded["env"][key] == value
    assert recorded["env"]["MAX_JOBS"] == "4"
    out, err = capsys.readouterr()
    assert f"python tools/run_upstream_tests.py --torch-build {tree}" in out
    assert "==> building PyTorch (setup.py develop, MAX_JOBS=4)" in err and ": done in " in err
    assert "C++ gcc 12.2.0, cmake 3.25.1, ninja, MAX_JOBS=4" in err


def test_failed_build_is_exit_1_and_quiet_run_keeps_a_log(tmp_path, toolchain, capsys):
    tree = _complete_tree(tmp_path / "pytorch", "import sys\nprint('compiling...')\nsys.exit(7)\n")
    assert ui.run_main(bt.main, ["--torch-src", str(tree), "-q"]) == 1
    err = capsys.readouterr().err
    assert "error: the build failed (`" in err and "exited 7" in err and "fca-build-torch.log" in err
    assert "compiling..." in (tree / "build" / "fca-build-torch.log").read_text()


def test_real_run_stops_at_the_first_failing_check(tmp_path, toolchain, capsys):
    tree = _complete_tree(tmp_path / "pytorch", RECORDING_SETUP_PY)
    _stub(toolchain, "cmake", "cmake version 3.16.3")
    assert ui.run_main(bt.main, ["--torch-src", str(tree)]) == 3
    assert "error: cmake 3.16.3 is too old" in capsys.readouterr().err
    assert not (tree / "recorded.json").exists()


# -- preflight checks, one fact at a time ---------------------------------------------------

def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(ui.UserError) as info:
        fn(*args, **kwargs)
    assert info.value.exit_code == ui.EXIT_BAD_INPUT
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("text, version", [
    ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0", (12, 2, 0)),
    ("gcc (GCC) 9.2.1 20191120 (Red Hat 9.2.1-2)", (9, 2, 1)),
    ("g++ (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", (11, 4, 0)),
    ("Ubuntu clang version 14.0.0-1ubuntu1.1", (14, 0, 0)),
    ("cmake version 3.25.1\n\nCMake suite maintained and supported by Kitware", (3, 25, 1)),
    ("cmake version 3.31", (3, 31)),
    ("no digits here", None),
    ("", None),
    (None, None),
])
def test_parse_version(text, version):
    assert sb.parse_version(text) == version


def test_check_compiler_accepts_supported_compilers():
    assert sb.check_compiler("gcc (Debian 12.2.0-14+deb12u1) 12.2.0") == "gcc 12.2.0"
    assert sb.check_compiler("c++ (Ubuntu 9.4.0-1ubuntu1~20.04.2) 9.4.0\nCopyright (C) 2019 Free Software Foundation, Inc.") == "gcc 9.4.0"
    assert sb.check_compiler("Ubuntu clang version 14.0.0-1ubuntu1.1\nTarget: x86_64-pc-linux-gnu") == "clang 14.0.0"


def test_check_compiler_failures():
    assert _error(sb.check_compiler, None, what="C++ compiler", command="c++") == (
        "no C++ compiler found (`c++`); install GCC >= 9.3 (`apt-get install gcc g++`) or point CC/CXX at one"
    )
    old = _error(sb.check_compiler, "gcc (GCC) 9.2.1 20191120", what="C compiler", command="gcc")
    assert old.startswith("C compiler `gcc` is gcc 9.2.1; PyTorch 2.6.0 needs gcc >= 9.3") and "set CC/CXX" in old
    assert "needs gcc >= 9.3" in _error(sb.check_compiler, "g++ (GCC) 8.5.0 20210514")
    assert "needs clang >= 10.0" in _error(sb.check_compiler, "clang version 8.0.1")
    assert "is not GCC or Clang" in _error(sb.check_compiler, "Intel(R) oneAPI DPC++/C++ Compiler 2024.0.0")
    assert "cannot read the version" in _error(sb.check_compiler, "gcc (GCC) unknown")


def test_check_cmake():
    assert sb.check_cmake("cmake version 3.25.1\n") == "3.25.1"
    assert sb.check_cmake("cmake version 3.18.0") == "3.18.0"
    assert _error(sb.check_cmake, None) == "cmake not found; install cmake >= 3.18 (`pip install cmake` or `apt-get install cmake`)"
    assert _error(sb.check_cmake, "cmake version 3.16.3") == (
        "cmake 3.16.3 is too old; PyTorch 2.6.0 needs >= 3.18: `pip install 'cmake>=3.18'`"
    )
    assert "cannot read the cmake version" in _error(sb.check_cmake, "garbage")


def test_missing_ninja_is_a_warning_not_an_error():
    assert sb.check_ninja("/usr/bin/ninja") is None
    warning = sb.check_ninja(None)
    assert warning.startswith("ninja not found: setup.py falls back to Unix Makefiles") and "pip install ninja" in warning


def test_check_python():
    ok = dict(version=[3, 11, 7], include_dir="/usr/include/python3.11", has_header=True, missing_modules=[])
    assert sb.check_python("/usr/bin/python3", **ok) == []
    assert _error(sb.check_python, "/usr/bin/python3", **{**ok, "version": [3, 8, 10]}) == (
        "/usr/bin/python3 is Python 3.8.10; PyTorch 2.6.0 needs >= 3.9: pass --python with a newer one"
    )
    assert _error(sb.check_python, "/usr/bin/python3", **{**ok, "has_header": False}) == (
        "/usr/bin/python3 has no C headers (/usr/include/python3.11/Python.h is missing); install them "
        "(`apt-get install python3.11-dev`) or pass --python with an interpreter that has them"
    )
    deps = _error(sb.check_python, "/usr/bin/python3", **{**ok, "missing_modules": ["yaml", "typing_extensions"]})
    assert deps.startswith("/usr/bin/python3 lacks build dependencies: pyyaml, typing_extensions; run `/usr/bin/python3 -m pip install pyyaml typing_extensions`")
    assert "setuptools" in _error(sb.check_python, "py", **{**ok, "missing_modules": ["setuptools"]})
    # wheel only matters for --mode wheel.
    assert sb.check_python("py", **{**ok, "missing_modules": ["wheel"]}) == []
    assert "lacks build dependencies: wheel" in _error(sb.check_python, "py", **{**ok, "missing_modules": ["wheel"]}, mode="wheel")
    warnings = sb.check_python("py", **{**ok, "missing_modules": ["numpy"]})
    assert len(warnings) == 1 and warnings[0].startswith("numpy is not installed for py")


def test_check_disk():
    sb.check_disk(25 * GIB, "/src")
    sb.check_disk(20 * GIB, "/src")
    assert _error(sb.check_disk, 12 * GIB, "/src") == (
        "only 12.0 GiB free at /src; a minimal CPU build needs 20.0 GiB (build/ plus the installed libraries); "
        "free space or put the checkout on a bigger disk"
    )


def test_plan_jobs_from_cores_and_memory():
    assert sb.plan_jobs(16, 64 * GIB) == (16, None)
    jobs, note = sb.plan_jobs(16, 20 * GIB)
    assert jobs == 8 and note.startswith("MAX_JOBS=8: memory-bound (20.0 GiB available, 2.5 GiB per job, 16 cores)")
    assert sb.plan_jobs(8, int(2.2 * GIB)) == (1, "MAX_JOBS=1: memory-bound (2.2 GiB available, 2.5 GiB per job, 8 cores)")
    assert sb.plan_jobs(2, 64 * GIB, requested=2) == (2, None)
    jobs, note = sb.plan_jobs(16, 10 * GIB, requested=8)
    assert jobs == 5 and note.startswith("--jobs 8 would leave 1.2 GiB per job (< 2 GiB)") and note.endswith("using MAX_JOBS=5")
    assert sb.plan_jobs(4, 3 * GIB, requested=4)[0] == 1
    assert _error(sb.plan_jobs, 8, int(1.5 * GIB)) == (
        "only 1.5 GiB of memory available; even one compile job needs 2 GiB (some PyTorch files need more): "
        "free memory or use a bigger machine"
    )
    with pytest.raises(ui.UserError) as info:
        sb.plan_jobs(4, 8 * GIB, requested=0)
    assert info.value.exit_code == ui.EXIT_USAGE


def test_check_submodules_on_a_tarball_style_tree(tmp_path):
    tree = tmp_path / "tarball"
    (tree / "third_party" / "miniz-3.0.2").mkdir(parents=True)
    (tree / "third_party" / "BUILD").write_text("")
    message = _error(sb.check_submodules, tree)
    assert message.startswith(
        f"{tree} lacks the third_party sources a build needs (third_party/pybind11/CMakeLists.txt, "
        "third_party/fmt/CMakeLists.txt, third_party/sleef/CMakeLists.txt and 14 more; no .gitmodules"
    )
    assert message.endswith(
        "use a real checkout: `git clone --recursive https://github.com/pytorch/pytorch -b v2.6.0 PATH` "
        "or PyTorch's release tarball: `PATH=$(python tools/fetch_pinned_source.py --source github-release)`, "
        "then `python tools/apply_patches.py --torch-src PATH`, and pass --torch-src PATH"
    )


def test_check_submodules_on_a_checkout_without_submodules(tmp_path):
    tree = tmp_path / "checkout"
    tree.mkdir()
    names = ["pybind11", "fmt", "sleef", "cpuinfo", "gloo", "onnx"]
    (tree / ".gitmodules").write_text("".join(
        f'[submodule "third_party/{n}"]\n\tpath = third_party/{n}\n\turl = https://github.com/x/{n}.git\n' for n in names
    ))
    for n in names:
        (tree / "third_party" / n).mkdir(parents=True)  # what a non-recursive clone leaves: empty dirs
    message = _error(sb.check_submodules, tree)
    assert message.startswith(f"{tree}: ")
    assert "git submodule source(s) are missing (third_party/pybind11, third_party/fmt, third_party/sleef and " in message
    assert message.endswith(f"run `git -C {tree} submodule update --init --recursive` and retry")


def test_check_submodules_passes_on_a_complete_tree(tmp_path):
    tree = _complete_tree(tmp_path / "complete", "")
    sb.check_submodules(tree)
    (tree / ".gitmodules").write_text('[submodule "third_party/extra"]\n\tpath = third_party/extra\n')
    (tree / "third_party" / "extra").mkdir()
    assert "(third_party/extra)" in _error(sb.check_submodules, tree)
    (tree / "third_party" / "extra" / "LICENSE").write_text("")
    sb.check_submodules(tree)


def test_check_tree_and_version(tmp_path):
    assert _error(sb.check_tree, tmp_path / "nope").startswith(f"{tmp_path / 'nope'} is not a directory; pass --torch-src")
    assert _error(sb.check_tree, tmp_path) == (
        f"{tmp_path} is not a PyTorch source tree (no setup.py / version.txt); pass --torch-src with a v2.6.0 checkout"
    )
    sb.check_version("2.6.0a0\n", tmp_path)
    sb.check_version("2.6.0\n", tmp_path)
    assert _error(sb.check_version, "2.5.1\n", tmp_path).startswith(f"{tmp_path} is PyTorch 2.5.1, not 2.6.0; check out tag v2.6.0")
    assert "is PyTorch 2.6.10" in _error(sb.check_version, "2.6.10", tmp_path)


def test_build_env_and_plan_rendering(tmp_path):
    env = sb.build_env(3, None)
    assert list(env)[: len(sb.BUILD_ENV)] == [k for k, _ in sb.BUILD_ENV]
    assert env["MAX_JOBS"] == "3" and "CMAKE_CXX_COMPILER_LAUNCHER" not in env
    env = sb.build_env(3, "/usr/bin/ccache", "/opt/venv bin")
    assert env["CMAKE_C_COMPILER_LAUNCHER"] == env["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    plan = sb.render_plan(tmp_path / "my tree", env, sb.build_command("/opt/py/bin/python", "wheel"))
    assert plan[0] == f"cd '{tmp_path / 'my tree'}'"
    assert "export PATH='/opt/venv bin'\":$PATH\"" in plan
    assert plan[-1] == "/opt/py/bin/python setup.py bdist_wheel"
