"""Runs one suite of the pinned tree's ``benchmarks/dynamo`` harness, unchanged, with nothing
downloaded: ``python models_driver.py HARNESS_DIR SUITE [harness args...]``.

Run by the Python of the venv under test (stock 2.6, the stack, stock 2.7), not by the tools'
Python.  SUITE is ``huggingface`` or ``timm_models``.  The HF suite builds its models from
default configs (no download).  The timm suite asks for pretrained weights; a hub download is
impossible here and beside the point (the harness compares a compiled run with eager on the same
weights), so ``timm.create_model`` is called with ``pretrained=False``: the only change, made
before the harness imports it.
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


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in ("huggingface", "timm_models"):
        sys.exit("usage: models_driver.py HARNESS_DIR {huggingface,timm_models} [harness args...]")
    harness_dir, suite, rest = argv[0], argv[1], argv[2:]
    if suite == "timm_models":
        _no_pretrained_weights()
    sys.path.insert(0, harness_dir)
    sys.argv = [f"{harness_dir}/{suite}.py", *rest]
    runpy.run_path(f"{harness_dir}/{suite}.py", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
