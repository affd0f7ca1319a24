"""tools/fetch_pinned_source.py: the real Debian tarball, imported deterministically."""

from __future__ import annotations

import hashlib
import http.server
import io
import random
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import HANG_TIMEOUT, REPO_ROOT, git, run_tool
from tools import fetch_pinned_source
from tools.lib import disk, paths, pinned_source, ui
from tools.lib.pin import PIN, RELEASE, Manifest
from tools.lib.pinned_source import READY_MARKER, ensure_pinned_source, ensure_release_source, find_debian_mirror, release_root
from tools.lib.shell import Shell


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
    outs = [p.communicate(timeout=HANG_TIMEOUT) for p in procs]
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
            time.sleep(6.5)  # three progress intervals: a line shows the half even on a loaded machine
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
    assert float(download[-1][2]) >= 6.5
    assert git(cache / "src" / PIN.unpacks_to, "rev-parse", "HEAD").strip() == PIN.import_commit


# -- --source github-release: PyTorch's release tarball over HTTP, from a local server -----------

def _release_tarball(dest: Path, files: dict[str, bytes]) -> Path:
    """A synthetic pytorch-v2.6.0.tar.gz: the release layout (top dir pytorch-v2.6.0/, third_party/ in it)."""
    with tarfile.open(dest, "w:gz") as tar:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{RELEASE.unpacks_to}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


RELEASE_FILES = {
    "version.txt": b"2.6.0a0\n",
    "setup.py": b"# PyTorch's setup.py\n",
    "third_party/pybind11/CMakeLists.txt": b"# pybind11\n",
    "payload.bin": random.Random(0).randbytes(200_000),  # incompressible: the download has a size
}


class _Release(http.server.BaseHTTPRequestHandler):
    """Serves one file; sends half of it, then waits ``stall`` seconds (or until ``release`` is set)."""

    data = b""
    stall = 0.0
    release: threading.Event
    requests: list

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.requests.append(dict(self.headers))
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.data)))
        self.end_headers()
        half = len(self.data) // 2
        self.wfile.write(self.data[:half])
        self.wfile.flush()
        self.release.wait(self.stall)
        self.wfile.write(self.data[half:])

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def release_server(tmp_path):
    """Factory: (url, the served tarball's sha256, the handler class) of a local server of a synthetic release."""
    servers = []

    def start(stall: float = 0.0):
        data = _release_tarball(tmp_path / "served.tar.gz", RELEASE_FILES).read_bytes()
        handler = type("Release", (_Release,), {"data": data, "stall": stall, "release": threading.Event(), "requests": []})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/{RELEASE.tarball}", hashlib.sha256(data).hexdigest(), handler

    yield start
    for server in servers:
        server.RequestHandlerClass.release.set()
        server.shutdown()


def test_release_download_shows_bytes_total_and_time(release_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pinned_source, "PROGRESS_EVERY", 0.2)
    url, sha, handler = release_server(stall=60)
    info = ui.info

    def info_then_release(message: str) -> None:  # the server sends the rest once a line showed the half
        info(message)
        if re.search(r" ([1-9]\d?)% ", message):
            handler.release.set()

    monkeypatch.setattr(ui, "info", info_then_release)
    target = pinned_source.download_release(tmp_path / "cache", url, sha)
    assert target == tmp_path / "cache" / "downloads" / RELEASE.tarball
    size = ui.fmt_bytes(len(handler.data)).replace(".", r"\.")
    lines = re.findall(rf"^\[([\d.]+ kB)/{size} (\d+)% (\d+\.\d)s\] downloading {RELEASE.tarball}$", capsys.readouterr().err, re.M)
    assert any(0 < int(pct) < 100 for _, pct, _ in lines), lines  # a line during the stall
    assert lines[-1][1] == "100" and float(lines[-1][2]) >= float(lines[0][2])


def test_release_with_a_bad_sha256_is_refused_and_deleted(release_server, tmp_path, capsys):
    url, sha, _ = release_server()
    cache = tmp_path / "cache"
    wrong = "0" * 64
    rc = ui.run_main(fetch_pinned_source.main, ["--source", "github-release", "--cache-dir", str(cache), "--url", url, "--sha256", wrong])
    assert rc == 3
    part = cache / "downloads" / f"{RELEASE.tarball}.part"
    assert f"error: {part} has sha256 {sha}, expected {wrong} (--sha256); deleted it" in capsys.readouterr().err
    assert list((cache / "downloads").iterdir()) == []
    assert not release_root(cache).exists()


