"""Obtain the pinned PyTorch source offline and import it as a git checkout.

Source: Debian's source package (see :data:`tools.lib.pin.PIN`), fetched with
apt's own client through a private apt configuration under the cache dir (the
system's sources are never edited), SHA-256 verified, unpacked and committed as
the first commit of a new git repository, tagged with the pin's tag.  The whole
thing runs under a file lock and is built in a scratch dir that is renamed into
place only when complete, so concurrent or killed runs cannot leave a half tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from tools.lib import disk, ui
from tools.lib.pin import PIN
from tools.lib.shell import Shell

READY_MARKER = "fca-pin-ready"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# Disk the pinned source takes (measured, with a margin): a download is apt's private lists (~25 MB,
# more while apt unpacks them) and the source package (27 MB); the import is the unpacked tree and its
# git objects (~200 MB).
DOWNLOAD_NEED = 100 * disk.MB
IMPORT_NEED = 300 * disk.MB
_DEBIAN_CODENAMES = {"buster", "bullseye", "bookworm", "trixie", "forky", "sid", "unstable", "testing", "stable"}


def source_root(cache: Path) -> Path:
    return cache / "src" / PIN.unpacks_to


def is_ready(root: Path) -> bool:
    return (root / ".git" / READY_MARKER).is_file()


def _lock(cache: Path):
    from filelock import FileLock  # runtime dependency (setup.py)

    (cache / "locks").mkdir(parents=True, exist_ok=True)
    return FileLock(str(cache / "locks" / "pinned-source.lock"))


def find_debian_mirror(etc: Path = Path("/etc/apt")) -> str | None:
    """The URI of the machine's configured Debian archive (not -security, not third party)."""
    candidates: list[tuple[str, list[str]]] = []
    files = [etc / "sources.list"] + sorted((etc / "sources.list.d").glob("*.list"))
    for f in files:
        if not f.is_file():
            continue
        for line in f.read_text(errors="replace").splitlines():
            line = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
            if len(line) >= 3 and line[0] in ("deb", "deb-src"):
                candidates.append((line[1], [line[2]]))
    for f in sorted((etc / "sources.list.d").glob("*.sources")):
        if not f.is_file():
            continue
        for stanza in re.split(r"\n\s*\n", f.read_text(errors="replace")):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if "uris" in fields and "suites" in fields:
                for uri in fields["uris"].split():
                    candidates.append((uri, fields["suites"].split()))
    for uri, suites in candidates:
        if any(s.split("-")[0] in _DEBIAN_CODENAMES and "security" not in s for s in suites):
            if "security" not in uri:
                return uri.rstrip("/")
    return None


