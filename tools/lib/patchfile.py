"""Parse ``git format-patch`` files into data: which files a patch touches, its hunks.

Only what the tools need: paths (old/new, created/deleted) and hunk headers, to
name the failing hunk when a patch does not apply and to know which files a
stack touches (for the pin manifest and the vendor dir).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


@dataclasses.dataclass(frozen=True)
class Hunk:
    index: int  # 1-based within its file
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    header: str  # the full "@@ ... @@ context" line


@dataclasses.dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None when the patch creates the file
    new_path: str | None  # None when the patch deletes the file
    hunks: tuple[Hunk, ...]
    binary: bool = False
    old_blob: str | None = None  # full blob id of the pre-image (the ``index`` line), None when created
    old_mode: str | None = None  # its mode (``100644``), None when created

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p for p in dict.fromkeys((self.old_path, self.new_path)) if p)


@dataclasses.dataclass(frozen=True)
class PatchFile:
    name: str
    subject: str
    author: str
    date: str
    files: tuple[FileDiff, ...]
    message: str = ""  # the commit message: the subject, a blank line, the body (up to the ``---`` line)

    @property
    def touched(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for f in self.files:
            for p in f.paths:
                seen[p] = None
        return tuple(seen)

    @property
    def created(self) -> tuple[str, ...]:
        return tuple(f.new_path for f in self.files if f.old_path is None and f.new_path)

    def hunk_at(self, path: str, line: int) -> Hunk | None:
        """The hunk of ``path`` that git reports as failing at ``line`` (its old start)."""
        for f in self.files:
            if path in f.paths:
                for h in f.hunks:
                    if h.old_start == line or h.new_start == line:
                        return h
                for h in f.hunks:
                    if h.old_start <= line < h.old_start + max(h.old_len, 1):
                        return h
        return None


def _unquote(path: str) -> str:
    if path.startswith('"') and path.endswith('"'):
        body = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return body.encode("latin-1").decode("utf-8", "replace")
    return path


def _strip_prefix(path: str) -> str | None:
    path = _unquote(path.strip())
    if path == "/dev/null":
        return None
    if path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def parse(text: str, name: str = "<patch>") -> PatchFile:
    subject = author = date = ""
    lines = text.split("\n")
    i = 0
    # Headers (RFC 822 style, with folded continuation lines), up to the first blank line.
    headers: dict[str, str] = {}
    last = None
    while i < len(lines) and lines[i] != "":
        line = lines[i]
        if line[:1] in (" ", "\t") and last:
            headers[last] += " " + line.strip()
        elif ":" in line and not line.startswith("From "):
            key, _, value = line.partition(":")
            last = key.strip().lower()
            headers[last] = value.strip()
        i += 1
    subject = headers.get("subject", "")
    author = headers.get("from", "")
    date = headers.get("date", "")
    end = next((k for k in range(i, len(lines)) if lines[k] == "---" or lines[k].startswith("diff --git ")), len(lines))
    body = "\n".join(lines[i:end]).strip("\n")
    message = f"{subject}\n\n{body}\n" if body else f"{subject}\n"

    files: list[FileDiff] = []
    cur: dict | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            files.append(
                FileDiff(cur["old"], cur["new"], tuple(cur["hunks"]), cur["binary"], cur["old_blob"], cur["old_mode"])
            )
        cur = None

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            flush()
            m = re.match(r'^diff --git (?:"?a/)(.*?)"? (?:"?b/)(.*?)"?$', line)
            a, b = (m.group(1), m.group(2)) if m else ("", "")
            cur = {"old": a, "new": b, "hunks": [], "binary": False, "old_blob": None, "old_mode": None}
        elif cur is not None:
            if line.startswith("new file mode"):
                cur["old"] = None
            elif line.startswith("deleted file mode"):
                cur["new"] = None
                cur["old_mode"] = line.split()[-1]
            elif line.startswith("old mode "):
                cur["old_mode"] = line.split()[-1]
            elif line.startswith("index ") and not cur["hunks"]:
                ids, _, mode = line[len("index "):].partition(" ")
                old_blob = ids.split("..")[0]
                cur["old_blob"] = None if not old_blob.strip("0") else old_blob
                if mode and cur["old_mode"] is None:
                    cur["old_mode"] = mode.strip()
            elif line.startswith("--- "):
                cur["old"] = _strip_prefix(line[4:])
            elif line.startswith("+++ "):
                cur["new"] = _strip_prefix(line[4:])
            elif line.startswith("rename from "):
                cur["old"] = line[len("rename from "):]
            elif line.startswith("rename to "):
                cur["new"] = line[len("rename to "):]
            elif line.startswith("GIT binary patch") or line.startswith("Binary files "):
                cur["binary"] = True
            else:
                m = _HUNK.match(line)
                if m:
                    cur["hunks"].append(
                        Hunk(
                            index=len(cur["hunks"]) + 1,
                            old_start=int(m.group(1)),
                            old_len=int(m.group(2) if m.group(2) is not None else 1),
                            new_start=int(m.group(3)),
                            new_len=int(m.group(4) if m.group(4) is not None else 1),
                            header=line,
                        )
                    )
        i += 1
    flush()
    return PatchFile(name=name, subject=subject, author=author, date=date, files=tuple(files), message=message)


def load(path: Path) -> PatchFile:
    return parse(path.read_text(encoding="utf-8", errors="surrogateescape"), path.name)


def slugify(subject: str, limit: int = 60) -> str:
    """Deterministic file-name slug of a subject (our own, not git's, so no git version churn)."""
    slug = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("-", 1)[0] or slug[:limit]
    return slug or "patch"
