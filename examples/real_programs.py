"""Ordinary training programs with their backward under compiled autograd: each one's
grads must equal eager's.  What a user of the patched wheel runs, beyond upstream's
tests: Adam with grad clipping over changing batch sizes, a BatchNorm convnet with an
in-place ReLU, a torch.compile'd model, module and tensor hooks, bf16 autocast,
embedding + causal attention over changing sequence lengths, a custom
autograd.Function under activation checkpointing, selective activation checkpointing,
in-place ops on views, an LSTM, retain_graph, a TwoTensor subclass through a
compiled forward, tensor parallelism (DTensor parameters, one gloo rank), gradient
accumulation over micro-batches, a gradient penalty (double backward), weight norm
with a CTC loss and an FFT, a custom Function with a non-differentiable output and
once_differentiable, a dynamic-shape compiled forward with a graph break,
multi-grad hooks ("any" and "all", as FSDP2 registers them), an optimizer step in
post-accumulate-grad hooks, a UNet-style decoder that upsamples over changing
image sizes, a torch.library custom op with a registered backward, nested
checkpoints, a spatial transformer (affine_grid, grid_sample, a fractional max-pool,
soft-shrink) over batch sizes, a complex-valued layer with a float64 FFT head, a
vector-Jacobian product (autograd.grad with grad_outputs, backward(gradient=...))
over batch sizes, a hand-written MLP of plain Tensors whose hooks step one Adam
per weight, kept in a global dict keyed by the weight, a checkpointed block with dropout
(the recompute replays the forward's RNG state), a LoRA adapter on a frozen layer, a
``torch.compile``d flex_attention with a causal score_mod, and a float16 model.

Prints one line per program (``name: ok captures=N``, or why not) and a verdict; exits
0/1. The patched wheel passes all thirty-one. Its first capture is static, as stock's:
a program over new batch sizes or sequence lengths takes two captures (the second with
the changed sizes dynamic, reused by every later size), one where no size changes, and
more for the first accumulation into existing grads, as everywhere, and for the
vector-Jacobian program's two backward graphs. Stock torch
2.6.0 fails eleven (in-place ops on views, and the per-weight optimizers of plain Tensors,
give wrong grads; selective checkpointing, the TwoTensor compiled forward, tensor
parallelism, the weight-norm/CTC/FFT program, the multi-grad hooks, the upsampling
decoder, the spatial transformer, the complex/float64 program and the compiled
flex_attention raise) and stock 2.7.0
six (the checkpointed custom Function, the nested checkpoints, tensor parallelism, the
upsampling decoder and the spatial transformer raise; the per-weight optimizers step the
first weight's optimizer for every weight), both recapturing for each new batch size or
sequence length.

With ``inductor``, embedding_attention differs from eager on the patched wheel and on
stock 2.6.0 alike: 2.6's Inductor gets that embedding's grad wrong (by 1.4e-2) even
without compiled autograd (``torch.compile`` of forward and ``autograd.grad``
together); 2.7's Inductor gets it right.  The other eighteen of the first nineteen
pass with Inductor; the last eight were measured with aot_eager.

    python examples/real_programs.py [aot_eager|inductor]
"""

import contextlib
import functools
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"


def ca(flag):
    """Compiled autograd for the backwards in the block (the eager reference: none)."""
    if not flag:
        return contextlib.nullcontext()
    return torch._dynamo.compiled_autograd._enable(torch.compile(backend=BACKEND))

