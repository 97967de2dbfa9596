"""The workloads' datasets: each real format written small, as its real
file is built, served on 127.0.0.1 and fetched through the download machinery (sha256
checked), prepared into the arrays file and checked value by value; damaged and truncated
copies named in one line with nothing written; synthetic arrays; image folders both ways;
the registry."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import io
import os
import pickle
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image
from test_download import NoRangeHandler, _serve

from embryo_bench.data import arrays, datasets, fetch, imagefolder, imdb, registry
from embryo_bench.data.registry import DatasetFile
from embryo_bench.errors import ConfigError, DataError, DownloadError

RNG = np.random.default_rng(0)


# --- the real formats, written small -------------------------------------------------------


def mnist_npz(path: Path, n_train=7, n_test=3) -> dict:
    """Keras's mnist.npz: savez_compressed of uint8 (N, 28, 28) images and uint8 labels."""
    data = {
        "x_train": RNG.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": RNG.integers(0, 10, n_train).astype(np.uint8),
        "x_test": RNG.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": RNG.integers(0, 10, n_test).astype(np.uint8),
    }
    np.savez_compressed(path, **data)
    return data


def idx_bytes(array: np.ndarray) -> bytes:
    """An idx file of unsigned bytes: magic 0x0000 08 <ndim>, big-endian int32 sizes, data."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.astype(np.uint8).tobytes()


def mnist_idx(folder: Path) -> dict:
    data = mnist_npz(folder / "unused.npz")
    (folder / "unused.npz").unlink()
    names = {
        "train-images-idx3-ubyte.gz": data["x_train"],
        "train-labels-idx1-ubyte.gz": data["y_train"],
        "t10k-images-idx3-ubyte.gz": data["x_test"],
        "t10k-labels-idx1-ubyte.gz": data["y_test"],
    }
    for name, array in names.items():
        (folder / name).write_bytes(gzip.compress(idx_bytes(array)))
    return data


def cifar_records(labels: np.ndarray, images: np.ndarray) -> bytes:
    """Binary records: a label byte, then the red, green and blue planes row by row."""
    planes = images.transpose(0, 3, 1, 2).reshape(len(labels), -1)
    return np.concatenate([labels[:, None].astype(np.uint8), planes], axis=1).tobytes()


CIFAR_META = b"airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n"


def cifar_tar(path: Path, per_member=2, skip=(), record_bytes=None, meta=CIFAR_META) -> dict:
    """cifar-10-binary.tar.gz: cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin and
    batches.meta.txt (the real class names, or ``meta``), gzip-compressed tar as the real
    file."""
    members = {}
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for name in names:
        labels = RNG.integers(0, 10, per_member).astype(np.uint8)
        images = RNG.integers(0, 256, (per_member, 32, 32, 3), dtype=np.uint8)
        members[name] = (labels, images)
    with tarfile.open(path, "w:gz") as tf:
        entries = {"batches.meta.txt": meta}
        entries.update({n: cifar_records(*members[n]) for n in names})
        for name, data in entries.items():
            if name in skip:
                continue
            if record_bytes and name == "data_batch_2.bin":
                data = data[:record_bytes]
            info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return members


IMDB_REVIEWS = {
    "train": [[5, 19998, 7], [1, 2, 3, 4, 5, 6], [], [40, 41]],
    "test": [[9], [100, 200, 300, 400, 500]],
}
IMDB_LABELS = {"train": [1, 0, 1, 0], "test": [0, 1]}


def object_array(lists: list) -> np.ndarray:
    out = np.empty(len(lists), dtype=object)
    for i, item in enumerate(lists):
        out[i] = item
    return out


def imdb_npz(path: Path, **changes) -> None:
    """Keras's imdb.npz: savez_compressed of object arrays of word-id lists and int labels."""
    data = {f"x_{s}": object_array([list(r) for r in IMDB_REVIEWS[s]]) for s in ("train", "test")}
    data.update({f"y_{s}": np.array(IMDB_LABELS[s], dtype=np.int64) for s in ("train", "test")})
    data.update(changes)
    np.savez_compressed(path, **data)


CORPUS = "PREFACE\r\n\nSupposing that Truth is a woman--what then? Is there not ground\nfor é.\n"


def image_folder(root: Path, splits=("training_set", "test_set"), classes=("cats", "dogs")):
    """catsdogs' layout: <split>/<class>/*.jpg|png; PNG at the target size (exact pixels)."""
    expected = {}
    for split in splits:
        xs, ys = [], []
        for label, name in enumerate(classes):
            (root / split / name).mkdir(parents=True)
            for i in range(2):
                pixels = RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / name / f"{i}.png")
                xs.append(pixels)
                ys.append(label)
        expected[split] = (np.stack(xs), np.array(ys, dtype=np.int32))
    return expected


# --- serving and fetching ------------------------------------------------------------------


@pytest.fixture
def www(tmp_path):
    """A folder served over HTTP on 127.0.0.1 (the download tests' server): (folder, url)."""
    folder = tmp_path / "www"
    folder.mkdir()
    server = _serve(folder, NoRangeHandler)
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def served(name: str, folder: Path, url: str, *, sha256: str | None = "real") -> registry.Dataset:
    """Dataset ``name`` with its files' URLs on the local server and their real sha256 and
    size (or the given sha256)."""
    ds = registry.get(name)
    files = []
    for f in ds.files:
        data = (folder / f.name).read_bytes()
        digest = hashlib.sha256(data).hexdigest() if sha256 == "real" else sha256
        files.append(DatasetFile(f.name, f"{url}/{f.name}", digest, len(data)))
    return dataclasses.replace(ds, files=tuple(files))


def fetch_and_prepare(name: str, www, tmp_path, **options):
    folder, url = www
    files = fetch.fetch(served(name, folder, url), tmp_path / "raw", progress=False)
    for f in files.values():  # the bytes that arrived are the bytes served
        assert f.read_bytes() == (folder / f.name).read_bytes()
    info = datasets.prepare(name, files, tmp_path / "prepared.npz", **options)
    return arrays.read_arrays(tmp_path / "prepared.npz"), info


def one_line(exc_info, path: Path | str) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and message.startswith(str(path)), message
    return message


# --- each format: fetched, prepared, values checked ----------------------------------------


