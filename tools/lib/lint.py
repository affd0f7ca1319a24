"""The pinned tree's own linters, as data, run on the files the stack touches.

PyTorch lints with ``lintrunner``: ``.lintrunner.toml`` names each linter, the
files it covers (``include_patterns`` / ``exclude_patterns``), the adapter
script it runs (``tools/linter/adapters/*.py``, printing one JSON lint
message per line) and, in its ``init_command``, the exact tool versions
(``pip_init.py`` requirements; clang-format comes as a binary whose version
``s3_init_config.json`` names).  This module reads those, so the stack is
checked with the linters *and versions* of the tree it targets, by the
tree's own adapters: what upstream's lint job would say about the patched
files.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import tomllib
from pathlib import Path

LINTERS = ("FLAKE8", "RUFF", "PYFMT", "CLANGFORMAT")  # what lint_stack runs by default
OPTIONAL = ("MYPY",)  # slow (it type-checks what the files import): on request
MACRO_PREFIX = re.compile(r"\bFCA_[A-Za-z0-9_]*")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


@dataclasses.dataclass(frozen=True)
class Linter:
    code: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    command: tuple[str, ...]  # as in the toml: "python3", the adapter, its options, "@{{PATHSFILE}}"
    requirements: tuple[str, ...]  # pip requirement strings of its init_command

    def covers(self, path: str) -> bool:
        return any(_glob_match(p, path) for p in self.include) and not any(_glob_match(p, path) for p in self.exclude)


@dataclasses.dataclass(frozen=True)
class Message:
    path: str
    line: int | None
    code: str
    name: str
    severity: str
    description: str

    def render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        first = (self.description or "").strip().splitlines()[:1]
        return f"{where}: {self.code}/{self.name} ({self.severity})" + (f": {first[0]}" if first else "")


def _glob_re(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = pattern.find("]", i)
            out.append(fnmatch.translate(pattern[i:j + 1])[4:-3] if j > i else re.escape("["))
            i = (j + 1) if j > i else i + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _glob_match(pattern: str, path: str) -> bool:
    """lintrunner's globs: ``**`` spans directories, ``*`` and ``?`` do not."""
    return bool(_glob_re(pattern).match(path))


def _requirements(init_command: list[str]) -> tuple[str, ...]:
    """The pip requirements of a ``pip_init.py`` init_command (its positional arguments)."""
    if not any(a.endswith("pip_init.py") for a in init_command):
        return ()
    start = next(i for i, a in enumerate(init_command) if a.endswith("pip_init.py")) + 1
    return tuple(a for a in init_command[start:] if not a.startswith("-"))


def load(tree: Path) -> dict[str, Linter]:
    """The linters of ``<tree>/.lintrunner.toml`` by code."""
    data = tomllib.loads((tree / ".lintrunner.toml").read_text())
    linters = {}
    for entry in data.get("linter", []):
        linters[entry["code"]] = Linter(
            code=entry["code"],
            include=tuple(entry.get("include_patterns", [])),
            exclude=tuple(entry.get("exclude_patterns", [])),
            command=tuple(entry["command"]),
            requirements=_requirements(entry.get("init_command", [])),
        )
    return linters


def clang_format_version(tree: Path) -> str:
    """The clang-format version the tree pins (its Linux binary's URL in s3_init_config.json)."""
    config = json.loads((tree / "tools/linter/adapters/s3_init_config.json").read_text())
    url = config["clang-format"]["Linux"]["download_url"]
    m = re.search(r"/(\d+\.\d+\.\d+)/clang-format$", url)
    if not m:
        raise ValueError(f"no clang-format version in {url}")
    return m.group(1)


def venv_requirements(tree: Path, codes: list[str], linters: dict[str, Linter]) -> list[str]:
    """Every pinned requirement of ``codes`` (deduplicated, in order), clang-format included."""
    reqs: list[str] = []
    for code in codes:
        reqs += [r for r in linters[code].requirements if r not in reqs]
    if "CLANGFORMAT" in codes:
        reqs.append(f"clang-format=={clang_format_version(tree)}")
    return reqs


def argv(linter: Linter, python: str, pathsfile: Path, clang_format: str) -> list[str]:
    """The linter's command with this machine's interpreter, files and clang-format binary."""
    out = []
    for a in linter.command:
        if a == "python3":
            a = python
        elif a.startswith("--binary="):
            a = f"--binary={clang_format}"
        out.append(a.replace("{{PATHSFILE}}", str(pathsfile)))
    return out


def parse_messages(stdout: str, raw: bool = False) -> list:
    """The adapter's JSON lint messages (one per line); ``disabled`` ones are dropped, as lintrunner does.
    ``raw``: the dicts as printed (formatters put the whole file in ``original`` and ``replacement``)."""
    found: list = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if m.get("severity") == "disabled":
            continue
        if raw:
            found.append(m)
            continue
        found.append(Message(m.get("path") or "", m.get("line"), m.get("code", ""), m.get("name", ""),
                             m.get("severity", ""), m.get("description") or ""))
    return found


def project_macros(path: str, text: str) -> list[Message]:
    """A public header must not define or use a macro with the project's prefix (``FCA_...``)."""
    if not path.endswith(HEADER_SUFFIXES):
        return []
    return [
        Message(path, n, "HYGIENE", "project-macro", "error",
                f"{m.group(0)} carries the project's prefix into a public header; use a name upstream would use")
        for n, line in enumerate(text.splitlines(), 1)
        for m in MACRO_PREFIX.finditer(line)
    ]
