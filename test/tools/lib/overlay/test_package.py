"""tools/lib/overlay/package.py: the patched wheel's torch/version.py says the wheel's version."""

from __future__ import annotations

import pytest

from tools.lib.overlay import package

# torch/version.py of the stock torch==2.6.0 CUDA 12.4 wheel, as it is
STOCK = (
    b"from typing import Optional\n\n"
    b"__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
    b"__version__ = '2.6.0+cu124'\n"
    b"debug = False\n"
    b"cuda: Optional[str] = '12.4'\n"
    b"git_version = '2236df1770800ffea5697b11b0bb0d910b2e59e1'\n"
    b"hip: Optional[str] = None\n"
    b"xpu: Optional[str] = None\n"
)
VERSION = "2.6.0+fca.13fc7b0f045df33e"


def test_set_version_writes_the_version_into_the_version_line():
    assert b"\n__version__ = '2.6.0+fca.13fc7b0f045df33e'\n" in package.set_version(STOCK, VERSION)


def test_set_version_keeps_every_other_line_byte_for_byte():
    old, new = STOCK.splitlines(keepends=True), package.set_version(STOCK, VERSION).splitlines(keepends=True)
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(new) == len(old)
    assert changed == [(b"__version__ = '2.6.0+cu124'\n", f"__version__ = '{VERSION}'\n".encode())]


def test_set_version_gives_a_module_with_the_new_version_and_the_stock_cuda_and_git_version():
    names: dict = {}
    exec(package.set_version(STOCK, VERSION), names)
    assert (names["__version__"], names["cuda"], names["git_version"], names["hip"], names["debug"]) == (
        VERSION, "12.4", "2236df1770800ffea5697b11b0bb0d910b2e59e1", None, False)


def test_set_version_keeps_the_version_line_s_own_ending():
    assert package.set_version(b"__version__ = '2.6.0'\r\ncuda = '12.4'\r\n", VERSION) == (
        f"__version__ = '{VERSION}'\r\ncuda = '12.4'\r\n".encode())
    assert package.set_version(b"cuda = '12.4'\n__version__ = '2.6.0'", VERSION) == (
        f"cuda = '12.4'\n__version__ = '{VERSION}'".encode())


def test_set_version_without_a_version_line_says_so():
    with pytest.raises(ValueError, match=r"torch/version.py has 0 `__version__ = ` lines, expected 1"):
        package.set_version(b"__all__ = ['__version__']\ncuda = '12.4'\n", VERSION)


def test_set_version_with_two_version_lines_refuses_to_choose():
    with pytest.raises(ValueError, match=r"torch/version.py has 2 `__version__ = ` lines, expected 1"):
        package.set_version(b"__version__ = '2.6.0'\n__version__ = '2.6.1'\n", VERSION)
