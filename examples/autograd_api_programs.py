"""The corners of the autograd API that training code leans on, with the backward under
compiled autograd: each program's results must equal eager's.  Beyond the values, some
check what a grad *is*: its strides (channels_last parameters get channels_last grads),
its identity (accumulation into an existing ``.grad`` is in place, so an optimizer or a
bucket view holding it sees the new values), and its sparsity (a sparse embedding's
grad stays sparse).

The programs: tied weights (an embedding shared with the output head), a channels_last
convnet's grad layout, the identity of an accumulated grad, ``zero_grad(set_to_none=False)``
with momentum SGD, a sparse embedding, quantization-aware training (``FakeQuantize``),
an orthogonal parametrization, spectral norm with L1 pruning, multi-head attention with a
key padding mask, a non-leaf hook that scales its grad in place, ``torch.func.functional_call``,
reentrant checkpointing, a custom Function with ``mark_dirty`` and
``set_materialize_grads(False)``, an LSTM over packed sequences, ``backward(inputs=...)``,
``autograd.grad`` with ``allow_unused`` and ``materialize_grads``, bf16 autocast with a
CPU ``GradScaler`` and grad clipping, ``retain_grad()`` on an activation and a view of it,
a weight of a Tensor subclass Dynamo cannot trace (``LoggingTensor``); and four with a ``torch.compile``d forward: tied
weights with AdamW, a channels_last BatchNorm convnet with momentum SGD, attention with a
padding mask, and module backward hooks on every layer of an MLP; ``index_put`` with
``accumulate`` and ``masked_scatter``; a custom Function with ``setup_context`` and
``generate_vmap_rule`` under ``torch.vmap``; a TorchScript submodule (its backward a
``DifferentiableGraphBackward`` once profiled), EmbeddingBags (sum with per-sample weights,
max), the ``weight_norm`` parametrization, a bidirectional GRU, and a BatchNorm in eval mode.  Most run over two or three batch sizes or
sequence lengths.

Prints one line per program (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  The patched wheel passes all thirty; stock 2.6.0 passes twenty-five and 2.7.0
twenty-six.  Both refuse the TorchScript submodule ("compiled_args not implemented:
DifferentiableGraphBackward"; the wheel runs that node eagerly in the graph), stock 2.6.0
the ``weight_norm`` parametrization (no fake kernel for its backward), and they
never call the first layer's full backward hook (its input needs no grad) after a
compiled forward, they leave the subclass weight's grad None (the graph they run
eagerly accumulates it into the inner Tensor), and they refuse ``retain_grad()``
("retains_grad_hooks not implemented for compiled autograd").  The wheel's first capture
is static, as stock's: two captures where the batch size changes (the second with the
changed sizes dynamic) or a later backward accumulates into existing grads (a new
capture everywhere), three where a compiled forward also recompiles at its first new
size, one where nothing changes but the values.

    python examples/autograd_api_programs.py [aot_eager|inductor]
"""

import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune  # noqa: F401  (a submodule: not imported by torch.nn.utils)
import torch.utils.checkpoint as checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import ca, grads, report  # noqa: E402


def tied_weights(flag):
    torch.manual_seed(0); emb = nn.Embedding(20, 8); head = nn.Linear(8, 20, bias=False); head.weight = emb.weight
    out = []
    for length in (5, 7):
        x = torch.randint(0, 20, (2, length))
        with ca(flag): F.cross_entropy(head(torch.tanh(emb(x))).flatten(0, 1), x.flatten()).backward()
        out.append(emb.weight.grad.clone())
    return out


def channels_last_grad_layout(flag):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3)).to(memory_format=torch.channels_last)
    for bs in (2, 3):
        x = torch.randn(bs, 3, 10, 10).to(memory_format=torch.channels_last)
        with ca(flag): m(x).sum().backward()
    return [t for p in m.parameters() for t in (p.grad.clone(), torch.tensor(p.grad.stride()))]


def accumulated_grad_is_the_same_tensor(flag):
    torch.manual_seed(0); m = nn.Linear(4, 3)
    with ca(flag): m(torch.randn(2, 4)).sum().backward()
    first, ptr = m.weight.grad, m.weight.grad.data_ptr()
    with ca(flag): m(torch.randn(2, 4)).sum().backward()
    return [m.weight.grad.clone(), torch.tensor([m.weight.grad is first, m.weight.grad.data_ptr() == ptr])]


