"""Training programs on a CUDA device with their backward under compiled autograd: each
one's grads must equal eager's.  What the CPU machines that build the wheel cannot run:
an MLP and a small transformer (its forward ``torch.compile``d too) with Inductor compiling
the backward; a backward on a side stream (``torch.cuda.Stream``), the second one from the
default stream, accumulating into the first one's grads; a backward under CUDA graphs
(``torch.compile(mode="reduce-overhead")`` as compiled autograd's compiler) that reads saved
CPU scalars (a Python Function's, a multiplication's and a division's); a C++ extension's
autograd Functions on CUDA tensors, built with ``load_inline`` against the installed headers
(with a CUDA kernel when ``nvcc`` matches torch's CUDA, else ATen ops on CUDA tensors), one
of them under CUDA graphs with a saved CPU scalar; activation checkpointing (dropout replayed
from the CUDA RNG state, and selective checkpointing); a DTensor model on one NCCL rank
(tensor parallelism).  Each runs over two or three batch sizes or steps.

Prints one line per program (``name: ok captures=N``, or why not; ``cudagraph_skips=N``
where CUDA graphs skipped a graph) and a verdict; exits 0/1.  ``--json FILE`` also writes
the results (torch and device, how the extension was built, each program's verdict,
captures, skips and seconds) for ``tools/gpu_check.py``, which runs this on the patched
wheel and on stock 2.6.0 side by side.  Stock 2.6.0 is expected to fail the two C++
Function programs ("Attempting to trace a potentially unsafe C++ autograd function").

``--device cpu`` runs the programs that need no CUDA-only feature on the CPU (a smoke test
of this script where there is no GPU; the others print ``skipped``), best with
``--backend aot_eager``.

    python examples/cuda_programs.py [--backend inductor|aot_eager] [--build-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import grads, same  # noqa: E402

DEVICE = "cuda"
BACKEND = "inductor"  # compiles the MLP's and the transformer's backward (and the transformer's forward)
ext = None  # the C++ extension, built by main()
EXTENSION = ""  # how it was built, for the report


def ca(flag, backend="aot_eager", **compile_options):
    """Compiled autograd for the backwards in the block, compiled by ``backend`` (the eager reference: none)."""
    if not flag:
        return contextlib.nullcontext()
    return torch._dynamo.compiled_autograd._enable(torch.compile(backend=backend, **compile_options))


@contextlib.contextmanager
def cudagraphs(flag):
    """Compiled autograd whose graphs Inductor runs as CUDA graphs: ``mode="reduce-overhead"``, and
    ``triton.cudagraphs`` on while the graph is captured, which is what has compiled autograd move
    saved CPU scalars to the GPU (as upstream's cudagraphs tests set it)."""
    if not flag:
        yield
        return
    from torch._inductor import config as inductor_config

    with inductor_config.patch({"triton.cudagraphs": True}), ca(True, "inductor", mode="reduce-overhead"):
        yield


def mlp(width=64):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, width), nn.GELU(), nn.LayerNorm(width), nn.Linear(width, 10)).to(DEVICE)


# -- the programs -----------------------------------------------------------------------------


def cuda_mlp(flag):
    # SGD over batch sizes, the backward compiled by Inductor (Triton kernels)
    m = mlp(); opt = torch.optim.SGD(m.parameters(), lr=0.1); out = []
    for bs in (16, 32, 24):
        opt.zero_grad(); torch.manual_seed(bs)
        x = torch.randn(bs, 32, device=DEVICE); y = torch.randint(0, 10, (bs,), device=DEVICE)
        with ca(flag, BACKEND): F.cross_entropy(m(x), y).backward()
        out += grads(m); opt.step()
    return out


class TinyTransformer(nn.Module):
    # float features in, no nn.Embedding: 2.6's Inductor gets an embedding's grad wrong with or
    # without compiled autograd (docs/examples.md), which is not what this checks
    def __init__(self, d=32, heads=4, layers=2, classes=16):
        super().__init__()
        self.inp = nn.Linear(8, d)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        L = x.shape[1]
        mask = torch.triu(torch.full((L, L), float("-inf"), device=x.device), 1)
        return self.head(self.enc(self.inp(x), mask=mask, is_causal=True))


