"""The git kind of :mod:`tree`: the stack as commits, built in a scratch index and object dir and
moved in only when every patch applied (see the module docstring of :mod:`tree`)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Literal, Sequence

from . import failpoint, ui
from .patchfile import PatchFile
from .pin import PIN, describe_mismatch, sha256_bytes
from .shell import CommandError, Shell
from .stack import PatchConflict, Stack, describe_apply_failure, describe_merge_conflict
from .tree_base import StackMark, TreeState, check_writable, strip_stack_mark

Made = tuple[PatchFile, str, str, bool]  # a commit apply built: patch, commit id, subject, 3-way merged


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


# How far above the stack we look for user commits before giving up.
MAX_COMMITS_ON_TOP = 50
JOURNAL = "fca-apply-journal.json"


class GitTree:
    kind: Literal["git"] = "git"

    def __init__(self, path: Path, sh: Shell) -> None:
        self.path = path
        self.sh = Shell(cwd=path, testing=sh.testing, verbose=sh.verbose, env=dict(sh.env))
        top = self.git("rev-parse", "--show-toplevel", log=False).strip()
        if Path(top).resolve() != path:
            raise ui.UserError(f"{path} is inside the git repository {top}; pass the repository's top-level dir")
        self.git_dir = Path(self.git("rev-parse", "--absolute-git-dir", log=False).strip())
        self._pid_cache: dict[Path, list[str]] = {}
        self._message_cache: dict[Path, list[str]] = {}
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
        check_writable(self.path, "the tree")
        check_writable(self.git_dir, "the git dir")

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

    def _mail(self, path: Path, tmpdir: Path, env: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
        """A patch file as ``git am -k`` reads it: its mail headers (Author, Email, Date, Subject) and the
        commit message apply makes of it (subject and body, without the stack mark); its diff is left in
        ``tmpdir / "diff"``."""
        info = self.sh.run(
            *Shell.git_argv("mailinfo", "-k", "-u", str(tmpdir / "msg"), str(tmpdir / "diff")),
            input=path.read_bytes(), binary=True, env=env, log=False,
        ).stdout.decode("utf-8", "replace")
        meta = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
        body = (tmpdir / "msg").read_text(encoding="utf-8", errors="surrogateescape")
        message = meta.get("Subject", "") + ("\n\n" + body if body.strip() else "\n")
        return meta, message if message.endswith("\n") else message + "\n"

    def _file_messages(self, stack: Stack) -> list[str]:
        """The commit message apply makes of every patch file, computed once per stack."""
        cached = self._message_cache.get(stack.dir)
        if cached is None:
            with tempfile.TemporaryDirectory(prefix="fca-mail-") as tmp:
                cached = [self._mail(f, Path(tmp))[1] for f in stack.files]
            self._message_cache[stack.dir] = cached
        return cached

    def _history(self, depth: int) -> tuple[list[str], dict[str, str], dict[str, StackMark], dict[str, str]]:
        """HEAD's first-parent commits (newest first), their patch-ids, their stack marks and the
        messages of the commits that have one (without the mark)."""
        commits = self.git("rev-list", "--first-parent", f"--max-count={depth}", "HEAD", log=False).split()
        messages = self.git("log", "--first-parent", f"--max-count={depth}", "--format=%x01%H%n%B", "HEAD", log=False)
        marks: dict[str, StackMark] = {}
        bodies: dict[str, str] = {}
        for chunk in messages.split("\x01")[1:]:
            commit, _, body = chunk.partition("\n")
            mark = StackMark.find(body)
            if mark is not None:
                marks[commit] = mark
                bodies[commit] = strip_stack_mark(body.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
        log = self.git(
            "-c", "log.showRoot=false", "log", "-p", "--first-parent", "--no-color", "--full-index", f"--max-count={depth}", "--format=commit %H", "HEAD", log=False
        )
        proc = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=log, log=False)
        pids: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            pid, commit = line.split()
            pids[commit] = pid
        return commits, pids, marks, bodies

    def state(self, stack: Stack) -> TreeState:
        head = self.head()
        commits, pids, marks, bodies = self._history(len(stack) + MAX_COMMITS_ON_TOP)

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
            # a commit apply made is the patch's only with the patch's message too: patch-ids see
            # the diff alone, and a patch whose message alone changed must be committed again
            if c in marks and bodies[c].rstrip("\n") != self._file_messages(stack)[i].rstrip("\n"):
                return False
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
                meta, message = self._mail(path, tmpdir, env)
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
