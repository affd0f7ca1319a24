"""The first backward under compiled autograd, the way a user pays for it; run INSIDE a torch venv.

Standalone (torch, the standard library, and transformers for the HF workloads):
``tools/bench.py first`` (tools/lib/bench/first.py) runs
``python bench_first.py WORKLOAD ROUTE [--backend B] [--batches 4 8]`` in stock 2.6, the stack
(the overlay venv) and stock 2.7, one fresh interpreter per sample, and reads the JSON line it
prints last.

The process runs one thread (``torch.set_num_threads(1)`` before any work, Inductor compiling in
the process) and times each step in CPU time (``time.process_time()`` plus the CPU of the child
processes it waited for: Inductor's g++) and wall time.  A step is one training step at a batch
size (4, then 8 by default: the second is a new size); what it reports per step:

* ``cpu`` / ``wall``: the backward.  Routes ``ca-compile*``: the ``loss.backward()`` call, under
  ``compiled_autograd._enable(lambda gm: torch.compile(gm, backend=timed, dynamic=...))`` entered
  around the eager forward and the backward.  Routes ``config*``: with
  ``torch._dynamo.config.compiled_autograd = True``, a ``torch.compile(train_step, backend=timed)``
  of forward + ``loss.backward()``; Dynamo breaks the graph at ``backward()``, and the backward is
  from the last return of a compiled graph before CA's first capture in the step (or, with none,
  its first run of a captured graph: both hooked) to the end of the step.  Either way it is CA's
  capture, Dynamo's trace of the CA graph, the backend's compile of it, and running it.

  The workloads are this file's, not bench_workloads.py's: those make their inputs inside the
  loss function, which ``torch.compile(train_step)`` would trace.
* ``backend_cpu`` / ``backend_wall``: the time spent inside the real backend (``aot_eager`` or
  ``inductor``) during the backward: ``timed(gm, example_inputs)`` wraps it.  ``cpu -
  backend_cpu`` is CA's own (capture + Dynamo's trace + running the graph).
* ``capture_cpu``: of that, CA's capture: from ``AutogradCompilerInstance.begin_capture`` to the
  return of ``end_capture`` (the compiler, a lazy ``torch.compile``, returns at once there).
* ``step_cpu`` / ``step_wall``: the whole step (``config*``: the forward's Dynamo trace and compile
  too).
* ``captures``, ``compiles``: CA captures (``counters["compiled_autograd"]["captures"]``) and
  Dynamo graphs (``counters["stats"]["unique_graphs"]``, the forward's too on ``config*``), so far.

After the timed steps, each step's gradients are checked against eager's for its inputs (untimed):
wrong ones are an error (``WrongGradients``), not a time.  A workload that fails answers
``{"error": ...}``, with the steps before the one that failed (``failed_step``, 0-based) and their
times: a first backward that worked, followed by a failing one at a new size, is still timed.

``FCA_BENCH_DYNAMIC_FIRST=1`` sets ``torch._dynamo.config.compiled_autograd_dynamic_first_capture =
True`` where the torch has it (the stack's opt-in), so that the stack's default (a static first
capture) and its dynamic first capture are measured from one venv.  The workload's imports, and the backend's (the lookup of
``aot_eager`` / ``inductor``), happen before any step; what compiled autograd, Dynamo and the backend
import lazily on first use is the first step's.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # Inductor compiles in this process
os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_workloads import _error, _leaves  # noqa: E402  (standalone too: torch and the stdlib)

ROUTES = ("ca-compile", "ca-compile-dynamic", "config", "config-dynamic")
BACKENDS = ("aot_eager", "inductor")
FEAT = 64
SEQ = 32  # HF workloads: the sequence length (fixed; the batch size changes)


def clock() -> tuple[float, float]:
    """(CPU seconds of this process and of the children it waited for, wall seconds)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime, time.perf_counter()


# ---------------------------------------------------------------------------------- workloads
# A builder takes (torch, backend) and returns (params, forward, make_inputs): forward(*inputs) is
# the loss; make_inputs(batch) a tuple of inputs.  ``backend`` is the (timed) backend a workload
# with a compiled region compiles it with.


