"""What changes between training steps, and the autograd runtime's own features, with the
backward under compiled autograd: each program's results must equal eager's.

Between steps: a layer frozen for one step (``requires_grad_(False)``), the model cast to
float64 and back, an input that needs grad on every other step, train/eval with dropout,
a parameter that gets a grad on one step only, a custom Function whose ``ctx`` attributes
(a float, a Tensor, a bool) change every step, and one whose backward reads
``ctx.needs_input_grad`` while the input's ``requires_grad`` toggles.  Runtime features:
``save_on_cpu`` and ``saved_tensors_hooks``, a custom Function with three outputs, one
unused, with ``set_materialize_grads`` on and off, a ``torch.compile``d forward with
unused outputs, node pre- and post-hooks on a ``grad_fn``, ``backward()`` under
``torch.no_grad()`` with a tensor hook, ``torch.compile`` of a whole training step that
calls ``backward()`` (``torch._dynamo.config.compiled_autograd = True``), DDP on one gloo
rank.  Models and ops: reparameterized ``torch.distributions`` with a KL term,
per-sample losses under ``torch.func.vmap``, an encoder-decoder ``nn.Transformer`` with
padding and causal masks, an ``nn.Embedding`` with ``max_norm``, GroupNorm, InstanceNorm,
BatchNorm without running stats and LayerNorm without affine, index_add/scatter_reduce/
topk/gather/cumsum, bf16 parameters, expand/as_strided/unfold views of a parameter, and a
complex layer scaled in place through ``view_as_real``.  Each runs over two or more batch
sizes or steps.

Prints one line per program (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  The patched wheel passes all twenty-four with ``aot_eager``: one capture where
only ``ctx`` attributes change, two where the batch size changes (its first capture is
static, as stock's), a later backward accumulates into existing grads or what the
backward runs changes (a frozen layer, float64), three or four where an input's grad,
dropout, or which outputs are used, changes too.  Stock 2.6.0 gets the
expand/as_strided program's grads wrong; stock 2.6.0 and 2.7.0 refuse the in-place
``view_as_real`` ("view_fn not supported by compiled autograd"), which the stack runs
eagerly in the graph.  What fails on all three sides is not here: anomaly mode and
``create_graph`` (refused by compiled autograd), jagged nested tensors ("NestedTensor
not implemented"), a sparse COO input (Dynamo's automatic-dynamic code reads its
strides), and ``backward()`` from two threads at once.  With ``inductor`` the first
nineteen pass on the stack; ``norm_layers`` then aborts the process (glibc's
``free(): invalid next size``) on stock 2.6.0 and 2.7.0 too, while each of its norm
layers alone passes.

    python examples/runtime_programs.py [aot_eager|inductor]
"""

import sys
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import ca, grads, one_gloo_rank, report  # noqa: E402


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))


def freeze_between_steps(flag):
    # the first layer's weight gets no grad on the second step
    m = mlp(); out = []
    with ca(flag):
        for step in range(3):
            torch.manual_seed(step); m[0].weight.requires_grad_(step != 1); m.zero_grad(set_to_none=True)
            m(torch.randn(4, 8)).sum().backward()
            out += [p.grad.clone() if p.grad is not None else None for p in m.parameters()]
    return out


def dtype_change(flag):
    # float32, float64, float32 again: the capture for float32 is reused
    m = mlp(); out = []
    with ca(flag):
        for dt in (torch.float32, torch.float64, torch.float32):
            m = m.to(dt); m.zero_grad(set_to_none=True); torch.manual_seed(0)
            m(torch.randn(4, 8, dtype=dt)).pow(2).sum().backward()
            out += [p.grad.clone().float() for p in m.parameters()]
    return out


def input_requires_grad_toggle(flag):
    m = mlp(); out = []
    with ca(flag):
        for rg in (False, True, False, True):
            torch.manual_seed(int(rg)); x = torch.randn(4, 8, requires_grad=rg)
            m(x).sum().backward()
            out.append(x.grad.clone() if rg else torch.zeros(1))
    return grads(m, out)


def train_eval_dropout(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 1))
    with ca(flag):
        for mode in (True, False, True):
            m.train(mode); torch.manual_seed(3)
            m(torch.randn(4, 8)).sum().backward()
    return grads(m)


def unused_parameters(flag):
    # the second step runs the other layer: its grad starts there, the first's is kept
    torch.manual_seed(0); a = nn.Linear(4, 4); b = nn.Linear(4, 4)
    with ca(flag):
        for step in range(3):
            torch.manual_seed(step); x = torch.randn(2, 4)
            (a(x) if step != 1 else b(x)).sum().backward()
    return grads(a) + grads(b)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, t):
        ctx.scale = scale; ctx.t = t; ctx.flag = scale > 1.5
        return x * scale + t

    @staticmethod
    def backward(ctx, g):
        gx = g * ctx.scale * ctx.t
        return (gx + 1 if ctx.flag else gx), None, None


