"""Who the stack's patches are by: the project's own identity, and checking a ``Name <email>``.

The project identity is what a patch the tooling writes itself (the squash) is
by, and what ``patches/`` uses today.  It lives here only, so a fork changes it
in one place; ``export_patches.py --author`` sets another one per export.
"""

from __future__ import annotations

import re

from . import ui

PROJECT_AUTHOR = "Functional Autograd Backport <functional-autograd-backport@users.noreply.github.com>"

# What git itself accepts as an ident (no angle brackets or control characters in the name, an
# address with one @ and no spaces), so a name git would mangle is refused up front.
_IDENT = re.compile(r"(?P<name>[^<>\x00-\x1f]*[^<>\s])\s+<(?P<email>[^<>@\s]+@[^<>@\s]+)>")


def parse_ident(text: str, option: str) -> tuple[str, str]:
    """(name, email) of ``text``, which must be ``Name <email>``; a one-line UserError (exit 3) names
    ``option`` otherwise."""
    m = _IDENT.fullmatch(text.strip())
    if m is None:
        raise ui.UserError(
            f"{option} {text!r} is not \"Name <email>\"; give a name, a space and an email address in angle "
            f"brackets, e.g. {PROJECT_AUTHOR!r}"
        )
    return m["name"].strip(), m["email"]
