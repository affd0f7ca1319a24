"""Aten ops' backwards under compiled autograd over changing batch sizes: each group of
ops runs at batch sizes 3, 5 and 7 with its backward under compiled autograd, and its
grads must equal eager's.  A new batch size makes compiled autograd run each backward
node's formula on symbolic sizes, where an op whose kernel or meta takes only ints
fails (or, on stock 2.6 at its recapture, can give wrong grads).

The groups: linear algebra (svd, qr, inv, cholesky, solve, slogdet/det, eigh, pinv,
matrix_exp, lu), einsum, cdist, grid_sample, affine_grid 2d/3d, padding modes,
embedding_bag, stft, fold/unfold/pixel_shuffle, losses, activations, norms, pools
(fractional max-pool included), normalization layers, scaled-dot-product attention,
special functions, strided views, RNN cells, CTC, weight norm, learnable fake
quantization, masked softmax, shrink activations.

Prints one line per group (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  The patched wheel passes all 46 groups, each in one capture but CTC (a recapture
per new input length) and the RNN cells (three modules).  Stock torch 2.6.0 passes 22:
the others raise at the first new batch size (most of linear algebra, stft, the pools,
the losses, ...); affine_grid's grads at the first size are wrong there too.  Stock
2.7.0 fails the four groups that the stack's P16 fixed (affine_grid 2d and 3d, the
shrinks, the fractional max-pool); the other groups were not run on it.

    python examples/op_sweep.py [aot_eager|inductor] [GROUP ...]
"""

import sys

import torch
import torch.nn.functional as F

from real_programs import ca, report  # the same backend argument, comparison and report

