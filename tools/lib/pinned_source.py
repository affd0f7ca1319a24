"""Obtain the pinned PyTorch source offline and import it as a git checkout.

Default source: Debian's source package (see :data:`tools.lib.pin.PIN`), fetched
with apt's own client through a private apt configuration under the cache dir (the
system's sources are never edited).  The other source: PyTorch's release tarball
(:data:`tools.lib.pin.RELEASE`, third_party included), downloaded over HTTPS into a
``.part`` file that is renamed only once its SHA-256 matched; its tree is also
verified by content against the stack's pin manifest.  Either is unpacked and
committed as the first commit of a new git repository, tagged with the pin's tag
(``<cache>/src/pytorch-v2.6.0`` and ``<cache>/src/release/pytorch-v2.6.0``).  The
whole thing runs under a file lock and is built in a scratch dir that is renamed
into place only when complete, so concurrent or killed runs cannot leave a half tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from . import disk, ui
from .pin import PIN, RELEASE, Manifest, describe_mismatch
from .shell import Shell

if TYPE_CHECKING:
    from .git_tree import GitTree

READY_MARKER = "fca-pin-ready"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# Disk the pinned source takes (measured, with a margin): a download is apt's private lists (~25 MB,
# more while apt unpacks them) and the source package (27 MB); the import is the unpacked tree and its
# git objects (~200 MB).
DOWNLOAD_NEED = 100 * disk.MB
IMPORT_NEED = 300 * disk.MB
# The release tarball with third_party: estimates (it could not be downloaded where this was written):
# a ~0.4 GB download, a ~2 GB tree and its git objects.
RELEASE_DOWNLOAD_NEED = 1 * disk.GB
RELEASE_IMPORT_NEED = 4 * disk.GB
PROGRESS_EVERY = 2.0  # seconds between progress lines
_DEBIAN_CODENAMES = {"buster", "bullseye", "bookworm", "trixie", "forky", "sid", "unstable", "testing", "stable"}


def source_root(cache: Path) -> Path:
    return cache / "src" / PIN.unpacks_to


def release_root(cache: Path) -> Path:
    """Where the release tarball's checkout lives (named like upstream's tree)."""
    return cache / "src" / "release" / RELEASE.unpacks_to


def is_ready(root: Path) -> bool:
    return (root / ".git" / READY_MARKER).is_file()


def _lock(cache: Path, name: str = "pinned-source"):
    from filelock import FileLock  # runtime dependency (setup.py)

    (cache / "locks").mkdir(parents=True, exist_ok=True)
    return FileLock(str(cache / "locks" / f"{name}.lock"))


def _no_debian(reason: str) -> ui.UserError:
    """Debian's package cannot be fetched here: say which other sources there are."""
    return ui.UserError(
        f"{reason}: run `python tools/fetch_pinned_source.py --source github-release` (PyTorch's "
        f"{RELEASE.tarball} from GitHub, third_party included; every tool then uses it), or download "
        f"{PIN.tarball} (Debian {PIN.debian_package}={PIN.debian_version}) elsewhere and pass "
        f"`--tarball PATH`, or pass --torch-src with a git checkout at {PIN.git_tag}"
    )


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
        raise _no_debian("apt-get not found (not a Debian machine), so Debian's source package cannot be fetched")
    mirror = mirror or os.environ.get("FCA_DEBIAN_MIRROR") or find_debian_mirror()
    if not mirror:
        raise _no_debian("no Debian archive is configured in /etc/apt (or pass --debian-mirror URL)")
    if not KEYRING.is_file():
        raise _no_debian(f"{KEYRING} is missing (install the debian-archive-keyring package)")
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


