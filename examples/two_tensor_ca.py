"""A Tensor subclass (TwoTensor) through a compiled training step, with its backward
under compiled autograd: the grads of both inner tensors must equal eager's.

Public APIs only: ``torch._dynamo.config.compiled_autograd = True`` and a
``torch.compile``d step whose ``loss.backward()`` Dynamo hands to compiled
autograd.  Prints a verdict, exits 0/1.  Works on the patched wheel (P6); on
stock torch 2.6.0 the compiled autograd capture fails.

    python examples/two_tensor_ca.py
"""

import sys

import torch
from torch.testing._internal.two_tensor import TwoTensor


def loss(x, w):
    return ((x.sin() * w).cos() * 2).sum()


def step(x, w):
    loss(x, w).backward()


def main() -> int:
    torch.manual_seed(0)
    a, b, w0 = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)
    # eager reference
    xe, we = TwoTensor(a.clone(), b.clone()).requires_grad_(), w0.clone().requires_grad_()
    step(xe, we)
    # compiled step: the forward is a compiled region, its backward runs under compiled autograd
    torch._dynamo.config.compiled_autograd = True
    x, w = TwoTensor(a.clone(), b.clone()).requires_grad_(), w0.clone().requires_grad_()
    try:
        torch.compile(step, backend="aot_eager")(x, w)
    except Exception as err:  # stock 2.6.0
        print(f"torch {torch.__version__}: compiled autograd failed: {type(err).__name__}: {str(err).splitlines()[0]}")
        print("verdict: FAIL")
        return 1
    ok = (
        type(x.grad) is TwoTensor
        and torch.allclose(x.grad.a, xe.grad.a)
        and torch.allclose(x.grad.b, xe.grad.b)
        and torch.allclose(w.grad, we.grad)
    )
    print(f"torch {torch.__version__}: TwoTensor grad under compiled autograd "
          f"{'matches eager (both inner tensors)' if ok else 'DIFFERS from eager'}")
    print("verdict: OK" if ok else "verdict: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