def download_tarball(cache: Path, sh: Shell, mirror: str | None = None) -> Path:
    """``apt-get source --download-only`` through a private apt config; returns the tarball path."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / PIN.tarball
    if target.is_file() and _tarball_ok(target):
        ui.info(f"using cached {target}")
        return target
    if shutil.which("apt-get") is None:
        raise ui.UserError(
            f"apt-get not found: download {PIN.tarball} (Debian source package "
            f"{PIN.debian_package}={PIN.debian_version}) yourself and pass --tarball PATH, "
            f"or pass --torch-src with a git checkout at {PIN.git_tag}"
        )
    mirror = mirror or os.environ.get("FCA_DEBIAN_MIRROR") or find_debian_mirror()
    if not mirror:
        raise ui.UserError("no Debian archive is configured in /etc/apt; pass --debian-mirror URL or --tarball PATH")
    if not KEYRING.is_file():
        raise ui.UserError(f"{KEYRING} is missing; install the debian-archive-keyring package or pass --tarball PATH")
    apt = cache / "apt"
    for sub in ("etc/sources.list.d", "etc/preferences.d", "lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "etc" / "sources.list").write_text(
        f"deb-src [signed-by={KEYRING}] {mirror} {PIN.debian_suite} main\n"
    )
    opts = [
        f"-oDir::Etc::sourcelist={apt / 'etc' / 'sources.list'}",
        f"-oDir::Etc::sourceparts={apt / 'etc' / 'sources.list.d'}",
        f"-oDir::Etc::preferencesparts={apt / 'etc' / 'preferences.d'}",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
        "-oAPT::Get::List-Cleanup=0",
    ]
    if os.geteuid() == 0:
        opts.append("-oAPT::Sandbox::User=root")
    with ui.step(f"apt-get update (private config, {mirror} {PIN.debian_suite})"):
        sh.run("apt-get", *opts, "update", capture=False, chatter=True)
    with ui.step(f"apt-get source --download-only {PIN.debian_package}={PIN.debian_version}"):
        with ui.watch_growth(target, PIN.tarball_size, f"downloading {PIN.tarball}"):
            sh.run(
                "apt-get", *opts, "source", "--download-only",
                f"{PIN.debian_package}={PIN.debian_version}", cwd=downloads, capture=False, chatter=True,
            )
    if not target.is_file():
        raise ui.OperationFailed(f"apt-get did not produce {target}")
    return target


def _tarball_ok(path: Path) -> bool:
    return path.stat().st_size == PIN.tarball_size and sha256_file(path) == PIN.tarball_sha256


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_tarball(path: Path) -> None:
    if not path.is_file():
        raise ui.UserError(f"{path} does not exist")
    digest = sha256_file(path)
    if digest != PIN.tarball_sha256:
        raise ui.UserError(
            f"{path} has sha256 {digest}, expected {PIN.tarball_sha256} ({PIN.tarball}); "
            "delete it and download it again"
        )


def import_tarball(tarball: Path, root: Path, sh: Shell) -> None:
    """Unpack ``tarball`` and commit it as the pin, atomically at ``root``."""
    root.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=root.parent))
    try:
        with ui.step(f"unpacking {tarball.name}"):
            progress = ui.Progress.bytes(tarball.stat().st_size, f"unpacking {tarball.name}")
            sh.feed("tar", "--no-same-owner", "-xJf", "-", "-C", str(scratch), source=tarball, progress=progress)
        tree = scratch / PIN.unpacks_to
        if not tree.is_dir():
            raise ui.OperationFailed(f"{tarball.name} did not unpack to {PIN.unpacks_to}/")
        name, _, email = PIN.import_author.partition(" <")
        env = {
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"),
            "GIT_AUTHOR_DATE": PIN.import_date, "GIT_COMMITTER_DATE": PIN.import_date,
        }
        with ui.step("importing the pin as a git repository"):
            sh.git("init", "-q", "-b", "main", cwd=tree)
            sh.git("add", "-A", "-f", ".", cwd=tree)
            message = (
                f"PyTorch v{PIN.version} (pin)\n\n"
                f"Imported from {PIN.tarball} (Debian {PIN.debian_package} {PIN.debian_version}),\n"
                f"sha256 {PIN.tarball_sha256}.\n"
            )
            sh.git("commit", "-q", "--no-verify", "-m", message, cwd=tree, env=env)
            sh.git("tag", PIN.git_tag, cwd=tree)
            commit = sh.git("rev-parse", "HEAD", cwd=tree, log=False).strip()
            if commit != PIN.import_commit:
                ui.info(f"warning: the import is commit {commit}, expected {PIN.import_commit}; content is verified by hashes anyway")
            (tree / ".git" / READY_MARKER).write_text(PIN.tarball_sha256 + "\n")
        if root.exists():
            shutil.rmtree(root)
        os.rename(tree, root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ensure_pinned_source(
    cache: Path, sh: Shell, *, tarball: Path | None = None, mirror: str | None = None
) -> Path:
    """Return the git checkout of the pin under ``cache``, creating it if needed."""
    root = source_root(cache)
    if is_ready(root):
        return root
    with _lock(cache):
        if is_ready(root):  # another process finished it while we waited
            return root
        if root.exists():
            ui.info(f"removing incomplete {root} (left by an interrupted run)")
            shutil.rmtree(root)
        for partial in root.parent.glob(".partial-*") if root.parent.is_dir() else ():
            ui.info(f"removing {partial} (left by an interrupted run)")
            shutil.rmtree(partial, ignore_errors=True)
        check_disk(cache, downloading=tarball is None and not (cache / "downloads" / PIN.tarball).is_file())
        if tarball is None:
            tarball = download_tarball(cache, sh, mirror)
        with ui.step(f"verifying sha256 of {tarball.name}"):
            verify_tarball(tarball)
        import_tarball(tarball, root, sh)
    return root


def check_disk(cache: Path, *, downloading: bool) -> None:
    """Refuse up front when the cache's disk cannot hold the source (and its download)."""
    need = IMPORT_NEED + (DOWNLOAD_NEED if downloading else 0)
    what = f"the pinned PyTorch v{PIN.version} source ({'download, ' if downloading else ''}unpacked tree and git import)"
    disk.check_free_disk(cache, need, what)


def pin_git_tree(torch_src: Path | None, cache_dir: Path | None, sh: Shell, tool: str):
    """The git checkout a tool reads the pin from: ``torch_src``, or the pinned source."""
    from tools.lib import paths
    from tools.lib.tree import GitTree

    src = torch_src if torch_src is not None else ensure_pinned_source(
        cache_dir.resolve() if cache_dir else paths.cache_dir(), sh)
    if not Path(src).exists():
        raise ui.UserError(f"--torch-src {src} does not exist; pass a git checkout of the pin (or leave it out for the pinned source)")
    if not (Path(src) / ".git").exists():
        raise ui.UserError(f"{src} is not a git checkout; {tool} reads the pin from git (use the pinned source)")
    return GitTree(Path(src).resolve(), sh)
