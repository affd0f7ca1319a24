"""Runs one suite of the pinned tree's ``benchmarks/dynamo`` harness, unchanged, with nothing
downloaded: ``python models_driver.py HARNESS_DIR SUITE [harness args...]``.

Run by the Python of the venv under test (stock 2.6, the stack, stock 2.7), not by the tools'
Python.  SUITE is ``huggingface`` or ``timm_models``.  Two changes, made before the harness
imports the libraries, and nothing else:

- timm: the suite asks for pretrained weights; a hub download is impossible here and beside the
  point (the harness compares a compiled run with eager on the same weights), so
  ``timm.create_model`` is called with ``pretrained=False``.
- HF: the suite builds its models from default configs, except a few "extra" models whose config
  it reads from the hub at import (``AutoConfig.from_pretrained``).  They get the config built
  from transformers' own classes instead (:data:`HUB_CONFIGS`): for ``t5-small`` and
  ``distilgpt2`` that is the hub's architecture (T5Config's defaults are t5-small's; distilgpt2
  is GPT-2 with 6 layers); the others are the config class's defaults, not the hub's, and only
  exist so that the harness imports (the default model set does not run them).

``--fca-sizes B[:S],B[:S],...`` (first in the harness args) runs the sizes experiment instead of the
harness's own: the harness loads the model at its ``--batch-size`` as usual, then one training step
(the harness's own ``model_iter_fn``) per size, in one process: batch B and, for an HF model,
sequence length S (the suite's default where left out); the inputs of each size come from the
suite's own ``load_model``.  The forward is compiled the harness's way (``--backend``, dynamic
shapes as the flags say) and the backward runs under compiled autograd with
``torch.compile(gm, backend=...)`` at its defaults, as a user writes it.  After each step the
CA captures and compiles and Dynamo's graph count go, as JSON, to the file ``FCA_SIZES_OUT`` names.
It counts; the grads are compared with eager's by the harness's accuracy mode, not here.

``--fca-capture N`` (first in the harness args) times compiled autograd's capture instead: N
training steps (the harness's own ``model_iter_fn``, its forward compiled the harness's way) at the
harness's ``--batch-size``, the capture cache cleared before each step after the first, so that
every backward is captured anew.  A step's capture is the time from its ``torch.autograd.backward``
call to the moment the captured graph reaches the compiler (the identity: nothing after it is
timed).  The first step's is the first capture in the process.  The steps go, as JSON, to the file
``FCA_SIZES_OUT`` names.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import sys
import time


def _no_pretrained_weights() -> None:
    import timm
    import timm.models

    create = timm.models.create_model

    def create_model(*args, **kwargs):
        kwargs["pretrained"] = False
        return create(*args, **kwargs)

    timm.create_model = timm.models.create_model = create_model


# hub name -> (transformers config class, its arguments)
HUB_CONFIGS = {
    "t5-small": ("T5Config", {}),
    "distilgpt2": ("GPT2Config", {"n_layer": 6}),
    "allenai/longformer-base-4096": ("LongformerConfig", {}),
    "google/fnet-base": ("FNetConfig", {}),
    "YituTech/conv-bert-base": ("ConvBertConfig", {}),
    "camembert-base": ("CamembertConfig", {}),
}


def _no_hub_configs() -> None:
    import transformers

    def from_pretrained(name, *args, **kwargs):
        if name not in HUB_CONFIGS:
            raise OSError(f"models_driver: no local config for {name!r} (nothing is downloaded)")
        cls, kwargs = HUB_CONFIGS[name]
        return getattr(transformers, cls)(**kwargs)

    transformers.AutoConfig.from_pretrained = staticmethod(from_pretrained)


def parse_sizes(text: str) -> list[tuple[int, int | None]]:
    """``"2,4:256"`` -> ``[(2, None), (4, 256)]``: batch sizes, each with an optional sequence length."""
    sizes = []
    for item in text.split(","):
        batch, _, seq = item.partition(":")
        if not batch.isdigit() or (seq and not seq.isdigit()):
            sys.exit(f"models_driver: --fca-sizes takes B[:S],B[:S],... (batch, sequence length), not {text!r}")
        sizes.append((int(batch), int(seq) if seq else None))
    return sizes


def _first_shape(inputs) -> list[int]:
    import torch

    values = inputs.values() if isinstance(inputs, dict) else inputs
    for v in values:
        if isinstance(v, torch.Tensor):
            return list(v.shape)
    return []


def _step_error(e: Exception) -> str:
    """A failed step's result: the exception's type and first line, at most 200 characters."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]


