"""Mechanical safety checks of the overlay.

* static initializers: every ``.init_array`` entry of every object may only
  construct iostreams (no operator / dispatch / registry registration, which
  would run a second time inside the already-initialised libtorch);
* header ABI: for each header the stack changes, compare the pinned and the
  patched version's class layouts (size, base size, alignment, vtable; from
  GCC's ``-fdump-lang-class``) and the bodies of changed inline code (hunks
  that remove or rewrite lines).  A changed entity used by a library source
  outside the overlay makes the stack unsafe for the overlay: refused, naming
  the entity and the source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from .. import patchfile, ui
from ..shell import Shell
from ..stack import Stack
from . import compile as cc, depkey, tus as tuset

ALLOWED_INIT_REFS = {
    "_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__cxa_atexit", "__dso_handle",
    "_Unwind_Resume", "__stack_chk_fail", ".bss",
}


def _run(*argv: str) -> str:
    """A binutils query's output (quiet: the checks print their verdict, not their commands)."""
    return Shell(verbose=False).run(*argv, log=False).stdout


def static_init_refs(obj: Path) -> dict[str, list[str]]:
    """init_array target function -> external symbols it references (beyond the allowed ones)."""
    funcs: dict[tuple[str, int], tuple[str, int]] = {}
    for line in _run("objdump", "-t", str(obj)).splitlines():
        m = re.match(r"([0-9a-f]+)\s+.{7}\s+(\S+)\s+([0-9a-f]+)\s+(.*)$", line)
        if m and " F " in line:
            funcs[(m[2], int(m[1], 16))] = (m[4].split()[-1], int(m[3], 16))
    targets: list[tuple[str, int]] = []
    in_init = False
    for line in _run("readelf", "-rW", str(obj)).splitlines():
        if line.startswith("Relocation section"):
            in_init = ".rela.init_array" in line
            continue
        if in_init and "R_X86_64" in line:
            f = line.split()
            targets.append((f[4], int(f[6], 16) if len(f) >= 7 else 0))
    result: dict[str, list[str]] = {}
    for sec, addr in targets:
        name, size = funcs.get((sec, addr), (None, 0))
        if name is None:
            hits = [(k, v) for k, v in funcs.items() if v[0] == sec]
            if not hits:
                result[f"{sec}+{addr:#x}"] = ["<unresolved init_array target>"]
                continue
            (sec, addr), (name, size) = hits[0]
        dis = _run("objdump", "-dr", "-j", sec, f"--start-address={addr}", f"--stop-address={addr + size}", str(obj))
        refs = {re.sub(r"[-+]0x[0-9a-f]+$", "", r) for r in re.findall(r"R_X86_64_\S+\s+(\S+)", dis)}
        result[name] = sorted(refs - ALLOWED_INIT_REFS)
    return result


def check_static_inits(objects: Sequence[Path], allow: Iterable[str] = ()) -> None:
    allowed = set(allow)
    for obj in objects:
        if obj.name in allowed:
            continue
        for func, extra in static_init_refs(obj).items():
            if extra:
                demangled = _run("c++filt", extra[0]).strip()
                raise ui.OperationFailed(
                    f"{obj.name}: static initializer {func} calls {demangled}, i.e. it registers something that "
                    "libtorch already registered (it would run twice); keep that source out of the overlay"
                )


# ---------------------------------------------------------------------------------------------
# Header ABI


@dataclasses.dataclass(frozen=True)
class ClassLayout:
    name: str
    size: str  # "size=.. align=.. base size=.. base align=.."
    vtable: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class AbiChange:
    header: str
    entity: str
    detail: str


NO_HEADER_CHANGED = "no header changed"


@dataclasses.dataclass(frozen=True)
class AbiReport:
    """What the header ABI check found: a line per header the stack changes (additive), or per entity
    a header changes with how many users it has outside the overlay; none when no header changed."""

    lines: tuple[str, ...] = ()

    def as_json(self) -> str | list[str]:
        return list(self.lines) if self.lines else NO_HEADER_CHANGED


def parse_class_dump(text: str) -> dict[str, ClassLayout]:
    layouts: dict[str, ClassLayout] = {}
    vtables: dict[str, tuple[str, ...]] = {}
    blocks = text.split("\n\n")
    for block in blocks:
        lines = block.strip().splitlines()
        if not lines:
            continue
        if lines[0].startswith("Class "):
            name = lines[0][len("Class "):].strip()
            size = " ".join(l.strip() for l in lines[1:3])
            layouts[name] = ClassLayout(name, size, ())
        elif lines[0].startswith("Vtable for "):
            name = lines[0][len("Vtable for "):].strip()
            entries = tuple(re.sub(r"^\d+\s+", "", l.strip()) for l in lines[2:])
            vtables[name] = entries
    return {n: dataclasses.replace(l, vtable=vtables.get(n, ())) for n, l in layouts.items()}