def mlp16(torch, backend):
    layers = []
    for _ in range(16):
        layers += [torch.nn.Linear(FEAT, FEAT), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    return list(model.parameters()), lambda x: model(x).sum(), lambda b: (torch.randn(b, FEAT),)


def copyslices(torch, backend):
    w = torch.randn(FEAT, requires_grad=True)
    lin = torch.nn.Linear(FEAT, FEAT)

    def forward(x):
        y = lin(x)
        y[:, :8] *= w[:8]  # in place on a view of a non-leaf: CopySlices
        y.select(1, 9).mul_(2.0)
        return y.sum()

    return [w, *lin.parameters()], forward, lambda b: (torch.randn(b, FEAT),)


def autograd_function(torch, backend):
    class ScaledTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x, scale)
            return torch.tanh(x) * scale

        @staticmethod
        def backward(ctx, gy):
            x, scale = ctx.saved_tensors
            t = torch.tanh(x)
            return gy * scale * (1 - t * t), (gy * t).sum(0)

    lin = torch.nn.Linear(FEAT, 32)
    scale = torch.randn(32, requires_grad=True)
    return ([scale, *lin.parameters()], lambda x: ScaledTanh.apply(lin(x), scale).sum(),
            lambda b: (torch.randn(b, FEAT),))


def compiled_forward(torch, backend):
    """An eager model with a torch.compile'd submodule: its backward is an AOT backward."""
    inner = torch.nn.Sequential(torch.nn.GELU(), torch.nn.Linear(128, 128), torch.nn.GELU())
    first, last = torch.nn.Linear(FEAT, 128), torch.nn.Linear(128, 10)
    compiled = torch.compile(inner, backend=backend)
    params = [*first.parameters(), *inner.parameters(), *last.parameters()]
    return params, lambda x: last(compiled(first(x))).sum(), lambda b: (torch.randn(b, FEAT),)


def twotensor(torch, backend):
    """A TwoTensor parameter and input, the forward eager."""
    from torch.testing._internal.two_tensor import TwoTensor

    w = torch.nn.Parameter(TwoTensor(torch.randn(FEAT, 32), torch.randn(FEAT, 32)))
    return [w], lambda x: (x @ w).relu().sum(), lambda b: (TwoTensor(torch.randn(b, FEAT), torch.randn(b, FEAT)),)


def _hf(torch, model):
    model.train()
    vocab = model.config.vocab_size

    def forward(ids, labels):
        return model(input_ids=ids, labels=labels).loss

    def inputs(b):
        return torch.randint(0, vocab, (b, SEQ)), torch.randint(0, vocab, (b, SEQ))

    return list(model.parameters()), forward, inputs


def hf_bert(torch, backend):
    from transformers import BertConfig, BertForMaskedLM

    return _hf(torch, BertForMaskedLM(BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
        max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)))


def hf_gpt2(torch, backend):
    from transformers import GPT2Config, GPT2LMHeadModel

    return _hf(torch, GPT2LMHeadModel(GPT2Config(
        vocab_size=1000, n_embd=128, n_layer=2, n_head=2, n_positions=128, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0)))


def hf_t5(torch, backend):
    from transformers import T5Config, T5ForConditionalGeneration

    return _hf(torch, T5ForConditionalGeneration(T5Config(
        vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2, num_heads=4,
        dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)))


WORKLOADS = {f.__name__: f for f in (mlp16, copyslices, autograd_function, compiled_forward, twotensor,
                                     hf_bert, hf_gpt2, hf_t5)}


# ---------------------------------------------------------------------------------- timing