def test_mnist_npz(www, tmp_path):
    data = mnist_npz(www[0] / "mnist.npz")
    (x_train, y_train, x_test, y_test), info = fetch_and_prepare("mnist", www, tmp_path)
    assert x_train.shape == (7, 28, 28, 1) and x_train.dtype == np.uint8
    np.testing.assert_array_equal(x_train[..., 0], data["x_train"])
    np.testing.assert_array_equal(x_test[..., 0], data["x_test"])
    assert y_train.dtype == np.int32 and list(y_train) == list(data["y_train"])
    assert list(y_test) == list(data["y_test"])
    served_sha = hashlib.sha256((www[0] / "mnist.npz").read_bytes()).hexdigest()
    assert info["inputs"]["mnist.npz"]["sha256"] == served_sha
    assert info["synthetic"] is False and (info["train"], info["test"]) == (7, 3)
    assert arrays.read_info(tmp_path / "prepared.npz") == info


def test_mnist_idx(www, tmp_path):
    data = mnist_idx(www[0])
    (x_train, y_train, x_test, y_test), _ = fetch_and_prepare(
        "mnist-idx", www, tmp_path, limit_train=5
    )
    np.testing.assert_array_equal(x_train[..., 0], data["x_train"][:5])
    np.testing.assert_array_equal(x_test[..., 0], data["x_test"])
    assert list(y_train) == list(data["y_train"][:5]) and list(y_test) == list(data["y_test"])


def test_cifar10_binary(www, tmp_path):
    members = cifar_tar(www[0] / "cifar-10-binary.tar.gz")
    (x_train, y_train, x_test, y_test), info = fetch_and_prepare("cifar10", www, tmp_path)
    train = [members[f"data_batch_{i}.bin"] for i in range(1, 6)]
    np.testing.assert_array_equal(x_train, np.concatenate([m[1] for m in train]))
    assert list(y_train) == [int(v) for m in train for v in m[0]]
    np.testing.assert_array_equal(x_test, members["test_batch.bin"][1])
    assert info["class_names"][:3] == ["airplane", "automobile", "bird"]
    # one pixel by hand: record 0 of data_batch_1, row 1, column 2, green = byte 1+1024+32+2
    raw = cifar_records(*members["data_batch_1.bin"])
    assert x_train[0, 1, 2, 1] == raw[1 + 1024 + 32 + 2]


def test_cifar10_central_crop(www, tmp_path):
    members = cifar_tar(www[0] / "cifar-10-binary.tar.gz")
    (x_train, *_), _ = fetch_and_prepare(
        "cifar10", www, tmp_path, shape=(24, 24, 3), limit_train=3, limit_test=1
    )
    assert x_train.shape == (3, 24, 24, 3)
    np.testing.assert_array_equal(x_train[0], members["data_batch_1.bin"][1][0, 4:28, 4:28])


def test_imdb_npz(www, tmp_path):
    imdb_npz(www[0] / "imdb.npz")
    (x_train, y_train, x_test, y_test), info = fetch_and_prepare("imdb", www, tmp_path, shape=(5,))
    # load_data's order: RandomState(113) shuffles train, then test, with one generator
    rng = np.random.RandomState(113)
    order_train, order_test = rng.permutation(4), rng.permutation(2)
    # start 1, ids + 3, ids >= 20000 -> 2, keep the last 5, zeros in front
    padded = {
        0: [0, 1, 8, 2, 10],  # [5, 19998, 7]: 19998 + 3 >= 20000
        1: [5, 6, 7, 8, 9],  # 6 words + start > 5: the start token is cut
        2: [0, 0, 0, 0, 1],  # an empty review
        3: [0, 0, 1, 43, 44],
    }
    assert x_train.tolist() == [padded[i] for i in order_train]
    assert y_train.tolist() == [IMDB_LABELS["train"][i] for i in order_train]
    test = {0: [0, 0, 0, 1, 12], 1: [103, 203, 303, 403, 503]}
    assert x_test.tolist() == [test[i] for i in order_test]
    assert x_train.dtype == np.int32 and info["vocabulary"] == 20000


def test_imdb_fasttext_appends_the_training_sets_bigrams_as_its_script_did(www, tmp_path):
    """minimaxir's imdb_fasttext.py (Keras 2.0's example, ngram_range = 2): each review's
    bigrams that occur in the training set appended as ids from 20,001 on, then padded and
    truncated at the front; the vocabulary (max_features) is 20,001 + the distinct training
    bigrams. Here the ids are numbered in sorted order (the script's set order is
    CPython's), so they are known."""
    imdb_npz(www[0] / "imdb.npz")
    (x_train, _, x_test, _), info = fetch_and_prepare(
        "imdb", www, tmp_path, shape=(8,), ngram_range=2
    )
    # load_data's ids: [1, 8, 2, 10], [1, 4, 5, 6, 7, 8, 9], [1], [1, 43, 44]: 11 distinct
    # bigrams, sorted: (1,4) (1,8) (1,43) (2,10) (4,5) (5,6) (6,7) (7,8) (8,2) (8,9) (43,44)
    assert info["vocabulary"] == 20001 + 11 and info["ngram_range"] == 2
    rng = np.random.RandomState(113)
    order_train, order_test = rng.permutation(4), rng.permutation(2)
    rows = {
        0: [0, 1, 8, 2, 10, 20002, 20009, 20004],
        1: [8, 9, 20001, 20005, 20006, 20007, 20008, 20010],  # 7 ids + 6 bigrams: the last 8
        2: [0, 0, 0, 0, 0, 0, 0, 1],
        3: [0, 0, 0, 1, 43, 44, 20003, 20011],
    }
    assert x_train.tolist() == [rows[i] for i in order_train]
    # A test review's bigrams that the training set never had are not added.
    test = {0: [0, 0, 0, 0, 0, 0, 1, 12], 1: [0, 0, 1, 103, 203, 303, 403, 503]}
    assert x_test.tolist() == [test[i] for i in order_test]
    with pytest.raises(ConfigError, match="ngram_range 2; n-grams are made of IMDb"):
        datasets.prepare("mnist", {}, tmp_path / "m.npz", ngram_range=2)


def test_imdb_num_words_cut(tmp_path):
    imdb_npz(tmp_path / "imdb.npz")
    x, *_ = imdb.load_npz(tmp_path / "imdb.npz", maxlen=3, num_words=8)
    assert x.max() < 8 and 2 in x  # 9, 10 (ids 6, 7 + 3) became the out-of-vocabulary id


