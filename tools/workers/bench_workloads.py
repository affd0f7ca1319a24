"""Compiled-autograd benchmark workloads; run INSIDE a torch venv (stock or overlay).

Standalone on purpose (imports only torch, the standard library and the workloads of
ca_workloads.py beside it): tools/bench.py runs ``python bench_workloads.py WORKLOAD MODE``
in the stock venv and in the overlay venv, interleaved, and reads one JSON line from stdout.

Modes: ``capture`` (the CA capture alone, up to the compiler call: the first in the
process, after the imports compiled autograd does lazily, and the median of 4 more),
``first-aot_eager`` / ``first-inductor`` (first backward under compiled autograd:
capture + compile; then, untimed, its gradients are checked against eager's),
``recompiles`` (CA captures and Dynamo compiles over a sequence of batch sizes, and over
inputs that differ only in strides / storage offset), ``sizes`` (CA captures and Dynamo
compiles over a batch-size sweep and, for a workload with a sequence dim, a sequence-length
sweep; the grads are cleared before each backward, so that only sizes change, and checked
against eager's), ``steady`` (median of 40 backwards after 5 warm-up ones, aot_eager or
``FCA_BENCH_STEADY_BACKEND``; first the gradients are checked against eager, and wrong
ones are an error, not a time). Every mode reports peak RSS. A workload that fails
reports ``{"error": ...}``.

``FCA_BENCH_CA_DYNAMIC=0|1|2`` sets ``torch._dynamo.config.compiled_autograd_dynamic_first_capture``
(off for 0) and ``compiled_autograd_dynamic_graph_inputs`` (on for 2) where the torch has them
(the stack), so that one venv runs every way. ``FCA_BENCH_COMPILE_DYNAMIC=1`` passes
``dynamic=True`` to every ``torch.compile`` of a workload (the compiled autograd compiler, a
compiled forward): what a user who wants no size recompiles writes.

Under tools/bench.py's instruction modes the worker runs under callgrind and brackets the
region a mode times (the first capture; the first backward; each of the 40 steady-state
backwards, counted together, with ``"regions": 40`` in its answer) with a ``_Region``.

``python bench_workloads.py WORKLOAD MODE --serve`` (``capture`` and ``steady``) keeps
the worker alive: it sets up (the first capture, or the 5 warm-up backwards), prints a
``ready`` line, then takes one sample per ``sample`` line on stdin and answers one JSON
line each.  tools/bench.py drives a stock and an overlay worker this way in turns, so
each overlay sample has a stock sample taken right next to it (paired samples: the
machine's slow drifts hit both sides of a pair alike).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import sys
import time
import traceback

from ca_workloads import WORKLOADS, compile_kwargs  # beside this file (sys.path[0])


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------------------------- modes

def _backward(torch, ca, backend, loss):
    with ca._enable(torch.compile(backend=backend, **compile_kwargs())):
        loss.backward()


def _setup(workload: str):
    torch = _torch()
    import torch._dynamo.compiled_autograd as ca
    from torch._dynamo.utils import counters

    # what compiled_autograd._enable imports lazily: an import, not a capture, so it
    # stays out of the "first capture in the process" time
    import torch._inductor.cudagraph_trees  # noqa: F401

    torch.manual_seed(0)
    torch._inductor.config.fx_graph_cache = False
    dynamic = os.environ.get("FCA_BENCH_CA_DYNAMIC")
    if dynamic in ("0", "1", "2") and hasattr(torch._dynamo.config, "compiled_autograd_dynamic_first_capture"):
        torch._dynamo.config.compiled_autograd_dynamic_first_capture = dynamic != "0"
        torch._dynamo.config.compiled_autograd_dynamic_graph_inputs = dynamic == "2"
    params, make_loss = WORKLOADS[workload](torch)
    return torch, ca, counters, params, make_loss


class _Region:
    """The measured region.  Under ``tools/bench.py``'s instruction modes
    (``FCA_BENCH_CALLGRIND_CTL``, see tools/lib/callgrind.py) its calls drive callgrind:
    ``start`` ... ``stop`` bracket one piece of work (counters zeroed, instrumentation on
    ... off, one dump); ``zero``, then ``resume`` ... ``pause`` around each of several
    pieces, then ``dump`` count the pieces and nothing between them.  Otherwise (and for
    ``_Region()``) every call does nothing."""

    CALLS = ("start", "stop", "zero", "resume", "pause", "dump")  # fca_callgrind_<call> of the library

    def __init__(self, lib=None):
        for call in self.CALLS:
            setattr(self, call, getattr(lib, f"fca_callgrind_{call}") if lib is not None else _nothing)

    @classmethod
    def from_env(cls) -> "_Region":
        ctl = os.environ.get("FCA_BENCH_CALLGRIND_CTL")
        if not ctl:
            return cls()
        import ctypes

        return cls(ctypes.CDLL(ctl))


def _nothing() -> None:
    pass


def _patched_cxx(torch) -> bool:
    """Whether compiled autograd's C++ module is the stack's (it has ``note_proxied_call``,
    which the patched Python side calls): false on stock, and on a patched torch whose
    overlay library is not in effect."""
    return hasattr(torch._C._dynamo.compiled_autograd, "note_proxied_call")


class StaleExtension(RuntimeError):
    pass


def _graph_check(workload: str, ca):
    """What the first captured graph must show for the workload to measure what it claims,
    or None.  On the stack's torch (``_patched_cxx``) a C++ autograd Function is one opaque
    ``CppNode_*`` op; traced inline instead, its extension was compiled against torch
    headers older than the venv's (torch's JIT loader does not rebuild an extension when
    the torch headers change), and the capture would be a stock one.  Stock 2.6 and 2.7
    trace it inline: nothing to check."""
    import torch

    if workload != "cpp_function" or not _patched_cxx(torch):
        return None

    def check(gm) -> None:
        names = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, ca.Op)]
        if not any(name.startswith("CppNode_") for name in names):
            raise StaleExtension(
                "the C++ Function was traced inline, not captured as one op: its extension was built against older "
                f"torch headers; delete {os.environ.get('TORCH_EXTENSIONS_DIR', '~/.cache/torch_extensions')} and rerun"
            )

    return check


def _one_capture(torch, ca, counters, make_loss, check=None, region=None) -> tuple[float, int]:
    """One fresh CA capture, from backward() to the moment the graph reaches the compiler
    (nothing after that is timed): (seconds, captures).  ``check(gm)``, if given, runs
    on the graph after the timed part; ``region`` (a ``_Region``) brackets the timed part."""
    region = region or _Region()
    torch._dynamo.reset()
    counters.clear()
    loss = make_loss(8, "plain")
    gc.collect()  # garbage of earlier samples is not this sample's cost
    reached: list[float] = []

    def compiler(gm):
        reached.append(time.perf_counter())
        region.stop()
        if check is not None:
            check(gm)
        # untimed from here; Dynamo runs the graph as torch.compile would (an eagerly run
        # graph would accumulate a Tensor subclass's grad into its inner tensors)
        return torch.compile(gm, backend="eager", fullgraph=True)

    region.start()
    start = time.perf_counter()
    with ca._enable(compiler):
        loss.backward()
    return reached[0] - start, counters["compiled_autograd"]["captures"]


def _one_steady(torch, ca, make_loss, region=None) -> float:
    """One steady-state backward, timed; ``region`` (a ``_Region``), if given, is resumed
    and paused around exactly the timed part."""
    region = region or _Region()
    loss = make_loss(8, "plain")
    gc.collect()
    region.resume()
    start = time.perf_counter()
    _backward(torch, ca, os.environ.get("FCA_BENCH_STEADY_BACKEND", "aot_eager"), loss)
    seconds = time.perf_counter() - start
    region.pause()
    return seconds


STEADY_SAMPLES = 40


def _leaves(t) -> list:
    """A gradient as plain tensors (a Tensor subclass as its inner tensors)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        return [x for name in t.__tensor_flatten__()[0] for x in _leaves(getattr(t, name))]
    return [t]