def one_gloo_rank():
    """The default process group: gloo, rank 0 of 1, on an in-process store (no port, no peers)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def grads(model, extra=()):
    return [p.grad.clone() if p.grad is not None else None for p in model.parameters()] + list(extra)

def mlp_adam(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    opt = torch.optim.Adam(m.parameters()); out = []
    for bs in (4, 8, 4):
        x = torch.randn(bs, 8); opt.zero_grad()
        with ca(flag): F.cross_entropy(m(x), torch.randint(0, 4, (bs,))).backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); out += grads(m)
    return out

def conv_bn(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8*4*4, 2))
    out = []
    for bs in (2, 3):
        m.zero_grad(); x = torch.randn(bs, 3, 8, 8)
        with ca(flag): m(x).sum().backward()
        out += grads(m)
    return out

def compiled_fwd_model(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Dropout(0.0), nn.Linear(16, 1))
    cm = torch.compile(m, backend=BACKEND); out = []
    for bs in (4, 6, 9):
        m.zero_grad()
        with ca(flag): cm(torch.randn(bs, 8)).pow(2).mean().backward()
        out += grads(m)
    return out

def module_hooks(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)); seen = []
    m[0].register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].sum().item()))
    m[2].weight.register_hook(lambda g: g * 2)
    m[2].bias.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.sum().item()))
    m.zero_grad()
    with ca(flag): m(torch.randn(3, 4)).sum().backward()
    return grads(m, [torch.tensor(seen)])

def autocast_bf16(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    m.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = m(torch.randn(4, 8)).float().sum()
    with ca(flag): y.backward()
    return grads(m)

def embedding_attention(flag):
    torch.manual_seed(0)
    emb = nn.Embedding(50, 16); attn = nn.MultiheadAttention(16, 2, batch_first=True); head = nn.Linear(16, 50)
    ps = list(emb.parameters()) + list(attn.parameters()) + list(head.parameters()); out = []
    for L in (5, 7):
        for p in ps: p.grad = None
        ids = torch.randint(0, 50, (2, L)); h = emb(ids)
        mask = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
        o, _ = attn(h, h, h, attn_mask=mask)
        with ca(flag): F.cross_entropy(head(o).flatten(0, 1), ids.flatten()).backward()
        out += [p.grad.clone() for p in ps]
    return out

def custom_function_and_checkpoint(flag):
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x): ctx.save_for_backward(x); return x * x
        @staticmethod
        def backward(ctx, g): (x,) = ctx.saved_tensors; return 2 * x * g
    torch.manual_seed(0); lin = nn.Linear(6, 6); out = []
    for bs in (3, 5):
        lin.zero_grad(); x = torch.randn(bs, 6, requires_grad=True)
        y = torch.utils.checkpoint.checkpoint(lambda t: Sq.apply(lin(t)).sin(), x, use_reentrant=False)
        with ca(flag): y.sum().backward()
        out += grads(lin, [x.grad])
    return out

def inplace_views(flag):
    torch.manual_seed(0); w = torch.randn(4, 4, requires_grad=True); out = []
    for _ in range(2):
        w.grad = None
        base = w * 1; base[:, :2].mul_(3); v = base.t(); v.add_(1)
        with ca(flag): (base.exp() * base).sum().backward()
        out.append(w.grad.clone())
    return out

def rnn(flag):
    torch.manual_seed(0); m = nn.LSTM(4, 8, batch_first=True); out = []
    for L in (3, 5):
        m.zero_grad(); o, _ = m(torch.randn(2, L, 4))
        with ca(flag): o.sum().backward()
        out += grads(m)
    return out

def retain_and_grad_api(flag):
    torch.manual_seed(0); x = torch.randn(5, requires_grad=True); w = torch.randn(5, requires_grad=True)
    y = (x * w).sin().sum()
    with ca(flag):
        y.backward(retain_graph=True)
        y.backward()
    return [x.grad, w.grad]


def grad_accumulation(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
    for bs in (4, 5, 6):  # micro-batches: grads add up in .grad, no zero_grad between them
        with ca(flag): F.mse_loss(m(torch.randn(bs, 6)), torch.randn(bs, 3)).backward()
    return grads(m)

def gradient_penalty(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 8), nn.Softplus(), nn.Linear(8, 1))
    x = torch.randn(5, 4, requires_grad=True); y = m(x).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)  # eager double backward, as WGAN-GP does
    with ca(flag): (y + gx.pow(2).sum()).backward()
    return grads(m)

def weight_norm_ctc_fft(flag):
    # backward formulas with no fake-tensor kernel: stock's capture cannot trace them
    torch.manual_seed(0); m = nn.utils.parametrizations.weight_norm(nn.Linear(5, 5))
    x = torch.randn(12, 2, 5)
    with ca(flag):
        lp = m(x).log_softmax(2)
        loss = F.ctc_loss(lp, torch.tensor([[1, 2, 2], [3, 1, 0]]), torch.tensor([12, 12]), torch.tensor([3, 2]))
        spec = torch.fft.rfft(lp.sum((1, 2)) * torch.arange(12.0))
        (loss + (spec.abs() ** 2).sum() * 1e-3).backward()
    return grads(m)

def custom_function_flags(flag):
    class Clip(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False); idx = x.argmax(); ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x); return x.clamp(-1, 1), idx
        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g, gi):
            (x,) = ctx.saved_tensors
            return None if g is None else g * (x.abs() <= 1)
    torch.manual_seed(0); x = (torch.randn(10) * 2).requires_grad_()
    with ca(flag): y, _ = Clip.apply(x); (y * 3).sum().backward()
    return [x.grad]

def compiled_dynamic_graph_break(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    def fwd(x):
        h = m[0](x); torch._dynamo.graph_break(); return m[2](m[1](h))
    f = torch.compile(fwd, backend=BACKEND, dynamic=True); out = []
    for bs in (3, 5, 7):
        m.zero_grad()
        with ca(flag): f(torch.randn(bs, 4)).sum().backward()
        out += grads(m)
    return out


def multi_grad_hooks(flag):
    # FSDP2-style hooks over several tensors: "any" fires once per backward, "all" gets every grad
    torch.manual_seed(0); m = nn.Linear(4, 6); seen = []
    for bs in (3, 5):
        m.zero_grad(); h = m(torch.randn(bs, 4)); a, b = h[:, :3] * 2, h[:, 3:] * 3
        hs = [torch.autograd.graph.register_multi_grad_hook((a, b), lambda g: seen.append(1.0), mode="any"),
              torch.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append(sum(g.sum().item() for g in gs)))]
        with ca(flag): (a.sin() * b.cos()).sum().backward()
        for x in hs: x.remove()
    return grads(m, [torch.tensor(seen)])


def selective_checkpoint(flag):
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE

    torch.manual_seed(0); out = []
    w1 = torch.randn(8, 8, requires_grad=True); w2 = torch.randn(8, 8, requires_grad=True)
    for bs in (4, 6):
        w1.grad = w2.grad = None; x = torch.randn(bs, 8, requires_grad=True)
        y = torch.utils.checkpoint.checkpoint(
            lambda t: (torch.mm(t, w1).relu().sin() @ w2).cos(), x, use_reentrant=False,
            context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
        with ca(flag): y.sum().backward()
        out += [x.grad, w1.grad.clone(), w2.grad.clone()]
    return out


def two_tensor_compiled_forward(flag):
    from torch.testing._internal.two_tensor import TwoTensor

    torch.manual_seed(0); out = []
    f = torch.compile(lambda x, w: (x @ w).sin(), backend=BACKEND)
    for bs in (4, 6):
        w = torch.randn(3, 3, requires_grad=True)
        a = TwoTensor(torch.randn(bs, 3), torch.randn(bs, 3)).requires_grad_()
        with ca(flag): f(a, w).sum().backward()
        out += [w.grad, a.grad.a, a.grad.b]
    return out

def tensor_parallel(flag):
    # DTensor parameters (column- then row-wise sharded Linears) on one gloo rank
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    one_gloo_rank()
    mesh = init_device_mesh("cpu", (1,))
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    m = parallelize_module(m, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()}); out = []
    for bs in (4, 6):
        m.zero_grad(); x = torch.randn(bs, 8)
        with ca(flag): m(x).sum().backward()
        out += [p.grad.full_tensor() for p in m.parameters()]
    return out


def optimizer_in_backward(flag):
    # the optimizer step runs in each parameter's post-accumulate-grad hook, freeing its grad
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)); seen = []
    opts = {p: torch.optim.SGD([p], lr=0.1) for p in m.parameters()}
    def step(p):
        seen.append(p.grad.sum()); opts[p].step(); opts[p].zero_grad(set_to_none=True)
    hs = [p.register_post_accumulate_grad_hook(step) for p in m.parameters()]
    for bs in (3, 5):
        with ca(flag): m(torch.randn(bs, 4)).pow(2).sum().backward()
    for h in hs: h.remove()
    return [p.detach().clone() for p in m.parameters()] + [torch.stack(seen)]

OPTIMIZERS = {}  # optimizer_step_per_tensor: one optimizer per weight, keyed by the weight


def step_own_optimizer(w):
    OPTIMIZERS[w].step(); OPTIMIZERS[w].zero_grad(set_to_none=True)


def optimizer_step_per_tensor(flag):
    # a hand-written MLP of plain requires_grad Tensors, one Adam per weight in a global dict,
    # stepped in each weight's post-accumulate-grad hook
    torch.manual_seed(0); ws = [(torch.randn(8, 8) / 3).requires_grad_() for _ in range(3)]
    OPTIMIZERS.clear(); OPTIMIZERS.update({w: torch.optim.Adam([w], lr=0.01) for w in ws})
    hs = [w.register_post_accumulate_grad_hook(step_own_optimizer) for w in ws]
    for bs in (4, 6):
        h = torch.randn(bs, 8)
        for w in ws: h = torch.tanh(h @ w)
        with ca(flag): h.pow(2).sum().backward()
    for hk in hs: hk.remove()
    return [w.detach().clone() for w in ws]


def upsampling_decoder(flag):
    # a UNet-style decoder: conv, bilinear and nearest upsampling, a skip connection, over image sizes
    torch.manual_seed(0); enc = nn.Conv2d(3, 8, 3, stride=2, padding=1); dec = nn.Conv2d(8 + 3, 3, 3, padding=1); out = []
    for hw in (8, 12, 6):
        enc.zero_grad(); dec.zero_grad(); x = torch.randn(2, 3, hw, hw)
        h = F.interpolate(F.relu(enc(x)), scale_factor=2, mode="bilinear", align_corners=False)
        y = dec(torch.cat([h, F.interpolate(x, size=(hw, hw), mode="nearest")], 1))
        with ca(flag): F.mse_loss(y, x).backward()
        out += grads(enc) + grads(dec)
    return out


def library_custom_op(flag):
    # a torch.library custom op with its backward registered through register_autograd
    name = "fca_examples::scaled_sin_" + ("ca" if flag else "eager")

    @torch.library.custom_op(name, mutates_args=())
    def scaled_sin(x: torch.Tensor, s: float) -> torch.Tensor:
        return torch.sin(x) * s

    @scaled_sin.register_fake
    def _(x, s):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0]); ctx.s = inputs[1]

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x) * ctx.s, None

    scaled_sin.register_autograd(backward, setup_context=setup_context)
    torch.manual_seed(0); w = torch.randn(4, requires_grad=True); out = []
    for bs in (3, 5):
        w.grad = None
        with ca(flag): scaled_sin(torch.randn(bs, 4) * w, 2.0).sum().backward()
        out.append(w.grad.clone())
    return out


def nested_checkpoint(flag):
    # a non-reentrant checkpoint inside another one
    torch.manual_seed(0); m1 = nn.Linear(4, 4); m2 = nn.Linear(4, 4); out = []
    ck = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=False)
    for bs in (3, 5):
        m1.zero_grad(); m2.zero_grad(); x = torch.randn(bs, 4, requires_grad=True)
        y = ck(lambda t: ck(lambda u: m2(m1(u).relu()).sin(), t) * 2, x)
        with ca(flag): y.sum().backward()
        out += grads(m1) + grads(m2) + [x.grad]
    return out


def spatial_transformer(flag):
    # a spatial transformer (a localization net predicts an affine warp) with a fractional
    # max-pool and soft-shrink denoising head, over batch sizes
    torch.manual_seed(0); loc = nn.Linear(36, 6); head = nn.Conv2d(1, 2, 3); out = []
    for bs in (2, 3, 5):
        loc.zero_grad(); head.zero_grad(); x = torch.randn(bs, 1, 6, 6)
        theta = loc(x.flatten(1)).view(bs, 2, 3) * 0.1 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
        warped = F.grid_sample(x, F.affine_grid(theta, [bs, 1, 6, 6], align_corners=False), align_corners=False)
        pooled = F.fractional_max_pool2d(F.softshrink(head(warped), 0.1), 2, output_size=2,
                                         _random_samples=torch.full((bs, 2, 2), 0.5))
        with ca(flag): pooled.pow(2).sum().backward()
        out += grads(loc) + grads(head)
    return out


def complex_float64(flag):
    # a complex-valued layer feeding a float64 head through an FFT
    torch.manual_seed(0); w = torch.randn(4, 4, dtype=torch.complex64, requires_grad=True)
    v = torch.randn(4, dtype=torch.float64, requires_grad=True); out = []
    for bs in (2, 3):
        w.grad = None; v.grad = None
        r = torch.view_as_real(torch.randn(bs, 4, dtype=torch.complex64) @ w).sum(-1).double() * v
        with ca(flag): (r.abs().sum() + torch.fft.rfft(r).abs().sum()).backward()
        out += [w.grad.clone(), v.grad.clone()]
    return out


def vector_jacobian(flag):
    # autograd.grad with grad_outputs and backward(gradient=...) from a non-scalar output, over batch sizes
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)); out = []
    for bs in (4, 6, 9):
        m.zero_grad(); x = torch.randn(bs, 6, requires_grad=True); y = m(x)
        with ca(flag):
            (gx,) = torch.autograd.grad(y, x, torch.randn(bs, 3), retain_graph=True)
            y.backward(torch.randn(bs, 3))
        out += grads(m) + [gx]
    return out


def checkpoint_dropout(flag):
    # a checkpointed block with dropout: the recompute in backward replays the forward's RNG state
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.GELU(), nn.Linear(16, 8)); out = []
    for bs in (4, 6):
        m.zero_grad(); x = torch.randn(bs, 8); torch.manual_seed(bs)
        y = torch.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
        with ca(flag): y.sum().backward()
        out += grads(m)
    return out


def lora_frozen_base(flag):
    # a LoRA adapter on a frozen linear layer, AdamW on the adapter only, over batch sizes
    torch.manual_seed(0); base = nn.Linear(16, 16).requires_grad_(False)
    a = nn.Parameter(torch.randn(4, 16) * 0.1); b = nn.Parameter(torch.zeros(16, 4))
    opt = torch.optim.AdamW([a, b], lr=1e-2)
    for bs in (3, 5, 7):
        x = torch.randn(bs, 16)
        with ca(flag): (base(x) + x @ a.t() @ b.t()).pow(2).mean().backward()
        opt.step(); opt.zero_grad(set_to_none=False)
    return [a.detach().clone(), b.detach().clone()]


def flex_attention_compiled(flag):
    # torch.compile'd flex_attention with a causal score_mod (a higher-order op's backward)
    from torch.nn.attention.flex_attention import flex_attention

    def causal(score, b, h, q_idx, kv_idx):
        return torch.where(q_idx >= kv_idx, score, -float("inf"))

    torch.manual_seed(0); q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
    attend = torch.compile(flex_attention, backend="aot_eager")
    with ca(flag): attend(q, k, v, score_mod=causal).pow(2).sum().backward()
    return [q.grad, k.grad, v.grad]


def fp16_model(flag):
    # a float16 model on CPU (half grads, a LayerNorm), the loss in float32
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Linear(8, 2)).half(); out = []
    for bs in (4, 6):
        m.zero_grad()
        with ca(flag): m(torch.randn(bs, 8).half()).float().sum().backward()
        out += [g.float() for g in grads(m)]
    return out


PROGRAMS = [mlp_adam, conv_bn, compiled_fwd_model, module_hooks, autocast_bf16, embedding_attention,
            custom_function_and_checkpoint, selective_checkpoint, inplace_views, rnn, retain_and_grad_api,
            two_tensor_compiled_forward, tensor_parallel, grad_accumulation, gradient_penalty, weight_norm_ctc_fft,
            custom_function_flags, compiled_dynamic_graph_break, multi_grad_hooks, optimizer_in_backward,
            upsampling_decoder, library_custom_op, nested_checkpoint, spatial_transformer, complex_float64,
            vector_jacobian, optimizer_step_per_tensor, checkpoint_dropout, lora_frozen_base,
            flex_attention_compiled, fp16_model]


def same(ref, got):
    return len(ref) == len(got) and all(
        (a is None and b is None) or (a is not None and b is not None and torch.allclose(a, b, atol=1e-4, rtol=1e-3))
        for a, b in zip(ref, got))


def main() -> int:
    return report(PROGRAMS, "programs")


def report(programs, noun: str) -> int:
    """Runs each ``program(flag)`` eagerly and under compiled autograd, prints a line per
    program and a verdict; 0 when all give eager's grads."""
    torch.set_num_threads(1)
    bad = 0
    for program in programs:
        torch._dynamo.reset()
        torch._dynamo.compiled_autograd.reset()
        torch._dynamo.utils.counters.clear()
        try:
            ref = program(False)
            got = program(True)
            verdict = "ok" if same(ref, got) else "WRONG grads"
        except Exception as e:  # a program that fails is reported, the others still run
            verdict = f"FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}"
        captures = torch._dynamo.utils.counters["compiled_autograd"]["captures"]
        bad += verdict != "ok"
        print(f"{program.__name__}: {verdict} captures={captures}", flush=True)
    print(f"verdict: {'OK' if not bad else f'{bad} of {len(programs)} {noun} differ from eager'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
