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
"""

from __future__ import annotations

import runpy
import sys


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


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in ("huggingface", "timm_models"):
        sys.exit("usage: models_driver.py HARNESS_DIR {huggingface,timm_models} [harness args...]")
    harness_dir, suite, rest = argv[0], argv[1], argv[2:]
    if suite == "timm_models":
        _no_pretrained_weights()
    else:
        _no_hub_configs()
    sys.path.insert(0, harness_dir)
    sys.argv = [f"{harness_dir}/{suite}.py", *rest]
    runpy.run_path(f"{harness_dir}/{suite}.py", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