def test_imdb_protocol_2_pickle_of_numpy_1(tmp_path):
    """The real imdb.npz predates numpy 2: its pickles name numpy.core.multiarray (protocol 2
    also names _codecs.encode for bytes)."""
    blob = pickle.dumps(object_array([[3, 4], [5]]), protocol=2)
    blob = blob.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray" in blob and b"_codecs" in blob
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|O", "fortran_order": False, "shape": (2,)}
    )
    path = tmp_path / "imdb.npz"
    imdb_npz(path)
    with zipfile.ZipFile(path) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if n != "x_test.npy"}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in kept.items():
            zf.writestr(name, data)
        zf.writestr("x_test.npy", header.getvalue() + blob)
    _, _, x_test, _ = imdb.load_npz(path, maxlen=3, num_words=100)
    assert sorted(x_test.tolist()) == [[0, 1, 8], [1, 6, 7]]


def test_nietzsche_sequences(www, tmp_path):
    (www[0] / "nietzsche.txt").write_bytes(CORPUS.encode("utf-8"))
    (x, y, x_test, y_test), info = fetch_and_prepare("nietzsche", www, tmp_path, shape=(10,))
    # lstm_text_generation.py, as written: lower(), sorted chars, windows of 10 every 3
    text = CORPUS.replace("\r\n", "\n").lower()
    chars = sorted(set(text))
    sentences = [text[i : i + 10] for i in range(0, len(text) - 10, 3)]
    next_chars = [text[i + 10] for i in range(0, len(text) - 10, 3)]
    assert ["".join(chars[c] for c in row) for row in x] == sentences
    assert [chars[c] for c in y] == next_chars
    assert info["class_names"] == chars and "é" in chars
    assert x_test.shape == (0, 10) and len(y_test) == 0


def test_image_folder_by_path(tmp_path):
    expected = image_folder(tmp_path / "copy")
    files = fetch.fetch("catsdogs", tmp_path / "unused", offline=tmp_path / "copy")
    info = datasets.prepare("catsdogs", files, tmp_path / "prepared.npz")
    x_train, y_train, x_test, y_test = arrays.read_arrays(
        tmp_path / "prepared.npz", shape=(64, 64, 3), dtype="uint8", classes=2
    )
    np.testing.assert_array_equal(x_train, expected["training_set"][0])
    np.testing.assert_array_equal(y_test, expected["test_set"][1])
    assert info["class_names"] == ["cats", "dogs"] and "sha256_tree" in info["inputs"]["folder"]


def test_image_folder_without_a_local_copy_is_refused(tmp_path):
    with pytest.raises(
        ConfigError, match=r"'catsdogs': no public host .* training_set and test_set"
    ):
        fetch.fetch("catsdogs", tmp_path)


# --- damaged files: one line naming the file, nothing written -------------------------------


def _truncate(path: Path, keep: float = 0.6) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _npz_missing_keys(d: Path) -> None:
    np.savez(d / "mnist.npz", x_train=np.zeros((1, 28, 28), np.uint8), y_train=np.zeros(1))


def _idx_labels_of_images(d: Path) -> None:
    mnist_idx(d)
    images = idx_bytes(np.zeros((2, 2), np.uint8))  # magic 0x0802 where labels (0x0801) are
    (d / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(images))


def _npz_label_out_of_range(d: Path) -> None:
    data = mnist_npz(d / "mnist.npz")
    data["y_test"][1] = 200  # MNIST has 10 classes: labels 0..9
    np.savez_compressed(d / "mnist.npz", **data)


def _idx_label_out_of_range(d: Path) -> None:
    data = mnist_idx(d)
    data["y_train"][2] = 255
    (d / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(data["y_train"])))


def _idx_sizes_overflow(d: Path) -> None:
    """Sizes whose product is 2^64, which a 64-bit product reads as 0: no data bytes after
    the header then matched it."""
    mnist_idx(d)
    header = bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in (2**22, 2**22, 2**20))
    (d / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(header))


def _idx_short(d: Path) -> None:
    mnist_idx(d)
    short = idx_bytes(np.zeros((7, 28, 28), np.uint8))[:-5]
    (d / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(short))


def _text_cut_in_a_character(d: Path) -> None:
    data = CORPUS.encode()
    (d / "nietzsche.txt").write_bytes(data[: data.index("é".encode()) + 1])


