"""Crash injection for tests: ``FCA_FAILPOINT=name`` SIGKILLs the process at ``hit(name)``.

Used by the tests to prove that an apply killed half-way is detected and
recovered by the next run; a no-op unless the variable names this point.
"""

from __future__ import annotations

import os
import signal


def hit(name: str) -> None:
    if os.environ.get("FCA_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