def cuda_transformer(flag):
    # a causal encoder over sequence lengths, forward compiled too in the compiled-autograd run
    torch.manual_seed(0); model = TinyTransformer().to(DEVICE); out = []
    fwd = torch.compile(model, backend=BACKEND) if flag else model
    for L in (16, 24):
        model.zero_grad(); torch.manual_seed(L)
        x = torch.randn(4, L, 8, device=DEVICE); y = torch.randint(0, 16, (4, L), device=DEVICE)
        with ca(flag, BACKEND): F.cross_entropy(fwd(x).flatten(0, 1), y.flatten()).backward()
        out += grads(model)
    return out


def side_stream_backward(flag):
    # forward and backward on a side stream, then a forward there and the backward from the default
    # stream, accumulating into the grads the first backward left (big enough that a missing sync shows)
    m = mlp(width=1024); side = torch.cuda.Stream(); out = []
    for step in range(2):
        torch.manual_seed(step); x = torch.randn(512, 32, device=DEVICE)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            loss = m(x).pow(2).mean()
            if step == 0:
                with ca(flag): loss.backward()
        if step == 1:
            torch.cuda.current_stream().wait_stream(side)
            with ca(flag): loss.backward()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        out += grads(m)
    return out


class ScaleBySavedCpuScalar(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.tensor(0.5)  # a CPU scalar, saved for backward
        ctx.save_for_backward(s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return g * s


def cudagraphs_cpu_scalars(flag):
    # the backward as CUDA graphs, reading CPU scalars: a Python Function's, a mul's and a div's
    # saved "other"; three steps: warm-up, record, replay
    m = mlp(); out = []
    for step in range(3):
        m.zero_grad(set_to_none=True); torch.manual_seed(step)
        h = ScaleBySavedCpuScalar.apply(m(torch.randn(16, 32, device=DEVICE)))
        loss = (h * torch.tensor(3.0) / torch.tensor(7.0)).pow(2).sum()
        with cudagraphs(flag): loss.backward()
        out += grads(m)
    return out


def cpp_function_cuda(flag):
    # a C++ autograd Function (saved double, a CUDA kernel or ATen ops) on CUDA tensors, grads accumulating
    m = mlp(); b = nn.Parameter(torch.randn(10, device=DEVICE))
    with ca(flag):
        for bs in (8, 16, 12):
            torch.manual_seed(bs)
            ext.scale_add(m(torch.randn(bs, 32, device=DEVICE)), b, 2.0).relu().pow(2).sum().backward()
    return grads(m, [b.grad])


def cpp_function_cpu_scalar_cudagraphs(flag):
    # a C++ Function saving a CPU scalar Tensor, its backward under CUDA graphs: its op keeps the scalar
    m = mlp(); out = []
    for step in range(3):
        m.zero_grad(set_to_none=True); torch.manual_seed(step)
        loss = ext.scale_by_cpu_scalar(m(torch.randn(16, 32, device=DEVICE))).pow(2).sum()
        with cudagraphs(flag): loss.backward()
        out += grads(m)
    return out


def activation_checkpointing(flag):
    # non-reentrant checkpoints of blocks with dropout (the recompute replays the CUDA RNG state),
    # the first one selective (matmuls saved, the rest recomputed)
    from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE

    torch.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 64), nn.Dropout(0.1), nn.GELU()) for _ in range(3)).to(DEVICE)
    out = []
    for bs in (8, 16):
        blocks.zero_grad(); torch.manual_seed(bs); h = torch.randn(bs, 64, device=DEVICE, requires_grad=True); x = h
        for i, block in enumerate(blocks):
            selective = {"context_fn": functools.partial(create_selective_checkpoint_contexts, policy)} if i == 0 else {}
            h = checkpoint(block, h, use_reentrant=False, **selective)
        with ca(flag): h.pow(2).mean().backward()
        out += grads(blocks, [x.grad])
    return out


