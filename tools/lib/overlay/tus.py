"""Which translation units go into the overlay, and why (data first).

Rules (DESIGN.md section 4):
* always: the generated ``Functions.cpp`` (every generated node), its helper
  ``FunctionsManual.cpp``, and ``python_compiled_autograd.cpp`` (the CA entry
  point), so the overlay is live even with an empty stack;
* every ``.cpp`` the stack changes or creates (its library is looked up in the
  tree's ``build_variables.bzl``);
* shims: stateless helpers those TUs call that libtorch does not export;
* users of any entity whose binary meaning the stack changes (see abi.py).
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .. import ui

CPU, PYTHON = "cpu", "python"
GENERATED_FUNCTIONS = "torch/csrc/autograd/generated/Functions.cpp"

BASE_TUS: tuple[tuple[str, str, str], ...] = (
    (GENERATED_FUNCTIONS, CPU, "generated autograd nodes (codegen output)"),
    ("torch/csrc/autograd/FunctionsManual.cpp", CPU, "backward formulas the generated nodes call"),
    ("torch/csrc/dynamo/python_compiled_autograd.cpp", PYTHON, "compiled autograd entry point"),
)

# Library membership of a source, from build_variables.bzl list names.
_PYTHON_LISTS = ("libtorch_python_core_sources", "libtorch_python_distributed_sources")
_CPU_LISTS = (
    "libtorch_core_sources", "libtorch_extra_sources", "libtorch_distributed_sources",
    "core_sources_full", "libtorch_core_jit_sources", "aten_cpu_source_list", "aten_native_source_list",
)
# Sources that must never be compiled into the overlay: they run static
# registrations (operators, dispatch keys) that would then run twice.
STATIC_REGISTRATION = re.compile(r"\b(TORCH_LIBRARY\w*|C10_REGISTER\w*|REGISTER_\w*DISPATCH|RegisterOperators|C10_DEFINE_REGISTRY)\b")


@dataclasses.dataclass(frozen=True)
class TU:
    path: str  # relative to the tree (or to the build's gen dir for generated sources)
    lib: str  # CPU or PYTHON: decides the defines it is compiled with
    reason: str
    generated: bool = False


@lru_cache(maxsize=4)
def _bzl_lists(bzl_text: str) -> dict[str, frozenset[str]]:
    env: dict = {"__builtins__": __builtins__}
    exec(compile(bzl_text, "build_variables.bzl", "exec"), env)
    return {k: frozenset(v) for k, v in env.items() if isinstance(v, list) and all(isinstance(x, str) for x in v)}


def library_sources(tree: Path) -> list[str]:
    """Every libtorch / libtorch_python source the tree's build_variables.bzl lists."""
    lists = _bzl_lists((tree / "build_variables.bzl").read_text())
    return sorted(set().union(*(lists.get(n, frozenset()) for n in _CPU_LISTS + _PYTHON_LISTS)))


def library_of(tree: Path, source: str) -> str | None:
    lists = _bzl_lists((tree / "build_variables.bzl").read_text())
    if any(source in lists.get(name, ()) for name in _PYTHON_LISTS):
        return PYTHON
    if any(source in lists.get(name, ()) for name in _CPU_LISTS):
        return CPU
    return None


def select_tus(tree: Path, changed: Iterable[str]) -> list[TU]:
    tus = [TU(p, lib, why, generated=(p == GENERATED_FUNCTIONS)) for p, lib, why in BASE_TUS]
    have = {t.path for t in tus}
    for path in sorted(changed):
        if not path.endswith((".cpp", ".cc")) or path in have:
            continue
        if not (tree / path).is_file():
            continue  # deleted by the stack
        lib = library_of(tree, path)
        if lib is None:
            if path.startswith(("test/", "tools/", "benchmarks/")):
                continue
            raise ui.UserError(
                f"{path} is changed by the stack but is in no libtorch/libtorch_python list of build_variables.bzl; "
                "add it there (the overlay compiles only library sources)"
            )
        text = (tree / path).read_text(errors="replace")
        m = STATIC_REGISTRATION.search(text)
        if m:
            raise ui.UserError(
                f"{path} is changed by the stack but runs a static registration ({m.group(1)}), which would run twice "
                "in the overlay; move the change out of that file"
            )
        tus.append(TU(path, lib, "changed by the stack"))
        have.add(path)
    return tus