CIFAR = "cifar-10-binary.tar.gz"
IDX_IMAGES = "train-images-idx3-ubyte.gz"
#: case: (dataset, make its file(s) in a folder with one damaged, the file named, message)
DAMAGED = {
    "truncated npz": (
        "mnist",
        lambda d: (mnist_npz(d / "mnist.npz"), _truncate(d / "mnist.npz")),
        "mnist.npz",
        r"not a readable \.npz",
    ),
    "npz missing a key": (
        "mnist",
        _npz_missing_keys,
        "mnist.npz",
        r"missing arrays \['x_test', 'y_test'\]",
    ),
    "npz label out of range": (
        "mnist",
        _npz_label_out_of_range,
        "mnist.npz",
        r"y_test holds label 200 \(at 1\); expected 0\.\.9",
    ),
    "idx label out of range": (
        "mnist-idx",
        _idx_label_out_of_range,
        "train-labels-idx1-ubyte.gz",
        r"label 255 \(at 2\); expected 0\.\.9",
    ),
    "idx sizes overflow": (
        "mnist-idx",
        _idx_sizes_overflow,
        IDX_IMAGES,
        r"0 data bytes after the header; expected 4194304 x 4194304 x 1048576 = "
        r"18,446,744,073,709,551,616",
    ),
    "truncated gz": (
        "mnist-idx",
        lambda d: (mnist_idx(d), _truncate(d / IDX_IMAGES)),
        IDX_IMAGES,
        r"not a complete gzip file",
    ),
    "idx wrong magic": (
        "mnist-idx",
        _idx_labels_of_images,
        "t10k-labels-idx1-ubyte.gz",
        r"magic number 0x00000802; expected 0x00000801",
    ),
    "idx wrong size": (
        "mnist-idx",
        _idx_short,
        IDX_IMAGES,
        r"5,483 data bytes .* expected 7 x 28 x 28 = 5,488",
    ),
    "truncated tar.gz": (
        "cifar10",
        lambda d: (cifar_tar(d / CIFAR), _truncate(d / CIFAR)),
        CIFAR,
        r"cannot read the tar archive, truncated or corrupt",
    ),
    "not a tar archive": (
        # tarfile's message lists each compression it tried, one per line
        "cifar10",
        lambda d: (d / CIFAR).write_bytes(b"\x1f\x8b" + b"garbage" * 50),
        CIFAR,
        r"cannot read the tar archive, truncated or corrupt \(file could not be opened "
        r"successfully: - method gz: ",
    ),
    "tar member missing": (
        "cifar10",
        lambda d: cifar_tar(d / CIFAR, skip=("test_batch.bin",)),
        CIFAR,
        r"members \['cifar-10-batches-bin/test_batch.bin'\] missing",
    ),
    "wrong record length": (
        "cifar10",
        lambda d: cifar_tar(d / CIFAR, record_bytes=3073 + 100),
        CIFAR,
        r"data_batch_2.bin has 3,173 bytes, not a whole number of 3,073-byte",
    ),
    "truncated imdb": (
        "imdb",
        lambda d: (imdb_npz(d / "imdb.npz"), _truncate(d / "imdb.npz")),
        "imdb.npz",
        r"not a readable \.npz file",
    ),
    "text cut in a character": (
        "nietzsche",
        _text_cut_in_a_character,
        "nietzsche.txt",
        r"not UTF-8 text at byte",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_file_is_named_in_one_line_and_nothing_is_written(tmp_path, case):
    name, make, damaged, message = DAMAGED[case]
    make(tmp_path)
    files = {f.name: tmp_path / f.name for f in registry.get(name).files}
    with pytest.raises(DataError, match=message) as exc_info:
        datasets.prepare(name, files, tmp_path / "out" / "prepared.npz")
    one_line(exc_info, tmp_path / damaged)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_hostile_pickle_is_refused_unrun(tmp_path):
    class Boom:
        def __reduce__(self):
            return (Path.touch, (tmp_path / "ran",))

    imdb_npz(tmp_path / "imdb.npz", x_test=object_array([Boom()]), y_test=np.zeros(1, int))
    with pytest.raises(DataError, match=r"global pathlib\..*Path\.touch is not allowed") as exc:
        datasets.prepare("imdb", {"imdb.npz": tmp_path / "imdb.npz"}, tmp_path / "p.npz")
    one_line(exc, tmp_path / "imdb.npz")
    assert not (tmp_path / "ran").exists() and not (tmp_path / "p.npz").exists()


def test_a_review_that_is_not_a_list_of_ints_is_refused(tmp_path):
    imdb_npz(tmp_path / "imdb.npz", x_train=object_array([[1, 2], ["a"], [3], [4]]))
    with pytest.raises(DataError, match=r"x_train\[\d\] holds \['a'\]"):
        imdb.load_npz(tmp_path / "imdb.npz", maxlen=4, num_words=100)


# --- sizes an array declares, checked before it is read ------------------------------------

#: What a forged header asks for: more than any machine holds (numpy allocated it before
#: reading a byte, and the run ended in a MemoryError traceback).
HUGE = 10**15


def npy(array: np.ndarray) -> bytes:
    """An array as a .npy member's bytes (object arrays pickled, as numpy writes them)."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def npy_declaring(shape: tuple, dtype, payload: bytes = bytes(16)) -> bytes:
    """A .npy member whose header declares ``shape`` and ``dtype``, holding ``payload``."""
    buf = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": shape}  # fmt: skip
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + payload


def npz_of(path: Path, **members: bytes) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, data in members.items():
            zf.writestr(f"{key}.npy", data)
    return path


def _forged_mnist(d: Path) -> Path:
    data = mnist_npz(d / "mnist.npz")
    members = {k: npy(v) for k, v in data.items()} | {"x_train": npy_declaring((HUGE,), "u1")}
    return npz_of(d / "mnist.npz", **members)


def _forged_imdb_labels(d: Path) -> Path:
    imdb_npz(d / "imdb.npz")
    with np.load(d / "imdb.npz", allow_pickle=True) as npz:
        members = {k: npy(npz[k]) for k in imdb.KEYS}
    return npz_of(d / "imdb.npz", **members | {"y_train": npy_declaring((HUGE,), "<i8")})


#: case -> (the file, forged in the tmp folder; what reads it; the array named).
FORGED = {
    "mnist.npz": (_forged_mnist, lambda p: datasets.prepare("mnist", {"mnist.npz": p},
                                                             p.parent / "out.npz"), "x_train"),
    "imdb.npz": (_forged_imdb_labels, lambda p: imdb.load_npz(p, maxlen=4, num_words=100),
                 "y_train"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(FORGED))
def test_an_array_declaring_more_than_its_file_holds_is_refused_before_it_is_read(tmp_path, case):
    forge, read, key = FORGED[case]
    path = forge(tmp_path)
    with pytest.raises(DataError) as exc:
        read(path)
    message = one_line(exc, path)
    assert f"{path}: {key} declares ({HUGE}," in message and "and the file holds " in message
    assert not (tmp_path / "out.npz").exists()


class _PickledArray:
    """Pickles as numpy's reconstructor and state would, with the shape and call given."""

    def __init__(self, reduce):
        self.reduce = reduce

    def __reduce__(self):
        return self.reduce


@pytest.mark.parametrize(
    "reduce",
    [
        # An object array restored at a shape the pickle cannot fill.
        (np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"),
         (1, (HUGE,), np.dtype(object), False, [[1, 2]])),
        # The reconstructor itself asked for such an array.
        (np._core.multiarray._reconstruct, (np.ndarray, (HUGE,), b"b")),
        # numpy.ndarray (allowed: the reconstructor's argument) called for one.
        (np.ndarray, ((HUGE,), np.dtype("u1"))),
    ],
    ids=["state", "reconstruct", "ndarray"],
)  # fmt: skip
def test_a_pickled_array_larger_than_its_pickle_is_refused_before_it_is_made(tmp_path, reduce):
    imdb_npz(tmp_path / "imdb.npz")
    with np.load(tmp_path / "imdb.npz", allow_pickle=True) as npz:
        members = {k: npy(npz[k]) for k in imdb.KEYS}
    pickled = npy_declaring((1,), object, pickle.dumps(_PickledArray(reduce), protocol=2))
    path = npz_of(tmp_path / "imdb.npz", **members | {"x_test": pickled})
    with pytest.raises(DataError, match=r"x_test is not a numpy array of token-id lists "
                       r"\(UnpicklingError: an array of shape") as exc:  # fmt: skip
        imdb.load_npz(path, maxlen=4, num_words=100)
    one_line(exc, path)


def test_files_without_a_training_sample_write_nothing(tmp_path):
    """The trainer said "use a batch size up to 0" after the data job wrote the arrays."""
    mnist_npz(tmp_path / "mnist.npz", n_train=0)
    with pytest.raises(DataError) as exc:
        datasets.prepare("mnist", {"mnist.npz": tmp_path / "mnist.npz"}, tmp_path / "out.npz")
    assert one_line(exc, tmp_path / "mnist.npz") == (
        f"{tmp_path / 'mnist.npz'}: no training sample in dataset mnist's files; expected at "
        "least one"
    )
    assert not (tmp_path / "out.npz").exists()


def test_a_corrupt_jpeg_is_named(tmp_path):
    image_folder(tmp_path / "copy")
    good = tmp_path / "copy" / "test_set" / "dogs" / "1.png"
    buf = io.BytesIO()
    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(buf, format="JPEG")
    bad = good.with_suffix(".jpg")
    bad.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(DataError, match=r"not a readable image, truncated or corrupt") as exc:
        datasets.prepare("catsdogs", {"folder": tmp_path / "copy"}, tmp_path / "p.npz")
    one_line(exc, bad)
    assert not (tmp_path / "p.npz").exists()


def test_a_served_file_with_another_checksum_is_not_kept(www, tmp_path):
    mnist_npz(www[0] / "mnist.npz")
    ds = served("mnist", *www, sha256="0" * 64)
    with pytest.raises(DownloadError, match=r"sha256 mismatch for mnist\.npz: expected 0{64} "
                       r"\(dataset mnist in datasets\.yaml\)") as exc:  # fmt: skip
        fetch.fetch(ds, tmp_path / "raw", progress=False, retries=0)
    assert "\n" not in str(exc.value) and exc.value.args[0].startswith(www[1])
    assert not list((tmp_path / "raw").iterdir())


def test_a_served_truncated_file_fails_its_checksum(www, tmp_path):
    mnist_npz(www[0] / "mnist.npz")
    ds = served("mnist", *www)  # the whole file's sha256 and size
    _truncate(www[0] / "mnist.npz")
    with pytest.raises(DownloadError, match=r"sha256 mismatch for mnist\.npz"):
        fetch.fetch(ds, tmp_path / "raw", progress=False, retries=0)
    assert not list((tmp_path / "raw").iterdir())


def test_a_text_corpus_of_another_size_is_not_kept(www, tmp_path):
    """nietzsche.txt has no published checksum: its size is checked."""
    (www[0] / "nietzsche.txt").write_bytes(CORPUS.encode())
    ds = served("nietzsche", *www, sha256=None)
    ds = dataclasses.replace(ds, files=(dataclasses.replace(ds.files[0], bytes=600901),))
    with pytest.raises(DownloadError, match=r"bytes received for nietzsche\.txt; expected 600,901"):
        fetch.fetch(ds, tmp_path / "raw", progress=False, retries=0)
    assert not list((tmp_path / "raw").iterdir())


class EndlessHandler(http.server.SimpleHTTPRequestHandler):
    """Sends text without a Content-Length and without end (a hostile or broken server)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"endless text " * 8192)
        except OSError:  # the client hung up
            pass


def test_a_download_larger_than_the_registry_says_stops_at_that_size(tmp_path):
    """A file whose size the registry gives is not read past it: a server sending without
    end filled the disk (the size was checked after the body ended)."""
    srv = _serve(tmp_path, EndlessHandler)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/nietzsche.txt"
        ds = registry.get("nietzsche")
        ds = dataclasses.replace(ds, files=(DatasetFile("nietzsche.txt", url, None, 600901),))
        with pytest.raises(DownloadError, match=r"more than the 600,901 bytes of nietzsche\.txt"):
            fetch.fetch(ds, tmp_path / "raw", progress=False, retries=0)
    finally:
        srv.shutdown()
    assert not list((tmp_path / "raw").iterdir())


def test_a_web_page_served_for_a_text_file_is_not_kept(www, tmp_path):
    """A login page sent with HTTP 200 where a file with no checksum should be."""
    (www[0] / "nietzsche.txt").write_bytes(b"<!DOCTYPE html><html>Please log in</html>")
    ds = served("nietzsche", *www, sha256=None)
    with pytest.raises(DownloadError, match=r"sent a web page .*check the url of nietzsche"):
        fetch.fetch(ds, tmp_path / "raw", progress=False, retries=0)
    assert not list((tmp_path / "raw").iterdir())


def test_an_offline_copy_is_checked(tmp_path):
    mnist_npz(tmp_path / "mnist.npz")
    with pytest.raises(DataError, match=r"mnist\.npz: [\d,]+ bytes; expected 11,490,434") as exc:
        fetch.fetch("mnist", tmp_path / "raw", offline=tmp_path)
    one_line(exc, tmp_path / "mnist.npz")


def mnist_npz_of_size(path: Path, size: int) -> str:
    """A readable mnist.npz of exactly ``size`` bytes, an extra array padding it: a copy of
    the registry's size that is not the registry's file. Returns its sha256."""
    data = mnist_npz(path)
    pad = 0
    for _ in range(4):  # the .npy header's length can move with the pad's shape
        np.savez(path, **data, pad=np.zeros(pad, np.uint8))
        if path.stat().st_size == size:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        pad += size - path.stat().st_size
    raise AssertionError(f"cannot pad {path} to {size} bytes")


def _workload_data(tmp_path: Path, copy: Path, **data) -> int:
    """embryo-bench workload-data for mnist-mlp on the offline copy ``copy`` (the plan's
    --data, with ``data``'s changes): its exit status."""
    import json

    from embryo_bench import cli

    params = {"dataset": "mnist", "synthetic": False, "path": str(copy.parent),
              "input_shape": [28, 28, 1], "input_dtype": "uint8", "classes": 10,
              "train_samples": 0, "test_samples": 0, "seed": 1, "sha256": {}, **data}  # fmt: skip
    out = ["--out", str(tmp_path / "arrays.npz"), "--info", str(tmp_path / "i.json")]
    return cli.main(["workload-data", "--workload", "mnist-mlp", "--data", json.dumps(params),
                     "--files", str(copy), *out])  # fmt: skip


def test_the_data_job_refuses_an_offline_copy_of_the_registrys_size_but_not_its_sha256(
    tmp_path, capsys
):
    """A readable file of the right size, other bytes: refused before it is parsed, in one
    line naming it, its sha256, the registry's and how to accept it; nothing written."""
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "mnist.npz"
    digest = mnist_npz_of_size(copy, registry.get("mnist").files[0].bytes)
    status = _workload_data(tmp_path, copy)
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1, error
    assert error[0].startswith(f"embryo-bench: error: {copy}: sha256 {digest}; expected 731c5a")
    assert error[0].endswith(f"set workload mnist-mlp's sha256: {{mnist.npz: {digest}}}")
    assert not (tmp_path / "arrays.npz").exists() and not (tmp_path / "i.json").exists()


def test_the_data_job_reads_a_copy_accepted_by_its_sha256(tmp_path, capsys):
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "mnist.npz"
    data = mnist_npz(copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    status = _workload_data(tmp_path, copy, sha256={"mnist.npz": digest.upper()})
    assert status == 0, capsys.readouterr().err
    x_train, *_ = arrays.read_arrays(tmp_path / "arrays.npz")
    np.testing.assert_array_equal(x_train[..., 0], data["x_train"])
    copy.write_bytes(copy.read_bytes() + b"x")  # accepted by its sha256: another copy is not
    status = _workload_data(tmp_path, copy, sha256={"mnist.npz": digest})
    error = capsys.readouterr().err.strip()
    assert status == 2 and f"; expected {digest} (mnist.npz of dataset mnist as workload " in error


# --- the prepared-arrays file ---------------------------------------------------------------


def test_read_arrays_names_what_is_wrong(tmp_path):
    x = np.zeros((3, 4, 4, 1), np.uint8)
    y = np.zeros(3, np.int32)
    arrays.write_arrays(tmp_path / "a.npz", x, y, x[:1], y[:1], {"dataset": "t"})
    assert len(arrays.read_arrays(tmp_path / "a.npz", shape=(4, 4, 1), classes=2)[0]) == 3
    with pytest.raises(
        DataError, match=r"a.npz: samples of shape \(4, 4, 1\); expected \(8, 8, 1\)"
    ):
        arrays.read_arrays(tmp_path / "a.npz", shape=(8, 8, 1))
    with pytest.raises(DataError, match=r"b.npz: 2 labels in y_train for 3 samples"):
        arrays.write_arrays(tmp_path / "b.npz", x, y[:2], x[:1], y[:1], {})
    assert not (tmp_path / "b.npz").exists()
    with pytest.raises(DataError, match=r"c.npz: y_test holds labels 0..5; expected 0..1"):
        arrays.write_arrays(tmp_path / "c.npz", x, y, x[:2], np.array([0, 5], np.int32), {})
        arrays.read_arrays(tmp_path / "c.npz", classes=2)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=y, x_test=x, info=np.array("{}"))
    with pytest.raises(DataError, match=r"d.npz: missing arrays \['y_test'\]"):
        arrays.read_arrays(tmp_path / "d.npz")
    np.savez(tmp_path / "e.npz", x_train=x, y_train=y.astype(np.int64), x_test=x, y_test=y,
             info=np.array("{}"))  # fmt: skip
    with pytest.raises(DataError, match=r"e.npz: y_train is int64 .* expected int32 labels"):
        arrays.read_arrays(tmp_path / "e.npz")


# --- synthetic arrays ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dtype", "vocabulary"), [((8, 8, 3), "uint8", 0), ((64,), "int32", 50)]
)
def test_synthetic_arrays(shape, dtype, vocabulary):
    a = arrays.synthetic_arrays(shape, dtype, 4, 40, 12, seed=3, vocabulary=vocabulary)
    b = arrays.synthetic_arrays(shape, dtype, 4, 40, 12, seed=3, vocabulary=vocabulary)
    c = arrays.synthetic_arrays(shape, dtype, 4, 80, 12, seed=3, vocabulary=vocabulary)
    d = arrays.synthetic_arrays(shape, dtype, 4, 40, 12, seed=4, vocabulary=vocabulary)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a[2], c[2])  # the test set does not depend on n_train
    assert not np.array_equal(a[0], d[0])
    x_train, y_train, x_test, y_test = a
    assert x_train.shape == (40, *shape) and x_test.shape == (12, *shape)
    assert x_train.dtype == dtype and y_train.dtype == np.int32
    assert np.bincount(y_train).tolist() == [10, 10, 10, 10]
    if vocabulary:
        assert x_train.min() >= 1 and x_train.max() < vocabulary
    # a class signal: the nearest class mean of the training set labels the test set
    flat = x_train.reshape(40, -1).astype(float)
    if vocabulary:  # token counts, not token values, carry the signal
        flat = np.stack([np.bincount(row, minlength=vocabulary) for row in x_train]).astype(float)
        test = np.stack([np.bincount(row, minlength=vocabulary) for row in x_test]).astype(float)
    else:
        test = x_test.reshape(12, -1).astype(float)
    means = np.stack([flat[y_train == k].mean(axis=0) for k in range(4)])
    guess = np.argmin(((test[:, None] - means[None]) ** 2).sum(axis=2), axis=1)
    assert (guess == y_test).mean() > 0.5  # chance is 0.25


def test_synthetic_file_says_synthetic(tmp_path):
    info = datasets.prepare_synthetic("imdb", tmp_path / "s.npz", n_train=6, n_test=2, seed=1)
    assert info["synthetic"] is True and arrays.read_info(tmp_path / "s.npz")["synthetic"]
    x_train, *_ = arrays.read_arrays(tmp_path / "s.npz", shape=(400,), dtype="int32", classes=2)
    assert x_train.max() < 20000


def test_synthetic_sequences_need_a_vocabulary():
    with pytest.raises(ConfigError, match=r"vocabulary 0; expected a vocabulary of at least 2"):
        arrays.synthetic_arrays((5,), "int32", 2, 4, 2, seed=0)


# --- image folders both ways ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["png", "jpeg"])
def test_image_folder_round_trip(tmp_path, fmt):
    # smooth images (a photo, not noise, is what JPEG is made for)
    i, h, w, c = np.ogrid[:9, :16, :16, :3]
    x = (i * 5 + h * 6 + w * 3 + c * 30).astype(np.uint8)
    y = np.arange(9, dtype=np.int32) % 3
    paths = imagefolder.write_image_folder(x, y, tmp_path / "train", ["a", "b", "c"], fmt=fmt)
    listed, labels, names = imagefolder.list_image_folder(tmp_path / "train")
    assert names == ["a", "b", "c"] and sorted(listed) == sorted(paths)
    by_path = {p: i for i, p in enumerate(paths)}
    order = [by_path[p] for p in listed]
    assert labels.tolist() == y[order].tolist()
    back, _, _ = imagefolder.read_image_folder(tmp_path / "train", (16, 16, 3))
    if fmt == "png":
        np.testing.assert_array_equal(back, x[order])
    else:
        assert np.abs(back.astype(int) - x[order]).mean() < 3  # lossy, but close


def test_image_folder_resizes_and_converts(tmp_path):
    (tmp_path / "s" / "only").mkdir(parents=True)
    Image.fromarray(np.full((30, 20, 3), 200, np.uint8)).save(tmp_path / "s" / "only" / "a.jpg")
    x, y, names = imagefolder.read_image_folder(tmp_path / "s", (8, 10, 1))
    assert x.shape == (1, 8, 10, 1) and abs(int(x[0, 4, 5, 0]) - 200) <= 2


# --- class names from the data become folder names ----------------------------------------

REAL_NAMES = CIFAR_META.decode().split()
#: Class name lists a CIFAR-10 meta file (or an arrays file's info) may hold, each refused.
BAD_NAMES = {
    "escapes": (["../../../../../../tmp/x", *REAL_NAMES[1:]], r"'\.\./\.\./.*' holds a path sep"),
    "absolute": (["/tmp/y", *REAL_NAMES[1:]], r"'/tmp/y' holds a path separator"),
    "dot": ([".", *REAL_NAMES[1:]], r"'\.' is the folder itself or its parent"),
    "dotdot": (["..", *REAL_NAMES[1:]], r"'\.\.' is the folder itself or its parent"),
    "hidden": ([".plane", *REAL_NAMES[1:]], r"'\.plane' starts with '\.' \(a hidden folder"),
    "twice": (["cat", *REAL_NAMES[1:]], r"'cat' is given twice"),
    "case": (["Cat", *REAL_NAMES[1:]], r"'cat' is the same folder as 'Cat'"),
    "too-few": (["airplane", "automobile"], r"2 class names \('airplane', 'automobile'\); "
                r"expected 10, one per class"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_NAMES))
def test_cifar10_class_names_that_are_no_folder_names_are_refused(tmp_path, case):
    """batches.meta.txt names the classes that workload-files makes folders of: each name
    is checked when the archive is read, before anything is written."""
    names, message = BAD_NAMES[case]
    archive = tmp_path / CIFAR
    cifar_tar(archive, meta="\n".join(names).encode() + b"\n")
    with pytest.raises(DataError, match=message) as exc:
        datasets.prepare("cifar10", {CIFAR: archive}, tmp_path / "prepared.npz")
    assert "batches.meta.txt" in one_line(exc, archive)
    assert not (tmp_path / "prepared.npz").exists()


def _arrays_with_names(path: Path, names: list, classes: int = 10) -> None:
    """A prepared-arrays file whose info names the classes ``names`` (as one made from a
    meta file before the names were checked)."""
    x = RNG.integers(0, 256, (4, 8, 8, 3), dtype=np.uint8)
    y = np.arange(4, dtype=np.int32) % 2
    arrays.write_arrays(path, x, y, x[:1], y[:1], {"dataset": "cifar10", "classes": classes,
                                                  "class_names": names})  # fmt: skip


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["../../escaped", *REAL_NAMES[1:]], r"'\.\./\.\./escaped' holds a path separator"),
        ([".", *REAL_NAMES[1:]], r"'\.' is the folder itself"),
        (["..", *REAL_NAMES[1:]], r"'\.\.' is the folder itself"),
        (["cat", *REAL_NAMES[1:]], r"'cat' is given twice"),
        (["airplane", "automobile"], r"2 class names .*expected 10"),
        (list(reversed(REAL_NAMES)), r"not in sorted order"),
    ],
    ids=["escapes", "dot", "dotdot", "twice", "too-few", "unsorted"],
)
def test_workload_files_writes_no_folder_a_class_name_cannot_be(tmp_path, capsys, names, message):
    """An arrays file's class names become folders under <out>/train/: a bad one is one line
    naming the file and the name, and nothing is written, outside the folder or in it."""
    from embryo_bench import cli

    work = tmp_path / "work"
    work.mkdir()
    _arrays_with_names(work / "arrays.npz", names)
    out = work / "files"
    assert cli.main(["workload-files", "--arrays", str(work / "arrays.npz"), "--out", str(out)])
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error
    assert error[0].startswith(f"embryo-bench: error: {work / 'arrays.npz'}: class")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "work", "work/arrays.npz",
    ]  # fmt: skip


