"""Compile the overlay's TUs against the stock wheel and link one shared library.

Flags are the wheel's own (from ``torch.__config__.show()``, the wheel's CMake
targets and torch/caffe2 CMakeLists): old C++ ABI, ``-fabi-version=11`` (the
wheel was built with GCC 9; GCC 12 defaults to ABI 17), the feature macros
that change class layouts (USE_DISTRIBUTED, ...), per-library defines.
Include order: the build's generated dir, then the patched tree (patched
headers must win), then the wheel's ``include/`` (generated and third-party
headers exist only there), then Python's headers.

Incremental: each TU's key is the hash of its command line and of every file
its last compile depended on (``-MMD``), so an unchanged TU is never rebuilt.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from .. import ui
from ..shell import Shell
from . import depkey
from .tus import CPU, PYTHON, TU

if TYPE_CHECKING:
    import subprocess

COMMON_FLAGS: tuple[str, ...] = (
    "-std=gnu++17", "-fPIC", "-g0", "-w", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fabi-version=11",
    "-fvisibility-inlines-hidden", "-fno-math-errno", "-fno-trapping-math", "-DNDEBUG",
    "-DUSE_PTHREADPOOL", "-DUSE_KINETO", "-DLIBKINETO_NOROCTRACER", "-DLIBKINETO_NOXPUPTI=ON",
    "-DUSE_FBGEMM", "-DUSE_PYTORCH_QNNPACK", "-DUSE_XNNPACK", "-DSYMBOLICATE_MOBILE_DEBUG_HANDLE",
    "-DAT_PER_OPERATOR_HEADERS", "-DUSE_DISTRIBUTED", "-DUSE_C10D_GLOO", "-DUSE_RPC", "-DUSE_TENSORPIPE",
    "-DHAVE_MALLOC_USABLE_SIZE=1", "-DHAVE_MMAP=1", "-DHAVE_SHM_OPEN=1", "-DHAVE_SHM_UNLINK=1",
    "-D_FILE_OFFSET_BITS=64",
)
LIB_FLAGS: dict[str, tuple[str, ...]] = {
    CPU: ("-DCAFFE2_BUILD_MAIN_LIB",),
    PYTHON: (
        "-DTHP_BUILD_MAIN_LIB", "-DUSE_C10D", "-DUSE_C10D_NCCL", "-DUSE_NCCL", "-DUSE_NUMPY",
        "-DBUILD_ONEDNN_GRAPH", '-DPYBIND11_COMPILER_TYPE="_gcc"', '-DPYBIND11_STDLIB="_libstdcpp"',
        '-DPYBIND11_BUILD_ABI="_cxxabi1011"',
    ),
}
WHEEL_LIBS = ("torch_python", "torch", "torch_cpu", "c10")
LIB_NAME = "libfca_overlay.so"


@dataclasses.dataclass(frozen=True)
class Toolchain:
    cxx: tuple[str, ...]  # e.g. ("ccache", "g++")
    opt: str = "-O1"

    @staticmethod
    def detect(opt: str = "-O1", use_ccache: bool = True) -> "Toolchain":
        cxx = os.environ.get("CXX", "g++")
        if shutil.which(cxx) is None:
            raise ui.UserError(f"C++ compiler `{cxx}` not found; install g++ (apt-get install g++) or set CXX")
        version = Shell(verbose=False).run(cxx, "-dumpversion", check=False).stdout.strip()
        if version and int(version.split(".")[0]) < 9:
            raise ui.UserError(f"{cxx} {version} is too old; the overlay needs g++ >= 9")
        launcher = ("ccache",) if use_ccache and shutil.which("ccache") else ()
        return Toolchain(launcher + (cxx,), opt)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one build lives and what it compiles against."""

    tree: Path
    build: Path  # gen/, obj/, logs/
    torch_dir: Path
    python_include: Path

    @property
    def gen(self) -> Path:
        return self.build / "gen"

    @property
    def obj(self) -> Path:
        return self.build / "obj"

    @property
    def logs(self) -> Path:
        return self.build / "logs"

    def include_flags(self) -> list[str]:
        inc = self.torch_dir / "include"
        return [
            f"-I{self.gen}", f"-I{self.tree}", f"-I{self.tree / 'aten/src'}", f"-I{self.tree / 'torch/csrc/api/include'}",
            f"-I{inc}", f"-I{inc / 'torch/csrc/api/include'}", "-isystem", str(self.python_include),
        ]

    def source_path(self, tu: TU) -> Path:
        return (self.gen / tu.path) if tu.generated else (self.tree / tu.path)

    def object_path(self, tu: TU) -> Path:
        return self.obj / (tu.path.replace("/", "__").rsplit(".", 1)[0] + ".o")


