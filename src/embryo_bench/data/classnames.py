"""Class names that come from a dataset (CIFAR-10's ``batches.meta.txt``, an image folder
copy's class folders, the ``class_names`` of a prepared-arrays file), checked before any of
them becomes a folder name, and the one writer of class folders that checks them.

A class of an image folder is a folder named after it (:mod:`.imagefolder`), so a name taken
from a file is a path: ``../../x`` or ``/tmp/y`` would put images outside the output
folder, ``.`` or ``..`` beside its split folders, two equal names would merge two classes
into one folder, and a hidden name (``.x``) would be skipped by the readers. Every name must
therefore be one plain folder name, unique (also where a file system ignores case), and
there must be one per class. A folder's classes are numbered in the sorted order of their
names when it is read back (as ``flow_from_directory`` numbers them), so the names a folder
is written with must be in that order too, or its labels would change.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..errors import DataError
from .imagefolder import write_image_folder

#: The longest folder name most file systems take, in bytes (UTF-8).
NAME_MAX = 255
#: How many names a message shows.
_SHOWN = 12


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be the name of a class folder, or None when it can.

    A name can be a folder name when it is a non-empty string of at most :data:`NAME_MAX`
    bytes in UTF-8 that is neither ``.`` nor ``..``, holds no path separator (``/``, or
    ``\\`` of Windows) and no control character (a NUL or a line break included), and does
    not start with ``.`` (a hidden folder, which the image folder readers skip).
    """
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is the folder itself or its parent"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "holds a control character"
    if name.startswith("."):
        return "starts with '.' (a hidden folder: the image folder readers skip it)"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode (an undecodable byte)"
    if size > NAME_MAX:
        return f"is {size} bytes long; a folder name has at most {NAME_MAX}"
    return None


def _shown(names: list) -> str:
    """Up to :data:`_SHOWN` names, for a message."""
    more = f", ... ({len(names)} in all)" if len(names) > _SHOWN else ""
    return ", ".join(repr(n) for n in names[:_SHOWN]) + more


def check_class_names(
    names: Iterable, where: str, *, classes: int = 0, ordered: bool = False
) -> list[str]:
    """Check names from a dataset that are, or may become, class folder names.

    Args:
        names: the class names, in label order (label k is ``names[k]``).
        where: the file (and member or key) they were read from, for the message.
        classes: when > 0, the number of names there must be (one per class).
        ordered: the names must be in sorted order (a folder is about to be written with
            them: the readers number its classes in that order).

    Returns:
        the names, as a list.

    Raises:
        DataError: one line naming ``where`` and the name: another number of names than
            ``classes``, a name that cannot be a folder name (:func:`name_problem`), two
            names that are one folder name (equal, or equal but for case or Unicode
            normalisation), or, with ``ordered``, names out of sorted order.
    """
    names = list(names)
    if classes and len(names) != classes:
        raise DataError(
            f"{where}: {len(names)} class names ({_shown(names)}); expected {classes}, one "
            "per class"
        )
    for name in names:
        problem = name_problem(name)
        if problem:
            raise DataError(
                f"{where}: class name {name!r} {problem}; expected each class name to be one "
                "folder name"
            )
    seen: dict[str, str] = {}
    for name in names:
        # Case-insensitive file systems (macOS, Windows) and NFD-normalising ones (macOS)
        # would put both classes in one folder.
        key = unicodedata.normalize("NFC", name).casefold()
        if key in seen:
            twice = "given twice" if seen[key] == name else f"the same folder as {seen[key]!r}"
            raise DataError(
                f"{where}: class name {name!r} is {twice}; expected a name of its own per "
                "class (two classes would share one folder)"
            )
        seen[key] = name
    if ordered and names != sorted(names):
        raise DataError(
            f"{where}: class names {_shown(names)} are not in sorted order; a class folder's "
            "label is the place of its name in sorted order when the folder is read, so the "
            "labels would change"
        )
    return names


def write_class_folders(
    x: np.ndarray,
    y: np.ndarray,
    folder: str | os.PathLike,
    class_names: Iterable,
    where: str,
    *,
    classes: int = 0,
    fmt: str = "jpeg",
) -> list[Path]:
    """Write images as a split folder ``<folder>/<class>/<index>.jpg|png``, the class names
    checked first (:func:`check_class_names`, in sorted order): the only writer of class
    folders (:func:`.imagefolder.write_image_folder` writes the names as given).

    Args:
        x, y, folder, fmt: as :func:`.imagefolder.write_image_folder`.
        class_names: a folder name per class, in label order.
        where: where the names come from, for the message (e.g. the arrays file).
        classes: when > 0, the number of classes (one name each).

    Returns:
        the written paths, in the order of ``x``.

    Raises:
        DataError: a name refused by :func:`check_class_names`; nothing is written.
        ValueError, OSError: as :func:`.imagefolder.write_image_folder`.
    """
    names = check_class_names(class_names, where, classes=classes, ordered=True)
    return write_image_folder(x, y, folder, names, fmt)