def test_workload_files_refuses_an_absolute_class_name(tmp_path, capsys):
    from embryo_bench import cli

    _arrays_with_names(tmp_path / "arrays.npz", [str(tmp_path / "abs"), *REAL_NAMES[1:]])
    argv = ["workload-files", "--arrays", str(tmp_path / "arrays.npz"), "--out", "files"]
    assert cli.main([*argv[:-1], str(tmp_path / "files")]) == 2
    assert "holds a path separator" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["arrays.npz"]


@pytest.mark.parametrize(
    ("classes", "labels", "message"),
    [
        (2, [0, 5], r"y_train holds labels 0\.\.5; expected 0\.\.1"),
        ("2", [0, 1], r"info classes '2'; expected a whole number of classes, 2 or more"),
        (0, [0, 1], r"info classes 0; expected a whole number of classes, 2 or more"),
    ],
    ids=["label beyond the classes", "classes as text", "no classes"],
)
def test_workload_files_refuses_arrays_whose_labels_name_no_class(
    tmp_path, capsys, classes, labels, message
):
    """An arrays file whose labels or class count do not fit (damaged, or made by hand)
    ended in a ValueError's or TypeError's traceback from the image writer."""
    from embryo_bench import cli

    x = RNG.integers(0, 256, (2, 8, 8, 3), dtype=np.uint8)
    y = np.asarray(labels, dtype=np.int32)
    arrays.write_arrays(tmp_path / "a.npz", x, y, x[:1], y[:1], {"classes": classes})
    argv = ["workload-files", "--arrays", str(tmp_path / "a.npz"), "--out", str(tmp_path / "f")]
    assert cli.main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error
    assert error[0].startswith(f"embryo-bench: error: {tmp_path / 'a.npz'}: ")
    assert not (tmp_path / "f").exists()


