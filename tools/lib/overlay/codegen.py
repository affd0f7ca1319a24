"""Run the (patched) tree's autograd codegen for the generated nodes only.

Produces ``torch/csrc/autograd/generated/Functions.{h,cpp}`` the way
``tools/autograd/gen_autograd.py`` does, minus its other outputs.
``match_differentiability_info`` must run first: it adds the ``_foreach_*``
backward nodes (ForeachXxxBackward0) to the infos.  Runs in a subprocess with
the tree's own ``torchgen``/``tools`` first on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from .. import ui
from ..shell import Shell

GENERATED = ("Functions.h", "Functions.cpp")

_SCRIPT = r"""
import os, sys
src, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, src)
from torchgen.api import cpp
from torchgen.api.autograd import match_differentiability_info
from torchgen.gen import parse_native_yaml
from torchgen.selective_build.selector import SelectiveBuilder
from tools.autograd.load_derivatives import load_derivatives
from tools.autograd.gen_autograd_functions import gen_autograd_functions_lib
nf = os.path.join(src, "aten/src/ATen/native/native_functions.yaml")
tags = os.path.join(src, "aten/src/ATen/native/tags.yaml")
ad = os.path.join(src, "tools/autograd")
os.makedirs(out, exist_ok=True)
infos, _ = load_derivatives(os.path.join(ad, "derivatives.yaml"), nf, tags)
sel = SelectiveBuilder.get_nop_selector()
fns = sorted(filter(sel.is_native_function_selected_for_training, parse_native_yaml(nf, tags).native_functions),
             key=lambda f: cpp.name(f.func))
match_differentiability_info(fns, infos)
gen_autograd_functions_lib(out, infos, os.path.join(ad, "templates"))
"""


CODEGEN_INPUTS = ("tools/autograd", "torchgen", "aten/src/ATen/native/native_functions.yaml", "aten/src/ATen/native/tags.yaml")


def codegen_key(tree: Path) -> str:
    """Hash of every codegen input, so an unchanged tree skips the codegen."""
    h = hashlib.sha256(_SCRIPT.encode())
    for entry in CODEGEN_INPUTS:
        base = tree / entry
        files = sorted(base.rglob("*")) if base.is_dir() else [base]
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(tree)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def run_codegen(tree: Path, out_dir: Path, sh: Shell) -> Path:
    """Generate into ``out_dir/torch/csrc/autograd/generated``; returns that dir."""
    gen = out_dir / "torch" / "csrc" / "autograd" / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    key = codegen_key(tree)
    key_file = gen / ".codegen-key"
    if key_file.is_file() and key_file.read_text() == key and all((gen / g).is_file() for g in GENERATED):
        ui.info("autograd codegen: inputs unchanged, reusing Functions.{h,cpp}")
        return gen
    env = {"PYTHONPATH": "", "PYTHONDONTWRITEBYTECODE": "1"}
    import importlib.util

    if importlib.util.find_spec("yaml") is None:
        raise ui.UserError("the autograd codegen needs PyYAML in the tool's Python; `pip install -e .` installs it") from None
    with ui.step("autograd codegen (Functions.h / Functions.cpp)"):
        sh.run(sys.executable, "-c", _SCRIPT, str(tree), str(gen), env=env, log=False)
    key_file.write_text(key)
    return gen


def functions_h_matches_wheel(gen: Path, torch_dir: Path) -> bool:
    wheel = torch_dir / "include" / "torch" / "csrc" / "autograd" / "generated" / "Functions.h"
    return wheel.is_file() and (gen / "Functions.h").read_bytes() == wheel.read_bytes()


