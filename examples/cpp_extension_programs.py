"""Training with a C++ extension's autograd Functions, the backward under compiled
autograd: each program's grads must equal eager's.  The extension (below) is built with
``torch.utils.cpp_extension.load_inline`` against the installed torch's headers, as a
user's extension is, and none of its Functions is marked ``is_traceable``.  The
programs: a Function saving non-Tensor data of four kinds (a double, an int, a string,
the input's shape as an int list) that uses ``needs_input_grad`` and returns a
non-differentiable argmax; one with ``set_materialize_grads(false)`` whose second output
is unused; a ``TORCH_LIBRARY`` op whose Autograd kernel calls a Function; an in-place
Function that marks its input dirty; and the first Function inside a
``torch.compile``d forward (a graph break, as Dynamo cannot trace a pybind function).
Each runs three batch sizes, accumulating grads.

Prints one line per program (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  The patched wheel passes all five: the capture records each Function's backward as
one opaque call that runs the node, and the saved shape's ints are size inputs.  Each
takes three captures: the first is static, as stock's; the second batch is the first
accumulation into existing grads, as everywhere; the third batch size recaptures with the
changed sizes dynamic, the saved shape's among them.  Stock 2.6.0 fails all five
("Attempting to trace a potentially unsafe C++ autograd function").  Stock 2.7.0 fails
the three that mark an output non-differentiable or an input dirty (an internal assert,
``ctx_.non_differentiable_.empty()``), and recaptures at each new size.

    python examples/cpp_extension_programs.py [aot_eager|inductor] [build dir]
"""

import sys
import tempfile
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import ca, grads, report  # noqa: E402

CPP = r"""
#include <torch/extension.h>
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ScaleShift : public torch::autograd::Function<ScaleShift> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& b,
                               double scale, int64_t k, std::string mode) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["k"] = k;
    ctx->saved_data["mode"] = mode;
    ctx->saved_data["shape"] = x.sizes().vec();
    auto idx = x.argmax(-1);
    ctx->mark_non_differentiable({idx});
    return {x * scale + b * k, idx};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto x = ctx->get_saved_variables()[0];
    TORCH_CHECK(ctx->saved_data["mode"].toStringRef() == "affine");
    TORCH_CHECK(ctx->saved_data["shape"].toIntVector() == x.sizes().vec());
    torch::Tensor gx, gb;
    if (ctx->needs_input_grad(0)) gx = g[0] * ctx->saved_data["scale"].toDouble();
    if (ctx->needs_input_grad(1)) gb = g[0].sum(0) * ctx->saved_data["k"].toInt();
    return {gx, gb, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct SinCos : public torch::autograd::Function<SinCos> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x) {
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({x});
    return {x.sin(), x.cos()};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto x = ctx->get_saved_variables()[0];
    auto out = torch::zeros_like(x);
    if (g[0].defined()) out = out + g[0] * x.cos();
    if (g[1].defined()) out = out - g[1] * x.sin();
    return {out};
  }
};

struct Mul : public torch::autograd::Function<Mul> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    return {g[0] * s[1], g[0] * s[0]};
  }
};

struct ScaleInPlace : public torch::autograd::Function<ScaleInPlace> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double scale) {
    ctx->saved_data["scale"] = scale;
    x.mul_(scale);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->saved_data["scale"].toDouble(), torch::Tensor()};
  }
};

torch::Tensor fca_mul_cpu(const torch::Tensor& a, const torch::Tensor& b) { return a * b; }
torch::Tensor fca_mul_autograd(const torch::Tensor& a, const torch::Tensor& b) { return Mul::apply(a, b); }
TORCH_LIBRARY(fca_cpp_programs, m) { m.def("mul(Tensor a, Tensor b) -> Tensor"); }
TORCH_LIBRARY_IMPL(fca_cpp_programs, CPU, m) { m.impl("mul", fca_mul_cpu); }
TORCH_LIBRARY_IMPL(fca_cpp_programs, Autograd, m) { m.impl("mul", fca_mul_autograd); }

std::vector<torch::Tensor> scale_shift(const torch::Tensor& x, const torch::Tensor& b, double scale, int64_t k) {
  return ScaleShift::apply(x, b, scale, k, std::string("affine"));
}
std::vector<torch::Tensor> sin_cos(const torch::Tensor& x) { return SinCos::apply(x); }
torch::Tensor scale_in_place(torch::Tensor x, double scale) { return ScaleInPlace::apply(x, scale); }
"""

ext = None


def layers():
    torch.manual_seed(0)
    return nn.Linear(6, 6), nn.Parameter(torch.randn(6))


BATCH_SIZES = (4, 7, 9)
SCALE = 2.0  # a constant: a saved double is keyed by value, a new one would be a new capture


def scale_shift_saved_data(flag):
    lin, b = layers()
    with ca(flag):
        for n in BATCH_SIZES:
            y, idx = ext.scale_shift(lin(torch.randn(n, 6)), b, SCALE, 3)
            assert not idx.requires_grad
            (y.pow(2).sum() + idx.sum()).backward()
    return grads(lin, [b.grad])


def materialize_grads_off(flag):
    lin, _ = layers()
    with ca(flag):
        for n in BATCH_SIZES:
            s, c = ext.sin_cos(lin(torch.randn(n, 6)) * SCALE)
            s.pow(2).sum().backward()  # c unused: its grad reaches backward undefined
    return grads(lin)


def library_op_autograd_kernel(flag):
    lin, b = layers()
    with ca(flag):
        for n in BATCH_SIZES:
            x = lin(torch.randn(n, 6))
            torch.ops.fca_cpp_programs.mul(x, b.expand_as(x) * SCALE).sum().backward()
    return grads(lin, [b.grad])


def in_place_mark_dirty(flag):
    lin, _ = layers()
    with ca(flag):
        for n in BATCH_SIZES:
            ext.scale_in_place(lin(torch.randn(n, 6)) + 1, SCALE).tanh().sum().backward()
    return grads(lin)


def compiled_forward_graph_break(flag):
    lin, b = layers()
    model = torch.compile(lambda x, scale: ext.scale_shift(lin(x).relu(), b, scale, 1)[0].sum(), backend="aot_eager")
    with ca(flag):
        for n in BATCH_SIZES:
            model(torch.randn(n, 6), SCALE).backward()
    return grads(lin, [b.grad])


PROGRAMS = [scale_shift_saved_data, materialize_grads_off, library_op_autograd_kernel, in_place_mark_dirty,
            compiled_forward_graph_break]


def main() -> int:
    global ext
    build = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="fca-cpp-programs-"))
    build.mkdir(parents=True, exist_ok=True)
    ext = load_inline(name="fca_cpp_programs", cpp_sources=CPP, functions=["scale_shift", "sin_cos", "scale_in_place"],
                      build_directory=str(build))
    return report(PROGRAMS, "programs")


if __name__ == "__main__":
    sys.exit(main())