def test_workload_files_writes_the_real_names_and_numbered_classes(tmp_path):
    from embryo_bench import cli

    _arrays_with_names(tmp_path / "a.npz", REAL_NAMES)
    assert cli.main(["workload-files", "--arrays", str(tmp_path / "a.npz"),
                     "--out", str(tmp_path / "files")]) == 0  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "files/train").iterdir()) == REAL_NAMES
    _arrays_with_names(tmp_path / "b.npz", None, classes=12)  # no names: class-00 .. class-11
    assert cli.main(["workload-files", "--arrays", str(tmp_path / "b.npz"),
                     "--out", str(tmp_path / "more")]) == 0  # fmt: skip
    paths, labels, names = imagefolder.list_image_folder(tmp_path / "more/train")
    assert names[:3] == ["class-00", "class-01", "class-02"] and len(names) == 12
    # each image read back with the label the arrays give it (image k is <class>/<k>.jpg)
    by_index = {int(p.stem): int(k) for p, k in zip(paths, labels, strict=True)}
    assert by_index == {0: 0, 1: 1, 2: 0, 3: 1}


@pytest.mark.parametrize(
    ("classes", "message"),
    [(("Cats", "cats"), r"'cats' is the same folder as 'Cats'"),
     (("cats", "do\ngs"), r"'do\\ngs' holds a control character")],
    ids=["case", "line-break"],
)  # fmt: skip
def test_an_image_folder_copy_whose_class_folders_cannot_be_written_back_is_refused(
    tmp_path, classes, message
):
    """A copy's class folder names are the class names workload-files writes folders of:
    the same rule applies when the copy is read."""
    image_folder(tmp_path / "copy", classes=classes)
    with pytest.raises(DataError, match=message) as exc:
        datasets.prepare("catsdogs", {"folder": tmp_path / "copy"}, tmp_path / "p.npz")
    one_line(exc, tmp_path / "copy" / "training_set")
    assert not (tmp_path / "p.npz").exists()