def import_tarball(tarball: Path, root: Path, sh: Shell, *, release: bool = False,
                   manifest: Manifest | None = None) -> None:
    """Unpack ``tarball`` (Debian's, or with ``release`` PyTorch's own) and commit it as the pin,
    atomically at ``root``.  With ``manifest`` the unpacked tree must match it (else exit 3)."""
    unpacks_to = RELEASE.unpacks_to if release else PIN.unpacks_to
    root.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=root.parent))
    try:
        with ui.step(f"unpacking {tarball.name}"):
            progress = ui.Progress.bytes(tarball.stat().st_size, f"unpacking {tarball.name}", every=PROGRESS_EVERY)
            sh.feed("tar", "--no-same-owner", "-xzf" if release else "-xJf", "-", "-C", str(scratch),
                    source=tarball, progress=progress)
        tree = scratch / unpacks_to
        if not tree.is_dir():
            raise ui.OperationFailed(f"{tarball.name} did not unpack to {unpacks_to}/")
        if manifest is not None:
            bad = manifest.mismatches({p: _read(tree / p) for p in manifest.entries})
            if bad:
                raise ui.UserError(f"{tarball.name}: " + describe_mismatch(tree, bad).replace(str(tree), unpacks_to + "/", 1))
        sha = sha256_file(tarball) if release else PIN.tarball_sha256
        name, _, email = PIN.import_author.partition(" <")
        env = {
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"),
            "GIT_AUTHOR_DATE": PIN.import_date, "GIT_COMMITTER_DATE": PIN.import_date,
        }
        with ui.step("importing the pin as a git repository"):
            sh.git("init", "-q", "-b", "main", cwd=tree)
            sh.git("add", "-A", "-f", ".", cwd=tree)
            origin = (f"{RELEASE.tarball} (PyTorch's release tarball, third_party included)" if release
                      else f"{PIN.tarball} (Debian {PIN.debian_package} {PIN.debian_version})")
            message = f"PyTorch v{PIN.version} (pin)\n\nImported from {origin},\nsha256 {sha}.\n"
            sh.git("commit", "-q", "--no-verify", "-m", message, cwd=tree, env=env)
            sh.git("tag", PIN.git_tag, cwd=tree)
            commit = sh.git("rev-parse", "HEAD", cwd=tree, log=False).strip()
            if commit != PIN.import_commit and not release:
                ui.info(f"warning: the import is commit {commit}, expected {PIN.import_commit}; content is verified by hashes anyway")
            (tree / ".git" / READY_MARKER).write_text(sha + "\n")
        if root.exists():
            shutil.rmtree(root)
        os.rename(tree, root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _discard_leftovers(root: Path) -> None:
    """What a killed import leaves: an incomplete tree at ``root``, scratch dirs next to it."""
    if root.exists():
        ui.info(f"removing incomplete {root} (left by an interrupted run)")
        shutil.rmtree(root)
    for partial in root.parent.glob(".partial-*") if root.parent.is_dir() else ():
        ui.info(f"removing {partial} (left by an interrupted run)")
        shutil.rmtree(partial, ignore_errors=True)


def ensure_pinned_source(
    cache: Path, sh: Shell, *, tarball: Path | None = None, mirror: str | None = None
) -> Path:
    """Return the git checkout of the pin under ``cache``, creating it if needed: Debian's, or the
    release tarball's when only that one was fetched (``--source github-release``)."""
    root = source_root(cache)
    if is_ready(root):
        return root
    if tarball is None and mirror is None and is_ready(release_root(cache)):
        return release_root(cache)
    with _lock(cache):
        if is_ready(root):  # another process finished it while we waited
            return root
        _discard_leftovers(root)
        check_disk(cache, downloading=tarball is None and not (cache / "downloads" / PIN.tarball).is_file())
        if tarball is None:
            tarball = download_tarball(cache, sh, mirror)
        with ui.step(f"verifying sha256 of {tarball.name}"):
            verify_tarball(tarball)
        import_tarball(tarball, root, sh)
    return root


def ensure_release_source(
    cache: Path, sh: Shell, *, tarball: Path | None = None, url: str | None = None, sha256: str | None = None,
    manifest: Manifest | None = None,
) -> Path:
    """Return the git checkout of PyTorch's release tarball under ``cache``, creating it if needed:
    ``tarball`` or a download from ``url`` (default: $FCA_GITHUB_RELEASE_URL, else the release asset),
    checked against ``sha256`` (default: the recorded one) and its tree against ``manifest`` (default:
    the stack's pin manifest)."""
    from . import paths

    root = release_root(cache)
    if is_ready(root):
        return root
    with _lock(cache, "release-source"):
        if is_ready(root):
            return root
        _discard_leftovers(root)
        downloading = tarball is None and not (cache / "downloads" / RELEASE.tarball).is_file()
        need = RELEASE_IMPORT_NEED + (RELEASE_DOWNLOAD_NEED if downloading else 0)
        disk.check_free_disk(cache, need, f"PyTorch's {RELEASE.tarball} ({'download, ' if downloading else ''}"
                                          "unpacked tree with third_party and git import)")
        if tarball is None:
            tarball = download_release(cache, url or os.environ.get("FCA_GITHUB_RELEASE_URL") or RELEASE.url, sha256)
        else:
            with ui.step(f"verifying sha256 of {tarball.name}"):
                if not tarball.is_file():
                    raise ui.UserError(f"{tarball} does not exist")
                _check_release_digest(tarball, sha256_file(tarball), sha256, delete=False)
        import_tarball(tarball, root, sh, release=True,
                       manifest=manifest if manifest is not None else Manifest.load(paths.DEFAULT_STACK_DIR))
    return root


def download_release(cache: Path, url: str, sha256: str | None = None) -> Path:
    """Download the release tarball into ``<cache>/downloads``: into a ``.part`` file (one left by a killed
    run is deleted first: downloads start over), renamed to its name only once its SHA-256 matched; a
    mismatch deletes it (exit 3).  A complete file already there is used when its SHA-256 matches."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / RELEASE.tarball
    if target.is_file():
        if RELEASE.matches(sha256_file(target), sha256):
            ui.info(f"using cached {target}")
            return target
        ui.info(f"removing {target}: its sha256 does not match")
        target.unlink()
    part = target.with_name(target.name + ".part")
    if part.exists():
        ui.info(f"removing {part} (left by an interrupted download; the download starts over)")
        part.unlink()
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise ui.OperationFailed(
            f"cannot download {url} ({reason}); download {RELEASE.tarball} elsewhere and pass --tarball PATH"
        ) from None
    h = hashlib.sha256()
    done = 0
    try:
        with response, ui.step(f"downloading {url}"):
            total = int(response.headers.get("Content-Length") or 0)
            with ui.watch_growth(part, total, f"downloading {RELEASE.tarball}", every=PROGRESS_EVERY), \
                    open(part, "wb") as f:
                while chunk := response.read1(1 << 20):
                    f.write(chunk)
                    h.update(chunk)
                    done += len(chunk)
            if total and done != total:
                raise ui.OperationFailed(f"the download of {url} ended after {ui.fmt_bytes(done)} of "
                                         f"{ui.fmt_bytes(total)}; run it again")
    except OSError as err:
        part.unlink(missing_ok=True)
        raise ui.OperationFailed(f"the download of {url} failed after {ui.fmt_bytes(done)} ({err}); run it again") from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    _check_release_digest(part, h.hexdigest(), sha256, delete=True)
    os.replace(part, target)
    return target


def _check_release_digest(path: Path, digest: str, sha256: str | None, *, delete: bool) -> None:
    if RELEASE.matches(digest, sha256):
        return
    if delete:
        path.unlink(missing_ok=True)
    expected = f"{sha256} (--sha256)" if sha256 else f"{RELEASE.sha256} (recorded: {RELEASE.sha256_origin})"
    raise ui.UserError(
        f"{path} has sha256 {digest}, expected {expected}; "
        + ("deleted it: the download is corrupt or not PyTorch's release" if delete else "not using it")
        + "; pass --sha256 HEX only with a digest checked against the release page"
    )


def check_disk(cache: Path, *, downloading: bool) -> None:
    """Refuse up front when the cache's disk cannot hold the source (and its download)."""
    need = IMPORT_NEED + (DOWNLOAD_NEED if downloading else 0)
    what = f"the pinned PyTorch v{PIN.version} source ({'download, ' if downloading else ''}unpacked tree and git import)"
    disk.check_free_disk(cache, need, what)


def pin_git_tree(torch_src: Path | None, cache: Path, sh: Shell, tool: str) -> GitTree:
    """The git checkout a tool reads the pin from: ``torch_src``, or the pinned source in ``cache``."""
    from .git_tree import GitTree

    src = torch_src if torch_src is not None else ensure_pinned_source(cache, sh)
    if not Path(src).exists():
        raise ui.UserError(f"--torch-src {src} does not exist; pass a git checkout of the pin (or leave it out for the pinned source)")
    if not (Path(src) / ".git").exists():
        raise ui.UserError(f"{src} is not a git checkout; {tool} reads the pin from git (use the pinned source)")
    return GitTree(Path(src).resolve(), sh)
