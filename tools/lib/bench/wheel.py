"""``wheel``: the patched wheel's build time as ``build_wheel.py`` runs for a user (cold, and with the
overlay objects built), its size against the stock wheel's, and ``import torch`` time against stock,
paired."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from .. import stock_wheel, ui
from ..overlay.venv import install_wheel, venv_python
from .core import SETTLE_S, Setup, ensure_stock_venv, timed, timing_table, tool

UNSET = ("LD_PRELOAD", "PYTHONPATH")  # what would change the import being timed


def bench_wheel(setup: Setup, reps: int, pairs: int) -> str:
    """The patched wheel: build time cold (new overlay dir and build venv from the wheelhouse, no ccache) and
    with the overlay objects built; its size against the stock wheel's; ``import torch`` patched vs stock,
    paired (alternating fresh interpreters, the order flipped every pair)."""
    sh, cache = setup.sh, setup.cache
    timings: dict[str, list[float]] = {}

    def build(label: str, out: Path, *extra: str) -> Path:
        timed(timings, label, lambda: tool(sh, "build_wheel", "-o", out, *extra))
        return next(out.glob("torch-2.6.0+fca.*.whl"))

    def import_torch(python: str) -> None:
        if sh.start(python, "-c", "import torch", output=work / "import.log", unset=UNSET).wait() != 0:
            raise ui.OperationFailed(f"`{python} -c 'import torch'` failed: {(work / 'import.log').read_text()[-500:]}")

    with tempfile.TemporaryDirectory(prefix="fca-bench-wheel-") as tmp:
        work = Path(tmp)
        for i in range(reps):
            ui.info(f"[{i + 1}/{reps}] wheel benchmark: cold build")
            ov = work / f"ov{i}"
            build("cold (new build venv from the wheelhouse, compile without ccache, link, wheel)", work / f"a{i}",
                  "--overlay-dir", str(ov), "--no-ccache")
            whl = build("overlay objects built (relink, wheel)", work / f"b{i}", "--overlay-dir", str(ov), "--no-ccache")
            shutil.rmtree(ov)
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        stock = stock_wheel.find(cache / "wheels", version)
        sizes = (whl.stat().st_size, stock.stat().st_size if stock else 0)
        ensure_stock_venv(setup)
        wheel_venv = cache / "venvs" / "wheel"
        install_wheel(wheel_venv, whl, cache, sh)
        pythons = {"stock": str(venv_python(setup.venv("stock"))), "wheel": str(venv_python(wheel_venv))}
        imports: dict[str, list[float]] = {"stock": [], "wheel": []}
        for kind in pythons:  # warm the page cache
            import_torch(pythons[kind])
        for i in range(pairs):
            for kind in (("stock", "wheel") if i % 2 == 0 else ("wheel", "stock")):
                time.sleep(SETTLE_S)
                timed(imports, kind, lambda: import_torch(pythons[kind]))
    st, wh = statistics.median(imports["stock"]), statistics.median(imports["wheel"])
    lines = [
        timing_table(f"wheel build ({reps} reps, wall)", timings, 1),
        "",
        "| wheel | bytes | vs stock |",
        "|---|---:|---:|",
        f"| {whl.name} | {sizes[0]:,} | {sizes[0] / sizes[1]:.4f} |" if sizes[1] else f"| {whl.name} | {sizes[0]:,} | |",
        "",
        f"| `python -c 'import torch'` ({pairs} pairs, alternating) | median | min | max |",
        "|---|---:|---:|---:|",
        f"| stock torch==2.6.0 | {st:.3f} s | {min(imports['stock']):.3f} s | {max(imports['stock']):.3f} s |",
        f"| patched wheel | {wh:.3f} s | {min(imports['wheel']):.3f} s | {max(imports['wheel']):.3f} s |",
        f"| patched / stock | {wh / st:.3f} | | |",
    ]
    return "\n".join(lines)
