"""A sample 6-patch stack, committed on a clone of the real v2.6.0 tree.

Each patch edits a real upstream file where the real stack will (headers,
sources, build lists, Python, tests), with upstream-style messages.  Used by
the tests (round trips, conflicts, crashes).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SAMPLE_IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **SAMPLE_IDENTITY, **(env or {})}
    return subprocess.run(["git", *args], cwd=repo, env=full_env, check=True, capture_output=True, text=True).stdout


def _edit(repo: Path, path: str, old: str, new: str) -> None:
    f = repo / path
    text = f.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {path}"
    f.write_text(text.replace(old, new, 1))


def _append(repo: Path, path: str, text: str) -> None:
    with open(repo / path, "a") as f:
        f.write(text)


def _commit(repo: Path, subject: str, body: str, date: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{subject}\n\n{body}\n\nTest Plan: pytest test/tools\n",
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})


PATCHES = (
    # (subject, body, edit function)
    ("[compiled autograd] Declare a Python compiler interface",
     "libtorch_cpu cannot call Python; declare the interface it calls through.",
     lambda r: _edit(r, "torch/csrc/dynamo/compiled_autograd.h", "#pragma once\n",
                     "#pragma once\n// test stack: PyCompilerInterface goes here\n")),
    ("[compiled autograd] Add compiled_autograd.cpp to libtorch_cpu",
     "A new translation unit holds the interface's global setter/getter.",
     lambda r: ((r / "torch/csrc/dynamo/compiled_autograd.cpp").write_text(
                    "// test stack\n#include <torch/csrc/dynamo/compiled_autograd.h>\n"),
                _edit(r, "build_variables.bzl", '    "torch/csrc/autograd/engine.cpp",\n',
                      '    "torch/csrc/autograd/engine.cpp",\n    "torch/csrc/dynamo/compiled_autograd.cpp",\n'))),
    ("[compiled autograd] CopyBackwards proxies a functional call",
     "Stop inlining CopyBackwards into the capture.",
     lambda r: _edit(r, "torch/csrc/autograd/functions/tensor.cpp", "namespace torch::autograd {\n",
                     "namespace torch::autograd {\n// test stack: functional CopyBackwards\n")),
    ("[functional autograd] ops namespace in compiled_autograd.py",
     "Bound functional ops are looked up by name in graph dumps.",
     lambda r: _append(r, "torch/_dynamo/compiled_autograd.py",
                       "\n\nclass OpNamespace:\n    \"\"\"test stack\"\"\"\n")),
    ("[functional autograd] Functional AOT backward prologue",
     "No hidden state on ctx.",
     lambda r: _append(r, "torch/_functorch/_aot_autograd/runtime_wrappers.py", "\n# test stack: prologue\n")),
    ("[functional autograd] Test a TwoTensor backward under compiled autograd",
     "The end goal: subclasses work.",
     lambda r: _append(r, "test/inductor/test_compiled_autograd.py", "\n# test stack: TwoTensor test\n")),
)


def build_stack(repo: Path, n: int = len(PATCHES)) -> list[str]:
    """Commit the first ``n`` test patches on ``repo``; returns their subjects."""
    subjects = []
    for i, (subject, body, edit) in enumerate(PATCHES[:n]):
        edit(repo)
        _commit(repo, subject, body, f"2025-02-0{i + 1}T12:00:00+00:00")
        subjects.append(subject)
    return subjects
