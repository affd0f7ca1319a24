"""Building PyTorch from source (tools/build_torch.py is the command): the minimal CPU configuration, the
preflight checks (pure: facts in, an error that says what to do, or warnings, out), the facts they are
fed from the machine, the plan (environment and command) and the build itself."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from . import paths, ui
from .pin import PIN
from .shell import Shell

GIB = 1 << 30

# The minimal CPU configuration, in the order it is printed.  setup.py passes
# every USE_*/BUILD_*/CMAKE_* variable through to CMake.
BUILD_ENV: tuple[tuple[str, str], ...] = (
    ("USE_CUDA", "0"),
    ("USE_ROCM", "0"),
    ("USE_XPU", "0"),
    ("USE_DISTRIBUTED", "0"),
    ("USE_MKLDNN", "0"),
    ("USE_FBGEMM", "0"),
    ("USE_XNNPACK", "0"),
    ("USE_KINETO", "0"),
    ("USE_NNPACK", "0"),
    ("USE_QNNPACK", "0"),
    ("USE_PYTORCH_QNNPACK", "0"),
    ("BUILD_TEST", "0"),
    ("USE_ITT", "0"),
    ("USE_FLASH_ATTENTION", "0"),
    ("USE_MEM_EFF_ATTENTION", "0"),
)

MIN_DISK_BYTES = 20 * GIB
GIB_PER_JOB = 2.5  # what MAX_JOBS is derived from
MIN_GIB_PER_JOB = 2.0  # below this a job is refused (jobs are reduced, or the build fails)
MIN_GCC = (9, 3)  # PyTorch 2.6's CMakeLists.txt refuses older GCC
MIN_CLANG = (10, 0)
MIN_CMAKE = (3, 18)  # cmake_minimum_required in PyTorch 2.6's CMakeLists.txt
MIN_PYTHON = (3, 9)  # python_min_version in PyTorch 2.6's setup.py
HEARTBEAT_S = 300.0

CLONE_HINT = (
    f"use a real checkout: `git clone --recursive https://github.com/pytorch/pytorch -b {PIN.git_tag} PATH` "
    "or PyTorch's release tarball: `PATH=$(python tools/fetch_pinned_source.py --source github-release)`, "
    "then `python tools/apply_patches.py --torch-src PATH`, and pass --torch-src PATH"
)

# Sources under third_party/ that the minimal CPU configuration needs (CMake
# add_subdirectory/include paths of v2.6.0 with the flags above), plus the
# submodules setup.py itself checks for when there is no .gitmodules.
REQUIRED_THIRD_PARTY: tuple[str, ...] = (
    "third_party/pybind11/CMakeLists.txt",
    "third_party/fmt/CMakeLists.txt",
    "third_party/sleef/CMakeLists.txt",
    "third_party/cpuinfo/CMakeLists.txt",
    "third_party/FP16/CMakeLists.txt",
    "third_party/psimd/CMakeLists.txt",
    "third_party/pocketfft/pocketfft_hdronly.h",
    "third_party/protobuf/cmake/CMakeLists.txt",
    "third_party/onnx/CMakeLists.txt",
    "third_party/flatbuffers/include/flatbuffers/flatbuffers.h",
    "third_party/nlohmann/include/nlohmann/json.hpp",
    "third_party/cpp-httplib/httplib.h",
    "third_party/kineto/libkineto/include/ActivityType.h",
    "third_party/gloo/CMakeLists.txt",
    "third_party/fbgemm/CMakeLists.txt",
    "third_party/fbgemm/third_party/asmjit/CMakeLists.txt",
    "third_party/cutlass/CMakeLists.txt",
)
# setup.py's own test for "this submodule is checked out".
_SUBMODULE_MARKERS = ("CMakeLists.txt", "Makefile", "setup.py", "LICENSE", "LICENSE.md", "LICENSE.txt")

# Python modules the build imports: (module, pip package).
BUILD_DEPS: tuple[tuple[str, str], ...] = (("yaml", "pyyaml"), ("typing_extensions", "typing_extensions"), ("setuptools", "setuptools"))
WHEEL_DEPS: tuple[tuple[str, str], ...] = (("wheel", "wheel"),)
OPTIONAL_DEPS: tuple[tuple[str, str], ...] = (("numpy", "numpy"),)

# Run by the interpreter that will build; prints the facts as JSON.
_PYTHON_PROBE = r"""
import importlib.util, json, os, sys, sysconfig
inc = sysconfig.get_paths().get("include") or ""
mods = sys.argv[1:]
missing = [m for m in mods if importlib.util.find_spec(m) is None]
if "wheel" in missing:  # setuptools >= 70.1 ships bdist_wheel itself
    try:
        if importlib.util.find_spec("setuptools.command.bdist_wheel") is not None:
            missing.remove("wheel")
    except Exception:
        pass