def zero_grad_keeps_grads(flag):
    torch.manual_seed(0); m = nn.Linear(4, 3); opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    out = []
    for bs in (2, 3, 2):
        opt.zero_grad(set_to_none=False); before = m.weight.grad
        with ca(flag): m(torch.randn(bs, 4)).pow(2).sum().backward()
        out.append(torch.tensor([before is None or m.weight.grad is before]))
        opt.step()
    return out + [p.detach().clone() for p in m.parameters()]


def sparse_embedding(flag):
    torch.manual_seed(0); emb = nn.Embedding(20, 4, sparse=True); opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    sparse = []
    for length in (3, 5):
        opt.zero_grad()
        with ca(flag): emb(torch.randint(0, 20, (2, length))).pow(2).sum().backward()
        sparse.append(emb.weight.grad.is_sparse); opt.step()
    return [emb.weight.detach().clone(), torch.tensor(sparse)]


def qat_fake_quant(flag):
    torch.manual_seed(0)
    fq = torch.ao.quantization.FakeQuantize(
        observer=torch.ao.quantization.MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    lin = nn.Linear(6, 4); out = []
    for bs in (2, 3):
        x = torch.randn(bs, 6, requires_grad=True)
        with ca(flag): lin(fq(x)).pow(2).sum().backward()
        out.append(x.grad.clone())
    return out + [lin.weight.grad.clone()]


def orthogonal_parametrization(flag):
    torch.manual_seed(0); lin = nn.utils.parametrizations.orthogonal(nn.Linear(5, 5))
    for bs in (2, 4):
        with ca(flag): lin(torch.randn(bs, 5)).pow(2).sum().backward()
    return grads(lin)


def spectral_norm_and_pruning(flag):
    torch.manual_seed(0); a = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 6)); b = nn.Linear(6, 3)
    nn.utils.prune.l1_unstructured(b, "weight", amount=0.5)
    for bs in (2, 4):
        with ca(flag): b(torch.relu(a(torch.randn(bs, 6)))).sum().backward()
    return grads(a) + grads(b)


def attention_padding_mask(flag):
    torch.manual_seed(0); mha = nn.MultiheadAttention(8, 2, batch_first=True)
    for length in (4, 6):
        x = torch.randn(2, length, 8); mask = torch.zeros(2, length, dtype=torch.bool); mask[1, -2:] = True
        with ca(flag): mha(x, x, x, key_padding_mask=mask)[0].sum().backward()
    return grads(mha)


def nonleaf_hook_in_place(flag):
    torch.manual_seed(0); w = torch.randn(4, 4, requires_grad=True)
    for bs in (2, 3):
        h = torch.randn(bs, 4) @ w
        h.register_hook(lambda g: g.mul_(2))
        with ca(flag): torch.sigmoid(h).sum().backward()
    return [w.grad.clone()]


def functional_call(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 1))
    params = {k: v.detach().clone().requires_grad_() for k, v in m.named_parameters()}
    for bs in (3, 5):
        with ca(flag): torch.func.functional_call(m, params, (torch.randn(bs, 4),)).sum().backward()
    return [p.grad.clone() for p in params.values()]


def reentrant_checkpoint(flag):
    torch.manual_seed(0); a = nn.Linear(6, 6); b = nn.Linear(6, 2)
    for bs in (2, 4):
        x = torch.randn(bs, 6, requires_grad=True)
        y = checkpoint.checkpoint(lambda t: torch.tanh(a(t)), x, use_reentrant=True)
        with ca(flag): b(y).pow(2).sum().backward()
    return grads(a) + grads(b)


class DoubleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2); ctx.mark_dirty(x); ctx.set_materialize_grads(False)
        return x

    @staticmethod
    def backward(ctx, g):
        return None if g is None else g * 2


def mark_dirty_function(flag):
    torch.manual_seed(0); w = torch.randn(4, 4, requires_grad=True)
    for bs in (2, 3):
        y = DoubleInPlace.apply(torch.randn(bs, 4) @ w)
        with ca(flag): y.sin().sum().backward()
    return [w.grad.clone()]


def packed_lstm(flag):
    torch.manual_seed(0); lstm = nn.LSTM(4, 5, batch_first=True); lin = nn.Linear(5, 1)
    for lengths in ([5, 3, 2], [4, 4, 1, 1]):
        x = torch.randn(len(lengths), max(lengths), 4)
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
        out, _ = nn.utils.rnn.pad_packed_sequence(lstm(packed)[0], batch_first=True)
        with ca(flag): lin(out).sum().backward()
    return grads(lstm) + grads(lin)


def backward_inputs_subset(flag):
    torch.manual_seed(0); a = nn.Linear(4, 4); b = nn.Linear(4, 1)
    for bs in (2, 3):
        with ca(flag): b(torch.relu(a(torch.randn(bs, 4)))).sum().backward(inputs=list(b.parameters()))
    return grads(b) + [torch.tensor([a.weight.grad is None])]


