"""The compiled-autograd benchmark workloads that bench_workloads.py (beside this file) runs; INSIDE
a torch venv, torch and the standard library only.

Each builder takes the torch module and returns (params, make_loss(batch, variant)); variant in
{"plain", "strided", "offset"}, or "seq<N>" for a sequence length N (workloads with one).
``FCA_BENCH_COMPILE_DYNAMIC=1`` passes ``dynamic=True`` to every ``torch.compile`` of a workload.
"""

from __future__ import annotations

import os


def compile_kwargs() -> dict:
    """FCA_BENCH_COMPILE_DYNAMIC=1: torch.compile(..., dynamic=True) everywhere."""
    return {"dynamic": True} if os.environ.get("FCA_BENCH_COMPILE_DYNAMIC") == "1" else {}


def _inputs(torch, batch, feat, variant, extra=()):
    if variant.startswith("seq"):  # "seq<N>": sequence length N (workloads with one)
        extra, variant = ((int(variant[3:]), *extra[1:]) if extra else extra), "plain"
    shape = (batch, *extra, feat)
    if variant == "plain":
        return torch.randn(shape)
    if variant == "strided":  # same values layout-wise different: transpose-contiguous-transpose
        x = torch.randn(tuple(reversed(shape))).t() if len(shape) == 2 else torch.randn(shape).transpose(-1, -2).contiguous().transpose(-1, -2)
        return x
    if variant == "offset":  # a view with a storage offset
        return torch.randn((batch + 1, *extra, feat))[1:]
    raise ValueError(variant)


def mlp(torch):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return list(model.parameters()), lambda b, v: model(_inputs(torch, b, 64, v)).sum()


def transformer(torch):
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0)
    return list(layer.parameters()), lambda b, v: layer(_inputs(torch, b, 64, v, (16,))).sum()


def copyslices(torch):
    w = torch.randn(64, requires_grad=True)
    lin = torch.nn.Linear(64, 64)

    def loss(b, v):
        x = lin(_inputs(torch, b, 64, v))
        x[:, :8] *= w[:8]  # in-place on a view of a non-leaf: CopySlices
        x.select(1, 9).mul_(2.0)
        return x.sum()

    return [w, *lin.parameters()], loss


def autograd_function(torch):
    class ScaledTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = torch.tanh(x) * scale
            ctx.save_for_backward(x, scale)
            return y

        @staticmethod
        def backward(ctx, gy):
            x, scale = ctx.saved_tensors
            t = torch.tanh(x)
            return gy * scale * (1 - t * t), (gy * t).sum(0)

    lin = torch.nn.Linear(64, 32)
    scale = torch.randn(32, requires_grad=True)
    return [scale, *lin.parameters()], lambda b, v: ScaledTanh.apply(lin(_inputs(torch, b, 64, v)), scale).sum()


CPP_SOURCE = r"""
#include <torch/extension.h>
struct ScaledSquare : public torch::autograd::Function<ScaledSquare> {
  static constexpr bool is_traceable = true;
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, double s) {
    ctx->save_for_backward({x});
    ctx->saved_data["s"] = s;
    return x * x * s;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list g) {
    auto x = ctx->get_saved_variables()[0];
    double s = ctx->saved_data["s"].toDouble();
    return {g[0] * 2 * s * x, torch::Tensor()};
  }
};
torch::Tensor scaled_square(torch::Tensor x, double s) { return ScaledSquare::apply(x, s); }
"""


def cpp_function(torch):
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="fca_bench_cpp_function", cpp_sources=[CPP_SOURCE], functions=["scaled_square"], verbose=False)
    lin = torch.nn.Linear(64, 32)
    return list(lin.parameters()), lambda b, v: ext.scaled_square(lin(_inputs(torch, b, 64, v)), 0.5).sum()


def compiled_forward(torch):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10))
    fwd = torch.compile(model, backend="aot_eager", **compile_kwargs())
    return list(model.parameters()), lambda b, v: fwd(_inputs(torch, b, 64, v)).sum()


def twotensor(torch):
    from torch.testing._internal.two_tensor import TwoTensor

    a, b_ = torch.randn(64, 32), torch.randn(64, 32)
    w = torch.nn.Parameter(TwoTensor(a, b_))
    fwd = torch.compile(lambda x: (x @ w).relu().sum(), backend="aot_eager", **compile_kwargs())

    def loss(b, v):
        # two inputs of one layout: a TwoTensor's inner tensors share sizes, strides and offset
        return fwd(TwoTensor(_inputs(torch, b, 64, v), _inputs(torch, b, 64, v)))

    return [w], loss


def dtensor(torch):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    if not dist.is_initialized():  # one rank, gloo, an in-process store: no port, no peers
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    mesh = init_device_mesh("cpu", (1,))
    w1 = torch.nn.Parameter(distribute_tensor(torch.randn(128, 64) * 0.1, mesh, [Shard(0)]))
    w2 = torch.nn.Parameter(distribute_tensor(torch.randn(10, 128) * 0.1, mesh, [Shard(0)]))

    def loss(b, v):
        x = distribute_tensor(_inputs(torch, b, 64, v), mesh, [Replicate()])
        return (torch.relu(x @ w1.t()) @ w2.t()).sum()

    return [w1, w2], loss


WORKLOADS = {f.__name__: f for f in (mlp, transformer, copyslices, autograd_function, cpp_function, compiled_forward, twotensor,
                                     dtensor)}