def ctx_attributes_change_per_step(flag):
    # a float, a Tensor and a bool kept on ctx (not saved tensors), new values every step
    m = mlp(); out = []
    with ca(flag):
        for i, s in enumerate((1.0, 2.0, 3.0, 1.0)):
            m.zero_grad()
            Scale.apply(m(torch.ones(2, 8)), s, torch.full((4,), float(i + 1))).sum().backward()
            out += grads(m)
    return out


class NeedsGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if ctx.needs_input_grad[0] else None), (g * a * 2 if ctx.needs_input_grad[1] else None)


def needs_input_grad_toggle(flag):
    torch.manual_seed(0); a = nn.Parameter(torch.randn(4)); b = nn.Parameter(torch.randn(4)); out = []
    with ca(flag):
        for step in range(4):
            a.requires_grad_(step % 2 == 0); a.grad = None; b.grad = None
            NeedsGrad.apply(a, b).sum().backward()
            out += [a.grad.clone() if a.grad is not None else torch.zeros(1), b.grad.clone()]
    return out


def save_on_cpu(flag):
    m = mlp()
    with ca(flag):
        for bs in (5, 7):
            with torch.autograd.graph.save_on_cpu():
                loss = m(torch.randn(bs, 8)).pow(2).sum()
            loss.backward()
    return grads(m)


def saved_tensors_hooks(flag):
    m = mlp()
    with ca(flag):
        for bs in (4, 6):
            torch.manual_seed(bs)
            with torch.autograd.graph.saved_tensors_hooks(lambda t: (t.clone(),), lambda p: p[0]):
                loss = m(torch.randn(bs, 8)).tanh().sum()
            loss.backward()
    return grads(m)


class ThreeOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, materialize):
        ctx.set_materialize_grads(materialize); ctx.save_for_backward(x)
        return x.sin(), x.cos(), x * 2

    @staticmethod
    def backward(ctx, g1, g2, g3):
        x, = ctx.saved_tensors; r = torch.zeros_like(x)
        if g1 is not None: r = r + g1 * x.cos()
        if g2 is not None: r = r - g2 * x.sin()
        if g3 is not None: r = r + 2 * g3
        return r, None


def unused_output_materialize_both_ways(flag):
    # the unused output's grad is zeros with materialize_grads on, None with it off
    torch.manual_seed(0); w = nn.Parameter(torch.randn(3, 4)); out = []
    with ca(flag):
        for materialize in (True, False, True):
            for n in (2, 5):
                w.grad = None
                a, _, c = ThreeOutputs.apply(w.repeat(n, 1), materialize)
                (a.sum() + c.pow(2).sum()).backward()
                out.append(w.grad.clone())
    return out


def compiled_forward_unused_outputs(flag):
    m = mlp()

    @torch.compile(backend="aot_eager")
    def f(x):
        h = m(x)
        return h.sum(), h.exp(), h * 3, x.sin()

    with ca(flag):
        for bs in (2, 3, 5):
            torch.manual_seed(bs); loss, *_ = f(torch.randn(bs, 8, requires_grad=True))
            loss.backward()
    return grads(m)


def node_hooks(flag):
    # a pre-hook on a grad_fn that doubles its grad, and a post-hook that reads it
    m = mlp()
    with ca(flag):
        for bs in (3, 4):
            torch.manual_seed(bs); h = m[0](torch.randn(bs, 8))
            h.grad_fn.register_prehook(lambda g: (g[0] * 2,))
            h.grad_fn.register_hook(lambda gi, go: None)
            m[2](m[1](h)).sum().backward()
    return grads(m)


def backward_under_no_grad(flag):
    m = mlp(); m[2].weight.register_hook(lambda g: g * 0.5)
    with ca(flag):
        for bs in (2, 3):
            torch.manual_seed(bs); loss = m(torch.randn(bs, 8)).sum()
            with torch.no_grad():
                loss.backward()
    return grads(m)


def compiled_step_calls_backward(flag):
    # Dynamo traces loss.backward() inside the compiled step; the optimizer steps outside
    m = mlp(); opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        loss = m(x).pow(2).sum()
        loss.backward()
        return loss

    old = torch._dynamo.config.compiled_autograd
    torch._dynamo.config.compiled_autograd = flag
    try:
        fn = torch.compile(step, backend="aot_eager") if flag else step
        for bs in (4, 6, 4):
            torch.manual_seed(bs); fn(torch.randn(bs, 8)); opt.step(); opt.zero_grad()
    finally:
        torch._dynamo.config.compiled_autograd = old
    return [p.detach().clone() for p in m.parameters()]


def ddp_one_rank(flag):
    from torch.nn.parallel import DistributedDataParallel

    one_gloo_rank()
    m = DistributedDataParallel(mlp())
    with ca(flag):
        for bs in (4, 6):
            torch.manual_seed(bs); m(torch.randn(bs, 8)).sum().backward()
    return grads(m)