class Meter:
    """What the timed backend and the capture hooks record: (start, end) ``clock()`` pairs."""

    def __init__(self):
        self.backend_calls: list[tuple[tuple[float, float], tuple[float, float]]] = []  # inside the real backend
        self.captures: list[tuple[tuple[float, float], tuple[float, float]]] = []  # begin_capture .. end_capture
        self.last_return: tuple[float, float] | None = None  # when a compiled graph last returned
        self.capture_started: tuple[float, float] | None = None  # the step's first capture or graph run
        self.forward_returned: tuple[float, float] | None = None  # the last graph return before it
        self.backward: tuple[tuple[float, float], tuple[float, float]] | None = None  # ca-compile*: backward()
        self._begin: tuple[float, float] | None = None

    def new_step(self) -> None:
        self.last_return = self.capture_started = self.forward_returned = self.backward = None

    def ca_event(self, now: tuple[float, float]) -> None:
        """A capture begins, or a captured graph runs: the first in a step marks its backward's start."""
        if self.capture_started is None:
            self.capture_started, self.forward_returned = now, self.last_return

    def timed_backend(self, real):
        def timed(gm, example_inputs):
            start = clock()
            try:
                fn = real(gm, example_inputs)
            finally:
                self.backend_calls.append((start, clock()))

            @functools.wraps(fn)
            def run(*args, **kwargs):
                out = fn(*args, **kwargs)
                self.last_return = clock()
                return out

            return run

        return timed

    def hook_capture(self, ca) -> None:
        cls = getattr(ca, "AutogradCompilerInstance", None)
        if cls is None or not hasattr(cls, "begin_capture") or not hasattr(cls, "end_capture"):
            return
        begin, end = cls.begin_capture, cls.end_capture
        meter = self

        @functools.wraps(begin)
        def begin_capture(self, *args, **kwargs):
            meter._begin = clock()
            meter.ca_event(meter._begin)
            return begin(self, *args, **kwargs)

        @functools.wraps(end)
        def end_capture(self, *args, **kwargs):
            try:
                got = end(self, *args, **kwargs)
            finally:
                if meter._begin is not None:
                    meter.captures.append((meter._begin, clock()))
                    meter._begin = None
            if isinstance(got, tuple) and len(got) == 2 and callable(got[0]):  # (runtime_wrapper, compiled_fn)
                runtime_wrapper = got[0]

                @functools.wraps(runtime_wrapper)
                def run_graph(*args, **kwargs):  # a cached graph's run: the backward's first CA event
                    meter.ca_event(clock())
                    return runtime_wrapper(*args, **kwargs)

                got = (run_graph, got[1])
            return got

        cls.begin_capture, cls.end_capture = begin_capture, end_capture


def within(intervals, start: tuple[float, float], end: tuple[float, float]) -> tuple[float, float]:
    """(cpu, wall) of the intervals that lie in [start, end] (by wall clock)."""
    inside = [(b, e) for b, e in intervals if b[1] >= start[1] and e[1] <= end[1]]
    return sum(e[0] - b[0] for b, e in inside), sum(e[1] - b[1] for b, e in inside)


def _enable(ca):
    """compiled autograd's context manager: ``enable`` where the torch has a public one, else
    ``_enable`` (2.6 and 2.7); called with the compiler alone, its other arguments at their
    defaults (stock 2.6: a static first capture; the stack: the config; 2.7: its default)."""
    return getattr(ca, "enable", None) or ca._enable


