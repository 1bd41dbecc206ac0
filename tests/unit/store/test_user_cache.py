"""The user's cache folder is spelled once, and a private folder in it is used only when it is the
user's own: a real folder, owned by this user, that no group or other user may write."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_gaia2.plan import scenarios
from pytest_gaia2.store.user_cache import cache_dir, private_folder


def test_the_cache_folder_is_under_xdg_cache_home_else_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "pytest-gaia2"
    assert scenarios.index_path() == tmp_path / "xdg" / "pytest-gaia2" / "scenario-index.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "pytest-gaia2"


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_a_new_private_folder_is_made_0o700_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    before = os.umask(umask)
    try:
        folder = private_folder("templates")
    finally:
        os.umask(before)
    assert folder == tmp_path / "xdg" / "pytest-gaia2" / "templates"
    for made in (folder, folder.parent):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700


def _unsafe(root: Path, how: str) -> None:
    """Make ``root/pytest-gaia2/templates`` (or the cache folder itself) not the user's own."""
    folder = root / "pytest-gaia2" / "templates"
    folder.parent.mkdir(parents=True)
    if how == "symlink":
        (root / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(root / "elsewhere")
    elif how == "group_writable":
        folder.mkdir()
        folder.chmod(0o770)
    elif how == "world_writable":
        folder.mkdir()
        folder.chmod(0o777)
    elif how == "cache_folder_world_writable":
        folder.parent.chmod(0o777)
    elif how == "a_file":
        folder.write_text("not a folder")
    elif how == "another_owner":
        folder.mkdir(mode=0o700)
        os.chown(folder, os.geteuid() + 1, -1)


UNSAFE = ["symlink", "group_writable", "world_writable", "cache_folder_world_writable", "a_file",
          pytest.param("another_owner", marks=pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root"))]


@pytest.mark.parametrize("how", UNSAFE)
def test_a_folder_that_is_not_the_users_own_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        how: str) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _unsafe(tmp_path, how)
    assert private_folder("templates") is None
    assert private_folder("templates") is None  # and it is not made the user's own on the way


def test_a_cache_folder_that_cannot_be_made_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    assert private_folder("templates") is None
