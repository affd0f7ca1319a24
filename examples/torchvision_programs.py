"""Detection-style training with torchvision's C++ ops, the backward under compiled
autograd: each program's grads must equal eager's.  torchvision 0.21.0 from PyPI is built
against stock torch 2.6.0's headers, and its ``roi_align``, ``roi_pool``,
``ps_roi_align`` and ``deform_conv2d`` backwards are C++ autograd Functions not marked
``is_traceable``: what a prebuilt extension looks like to compiled autograd.  The
programs: a conv backbone with a RoIAlign box head, RoIPool and PSRoIAlign together, a
deformable convolution whose offsets come from a conv, RoIAlign inside a
``torch.compile``d forward, and a Faster R-CNN (MobileNetV3-FPN, random weights, 128-pixel
images) training step.  Then three of torchvision's classifiers, random weights, a training
step each: EfficientNet-B0 and ConvNeXt-T (stochastic depth: a Bernoulli mask made in place
in the forward) and MobileNetV3-S (in-place hard-swish, squeeze-excitation).
Each runs over two batch or image sizes.

Prints one line per program (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  The patched wheel passes all eight, each in two captures (the first is static,
as stock's, and the second size recaptures with the changed sizes dynamic): the capture
records each such Function's backward as one opaque call that runs the live node.  Stock 2.6.0 fails
six: four C++-op programs (all but the compiled forward: "Attempting to trace a
potentially unsafe C++ autograd function"), and it gets EfficientNet-B0's and ConvNeXt-T's
grads wrong.  Stock 2.7.0 with torchvision 0.22.0 fails the RoIPool one (an internal
assert on its non-differentiable output) and EfficientNet-B0 (an internal assert,
``!has_symbolic_sizes_strides_``, at the second size), and recaptures at each new size.

    python examples/torchvision_programs.py [aot_eager|inductor]
"""

import sys
from pathlib import Path

import torch
import torch.nn as nn
from torchvision import models, ops
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_fpn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import BACKEND, ca, grads, report  # noqa: E402


def rois(n, size):
    """``n`` boxes (batch index, x1, y1, x2, y2) inside a ``size`` x ``size`` image pair."""
    g = torch.Generator().manual_seed(n)
    xy = torch.rand(n, 2, generator=g) * (size / 2)
    wh = torch.rand(n, 2, generator=g) * (size / 2) + 1
    return torch.cat([torch.randint(0, 2, (n, 1), generator=g).float(), xy, xy + wh], 1)


def roi_align_box_head(flag):
    torch.manual_seed(0); backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()); head = nn.Linear(8 * 7 * 7, 4)
    out = []
    for n, size in ((5, 16), (9, 24)):
        backbone.zero_grad(set_to_none=True); head.zero_grad(set_to_none=True)
        r = ops.roi_align(backbone(torch.randn(2, 3, size, size)), rois(n, size), (7, 7), 1.0, 2, aligned=True)
        with ca(flag): head(r.flatten(1)).pow(2).sum().backward()
        out += grads(backbone) + grads(head)
    return out


def roi_pool_and_ps_roi_align(flag):
    torch.manual_seed(0); conv = nn.Conv2d(3, 8, 3, padding=1); out = []
    for n in (4, 6):
        conv.zero_grad(set_to_none=True)
        f = conv(torch.randn(2, 3, 16, 16))
        pooled = ops.roi_pool(f, rois(n, 16), (2, 2))
        aligned = ops.ps_roi_align(f, rois(n, 16), (2, 2), sampling_ratio=2)
        with ca(flag): (pooled.sum() + aligned.pow(2).sum()).backward()
        out += grads(conv)
    return out


def deformable_conv(flag):
    torch.manual_seed(0); offsets = nn.Conv2d(4, 2 * 3 * 3, 3, padding=1); conv = ops.DeformConv2d(4, 6, 3, padding=1)
    out = []
    for size in (8, 10):
        offsets.zero_grad(set_to_none=True); conv.zero_grad(set_to_none=True)
        x = torch.randn(2, 4, size, size, requires_grad=True)
        with ca(flag): conv(x, offsets(x)).pow(2).sum().backward()
        out += grads(offsets) + grads(conv) + [x.grad.clone()]
    return out


def compiled_roi_align(flag):
    torch.manual_seed(0); conv = nn.Conv2d(3, 4, 3, padding=1); out = []
    f = torch.compile(lambda x, boxes: ops.roi_align(conv(x), boxes, (3, 3), 1.0, 2).sum(), backend=BACKEND)
    for n in (4, 6):
        conv.zero_grad(set_to_none=True)
        with ca(flag): f(torch.randn(2, 3, 12, 12), rois(n, 12)).backward()
        out += grads(conv)
    return out


def faster_rcnn_step(flag):
    torch.manual_seed(0)
    model = fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None, num_classes=3, min_size=128,
                                              max_size=128)
    model.train()
    out = []
    for n in (1, 2):
        model.zero_grad(set_to_none=True)
        torch.manual_seed(n)
        images = [torch.rand(3, 128, 128) for _ in range(n)]
        targets = [{"boxes": torch.tensor([[10.0, 20.0, 70.0, 90.0], [30.0, 30.0, 100.0, 120.0]]),
                    "labels": torch.tensor([1, 2])} for _ in range(n)]
        losses = model(images, targets)
        with ca(flag): sum(losses.values()).backward()
        out += grads(model.roi_heads) + grads(model.rpn) + [p.grad.clone() for p in list(model.backbone.parameters())[-2:]]
    return out


def classifier(name):
    """A training step of torchvision's ``name`` (random weights, 5 classes) at batch 4 on 64-pixel
    images, then batch 6 on 96-pixel ones, the grads cleared between them."""
    def program(flag):
        torch.manual_seed(0)
        model = getattr(models, name)(num_classes=5).train()
        out = []
        for bs, size in ((4, 64), (6, 96)):
            model.zero_grad(set_to_none=True)
            torch.manual_seed(bs); x = torch.randn(bs, 3, size, size)
            with ca(flag): nn.functional.cross_entropy(model(x), torch.arange(bs) % 5).backward()
            out += grads(model)
        return out

    program.__name__ = name
    return program


PROGRAMS = [roi_align_box_head, roi_pool_and_ps_roi_align, deformable_conv, compiled_roi_align, faster_rcnn_step,
            *map(classifier, ("efficientnet_b0", "convnext_tiny", "mobilenet_v3_small"))]

if __name__ == "__main__":
    sys.exit(report(PROGRAMS, "programs"))
