"""Atomic writes and packed-array I/O shared by every stage.

Stage outputs are ``.npz`` files of packed uint8 arrays plus per-sample metadata, written to a
temporary name and renamed into place, so an interrupted or failed step never leaves a file that
looks complete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .errors import DataError, StorageError


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _no_space(path: Path, needed_bytes: int | None, exc: OSError | None) -> StorageError:
    free = shutil.disk_usage(path.parent).free
    need = f"; about {_mib(needed_bytes)} needed" if needed_bytes else ""
    why = f" ({exc.strerror})" if exc is not None and exc.strerror else ""
    return StorageError(
        f"{path}: not enough space to write it{why}: {_mib(free)} free on the device of "
        f"{path.parent}{need}. Nothing was written in its place; free space or point the "
        "config's outdir elsewhere and rerun"
    )


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike, suffix: str = "", needed_bytes: int | None = None
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    ``suffix`` is kept on the temporary name (e.g. ``.npz``, ``.keras``) for libraries that
    choose a format by extension. ``needed_bytes`` (the expected size, if known) is checked
    against the free space first, and named in the error.

    Raises:
        StorageError: the device is full or over quota (ENOSPC, EDQUOT), before or while
            writing; names the path, the free and the needed space (MiB).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if needed_bytes and shutil.disk_usage(path.parent).free < needed_bytes:
        raise _no_space(path, needed_bytes, None)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o666 & ~umask)  # mkstemp makes 0600; give the usual mode of a new file
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            tmp.unlink(missing_ok=True)
            raise _no_space(path, needed_bytes, exc) from exc
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def staged_folder(path: str | os.PathLike, keep: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield an empty folder beside ``path`` to write a set of files into; only when the
    block succeeds are they moved into ``path`` (created if needed), each by a rename, so a
    failure halfway leaves ``path`` as it was: no new file beside old ones (the
    figures job writes its set so). Files of ``path`` that the block did not write are kept.
    With ``keep``, the complete set is then also kept there (:func:`keep_set`), for when a
    later attempt fails after its files were removed.

    Raises:
        OSError: ``path``'s parent cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield staging
        written = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
        for rel in written:
            dest = path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, dest)
        if keep is not None:
            keep_set(path, written, keep)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def kept_path(folder: str | os.PathLike) -> Path:
    """Where the last complete set of ``folder``'s files is kept: ``<folder>.previous``
    beside it (e.g. ``figures.previous``)."""
    folder = Path(folder)
    return folder.with_name(f"{folder.name}.previous")


def _link_or_copy(src: Path, dest: Path) -> None:
    """``dest`` as a hard link of ``src`` (no space, the same times), or a copy where links
    cannot be made (another file system)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def keep_set(
    folder: str | os.PathLike, files: list[str | os.PathLike], keep: str | os.PathLike
) -> None:
    """Keep ``files`` (paths relative to ``folder``) in ``keep``, replacing what it held: hard
    links where possible, so keeping costs no space until ``folder``'s files are replaced.

    Raises:
        OSError: a file is missing or ``keep``'s parent cannot be written.
    """
    folder, keep = Path(folder), Path(keep)
    new = keep.with_name(f".{keep.name}.new")
    old = keep.with_name(f".{keep.name}.old")
    shutil.rmtree(new, ignore_errors=True)
    for rel in files:
        _link_or_copy(folder / rel, new / rel)
    new.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(old, ignore_errors=True)
    if keep.exists():
        os.replace(keep, old)
    os.replace(new, keep)
    shutil.rmtree(old, ignore_errors=True)


def keep_complete(folder: str | os.PathLike, files: list[str | os.PathLike]) -> bool:
    """Keep ``files`` (paths under ``folder``) as :func:`staged_folder` keeps a set, when
    nothing is kept for ``folder`` yet and every one of them is there: a complete set made
    before sets were kept.

    Returns:
        whether they were kept.

    Raises:
        OSError: as :func:`keep_set`.
    """
    keep = kept_path(folder)
    if keep.exists() or not all(os.path.isfile(f) for f in files):
        return False
    keep_set(folder, [os.path.relpath(f, folder) for f in files], keep)
    return True


def kept_missing(folder: str | os.PathLike) -> list[str]:
    """The files kept for ``folder`` (:func:`kept_path`) that ``folder`` lacks: after a
    failed job whose outputs were removed, what is to be found only where it was kept.

    Returns:
        paths under ``folder``, sorted ([] when nothing is kept).
    """
    folder, keep = Path(folder), kept_path(folder)
    if not keep.is_dir():
        return []
    kept = sorted(p.relative_to(keep) for p in keep.rglob("*") if p.is_file())
    return [str(folder / rel) for rel in kept if not (folder / rel).exists()]


