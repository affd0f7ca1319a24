"""Profiles: which upstream test files a run takes, with which ``-k`` selections (data).

``full`` runs every test of the files below; ``ci`` runs all of
``inductor/test_compiled_autograd.py`` and ``-k`` selections of the others in
the areas the stack touches.  Why these files (all exist at v2.6.0):

* ``inductor/test_compiled_autograd.py`` -- CA itself (514 tests: CA graphs,
  hooks, custom C++ and Python Functions, and ``TestAutogradWithCompiledAutograd``,
  i.e. most of test_autograd.py re-run under CA).  Every patch changes it.
* ``test_autograd.py`` -- the eager engine.  P3/P4/P5 change code eager autograd
  runs too (``engine.cpp`` validate_outputs, ``python_function.cpp`` PyNode,
  ``custom_function.h`` CppNode, ``input_buffer.cpp``, CopySlices in
  ``functions/tensor.cpp``): eager regressions must show up here.
* ``dynamo/test_autograd_function.py`` -- ``autograd.Function`` under Dynamo
  (P4 makes every PyNode a proxied call, the AOT-generated ``CompiledFunction``
  included).
* ``dynamo/test_hooks.py`` and ``dynamo/test_backward_higher_order_ops.py`` --
  tensor/module hooks under Dynamo, with and without CA (the hooks' HOPs end up
  in CA graphs).
* ``inductor/test_distributed_patterns.py`` -- FSDP-like patterns (resize_,
  set_, hooks, ``AccumulateGrad``) compiled end to end with CA.
* ``dynamo/test_aot_autograd.py`` and ``functorch/test_aotdispatch.py`` -- AOT
  Autograd's backward (``CompiledFunction``, runtime wrappers, prologue and
  epilogue: P4/P6); aotdispatch also covers subclass wrapping (``TwoTensor``).
  The one exception to "every test" in ``full``: aotdispatch's op x dtype
  sweeps (``TestEagerFusionOpInfo``/``ModuleInfo``, 1,610 of its 2,069 tests)
  are left out -- a 1/20 shard of them ran 60 of 110 tests in 9 min, i.e.
  about 5 h on 2 cores, and they test AOT Autograd per operator, not CA.  Run
  them on purpose with ``--files functorch/test_aotdispatch.py --all-tests -k TestEagerFusionOpInfo``
  (no baseline is recorded for them: record one first).
* ``dynamo/test_subclasses.py`` -- tensor subclasses through Dynamo/AOT,
  forward and backward (P6's goal).
* ``dynamo/test_activation_checkpointing.py`` -- checkpointing, some of it
  under CA (recomputation inside a CA-captured backward).
* ``dynamo/test_bytecode_utils.py`` -- Dynamo's bytecode helpers; P34 shares
  an inlined function's cleaned bytecode between the tracers that inline it.
* ``dynamo/test_export.py -k preserve_fx_node_metadata`` -- a GraphModule
  compiled by Dynamo keeps its nodes' stack traces (P36 gathers that meta once
  per code object).
* full only, the suites of the subsystems that patches outside compiled
  autograd change, on by default: ``dynamo/test_misc.py``,
  ``dynamo/test_functions.py``, ``dynamo/test_dynamic_shapes.py`` and
  ``dynamo/test_guard_manager.py`` (P21's guard, P34's inlining, P36's
  retracing, P37's ``wrap_symint``); ``test_python_dispatch.py`` (P23's
  Python-key kernel); ``distributed/_tensor/test_dtensor.py`` (P10, P19);
  ``distributed/test_c10d_gloo.py``'s DDP and reducer tests (P18).

Not chosen: the rest of ``distributed/`` (process groups of 4 or more ranks), the
compiled optimizer tests (no autograd graph), OpInfo-wide suites beyond
aotdispatch (hours, no CA), Inductor's own suites (no patch changes Inductor by
default: P33 is opt-in).

Measured times are in each :class:`Suite` (``estimate_s``: cold caches, 2
cores, stock torch 2.6.0, pytest start-up included): ci ~44 min (27.5 of them
test_compiled_autograd.py), full ~80 min.  ``run_upstream_tests.py --list``
prints them with the baseline counts.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Mapping

from .. import ui


@dataclasses.dataclass(frozen=True)
class Suite:
    """One upstream test file (relative to the tree's ``test/``), optionally narrowed by ``-k``."""

    file: str
    k: str | None = None
    why: str = ""
    estimate_s: int = 0  # measured: cold caches, 2 cores, stock torch

    @property
    def slug(self) -> str:
        return file_slug(self.file)


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    suites: tuple[Suite, ...]

    @property
    def estimate_s(self) -> int:
        return sum(s.estimate_s for s in self.suites)

    def suite(self, file: str) -> Suite | None:
        return next((s for s in self.suites if s.file == file), None)


TCA = "inductor/test_compiled_autograd.py"

# -k selections.  Keep in mind that -k matches substrings of every name in a
# test's chain (module, class, test): "grad" would select all of TestAOTAutograd.
_K_AUTOGRAD = (
    "hook or Function or function or inplace or in_place or view or copy_slices or CopySlices"
    " or saved or accumulate or retain_grad or reentrant or custom"
)
# AOT Autograd proper + the same tests through Dynamo; the cache variant re-runs them again
_K_AOTDISPATCH_CI = "TestAOTAutograd and not TestAOTAutogradWithCache"
# the op x dtype sweeps (1,360 OpInfo + 250 ModuleInfo tests, hours on 2 cores, not CA-specific)
_K_AOTDISPATCH_FULL = "not TestEagerFusionOpInfo and not TestEagerFusionModuleInfo"
_K_SUBCLASSES = "backward or grad or autograd or TwoTensor or two_tensor"
DTENSOR_COMPILE = "distributed/_tensor/test_dtensor_compile.py"
# the fake-process-group compile tests and the compiled autograd ones; not the 4-rank end-to-end ones
_K_DTENSOR = "not TestDTensorCompileE2E"

# estimate_s: wall time per file (pytest start-up included), measured on the 2-core machine,
# cold caches, stock torch.  ci: one cold `--baseline --profile ci` run of the files after
# test_compiled_autograd.py (8m54s together).  full: whole-file runs while another pytest loaded the
# machine (upper bounds).  test_compiled_autograd.py: DESIGN section 4 (27.5 min cold; 49 min when the
# machine is shared).
# the whole file in both profiles (its other tests need a GPU or take seconds)
_REPLICATE_SUITE = Suite("distributed/_composable/test_replicate_with_compiler.py",
                         why="DDP and replicate() with compiled autograd, 2 gloo ranks on CPU (P18)", estimate_s=80)
_RECOMPILES_SUITE = Suite("dynamo/test_recompiles.py",
                          why="Dynamo's recompile guards, a global dict looked up by a local Tensor (P21)", estimate_s=20)
_BYTECODE_SUITE = Suite("dynamo/test_bytecode_utils.py",
                        why="Dynamo's bytecode helpers, an inlined function's bytecode cleaned once (P34)", estimate_s=15)
# TestFX's setUp loads a torchbind test library that the wheels do not ship: every other class
# (the fx passes' suites it imports, functional and vision tracing, the API surface)
_FX_SUITE = Suite("test_fx.py", k="not TestFX",
                  why="fx graphs: Node argument normalization, users, find-nodes filing, the passes (P35)",
                  estimate_s=45)

_EXPORT_SUITE = Suite("dynamo/test_export.py", k="preserve_fx_node_metadata",
                      why="a retraced GraphModule's node meta: stack traces kept through recompile, inlining and "
                          "graph breaks (P36)", estimate_s=10)
# P23's kernel at the Python key for inductor::accumulate_grad_: the subclasses that meet it
# (test_python_dispatch.py runs in the full profile only, with the subsystem suites below).
_SUBCLASS_SUITE = Suite("test_subclass.py", why="Tensor subclasses and parametrizations (P23)", estimate_s=10)
# P15/P16's Python metas and affine_grid's decomposition: the decomposition checks of the ops
# whose backwards they cover
_K_DECOMP = "upsample or interpolate or affine_grid or fractional_max_pool or shrink"
_DECOMP_SUITE = Suite("test_decomp.py", k=_K_DECOMP,
                      why="decompositions and metas of the upsample, affine_grid, shrink and fractional max-pool ops "
                          "(P15/P16)", estimate_s=175)
# the files both profiles run with the same selection
_IN_BOTH = (_REPLICATE_SUITE, _RECOMPILES_SUITE, _BYTECODE_SUITE, _EXPORT_SUITE, _FX_SUITE,
            _SUBCLASS_SUITE, _DECOMP_SUITE)

# The upstream suites of the subsystems that patches outside compiled autograd change, on by
# default (full profile only: hours on 2 cores together).  P21, P34, P36, P37: Dynamo's guards,
# inlining and retracing; P23: dispatch of Tensor subclasses; P10, P19: DTensor; P18: DDP.
# not the sparse-grad tests: gloo's sparse all-reduce hangs now and then on stock 2.6 here (a rank
# times out after 300 s), a different test each run
_K_DDP_GLOO = "(DistributedDataParallelTest or ReducerTest) and not sparse"
_SUBSYSTEM_SUITES = (
    Suite("dynamo/test_misc.py", why="Dynamo: guards, inlining, graph breaks, retraced GraphModules (P21/P34/P36/P37)",
          estimate_s=90),
    Suite("dynamo/test_functions.py", why="Dynamo inlining user functions (P34 cleans their bytecode once)",
          estimate_s=120),
    Suite("dynamo/test_dynamic_shapes.py",
          why="Dynamo's misc, function, repro, export and subgraph tests with dynamic shapes (P21/P34/P36/P37)",
          estimate_s=900),
    Suite("dynamo/test_guard_manager.py", why="Dynamo's C++ guard manager, its aliasing guards (P21)", estimate_s=30),
    # test_fallthrough_for_dense_key_with_meta_in_tls passes but leaves a Python registration behind:
    # on stock, 72 of the tests after it in its process fail
    Suite("test_python_dispatch.py", k="not test_fallthrough_for_dense_key_with_meta_in_tls",
          why="__torch_dispatch__ subclasses and Python-key kernels (P23)", estimate_s=15),
    Suite("distributed/_tensor/test_dtensor.py", why="DTensor: construction, redistribution, metadata (P10/P19)",
          estimate_s=380),
    Suite("distributed/test_c10d_gloo.py", k=_K_DDP_GLOO, why="DDP and its C++ reducer on gloo (P18)",
          estimate_s=240),
)

FULL = Profile(
    name="full",
    summary="every test of the CA-related upstream files (except test_aotdispatch's OpInfo/ModuleInfo sweeps), "
            "and the suites of the other subsystems the stack changes by default",
    suites=(
        Suite(TCA, why="compiled autograd itself (every patch)", estimate_s=1650),
        Suite("test_autograd.py", why="eager engine: PyNode, CppNode, validate_outputs, CopySlices, InputBuffer",
              estimate_s=147),
        Suite("dynamo/test_autograd_function.py", why="autograd.Function under Dynamo (P4)", estimate_s=18),
        Suite("dynamo/test_hooks.py", why="hooks under Dynamo and CA", estimate_s=80),
        Suite("dynamo/test_backward_higher_order_ops.py", why="backward hook HOPs in CA graphs", estimate_s=45),
        Suite("inductor/test_distributed_patterns.py", why="FSDP-like patterns compiled with CA", estimate_s=138),
        Suite("dynamo/test_aot_autograd.py", why="AOT Autograd backward through Dynamo (P4)", estimate_s=104),
        Suite("functorch/test_aotdispatch.py", k=_K_AOTDISPATCH_FULL,
              why="AOT backward, runtime wrappers, subclass wrapping (P4/P6); without the op sweeps "
                  "(a 1/20 shard of them ran 9 min for 60 of 110 tests: ~5 h for all)", estimate_s=178),
        Suite("dynamo/test_subclasses.py", why="tensor subclasses forward+backward (P6)", estimate_s=119),
        Suite("dynamo/test_activation_checkpointing.py", why="recomputation inside CA-captured backward (27/30 need a GPU)",
              estimate_s=51),
        Suite(DTENSOR_COMPILE, why="DTensor under torch.compile and compiled autograd (P10/P11/P19/P20)", estimate_s=160),
        *_IN_BOTH,
        *_SUBSYSTEM_SUITES,
    ),
)

CI = Profile(
    name="ci",
    summary="all of test_compiled_autograd.py + -k selections in the areas the stack touches (<= 45 min cold, 2 cores, one file at a time)",
    suites=(
        Suite(TCA, why="compiled autograd itself (every patch)", estimate_s=1650),
        Suite("test_autograd.py", k=_K_AUTOGRAD, why="eager hooks, Functions, views/CopySlices, saved tensors (348/636)",
              estimate_s=59),
        Suite("dynamo/test_autograd_function.py", why="autograd.Function under Dynamo (P4)", estimate_s=20),
        Suite("dynamo/test_backward_higher_order_ops.py", why="backward hook HOPs in CA graphs", estimate_s=36),
        Suite("dynamo/test_hooks.py", why="hooks under Dynamo and CA", estimate_s=68),
        Suite("inductor/test_distributed_patterns.py", why="FSDP-like patterns compiled with CA", estimate_s=115),
        Suite("dynamo/test_aot_autograd.py", why="AOT Autograd backward through Dynamo (P4)", estimate_s=125),
        Suite("functorch/test_aotdispatch.py", k=_K_AOTDISPATCH_CI,
              why="AOT backward and runtime wrappers, eager and through Dynamo (P4/P6) (250/2069)", estimate_s=77),
        Suite("dynamo/test_subclasses.py", k=_K_SUBCLASSES, why="subclasses with backward (P6) (17/109)", estimate_s=31),
        Suite(DTENSOR_COMPILE, k=_K_DTENSOR, why="DTensor under torch.compile and compiled autograd, 2 gloo ranks (P10/P11/P19/P20)",
              estimate_s=100),
        *_IN_BOTH,
    ),
)

PROFILES: Mapping[str, Profile] = {p.name: p for p in (CI, FULL)}


def file_slug(file: str) -> str:
    """``inductor/test_compiled_autograd.py`` -> ``inductor__test_compiled_autograd``."""
    return file.removesuffix(".py").replace("/", "__")


def normalize_file(file: str) -> str:
    """Accept ``test/inductor/x.py``, ``./inductor/x.py`` or ``inductor/x.py``; return it relative to test/."""
    f = file.strip()
    while f.startswith("./"):
        f = f[2:]
    return f[len("test/"):] if f.startswith("test/") else f


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1-based, like upstream's --shard-id/--num-shards)."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ui.UserError(f"--shard {text!r}: expected I/N, e.g. 1/4", exit_code=ui.EXIT_USAGE) from None
    if n < 1 or not 1 <= i <= n:
        raise ui.UserError(f"--shard {text}: need 1 <= I <= N", exit_code=ui.EXIT_USAGE)
    return i, n


def combine_k(*exprs: str | None) -> str | None:
    parts = [e for e in exprs if e]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return " and ".join(f"({p})" for p in parts)


def shard_of(nodeid: str, num_shards: int) -> int:
    """1-based shard of a node id, exactly as upstream's pytest_shard_custom computes it."""
    return int.from_bytes(hashlib.sha256(nodeid.encode()).digest(), "little") % num_shards + 1
