"""tools/fetch_pinned_source.py: the real Debian tarball, imported deterministically."""

from __future__ import annotations

import hashlib
import http.server
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import REPO_ROOT, git, run_tool
from tools import fetch_pinned_source
from tools.lib import disk, paths, ui
from tools.lib.pin import PIN
from tools.lib.pinned_source import READY_MARKER, find_debian_mirror


def test_pinned_source_is_a_git_checkout_whose_first_commit_is_the_pin(pinned_source: Path):
    assert (pinned_source / ".git" / READY_MARKER).is_file()
    assert git(pinned_source, "rev-parse", "v2.6.0^{commit}").strip() == PIN.import_commit
    assert git(pinned_source, "rev-list", "--count", "v2.6.0").strip() == "1"
    assert (pinned_source / "version.txt").read_text().strip() == "2.6.0a0"
    assert (pinned_source / "torch/csrc/autograd/generated").exists() is False  # generated at build time


def test_fetch_prints_the_checkout_path(pinned_source: Path):
    res = run_tool("fetch_pinned_source")
    assert res.returncode == 0 and res.stdout.strip() == str(pinned_source)


def test_fetch_verifies_a_users_checkout_by_content(pin_clone):
    repo = pin_clone()
    res = run_tool("fetch_pinned_source", "--torch-src", repo)
    assert res.returncode == 0 and "at PyTorch v2.6.0" in res.stdout
    (repo / "torch/csrc/dynamo/compiled_autograd.h").write_text("// not the pin\n")
    git(repo, "commit", "-qam", "change")
    res = run_tool("fetch_pinned_source", "--torch-src", repo)
    assert res.returncode == 3 and "torch/csrc/dynamo/compiled_autograd.h differs from the pin" in res.error_line


def _cached_tarball() -> Path:
    tarball = paths.cache_dir() / "downloads" / PIN.tarball
    assert tarball.is_file(), "the session fixture downloads it"
    return tarball


def test_corrupt_tarball_is_refused(pinned_source, tmp_path):
    bad = tmp_path / PIN.tarball
    bad.write_bytes(_cached_tarball().read_bytes()[:-10])
    res = run_tool("fetch_pinned_source", "--cache-dir", tmp_path / "cache", "--tarball", bad)
    assert res.returncode == 3 and f"expected {PIN.tarball_sha256}" in res.error_line
    assert not (tmp_path / "cache" / "src" / PIN.unpacks_to).exists()


def test_concurrent_fetches_after_a_killed_run_produce_one_good_checkout(pinned_source, tmp_path):
    cache = tmp_path / "cache"
    # What a run killed during unpack/import leaves behind.
    (cache / "src" / ".partial-killed" / PIN.unpacks_to).mkdir(parents=True)
    (cache / "src" / PIN.unpacks_to / "torch").mkdir(parents=True)
    argv = [sys.executable, str(REPO_ROOT / "tools" / "fetch_pinned_source.py"), "--cache-dir", str(cache), "--tarball", str(_cached_tarball())]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    root = cache / "src" / PIN.unpacks_to
    assert [o[0].strip() for o in outs] == [str(root), str(root)]
    assert sum("importing the pin" in o[1] for o in outs) == 1  # the other one waited on the lock
    assert git(root, "rev-parse", "HEAD").strip() == PIN.import_commit
    assert not list((cache / "src").glob(".partial-*"))
    assert git(root, "status", "--porcelain") == ""


def test_find_debian_mirror_reads_deb822_and_one_line_sources(tmp_path):
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\nComponents: main\n"
    )
    assert find_debian_mirror(etc) == "http://mirror.example/debian"
    shutil.rmtree(etc / "sources.list.d")
    (etc / "sources.list.d").mkdir()
    (etc / "sources.list").write_text(
        "deb [arch=amd64] https://packages.example.com/apt cloud-sdk main\n"
        "deb http://deb.example.org/debian trixie main contrib\n"
    )
    assert find_debian_mirror(etc) == "http://deb.example.org/debian"
    (etc / "sources.list").write_text("deb https://packages.example.com/apt cloud-sdk main\n")
    assert find_debian_mirror(etc) is None


