"""Atomic writes on a full disk (issue 12, item 9): a clear error naming the path and the
space, and nothing left that looks complete."""

from __future__ import annotations

import errno
import shutil

import pytest

from embryo_bench.errors import StorageError
from embryo_bench.io import atomic_path


def test_too_little_free_space_is_refused_before_writing(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    target = tmp_path / "model.keras"
    too_little = pytest.raises(StorageError, match=r"model\.keras: not enough space .* needed")
    with too_little, atomic_path(target, suffix=".keras", needed_bytes=free + 2**30) as tmp:
        tmp.write_bytes(b"never")
    assert list(tmp_path.iterdir()) == []


def test_a_device_that_fills_while_writing_names_the_path_and_leaves_nothing(tmp_path):
    target = tmp_path / "model.keras"
    full = pytest.raises(StorageError, match=r"model\.keras: not enough space to write it \(No")
    with full, atomic_path(target, suffix=".keras", needed_bytes=1000) as tmp:
        tmp.write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_other_write_errors_pass_through_unchanged(tmp_path):
    with pytest.raises(PermissionError), atomic_path(tmp_path / "x.json"):
        raise PermissionError(errno.EACCES, "Permission denied")
    assert list(tmp_path.iterdir()) == []