def one_nccl_rank():
    """The default process group: NCCL, rank 0 of 1, on an in-process store (no port, no peers)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)


def dtensor_nccl(flag):
    # DTensor parameters (column- then row-wise sharded Linears) on one NCCL rank
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    one_nccl_rank()
    mesh = init_device_mesh("cuda", (1,))
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(DEVICE)
    m = parallelize_module(m, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()}); out = []
    for bs in (4, 6):
        m.zero_grad(); torch.manual_seed(bs)
        with ca(flag): m(torch.randn(bs, 16, device=DEVICE)).sum().backward()
        out += [p.grad.full_tensor() for p in m.parameters()]
    return out


PROGRAMS = [cuda_mlp, cuda_transformer, side_stream_backward, cudagraphs_cpu_scalars, cpp_function_cuda,
            cpp_function_cpu_scalar_cudagraphs, activation_checkpointing, dtensor_nccl]
CUDA_ONLY = {side_stream_backward, cudagraphs_cpu_scalars, cpp_function_cpu_scalar_cudagraphs, dtensor_nccl}
NEEDS_EXTENSION = {cpp_function_cuda, cpp_function_cpu_scalar_cudagraphs}


# -- the C++ extension ------------------------------------------------------------------------

CPP = r"""
#include <torch/extension.h>
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#ifdef FCA_WITH_CUDA_KERNEL
void fca_scale_add_cuda(const torch::Tensor& x, const torch::Tensor& b, double scale, torch::Tensor& out);
#endif

// x * scale + b (b broadcast over x's last dim): the CUDA kernel where there is one, else ATen
torch::Tensor scale_add_impl(const torch::Tensor& x, const torch::Tensor& b, double scale) {
#ifdef FCA_WITH_CUDA_KERNEL
  if (x.is_cuda() && x.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    fca_scale_add_cuda(xc, b.contiguous(), scale, out);
    return out;
  }
#endif
  return x * scale + b;
}

struct ScaleAdd : public torch::autograd::Function<ScaleAdd> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& b, double scale) {
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["width"] = b.size(0);
    return scale_add_impl(x, b, scale);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto scale = ctx->saved_data["scale"].toDouble();
    auto zeros = torch::zeros({ctx->saved_data["width"].toInt()}, g[0].options());
    return {scale_add_impl(g[0], zeros, scale), g[0].sum(0), torch::Tensor()};
  }
};

struct ScaleByCpuScalar : public torch::autograd::Function<ScaleByCpuScalar> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    auto s = torch::tensor(0.5);  // a CPU scalar Tensor, saved for backward
    ctx->save_for_backward({s});
    ctx->saved_data["k"] = int64_t(3);
    return x * s * 3;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables()[0];
    return {g[0] * s * ctx->saved_data["k"].toInt()};
  }
};