# Classes of the C++ runtime and standard library: about 90% of what one torch header's
# probe dumps (30k of 34k classes, 5 of 5.7 MB of cache per header), and no patch to
# torch's headers can change one without changing the torch class it is instantiated
# over, which is compared itself.  Left out of the probes' results and their cache, with
# the C library's unnamed structs (one name for many classes: nothing to compare by).
_SYSTEM_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::", "__pstl::", "<unnamed")


def class_layouts(
    header: str, include_flags: Sequence[str], defines: Sequence[str], cache_dir: Path | None = None,
    memo: dict[str, str] | None = None,
) -> dict[str, ClassLayout]:
    """The class layouts GCC dumps for ``#include <header>``.

    Classes of the standard library (``_SYSTEM_NAMESPACES``) are left out.
    With ``cache_dir``, a result is kept with the digests of every file the probe read
    (``-MD``) and reused while none of them changed: a no-op overlay build does not
    parse the headers again.
    """
    memo = {} if memo is None else memo
    argv = ["g++", "-std=gnu++17", "-fsyntax-only", "-w", *defines, *include_flags]
    entry = None
    if cache_dir is not None:
        # what is left out is part of the entry's name: an entry of another filter is not reused
        tag = hashlib.sha256("\0".join([header, *argv, *_SYSTEM_NAMESPACES]).encode()).hexdigest()[:20]
        entry = cache_dir / f"abi-{tag}.json"
        try:
            cached = json.loads(entry.read_text())
            if cached["key"] == depkey.content_key(argv, [], cached["deps"], memo):
                return {n: ClassLayout(n, size, tuple(vt)) for n, (size, vt) in cached["layouts"].items()}
        except (OSError, ValueError, KeyError):
            pass
    with tempfile.TemporaryDirectory(prefix="fca-abi-") as tmp:
        probe = Path(tmp) / "probe.cpp"
        probe.write_text(f"#include <{header}>\n")
        dump, dfile = Path(tmp) / "probe.class", Path(tmp) / "probe.d"
        proc = Shell(verbose=False).run(*argv, f"-fdump-lang-class={dump}", "-MD", "-MF", str(dfile), str(probe),
                                        check=False, log=False)
        if proc.returncode != 0:
            raise ui.OperationFailed(f"ABI probe of {header} does not compile: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}")
        layouts = {n: l for n, l in parse_class_dump(dump.read_text()).items() if not n.startswith(_SYSTEM_NAMESPACES)}
        deps = [d for d in depkey.read_deps(dfile) if d != str(probe)]
    if entry is not None:
        entry.parent.mkdir(parents=True, exist_ok=True)
        payload = {"header": header, "key": depkey.content_key(argv, [], deps, memo), "deps": deps,
                   "layouts": {n: [l.size, list(l.vtable)] for n, l in layouts.items()}}
        tmp_entry = entry.with_suffix(".tmp")
        tmp_entry.write_text(json.dumps(payload))
        tmp_entry.replace(entry)
    return layouts


def header_include_name(path: str) -> str | None:
    for prefix in ("aten/src/",):
        if path.startswith(prefix):
            return path[len(prefix):]
    if path.startswith(("torch/csrc/", "c10/", "torch/headeronly/")):
        return path
    return None


def changed_inline_entities(header_patch_files: Sequence[patchfile.FileDiff], patch_texts: dict[str, str]) -> list[str]:
    """Names (from git's hunk context) of code a header hunk rewrites or removes."""
    names = []
    for fd in header_patch_files:
        for hunk in fd.hunks:
            if hunk.old_len > 0 and _hunk_removes_lines(patch_texts.get(fd.path, ""), hunk):
                ctx = hunk.header.split("@@")[-1].strip()
                names.append(ctx or f"{fd.path} line {hunk.old_start}")
    return names


def _hunk_removes_lines(diff_text: str, hunk: patchfile.Hunk) -> bool:
    lines = diff_text.splitlines()
    try:
        start = lines.index(hunk.header)
    except ValueError:
        return True
    for line in lines[start + 1 :]:
        if line.startswith(("@@", "diff --git")):
            break
        if line.startswith("-") and line[1:].strip() and not line[1:].strip().startswith("//"):
            return True
    return False