@pytest.mark.parametrize(
    ("damage", "named", "message"),
    [
        (lambda split: os.mkfifo(split / "cats" / "p.png"), "cats/p.png", r"a named pipe"),
        (
            lambda split: os.rename(split / "cats", os.fsencode(split) + b"/caf\xe9"),
            "caf\\xe9",
            r"a folder name that is not UTF-8",
        ),
    ],
    ids=["named pipe", "name not UTF-8"],
)
def test_an_image_folder_entry_that_cannot_be_read_is_named(tmp_path, damage, named, message):
    """A named pipe among the images hung the data job (its reader waits for a writer); a
    class folder named in Latin-1 ended in a traceback while the copy was hashed."""
    image_folder(tmp_path / "copy")
    damage(tmp_path / "copy" / "training_set")
    with pytest.raises(DataError, match=message) as exc:
        datasets.prepare("catsdogs", {"folder": tmp_path / "copy"}, tmp_path / "p.npz")
    assert named in one_line(exc, tmp_path / "copy" / "training_set")
    assert not (tmp_path / "p.npz").exists()


def test_class_folders_are_written_through_the_one_checked_writer():
    """Only data.classnames calls imagefolder.write_image_folder (which writes names as
    given): every other writer goes through classnames.write_class_folders."""
    import ast

    src = Path(datasets.__file__).resolve().parents[1]
    callers = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name == "write_image_folder":
                    callers.add(path.relative_to(src).as_posix())
    assert callers == {"data/classnames.py"}


