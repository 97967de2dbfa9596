"""The workloads' datasets (issue 32, item 3): the prepared-arrays file, synthetic arrays,
image folders both ways."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from embryo_bench.data import arrays, imagefolder
from embryo_bench.errors import ConfigError, DataError

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