torch::Tensor scale_add(const torch::Tensor& x, const torch::Tensor& b, double scale) {
  return ScaleAdd::apply(x, b, scale);
}
torch::Tensor scale_by_cpu_scalar(const torch::Tensor& x) { return ScaleByCpuScalar::apply(x); }
"""

CUDA = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

__global__ void fca_scale_add_kernel(const float* x, const float* b, float scale, float* out, int64_t n, int64_t width) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * scale + b[i % width];
}

void fca_scale_add_cuda(const torch::Tensor& x, const torch::Tensor& b, double scale, torch::Tensor& out) {
  int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  // on the current stream, as an ATen op would run
  fca_scale_add_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), b.data_ptr<float>(), static_cast<float>(scale), out.data_ptr<float>(), n, b.numel());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""


def nvcc_for_torch() -> tuple[str | None, str]:
    """The nvcc to build the CUDA kernel with, or None, and why: it must exist and be of torch's CUDA major
    version (an extension built by another links another CUDA runtime than torch's)."""
    from torch.utils.cpp_extension import CUDA_HOME

    if DEVICE != "cuda":
        return None, "ATen ops on CPU tensors (--device cpu)"
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
    if not nvcc or not os.path.exists(nvcc):
        return None, "ATen ops on CUDA tensors: no nvcc (CUDA_HOME unset, none on PATH)"
    try:
        text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"ATen ops on CUDA tensors: {nvcc} --version failed ({e})"
    found = re.search(r"release (\d+)\.(\d+)", text)
    have = f"{found.group(1)}.{found.group(2)}" if found else "?"
    if have.split(".")[0] != (torch.version.cuda or "?").split(".")[0]:
        return None, f"ATen ops on CUDA tensors: {nvcc} is CUDA {have}, torch's is {torch.version.cuda}"
    return nvcc, f"a CUDA kernel built by {nvcc} (CUDA {have})"


def build_extension(build: Path, use_nvcc: bool):
    from torch.utils.cpp_extension import load_inline

    global EXTENSION
    nvcc, why = nvcc_for_torch() if use_nvcc else (None, "ATen ops on CUDA tensors (--no-nvcc)")
    functions = ["scale_add", "scale_by_cpu_scalar"]
    if nvcc:
        try:
            out = build / "cuda"
            out.mkdir(parents=True, exist_ok=True)
            module = load_inline(name="fca_cuda_programs_cuda", cpp_sources=CPP, cuda_sources=CUDA, functions=functions,
                                 extra_cflags=["-DFCA_WITH_CUDA_KERNEL"], build_directory=str(out))
            EXTENSION = why
            return module
        except Exception as e:  # the kernel is a bonus: the Functions are what is checked
            why = f"ATen ops on CUDA tensors: the CUDA build failed ({type(e).__name__}: {str(e).strip()[:200]})"
    out = build / "cpp"
    out.mkdir(parents=True, exist_ok=True)
    EXTENSION = why
    return load_inline(name="fca_cuda_programs_cpp", cpp_sources=CPP, functions=functions, build_directory=str(out))


# -- running them ---------------------------------------------------------------------------


def run(programs, build: Path, use_nvcc: bool) -> list[dict]:
    """Each ``program(flag)`` eagerly and under compiled autograd: a result per program."""
    global ext
    torch.set_num_threads(4)
    results = []
    for program in programs:
        t0 = time.monotonic()
        if DEVICE != "cuda" and program in CUDA_ONLY:
            results.append({"name": program.__name__, "verdict": "skipped (needs CUDA)", "ok": None})
            print(f"{program.__name__}: skipped (needs CUDA)", flush=True)
            continue
        torch._dynamo.reset()
        torch._dynamo.compiled_autograd.reset()
        torch._dynamo.utils.counters.clear()
        try:
            if program in NEEDS_EXTENSION and ext is None:
                ext = build_extension(build, use_nvcc)
            ref = program(False)
            got = program(True)
            if DEVICE == "cuda":
                torch.cuda.synchronize()
            verdict = "ok" if same(ref, got) else "WRONG grads"
        except Exception as e:  # a program that fails is reported, the others still run
            verdict = f"FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}"
        counters = torch._dynamo.utils.counters
        captures = counters["compiled_autograd"]["captures"]
        skips = counters["inductor"]["cudagraph_skips"]
        results.append({"name": program.__name__, "verdict": verdict, "ok": verdict == "ok", "captures": captures,
                        "cudagraph_skips": skips, "seconds": round(time.monotonic() - t0, 1)})
        print(f"{program.__name__}: {verdict} captures={captures}" + (f" cudagraph_skips={skips}" if skips else ""),
              flush=True)
    return results


def main() -> int:
    global BACKEND, DEVICE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default=BACKEND, help="compiler of the MLP and the transformer (default: %(default)s)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu: a smoke test of the programs that need no CUDA-only feature (default: %(default)s)")
    parser.add_argument("--build-dir", type=Path, help="where the C++ extension is built (default: a new temp dir)")
    parser.add_argument("--no-nvcc", action="store_true", help="build the extension without its CUDA kernel")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results there")
    args = parser.parse_args()
    BACKEND, DEVICE = args.backend, args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print(f"verdict: NO CUDA: torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device; "
              "--device cpu runs the programs that can run on the CPU", flush=True)
        return 1
    build = args.build_dir or Path(tempfile.mkdtemp(prefix="fca-cuda-programs-"))
    try:
        results = run(PROGRAMS, build, not args.no_nvcc)
    finally:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    bad = [r for r in results if r["ok"] is False]
    ran = [r for r in results if r["ok"] is not None]
    print(f"verdict: {'OK' if not bad else f'{len(bad)} of {len(ran)} programs differ from eager'}", flush=True)
    if args.json:
        info = {"torch": torch.__version__, "cuda": torch.version.cuda, "backend": BACKEND, "device": DEVICE,
                "device_name": torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu",
                "extension": EXTENSION or "not built", "programs": results}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(info, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
