"""Is the commit stack above the pin in the shape ``ghstack`` expects?

``ghstack`` submits every commit between the base and HEAD as one pull request,
so the stack must be: linear (no merges), sitting directly on the pin (the
bottom commit's first parent is the base), one commit per ``series`` entry, and
every message upstream-style: a ``[compiled autograd]``,
``[functional autograd]``, ``[DTensor]``, ``[dynamo]``, ``[inductor]`` or ``[fx]`` subject, a body that says what and why, and a
``Test Plan:`` section.  Trailers ghstack writes itself (``ghstack-source-id``,
``Pull Request resolved``, ...) must not be duplicated inside a message or
shared between two commits: ghstack would then update the wrong pull request
or refuse the stack.

:func:`check_stack_shape` returns the problems as one-line strings (empty list:
the stack is fine).  It only reads the repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from . import patchfile
from .shell import Shell

SUBJECT_PREFIXES = ("[compiled autograd]", "[functional autograd]", "[DTensor]", "[dynamo]", "[inductor]", "[fx]")

# Trailers ghstack reads back (one per commit, unique across the stack).
GHSTACK_TRAILERS = ("ghstack-source-id", "ghstack-comment-id", "pull request resolved", "pull-request-resolved", "pull-request")

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9 -]*?):\s*(.*)$")
_TEST_PLAN = re.compile(r"^Test Plan:", re.MULTILINE)


def _resolve(repo: Path, rev: str, sh: Shell) -> str | None:
    proc = sh.run(*Shell.git_argv("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"), cwd=repo, check=False, log=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _trailers(message: str) -> list[tuple[str, str]]:
    """``(key, value)`` of every ``Key: value`` line of the message's last paragraph."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if len(paragraphs) < 2:
        return []
    result = []
    for line in paragraphs[-1].splitlines():
        m = _TRAILER.match(line.strip())
        if m:
            result.append((m.group(1).strip().lower(), m.group(2).strip()))
    return result


def _is_ghstack_trailer(line: str) -> bool:
    m = _TRAILER.match(line.strip())
    return bool(m) and m.group(1).strip().lower() in GHSTACK_TRAILERS


def message_problems(message: str) -> list[str]:
    """What is wrong with one commit message (subject, body, Test Plan, ghstack trailers)."""
    problems: list[str] = []
    lines = message.strip("\n").splitlines()
    subject = lines[0].strip() if lines else ""
    if not subject.startswith(SUBJECT_PREFIXES):
        problems.append(f"subject {subject!r} does not start with {' or '.join(SUBJECT_PREFIXES)}")
    if len(lines) > 1 and lines[1].strip():
        problems.append("the subject is not followed by a blank line")
    rest = "\n".join(lines[1:])
    plan = _TEST_PLAN.search(rest)
    body = rest[: plan.start()] if plan else rest
    body_lines = [l for l in body.splitlines() if l.strip() and not _is_ghstack_trailer(l)]
    if not body_lines:
        problems.append("the message has no body (say what the change does and why)")
    if not plan:
        problems.append("the message has no `Test Plan:` section")
    counts: dict[str, int] = {}
    for key, _ in _trailers(message):
        counts[key] = counts.get(key, 0) + 1
    for key in GHSTACK_TRAILERS:
        if counts.get(key, 0) > 1:
            problems.append(f"trailer `{key}` appears {counts[key]} times (ghstack expects at most one)")
    return problems


def check_stack_shape(
    repo: Path, base: str, sh: Shell, *, series: Sequence[str] | None = None, head: str = "HEAD"
) -> list[str]:
    """Problems that would stop ``ghstack`` from submitting ``base..head`` of ``repo`` cleanly.

    ``series``: the stack's patch names in order (``patches/series``); when
    given, there must be exactly one commit per entry, in the same order.
    """
    problems: list[str] = []
    base_commit = _resolve(repo, base, sh)
    if base_commit is None:
        return [f"{repo} has no commit {base!r} (the pin the stack sits on)"]
    head_commit = _resolve(repo, head, sh)
    if head_commit is None:
        return [f"{repo} has no commit {head!r}"]
    if sh.run(*Shell.git_argv("merge-base", "--is-ancestor", base_commit, head_commit), cwd=repo, check=False, log=False).returncode != 0:
        return [f"{head} does not descend from {base} ({base_commit[:12]}); rebase the stack onto it"]
    raw = sh.git("log", "--reverse", "--format=%H%x01%P%x01%B%x02", f"{base_commit}..{head_commit}", cwd=repo, log=False)
    commits: list[tuple[str, list[str], str]] = []
    for record in raw.split("\x02"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, message = record.split("\x01", 2)
        commits.append((sha, parents.split(), message))

    # Linear, on the base.
    for sha, parents, _ in commits:
        if len(parents) > 1:
            problems.append(f"commit {sha[:12]} is a merge; ghstack needs a linear stack (rebase it)")
    first_parent_chain = sh.git("rev-list", "--first-parent", "--reverse", f"{base_commit}..{head_commit}", cwd=repo, log=False).split()
    if first_parent_chain:
        bottom = first_parent_chain[0]
        bottom_parents = next(p for s, p, _ in commits if s == bottom)
        if not bottom_parents or bottom_parents[0] != base_commit:
            problems.append(f"the bottom commit {bottom[:12]} does not sit on {base} ({base_commit[:12]})")
    for sha, parents, _ in commits:
        if sha not in first_parent_chain:
            problems.append(f"commit {sha[:12]} is not on the first-parent chain from {base} (it came in through a merge)")

    # One commit per series entry, same order.
    if series is not None:
        if len(commits) != len(series):
            problems.append(f"{len(commits)} commit(s) above {base} but the series has {len(series)} entr{'y' if len(series) == 1 else 'ies'}")
        for i, ((sha, _, message), name) in enumerate(zip(commits, series), 1):
            subject = message.strip("\n").splitlines()[0] if message.strip() else ""
            slug = re.sub(r"^\d{4}-", "", name)
            slug = slug[: -len(".patch")] if slug.endswith(".patch") else slug
            if patchfile.slugify(subject) != slug:
                problems.append(f"commit {i} ({sha[:12]} {subject!r}) does not match series entry {i} ({name})")

    # Messages and ghstack trailers.
    seen: dict[tuple[str, str], str] = {}
    for sha, _, message in commits:
        for problem in message_problems(message):
            problems.append(f"commit {sha[:12]}: {problem}")
        for key, value in _trailers(message):
            if key in GHSTACK_TRAILERS:
                other = seen.setdefault((key, value), sha)
                if other != sha:
                    problems.append(f"commits {other[:12]} and {sha[:12]} share `{key}: {value}`; ghstack would map both to one pull request")
    return problems
