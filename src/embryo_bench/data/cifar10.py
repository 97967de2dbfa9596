"""CIFAR-10, binary version (``cifar-10-binary.tar.gz``), as TensorFlow's CIFAR-10 tutorial
reads it: members ``cifar-10-batches-bin/data_batch_{1..5}.bin`` (training) and
``test_batch.bin`` (test), each a sequence of 3,073-byte records: 1 label byte (0..9), then
3,072 pixel bytes, the 1,024 red, then green, then blue values of a 32 x 32 image, row by row.
``batches.meta.txt`` names the classes. The python (pickle) version is not read.

Memory: the archive's member list is read first (one pass through the gzip stream), the
arrays are allocated once at their final size, and each member is then decoded into them, so
the peak is the dataset plus one member (30.7 MB) and its channel-last copy (30.7 MB): for the
full set, 184 MB of arrays plus about 62 MB.
"""

from __future__ import annotations

import os
import tarfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import DataError
from .classnames import check_class_names

#: Image side and channels.
SIDE, CHANNELS = 32, 3
#: Bytes per record: the label byte and the pixels.
RECORD = 1 + SIDE * SIDE * CHANNELS
#: Number of classes (label bytes are below it).
CLASSES = 10
#: The folder inside the archive.
FOLDER = "cifar-10-batches-bin"
#: The members of each split, in the tutorial's order.
MEMBERS = {
    "train": tuple(f"{FOLDER}/data_batch_{i}.bin" for i in range(1, 6)),
    "test": (f"{FOLDER}/test_batch.bin",),
}
#: The class names' member.
META = f"{FOLDER}/batches.meta.txt"
#: What a damaged archive's error says after its name.
_UNREADABLE = "cannot read the tar archive, truncated or corrupt"
#: What reading a damaged gzip stream or tar archive raises.
_BROKEN = (tarfile.TarError, EOFError, OSError, zlib.error)


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line: tarfile's "could not be opened" lists each
    compression it tried, a line each."""
    return " ".join(str(exc).split())


def _members(path: Path, tf: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    """The archive's members by name, checked: every data member there, a regular file of
    whole records."""
    try:
        members = {m.name.removeprefix("./"): m for m in tf.getmembers()}
    except _BROKEN as exc:
        raise DataError(
            f"{path}: cannot read the tar archive, truncated or corrupt ({_one_line(exc)})"
        ) from exc
    wanted = [name for split in MEMBERS.values() for name in split]
    missing = [name for name in wanted if name not in members]
    if missing:
        raise DataError(
            f"{path}: members {missing} missing ({len(members)} members read); expected the "
            f"CIFAR-10 binary version's {', '.join(wanted)}"
        )
    for name in wanted:
        member = members[name]
        if not member.isfile():
            raise DataError(f"{path}: member {name} is not a regular file")
        if member.size == 0 or member.size % RECORD:
            raise DataError(
                f"{path}: member {name} has {member.size:,} bytes, not a whole number of "
                f"{RECORD:,}-byte records (1 label byte + {RECORD - 1:,} pixel bytes)"
            )
    return members


def _decode(path: Path, name: str, data: bytes, x: np.ndarray, y: np.ndarray) -> None:
    """Decode whole records of ``data`` into ``x`` (N, 32, 32, 3) and ``y`` (N,)."""
    records = np.frombuffer(data, dtype=np.uint8).reshape(-1, RECORD)[: len(x)]
    labels = records[:, 0]
    if labels.max(initial=0) >= CLASSES:
        bad = int(np.argmax(labels >= CLASSES))
        raise DataError(
            f"{path}: member {name}, record {bad}: label byte {labels[bad]}; expected "
            f"0..{CLASSES - 1}"
        )
    y[:] = labels
    x[:] = records[:, 1:].reshape(-1, CHANNELS, SIDE, SIDE).transpose(0, 2, 3, 1)


def load_binary(
    path: str | os.PathLike, *, limit_train: int = 0, limit_test: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Read ``cifar-10-binary.tar.gz`` without unpacking it to disk.

    Args:
        path: the archive.
        limit_train, limit_test: keep only the first N records of each split (0: all).

    Returns:
        ``(x_train, y_train, x_test, y_test, class_names)``: uint8 (N, 32, 32, 3) channel
        last, int32 (N,), and the names of ``batches.meta.txt`` ([] when it is absent).

    Raises:
        DataError: naming ``path``: a truncated or corrupt gzip stream or tar archive, a data
            member missing or not a regular file, a member whose size is not whole 3,073-byte
            records, a label byte above 9, or a ``batches.meta.txt`` that does not name 10
            classes by 10 distinct folder names
            (:func:`embryo_bench.data.classnames.check_class_names`).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        with tarfile.open(path, "r:*") as tf:
            members = _members(path, tf)
            out: list = []
            for split, limit in (("train", limit_train), ("test", limit_test)):
                total = sum(members[m].size // RECORD for m in MEMBERS[split])
                n = min(total, limit) if limit > 0 else total
                x = np.empty((n, SIDE, SIDE, CHANNELS), dtype=np.uint8)
                y = np.empty(n, dtype=np.int32)
                at = 0
                for name in MEMBERS[split]:
                    if at == n:
                        break
                    take = min(members[name].size // RECORD, n - at)
                    with tf.extractfile(members[name]) as fh:
                        data = fh.read(take * RECORD)
                    if len(data) != take * RECORD:
                        raise DataError(
                            f"{path}: member {name} ends after {len(data):,} bytes; expected "
                            f"{take * RECORD:,} (truncated)"
                        )
                    _decode(path, name, data, x[at : at + take], y[at : at + take])
                    del data
                    at += take
                out += [x, y]
            names: list[str] = []
            if META in members and members[META].isfile():
                with tf.extractfile(members[META]) as fh:
                    names = fh.read().decode("ascii", "replace").split()
    except _BROKEN as exc:
        raise DataError(
            f"{path}: cannot read the tar archive, truncated or corrupt ({_one_line(exc)})"
        ) from exc
    # The names become folder names (workload-files): checked here, where the file is known.
    if names:
        check_class_names(names, f"{path}: member {META}", classes=CLASSES)
    return (*out, names)
