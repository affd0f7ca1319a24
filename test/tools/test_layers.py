"""The shape of tools/ as its imports draw it: libraries under tools/lib never reach up into a
command-line module, no import cycle, files a reader can hold, and one way to run a command."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT

TOOLS = REPO_ROOT / "tools"
MAX_LINES = 500
LONG_ON_PURPOSE = {"run_upstream_tests.py"}  # the issue allows the runner's CLI, if it must
# scripts that run inside a torch venv by path: torch and the standard library only
WORKERS = TOOLS / "workers"


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path) -> list[str]:
    parts = _module_name(path).split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of tools/ that ``path`` imports, at any depth of its code (a lazy import in a
    function is a dependency too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path)[: len(_package_of(path)) - node.level + 1]
            else:
                base = []
            target = ".".join(base + ([node.module] if node.module else []))
            candidates = [f"{target}.{alias.name}" for alias in node.names] + [target]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for name in candidates:
            # the longest module of tools/ that the name is, or is inside of
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != "tools":
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    files = [p for p in TOOLS.rglob("*.py") if WORKERS not in p.parents]
    modules = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, modules) - {_module_name(p)} for p in files}


CLIS = frozenset(f"tools.{p.stem}" for p in TOOLS.glob("*.py") if p.name != "__init__.py")


def _is_cli(module: str) -> bool:
    return module in CLIS


def test_no_library_module_imports_a_command_line_module() -> None:
    back_arrows = sorted(f"{m} -> {dep}" for m, deps in _graph().items()
                         if m.startswith("tools.lib") for dep in deps if _is_cli(dep))
    assert back_arrows == []


def test_the_modules_of_tools_import_each_other_without_a_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_file_in_tools_is_longer_than_a_reader_can_hold() -> None:
    long = sorted(f"{p.relative_to(REPO_ROOT)}: {n} lines" for p in TOOLS.rglob("*.py")
                  if p.name not in LONG_ON_PURPOSE and (n := len(p.read_text().splitlines())) > MAX_LINES)
    assert long == []


CALL = re.compile(r"\bsubprocess\.(run|Popen|call|check_call|check_output|getoutput|getstatusoutput)\(")


def test_every_external_command_of_the_tooling_goes_through_shell() -> None:
    direct = sorted(f"{p.relative_to(REPO_ROOT)}:{i}" for p in TOOLS.rglob("*.py")
                    if p.name != "shell.py" and WORKERS not in p.parents
                    for i, line in enumerate(p.read_text().splitlines(), 1) if CALL.search(line))
    assert direct == []


@pytest.mark.parametrize("name", ["os.system(", "os.popen("])
def test_no_tool_shells_out_behind_shells_back(name: str) -> None:
    assert [str(p.relative_to(REPO_ROOT)) for p in TOOLS.rglob("*.py") if name in p.read_text()] == []