def grad_allow_unused_materialize(flag):
    torch.manual_seed(0); w = torch.randn(3, 3, requires_grad=True); unused = torch.randn(3, requires_grad=True)
    out = []
    for bs in (2, 4):
        y = (torch.randn(bs, 3) @ w).pow(2).sum()
        with ca(flag): out += torch.autograd.grad(y, [w, unused], allow_unused=True, materialize_grads=True)
    return out


def grad_scaler_bf16(flag):
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1); scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
    for bs in (4, 6):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = m(torch.randn(bs, 8)).float().pow(2).mean()
        with ca(flag): scaler.scale(loss).backward()
        scaler.unscale_(opt); nn.utils.clip_grad_norm_(m.parameters(), 1.0); scaler.step(opt); scaler.update()
    return [p.detach().clone() for p in m.parameters()]


def retain_grad_intermediates(flag):
    # retain_grad() on an activation and on a view of it (debugging, attribution)
    torch.manual_seed(0); lin = nn.Linear(4, 4); out = []
    for bs in (2, 3):
        with ca(flag):
            h = lin(torch.randn(bs, 4)); h.retain_grad(); v = h[:, :2]; v.retain_grad()
            (h.tanh().sum() + v.pow(2).sum()).backward()
        out += [h.grad, v.grad]
    return grads(lin) + out


def untraceable_subclass_weight(flag):
    # a wrapper subclass with no __tensor_flatten__ as a weight: Dynamo runs the captured
    # graph's calls eagerly, the grad accumulation into the weight included
    from torch.testing._internal.logging_tensor import LoggingTensor
    torch.manual_seed(0); w = LoggingTensor(torch.randn(4, 4), requires_grad=True)
    for bs in (3, 5):
        with ca(flag): (LoggingTensor(torch.randn(bs, 4)) @ w).sin().sum().backward()
    return [w.grad.elem if isinstance(w.grad, LoggingTensor) else w.grad]


# -- a torch.compile'd forward (flag), its backward under compiled autograd


def compiled_training(flag, model, opt, batches):
    fwd = torch.compile(model, backend="aot_eager") if flag else model
    for inputs in batches:
        opt.zero_grad()
        loss = fwd(*inputs)
        with ca(flag): loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8); self.ln = nn.LayerNorm(8); self.head = nn.Linear(8, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        return F.cross_entropy(self.head(self.ln(self.emb(x))).flatten(0, 1), x.flatten())


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__(); self.c1 = nn.Conv2d(3, 8, 3); self.bn = nn.BatchNorm2d(8); self.c2 = nn.Conv2d(8, 4, 3)

    def forward(self, x):
        return self.c2(F.relu(self.bn(self.c1(x)), inplace=True)).pow(2).mean()


class Attention(nn.Module):
    def __init__(self):
        super().__init__(); self.mha = nn.MultiheadAttention(8, 2, batch_first=True); self.ff = nn.Linear(8, 8)

    def forward(self, x, mask):
        return self.ff(self.mha(x, x, x, key_padding_mask=mask)[0]).sum()


def compiled_tied_adamw(flag):
    torch.manual_seed(0); m = TiedLM()
    return compiled_training(flag, m, torch.optim.AdamW(m.parameters(), lr=0.01),
                             [(torch.randint(0, 20, (2, length)),) for length in (5, 7, 9)])


def compiled_channels_last_bn(flag):
    torch.manual_seed(0); m = ConvBN().to(memory_format=torch.channels_last)
    batches = [(torch.randn(bs, 3, 10, 10).to(memory_format=torch.channels_last),) for bs in (2, 3, 4)]
    return compiled_training(flag, m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), batches)


def compiled_attention_padding_mask(flag):
    torch.manual_seed(0); m = Attention(); batches = []
    for length in (4, 6, 8):
        mask = torch.zeros(2, length, dtype=torch.bool); mask[1, -2:] = True
        batches.append((torch.randn(2, length, 8), mask))
    return compiled_training(flag, m, torch.optim.Adam(m.parameters(), lr=0.01), batches)


def compiled_module_hooks_every_layer(flag):
    # a full backward hook (and a pre-hook) on every module, the first layer's input without grad
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)); seen = []
    for i, layer in enumerate(m):
        layer.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
        layer.register_full_backward_hook(lambda mod, gi, go, i=i: seen.append(go[0].sum().detach() + i))
    fwd = torch.compile(m, backend="aot_eager") if flag else m
    for bs in (2, 3, 4):
        m.zero_grad()
        with ca(flag): fwd(torch.randn(bs, 4)).pow(2).sum().backward()
    return [p.grad.clone() for p in m.parameters()] + [torch.stack(seen)]



