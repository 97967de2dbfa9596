"""The sizes an ``.npz`` file's arrays declare, checked against the file before any is read.

An ``.npy`` header declares its array's shape and dtype, and numpy allocates that much before
it reads a byte of the data: a damaged or hostile header asking for 10^12 bytes ends in a
``MemoryError`` (or the kernel's OOM killer) instead of naming the file. Each member's data
is in the zip's own directory with its (uncompressed) size, and a reader of the member gets
no more bytes than that: an array that declares more than its member holds cannot be read,
so it is refused here, in one line, before numpy allocates it. Reads the zip's directory and
each member's header only. No Keras here.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib

import numpy as np

from ..errors import DataError

#: The .npy header readers by format version (numpy.lib.format).
_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def declared_bytes(shape: tuple, dtype: np.dtype) -> int:
    """The bytes an array of ``shape`` and ``dtype`` holds (Python integers: no overflow);
    an object array's pointers, 8 bytes each."""
    return math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize


def check_declared(
    path: str | os.PathLike, key: str, shape: tuple, dtype: np.dtype, available: int
) -> None:
    """Refuse an array whose header declares more data than its member holds.

    Args:
        path: the file, for the message. key: the array's name. shape, dtype: what its
            header declares. available: bytes of the member after the header.

    Raises:
        DataError: "<path>: <key> declares <shape> <dtype> (<n> bytes), and the file holds
            <m> bytes of it; ...". Object arrays (pickles) are not bounded here: their
            elements are in the pickle (the reader of one bounds them).
    """
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        return
    need = declared_bytes(shape, dtype)
    if need > available:
        raise DataError(
            f"{path}: {key} declares {tuple(shape)} {dtype} ({need:,} bytes), and the file "
            f"holds {available:,} bytes of it; expected an array of its header's size (a "
            "damaged or truncated file)"
        )


def check_npz(path: str | os.PathLike) -> None:
    """Check every ``.npy`` member of an ``.npz`` file against its size
    (:func:`check_declared`), reading headers only. A file that is not a readable zip, or a
    member that is not an ``.npy`` of version 1 or 2, is left to the reader, which names it.

    Raises:
        DataError: an array that declares more data than the file holds for it.
    """
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError):
        return  # the reader says what is wrong with it
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            try:
                with zf.open(info) as fh:
                    read = _HEADERS.get(np.lib.format.read_magic(fh))
                    if read is None:
                        continue
                    shape, _, dtype = read(fh)
                    available = info.file_size - fh.tell()
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError, zlib.error):
                continue  # a damaged member: the reader says so
            check_declared(path, info.filename.removesuffix(".npy"), shape, dtype, available)
