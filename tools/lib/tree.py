"""A PyTorch source tree the stack is applied to: a git checkout or a plain dir.

Both kinds answer the same questions (how many patches of the stack are
applied, is the base the pin) and do the same things (check, apply, revert)
all-or-nothing:

* git: the new commits are built in a temporary index and a temporary object
  dir (``git apply --cached`` + ``commit-tree``, ``git am -k`` semantics: author,
  date, subject and body kept), so a conflict leaves the repository untouched.
  Only after every patch applied are the objects moved in and the working tree
  and branch moved (``read-tree -m -u`` + ``update-ref``), under a journal.
* plain: the stack is applied to copies in a scratch dir; the results are
  written back under a journal holding the originals.

A run killed half-way leaves the journal; the next run restores the tree from
it before doing anything else.

Every commit apply makes carries a ``Fca-Stack-Patch:`` trailer (see
:class:`StackMark`): the patch it was made from and the ``git patch-id --stable``
of that patch and of the commit's own diff.  That is how the stack's commits are
told from the user's, by content: a commit is the tool's own (and may be replaced
by a newer version of its patch) only while its diff is still the one it was made
with.  A commit without the trailer counts as a patch of the stack when its
patch-id equals the patch file's.  ``--3way`` merges a patch that does not apply
as is against the pin's blobs (the patches' ``index`` lines name them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from . import failpoint, ui
from .patchfile import PatchFile
from .pin import PIN, describe_mismatch, sha256_bytes
from .shell import CommandError, Shell
from .stack import (
    PatchConflict, Stack, apply_to_contents, describe_apply_failure, describe_merge_conflict, read_tree_files,
)

Made = tuple[PatchFile, str, str, bool]  # a commit apply built: patch, commit id, subject, 3-way merged


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


# How far above the stack we look for user commits before giving up.
MAX_COMMITS_ON_TOP = 50
JOURNAL = "fca-apply-journal.json"
PLAIN_JOURNAL_DIR = ".fca-apply-journal"


@dataclasses.dataclass(frozen=True)
class TreeState:
    applied: int  # how many patches of the series (a prefix) are applied
    on_top: int = 0  # git: commits above the stack's top
    base: str | None = None  # git: the commit the stack sits on
    stale: int = 0  # git: commits above the applied prefix that apply_patches made from an older stack
    top: str | None = None  # git: the applied prefix's top commit (what `stale` sits on)


TRAILER = "Fca-Stack-Patch"
_MARK = re.compile(rf"^{TRAILER}: (.+) ([0-9a-f]{{40}}) ([0-9a-f]{{40}})$")


@dataclasses.dataclass(frozen=True)
class StackMark:
    """What the ``Fca-Stack-Patch: NAME PATCH-ID DIFF-ID`` trailer of a commit apply made says."""

    name: str  # the patch file it was made from
    patch_id: str  # `git patch-id --stable` of that patch file
    diff_id: str  # ... of the commit's diff as made (not patch_id when a 3-way merge changed the context)

    def line(self) -> str:
        return f"{TRAILER}: {self.name} {self.patch_id} {self.diff_id}"

    @staticmethod
    def find(message: str) -> "StackMark | None":
        for line in reversed(message.splitlines()):
            m = _MARK.match(line)
            if m:
                return StackMark(*m.groups())
        return None


def strip_stack_mark(message: bytes) -> bytes:
    """``message`` without its ``Fca-Stack-Patch:`` line(s) (and the blank line that set one apart)."""
    lines = message.split(b"\n")
    prefix = f"{TRAILER}: ".encode()
    i = 0
    while i < len(lines):
        if not lines[i].startswith(prefix):
            i += 1
            continue
        del lines[i]
        if i > 0 and lines[i - 1] == b"" and (i == len(lines) - 1 or lines[i] == b""):
            del lines[i - 1]
            i -= 1
    return b"\n".join(lines)


def _check_writable(path: Path, what: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".fca-write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ui.UserError(
            f"cannot write to {what} {path} ({err.strerror}); make it writable (or work on a copy) and retry; nothing was changed"
        ) from None


def open_tree(path: Path, sh: Shell) -> "GitTree | PlainTree":
    path = Path(path).resolve()
    if not path.is_dir():
        raise ui.UserError(f"{path} is not a directory; pass --torch-src with a PyTorch v2.6.0 checkout")
    if (path / ".git").exists():
        return GitTree(path, sh)
    return PlainTree(path, sh)


class GitTree:
    kind = "git"

    def __init__(self, path: Path, sh: Shell) -> None:
        self.path = path
        self.sh = Shell(cwd=path, testing=sh.testing, verbose=sh.verbose, env=dict(sh.env))
        top = self.git("rev-parse", "--show-toplevel", log=False).strip()
        if Path(top).resolve() != path:
            raise ui.UserError(f"{path} is inside the git repository {top}; pass the repository's top-level dir")
        self.git_dir = Path(self.git("rev-parse", "--absolute-git-dir", log=False).strip())
        self._pid_cache: dict[Path, list[str]] = {}
        self.objects = Path(self.git("rev-parse", "--git-path", "objects", log=False).strip())
        if not self.objects.is_absolute():
            self.objects = (path / self.objects).resolve()

    # -- plumbing ---------------------------------------------------------------------------
    def git(self, *args: str, **kwargs) -> str:
        return self.sh.git(*args, **kwargs)

    def head(self) -> str:
        try:
            return self.git("rev-parse", "--verify", "HEAD^{commit}", log=False).strip()
        except CommandError:
            raise ui.UserError(f"{self.path} has no commits; check out tag v2.6.0 first") from None

    def read_at(self, rev: str, paths: Sequence[str]) -> dict[str, bytes | None]:
        """Contents of ``paths`` at ``rev`` (None where absent), via one cat-file --batch."""
        return dict(zip(paths, self.read_objects([f"{rev}:{p}" for p in paths])))

    def read_objects(self, specs: Sequence[str], env: dict[str, str] | None = None) -> list[bytes | None]:
        """The blobs ``specs`` name (``REV:PATH`` or blob ids; None where missing or not a blob), in one cat-file --batch."""
        request = "".join(f"{spec}\n" for spec in specs).encode()
        proc = self.sh.run(*Shell.git_argv("cat-file", "--batch"), input=request, binary=True, env=env, log=False)
        data = proc.stdout
        result: list[bytes | None] = []
        pos = 0
        for _ in specs:
            nl = data.index(b"\n", pos)
            header = data[pos:nl].decode()
            pos = nl + 1
            if header.endswith(" missing") or header.endswith(" ambiguous"):
                result.append(None)
                continue
            size = int(header.rsplit(" ", 1)[1])
            kind = header.split(" ")[1]
            result.append(data[pos : pos + size] if kind == "blob" else None)
            pos += size + 1
        return result

    # -- preconditions ----------------------------------------------------------------------
    def check_writable(self) -> None:
        _check_writable(self.path, "the tree")
        _check_writable(self.git_dir, "the git dir")

    def ensure_clean(self, stack: Stack) -> None:
        for marker, op in (("rebase-apply", "git am/rebase"), ("rebase-merge", "git rebase"), ("MERGE_HEAD", "git merge"), ("CHERRY_PICK_HEAD", "git cherry-pick")):
            if (self.git_dir / marker).exists():
                raise ui.UserError(f"a {op} is in progress in {self.path}; finish or abort it first")
        dirty = self.git("status", "--porcelain=v1", "--untracked-files=no", log=False).splitlines()
        if dirty:
            raise ui.UserError(
                f"{self.path} has uncommitted changes ({dirty[0].strip()}{' ...' if len(dirty) > 1 else ''}); "
                f"commit or stash them first (`git -C {_q(self.path)} stash`), nothing was changed"
            )
        for path in stack.created:
            if (self.path / path).exists():
                tracked = self.git("ls-files", "--", path, log=False).strip()
                if not tracked:
                    raise ui.UserError(
                        f"untracked file {path} in {self.path} is in the way of a file the stack creates; move it away first"
                    )

    # -- journal / recovery -----------------------------------------------------------------
    def _journal(self) -> Path:
        return self.git_dir / JOURNAL

    def has_journal(self) -> bool:
        return self._journal().exists()

    def recover(self) -> bool:
        """Undo a run killed while moving the working tree: put the paths it was
        writing back to HEAD's content.  True if there was something to recover."""
        journal = self._journal()
        if not journal.exists():
            return False
        record = json.loads(journal.read_text())
        paths: list[str] = record["paths"]
        ui.info(f"recovering from an interrupted {record['op']} in {self.path} (journal {journal})")
        head_contents = self.read_at("HEAD", paths)
        if paths:
            self.git("reset", "-q", "HEAD", "--", *paths, check=False)
        present = [p for p in paths if head_contents[p] is not None]
        if present:
            self.git("checkout", "HEAD", "--", *present)
        for p in paths:
            if head_contents[p] is None and (self.path / p).exists():
                (self.path / p).unlink()
        journal.unlink()
        return True

    # -- state ------------------------------------------------------------------------------
    def _file_patch_ids(self, stack: Stack) -> list[str]:
        """`git patch-id --stable` of every patch file ("" for one without a diff), computed once per stack."""
        cached = self._pid_cache.get(stack.dir)
        if cached is None:
            cached = []
            for f in stack.files:
                out = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=f.read_text(errors="surrogateescape"), log=False).stdout
                cached.append(out.split()[0] if out.strip() else "")
            self._pid_cache[stack.dir] = cached
        return cached

    def _history(self, depth: int) -> tuple[list[str], dict[str, str], dict[str, StackMark]]:
        """HEAD's first-parent commits (newest first), their patch-ids and their stack marks."""
        commits = self.git("rev-list", "--first-parent", f"--max-count={depth}", "HEAD", log=False).split()
        messages = self.git("log", "--first-parent", f"--max-count={depth}", "--format=%x01%H%n%B", "HEAD", log=False)
        marks: dict[str, StackMark] = {}
        for chunk in messages.split("\x01")[1:]:
            commit, _, body = chunk.partition("\n")
            mark = StackMark.find(body)
            if mark is not None:
                marks[commit] = mark
        log = self.git(
            "-c", "log.showRoot=false", "log", "-p", "--first-parent", "--no-color", "--full-index", f"--max-count={depth}", "--format=commit %H", "HEAD", log=False
        )
        proc = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=log, log=False)
        pids: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            pid, commit = line.split()
            pids[commit] = pid
        return commits, pids, marks

    def state(self, stack: Stack) -> TreeState:
        head = self.head()
        commits, pids, marks = self._history(len(stack) + MAX_COMMITS_ON_TOP)

        def ours(c: str) -> bool:
            """Made by apply and unchanged since: its diff is still the one its mark records."""
            return c in marks and marks[c].diff_id == pids.get(c)

        # nothing of the stack matches: the tree is the pin, or the pin under commits some older stack made
        n = 0
        while n + 1 < len(commits) and ours(commits[n]):
            n += 1
        unmatched = TreeState(applied=0, base=commits[n], stale=n, top=commits[n]) if n else TreeState(applied=0, base=head, top=head)
        if not stack.files:
            return unmatched
        want = self._file_patch_ids(stack)

        def matches(c: str, i: int) -> bool:
            return pids.get(c) == want[i] or (ours(c) and marks[c].patch_id == want[i])

        j = next((i for i, c in enumerate(commits) if matches(c, 0)), None)
        if j is None:
            return unmatched
        k = 1
        while k < len(want) and j - k >= 0 and matches(commits[j - k], k):
            k += 1
        base = commits[j + 1] if j + 1 < len(commits) else None
        if base is None:
            raise ui.UserError(f"the stack's first patch is the root commit of {self.path}; its base must be the v2.6.0 commit")
        on_top, top = j - k + 1, commits[j - k + 1]
        if on_top and all(ours(c) for c in commits[:on_top]):
            return TreeState(applied=k, base=base, stale=on_top, top=top)
        return TreeState(applied=k, on_top=on_top, base=base, top=top)

    def base_mismatches(self, stack: Stack, state: TreeState) -> list[tuple[str, str, str]]:
        """(path, expected, actual) for every pinned file that differs at the stack's base."""
        assert state.base is not None
        paths = sorted(stack.manifest.entries)
        return stack.manifest.mismatches(self.read_at(state.base, paths))

    def verify_base(self, stack: Stack, state: TreeState) -> None:
        bad = self.base_mismatches(stack, state)
        if bad:
            raise ui.UserError(describe_mismatch(self.path, bad))

    def pin_contents(self, stack: Stack) -> tuple[str, dict[str, bytes | None]]:
        """(pin commit, contents at the pin of every file the stack watches), pin verified."""
        state = self.state(stack)
        self.verify_base(stack, state)
        assert state.base is not None
        return state.base, self.read_at(state.base, stack.watched)

    # -- operations -------------------------------------------------------------------------
    def check(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> None:
        with self._build(stack, state, state.top or self.head(), three_way=three_way):
            pass  # built in scratch, then thrown away

    def drop_stale(self, state: TreeState) -> None:
        """Move HEAD (and the tree) off the commits an older stack left, to the applied prefix's top."""
        assert state.stale and state.top is not None
        self._move_tree("drop-stale", self.head(), state.top)

    def _move_tree(self, op: str, old: str, new: str) -> None:
        paths = self.git("diff", "--name-only", "--no-renames", old, new, log=False).splitlines()
        self._journal().write_text(json.dumps({"op": op, "from": old, "to": new, "paths": paths}, indent=1))
        failpoint.hit("git-before-tree")
        self.git("read-tree", "-m", "-u", old, new)
        failpoint.hit("git-before-ref")
        self.git("update-ref", "-m", f"fca {op}", "HEAD", new, old)
        self._journal().unlink()

    def apply(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> list[str]:
        """Commit the remaining patches on HEAD; returns the new commit ids."""
        old = self.head()
        with self._build(stack, state, old, three_way=three_way) as (made, objects):
            for pf, commit, subject, merged in made:
                ui.info(f"  applied {pf.name} -> {commit[:12]} {subject}{' (3-way merge)' if merged else ''}")
            self._import_objects(objects)
        new = made[-1][1] if made else old
        self._move_tree("apply", old, new)
        return [m[1] for m in made]

    @contextlib.contextmanager
    def _build(self, stack: Stack, state: TreeState, start: str, *, three_way: bool) -> Iterator[tuple[list[Made], Path]]:
        """Commit the remaining patches on ``start`` in a scratch index and object dir; yields
        ([(patch, commit, subject, 3-way merged)], the scratch object dir).  Nothing reaches the repository
        unless the caller imports those objects; a conflict raises PatchConflict naming file and hunk."""
        remaining = list(zip(stack.files, stack.patches, self._file_patch_ids(stack)))[state.applied :]
        ident = self._committer_ident()
        made: list[Made] = []
        seeded = False
        with tempfile.TemporaryDirectory(prefix="fca-am-") as tmp:
            tmpdir = Path(tmp)
            env = {
                "GIT_INDEX_FILE": str(tmpdir / "index"),
                "GIT_OBJECT_DIRECTORY": str(tmpdir / "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.objects),
            }
            (tmpdir / "objects").mkdir()
            self.git("read-tree", start, env=env, log=False)
            parent = start
            for path, pf, patch_id in remaining:
                info = self.sh.run(
                    *Shell.git_argv("mailinfo", "-k", "-u", str(tmpdir / "msg"), str(tmpdir / "diff")),
                    input=path.read_bytes(), binary=True, env=env, log=False,
                ).stdout.decode("utf-8", "replace")
                meta = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
                apply = Shell.git_argv("apply", "--cached", "--whitespace=nowarn", str(tmpdir / "diff"))
                proc = self.sh.run(*apply, env=env, check=False, log=False)
                diff_id, merged = patch_id, False
                if proc.returncode != 0:
                    if not three_way:
                        raise PatchConflict(pf, describe_apply_failure(pf, proc.stderr))
                    if not seeded:
                        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] += os.pathsep + str(self._seed_pin_chain(stack, tmpdir))
                        seeded = True
                    merge = self.sh.run(*apply[:-1], "--3way", apply[-1], env=env, check=False, log=False)
                    if merge.returncode != 0:
                        raise PatchConflict(pf, self._describe_conflict(pf, proc.stderr, env))
                    diff_id, merged = self._diff_patch_id(parent, env), True
                tree = self.git("write-tree", env=env, log=False).strip()
                body = (tmpdir / "msg").read_text(encoding="utf-8", errors="surrogateescape")
                message = meta.get("Subject", "") + ("\n\n" + body if body.strip() else "\n")
                if not message.endswith("\n"):
                    message += "\n"
                message += "\n" + StackMark(pf.name, patch_id, diff_id).line() + "\n"
                (tmpdir / "message").write_text(message, encoding="utf-8", errors="surrogateescape")
                cenv = dict(env)
                cenv.update(
                    GIT_AUTHOR_NAME=meta.get("Author", ""), GIT_AUTHOR_EMAIL=meta.get("Email", ""),
                    GIT_AUTHOR_DATE=meta.get("Date", ""), GIT_COMMITTER_DATE=meta.get("Date", ""),
                )
                if ident is None:
                    cenv.update(GIT_COMMITTER_NAME=cenv["GIT_AUTHOR_NAME"], GIT_COMMITTER_EMAIL=cenv["GIT_AUTHOR_EMAIL"])
                commit = self.git("commit-tree", tree, "-p", parent, "-F", str(tmpdir / "message"), env=cenv, log=False).strip()
                made.append((pf, commit, meta.get("Subject", ""), merged))
                parent = commit
            yield made, tmpdir / "objects"

    def _diff_patch_id(self, parent: str, env: dict[str, str]) -> str:
        """`git patch-id --stable` of the scratch index against ``parent``: what state() will compute for its commit."""
        diff = self.git("diff", "--cached", "-p", "--no-color", "--full-index", parent, env=env, log=False)
        out = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=diff, log=False).stdout
        return out.split()[0] if out.strip() else ""

    def _seed_pin_chain(self, stack: Stack, tmpdir: Path) -> Path:
        """An object dir with every blob the patches' ``index`` lines name: the pin's blobs (checked against
        the manifest) and what each patch makes of them, so `git apply --3way` has every merge base."""
        seed = tmpdir / "pin-objects"
        seed.mkdir()
        env = {"GIT_INDEX_FILE": str(tmpdir / "pin-index"), "GIT_OBJECT_DIRECTORY": str(seed),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.objects)}
        first: dict[str, tuple[str, str]] = {}  # path -> (mode, blob) where the stack first touches it
        seen: set[str] = set()
        for pf in stack.patches:
            for f in pf.files:
                if f.old_path and f.old_path not in seen and f.old_blob:
                    first[f.old_path] = (f.old_mode or "100644", f.old_blob)
                seen.update(f.paths)
        blobs = dict(zip(first, self.read_objects([blob for _, blob in first.values()], env)))
        for p, data in blobs.items():
            if data is None:
                raise ui.UserError(
                    f"{self.path} lacks the pin's copy of {p} (blob {first[p][1][:12]}), which a 3-way merge needs; "
                    f"fetch it: `git -C {_q(self.path)} fetch https://github.com/pytorch/pytorch.git tag {PIN.git_tag}`"
                )
            expected = stack.manifest.entries.get(p)
            if expected is not None and sha256_bytes(data) != expected:
                raise ui.UserError(
                    f"the stack's pre-image of {p} (blob {first[p][1][:12]}) is not the pin's ({stack.manifest.entries[p][:12]}); "
                    "the stack was exported from another base; re-export it from the pin with tools/export_patches.py"
                )
        info = "".join(f"{mode} {blob}\t{p}\n" for p, (mode, blob) in first.items())
        self.git("update-index", "--add", "--index-info", input=info, env=env, log=False)
        for path, pf in zip(stack.files, stack.patches):
            proc = self.sh.run(*Shell.git_argv("apply", "--cached", "--whitespace=nowarn", str(path)), env=env, check=False, log=False)
            if proc.returncode != 0:
                raise PatchConflict(pf, "on the pin's own blobs: " + describe_apply_failure(pf, proc.stderr))
        return seed

    def _describe_conflict(self, pf: PatchFile, plain_stderr: str, env: dict[str, str]) -> str:
        """What the failed `git apply --3way` left in the scratch index, as file, hunk and conflicting lines."""
        stages: dict[str, dict[int, str]] = {}
        for entry in self.git("ls-files", "-u", "-z", env=env, log=False).split("\0"):
            if entry:
                meta, _, path = entry.partition("\t")
                _, blob, stage = meta.split()
                stages.setdefault(path, {})[int(stage)] = blob
        if not stages:  # no merge was possible (e.g. a file the patch creates is in the way)
            return describe_apply_failure(pf, plain_stderr) + " (and no 3-way merge was possible)"
        path = next(iter(stages))
        base, ours, theirs = self.read_objects([stages[path].get(n, "0" * 40) for n in (1, 2, 3)], env)
        return describe_merge_conflict(pf, path, base or b"", ours or b"", theirs or b"")

    def revert(self, stack: Stack, state: TreeState) -> None:
        assert state.base is not None
        self._move_tree("revert", self.head(), state.base)

    def _committer_ident(self) -> str | None:
        proc = self.sh.run(*Shell.git_argv("var", "GIT_COMMITTER_IDENT"), check=False, log=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def _import_objects(self, tmp_objects: Path) -> None:
        for sub in sorted(tmp_objects.iterdir()):
            if not sub.is_dir() or len(sub.name) != 2:
                continue
            dest = self.objects / sub.name
            dest.mkdir(exist_ok=True)
            for obj in sub.iterdir():
                target = dest / obj.name
                if not target.exists():
                    shutil.copyfile(obj, target.with_suffix(".tmp"))
                    os.chmod(target.with_suffix(".tmp"), 0o444)
                    os.replace(target.with_suffix(".tmp"), target)

    def describe(self) -> str:
        branch = self.git("symbolic-ref", "--quiet", "--short", "HEAD", check=False, log=False).strip()
        return f"git checkout, {'branch ' + branch if branch else 'detached HEAD'}"


class PlainTree:
    kind = "plain"

    def __init__(self, path: Path, sh: Shell) -> None:
        self.path = path
        self.sh = sh

    def check_writable(self) -> None:
        _check_writable(self.path, "the tree")

    def ensure_clean(self, stack: Stack) -> None:
        """Local edits show up as a state no prefix of the stack explains (see ``state``)."""

    def _journal_dir(self) -> Path:
        return self.path / PLAIN_JOURNAL_DIR

    def has_journal(self) -> bool:
        return self._journal_dir().exists()

    def recover(self) -> bool:
        jdir = self._journal_dir()
        record_path = jdir / "journal.json"
        if not jdir.exists():
            return False
        if record_path.exists():
            record = json.loads(record_path.read_text())
            ui.info(f"recovering from an interrupted {record['op']} in {self.path} (journal {jdir})")
            for path, existed in record["paths"].items():
                target = self.path / path
                if existed:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(target.name + ".fca-tmp")
                    shutil.copy2(jdir / "orig" / path, tmp)
                    os.replace(tmp, target)
                elif target.exists():
                    target.unlink()
        shutil.rmtree(jdir)
        return True

    def state(self, stack: Stack) -> TreeState:
        contents = read_tree_files(self.path, stack.watched)
        if not stack.manifest.mismatches(contents):
            return TreeState(applied=0)
        pairs = list(zip(stack.files, stack.patches))
        for k in range(len(stack), 0, -1):
            try:
                states = apply_to_contents(self.sh, contents, list(reversed(pairs[:k])), reverse=True)
            except PatchConflict:
                continue
            if not stack.manifest.mismatches(states[-1]):
                return TreeState(applied=k)
        bad = stack.manifest.mismatches(contents)
        raise ui.UserError(
            describe_mismatch(self.path, bad).replace(
                "; check out", ", and no prefix of the stack explains it (local edits?); check out"
            )
        )

    def verify_base(self, stack: Stack, state: TreeState) -> None:
        """``state`` already proved the base by content."""

    def base_mismatches(self, stack: Stack, state: TreeState) -> list[tuple[str, str, str]]:
        return []

    def check(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> None:
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), remaining)

    def _write(self, op: str, new: dict[str, bytes | None], modes: dict[str, int]) -> None:
        current = read_tree_files(self.path, list(new))
        changed = [p for p in new if new[p] != current[p]]
        jdir = self._journal_dir()
        (jdir / "orig").mkdir(parents=True)
        for p in changed:
            if current[p] is not None:
                dest = jdir / "orig" / p
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.path / p, dest)
        (jdir / "journal.json").write_text(
            json.dumps({"op": op, "paths": {p: current[p] is not None for p in changed}}, indent=1)
        )
        for i, p in enumerate(changed):
            if i == len(changed) // 2:
                failpoint.hit("plain-mid-write")
            target = self.path / p
            data = new[p]
            if data is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".fca-tmp")
            tmp.write_bytes(data)
            if p in modes:
                os.chmod(tmp, modes[p])
            elif current[p] is not None:
                shutil.copymode(self.path / p, tmp)
            os.replace(tmp, target)
        shutil.rmtree(jdir)

    def apply(self, stack: Stack, state: TreeState, *, three_way: bool = False) -> list[str]:
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        states = apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), remaining)
        for _, pf in remaining:
            ui.info(f"  applied {pf.name}")
        self._write("apply", states[-1], {})
        return []

    def revert(self, stack: Stack, state: TreeState) -> None:
        pairs = list(zip(stack.files, stack.patches))[: state.applied]
        states = apply_to_contents(self.sh, read_tree_files(self.path, stack.watched), list(reversed(pairs)), reverse=True)
        self._write("revert", states[-1], {})

    def describe(self) -> str:
        return "plain directory (no git)"
