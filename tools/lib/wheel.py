"""Wheels as data: a name, a version, tags; and a rewrite of an existing wheel.

``rewrite`` makes a new wheel from a stock one: every stock file the change
does not touch is copied *raw* (its compressed bytes, CRC and sizes as they
are, no recompression, so a 770 MB torch wheel is rewritten in seconds) and
keeps its RECORD line from the stock RECORD; changed and added files are
deflated and hashed; the ``.dist-info`` gets the new version in ``METADATA``,
a ``WHEEL`` with the new tag, and a RECORD that lists every file with its
sha256 and size.  Output is deterministic: entries in the stock order (new
ones sorted after them), fixed timestamps.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Callable, Mapping

# Timestamp of entries this module writes (zip's epoch; the stock entries keep theirs).
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
_CHUNK = 16 << 20


@dataclasses.dataclass(frozen=True)
class WheelName:
    distribution: str
    version: str
    python_tag: str
    abi_tag: str
    platform_tag: str

    @property
    def filename(self) -> str:
        return f"{self.distribution}-{self.version}-{self.tag}.whl"

    @property
    def tag(self) -> str:
        return f"{self.python_tag}-{self.abi_tag}-{self.platform_tag}"

    @property
    def dist_info(self) -> str:
        return f"{self.distribution}-{self.version}.dist-info"

    @staticmethod
    def parse(filename: str) -> "WheelName":
        m = re.fullmatch(r"([^-]+)-([^-]+)-([^-]+)-([^-]+)-([^-]+)\.whl", filename)
        if not m:
            raise ValueError(f"{filename} is not a wheel file name (name-version-python-abi-platform.whl)")
        return WheelName(*m.groups())


def _record_digest(h) -> str:
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def record_hash(data: bytes) -> str:
    """``sha256=<urlsafe base64, no padding>``, as RECORD writes it."""
    return _record_digest(hashlib.sha256(data))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_record(text: str) -> dict[str, tuple[str, str]]:
    """RECORD -> {path: (hash, size)} (csv without quoting: torch's paths have no commas)."""
    rows = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        path, digest, size = line.rsplit(",", 2)
        rows[path] = (digest, size)
    return rows


def render_wheel_file(name: WheelName, generator: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: false\nTag: {name.tag}\n"


def set_metadata_version(metadata: str, version: str) -> str:
    new, n = re.subn(r"^Version: .*$", f"Version: {version}", metadata, count=1, flags=re.M)
    if n != 1:
        raise ValueError("METADATA has no Version: line")
    return new


@dataclasses.dataclass(frozen=True)
class Change:
    """What the new wheel changes: files by their path in the wheel."""

    files: Mapping[str, bytes]  # replaced or added (mode 0o644, or 0o755 for .so)
    edits: Mapping[str, Callable[[bytes], bytes]] = dataclasses.field(default_factory=dict)  # stock file -> new bytes


def _copy_raw(src: zipfile.ZipFile, info: zipfile.ZipInfo, dst: zipfile.ZipFile) -> None:
    """Append ``info``'s compressed bytes to ``dst`` as they are (no recompression)."""
    fp = src.fp
    assert fp is not None and dst.fp is not None
    fp.seek(info.header_offset)
    header = fp.read(zipfile.sizeFileHeader)
    fields = struct.unpack(zipfile.structFileHeader, header)
    if fields[0] != zipfile.stringFileHeader:
        raise ValueError(f"bad local header for {info.filename}")
    fp.seek(info.header_offset + zipfile.sizeFileHeader + fields[zipfile._FH_FILENAME_LENGTH]
            + fields[zipfile._FH_EXTRA_FIELD_LENGTH])
    out = zipfile.ZipInfo(info.filename, info.date_time)
    out.compress_type = info.compress_type
    out.CRC = info.CRC
    out.compress_size = info.compress_size
    out.file_size = info.file_size
    out.external_attr = info.external_attr
    out.create_system = info.create_system
    out.flag_bits = info.flag_bits & ~0x08  # sizes go into the local header: no data descriptor
    out.header_offset = dst.fp.tell()
    dst.fp.write(out.FileHeader())
    left = info.compress_size
    while left:
        chunk = fp.read(min(_CHUNK, left))
        if not chunk:
            raise ValueError(f"{info.filename}: truncated")
        dst.fp.write(chunk)
        left -= len(chunk)
    dst.filelist.append(out)
    dst.NameToInfo[out.filename] = out
    dst.start_dir = dst.fp.tell()
    dst._didModify = True


def _write(dst: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, FIXED_DATE)
    mode = 0o755 if name.endswith(".so") else 0o644
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    dst.writestr(info, data, compresslevel=6)


def rewrite(stock: Path, out: Path, new_name: WheelName, change: Change, generator: str) -> dict:
    """Write ``out`` (a new wheel named ``new_name``) from ``stock`` plus ``change``.

    Returns counts: ``copied`` (raw), ``changed``, ``added``."""
    old_name = WheelName.parse(stock.name)
    tmp = out.with_name(out.name + ".part")
    counts = {"copied": 0, "changed": 0, "added": 0}
    with zipfile.ZipFile(stock) as src:
        names = [i.filename for i in src.infolist()]
        old_di = old_name.dist_info
        if f"{old_di}/RECORD" not in names:
            raise ValueError(f"{stock.name} has no {old_di}/RECORD")
        stock_record = parse_record(src.read(f"{old_di}/RECORD").decode())
        missing = sorted(set(change.edits) - set(names))
        if missing:
            raise ValueError(f"{stock.name} has no {missing[0]} to edit")
        record: list[str] = []
        with zipfile.ZipFile(tmp, "w") as dst:
            for info in src.infolist():
                name = info.filename
                if name.startswith(old_di + "/") or name.endswith("/"):
                    continue
                if name in change.files or name in change.edits:
                    data = change.files[name] if name in change.files else change.edits[name](src.read(name))
                    _write(dst, name, data)
                    record.append(f"{name},{record_hash(data)},{len(data)}")
                    counts["changed"] += 1
                    continue
                if name not in stock_record:
                    raise ValueError(f"{stock.name}: {name} is not in its RECORD")
                _copy_raw(src, info, dst)
                digest, size = stock_record[name]
                record.append(f"{name},{digest},{size}")
                counts["copied"] += 1
            for name in sorted(set(change.files) - set(names)):
                data = change.files[name]
                _write(dst, name, data)
                record.append(f"{name},{record_hash(data)},{len(data)}")
                counts["added"] += 1
            new_di = new_name.dist_info
            for name in names:
                if not name.startswith(old_di + "/") or name.endswith(("/", "/RECORD", "/WHEEL", "/METADATA")):
                    continue
                data = src.read(name)
                rel = name[len(old_di) + 1:]
                _write(dst, f"{new_di}/{rel}", data)
                record.append(f"{new_di}/{rel},{record_hash(data)},{len(data)}")
            meta = set_metadata_version(src.read(f"{old_di}/METADATA").decode(), new_name.version).encode()
            wheel = render_wheel_file(new_name, generator).encode()
            for rel, data in (("METADATA", meta), ("WHEEL", wheel)):
                _write(dst, f"{new_di}/{rel}", data)
                record.append(f"{new_di}/{rel},{record_hash(data)},{len(data)}")
            record.append(f"{new_di}/RECORD,,")
            _write(dst, f"{new_di}/RECORD", ("\n".join(record) + "\n").encode())
    shutil.move(str(tmp), str(out))
    return counts


def verify(path: Path) -> int:
    """Check every file of a wheel against its RECORD (hash and size); returns how many were checked."""
    name = WheelName.parse(path.name)
    with zipfile.ZipFile(path) as zf:
        record = parse_record(zf.read(f"{name.dist_info}/RECORD").decode())
        files = [i.filename for i in zf.infolist() if not i.filename.endswith("/")]
        unlisted = sorted(set(files) - set(record))
        if unlisted:
            raise ValueError(f"{path.name}: {unlisted[0]} is not in RECORD")
        checked = 0
        for f in files:
            digest, size = record[f]
            if f == f"{name.dist_info}/RECORD":
                continue
            h = hashlib.sha256()
            n = 0
            with zf.open(f) as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    h.update(chunk)
                    n += len(chunk)
            got = _record_digest(h)
            if got != digest or str(n) != size:
                raise ValueError(f"{path.name}: {f} does not match its RECORD line")
            checked += 1
        return checked
