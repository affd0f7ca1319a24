"""Activation-checkpointing memory under compiled autograd; run INSIDE a torch venv.

Standalone on purpose (imports only torch and the standard library): ``tools/bench.py memory``
runs ``python bench_memory.py PROGRAM`` in the stock 2.6 venv, the overlay venv and the 2.7
venv, and reads one JSON line from stdout.

PROGRAM is an 8-block MLP (each block Linear-ReLU-Linear-ReLU, activations much larger than
the weights) whose blocks run under ``torch.utils.checkpoint.checkpoint(use_reentrant=False)``
(``checkpoint``), under selective checkpointing that saves the matmuls and recomputes the
rest (``selective``), plainly (``plain``, the control: no saved-tensor hooks at all), half
checkpointed and half plain in either order (``checkpoint_then_plain``,
``plain_then_checkpoint``: hooked and plain saved Tensors in one backward), or with the first
half under ``torch.autograd.graph.save_on_cpu()`` (``save_on_cpu``).  Each is run eagerly and
with the backward under compiled autograd (``aot_eager``): a first backward (under compiled
autograd, the capture and compile) and a second one (a cache hit, the steady state); the
gradients of the second are compared with eager's.

Bytes come from the profiler's CPU memory events (every allocation and free of the
allocator, with its time): ``alive_after_forward`` is what the forward left allocated
(what checkpointing saves), ``backward_peak`` the most allocated at any time during the
backward, both relative to just before the forward.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys

FEATURES, BATCH, BLOCKS = 256, 2048, 8
PROGRAMS = ("plain", "checkpoint", "selective", "checkpoint_then_plain", "plain_then_checkpoint", "save_on_cpu")


def _model(torch):
    torch.manual_seed(0)
    nn = torch.nn
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(FEATURES, FEATURES), nn.ReLU(), nn.Linear(FEATURES, FEATURES), nn.ReLU())
                           for _ in range(BLOCKS))
    x = torch.randn(BATCH, FEATURES, requires_grad=True)
    return blocks, x


def _forward(torch, program: str, blocks, x):
    from torch.utils import checkpoint as cp

    h = x
    for i, block in enumerate(blocks):
        first_half = i < len(blocks) // 2
        if program == "plain" or (program == "checkpoint_then_plain" and not first_half) or (
                program == "plain_then_checkpoint" and first_half):
            h = block(h)
        elif program in ("checkpoint", "checkpoint_then_plain", "plain_then_checkpoint"):
            h = cp.checkpoint(block, h, use_reentrant=False)
        elif program == "save_on_cpu":
            with torch.autograd.graph.save_on_cpu() if first_half else contextlib.nullcontext():
                h = block(h)
        else:
            def policy(ctx, op, *args, **kwargs):
                saved = (torch.ops.aten.addmm.default, torch.ops.aten.mm.default)
                return cp.CheckpointPolicy.MUST_SAVE if op in saved else cp.CheckpointPolicy.PREFER_RECOMPUTE

            context_fn = functools.partial(cp.create_selective_checkpoint_contexts, policy)
            h = cp.checkpoint(block, h, use_reentrant=False, context_fn=context_fn)
    return h.square().mean()


def _measure(torch, program: str, blocks, x, backend: str | None) -> dict:
    """One forward and backward (under compiled autograd with ``backend``, unless None) under the
    profiler: the bytes the forward left, the backward's peak."""
    ctx = contextlib.nullcontext()
    if backend is not None:
        from torch._dynamo import compiled_autograd

        ctx = compiled_autograd._enable(torch.compile(backend=backend))
    for p in [*blocks.parameters(), x]:
        p.grad = None
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts, profile_memory=True) as prof:
        with torch.profiler.record_function("fca_forward"):
            loss = _forward(torch, program, blocks, x)
        with torch.profiler.record_function("fca_backward"):
            with ctx:
                loss.backward()
    events = list(prof.profiler.kineto_results.events())
    start, end = next((e.start_ns(), e.start_ns() + e.duration_ns()) for e in events if e.name() == "fca_backward")
    live, peak, after_forward = 0, 0, None
    for t, nbytes in sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]"):
        if after_forward is None and t >= start:
            after_forward = live
        live += nbytes
        if start <= t <= end:
            peak = max(peak, live)
    grads = [p.grad.detach().clone() for p in [*blocks.parameters(), x]]
    return {"alive_after_forward": after_forward if after_forward is not None else live, "backward_peak": peak,
            "grads": grads}


def run(program: str, backend: str = "aot_eager") -> dict:
    import torch

    if program not in PROGRAMS:
        raise SystemExit(f"unknown program {program!r}; choose from {', '.join(PROGRAMS)}")
    blocks, x = _model(torch)
    result: dict = {"program": program, "torch": torch.__version__, "backend": backend}
    grads = {}
    for way, ca_backend in (("eager", None), ("ca", backend)):
        first = _measure(torch, program, blocks, x, ca_backend)  # the capture and compile, one-time allocations
        got = _measure(torch, program, blocks, x, ca_backend)
        grads[way] = got.pop("grads")
        result.update({f"{way}_{key}": value for key, value in got.items()})
        result[f"{way}_first_backward_peak"] = first["backward_peak"]
    result["grads_equal_eager"] = all(torch.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(grads["eager"], grads["ca"]))
    return result


def main() -> int:
    program = sys.argv[1]
    backend = sys.argv[2] if len(sys.argv) > 2 else "aot_eager"
    try:
        result = run(program, backend)
    except Exception as err:  # the error is the answer
        from bench_workloads import _error  # beside this file (sys.path[0])

        result = _error(program, "memory", err)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