def test_the_recorded_release_sha256_is_checked_without_sha256(release_server, tmp_path):
    url, sha, _ = release_server()
    with pytest.raises(ui.UserError) as err:
        pinned_source.download_release(tmp_path / "cache", url)
    assert RELEASE.sha256 == "3005690eb7b083c443a38c7657938af63902f524ad87a6c83f1aca38c77e3b57"  # the full digest
    assert f"has sha256 {sha}, expected {RELEASE.sha256} (recorded: conda-forge's" in str(err.value)
    assert err.value.exit_code == 3


def test_a_leftover_part_file_is_never_used(release_server, tmp_path):
    url, sha, handler = release_server()
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / f"{RELEASE.tarball}.part").write_bytes(handler.data)  # complete, but never renamed
    target = pinned_source.download_release(tmp_path / "cache", url, sha)
    assert len(handler.requests) == 1  # downloaded again
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert [p.name for p in downloads.iterdir()] == [RELEASE.tarball]


def test_a_killed_download_leaves_no_tarball_and_the_next_run_starts_over(release_server, tmp_path):
    url, sha, handler = release_server(stall=60)
    cache = tmp_path / "cache"
    part = cache / "downloads" / f"{RELEASE.tarball}.part"
    argv = [sys.executable, str(REPO_ROOT / "tools" / "fetch_pinned_source.py"), "--source", "github-release",
            "--cache-dir", str(cache), "--url", url, "--sha256", sha]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (part.is_file() and part.stat().st_size >= len(handler.data) // 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert part.stat().st_size == len(handler.data) // 2
    assert not (cache / "downloads" / RELEASE.tarball).exists()
    handler.release.set()  # the server finishes the next download at once
    target = pinned_source.download_release(cache, url, sha)
    assert len(handler.requests) == 2 and "Range" not in handler.requests[1]  # from the start
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha and not part.exists()


def test_release_import_is_a_tagged_checkout_with_third_party(tmp_path):
    tarball = _release_tarball(tmp_path / RELEASE.tarball, RELEASE_FILES)
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    manifest = Manifest.from_contents({"version.txt": RELEASE_FILES["version.txt"], "torch/absent.py": None})
    cache = tmp_path / "cache"
    root = ensure_release_source(cache, Shell(verbose=False), tarball=tarball, sha256=sha, manifest=manifest)
    assert root == cache / "src" / "release" / "pytorch-v2.6.0"
    assert (root / ".git" / READY_MARKER).read_text() == sha + "\n"
    assert git(root, "rev-list", "--count", "v2.6.0").strip() == "1"
    assert git(root, "ls-files").split() == sorted(RELEASE_FILES)
    assert git(root, "status", "--porcelain") == ""
    assert ensure_pinned_source(cache, Shell(verbose=False)) == root  # the tools use it when Debian's is not there


def test_a_release_tree_that_is_not_the_pin_is_refused(release_server, tmp_path, capsys):
    url, sha, _ = release_server()
    cache = tmp_path / "cache"
    rc = ui.run_main(fetch_pinned_source.main, ["--source", "github-release", "--cache-dir", str(cache), "--url", url, "--sha256", sha])
    assert rc == 3
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        f"error: {RELEASE.tarball}: {RELEASE.unpacks_to}/ is not PyTorch v2.6.0: ")
    assert not release_root(cache).exists() and not list(release_root(cache).parent.glob(".partial-*"))


def test_without_apt_the_error_names_the_release_and_tarball_options(tmp_path):
    bindir = tmp_path / "bin"  # a PATH with git and tar but no apt-get
    bindir.mkdir()
    for tool in ("git", "tar", "xz"):
        if shutil.which(tool):
            (bindir / tool).symlink_to(shutil.which(tool))
    res = run_tool("fetch_pinned_source", "--cache-dir", tmp_path / "cache", env={"PATH": str(bindir)})
    assert res.returncode == 3, res.stderr
    assert res.error_line.startswith("error: apt-get not found (not a Debian machine)")
    assert "`python tools/fetch_pinned_source.py --source github-release`" in res.error_line
    assert "pass `--tarball PATH`" in res.error_line
