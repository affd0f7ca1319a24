"""Where an upstream run's tests run: the python command, the tests' dir, the key of its caches; the probe
that checks the python imports the torch and pytest it should; the pin's own test files for the baseline."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

from .. import paths, ui
from ..shell import Shell

MODES: Mapping[str, str] = {
    "overlay": "overlay venv (patched tree on the stock wheel)",
    "stock": "stock wheel (baseline)",
    "build": "source build",
    "wheel": "venv with the patched wheel",
}

PROBE = (
    "import json, os, sys, pytest, torch; print(json.dumps({'torch': torch.__version__, "
    "'torch_file': os.path.realpath(torch.__file__), 'pytest': pytest.__version__, 'python': sys.executable, "
    "'py': '%d.%d.%d' % sys.version_info[:3]}))"
)


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the tests run: the python command, the test dir, the cache key; ``probe``: what :func:`probe` found."""

    mode: str  # a key of MODES
    python_argv: tuple[str, ...]
    tree: Path
    tests_dir: Path
    cache_key: str
    probe: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def describe(self) -> str:
        p = self.probe
        return (f"{p.get('torch', '?')} from {p.get('torch_file', '?')}, {MODES[self.mode]}; "
                f"pytest {p.get('pytest', '?')}, python {p.get('py', '?')}")


def check_tree(tree: Path, what: str) -> None:
    if not (tree / "test" / "conftest.py").is_file():
        raise ui.UserError(f"{what} {tree} has no test/conftest.py: expected a PyTorch v2.6.0 tree")


def probe(target: Target, sh: Shell) -> Target:
    """The target, probed: its python imports torch and pytest 8.3 (not the tree's torch/, except for a build)."""
    proc = sh.run(*target.python_argv, "-c", PROBE, cwd=target.tests_dir, env={"PYTHONPATH": ""}, check=False)
    if proc.returncode != 0:
        errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
        if target.mode == "overlay" and errors:
            raise ui.UserError(f"overlay: {errors[-1][len('error: '):]}")
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ui.UserError(f"`{shlex.join(target.python_argv)}` cannot import torch and pytest ({tail})")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    if not data["pytest"].startswith("8.3."):
        raise ui.UserError(
            f"{data['python']} has pytest {data['pytest']}; upstream's 2.6 test/conftest.py needs pytest 8.3.x "
            "(pip install 'pytest>=8.3,<8.4')"
        )
    in_tree = Path(data["torch_file"]).is_relative_to(target.tree / "torch")
    if target.mode == "build" and not in_tree:
        raise ui.UserError(
            f"{data['python']} imports torch from {data['torch_file']}, not from {target.tree}: build it with "
            f"`python tools/build_torch.py --torch-src {target.tree} --mode develop` or pass --python"
        )
    if target.mode != "build" and in_tree:
        raise ui.UserError(f"{data['python']} imports torch from the source tree {target.tree}; it must use the venv's torch")
    return dataclasses.replace(target, probe=data)


def pristine_tests(tree: Path, cache: Path, sh: Shell, stack_dir: Path = paths.DEFAULT_STACK_DIR) -> Path:
    """The pin's test/ dir: the tree's own if the stack leaves tests alone there, else extracted from git.

    The baseline is stock torch running the pin's tests; a patch that changes a
    test must show up as a difference against it, so patched tests are not used.
    """
    from ..stack import Stack
    from ..tree import open_tree

    stack = Stack.load(stack_dir)
    t = open_tree(tree, sh)
    state = t.state(stack)
    t.verify_base(stack, state)
    changes_tests = [p for p in stack.touched if p.startswith("test/") or p == "pytest.ini"]
    if state.applied == 0 or not changes_tests:
        return tree / "test"
    if getattr(t, "read_at", None) is None or not state.base:
        raise ui.UserError(
            f"{tree} has {state.applied} patch(es) applied that change test files, and is not a git checkout: "
            "pass --torch-src with an unpatched v2.6.0 tree for the baseline"
        )
    dest = cache / "upstream-tests" / state.base[:16]
    if not (dest / ".complete").is_file():
        with ui.step(f"extracting the pin's test/ ({state.base[:12]}) into {dest}"):
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
            archive = sh.run(*Shell.git_argv("-C", str(tree), "archive", "--format=tar", state.base, "test", "pytest.ini"),
                             binary=True).stdout
            sh.run("tar", "-xf", "-", "-C", str(tmp), input=archive, binary=True, log=False)
            (tmp / ".complete").write_text(state.base + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
    return dest / "test"