def index_put_accumulate(flag):
    # index_put with accumulate (repeated indices add up) and masked_scatter, into a zeros buffer
    torch.manual_seed(0); w = torch.randn(10, 4, requires_grad=True); idx = torch.tensor([1, 3, 3, 7])
    z = torch.zeros(10, 4).index_put((idx,), w[:4] * 2, accumulate=True)
    y = z.masked_scatter(z > 0, w.sigmoid())
    with ca(flag): (y * torch.arange(40.0).view(10, 4)).sum().backward()
    return [w.grad]


def vmap_rule_function(flag):
    # a custom Function with setup_context and generate_vmap_rule, applied under torch.vmap
    class Cube(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    torch.manual_seed(0); x = torch.randn(4, 3, requires_grad=True)
    with ca(flag): torch.vmap(Cube.apply)(x).sum().backward()
    return [x.grad]



def jit_script_submodule(flag):
    # a TorchScript submodule: after its profiling runs its backward is a DifferentiableGraphBackward
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return torch.tanh(self.lin(x)) * 2

    torch.manual_seed(0); block = torch.jit.script(Block()); head = nn.Linear(8, 1); out = []
    for _ in range(4):
        block.zero_grad(); head.zero_grad()
        with ca(flag): head(block(torch.randn(4, 8))).sum().backward()
        out += grads(block) + grads(head)
    return out


def embedding_bags(flag):
    # EmbeddingBag in sum mode with per_sample_weights beside one in max mode, one loss
    torch.manual_seed(0); bag_sum = nn.EmbeddingBag(20, 4, mode="sum"); bag_max = nn.EmbeddingBag(20, 4, mode="max")
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]); offsets = torch.tensor([0, 4]); psw = torch.rand(8, requires_grad=True)
    with ca(flag):
        (bag_sum(idx, offsets, per_sample_weights=psw).pow(2).sum() + bag_max(idx, offsets).pow(2).sum()).backward()
    return grads(bag_sum) + grads(bag_max) + [psw.grad]


def weight_norm_parametrization(flag):
    # nn.utils.parametrizations.weight_norm (_weight_norm_interface's backward), over batch sizes
    torch.manual_seed(0); m = nn.utils.parametrizations.weight_norm(nn.Linear(5, 3)); out = []
    for bs in (2, 4):
        m.zero_grad()
        with ca(flag): m(torch.randn(bs, 5)).pow(2).sum().backward()
        out += grads(m)
    return out


def bidirectional_gru(flag):
    # a two-layer bidirectional GRU over sequence lengths, its output and final state in the loss
    torch.manual_seed(0); gru = nn.GRU(4, 6, num_layers=2, bidirectional=True, batch_first=True); out = []
    for length in (5, 7):
        gru.zero_grad(); y, h = gru(torch.randn(2, length, 4))
        with ca(flag): (y.sum() + h.pow(2).sum()).backward()
        out += grads(gru)
    return out


def frozen_batchnorm(flag):
    # a BatchNorm in eval mode (running stats, as when fine-tuning a detector's backbone) after a
    # conv, over batch sizes (runtime_programs.norm_layers has the train-mode norms)
    torch.manual_seed(0); m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    m[1].eval(); out = []
    for bs in (2, 3):
        m.zero_grad()
        with ca(flag): m(torch.randn(bs, 3, 6, 6)).pow(2).sum().backward()
        out += grads(m)
    return out


PROGRAMS = [tied_weights, channels_last_grad_layout, accumulated_grad_is_the_same_tensor, zero_grad_keeps_grads,
            sparse_embedding, qat_fake_quant, orthogonal_parametrization, spectral_norm_and_pruning,
            attention_padding_mask, nonleaf_hook_in_place, functional_call, reentrant_checkpoint,
            mark_dirty_function, packed_lstm, backward_inputs_subset, grad_allow_unused_materialize,
            grad_scaler_bf16, retain_grad_intermediates, untraceable_subclass_weight, compiled_tied_adamw, compiled_channels_last_bn, compiled_attention_padding_mask,
            compiled_module_hooks_every_layer, index_put_accumulate, vmap_rule_function,
            jit_script_submodule, embedding_bags, weight_norm_parametrization, bidirectional_gru,
            frozen_batchnorm]


if __name__ == "__main__":
    sys.exit(report(PROGRAMS, "programs"))
