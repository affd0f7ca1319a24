"""tools/lib/disk.py: the free-disk preflight before a big download."""

from __future__ import annotations

import shutil

import pytest

from tools.lib import disk, ui


@pytest.fixture
def free_150mb(monkeypatch):
    """Every disk has 150 MB free."""
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=150 * disk.MB))


def test_a_path_not_made_yet_is_on_the_disk_of_its_first_existing_parent(tmp_path, monkeypatch):
    real, asked = shutil.disk_usage, []

    def disk_usage(path):  # the real reading, and which path it was taken of
        asked.append(path)
        return real(path)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    where, free = disk.free_bytes(tmp_path / "cache" / "wheels")
    # other processes write to the disk meanwhile: the figure is checked by where it was read, not by its value
    assert where == tmp_path and asked == [tmp_path]
    assert 0 < free <= real(tmp_path).total


def test_enough_space_passes(tmp_path, free_150mb):
    disk.check_free_disk(tmp_path / "new", 150 * disk.MB, "a download")


def test_too_little_space_is_one_line_naming_path_sizes_and_the_way_out(tmp_path, free_150mb):
    with pytest.raises(ui.UserError) as err:
        disk.check_free_disk(tmp_path / "new", 3_500 * disk.MB, "the venv's download")
    assert err.value.exit_code == ui.EXIT_BAD_INPUT == 3
    assert str(err.value) == (
        f"{tmp_path / 'new'}: 150.0 MB free on its disk, the venv's download needs 3.5 GB; "
        "free some space there, or set FCA_CACHE_DIR to a directory on a larger disk"
    )


def _site(root, files: dict[str, bytes], dist: str = "nvidia_cublas_cu12-12.4.5.8"):
    """A site-packages dir holding ``files`` of one distribution, with the RECORD pip writes."""
    import base64
    import hashlib

    site = root / "site-packages"
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}")
    (site / f"{dist}.dist-info").mkdir(parents=True)
    rows.append(f"{dist}.dist-info/RECORD,,")
    (site / f"{dist}.dist-info" / "RECORD").write_text("\n".join(rows) + "\n")
    return site


def test_two_venvs_of_the_same_wheels_hold_their_cuda_libraries_once(tmp_path):
    files = {"nvidia/cublas/lib/libcublas.so.12": b"x" * 1000, "nvidia/cublas/__init__.py": b""}
    a, b = _site(tmp_path / "a", files), _site(tmp_path / "b", files)
    store = tmp_path / "shared"
    assert disk.share_installed_files(a, store, ("nvidia_",)) == 0  # the first venv fills the store
    assert disk.share_installed_files(b, store, ("nvidia_",)) == 1000
    lib = "nvidia/cublas/lib/libcublas.so.12"
    assert (a / lib).samefile(b / lib) and (b / lib).read_bytes() == b"x" * 1000
    assert not list(b.rglob("*.fca-link"))


def test_other_distributions_and_changed_files_stay_copies(tmp_path):
    a = _site(tmp_path / "a", {"torch/lib/libtorch.so": b"t" * 10}, dist="torch-2.6.0")
    b = _site(tmp_path / "b", {"torch/lib/libtorch.so": b"t" * 10}, dist="torch-2.6.0")
    c = _site(tmp_path / "c", {"nvidia/x.so": b"n" * 10})
    d = _site(tmp_path / "d", {"nvidia/x.so": b"n" * 10})
    (d / "nvidia/x.so").write_bytes(b"changed by hand")
    store = tmp_path / "shared"
    for site in (a, b, c, d):
        disk.share_installed_files(site, store, ("nvidia_",))
    assert not (a / "torch/lib/libtorch.so").samefile(b / "torch/lib/libtorch.so")
    assert not (c / "nvidia/x.so").samefile(d / "nvidia/x.so")
    assert (d / "nvidia/x.so").read_bytes() == b"changed by hand"


def test_a_stored_copy_no_venv_links_to_any_more_is_removed(tmp_path):
    a = _site(tmp_path / "a", {"nvidia/x.so": b"n" * 10})
    store = tmp_path / "shared"
    disk.share_installed_files(a, store, ("nvidia_",))
    assert len(list(store.iterdir())) == 1
    shutil.rmtree(a)  # the venv is deleted
    disk.share_installed_files(_site(tmp_path / "b", {"nvidia/y.so": b"y"}), store, ("nvidia_",))
    assert [p.stat().st_nlink for p in store.iterdir()] == [2]