def write_json(path: str | os.PathLike, obj: object) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically (non-JSON values via ``str``).

    Raises:
        OSError: the folder cannot be created or written.
    """
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def parse_json(text: str, where: str | os.PathLike):
    """The JSON value in ``text``; ``where`` (a file, a command-line option) names it in the
    error.

    Raises:
        DataError: ``<where>: not valid JSON (<the parser's message, with line and column>)``.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc})") from None


def non_finite(value, path: tuple = ()) -> tuple[tuple, float] | None:
    """The first number in ``value`` (a parsed JSON or YAML document: mappings, lists and
    scalars, nested) that is NaN or an infinity, with where it is: the keys and list indices
    leading to it from ``path``; None when every number is finite.

    JSON as Python reads it (``NaN``, ``Infinity``) and YAML (``.nan``, ``.inf``) both spell
    them, and every range check lets NaN through (each comparison with it is false), so the
    readers of numbers a user hands in refuse them with this before their checks of range.
    """
    if isinstance(value, float):  # bool and int are always finite
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if (found := non_finite(item, (*path, key))) is not None:
            return found
    return None


def read_json(path: str | os.PathLike) -> dict:
    """Read a JSON object from ``path``.

    Raises:
        DataError: the file is missing, a folder, not UTF-8, unreadable, or not valid JSON.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except IsADirectoryError as exc:
        raise DataError(f"{path}: a folder; expected a JSON file") from exc
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not UTF-8 text at byte {exc.start:,}; expected a JSON file"
        ) from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror}); expected a JSON file") from exc
    return parse_json(text, path)


def save_arrays(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """Save named arrays to an uncompressed ``.npz`` at ``path`` atomically.

    Arrays must not be object arrays (they are read back with ``allow_pickle=False``).

    Raises:
        OSError: the folder cannot be created or written.
    """
    with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def load_arrays(
    path: str | os.PathLike,
    required: tuple[str, ...] = (),
    keys: tuple[str, ...] | None = None,
) -> dict[str, np.ndarray]:
    """Load the arrays of an ``.npz`` file into memory: every one, or only those of ``keys``
    that it holds (the others are not read).

    Raises:
        DataError: the file is missing, unreadable, or lacks one of ``required``.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [k for k in required if k not in npz.files]
            if missing:
                raise DataError(f"{path}: missing arrays {missing}; has {sorted(npz.files)}")
            return {k: npz[k] for k in npz.files if keys is None or k in keys}
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: not a readable .npz array file ({exc})") from exc


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Return the hex sha256 of a file's bytes.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_tree(root: str | os.PathLike, paths: list[str] | None = None) -> str:
    """Hex sha256 identifying file contents: over each file's path relative to ``root`` and
    the sha256 of its bytes, sorted by path. ``paths`` (files or folders, relative to
    ``root``) limits it to those; default every file under ``root``. ``__pycache__`` folders
    are skipped. Identifies a local database copy (provenance) and what an image is built
    from.

    Raises:
        FileNotFoundError: a path in ``paths`` does not exist. OSError: a file is unreadable.
    """
    root = Path(root)
    files = []
    for rel in paths if paths is not None else ["."]:
        base = root / rel
        if not base.exists():
            raise FileNotFoundError(f"{base}: not found")
        files += [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
    h = hashlib.sha256()
    for p in sorted({f for f in files if "__pycache__" not in f.parts}):
        # The name's own bytes: a name that is not UTF-8 (kept by Python as surrogate
        # escapes) cannot be encoded as UTF-8 text; every other name gives the same bytes.
        h.update(os.fsencode(p.relative_to(root)) + b"\0")
        h.update(sha256_file(p).encode())
    return h.hexdigest()


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as printable text: a name that is not valid UTF-8 (Python keeps its bytes as
    surrogate escapes) has those bytes written as ``\\xNN``, e.g. ``caf\\xe9.png``."""
    text = os.fsdecode(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def _link_target(path: str | os.PathLike) -> str:
    try:
        return f" (-> {shown_path(os.readlink(path))})"
    except OSError:
        return ""


#: Entries that are neither files nor folders, by their type (``stat.S_IFMT``).
_SPECIAL = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def entry_problem(path: str | os.PathLike) -> str | None:
    """What makes one folder entry unusable as data, or None when it is usable.

    Args:
        path: the entry (a file, a folder or a symbolic link).

    Returns:
        None, or a description to put after the path in an error: a name that is not UTF-8,
        a symbolic link that loops, a link to a missing file, an entry that cannot be read,
        or one that is neither a regular file nor a folder (a named pipe, a socket, a device).
    """
    try:
        os.fsdecode(os.path.basename(path)).encode("utf-8")
    except UnicodeEncodeError:
        kind = "folder" if os.path.isdir(path) else "file"
        return (
            f"a {kind} name that is not UTF-8 (its bytes shown as \\xNN); expected UTF-8 names "
            "(rename it)"
        )
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return (
                f"a link to a missing file{_link_target(path)}; expected the file it points to "
                "(restore it or remove the link)"
            )
        return "not found (removed while the folder was read)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return (
                f"a symbolic link that loops{_link_target(path)}; expected a link to a file or "
                "folder (fix or remove it)"
            )
        if exc.errno in (errno.EACCES, errno.EPERM):
            return "cannot be read (permission denied); expected a readable entry"
        return f"cannot be read ({exc.strerror})"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        # Opening a named pipe waits for a writer, for ever: a data job hung on one.
        kind = _SPECIAL.get(stat.S_IFMT(st.st_mode), "a special file")
        return (
            f"{kind}, not a regular file or folder; expected a file or folder (a reader of a "
            "pipe waits for a writer, a device's bytes are not data)"
        )
    return None


def folder_entries(directory: str | os.PathLike) -> list[os.DirEntry]:
    """The entries of ``directory``, sorted by name.

    Raises:
        DataError: the folder cannot be listed (permission denied, or another OS error),
            naming it.
    """
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except PermissionError as exc:
        raise DataError(
            f"{shown_path(directory)}: a folder that cannot be read (permission denied); "
            "expected a readable folder (check its permissions)"
        ) from exc
    except OSError as exc:
        raise DataError(
            f"{shown_path(directory)}: a folder that cannot be read ({exc.strerror})"
        ) from exc


def tree_stamp(directory: str | os.PathLike) -> str:
    """Cheap identity of a folder's contents: sha256 over every file's relative path, size
    and modification time (ns), sorted (each folder's files, then its sub-folders). Changes
    when a file is added, removed, resized or touched; used to rerun indexing of sources read
    in place. Hidden entries (names starting with ".") are left out, as indexing leaves them
    out; links to folders are followed.

    Args:
        directory: the folder.

    Returns:
        16 hex digits, or "" for a missing folder.

    Raises:
        DataError: naming the path: a folder that cannot be read (permission denied), a
            symbolic link that loops (to itself, or to a folder above it), a link to a
            missing file, or a name that is not UTF-8 (its bytes shown as ``\\xNN``).
    """
    root = Path(directory)
    if not root.is_dir():
        return ""
    h = hashlib.sha256()

    def visit(folder: str, above: frozenset) -> None:
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in above:
            raise DataError(
                f"{shown_path(folder)}: a symbolic link that loops{_link_target(folder)} (to a "
                "folder above it); expected a link to a file or folder (fix or remove it)"
            )
        above = above | {(st.st_dev, st.st_ino)}
        files, folders = [], []
        for entry in folder_entries(folder):
            if entry.name.startswith("."):
                continue
            problem = entry_problem(entry.path)
            if problem:
                raise DataError(f"{shown_path(entry.path)}: {problem}")
            (folders if entry.is_dir() else files).append(entry)
        for entry in files:
            st = entry.stat()
            rel = os.path.relpath(entry.path, root)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        for entry in folders:
            visit(entry.path, above)

    visit(str(root), frozenset())
    return h.hexdigest()[:16]


def check_format(data: dict, current: int, where: str) -> dict:
    """``data`` without its ``format`` key, after checking that version: files without one
    are version 0 (written before versions were recorded) and are read.

    Raises:
        DataError: ``format`` is not a whole number, or is newer than ``current`` (the
            file was written by a newer embryo-bench; the message names ``where``).
    """
    version = data.get("format", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise DataError(f"{where}: format {version!r} is not a version number")
    if version > current:
        raise DataError(
            f"{where}: format {version} is newer than this embryo-bench reads ({current}); "
            "read it with the newer embryo-bench that wrote it"
        )
    return {k: v for k, v in data.items() if k != "format"}
