"""One object runs every external command (git, apt-get, tar, ...).

Each command is logged as a copy-pasteable ``$ ...`` line (with ``cd`` and
environment overrides when they matter), so a user can replay what a tool did.
``Shell(testing=True)`` pins the environment git sees (identity, dates, no
user/system config) so output is deterministic in tests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Iterator, Mapping, Sequence

from . import ui

# Settings that change the bytes git prints or writes; forced on every call so a
# user's ~/.gitconfig cannot change patches, status or commits.
GIT_STABLE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.quotepath", "true"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicprefix", "false"),
    ("diff.relative", "false"),
    ("diff.algorithm", "myers"),
    ("diff.indentHeuristic", "true"),
    ("diff.suppressBlankEmpty", "false"),
    ("diff.renames", "false"),
    ("format.signature", ""),
    ("format.coverLetter", "false"),
    ("format.useAutoBase", "false"),
    ("format.thread", "false"),
    ("format.numbered", "false"),
    ("apply.whitespace", "nowarn"),
    ("advice.detachedHead", "false"),
    ("gc.auto", "0"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("init.defaultBranch", "main"),
)

TESTING_ENV: Mapping[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "FCA Test",
    "GIT_AUTHOR_EMAIL": "fca-test@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_NAME": "FCA Test",
    "GIT_COMMITTER_EMAIL": "fca-test@example.com",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
}


class CommandError(ui.OperationFailed):
    def __init__(self, argv: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        detail = (stderr or stdout).strip().splitlines()
        tail = detail[-1] if detail else "no output"
        super().__init__(f"`{shlex.join(argv)}` failed with exit code {returncode}: {tail}")


@dataclasses.dataclass
class Shell:
    cwd: Path | None = None
    testing: bool = False
    verbose: bool = True
    env: dict[str, str] = dataclasses.field(default_factory=dict)

    def _env(self, extra: Mapping[str, str] | None, *, unset: Sequence[str] = (), c_locale: bool = True) -> dict[str, str]:
        env = dict(os.environ)
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", *unset):
            env.pop(name, None)
        if self.testing:
            env.update(TESTING_ENV)
        env.update(self.env)
        if extra:
            env.update(extra)
        if c_locale:
            env.setdefault("LC_ALL", "C")
        return env

    def log(self, argv: Sequence[str], cwd: Path | None, extra_env: Mapping[str, str] | None,
            stdin: Path | None = None, suffix: str = "") -> None:
        if not self.verbose:
            return
        prefix = ""
        if cwd is not None and cwd != self.cwd:
            prefix = f"cd {shlex.quote(str(cwd))} && "
        env_txt = "".join(f"{k}={shlex.quote(v)} " for k, v in (extra_env or {}).items())
        redirect = f" < {shlex.quote(str(stdin))}" if stdin is not None else ""
        ui.info(f"$ {prefix}{env_txt}{shlex.join(argv)}{redirect}{suffix}")

    def run(
        self,
        *argv: str,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        check: bool = True,
        log: bool = True,
        capture: bool = True,
        binary: bool = False,
        chatter: bool = False,
        executable: str | None = None,
    ) -> subprocess.CompletedProcess:
        """Run ``argv``; ``capture=False`` lets its output through, and ``chatter`` sends its stdout to
        stderr as well, where a tool's log goes (its stdout is its result, e.g. a path).  ``executable``
        is the program to start, ``argv[0]`` then only the name it sees itself called by (a venv's
        ``bin/python`` started as the real interpreter behind it)."""
        where = cwd if cwd is not None else self.cwd
        if log:
            self.log(argv, where, env)
        if isinstance(input, str) and binary:
            input = input.encode()
        with _launching(argv, where):
            proc = subprocess.run(
                list(argv),
                cwd=where,
                env=self._env(env),
                input=input,
                stdout=subprocess.PIPE if capture else (2 if chatter else None),
                stderr=subprocess.PIPE if capture else None,
                text=not binary,
                executable=executable,
            )
        if check and proc.returncode != 0:
            out = proc.stdout if capture else ""
            errtxt = proc.stderr if capture else ""
            if binary:
                out = out.decode(errors="replace") if out else ""
                errtxt = errtxt.decode(errors="replace") if errtxt else ""
            raise CommandError(argv, proc.returncode, out or "", errtxt or "")
        return proc

    def start(self, *argv: str, output: Path | None, cwd: Path | None = None, env: Mapping[str, str] | None = None,
              unset: Sequence[str] = ()) -> subprocess.Popen:
        """Start ``argv`` in the background, in a process group of its own (:func:`kill_group` stops it and
        its children), its stdout and stderr to the file ``output`` (``None``: a pipe the caller reads).
        Logged as ``$ ... > output 2>&1 &``.  A job runs in the caller's environment plus ``env``, less
        ``unset``, and keeps the user's locale: what it runs (a test suite, a benchmark) should see what
        the user's own shell would give it."""
        where = cwd if cwd is not None else self.cwd
        if self.verbose:
            redirect = f" > {shlex.quote(str(output))} 2>&1 &" if output is not None else " &"
            self.log(argv, where, env, suffix=redirect)
        with contextlib.ExitStack() as files, _launching(argv, where):
            if output is not None:
                output.parent.mkdir(parents=True, exist_ok=True)
                stdout = files.enter_context(open(output, "wb"))  # the child keeps its own copy of the fd
            else:
                stdout = subprocess.PIPE
            return subprocess.Popen(list(argv), cwd=where, env=self._env(env, unset=unset, c_locale=False),
                                    stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True)

    def call(self, *argv: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, log: bool = True) -> int:
        """Run ``argv`` in the foreground as the user's own shell would (the user's command, e.g. under
        ``overlay.py run``): the caller's environment as it is (locale included) plus ``env``, its input
        and output passed through; return its exit code."""
        where = cwd if cwd is not None else self.cwd
        if log:
            self.log(argv, where, env)
        with _launching(argv, where):
            return subprocess.call(list(argv), cwd=where, env={**os.environ, **self.env, **(env or {})})

    def spawn(self, *argv: str, stderr: IO, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        """Start ``argv`` to be talked to over pipes: its stdin and stdout are text pipes the caller
        writes requests to and reads answers from, its stderr goes to the open file ``stderr`` (a file,
        not a pipe: a chatty process never blocks on it).  Logged as ``$ ... 2> FILE`` (the pipes
        are the caller's).  It runs in the caller's environment plus ``env``, the user's locale kept,
        as :meth:`start`'s jobs do."""
        name = getattr(stderr, "name", None)  # an unnamed temporary file's is its descriptor
        self.log(argv, self.cwd, env, suffix=f" 2> {shlex.quote(name) if isinstance(name, str) else '(a temporary file)'}")
        with _launching(argv, self.cwd):
            return subprocess.Popen(list(argv), cwd=self.cwd, env=self._env(env, c_locale=False),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)

    def feed(self, *argv: str, source: Path, progress: ui.Progress, cwd: Path | None = None) -> None:
        """Run ``argv`` with the file ``source`` as its stdin, fed in chunks that ``progress`` counts, so
        a long silent command (``tar -x`` of a big archive) shows bytes done of the total; raise
        CommandError on failure."""
        where = cwd if cwd is not None else self.cwd
        self.log(argv, where, None, stdin=source)
        with open(source, "rb") as src, tempfile.TemporaryFile() as errors:
            with _launching(argv, where):
                proc = subprocess.Popen(list(argv), cwd=where, env=self._env(None), stdin=subprocess.PIPE,
                                        stdout=errors, stderr=errors)
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # it stopped reading: its exit code and message say why
                try:
                    for chunk in iter(lambda: src.read(1 << 20), b""):
                        proc.stdin.write(chunk)
                        progress.update(progress.done + len(chunk))
                finally:
                    proc.stdin.close()
            returncode = proc.wait()
            if returncode != 0:
                errors.seek(0)
                raise CommandError(argv, returncode, "", errors.read().decode(errors="replace"))
        progress.update(progress.done, force=True)

    def git(self, *args: str, cwd: Path | None = None, **kwargs) -> str:
        """Run git with the stable config; return stdout (text) or raise CommandError."""
        return self.git_proc(*args, cwd=cwd, **kwargs).stdout

    def git_proc(self, *args: str, cwd: Path | None = None, log: bool = True, env=None, **kwargs) -> subprocess.CompletedProcess:
        # The log shows what a user would type; the stable -c settings are implied.
        if log:
            self.log(("git", *args), cwd if cwd is not None else self.cwd, env)
        try:
            return self.run(*self.git_argv(*args), cwd=cwd, log=False, env=env, **kwargs)
        except CommandError as err:
            raise CommandError(("git", *args), err.returncode, err.stdout, err.stderr) from None

    @staticmethod
    def git_argv(*args: str) -> list[str]:
        argv = ["git"]
        for key, value in GIT_STABLE_CONFIG:
            argv += ["-c", f"{key}={value}"]
        return argv + list(args)


@contextlib.contextmanager
def _launching(argv: Sequence[str], where: Path | None) -> Iterator[None]:
    """A program that cannot be started is the user's to fix (install it), not a traceback."""
    try:
        yield
    except FileNotFoundError as err:
        raise ui.UserError(f"`{argv[0]}` is not installed or not on PATH ({err.strerror}); install it and retry") from None
    except PermissionError as err:
        raise ui.UserError(f"cannot run `{argv[0]}` in {where}: {err.strerror}") from None


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a process started with ``start_new_session=True`` and its children (its process group)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
