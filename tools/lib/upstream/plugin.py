"""The pytest plugin loaded into every upstream run (``-p PLUGIN_MODULE``): collection and progress
state for the runner, upstream's sharding for trees without it, torch/extension.h's precompiled header."""

from __future__ import annotations

from pathlib import Path

PCH_ENV = "FCA_UPSTREAM_PCH"
# what a run that used the precompiled header leaves in <torch>/include/torch/: removed
# after the run and before one (a header left by another build of torch could be stale:
# its signature is the compile command, not the headers' contents)
PCH_FILES = ("extension.h.gch", "extension.h.sign", "extension.h.fca-lock")

PLUGIN_MODULE = "fca_upstream_plugin"
PLUGIN_SOURCE = '''\
"""Loaded into upstream pytest runs by tools/run_upstream_tests.py (generated; do not edit).

Writes collected.json (node ids before and after -k/shard filtering) and one
line per finished test to progress.tsv, into $FCA_UPSTREAM_STATE.  With
$FCA_UPSTREAM_SHARD=I/N it shards like upstream's pytest_shard_custom (for
trees whose conftest lacks --shard-id/--num-shards).  With
$FCA_UPSTREAM_PCH=1, load_inline uses torch/extension.h's precompiled header
(torch's own use_pch): the run's first eligible call builds it.
"""
import hashlib
import json
import os

import pytest

_DIR = os.environ.get("FCA_UPSTREAM_STATE", "")
_SHARD = os.environ.get("FCA_UPSTREAM_SHARD", "")
_phase = {}


def _write(name, text, mode="w"):
    if _DIR:
        with open(os.path.join(_DIR, name), mode) as f:
            f.write(text)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    before = [i.nodeid for i in items]
    yield
    if _SHARD:
        i, n = (int(x) for x in _SHARD.split("/"))
        items[:] = [it for it in items
                    if int.from_bytes(hashlib.sha256(it.nodeid.encode()).digest(), "little") % n == i - 1]
    _write("collected.json", json.dumps({"collected": before, "selected": [i.nodeid for i in items]}))


def pytest_configure(config):
    if os.environ.get("FCA_UPSTREAM_PCH") == "1":
        _use_the_precompiled_header()


def _use_the_precompiled_header():
    # load_inline without compiler flags of its own uses torch/extension.h's
    # precompiled header (torch's use_pch); the first such call of the run
    # builds it.  A lock next to the header keeps every compile of any shard
    # off the header while it is written (shared while compiling, exclusive
    # while building), and nothing removes it mid-run (load_inline without
    # use_pch would); the runner removes it after the run.
    import fcntl

    from torch.utils import cpp_extension

    plain = cpp_extension.load_inline
    lock_path = os.path.join(cpp_extension._TORCH_PATH, "include", "torch", "extension.h.fca-lock")

    def load_inline(*args, **kwargs):
        eligible = len(args) <= 4 and not kwargs.get("extra_cflags") and not kwargs.get("extra_include_paths")
        with open(lock_path, "a") as lock:
            if eligible and kwargs.get("use_pch", True):
                kwargs["use_pch"] = True
                fcntl.flock(lock, fcntl.LOCK_EX)
                cpp_extension._check_and_build_extension_h_precompiler_headers(None, None)
            fcntl.flock(lock, fcntl.LOCK_SH)
            return plain(*args, **kwargs)

    cpp_extension.load_inline = load_inline
    cpp_extension.remove_extension_h_precompiler_headers = lambda: None


_RANK = {"passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 2, "failed": 3, "error": 4}


def pytest_runtest_logreport(report):
    if report.failed:
        if report.when != "call":
            outcome = "error"
        elif str(report.longrepr).startswith("[XPASS(strict)]"):
            outcome = "xpassed"
        else:
            outcome = "failed"
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
    cur = _phase.setdefault(report.nodeid, ["passed", 0.0])
    cur[1] += report.duration
    if _RANK[outcome] > _RANK[cur[0]]:
        cur[0] = outcome
    if report.when == "teardown":
        outcome, secs = _phase.pop(report.nodeid)
        _write("progress.tsv", "%s\\t%.3f\\t%s\\n" % (outcome, secs, report.nodeid), "a")
'''


def write_plugin(junit_dir: Path) -> Path:
    """The pytest plugin (PLUGIN_SOURCE) as a module in ``junit_dir/.plugin``, for ``-p PLUGIN_MODULE``: its dir."""
    plugin_dir = junit_dir / ".plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    f = plugin_dir / f"{PLUGIN_MODULE}.py"
    if not f.is_file() or f.read_text() != PLUGIN_SOURCE:
        f.write_text(PLUGIN_SOURCE)
    return plugin_dir
