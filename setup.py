"""Install the functional-compiled-autograd tooling (console scripts).

`pip install -e .` makes the console scripts below available (`fca-apply`,
`fca-build-wheel`, ...); the same tools run as `python tools/<name>.py` from the
repo root.  The tooling runs on CPython 3.11+ (the pinned test venvs'
numpy 2.4 needs it); the wheels it builds are for CPython 3.9-3.13.
"""

from setuptools import find_packages, setup

setup(
    name="functional-compiled-autograd-tools",
    version="0.1.0",
    description="Patch stack + tooling that backports functional autograd into compiled autograd of PyTorch 2.6.0",
    python_requires=">=3.11",
    packages=find_packages(include=["tools", "tools.*"]),
    extras_require={"bench": []},  # kept for old command lines: matplotlib is a plain requirement now
    install_requires=[
        "filelock",
        "matplotlib",  # the benchmark plots, which the tests draw
        "pytest>=8.3,<8.4",
        "expecttest",
        "sympy",
        "pyyaml",
        "typing_extensions",
    ],
    entry_points={
        "console_scripts": [
            "fca-apply=tools.apply_patches:entry",
            "fca-export=tools.export_patches:entry",
            "fca-vendor=tools.vendor:entry",
            "fca-squash=tools.squash:entry",
            "fca-fetch-pin=tools.fetch_pinned_source:entry",
            "fca-overlay=tools.overlay:entry",
            "fca-build-torch=tools.build_torch:entry",
            "fca-bench=tools.bench:entry",
            "fca-build-wheel=tools.build_wheel:entry",
            "fca-upstream-tests=tools.run_upstream_tests:entry",
            "fca-lint=tools.lint_stack:entry",
            "fca-rebase=tools.rebase_stack:entry",
            "fca-check-prefixes=tools.check_prefixes:entry",
            "fca-gpu-check=tools.gpu_check:entry",
        ]
    },
)
