"""Train a small MLP with its backward under compiled autograd, and check it against eager.

Public APIs only: compiled autograd is turned on with
``torch._dynamo.config.compiled_autograd = True``, and the training step
(forward, ``loss.backward()``, optimizer step) is ``torch.compile``d, so
Dynamo hands the backward to compiled autograd.  The same training runs in
eager from the same seed; the script prints a verdict and exits 0 when the
losses and the final parameters match eager's and compiled autograd ran,
1 otherwise.

  python examples/train_mlp_compiled_autograd.py [--backend aot_eager|inductor] [--steps N]

Works on stock torch 2.6.0 and on the patched wheel; on the patched wheel the
backward graph holds one opaque call per autograd node.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)
    )


def batches(steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    # two batch sizes: the capture must not bake one in
    return [(torch.randn(8 if i % 2 else 12, 16, generator=g), torch.randn(8 if i % 2 else 12, 4, generator=g))
            for i in range(steps)]


def train(step_fn, model, opt, data) -> list[float]:
    return [float(step_fn(model, opt, x, y)) for x, y in data]


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="aot_eager", help="torch.compile backend (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    data = batches(args.steps)
    eager_model = make_model()
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.05)
    eager_losses = train(step, eager_model, eager_opt, data)

    torch._dynamo.config.compiled_autograd = True
    from torch._dynamo.utils import counters

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    compiled_step = torch.compile(step, backend=args.backend)
    losses = train(compiled_step, model, opt, data)
    captures = counters["compiled_autograd"]["captures"]

    same_losses = all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for a, b in zip(eager_losses, losses))
    same_params = all(torch.allclose(a, b, rtol=1e-4, atol=1e-5)
                      for a, b in zip(eager_model.parameters(), model.parameters()))
    learned = losses[-1] < losses[0]
    ok = same_losses and same_params and captures >= 1 and learned
    print(f"torch {torch.__version__}, backend {args.backend}: {args.steps} steps, losses {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}, compiled autograd captures {captures}; losses match eager: {same_losses}, "
          f"parameters match eager: {same_params}")
    print("verdict: OK" if ok else "verdict: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