def run(workload: str, route: str, backend: str, batches: list[int]) -> dict:
    import torch

    torch.set_num_threads(1)
    import torch._dynamo
    import torch._dynamo.compiled_autograd as ca
    from torch._dynamo.backends.registry import lookup_backend
    from torch._dynamo.utils import counters

    torch._inductor.config.fx_graph_cache = False  # cold compiles: no FX graph cache
    if hasattr(torch._functorch.config, "enable_autograd_cache"):
        torch._functorch.config.enable_autograd_cache = False
    config = torch._dynamo.config
    dynamic_first = os.environ.get("FCA_BENCH_DYNAMIC_FIRST") == "1"
    if dynamic_first and hasattr(config, "compiled_autograd_dynamic_first_capture"):
        config.compiled_autograd_dynamic_first_capture = True
    meter = Meter()
    meter.hook_capture(ca)
    timed = meter.timed_backend(lookup_backend(backend))
    torch.manual_seed(0)
    params, forward, make_inputs = WORKLOADS[workload](torch, timed)
    dynamic = route.endswith("-dynamic")
    result: dict = {
        "workload": workload, "route": route, "backend": backend, "torch": torch.__version__,
        "patched": hasattr(torch._C._dynamo.compiled_autograd, "note_proxied_call"),
        "dynamic_first_capture": getattr(config, "compiled_autograd_dynamic_first_capture", None),
        "enable": f"{_enable(ca).__name__}{_signature(_enable(ca))}", "steps": [],
    }
    if route.startswith("config"):
        config.compiled_autograd = True

        def train_step(*inputs):
            loss = forward(*inputs)
            loss.backward()
            return loss

        step_fn = torch.compile(train_step, backend=timed, dynamic=True if dynamic else None)
    else:
        def compiler(gm):
            return torch.compile(gm, backend=timed, dynamic=True if dynamic else None)

        def step_fn(*inputs):
            with _enable(ca)(compiler):
                loss = forward(*inputs)
                start = clock()
                loss.backward()
                meter.backward = (start, clock())
            return loss

    done = []  # per step: (its inputs, the gradients it left)
    failed: tuple[int, BaseException] | None = None
    for batch in batches:
        torch.manual_seed(batch)
        inputs = make_inputs(batch)
        for p in params:
            p.grad = None
        meter.new_step()
        s0 = clock()
        try:
            step_fn(*inputs)
        except Exception as err:  # the steps before it stand (a first backward that worked is one)
            failed = (len(done), err)
            break
        s1 = clock()
        if meter.backward is not None:  # ca-compile*: the backward() call
            start, end = meter.backward
        else:  # config*: from the forward graph's last return before CA's first capture or graph run to the end
            start, end = meter.forward_returned or meter.capture_started or s0, s1
        backend_cpu, backend_wall = within(meter.backend_calls, start, end)
        capture_cpu, capture_wall = within(meter.captures, start, end)
        result["steps"].append({
            "batch": batch, "cpu": end[0] - start[0], "wall": end[1] - start[1],
            "backend_cpu": backend_cpu, "backend_wall": backend_wall,
            "capture_cpu": capture_cpu, "capture_wall": capture_wall,
            "step_cpu": s1[0] - s0[0], "step_wall": s1[1] - s0[1],
            "captures": counters["compiled_autograd"]["captures"], "compiles": counters["stats"]["unique_graphs"],
        })
        done.append((inputs, _grads(params)))
    config.compiled_autograd = False
    for i, (inputs, got) in enumerate(done):  # untimed, after every timed step
        try:
            _check_against_eager(torch, params, forward, inputs, got)
        except Exception as err:  # a step that computed wrong gradients is no time, nor are those after it
            del result["steps"][i:]
            failed = (i, err)
            break
    if failed is not None:
        result.update(error=_error(workload, route, failed[1])["error"], failed_step=failed[0])
    return result


def _grads(params) -> list | None:
    if any(p.grad is None for p in params):
        return None
    return [x.detach().clone() for p in params for x in _leaves(p.grad)]


def _signature(fn) -> str:
    import inspect

    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(?)"


class WrongGradients(AssertionError):
    pass


def _check_against_eager(torch, params, forward, inputs, got) -> None:
    """A step's gradients (``got``) against eager's for the same inputs."""
    if not got:
        raise WrongGradients("no gradient reached a parameter")
    for p in params:
        p.grad = None
    forward(*inputs).backward()
    want = [x for p in params for x in _leaves(p.grad)]
    if len(got) != len(want) or not all(torch.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(got, want)):
        worst = max((float((a - b).abs().max()) for a, b in zip(got, want)), default=float("nan"))
        raise WrongGradients(f"compiled autograd's gradients differ from eager (max abs diff {worst:.3g})")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("workload", choices=WORKLOADS)
    p.add_argument("route", choices=ROUTES)
    p.add_argument("--backend", default="aot_eager", choices=BACKENDS)
    p.add_argument("--batches", type=int, nargs="+", default=[4, 8])
    args = p.parse_args(argv)
    try:
        result = run(args.workload, args.route, args.backend, args.batches)
    except Exception as err:  # reported as this workload's failure on this side
        result = _error(args.workload, args.route, err)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