def compare_layouts(header: str, pinned: dict[str, ClassLayout], patched: dict[str, ClassLayout]) -> list[AbiChange]:
    changes = []
    for name in sorted(set(pinned) & set(patched)):
        a, b = pinned[name], patched[name]
        if a.size != b.size:
            changes.append(AbiChange(header, name, f"layout {a.size} -> {b.size}"))
        elif a.vtable != b.vtable:
            changes.append(AbiChange(header, name, f"vtable changed ({len(a.vtable)} -> {len(b.vtable)} entries)"))
    return changes


def users_outside(tree: Path, entity: str, includers: Iterable[str], overlay_sources: set[str]) -> list[str]:
    """Library sources outside the overlay that include the header and name the entity."""
    short = re.split(r"::|<", entity.strip())
    ident = next((s for s in reversed([x for x in short if x]) if re.match(r"^\w+$", s)), entity)
    pat = re.compile(rf"\b{re.escape(ident)}\b")
    users = []
    for src in sorted(includers):
        if src in overlay_sources:
            continue
        try:
            if pat.search((tree / src).read_text(errors="replace")):
                users.append(src)
        except FileNotFoundError:
            continue
    return users


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def includers_of(tree: Path, header_include: str, sources: Iterable[str]) -> set[str]:
    """Sources that include ``header_include`` directly or through headers of the tree."""
    roots = [tree, tree / "aten/src", tree / "torch/csrc/api/include"]
    cache: dict[str, list[str]] = {}

    def includes(path: Path) -> list[str]:
        key = str(path)
        if key not in cache:
            try:
                cache[key] = _INCLUDE.findall(path.read_text(errors="replace"))
            except (FileNotFoundError, IsADirectoryError):
                cache[key] = []
        return cache[key]

    def resolve(name: str) -> Path | None:
        for r in roots:
            p = r / name
            if p.is_file():
                return p
        return None

    reaches: dict[str, bool] = {}

    def reaches_header(name: str, stack: set[str]) -> bool:
        if name == header_include:
            return True
        if name in reaches:
            return reaches[name]
        if name in stack:
            return False
        p = resolve(name)
        if p is None:
            reaches[name] = False
            return False
        stack.add(name)
        result = any(reaches_header(n, stack) for n in includes(p))
        stack.discard(name)
        reaches[name] = result
        return result

    found = set()
    for src in sources:
        p = tree / src
        if any(reaches_header(n, set()) for n in includes(p)):
            found.add(src)
    return found


def check_header_abi(tree: Path, stack: Stack, layout: cc.Layout, selected: Sequence[tuset.TU], pin_dir: Path) -> AbiReport:
    """Compare the pinned (``pin_dir``) and patched class layouts and inline code of every header the
    stack changes; refuse a change that a library source outside the overlay (``selected``) uses."""
    changed_headers = [p for p in stack.touched if p.endswith(".h") and header_include_name(p)]
    if not changed_headers:
        return AbiReport()
    lib_sources = tuset.library_sources(tree)
    overlay_sources = {t.path for t in selected}
    problems = []
    lines = []
    inc_patched = layout.include_flags()
    inc_pinned = [f"-I{pin_dir}", f"-I{pin_dir / 'aten/src'}"] + inc_patched
    defines = list(cc.COMMON_FLAGS)
    cache_dir, memo = layout.build / "abi-probes", {}
    for header in changed_headers:
        name = header_include_name(header)
        assert name
        changes = compare_layouts(
            header,
            class_layouts(name, inc_pinned, defines, cache_dir, memo),
            class_layouts(name, inc_patched, defines, cache_dir, memo),
        )
        fds = [fd for pf in stack.patches for fd in pf.files if fd.path == header]
        texts = {header: "\n".join(p.read_text() for p in stack.files)}
        entities = [(c.entity, c.detail) for c in changes] + [
            (e, "inline code rewritten") for e in changed_inline_entities(fds, texts)
        ]
        if not entities:
            lines.append(f"{header}: additive (no class layout, vtable or inline body changed)")
            continue
        includers = includers_of(tree, name, lib_sources)
        for entity, detail in entities:
            users = users_outside(tree, entity, includers, overlay_sources)
            lines.append(f"{header}: {entity}: {detail}; users outside the overlay: {len(users)}")
            if users:
                problems.append(f"{header} changes {entity} ({detail}), used by {users[0]} which is not in the overlay"
                                + (f" (and {len(users) - 1} more)" if len(users) > 1 else ""))
    if problems:
        raise ui.UserError(problems[0] + "; make the header change additive or confined to overlay sources")
    return AbiReport(tuple(lines))
