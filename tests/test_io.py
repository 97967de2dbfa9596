"""Atomic writes on a full disk: a clear error naming the path and the
space, and nothing left that looks complete."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil

import pytest

from embryo_bench.errors import DataError, StorageError
from embryo_bench.io import atomic_path, sha256_file, sha256_tree, tree_stamp


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


# --- tree_stamp on damaged image folders ----------------------------------------------------


def _tree(root):
    """root/Train/<0,1>/a.png and root/Test/0/a.png (contents do not matter to the stamp)."""
    for rel in ("Train/0", "Train/1", "Test/0"):
        (root / rel).mkdir(parents=True)
        (root / rel / "a.png").write_bytes(b"png")
    return root


def _old_stamp(root) -> str:
    """tree_stamp as it was before damaged image folders were named (os.walk, links to
    folders not followed)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            st = os.stat(os.path.join(dirpath, name))
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (os.symlink("l2.png", d / "l1.png"), os.symlink("l1.png", d / "l2.png")),
            r"Train/1/l1\.png: a symbolic link that loops \(-> l2\.png\); expected a link to a "
            r"file or folder",
        ),
        (
            lambda d: os.symlink("gone.png", d / "b.png"),
            r"Train/1/b\.png: a link to a missing file \(-> gone\.png\); expected the file it "
            r"points to",
        ),
        (
            lambda d: open(os.fsencode(d) + b"/caf\xe9.png", "wb").close(),
            r"Train/1/caf\\xe9\.png: a file name that is not UTF-8 \(its bytes shown as "
            r"\\xNN\); expected UTF-8 names",
        ),
        (
            lambda d: os.symlink("..", d / "up"),
            r"Train/1/up: a symbolic link that loops \(-> \.\.\) \(to a folder above it\)",
        ),
        (
            lambda d: os.mkfifo(d / "p.png"),
            r"Train/1/p\.png: a named pipe, not a regular file or folder; expected a file or "
            r"folder \(a reader of a pipe waits for a writer",
        ),
    ],
    ids=["file link loop", "dangling link", "name not UTF-8", "folder link loop", "named pipe"],
)
def test_tree_stamp_names_a_damaged_entry(tmp_path, damage, message):
    root = _tree(tmp_path / "images")
    damage(root / "Train" / "1")
    with pytest.raises(DataError, match=message) as err:
        tree_stamp(root)
    assert str(err.value).startswith(str(root / "Train" / "1"))
    str(err.value).encode("utf-8")  # printable: the CLI and Snakemake print it


def test_sha256_tree_of_a_name_that_is_not_utf8(tmp_path):
    """A name's bytes are hashed as they are (a folder of an image folder copy named in
    Latin-1 ended in a UnicodeEncodeError's traceback; its reader names it in one line), and
    a tree of UTF-8 names hashes as before."""
    root = _tree(tmp_path / "images")

    def old(root) -> str:
        h = hashlib.sha256()
        for p in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(sha256_file(p).encode())
        return h.hexdigest()

    assert sha256_tree(root) == old(root)
    before = sha256_tree(root)
    open(os.fsencode(root / "Train") + b"/caf\xe9.png", "wb").close()
    assert sha256_tree(root) != before


def test_tree_stamp_names_a_folder_it_cannot_read(tmp_path, monkeypatch):
    """os.walk passed over a folder it could not list; the stamp then hid it. (The tests run
    as root, which reads any folder: the denial is simulated here, and real in
    test_sources.py::test_an_unreadable_class_folder_is_named_at_plan_time_and_by_index.)"""
    root = _tree(tmp_path / "images")
    locked, scandir = root / "Train" / "1", os.scandir

    def denying_scandir(path):
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", denying_scandir)
    with pytest.raises(
        DataError, match=r"Train/1: a folder that cannot be read \(permission denied\); expected"
    ):
        tree_stamp(root)


def test_tree_stamp_of_a_plain_tree_is_unchanged_and_ignores_hidden_entries(tmp_path):
    root = _tree(tmp_path / "images")
    stamp = tree_stamp(root)
    assert stamp == _old_stamp(root)  # no rerun of indexing for folders that were fine
    (root / "Train" / ".ipynb_checkpoints").mkdir()
    (root / "Train" / ".ipynb_checkpoints" / "x.png").write_bytes(b"x")
    os.symlink("gone", root / "Train" / "0" / ".dangling")
    assert tree_stamp(root) == stamp  # hidden entries are not data (indexing skips them)
    (root / "Train" / "1" / "a.png").write_bytes(b"longer png")
    assert tree_stamp(root) != stamp


def test_tree_stamp_follows_a_linked_class_folder(tmp_path):
    """Indexing reads a class folder that is a link to a folder; changes inside it rerun it."""
    root = _tree(tmp_path / "images")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.png").write_bytes(b"png")
    os.symlink(tmp_path / "elsewhere", root / "Test" / "1")
    stamp = tree_stamp(root)
    (tmp_path / "elsewhere" / "c.png").write_bytes(b"png")
    assert tree_stamp(root) != stamp
    assert tree_stamp(tmp_path / "missing") == ""


def test_a_staged_folder_changes_nothing_until_the_whole_set_is_written(tmp_path):
    """The figures job writes into a staging folder; a failure halfway
    leaves the previous figures as they were, success moves every file in."""
    from embryo_bench.io import staged_folder

    out = tmp_path / "figures"
    (out / "utilisation").mkdir(parents=True)
    (out / "table.csv").write_text("old")
    (out / "kept.png").write_text("old, not rewritten")
    with pytest.raises(RuntimeError), staged_folder(out) as staging:
        (staging / "table.csv").write_text("new")
        raise RuntimeError("the figures failed halfway")
    assert (out / "table.csv").read_text() == "old"
    with staged_folder(out) as staging:
        (staging / "utilisation").mkdir()
        (staging / "utilisation" / "run.png").write_text("new")
        (staging / "table.csv").write_text("new")
        assert (out / "table.csv").read_text() == "old"  # nothing moved before the end
    assert (out / "table.csv").read_text() == "new"
    assert (out / "utilisation" / "run.png").read_text() == "new"
    assert (out / "kept.png").read_text() == "old, not rewritten"
    assert [p.name for p in tmp_path.iterdir()] == ["figures"]  # no staging folder left
