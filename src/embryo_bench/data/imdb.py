"""IMDb reviews as Keras's ``imdb.npz``, turned into the padded token-id arrays that
minimaxir's ``imdb_fasttext.py`` and ``imdb_bidirectional_lstm.py`` trained on.

Why this file and not the raw ``aclImdb_v1.tar.gz`` text: the scripts trained on exactly the
ids of ``imdb.npz`` (``keras.datasets.imdb.load_data(num_words=20000)`` then
``pad_sequences``), so the same file gives the same sequences, lengths and vocabulary, hence
the same work per step; a tokenizer of our own would give other ids and lengths. The file is
17 MB against 84 MB, and its sha256 is published by Keras.

Its ``x_train``/``x_test`` are numpy object arrays of Python lists, stored as pickles. A
downloaded file is never unpickled with an unrestricted unpickler: :class:`_ArrayUnpickler`
resolves only the globals such a pickle names (numpy's array reconstructor, ``ndarray``,
``dtype``, and ``_codecs.encode`` with latin-1, which pickle protocol 2 uses for bytes), and
every element must then be a list of non-negative ints; anything else is refused as damaged.
No array is allocated larger than its file can fill: a plain array's header is checked
against its member's size (:func:`.npzcheck.check_declared`), and an array a pickle makes
against the pickle's (:class:`_BoundedArray`). The file's sha256 is checked before it is read
(:func:`.fetch.fetch`).

Token ids follow ``load_data``'s defaults: the reviews shuffled with ``RandomState(113)``
(training, then test, one generator), a start token 1 in front, word ids shifted by 3, ids
not below ``num_words`` replaced by the out-of-vocabulary token 2; then ``pad_sequences``'s
defaults: the last ``maxlen`` tokens kept, zeros in front.
"""

from __future__ import annotations

import codecs
import os
import pickle
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import DataError
from .npzcheck import check_declared, declared_bytes

#: load_data's defaults (keras/src/datasets/imdb.py).
SEED, START, OOV, INDEX_FROM = 113, 1, 2, 3
#: The arrays of imdb.npz.
KEYS = ("x_train", "y_train", "x_test", "y_test")
#: numpy's reconstructor of a pickled array (its module moved in numpy 2: both names map here).
_RECONSTRUCT = np.ndarray.__reduce__(np.empty(0))[0]


def _latin1(text: str, encoding: str) -> bytes:
    """``_codecs.encode`` as pickle protocol 2 calls it for bytes, and only that."""
    if encoding != "latin1":
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r}; expected 'latin1'")
    return codecs.encode(text, "latin1")


#: An object array holds a pointer per element, and each element takes at least a byte of
#: its pickle: an array of a pickle of N bytes holds at most this many times N bytes.
POINTER_BYTES = 8


def _check_size(shape, dtype, limit: int) -> None:
    """Refuse an array a pickle asks for that is larger than the pickle could fill
    (``limit`` bytes), before numpy allocates it."""
    try:
        dims = (int(shape),) if isinstance(shape, int) else tuple(int(n) for n in shape)
        need = declared_bytes(dims, np.dtype(dtype))
    except (TypeError, ValueError) as exc:
        raise pickle.UnpicklingError(f"an array of shape {shape!r}: {exc}") from None
    if need > limit:
        raise pickle.UnpicklingError(
            f"an array of shape {dims} {np.dtype(dtype)} ({need:,} bytes) from a pickle that "
            f"can fill at most {limit:,}"
        )