def compile_argv(tc: Toolchain, layout: Layout, tu: TU, out: Path) -> list[str]:
    return [
        *tc.cxx, *COMMON_FLAGS, tc.opt, *LIB_FLAGS[tu.lib], *layout.include_flags(),
        "-MMD", "-MF", str(out.with_suffix(".d")), "-c", str(layout.source_path(tu)), "-o", str(out),
    ]


def tu_key(tc: Toolchain, layout: Layout, tu: TU, memo: dict[str, str]) -> str:
    obj = layout.object_path(tu)
    argv = compile_argv(Toolchain(tuple(c for c in tc.cxx if c != "ccache"), tc.opt), layout, tu, obj)
    return depkey.content_key(argv, [layout.source_path(tu)], depkey.read_deps(obj.with_suffix(".d")), memo)


# what the compiler and the linker run with: not a preload of the caller's (a profiler's, say)
_CHILD_ENV = {"LD_PRELOAD": ""}


@dataclasses.dataclass(frozen=True)
class CompileResult:
    compiled: tuple[str, ...]  # TUs compiled this time
    reused: tuple[str, ...]  # TUs whose object was up to date
    seconds: Mapping[str, float]  # compile time of each compiled TU

    def as_json(self) -> dict[str, object]:
        return {"compiled": list(self.compiled), "reused": list(self.reused), "seconds": dict(self.seconds)}


def run_logged(argv: Sequence[str], log: Path) -> subprocess.CompletedProcess:
    """Run a compile or link step quietly (the console shows progress, not command lines) and write its
    command line and output to ``log``, where the error a failure names can be read in full."""
    proc = Shell(verbose=False).run(*argv, env=_CHILD_ENV, check=False, log=False)
    log.write_text("$ " + shlex.join(argv) + "\n" + proc.stdout + proc.stderr)
    return proc


def compile_all(tc: Toolchain, layout: Layout, tus: Sequence[TU], jobs: int) -> CompileResult:
    """Compile what changed (each job's command line and output in ``<build>/logs``)."""
    layout.obj.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    keys_file = layout.build / "tu-keys.json"
    try:
        old_keys = json.loads(keys_file.read_text()) if keys_file.is_file() else {}
    except ValueError:  # cut off (a full disk, a killed build): recompile rather than stop
        old_keys = {}
    memo: dict[str, str] = {}
    todo, reused = [], []
    new_keys = {k: v for k, v in old_keys.items() if k in {t.path for t in tus}}
    for tu in tus:
        obj = layout.object_path(tu)
        key = tu_key(tc, layout, tu, memo)
        if obj.is_file() and old_keys.get(tu.path) == key:
            reused.append(tu.path)
        else:
            todo.append(tu)
    # Longest first so two jobs pack well (generated Functions.cpp dominates).
    todo.sort(key=lambda t: -layout.source_path(t).stat().st_size)
    seconds: dict[str, float] = {}
    progress = ui.Progress(len(todo), "compile")
    failures: list[str] = []

    def one(tu: TU) -> tuple[TU, float, str | None]:
        obj = layout.object_path(tu)
        tmp = obj.with_name(obj.name + ".tmp.o")
        argv = compile_argv(tc, layout, tu, tmp)
        start = time.monotonic()
        log = layout.logs / (obj.name + ".log")
        proc = run_logged(argv, log)
        elapsed = time.monotonic() - start
        if proc.returncode != 0:
            return tu, elapsed, f"{tu.path}: compile failed (log {log}): " + _first_error(proc.stderr)
        os.replace(tmp, obj)
        os.replace(tmp.with_suffix(".d"), obj.with_suffix(".d"))
        return tu, elapsed, None

    if todo:
        ui.info(f"compiling {len(todo)} TU(s) with {jobs} job(s) ({' '.join(tc.cxx)} {tc.opt}); {len(reused)} unchanged")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for tu, elapsed, err in pool.map(one, todo):
            seconds[tu.path] = round(elapsed, 1)
            if err:
                failures.append(err)
                progress.advance(f"FAILED {tu.path}")
            else:
                progress.advance(f"{tu.path} ({ui.fmt_seconds(elapsed)})")
    memo.clear()
    failed = {f.split(":", 1)[0] for f in failures}
    for tu in todo:  # recompiled: its dependency list (.d) changed, so key it anew
        if tu.path not in failed:
            new_keys[tu.path] = tu_key(tc, layout, tu, memo)
    tmp = keys_file.with_name(keys_file.name + ".tmp")
    tmp.write_text(json.dumps(new_keys, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, keys_file)
    if failures:
        raise ui.OperationFailed(failures[0] + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""))
    return CompileResult(tuple(t.path for t in todo), tuple(reused), seconds)


