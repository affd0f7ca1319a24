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
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from tools.lib import failpoint, ui
from tools.lib.pin import describe_mismatch
from tools.lib.shell import CommandError, Shell
from tools.lib.stack import PatchConflict, Stack, apply_to_contents, describe_apply_failure, read_tree_files

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
        request = "".join(f"{rev}:{p}\n" for p in paths).encode()
        proc = self.sh.run(*Shell.git_argv("cat-file", "--batch"), input=request, binary=True, log=False)
        data = proc.stdout
        result: dict[str, bytes | None] = {}
        pos = 0
        for p in paths:
            nl = data.index(b"\n", pos)
            header = data[pos:nl].decode()
            pos = nl + 1
            if header.endswith(" missing"):
                result[p] = None
                continue
            size = int(header.rsplit(" ", 1)[1])
            kind = header.split(" ")[1]
            result[p] = data[pos : pos + size] if kind == "blob" else None
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
                "commit or stash them first (`git stash`), nothing was changed"
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
    def _patch_ids_of_files(self, stack: Stack) -> list[str]:
        ids = []
        for f in stack.files:
            out = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=f.read_text(errors="surrogateescape"), log=False).stdout
            ids.append(out.split()[0] if out.strip() else "")
        return ids

    def state(self, stack: Stack) -> TreeState:
        head = self.head()
        depth = len(stack) + MAX_COMMITS_ON_TOP
        commits = self.git("rev-list", "--first-parent", f"--max-count={depth}", "HEAD", log=False).split()
        made, made_base = self._made_by_apply()
        # nothing of the stack matches: the tree is the pin, or the pin under commits some older stack made
        if made and made_base in commits and all(c in made for c in commits[: commits.index(made_base)]):
            unmatched = TreeState(applied=0, base=made_base, stale=commits.index(made_base), top=made_base)
        else:
            unmatched = TreeState(applied=0, base=head, top=head)
        if not stack.files:
            return unmatched
        log = self.git(
            "-c", "log.showRoot=false", "log", "-p", "--first-parent", "--no-color", "--full-index", f"--max-count={depth}", "--format=commit %H", "HEAD", log=False
        )
        proc = self.sh.run(*Shell.git_argv("patch-id", "--stable"), input=log, log=False)
        pid_of: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            pid, commit = line.split()
            pid_of[commit] = pid
        commit_pids = [pid_of.get(c, "") for c in commits]
        want = self._patch_ids_of_files(stack)
        if want[0] not in commit_pids:
            return unmatched
        j = commit_pids.index(want[0])
        k = 1
        while k < len(want) and j - k >= 0 and commit_pids[j - k] == want[k]:
            k += 1
        base = commits[j + 1] if j + 1 < len(commits) else None
        if base is None:
            raise ui.UserError(f"the stack's first patch is the root commit of {self.path}; its base must be the v2.6.0 commit")
        on_top, top = j - k + 1, commits[j - k + 1]
        if on_top and all(c in made for c in commits[:on_top]):
            return TreeState(applied=k, base=base, stale=on_top, top=top)
        return TreeState(applied=k, on_top=on_top, base=base, top=top)

    def _made_by_apply(self) -> tuple[set[str], str | None]:
        """The commits that HEAD's latest run of ``fca apply`` moves put there, and the commit before them.

        Read from HEAD's reflog: only a chain of ``fca apply`` entries ending at the current HEAD counts,
        so a commit the user made (or a reset, rebase, checkout) is never taken for ours.
        """
        proc = self.sh.run(*Shell.git_argv("reflog", "show", "--format=%H %gs", "HEAD"), check=False, log=False)
        entries = [line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line]
        if proc.returncode != 0 or not entries or entries[0][0] != self.head():
            return set(), None
        made: set[str] = set()
        before = None
        for i, (commit, subject) in enumerate(entries):
            if subject == "fca drop-stale":
                continue  # moved HEAD back onto commits an earlier apply made
            if subject != "fca apply" or i + 1 == len(entries):
                break
            before = entries[i + 1][0]
            made.update(self.git("rev-list", f"{before}..{commit}", log=False).split())
        return made, before

    def verify_base(self, stack: Stack, state: TreeState) -> None:
        assert state.base is not None
        paths = sorted(stack.manifest.entries)
        bad = stack.manifest.mismatches(self.read_at(state.base, paths))
        if bad:
            raise ui.UserError(describe_mismatch(self.path, bad))

    def pin_contents(self, stack: Stack) -> tuple[str, dict[str, bytes | None]]:
        """(pin commit, contents at the pin of every file the stack watches), pin verified."""
        state = self.state(stack)
        self.verify_base(stack, state)
        assert state.base is not None
        return state.base, self.read_at(state.base, stack.watched)

    # -- operations -------------------------------------------------------------------------
    def check(self, stack: Stack, state: TreeState) -> None:
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        contents = self.read_at(state.top or "HEAD", stack.watched)
        apply_to_contents(self.sh, contents, remaining)

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

    def apply(self, stack: Stack, state: TreeState) -> list[str]:
        """Commit the remaining patches on HEAD; returns the new commit ids."""
        remaining = list(zip(stack.files, stack.patches))[state.applied :]
        old = self.head()
        ident = self._committer_ident()
        commits: list[str] = []
        with tempfile.TemporaryDirectory(prefix="fca-am-") as tmp:
            tmpdir = Path(tmp)
            env = {
                "GIT_INDEX_FILE": str(tmpdir / "index"),
                "GIT_OBJECT_DIRECTORY": str(tmpdir / "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.objects),
            }
            (tmpdir / "objects").mkdir()
            self.git("read-tree", old, env=env, log=False)
            parent = old
            for path, pf in remaining:
                info = self.sh.run(
                    *Shell.git_argv("mailinfo", "-k", "-u", str(tmpdir / "msg"), str(tmpdir / "diff")),
                    input=path.read_bytes(), binary=True, env=env, log=False,
                ).stdout.decode("utf-8", "replace")
                meta = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
                proc = self.sh.run(
                    *Shell.git_argv("apply", "--cached", "--whitespace=nowarn", str(tmpdir / "diff")), env=env, check=False, log=False
                )
                if proc.returncode != 0:
                    raise PatchConflict(pf, describe_apply_failure(pf, proc.stderr))
                tree = self.git("write-tree", env=env, log=False).strip()
                body = (tmpdir / "msg").read_text(encoding="utf-8", errors="surrogateescape")
                message = meta.get("Subject", "") + ("\n\n" + body if body.strip() else "\n")
                if not message.endswith("\n"):
                    message += "\n"
                (tmpdir / "message").write_text(message, encoding="utf-8", errors="surrogateescape")
                cenv = dict(env)
                cenv.update(
                    GIT_AUTHOR_NAME=meta.get("Author", ""), GIT_AUTHOR_EMAIL=meta.get("Email", ""),
                    GIT_AUTHOR_DATE=meta.get("Date", ""), GIT_COMMITTER_DATE=meta.get("Date", ""),
                )
                if ident is None:
                    cenv.update(GIT_COMMITTER_NAME=cenv["GIT_AUTHOR_NAME"], GIT_COMMITTER_EMAIL=cenv["GIT_AUTHOR_EMAIL"])
                commit = self.git("commit-tree", tree, "-p", parent, "-F", str(tmpdir / "message"), env=cenv, log=False).strip()
                ui.info(f"  applied {pf.name} -> {commit[:12]} {meta.get('Subject', '')}")
                commits.append(commit)
                parent = commit
            self._import_objects(tmpdir / "objects")
        self._move_tree("apply", old, parent)
        return commits

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

    def check(self, stack: Stack, state: TreeState) -> None:
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

    def apply(self, stack: Stack, state: TreeState) -> list[str]:
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