def _check_against_eager(torch, ca, params, make_loss) -> None:
    """The same backward, eager and under compiled autograd (aot_eager), must give the same
    gradients: a time for a wrong result is not a number to compare."""
    runs = []
    for compiled in (False, True):
        for p in params:
            p.grad = None
        torch.manual_seed(1)
        loss = make_loss(8, "plain")
        if compiled:
            _backward(torch, ca, "aot_eager", loss)
        else:
            loss.backward()
        runs.append([x.detach().clone() for p in params for x in _leaves(p.grad)])
    _same_or_raise(torch, runs[1], runs[0], "compiled autograd's gradients")


def _same_or_raise(torch, got, want, what: str) -> None:
    if not all(torch.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(got, want)):
        worst = max(float((a - b).abs().max()) for a, b in zip(got, want))
        raise WrongGradients(f"{what} differ from eager (max abs diff {worst:.3g})")


class WrongGradients(AssertionError):
    pass


def _check_first_against_eager(torch, params, make_loss) -> None:
    """The gradients the timed first backward left must be eager's for the same input
    (untimed): a first backward that computes wrong gradients compiled a wrong graph, and
    its time is not a number to compare either."""
    got = [x.detach().clone() for p in params for x in _leaves(p.grad)]
    for p in params:
        p.grad = None
    torch.manual_seed(1)
    make_loss(8, "plain").backward()
    _same_or_raise(torch, got, [x for p in params for x in _leaves(p.grad)], "the first backward's gradients")


