"""A Tensor subclass (TwoTensor) through a torch.compile'd forward, with its
backward under compiled autograd: the grads of both inner tensors must equal
eager's.  Works on the overlay with the full stack (P6); on stock 2.6.0 the
compiled autograd capture fails.

    python tools/overlay.py run -- python examples/two_tensor_ca.py
"""

import sys

import torch
from torch._dynamo import compiled_autograd
from torch.testing._internal.two_tensor import TwoTensor


def loss(x, w):
    return ((x.sin() * w).cos() * 2).sum()


def main() -> int:
    torch.manual_seed(0)
    a, b, w0 = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)
    # eager reference
    xe, we = TwoTensor(a.clone(), b.clone()).requires_grad_(), w0.clone().requires_grad_()
    loss(xe, we).backward()
    # compiled forward, backward under compiled autograd (compiled by Dynamo)
    x, w = TwoTensor(a.clone(), b.clone()).requires_grad_(), w0.clone().requires_grad_()
    compiled_loss = torch.compile(loss, backend="aot_eager")
    with torch.autograd.set_multithreading_enabled(False):
        with compiled_autograd._enable(torch.compile(backend="aot_eager")):
            compiled_loss(x, w).backward()
    ok = (
        type(x.grad) is TwoTensor
        and torch.allclose(x.grad.a, xe.grad.a)
        and torch.allclose(x.grad.b, xe.grad.b)
        and torch.allclose(w.grad, we.grad)
    )
    print(f"torch {torch.__version__}: TwoTensor grad under compiled autograd "
          f"{'matches eager (both inner tensors)' if ok else 'DIFFERS from eager'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