def _first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if " error: " in line or line.startswith("error"):
            return line.strip()
    return (stderr.strip().splitlines() or ["no output"])[-1]


_UNDEF = re.compile(r"undefined reference to `([^']+)'")


def link(layout: Layout, objects: Sequence[Path], out: Path, python_libdir: str, python_ldlib: str) -> None:
    """Check link (``--no-undefined`` with libpython), then the real library (no libpython, like libtorch_python)."""
    lib_dir = layout.torch_dir / "lib"
    libs = [f"-L{lib_dir}"] + [f"-l{l}" for l in WHEEL_LIBS]
    check = layout.build / "link-check.so"
    argv = ["g++", "-shared", "-o", str(check), *map(str, objects), "-Wl,--no-undefined", *libs]
    if python_libdir:
        argv += [f"-L{python_libdir}"]
    argv += [f"-l{python_ldlib}"] if python_ldlib else []
    proc = run_logged(argv, layout.logs / "link-check.log")
    if proc.returncode != 0:
        missing = sorted(set(_UNDEF.findall(proc.stderr)))
        if not missing:
            raise ui.OperationFailed(f"check link failed: {_first_error(proc.stderr)} (log {layout.logs / 'link-check.log'})")
        hint = hint_definition(layout.tree, missing[0])
        raise ui.OperationFailed(
            f"{len(missing)} symbol(s) resolve neither in the overlay nor in the wheel's exports, e.g. `{missing[0]}`"
            f"{hint}; add its TU (if it has no static registrations or private state) or a shim"
        )
    check.unlink()
    link_library(layout, objects, out, str(lib_dir))


def link_library(layout: Layout, objects: Sequence[Path], out: Path, rpath: str) -> None:
    """The library itself (no libpython, like libtorch_python), finding torch's libraries through
    ``rpath``: the venv's ``torch/lib`` for the overlay venv, ``$ORIGIN`` inside a wheel's ``torch/lib``."""
    libs = [f"-L{layout.torch_dir / 'lib'}"] + [f"-l{l}" for l in WHEEL_LIBS]
    tmp = out.with_name(out.name + ".tmp")
    argv = [
        "g++", "-shared", "-o", str(tmp), *map(str, objects), f"-Wl,-soname,{LIB_NAME}", "-Wl,--no-as-needed",
        *libs, f"-Wl,-rpath,{rpath}",
    ]
    log = layout.logs / f"link-{out.name}.log"
    proc = run_logged(argv, log)
    if proc.returncode != 0:
        raise ui.OperationFailed(f"link failed: {_first_error(proc.stderr)} (log {log})")
    os.replace(tmp, out)


def hint_definition(tree: Path, demangled: str) -> str:
    """' (defined in FILE)' if a definition of the symbol's last name is found in the tree."""
    name = demangled.split("(")[0].split("::")[-1]
    scope = demangled.split("(")[0].split("::")[-2] if "::" in demangled.split("(")[0] else ""
    if not name or not re.match(r"^\w+$", name):
        return ""
    pat = re.compile(rf"(^|\W){(re.escape(scope) + '::') if scope else ''}{re.escape(name)}\s*\([^;]*$", re.M)
    for root in ("torch/csrc", "aten/src/ATen", "c10"):
        base = tree / root
        if not base.is_dir():
            continue
        for f in base.rglob("*.cpp"):
            try:
                if pat.search(f.read_text(errors="replace")):
                    return f" (defined in {f.relative_to(tree)})"
            except OSError:
                continue
    return ""
