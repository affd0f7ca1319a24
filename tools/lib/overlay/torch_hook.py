"""The patched wheel's loader: a few lines in ``torch/__init__.py`` that load the overlay library.

Interposition works when the overlay is loaded *before* libtorch: libtorch_cpu
and libtorch_python reach the symbols the stack changes through PLT/GOT and
vtable relocations by name, so whatever object comes first in the lookup scope
when they are relocated wins.  ``torch/__init__.py`` loads libtorch only in
``from torch._C import *`` (``libtorch_global_deps``, loaded just before it,
needs none of torch's own libraries), so the hook runs right before each of
the two ``from torch._C import *`` lines, after the global deps (so their
CUDA-library fallback still runs first) and in both branches
(``TORCH_USE_RTLD_GLOBAL`` or not).

The library is loaded with ``RTLD_GLOBAL``, which makes it, and with it
libtorch, visible to objects loaded later, as ``LD_PRELOAD`` does: C++
extensions compiled against the wheel's (patched) headers call functions
that only the overlay defines.

Before loading, the hook compares the GNU build-ids of the wheel's
``libtorch_cpu.so`` and ``libtorch_python.so`` with the ones the library was
built against (``torch/lib/fca_overlay.json``) and refuses to import with
one line naming both builds; the library's own load-time check (which ends
the process) stays as a backstop.  It also refuses when libtorch is already
mapped (something loaded it first, so nothing would be interposed).
"""

from __future__ import annotations

LIB_NAME = "libfca_overlay.so"
STAMP_NAME = "fca_overlay.json"
ANCHOR = "from torch._C import *  # noqa: F403\n"
DEF_BEFORE = 'if (USE_RTLD_GLOBAL_WITH_LIBTORCH or os.getenv("TORCH_USE_RTLD_GLOBAL")) and ('
CALL = "_fca_load_overlay()\n"

HOOK = '''\
# [fca] torch 2.6.0 with functional compiled autograd: the overlay library
# (lib/libfca_overlay.so) holds the patch stack's C++.  It must be loaded
# before libtorch, so that libtorch's own references bind to it.
def _fca_build_id(path: str) -> _Optional[str]:
    import struct

    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\\x7fELF" or ehdr[4] != 2:
            return None
        (phoff,) = struct.unpack_from("<Q", ehdr, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, _, p_offset, _, _, p_filesz, _, p_align = struct.unpack_from(
                "<IIQQQQQQ", table, i * phentsize
            )
            if p_type != 4:  # PT_NOTE
                continue
            align = 8 if p_align == 8 else 4
            f.seek(p_offset)
            notes, pos = f.read(p_filesz), 0
            while pos + 12 <= len(notes):
                namesz, descsz, ntype = struct.unpack_from("<III", notes, pos)
                pos += 12
                name = notes[pos : pos + namesz]
                pos += (namesz + align - 1) & ~(align - 1)
                desc = notes[pos : pos + descsz]
                pos += (descsz + align - 1) & ~(align - 1)
                if ntype == 3 and name == b"GNU\\0":  # NT_GNU_BUILD_ID
                    return desc.hex()
    return None


def _fca_load_overlay() -> None:
    import json

    lib_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
    with open(os.path.join(lib_dir, "%(stamp)s")) as f:
        stamp = json.load(f)
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        maps = ""
    if "/libtorch_cpu.so" in maps and "/%(lib)s" not in maps:
        raise ImportError(
            "torch %%s: libtorch was loaded before the functional compiled autograd "
            "overlay, so it would run stock code; import torch before anything that "
            "loads libtorch" %% stamp["version"]
        )
    for name, want in sorted(stamp["build_ids"].items()):
        path = os.path.join(lib_dir, name)
        got = _fca_build_id(path)
        if got != want:
            raise ImportError(
                "torch %%s: its overlay was built against %%s with build-id %%s, but %%s "
                "has build-id %%s (another torch build); reinstall the patched wheel "
                "or stock torch==2.6.0" %% (stamp["version"], name, want, path, got)
            )
    ctypes.CDLL(os.path.join(lib_dir, "%(lib)s"), mode=ctypes.RTLD_GLOBAL)


''' % {"stamp": STAMP_NAME, "lib": LIB_NAME}


def patch_init(text: str) -> str:
    """Stock (or stack-patched) ``torch/__init__.py`` -> the same with the hook; refuses a layout it does not know."""
    if "_fca_load_overlay" in text:
        raise ValueError("torch/__init__.py already has the fca hook")
    if text.count(ANCHOR) != 2 or text.count(DEF_BEFORE) != 1 or "Optional as _Optional" not in text:
        raise ValueError(
            "torch/__init__.py is not laid out as in v2.6.0 (two `from torch._C import *` lines after the "
            "TORCH_USE_RTLD_GLOBAL test, typing's Optional as _Optional); the loader hook cannot be placed"
        )
    head, tail = text.split(DEF_BEFORE, 1)
    out = [head, HOOK]
    for line in (DEF_BEFORE + tail).splitlines(keepends=True):
        stripped = line.lstrip(" ")
        if stripped == ANCHOR:
            out.append(line[: len(line) - len(stripped)] + CALL)
        out.append(line)
    return "".join(out)