# --- the registry --------------------------------------------------------------------------


def test_registry_names_the_known_datasets():
    with pytest.raises(ConfigError, match=r"dataset 'mnsit': not in the registry .*known: .*mnist"):
        registry.get("mnsit")
    assert registry.get("embryo").format is None
    with pytest.raises(ConfigError, match=r"'embryo': prepared by the paper's own pipeline"):
        datasets.prepare("embryo", {}, Path("unused.npz"))


def test_a_damaged_registry_entry_is_named(tmp_path):
    data = yaml.safe_load(registry.REGISTRY.read_text())
    del data["datasets"]["cifar10"]["classes"]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"r.yaml: datasets.cifar10: 'classes' is a required"):
        registry.load_registry(tmp_path / "r.yaml")
    data = yaml.safe_load(registry.REGISTRY.read_text())
    data["datasets"]["imdb"]["files"][0]["sha256"] = "abc"
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"datasets.imdb.files.0.sha256: 'abc' does not match"):
        registry.load_registry(tmp_path / "r.yaml")


def test_the_registry_holds_the_published_checksums():
    """The sha256 of each public file as its source publishes it (Keras's datasets modules,
    tensorflow_datasets' url_checksums), written here again so that an edit of the yaml
    cannot pass unnoticed."""
    published = {
        "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
        "imdb.npz": "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
        CIFAR: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
        IDX_IMAGES: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "nietzsche.txt": None,
    }  # fmt: skip
    files = {f.name: f for ds in registry.registry().values() for f in ds.files}
    assert {name: files[name].sha256 for name in published} == published


# --- formats as records: one loader each, decided by the record, never by a format's name ----


def test_every_format_has_one_loader_and_the_registry_names_only_formats():
    from embryo_bench.data import formats

    assert set(datasets.LOADERS) == set(formats.FORMATS)
    used = {ds.format for ds in registry.registry().values()} - {None}
    assert used <= set(formats.FORMATS), used - set(formats.FORMATS)


def test_nothing_outside_the_records_tells_formats_apart_by_name():
    """registry, fetch and datasets decide by a format's record (folder, resizes,
    needs_step): a comparison with a format's name there would be a switch a new format must
    find again."""
    from embryo_bench.data import formats

    names = "|".join(re.escape(n) for n in formats.FORMATS)
    for module in (registry, fetch, datasets):
        text = Path(module.__file__).read_text()
        code = text.split("LOADERS = {")[0] if module is datasets else text
        found = re.findall(
            rf"[=!]= \"(?:{names})\"|\"(?:{names})\" [=!]=|in \([^)]*\"(?:{names})\"", code
        )
        assert not found, (module.__name__, found)


def test_a_new_format_record_changes_what_the_registry_accepts(tmp_path, monkeypatch):
    """A format's record decides the registry's checks: a folder format needs splits and
    no files, a format with a step needs one."""
    from embryo_bench.data import formats

    monkeypatch.setitem(
        formats.FORMATS, "my-folder", formats.Format("my-folder", folder=True, resizes=True)
    )
    entry = {
        "source": "a test",
        "kind": "images",
        "format": "my-folder",
        "shape": [8, 8, 3],
        "dtype": "uint8",
        "classes": 2,
        "files": [],
    }
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump({"datasets": {"mine": entry}}))
    schema = {**registry.DATASETS_SCHEMA}
    monkeypatch.setattr(registry, "DATASETS_SCHEMA", schema)
    item = schema["properties"]["datasets"]["additionalProperties"]["properties"]
    monkeypatch.setitem(item, "format", {"enum": [*formats.FORMATS, None]})
    with pytest.raises(ConfigError, match="an image folder .and only one. needs splits"):
        registry.load_registry(path)
    entry["splits"] = {"train": "train", "test": "test"}
    path.write_text(yaml.safe_dump({"datasets": {"mine": entry}}))
    assert registry.load_registry(path)["mine"].format == "my-folder"
    ds = registry.load_registry(path)["mine"]
    assert registry.sample_shape_problem(ds, (5, 7, 1)) is None  # resized, any channels 1 or 3
    monkeypatch.setitem(formats.FORMATS, "my-folder", formats.Format("my-folder", folder=True))
    assert registry.sample_shape_problem(ds, (5, 7, 1)) == "(8, 8, 3) or a central crop of it"