print(json.dumps({
    "version": list(sys.version_info[:3]),
    "include": inc,
    "has_header": os.path.isfile(os.path.join(inc, "Python.h")),
    "missing": missing,
    "bindir": os.path.dirname(os.path.abspath(sys.executable)),
}))
"""


# -- pure checks: facts in, UserError (or warnings / a value) out --------------------------

def fmt_gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """The first ``X.Y[.Z]`` of ``text`` outside parentheses (``gcc (Debian 12.2.0-14) 12.2.0`` -> (12, 2, 0))."""
    if not text:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = re.search(r"(?<![\w.])(\d+)\.(\d+)(?:\.(\d+))?", re.sub(r"\([^)]*\)", " ", first))
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def version_text(v: Sequence[int]) -> str:
    return ".".join(map(str, v))


def check_tree(tree: Path) -> None:
    if not tree.is_dir():
        raise ui.UserError(f"{tree} is not a directory; pass --torch-src with a PyTorch {PIN.git_tag} checkout ({CLONE_HINT})")
    if not (tree / "setup.py").is_file() or not (tree / "version.txt").is_file():
        raise ui.UserError(f"{tree} is not a PyTorch source tree (no setup.py / version.txt); pass --torch-src with a {PIN.git_tag} checkout")


def check_version(version_txt: str, tree: Path) -> None:
    """``version.txt`` of the tree must say 2.6.0 (the stack and this config are for that release)."""
    found = version_txt.strip()
    if not re.match(rf"^{re.escape(PIN.version)}(?![\d.])", found):
        raise ui.UserError(
            f"{tree} is PyTorch {found or '(empty version.txt)'}, not {PIN.version}; check out tag {PIN.git_tag} "
            "(and its submodules) and apply the stack with tools/apply_patches.py"
        )


def missing_third_party(tree: Path) -> tuple[list[str], bool]:
    """(missing sources, whether the tree has a .gitmodules) for :func:`check_submodules`."""
    missing: list[str] = []
    gitmodules = tree / ".gitmodules"
    has_gitmodules = gitmodules.is_file()
    if has_gitmodules:
        for line in gitmodules.read_text(errors="replace").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and key.strip() == "path":
                sub = value.strip()
                if not any((tree / sub / marker).exists() for marker in _SUBMODULE_MARKERS):
                    missing.append(sub)
    for rel in REQUIRED_THIRD_PARTY:
        if not (tree / rel).exists():
            owner = rel.rsplit("/", 1)[0]
            if not any(owner == m or owner.startswith(m + "/") or rel.startswith(m + "/") for m in missing):
                missing.append(rel)
    return missing, has_gitmodules


def check_submodules(tree: Path) -> None:
    """Every third_party source the build needs is there (the Debian tarball strips them)."""
    missing, has_gitmodules = missing_third_party(tree)
    if not missing:
        return
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    if has_gitmodules:
        raise ui.UserError(
            f"{tree}: {len(missing)} git submodule source(s) are missing ({shown}); "
            f"run `git -C {shlex.quote(str(tree))} submodule update --init --recursive` and retry"
        )
    raise ui.UserError(
        f"{tree} lacks the third_party sources a build needs ({shown}; no .gitmodules: "
        f"the Debian tarball strips them); {CLONE_HINT}"
    )


def check_compiler(version_output: str | None, *, what: str = "C++ compiler", command: str = "c++") -> str:
    """``<compiler> --version`` output (None: not found) -> ``"gcc 12.2.0"``; GCC >= 9.3 or Clang >= 10."""
    if version_output is None or not version_output.strip():
        raise ui.UserError(
            f"no {what} found (`{command}`); install GCC >= {version_text(MIN_GCC)} (`apt-get install gcc g++`) "
            "or point CC/CXX at one"
        )
    lower = version_output.lower()
    version = parse_version(version_output)
    if "clang" in lower:
        kind, minimum = "clang", MIN_CLANG
    elif "gcc" in lower or "g++" in lower or "free software foundation" in lower:
        kind, minimum = "gcc", MIN_GCC
    else:
        first = version_output.strip().splitlines()[0]
        raise ui.UserError(f"{what} `{command}` is not GCC or Clang ({first!r}); set CC/CXX to gcc/g++ >= {version_text(MIN_GCC)}")
    if version is None:
        first = version_output.strip().splitlines()[0]
        raise ui.UserError(f"cannot read the version of {what} `{command}` from {first!r}; set CC/CXX to gcc/g++ >= {version_text(MIN_GCC)}")
    if version[:2] < minimum:
        raise ui.UserError(
            f"{what} `{command}` is {kind} {version_text(version)}; PyTorch {PIN.version} needs {kind} >= {version_text(minimum)}: "
            f"install a newer one (e.g. `apt-get install g++-12`) and set CC/CXX to it"
        )
    return f"{kind} {version_text(version)}"


def check_cmake(version_output: str | None) -> str:
    """``cmake --version`` output (None: not found) -> ``"3.25.1"``; needs >= 3.18."""
    if version_output is None:
        raise ui.UserError(f"cmake not found; install cmake >= {version_text(MIN_CMAKE)} (`pip install cmake` or `apt-get install cmake`)")
    version = parse_version(version_output)
    if version is None:
        raise ui.UserError(f"cannot read the cmake version from {version_output.strip()[:80]!r}; install cmake >= {version_text(MIN_CMAKE)}")
    if version[:2] < MIN_CMAKE:
        raise ui.UserError(
            f"cmake {version_text(version)} is too old; PyTorch {PIN.version} needs >= {version_text(MIN_CMAKE)}: `pip install 'cmake>={version_text(MIN_CMAKE)}'`"
        )
    return version_text(version)


def check_ninja(ninja_path: str | None) -> str | None:
    """Ninja is optional: without it setup.py falls back to Makefiles.  Returns a warning or None."""
    if ninja_path is None:
        return "ninja not found: setup.py falls back to Unix Makefiles (slower, and no-op rebuilds take minutes); `pip install ninja`"
    return None


def check_python(
    python: str,
    version: Sequence[int],
    include_dir: str,
    has_header: bool,
    missing_modules: Sequence[str],
    *,
    mode: str = "develop",
) -> list[str]:
    """The building interpreter: version, C headers, build deps.  Returns warnings; raises on errors."""
    if tuple(version[:2]) < MIN_PYTHON:
        raise ui.UserError(f"{python} is Python {version_text(version)}; PyTorch {PIN.version} needs >= {version_text(MIN_PYTHON)}: pass --python with a newer one")
    if not has_header:
        major_minor = version_text(version[:2])
        raise ui.UserError(
            f"{python} has no C headers ({include_dir}/Python.h is missing); install them "
            f"(`apt-get install python{major_minor}-dev`) or pass --python with an interpreter that has them"
        )
    required = BUILD_DEPS + (WHEEL_DEPS if mode == "wheel" else ())
    missing = [pkg for mod, pkg in required if mod in missing_modules]
    if missing:
        raise ui.UserError(
            f"{python} lacks build dependencies: {', '.join(missing)}; run `{shlex.quote(python)} -m pip install {' '.join(missing)}` "
            "(or `-r requirements.txt` in the PyTorch tree)"
        )
    warnings = []
    for mod, pkg in OPTIONAL_DEPS:
        if mod in missing_modules:
            warnings.append(f"{pkg} is not installed for {python}: torch builds without {pkg} support and many tests fail; `{shlex.quote(python)} -m pip install {pkg}`")
    return warnings


def check_disk(free_bytes: int, where: Path | str = "the tree", *, need: int = MIN_DISK_BYTES) -> None:
    if free_bytes < need:
        raise ui.UserError(
            f"only {fmt_gib(free_bytes)} free at {where}; a minimal CPU build needs {fmt_gib(need)} "
            "(build/ plus the installed libraries); free space or put the checkout on a bigger disk"
        )


def plan_jobs(cores: int, mem_bytes: int, requested: int | None = None) -> tuple[int, str | None]:
    """(MAX_JOBS, note or None).  ~2.5 GiB per job by default, never less than 2 GiB per job."""
    mem_gib = mem_bytes / GIB
    if mem_gib < MIN_GIB_PER_JOB:
        raise ui.UserError(
            f"only {fmt_gib(mem_bytes)} of memory available; even one compile job needs {MIN_GIB_PER_JOB:g} GiB "
            "(some PyTorch files need more): free memory or use a bigger machine"
        )
    cores = max(1, cores)
    if requested is None:
        jobs = max(1, min(cores, int(mem_gib // GIB_PER_JOB)))
        note = None
        if jobs < cores:
            note = f"MAX_JOBS={jobs}: memory-bound ({fmt_gib(mem_bytes)} available, {GIB_PER_JOB:g} GiB per job, {cores} cores)"
        return jobs, note
    if requested < 1:
        raise ui.UserError(f"--jobs must be at least 1, not {requested}", exit_code=ui.EXIT_USAGE)
    if mem_gib / requested < MIN_GIB_PER_JOB:
        jobs = int(mem_gib // MIN_GIB_PER_JOB)
        return jobs, (
            f"--jobs {requested} would leave {mem_gib / requested:.1f} GiB per job (< {MIN_GIB_PER_JOB:g} GiB) "
            f"with {fmt_gib(mem_bytes)} available; using MAX_JOBS={jobs}"
        )
    return requested, None


def build_env(jobs: int, ccache: str | None, extra_path: str | None = None) -> dict[str, str]:
    """The environment overrides of the build, in print order."""
    env = dict(BUILD_ENV)
    env["MAX_JOBS"] = str(jobs)
    if ccache:
        env["CMAKE_C_COMPILER_LAUNCHER"] = "ccache"
        env["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"
    if extra_path:
        env["PATH"] = f"{extra_path}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def build_command(python: str, mode: str) -> list[str]:
    return [python, "setup.py", "develop" if mode == "develop" else "bdist_wheel"]


def render_plan(tree: Path, env: Mapping[str, str], command: Sequence[str]) -> list[str]:
    """The plan as shell lines a user can paste: ``cd``, one ``export`` per variable, the command."""
    lines = [f"cd {shlex.quote(str(tree))}"]
    for key, value in env.items():
        if key == "PATH":
            prefix = value.split(os.pathsep, 1)[0]
            lines.append(f'export PATH={shlex.quote(prefix)}"{os.pathsep}$PATH"')
        else:
            lines.append(f"export {key}={shlex.quote(value)}")
    lines.append(shlex.join(command))
    return lines


# -- facts from the machine -----------------------------------------------------------------

def available_memory() -> int:
    """MemAvailable, capped by a cgroup v2/v1 memory limit when there is one."""
    avail = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    if not avail:
        try:
            avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError):
            avail = 0
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            limit_txt = Path(limit_file).read_text().strip()
            if limit_txt == "max":
                continue
            limit = int(limit_txt)
            if limit >= 1 << 60:
                continue
            used = int(Path(usage_file).read_text().strip())
            avail = min(avail, max(0, limit - used)) if avail else max(0, limit - used)
        except (OSError, ValueError):
            continue
    return avail


def free_disk(tree: Path) -> int:
    return shutil.disk_usage(tree).free


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def which(name: str, search_path: str) -> str | None:
    return shutil.which(name, path=search_path)


def tool_version(sh: Shell, command: str, search_path: str) -> str | None:
    """``command --version`` output, or None when the tool is not found or fails."""
    argv = shlex.split(command)
    exe = which(argv[0], search_path) if argv else None
    if exe is None:
        return None
    proc = sh.run(exe, *argv[1:], "--version", check=False)
    return (proc.stdout or proc.stderr) if proc.returncode == 0 else None


def probe_python(sh: Shell, python: str) -> dict:
    modules = [m for m, _ in BUILD_DEPS + WHEEL_DEPS + OPTIONAL_DEPS]
    ui.info(f"probing {python} (version, C headers, {', '.join(modules)})")
    try:
        proc = sh.run(python, "-c", _PYTHON_PROBE, *modules, check=False, log=False)
    except ui.UserError:
        raise ui.UserError(f"the interpreter {python} does not exist or cannot run; pass --python with a Python >= {version_text(MIN_PYTHON)}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        raise ui.UserError(f"{python} failed to report its configuration ({tail[-1] if tail else 'no output'}); pass --python with a working interpreter")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def stack_note(tree: Path, sh: Shell) -> str | None:
    """A warning when the stack is not (fully) applied to ``tree``; None when it is, or cannot tell."""
    try:
        from .stack import Stack
        from .tree import open_tree

        stack = Stack.load(paths.DEFAULT_STACK_DIR)
        if len(stack) == 0:
            return None
        quiet = Shell(verbose=False)
        state = open_tree(tree, quiet).state(stack)
    except (ui.UserError, OSError):
        return None
    if state.applied < len(stack):
        return (
            f"{state.applied}/{len(stack)} patches of the stack are applied to {tree}; this builds "
            f"{'stock' if state.applied == 0 else 'a partly patched'} PyTorch (run `python tools/apply_patches.py --torch-src {shlex.quote(str(tree))}` first if you meant the patched one)"
        )
    return None


def run_build(sh: Shell, tree: Path, env: Mapping[str, str], command: Sequence[str], *, quiet: bool) -> None:
    """Run the build, streaming its output (or into build/fca-build-torch.log with -q); heartbeat lines with elapsed time."""
    start = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_S):
            ui.info(f"==> building PyTorch: {ui.fmt_seconds(time.monotonic() - start)} elapsed")

    ticker = threading.Thread(target=heartbeat, daemon=True)
    with ui.step(f"building PyTorch ({' '.join(command[1:])}, MAX_JOBS={env['MAX_JOBS']}); this takes hours"):
        ticker.start()
        try:
            proc = sh.run(*command, cwd=tree, env=dict(env), check=False, capture=quiet)
        finally:
            done.set()
        log = None
        if quiet:
            log = tree / "build" / "fca-build-torch.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text((proc.stdout or "") + (proc.stderr or ""))
        if proc.returncode != 0:
            where = f"see {log}" if log else "see the output above"
            raise ui.OperationFailed(
                f"the build failed (`{shlex.join(command)}` exited {proc.returncode} after "
                f"{ui.fmt_seconds(time.monotonic() - start)}); {where}; rerun with --jobs 1 for a readable error"
                + (" (ccache makes the rerun fast)" if "CMAKE_CXX_COMPILER_LAUNCHER" in env else "")
            )
