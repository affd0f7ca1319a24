"""Install the functional-compiled-autograd tooling (console scripts).

`pip install -e .` makes the console scripts below available (`fca-apply`,
`fca-build-wheel`, ...); the same tools run as `python tools/<name>.py` from the
repo root.  The tooling runs on CPython 3.11+ (the pinned test venvs'
numpy 2.4 needs it); the wheels it builds are for CPython 3.9-3.13.
"""

from setuptools import find_packages, setup

# The repo's tools/ folder installs as the import package `fca_tools`: a bare `tools` would shadow
# (or be shadowed by) PyTorch's own `tools` package in a venv that also serves a PyTorch checkout.
# The code imports itself relatively, so it runs the same as `python tools/<name>.py` from the repo.
PACKAGE = "fca_tools"

setup(
    name="functional-compiled-autograd-tools",
    version="0.1.0",
    description="Patch stack + tooling that backports functional autograd into compiled autograd of PyTorch 2.6.0",
    python_requires=">=3.11",
    packages=[PACKAGE + name[len("tools"):] for name in find_packages(include=["tools", "tools.*"])],
    package_dir={PACKAGE: "tools"},
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
            "fca-apply=fca_tools.apply_patches:entry",
            "fca-export=fca_tools.export_patches:entry",
            "fca-vendor=fca_tools.vendor:entry",
            "fca-squash=fca_tools.squash:entry",
            "fca-fetch-pin=fca_tools.fetch_pinned_source:entry",
            "fca-overlay=fca_tools.overlay:entry",
            "fca-build-torch=fca_tools.build_torch:entry",
            "fca-bench=fca_tools.bench:entry",
            "fca-build-wheel=fca_tools.build_wheel:entry",
            "fca-upstream-tests=fca_tools.run_upstream_tests:entry",
            "fca-lint=fca_tools.lint_stack:entry",
            "fca-rebase=fca_tools.rebase_stack:entry",
            "fca-check-prefixes=fca_tools.check_prefixes:entry",
            "fca-gpu-check=fca_tools.gpu_check:entry",
        ]
    },
)
