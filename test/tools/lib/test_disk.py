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


def test_a_path_not_made_yet_is_on_the_disk_of_its_first_existing_parent(tmp_path):
    where, free = disk.free_bytes(tmp_path / "cache" / "wheels")
    assert where == tmp_path and free == shutil.disk_usage(tmp_path).free


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
