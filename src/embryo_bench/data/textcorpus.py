"""A text corpus cut into character sequences, as Keras's ``lstm_text_generation.py`` (and
minimaxir's ``text_generator_keras.py``) cut ``nietzsche.txt``: the text read as UTF-8 and
lower-cased, its distinct characters sorted (a character's id is its place in that list),
one sequence of ``length`` characters starting every ``step`` characters, and the character
after each sequence as its class.

The scripts one-hot encode the sequences as bool (N, 40, 57) arrays (2,280 bytes a sequence);
here they are stored as int32 character ids (N, 40) (160 bytes), and a model one-hot encodes
them inside. Line ends are read as Python's ``open`` reads them (universal newlines).
The scripts hold out no test set, so the test arrays are empty: an epoch is the scripts' epoch.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import DataError


def load_chars(
    path: str | os.PathLike,
    *,
    length: int,
    step: int,
    classes: int = 0,
    limit_train: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Cut a UTF-8 text file into character-id sequences and next-character classes.

    Args:
        path: the text file.
        length: characters per sequence (40).
        step: characters between the starts of two sequences (3).
        classes: when > 0, the most distinct characters allowed (the model's outputs).
        limit_train: keep the first N sequences (0: all).

    Returns:
        ``(x_train, y_train, x_test, y_test, chars)``: int32 (N, length) ids, int32 (N,) ids
        of the next characters, empty test arrays ((0, length), (0,)), and the sorted
        characters (id = index). N = ceil((len(text) - length) / step).

    Raises:
        DataError: naming ``path``: missing, not UTF-8 (with the byte offset: a file cut
            inside a character), shorter than one sequence and its next character, or more
            distinct characters than ``classes``.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    try:
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").lower()
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not UTF-8 text at byte {exc.start:,} of {len(raw):,} ({exc.reason}; "
            "a file cut inside a character?)"
        ) from None
    del raw
    if len(text) <= length:
        raise DataError(
            f"{path}: {len(text):,} characters; expected more than {length} (one sequence and "
            "the character after it)"
        )
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    chars, ids = np.unique(points, return_inverse=True)  # sorted by code point, as sorted()
    if classes and len(chars) > classes:
        raise DataError(
            f"{path}: {len(chars)} distinct characters (lower-cased); expected at most "
            f"{classes} (the workload's classes)"
        )
    ids = ids.astype(np.int32)
    starts = np.arange(0, len(text) - length, step)
    if limit_train > 0:
        starts = starts[:limit_train]
    x = ids[starts[:, None] + np.arange(length)]
    y = ids[starts + length]
    empty_x, empty_y = np.zeros((0, length), dtype=np.int32), np.zeros(0, dtype=np.int32)
    return x, y, empty_x, empty_y, [chr(c) for c in chars]