def _sizes_experiment(suite_globals: dict, sizes: list[tuple[int, int | None]], out: str):
    """A ``run_one_model`` for the harness's runner: one training step per size, counts after each."""
    seq_override: list[int | None] = [sizes[0][1]]
    default_seq = suite_globals.get("get_sequence_length")
    if default_seq is not None:  # HF: the suite's inputs read their sequence length from this function
        suite_globals["get_sequence_length"] = (
            lambda model_cls, model_name: seq_override[0] or default_seq(model_cls, model_name))

    def run_one_model(self, name, model, example_inputs, optimize_ctx, experiment, explain=False, tag=None):
        import torch
        from torch._dynamo.utils import counters

        fn = optimize_ctx(self.model_iter_fn)

        backend = torch._dynamo.lookup_backend(self.args.backend)

        def counted(gm, example_inputs):  # counted as the harness counts its CA compiles
            counters["compiled_autograd"]["compiles"] += 1
            return backend(gm, example_inputs)

        def compiler(gm):
            return torch.compile(gm, backend=counted, fullgraph=self.args.nopython)

        steps = []
        for i, (batch, seq) in enumerate(sizes):
            seq_override[0] = seq
            inputs = example_inputs if i == 0 else self.load_model("cpu", name, batch_size=batch)[3]
            try:
                with self.pick_grad(name, True), torch._dynamo.compiled_autograd._enable(compiler):
                    fn(model, inputs, collect_outputs=False)
                error = None
            except Exception as e:  # the step's failure is its result; later sizes still run
                error = _step_error(e)
            steps.append({"batch": batch, "seq": seq, "shape": _first_shape(inputs), "error": error,
                          "ca_captures": counters["compiled_autograd"]["captures"],
                          "ca_compiles": counters["compiled_autograd"]["compiles"],
                          "dynamo_graphs": counters["stats"]["unique_graphs"]})
            print(f"fca sizes: {json.dumps(steps[-1])}", flush=True)
        with open(out, "w") as f:
            json.dump(steps, f)
        return "ok"

    return run_one_model


def _capture_experiment(repeats: int, out: str):
    """A ``run_one_model`` for the harness's runner: ``repeats`` training steps, each backward
    captured anew, its capture timed (see the module doc)."""

    def run_one_model(self, name, model, example_inputs, optimize_ctx, experiment, explain=False, tag=None):
        import torch
        from torch._dynamo.utils import counters

        fn = optimize_ctx(self.model_iter_fn)
        started: list[float] = []
        reached: list[float] = []
        backward = torch.autograd.backward

        # Tensor.backward calls it.  Dynamo must not compile it as a frame of its own (the harness's
        # step runs under Dynamo): that compile would be timed as part of the first capture.
        @torch._dynamo.disable
        def timed_backward(*args, **kwargs):
            started.append(time.perf_counter())
            return backward(*args, **kwargs)

        def compiler(gm):
            reached.append(time.perf_counter())
            return gm

        steps = []
        torch.autograd.backward = timed_backward
        try:
            for i in range(repeats):
                if i:
                    torch._C._dynamo.compiled_autograd.clear_cache()
                gc.collect()  # garbage of earlier steps is not this step's cost
                started.clear()
                reached.clear()
                try:
                    with self.pick_grad(name, True), torch._dynamo.compiled_autograd._enable(compiler):
                        fn(model, example_inputs, collect_outputs=False)
                    error = None if started and reached else "no backward reached the compiler"
                except Exception as e:  # the step's failure is its result
                    error = _step_error(e)
                steps.append({"step": i, "error": error,
                              "capture_s": None if error else reached[0] - started[0],
                              "ca_captures": counters["compiled_autograd"]["captures"]})
                print(f"fca capture: {json.dumps(steps[-1])}", flush=True)
        finally:
            torch.autograd.backward = backward
        with open(out, "w") as f:
            json.dump(steps, f)
        return "ok"

    return run_one_model


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in ("huggingface", "timm_models"):
        sys.exit("usage: models_driver.py HARNESS_DIR {huggingface,timm_models} [harness args...]")
    harness_dir, suite, rest = argv[0], argv[1], argv[2:]
    sizes = repeats = None
    if rest[:1] == ["--fca-sizes"]:
        if len(rest) < 2 or not os.environ.get("FCA_SIZES_OUT"):
            sys.exit("models_driver: --fca-sizes needs its sizes and FCA_SIZES_OUT (the JSON file to write)")
        sizes, rest = parse_sizes(rest[1]), rest[2:]
    elif rest[:1] == ["--fca-capture"]:
        if len(rest) < 2 or not rest[1].isdigit() or int(rest[1]) < 1 or not os.environ.get("FCA_SIZES_OUT"):
            sys.exit("models_driver: --fca-capture needs a number of steps (1 or more) and FCA_SIZES_OUT "
                     "(the JSON file to write)")
        repeats, rest = int(rest[1]), rest[2:]
    if suite == "timm_models":
        _no_pretrained_weights()
    else:
        _no_hub_configs()
    sys.path.insert(0, harness_dir)
    sys.argv = [f"{harness_dir}/{suite}.py", *rest]
    if sizes is None and repeats is None:
        runpy.run_path(f"{harness_dir}/{suite}.py", run_name="__main__")
        return
    # the suite as a module (its main not run yet), so that its runner and inputs can be adapted
    names = runpy.run_path(f"{harness_dir}/{suite}.py", run_name="fca_models_suite")
    entry = names["huggingface_main" if suite == "huggingface" else "timm_main"]
    import common  # the harness's own module, as the suite imported it

    out = os.environ["FCA_SIZES_OUT"]
    common.BenchmarkRunner.run_one_model = (_sizes_experiment(entry.__globals__, sizes, out) if sizes is not None
                                            else _capture_experiment(repeats, out))
    entry()


if __name__ == "__main__":
    main(sys.argv[1:])