class _BoundedArray(np.ndarray):
    """``numpy.ndarray`` as a pickle of :class:`_ArrayUnpickler` may make it: no larger
    (created or restored) than its pickle can fill (``limit`` bytes, set per pickle), so a
    damaged or hostile shape is an error, not an allocation of 10^12 bytes."""

    limit = 0

    def __new__(cls, shape, dtype=float, *args, **kwargs):
        _check_size(shape, dtype, cls.limit)
        return super().__new__(cls, shape, dtype, *args, **kwargs)

    def __setstate__(self, state):
        # (version, shape, dtype, is_fortran, data), or without the version (numpy < 1.x)
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise pickle.UnpicklingError(f"an array state of {type(state).__name__}")
        _check_size(state[-4], state[-3], type(self).limit)
        super().__setstate__(state)


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles a numpy object array and nothing else: every other global is refused, and
    every array it makes is bounded by the pickle's size (:class:`_BoundedArray`).

    Args:
        fh: the pickle. size: its bytes (the array's member, less the .npy header).
    """

    def __init__(self, fh, size: int, **kwargs):
        super().__init__(fh, **kwargs)
        self.limit = POINTER_BYTES * size
        bounded = type("_BoundedArray", (_BoundedArray,), {"limit": self.limit})
        self.allowed = {
            ("numpy.core.multiarray", "_reconstruct"): self._reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): self._reconstruct,
            ("numpy", "ndarray"): bounded,
            ("numpy", "dtype"): np.dtype,
            ("_codecs", "encode"): _latin1,
        }

    def _reconstruct(self, subtype, shape, dtype):
        """numpy's reconstructor, for arrays of this pickle's own bounded type only."""
        if not (isinstance(subtype, type) and issubclass(subtype, _BoundedArray)):
            raise pickle.UnpicklingError(f"_reconstruct of {subtype!r}; expected numpy.ndarray")
        _check_size(shape, dtype, self.limit)
        return _RECONSTRUCT(subtype, shape, dtype)

    def find_class(self, module: str, name: str):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"global {module}.{name} is not allowed (only a numpy object array)"
            ) from None


def _read_member(path: Path, zf: zipfile.ZipFile, key: str) -> np.ndarray:
    """One array of the npz: a plain array as numpy reads it (no pickle), after its header's
    size is checked against the member's (:func:`.npzcheck.check_declared`); an object
    array through :class:`_ArrayUnpickler`, bounded by its pickle's size.

    Raises:
        DataError: naming ``path`` and the array: missing, another .npy version, a header
            that declares more data than the file holds, a pickle that names another global,
            asks for an array larger than it can fill, or is not an object array of the
            header's shape.
    """
    name = f"{key}.npy"
    if name not in zf.namelist():
        raise DataError(f"{path}: no {name}; expected the arrays {', '.join(KEYS)}")
    member = zf.getinfo(name)
    try:
        with zf.open(name) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise DataError(f"{path}: {name} is .npy version {version}; expected 1.0 or 2.0")
            available = member.file_size - fh.tell()
            check_declared(path, key, shape, dtype, available)
            array = None
            if dtype.hasobject:
                array = _ArrayUnpickler(fh, available, encoding="ASCII").load()
        if array is None:
            with zf.open(name) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
    except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, EOFError) as exc:
        raise DataError(
            f"{path}: {key} is not a numpy array of token-id lists ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(array, np.ndarray) or array.dtype != object or array.shape != shape:
        raise DataError(
            f"{path}: {key} unpickles as {type(array).__name__}; expected an object array of "
            f"shape {shape}"
        )
    return array.view(np.ndarray)


def _words(path: Path, key: str, i: int, review, keep: int | None = None) -> np.ndarray:
    """One review's word ids as stored (its last ``keep`` where given), int64 (n,).

    Raises:
        DataError: naming ``path`` and the review: not a list of non-negative ints.
    """
    if type(review) is not list:
        raise DataError(
            f"{path}: {key}[{i}] is {type(review).__name__}; expected a list of word ids"
        )
    try:
        part = review if keep is None else review[-keep:]
        words = np.array(part) if part else np.zeros(0, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        words = None
    if (
        words is None
        or words.ndim != 1
        or words.dtype.kind != "i"
        or (len(words) and words.min() < 0)
    ):
        raise DataError(
            f"{path}: {key}[{i}] holds {review[:5]!r}...; expected non-negative int word ids"
        )
    return words


def _pad(path: Path, key: str, reviews: np.ndarray, maxlen: int, num_words: int) -> np.ndarray:
    """``load_data``'s ids, then ``pad_sequences``'s padding and truncation, as int32
    (N, maxlen); ``reviews`` already in load_data's shuffled order."""
    out = np.zeros((len(reviews), maxlen), dtype=np.int32)
    for i, review in enumerate(reviews):
        ids = _words(path, key, i, review, keep=maxlen) + INDEX_FROM
        ids[ids >= num_words] = OOV
        out[i, maxlen - len(ids) :] = ids
        if len(review) < maxlen:  # the start token survives the truncation
            out[i, maxlen - len(ids) - 1] = START
    return out


def _id_lists(path: Path, key: str, reviews: np.ndarray, num_words: int) -> list[list[int]]:
    """``load_data``'s whole id lists (start token, ids shifted, out-of-vocabulary ids), not
    padded: what imdb_fasttext.py adds its n-grams to."""
    out = []
    for i, review in enumerate(reviews):
        ids = _words(path, key, i, review) + INDEX_FROM
        ids[ids >= num_words] = OOV
        out.append([START, *ids.tolist()])
    return out


def ngram_table(train: list[list[int]], ngram_range: int, num_words: int) -> dict[tuple, int]:
    """imdb_fasttext.py's n-gram ids: every distinct n-gram (2..``ngram_range`` ids in a row)
    of the training lists, numbered from ``num_words + 1`` on. The script numbered its
    Python set in iteration order; here they are numbered in sorted order, so the same
    file gives the same ids on every Python (the same n-grams and count, other ids).

    Returns:
        n-gram (a tuple of ids) -> its id.
    """
    grams: set[tuple] = set()
    for ids in train:
        for n in range(2, ngram_range + 1):
            grams.update(zip(*(ids[k:] for k in range(n)), strict=False))
    return {gram: num_words + 1 + k for k, gram in enumerate(sorted(grams))}


def add_ngrams(lists: list[list[int]], table: dict[tuple, int], ngram_range: int) -> None:
    """imdb_fasttext.py's ``add_ngram``: each list's n-grams that ``table`` numbers appended
    to it, in the order they occur (n = 2 first), in place."""
    for ids in lists:
        words = len(ids)
        for n in range(2, ngram_range + 1):
            for k in range(words - n + 1):
                gram_id = table.get(tuple(ids[k : k + n]))
                if gram_id is not None:
                    ids.append(gram_id)


def pad_lists(lists: list[list[int]], maxlen: int) -> np.ndarray:
    """``pad_sequences``'s defaults: each list's last ``maxlen`` ids, zeros in front; int32
    (N, maxlen)."""
    out = np.zeros((len(lists), maxlen), dtype=np.int32)
    for i, ids in enumerate(lists):
        kept = ids[-maxlen:]
        if kept:
            out[i, maxlen - len(kept) :] = kept
    return out


def load_npz(
    path: str | os.PathLike,
    *,
    maxlen: int,
    num_words: int,
    limit_train: int = 0,
    limit_test: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read ``imdb.npz`` into padded token ids, as the scripts' ``load_data`` and
    ``pad_sequences`` made them.

    Args:
        path: the file (its sha256 checked before, by the caller).
        maxlen: tokens per review (400 for fastText, 100 for the bidirectional LSTM).
        num_words: ids from this up become the out-of-vocabulary token 2 (20,000).
        limit_train, limit_test: keep the first N reviews of each split after the shuffle
            (0: all).

    Returns:
        ``(x_train, y_train, x_test, y_test)``: int32 (N, maxlen) ids in 0..num_words-1 (0 is
        padding), int32 labels 0/1. Memory: the file's lists of one split at a time (a few
        hundred MB for the full set) and the padded arrays.

    Raises:
        DataError: naming ``path``: not a readable zip (truncated), an array missing, a pickle
            naming anything but a numpy object array, a review that is not a list of
            non-negative ints, labels other than 0/1 or not one per review.
    """

    def pad(split: str, reviews: np.ndarray) -> np.ndarray:
        return _pad(Path(path), f"x_{split}", reviews, maxlen, num_words)

    return _read_splits(path, limit_train, limit_test, pad)


def load_npz_ngrams(
    path: str | os.PathLike,
    *,
    maxlen: int,
    num_words: int,
    ngram_range: int,
    limit_train: int = 0,
    limit_test: int = 0,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]:
    """Read ``imdb.npz`` as minimaxir's ``imdb_fasttext.py`` (Keras 2.0's example,
    ``ngram_range = 2``) made its inputs: ``load_data``'s id lists, each review's n-grams of
    2..``ngram_range`` ids appended as ids from ``num_words + 1`` on (one per distinct n-gram
    of the training reviews kept: :func:`ngram_table`, :func:`add_ngrams`), then padded
    and truncated to ``maxlen`` (the last ids kept, zeros in front).

    Args:
        path, maxlen, num_words, limit_train, limit_test: as :func:`load_npz`.
        ngram_range: the longest n-gram (2: bigrams).

    Returns:
        ``((x_train, y_train, x_test, y_test), vocabulary)``: int32 (N, maxlen) ids and
        int32 labels as :func:`load_npz`; ``vocabulary`` the script's ``max_features``, the
        largest n-gram id + 1 (``num_words`` + 1 + the distinct n-grams), the embedding's
        rows. Memory: one split's id lists with their n-grams, and the n-gram table (about
        1.2 M bigrams of the full training set, a few hundred MB of Python tuples).

    Raises:
        DataError: as :func:`load_npz`.
    """
    table: dict[tuple, int] = {}

    def with_ngrams(split: str, reviews: np.ndarray) -> np.ndarray:
        lists = _id_lists(Path(path), f"x_{split}", reviews, num_words)
        if split == "train":
            table.update(ngram_table(lists, ngram_range, num_words))
        add_ngrams(lists, table, ngram_range)
        return pad_lists(lists, maxlen)

    arrays = _read_splits(path, limit_train, limit_test, with_ngrams)
    return arrays, num_words + 1 + len(table)


def _read_splits(path, limit_train: int, limit_test: int, convert) -> tuple:
    """The file's train then test split, shuffled as ``load_data`` did and cut to the
    limits, each split's reviews made into ids by ``convert(split, reviews)``: (x_train,
    y_train, x_test, y_test), labels int32.

    Raises:
        DataError: as :func:`load_npz`.
    """
    path = Path(path)
    rng = np.random.RandomState(SEED)
    out: list[np.ndarray] = []
    try:
        with zipfile.ZipFile(path) as zf:
            for split, limit in (("train", limit_train), ("test", limit_test)):
                reviews = _read_member(path, zf, f"x_{split}")
                labels = _read_member(path, zf, f"y_{split}")
                if labels.ndim != 1 or len(labels) != len(reviews) or labels.dtype.kind not in "iu":
                    raise DataError(
                        f"{path}: y_{split} is {labels.dtype} {labels.shape} for "
                        f"{len(reviews)} reviews; expected one integer label per review"
                    )
                if len(labels) and (labels.min() < 0 or labels.max() > 1):
                    raise DataError(f"{path}: y_{split} holds labels other than 0 and 1")
                order = np.arange(len(reviews))
                rng.shuffle(order)
                if limit > 0:
                    order = order[:limit]
                x = convert(split, reviews[order])
                del reviews
                out += [x, labels[order].astype(np.int32)]
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
        raise DataError(f"{path}: not a readable .npz file, truncated or corrupt ({exc})") from exc
    return tuple(out)