def _prepare_steady(torch, ca, params, make_loss) -> None:
    """Gradients checked against eager, then 5 warm-up backwards (capture, compile)."""
    _check_against_eager(torch, ca, params, make_loss)
    for _ in range(5):
        _one_steady(torch, ca, make_loss)


def run(workload: str, mode: str) -> dict:
    torch, ca, counters, params, make_loss = _setup(workload)
    result: dict = {"workload": workload, "mode": mode}
    if mode.startswith("first-"):
        backend = mode.split("-", 1)[1]
        torch.manual_seed(1)
        loss = make_loss(8, "plain")
        region = _Region.from_env()
        region.start()
        start = time.perf_counter()
        _backward(torch, ca, backend, loss)
        result["seconds"] = time.perf_counter() - start
        region.stop()
        result["patched_cxx"] = _patched_cxx(torch)
        _check_first_against_eager(torch, params, make_loss)
    elif mode == "capture":
        check = _graph_check(workload, ca)
        region = _Region.from_env()
        times, captures = zip(*(_one_capture(torch, ca, counters, make_loss, *((check, region) if i == 0 else ()))
                                for i in range(5)))
        result["patched_cxx"] = _patched_cxx(torch)
        result["seconds"] = statistics.median(times[1:])  # the first pays one-time imports and bindings
        result["first_seconds"] = times[0]
        result["captures"] = max(captures)
    elif mode == "recompiles":
        seq_batch = [(b, "plain") for b in (4, 8, 16, 8, 32)]
        seq_stride = [(8, v) for v in ("plain", "strided", "offset", "plain")]
        for name, seq in (("batch", seq_batch), ("stride", seq_stride)):
            torch._dynamo.reset()
            counters.clear()
            for b, v in seq:
                _backward(torch, ca, "aot_eager", make_loss(b, v))
            result[f"captures_{name}"] = counters["compiled_autograd"]["captures"]
            result[f"compiles_{name}"] = counters["stats"]["unique_graphs"]
    elif mode == "sizes":
        sweeps = {"batch": [(b, "plain") for b in SIZES_BATCHES]}
        if workload in SEQ_WORKLOADS:
            sweeps["seq"] = [(8, f"seq{n}") for n in SIZES_SEQS]
        for name, seq in sweeps.items():
            torch._dynamo.reset()
            counters.clear()
            for b, v in seq:
                torch.manual_seed(b)
                want = _eager_grads(torch, params, make_loss(b, v))
                for p in params:
                    p.grad = None
                torch.manual_seed(b)
                _backward(torch, ca, "aot_eager", make_loss(b, v))
                _same_or_raise(torch, [x for p in params for x in _leaves(p.grad)], want, f"the grads at {name} {b} {v}")
                for p in params:
                    p.grad = None
            result[f"captures_{name}"] = counters["compiled_autograd"]["captures"]
            result[f"compiles_{name}"] = counters["stats"]["unique_graphs"]
        for p in params:  # _check_grads below: the last sweep cleared them
            p.grad = torch.zeros_like(p)
    elif mode == "steady":
        # a backward here takes milliseconds, so a 3% difference needs many samples per worker
        _prepare_steady(torch, ca, params, make_loss)
        region = _Region.from_env()  # under callgrind: the 40 timed backwards, one count
        region.zero()
        result["seconds"] = statistics.median(_one_steady(torch, ca, make_loss, region) for _ in range(STEADY_SAMPLES))
        region.dump()
        result["regions"] = STEADY_SAMPLES
        result["patched_cxx"] = _patched_cxx(torch)
    else:
        raise SystemExit(f"unknown mode {mode}")
    _check_grads(params)
    return result