def distributions_kl(flag):
    torch.manual_seed(0); mu = nn.Parameter(torch.randn(4)); log_sigma = nn.Parameter(torch.zeros(4))
    prior = torch.distributions.Normal(torch.zeros(4), torch.ones(4))
    with ca(flag):
        for n in (8, 16):
            torch.manual_seed(n); d = torch.distributions.Normal(mu, log_sigma.exp()); z = d.rsample((n,))
            (-d.log_prob(z).mean() + torch.distributions.kl_divergence(d, prior).sum() + z.pow(2).mean()).backward()
    return [mu.grad.clone(), log_sigma.grad.clone()]


def vmap_per_sample_loss(flag):
    from torch.func import functional_call, vmap
    m = mlp(); params = dict(m.named_parameters())
    with ca(flag):
        for bs in (3, 5):
            torch.manual_seed(bs)
            vmap(lambda x: functional_call(m, params, (x.unsqueeze(0),)).pow(2).sum())(torch.randn(bs, 8)).sum().backward()
    return grads(m)


def transformer_masks(flag):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 1)
    with ca(flag):
        for s in (5, 7):
            torch.manual_seed(s); src = torch.randn(2, s, 16); tgt = torch.randn(2, 4, 16)
            pad = torch.zeros(2, s, dtype=torch.bool); pad[1, -2:] = True
            mem = enc(src, src_key_padding_mask=pad)
            out = dec(tgt, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), memory_key_padding_mask=pad)
            out.pow(2).mean().backward()
    return grads(enc) + grads(dec)


def embedding_max_norm(flag):
    # the forward renormalizes the looked-up rows in place, under no_grad
    torch.manual_seed(0); emb = nn.Embedding(20, 8, max_norm=1.0); head = nn.Linear(8, 2)
    with ca(flag):
        for n in (5, 9):
            head(emb(torch.arange(n) % 20)).sum().backward()
    return grads(emb) + grads(head)


def norm_layers(flag):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(), nn.InstanceNorm2d(8, affine=True),
                      nn.BatchNorm2d(8, track_running_stats=False), nn.Flatten(1),
                      nn.LayerNorm(8 * 36, elementwise_affine=False), nn.Linear(8 * 36, 2))
    with ca(flag):
        for bs in (2, 3):
            torch.manual_seed(bs); m(torch.randn(bs, 3, 6, 6)).pow(2).sum().backward()
    return grads(m)


def scatter_gather_topk(flag):
    torch.manual_seed(0); w = nn.Parameter(torch.randn(10, 6))
    with ca(flag):
        for n in (4, 7):
            idx = torch.tensor([0, 3, 3, 1, 9, 9, 2][:n]); x = w.index_select(0, idx)
            y = torch.zeros(10, 6).index_add(0, idx, x * 2)
            z = y.scatter_reduce(0, idx.view(-1, 1).expand(-1, 6), x, reduce="amax", include_self=False)
            v, i = z.topk(3, dim=1)
            (v.sum() + z.cumsum(1).logsumexp(0).sum() + torch.gather(z, 1, i).pow(2).sum()).backward()
    return [w.grad.clone()]


def bf16_parameters(flag):
    m = mlp().to(torch.bfloat16)
    with ca(flag):
        for bs in (3, 5):
            torch.manual_seed(bs); m(torch.randn(bs, 8, dtype=torch.bfloat16)).float().pow(2).sum().backward()
    return [g.float() for g in grads(m)]


def expand_as_strided_unfold(flag):
    torch.manual_seed(0); w = nn.Parameter(torch.randn(4, 1))
    with ca(flag):
        for n in (3, 6):
            s = torch.as_strided(w.view(-1), (2, 2), (1, 2))
            (w.expand(4, n).pow(2).sum() + s.exp().sum() + w.t().unfold(1, 2, 1).sum()).backward()
    return [w.grad.clone()]


def complex_in_place_views(flag):
    # a complex layer whose activations are scaled in place through view_as_real: the
    # CopySlices holds a view_fn, which stock 2.6 and 2.7 refuse; the stack runs it eagerly
    torch.manual_seed(0); w = nn.Parameter(torch.randn(4, 4, dtype=torch.complex64))
    with ca(flag):
        for bs in (3, 5):
            torch.manual_seed(bs); z = torch.randn(bs, 4, dtype=torch.complex64) @ w
            r = torch.view_as_real(z)
            r[..., 1].mul_(0.5)
            r.pow(2).sum().backward()
    return [w.grad.clone()]


PROGRAMS = [freeze_between_steps, dtype_change, input_requires_grad_toggle, train_eval_dropout, unused_parameters,
            ctx_attributes_change_per_step, needs_input_grad_toggle, save_on_cpu, saved_tensors_hooks,
            unused_output_materialize_both_ways, compiled_forward_unused_outputs, node_hooks, backward_under_no_grad,
            compiled_step_calls_backward, ddp_one_rank, distributions_kl, vmap_per_sample_loss, transformer_masks,
            embedding_max_norm, norm_layers, scatter_gather_topk, bf16_parameters, expand_as_strided_unfold,
            complex_in_place_views]


if __name__ == "__main__":
    sys.exit(report(PROGRAMS, "programs"))