def test_a_disk_too_small_is_refused_before_anything_is_fetched(pinned_source, tmp_path, monkeypatch, capsys):
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=150 * disk.MB))
    cache = tmp_path / "not made yet"
    rc = ui.run_main(fetch_pinned_source.main, ["--cache-dir", str(cache), "--debian-mirror", "http://127.0.0.1:9"])
    assert rc == 3
    assert capsys.readouterr().err.splitlines() == [
        f"error: {cache}: 150.0 MB free on its disk, the pinned PyTorch v2.6.0 source (download, unpacked tree and "
        "git import) needs 400.0 MB; free some space there, or set FCA_CACHE_DIR to a directory on a larger disk"
    ]
    assert not (cache / "downloads").exists() and not (cache / "src").exists()
    # With the tarball at hand only the unpacked tree and its import need room.
    rc = ui.run_main(fetch_pinned_source.main, ["--cache-dir", str(cache), "--tarball", str(_cached_tarball())])
    assert rc == 3 and "(unpacked tree and git import) needs 300.0 MB" in capsys.readouterr().err


def _apt_lists() -> tuple[Path, Path]:
    """The trixie InRelease (signed by Debian) and Sources index apt fetched for the session's pinned source."""
    lists = paths.cache_dir() / "apt" / "lists"
    release = sorted(lists.glob(f"*_dists_{PIN.debian_suite}_InRelease"))
    sources = sorted(lists.glob(f"*_dists_{PIN.debian_suite}_main_source_Sources*"))
    if not release or not sources:
        pytest.skip(f"{lists} has no apt lists (the pinned source came from --tarball)")
    if "\nValid-Until:" in release[0].read_text(errors="replace"):
        pytest.skip(f"{release[0]} expires; a copy cannot be served later")
    return release[0], sources[0]


def _uncompressed(index: Path) -> bytes:
    """apt keeps an index compressed the way its config says (lz4 here); the mirror serves it plain."""
    tools = {".lz4": ["lz4", "-dc"], ".zst": ["zstd", "-dc"], ".gz": ["gzip", "-dc"], ".xz": ["xz", "-dc"]}
    if index.suffix not in tools:
        return index.read_bytes()
    if shutil.which(tools[index.suffix][0]) is None:
        pytest.skip(f"{tools[index.suffix][0]} is not installed to read {index.name}")
    return subprocess.run([*tools[index.suffix], str(index)], check=True, capture_output=True).stdout


class _Mirror(http.server.BaseHTTPRequestHandler):
    """A Debian mirror of the files apt asks for; the orig tarball stalls half-way, like a slow link."""

    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = urllib.parse.unquote(self.path)
        data = self.files.get(path) or self.files.get(path.rsplit("/", 1)[-1] if "/by-hash/" in path else "")
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if path.endswith(PIN.tarball):
            half = len(data) // 2
            self.wfile.write(data[:half])
            self.wfile.flush()
            time.sleep(2.5)  # longer than the progress interval: a line must show the half
            data = data[half:]
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def local_mirror(pinned_source):
    release, sources = _apt_lists()
    index = _uncompressed(sources)
    pool = f"/pool/main/{PIN.debian_package[0]}/{PIN.debian_package}/"
    downloads = paths.cache_dir() / "downloads"
    files = {f"/dists/{PIN.debian_suite}/InRelease": release.read_bytes(),
             f"/dists/{PIN.debian_suite}/main/source/Sources": index,
             hashlib.sha256(index).hexdigest(): index}  # apt asks by hash (Acquire-By-Hash)
    files.update({pool + f.name: f.read_bytes() for f in downloads.glob(f"{PIN.debian_package}_*")})
    handler = type("Mirror", (_Mirror,), {"files": files})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def test_download_and_unpack_show_bytes_total_and_time(local_mirror, tmp_path):
    cache = tmp_path / "cache"
    res = run_tool("fetch_pinned_source", "--cache-dir", cache, "--debian-mirror", local_mirror)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(cache / "src" / PIN.unpacks_to)
    for what in (f"downloading {PIN.tarball}", f"unpacking {PIN.tarball}"):
        lines = re.findall(rf"^\[(\d+\.\d) MB/27\.2 MB (\d+)% (\d+\.\d)s\] {re.escape(what)}$", res.stderr, re.M)
        assert lines and lines[-1][:2] == ("27.2", "100"), res.stderr
    download = re.findall(rf"^\[(\d+\.\d) MB/27\.2 MB (\d+)% (\d+\.\d)s\] downloading", res.stderr, re.M)
    assert ("13.6", "50") in [d[:2] for d in download]  # the line during the stall: half of it, and how long so far
    assert float(download[-1][2]) >= 2.5
    assert git(cache / "src" / PIN.unpacks_to, "rev-parse", "HEAD").strip() == PIN.import_commit