r = torch.randn
OPS = {
 "linalg_svd": lambda n: (lambda x: torch.linalg.svd(x, full_matrices=False)[1].sum(), [r(n, 4, 3)]),
 "linalg_qr": lambda n: (lambda x: torch.linalg.qr(x)[1].abs().sum(), [r(n, 4, 3)]),
 "linalg_inv": lambda n: (lambda x: torch.linalg.inv(x + 4 * torch.eye(3)).sum(), [r(n, 3, 3)]),
 "cholesky": lambda n: (lambda x: torch.linalg.cholesky(x @ x.mT + torch.eye(3)).sum(), [r(n, 3, 3)]),
 "linalg_solve": lambda n: (lambda a, b: torch.linalg.solve(a + 4 * torch.eye(3), b).sum(), [r(n, 3, 3), r(n, 3, 2)]),
 "det_slogdet": lambda n: (lambda x: torch.linalg.slogdet(x + 3 * torch.eye(3))[1].sum() + torch.det(x).sum(), [r(n, 3, 3)]),
 "eigh": lambda n: (lambda x: torch.linalg.eigh(x + x.mT)[0].sum(), [r(n, 3, 3)]),
 "pinv": lambda n: (lambda x: torch.linalg.pinv(x).sum(), [r(n, 4, 3)]),
 "matrix_exp": lambda n: (lambda x: torch.linalg.matrix_exp(x * 0.1).sum(), [r(n, 3, 3)]),
 "lu_factor_solve": lambda n: (lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a + 4 * torch.eye(3)), b).sum(), [r(n, 3, 3), r(n, 3, 2)]),
 "einsum": lambda n: (lambda a, b: torch.einsum("bij,bjk->bik", a, b).pow(2).sum(), [r(n, 3, 4), r(n, 4, 2)]),
 "cdist": lambda n: (lambda a, b: torch.cdist(a, b).sum(), [r(n, 5, 3), r(n, 4, 3)]),
 "grid_sample": lambda n: (lambda x, g: F.grid_sample(x, g.tanh(), align_corners=False).sum(), [r(n, 2, 6, 6), r(n, 4, 4, 2)]),
 "affine_grid": lambda n: (lambda t: F.affine_grid(t, [n, 1, 5, 5], align_corners=False).pow(2).sum(), [r(n, 2, 3)]),
 "pad_modes": lambda n: (lambda x: sum(F.pad(x, (1, 2, 2, 1), mode=m).pow(2).sum() for m in ("reflect", "replicate", "circular")), [r(n, 2, 5, 5)]),
 "embedding_bag": lambda n: (lambda w: F.embedding_bag(torch.arange(2 * n) % 10, w, torch.arange(0, 2 * n, 2), mode="mean").pow(2).sum(), [r(10, 4)]),
 "stft": lambda n: (lambda x: torch.stft(x, 16, return_complex=True, window=torch.hann_window(16)).abs().sum(), [r(n, 64)]),
 "fold_unfold_pixelshuffle": lambda n: (lambda x: F.fold(F.unfold(x, 2, stride=2), (4, 4), 2, stride=2).sum() + F.pixel_shuffle(x, 2).pow(2).sum(), [r(n, 4, 4, 4)]),
 "kl_nll_glu": lambda n: (lambda x: F.kl_div(F.log_softmax(x, -1), F.softmax(x.detach() * 2, -1), reduction="batchmean") + F.nll_loss(F.log_softmax(F.glu(x, -1), -1), torch.zeros(n, dtype=torch.long)), [r(n, 6)]),
 "nll2d_crossent_weights": lambda n: (lambda x: F.cross_entropy(x, torch.zeros(n, 3, 3, dtype=torch.long), weight=torch.tensor([1., 2., 3.])), [r(n, 3, 3, 3)]),
 "cumprod_lerp_polar": lambda n: (lambda a, b: a.cumprod(1).sum() + torch.lerp(a, b, 0.3).sum() + torch.polar(a.abs() + 1, b).abs().sum(), [r(n, 4), r(n, 4)]),
 "repeat_interleave_diag": lambda n: (lambda x: x.repeat_interleave(2, dim=0).sum() + torch.diag_embed(x).pow(2).sum() + x.diagonal(dim1=0, dim2=1).sum(), [r(n, 4)]),
 "split_unbind_stack": lambda n: (lambda x: sum(t.pow(2).sum() for t in x.split([1, n - 1])) + torch.stack(x.unbind(1), 0).exp().sum() + sum(c.sin().sum() for c in x.chunk(2, 1)), [r(n, 4)]),
 "index_ops": lambda n: (lambda x: x.index_select(0, torch.tensor([0, n - 1])).sum() + x.narrow(1, 1, 2).pow(2).sum() + x.masked_fill(x > 0, 0.5).sum() + x.take(torch.tensor([0, 3])).sum(), [r(n, 4)]),
 "sort_topk_kthvalue": lambda n: (lambda x: x.sort(1)[0][:, :2].sum() + x.kthvalue(2, 1)[0].sum() + x.max(1)[0].sum() + x.median(), [r(n, 5)]),
 "norms": lambda n: (lambda x: torch.linalg.vector_norm(x, 3, dim=1).sum() + torch.linalg.matrix_norm(x.view(n, 2, 2)).sum() + x.norm(p="fro"), [r(n, 4)]),
 "conv3d_transpose1d": lambda n: (lambda x, y: F.conv3d(x, torch.ones(2, 1, 2, 2, 2)).sum() + F.conv_transpose1d(y, torch.ones(2, 1, 3), stride=2).pow(2).sum(), [r(n, 1, 4, 4, 4), r(n, 2, 5)]),
 "pools": lambda n: (lambda x: F.avg_pool2d(x, 2, ceil_mode=True).sum() + F.max_pool3d(x.unsqueeze(1), 2).sum() + F.adaptive_max_pool2d(x, 3).sum() + F.lp_pool2d(x.abs() + 1, 2, 2).sum() + F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=torch.full((n, 4, 2), 0.5)).sum(), [r(n, 4, 6, 6)]),
 "norm_layers": lambda n: (lambda x: F.instance_norm(x).pow(2).sum() + F.local_response_norm(x, 2).sum() + F.batch_norm(x, None, None, training=True).pow(3).sum() + F.group_norm(x, 2).pow(2).sum() + F.layer_norm(x, (5, 5)).pow(3).sum(), [r(n, 4, 5, 5)]),
 "sdpa_causal_mask": lambda n: (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum() + F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(5, 5, dtype=torch.bool).tril()).pow(2).sum(), [r(n, 2, 5, 4), r(n, 2, 5, 4), r(n, 2, 5, 4)]),
 "losses": lambda n: (lambda x, y: F.smooth_l1_loss(x, y) + F.huber_loss(x, y) + F.binary_cross_entropy_with_logits(x, y.sigmoid(), pos_weight=torch.ones(4)) + F.margin_ranking_loss(x[:, 0], y[:, 0], torch.ones(n)) + F.triplet_margin_loss(x, y, x.flip(0)) + F.cosine_embedding_loss(x, y, torch.ones(n)) + F.poisson_nll_loss(x, y.abs()) + F.gaussian_nll_loss(x, y, torch.ones(n, 4)) + F.multilabel_soft_margin_loss(x, (y > 0).float()) + F.multi_margin_loss(x, torch.zeros(n, dtype=torch.long)), [r(n, 4), r(n, 4)]),
 "activations": lambda n: (lambda x: sum(f(x).sum() for f in (F.elu, F.selu, F.celu, F.softplus, F.mish, F.hardswish, F.hardsigmoid, F.rrelu, F.logsigmoid, F.softsign, F.tanhshrink, F.hardtanh, F.relu6, lambda t: F.prelu(t, torch.tensor([0.2])), lambda t: F.threshold(t, 0.1, 0.0), lambda t: F.gumbel_softmax(t, hard=False, tau=1.0) * 0, F.silu, lambda t: F.gelu(t, approximate="tanh"))), [r(n, 4)]),
 "special_math": lambda n: (lambda x: (torch.special.erfinv(x.tanh() * 0.9) + torch.lgamma(x.abs() + 1) + torch.digamma(x.abs() + 1) + torch.special.i0(x) + torch.atan2(x, x + 2) + torch.logit(x.sigmoid() * 0.9 + 0.05) + torch.xlogy(x.abs(), x.abs() + 1) + torch.hypot(x, x + 1) + torch.nan_to_num(x.log()) * 0 + torch.logcumsumexp(x, 1) + torch.logaddexp(x, x * 2) + torch.sinc(x) + torch.frexp(x)[0] * 0 + torch.clamp(x, -0.5, 0.5) + torch.fmod(x, 0.7) + torch.remainder(x, 0.7)).sum(), [r(n, 4)]),
 "as_strided_unfold_expand": lambda n: (lambda x: x.as_strided((n, 2), (4, 1)).pow(2).sum() + x.unfold(1, 2, 1).exp().sum() + x[:, :1].expand(n, 4).pow(2).sum() + x.flip(1).roll(1, 0).cumsum(0).sum() + x.t().contiguous().view(-1).cummax(0)[0].sum(), [r(n, 4)]),
 "rnn_cells": lambda n: (lambda x: torch.nn.LSTMCell(4, 3)(x)[0].sum() + torch.nn.GRUCell(4, 3)(x).sum() + torch.nn.RNN(4, 3, nonlinearity="relu")(x.unsqueeze(1))[0].sum(), [r(n, 4)]),
 "weight_norm_iface": lambda n: (lambda v, g: torch._weight_norm(v, g, 0).pow(2).sum(), [r(n, 4), r(n, 1)]),
 "ctc": lambda n: (lambda lp: F.ctc_loss(lp.log_softmax(-1), torch.tensor([[1, 2, 3]] * 2), torch.full((2,), n), torch.full((2,), 3)), [r(n, 2, 5)]),
 "multilabel_margin": lambda n: (lambda x: F.multilabel_margin_loss(x, torch.tensor([[1, 0, -1, 0]] * n)), [r(n, 4)]),
 "multi_margin": lambda n: (lambda x: F.multi_margin_loss(x, torch.zeros(n, dtype=torch.long), p=1, margin=0.5, weight=torch.ones(4)), [r(n, 4)]),
 "fmp3d": lambda n: (lambda x: F.fractional_max_pool3d(x, 2, output_size=2, _random_samples=torch.full((n, 2, 3), 0.5)).sum(), [r(n, 2, 6, 6, 6)]),
 "fmp2d": lambda n: (lambda x: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=torch.full((n, 4, 2), 0.5)).sum(), [r(n, 4, 6, 6)]),
 "lfq_tensor": lambda n: (lambda x, s, z: torch._fake_quantize_learnable_per_tensor_affine(x, s.abs() + 0.1, z, 0, 255, 1.0).sum(), [r(n, 4), r(1), torch.zeros(1)]),
 "lfq_channel": lambda n: (lambda x, s, z: torch._fake_quantize_learnable_per_channel_affine(x, s.abs() + 0.1, z, 1, 0, 255, 1.0).sum(), [r(n, 4), r(4), torch.zeros(4)]),
 "masked_softmax": lambda n: (lambda x: torch._masked_softmax(x, torch.zeros(n, 4, dtype=torch.bool), 1, 0).pow(2).sum(), [r(n, 4)]),
 "affine_grid_5d": lambda n: (lambda t: F.affine_grid(t, [n, 1, 3, 4, 5], align_corners=True).pow(2).sum(), [r(n, 3, 4)]),
 "shrinks": lambda n: (lambda x: F.hardshrink(x, 0.3).pow(2).sum() + F.softshrink(x, 0.3).pow(2).sum(), [r(n, 4)]),
}


def group(name):
    """The group as a program: its inputs' grads at batch sizes 3, 5 and 7, eager or with
    the backward under compiled autograd (``flag``)."""

    def program(flag):
        grads = []
        for n in (3, 5, 7):
            torch.manual_seed(n)
            fn, inputs = OPS[name](n)
            inputs = [t.requires_grad_() for t in inputs]
            torch.manual_seed(0)
            with ca(flag):
                fn(*inputs).backward()
            grads += [t.grad for t in inputs]
        return grads

    program.__name__ = name
    return program


if __name__ == "__main__":
    sys.exit(report([group(name) for name in sys.argv[2:] or OPS], "groups"))