SIZES_BATCHES = (8, 16, 24, 32, 40, 48)
SIZES_SEQS = (16, 24, 40, 56)
SEQ_WORKLOADS = ("transformer",)


def _eager_grads(torch, params, loss) -> list:
    for p in params:
        p.grad = None
    loss.backward()
    return [x.detach().clone() for p in params for x in _leaves(p.grad)]


def _check_grads(params) -> None:
    for p in params:
        assert p.grad is not None, "no gradient reached a parameter"


def serve(workload: str, mode: str) -> int:
    """Paired sampling (see the module doc): set up, say ready, one sample per request."""
    if mode not in ("capture", "steady"):
        raise SystemExit(f"--serve takes capture or steady, not {mode}")
    torch, ca, counters, params, make_loss = _setup(workload)
    ready: dict = {"workload": workload, "mode": mode, "ready": True}
    if mode == "capture":
        ready["first_seconds"], ready["captures"] = _one_capture(torch, ca, counters, make_loss, _graph_check(workload, ca))
        sample = lambda: _one_capture(torch, ca, counters, make_loss)[0]  # noqa: E731
    else:
        _prepare_steady(torch, ca, params, make_loss)
        sample = lambda: _one_steady(torch, ca, make_loss)  # noqa: E731
    _check_grads(params)
    _answer(ready)
    for line in sys.stdin:
        if line.strip() != "sample":
            break
        _answer({"seconds": sample()})
    _answer({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return 0


def _answer(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _error(workload: str, mode: str, err: BaseException) -> dict:
    root: BaseException = err
    while (root.__cause__ or root.__context__) is not None and root is not (root.__cause__ or root.__context__):
        root = root.__cause__ or root.__context__  # the innermost error says what really failed
    text = (str(root).strip().splitlines() or [""])[0]
    if os.environ.get("FCA_BENCH_TRACEBACK"):
        traceback.print_exc()
    return {"workload": workload, "mode": mode, "error": f"{type(root).__name__}: {text}"[:300]}


def main() -> int:
    workload, mode = sys.argv[1], sys.argv[2]
    if "--serve" in sys.argv[3:]:
        try:
            return serve(workload, mode)
        except Exception as err:  # a failing workload answers its error instead of "ready"
            _answer(_error(workload, mode, err))
            return 0
    try:
        result = run(workload, mode)
    except Exception as err:  # reported as a failure of this workload in this venv
        result = _error(workload, mode, err)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
