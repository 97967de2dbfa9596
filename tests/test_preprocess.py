"""Unit tests of the preprocessing stages against hand-checked values."""

import numpy as np
import pytest
from PIL import Image

from embryo_bench.data import preprocess
from embryo_bench.errors import ConfigError, DataError


def test_crop_box_paper_values():
    assert preprocess.crop_box(480, 2 / 3) == (80, 80, 400, 400)
    assert preprocess.crop_box(28, 0.6666666667) == (4, 4, 23, 23)  # round(18.67) = 19


def test_centre_crop_takes_the_centre():
    frame = np.arange(480 * 480, dtype=np.int64).reshape(480, 480) % 251
    crop = preprocess.centre_crop(frame.astype(np.uint8), 2 / 3)
    assert crop.shape == (320, 320)
    assert crop[0, 0] == frame[80, 80] and crop[-1, -1] == frame[399, 399]


def test_crop_fraction_impossible():
    with pytest.raises(ConfigError, match="crop fraction"):
        preprocess.crop_box(10, 0.01)


def test_equalize_invert_hand_checked():
    # A flat histogram (each grey level once) is left unchanged by equalisation,
    # so the result is exactly |p - 128|.
    img = np.arange(256, dtype=np.uint8).reshape(16, 16)
    out = preprocess.equalize_invert(img, 128)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.abs(np.arange(256) - 128).reshape(16, 16))
    assert out.max() == 128 and out.min() == 0


def test_equalize_spreads_a_narrow_histogram():
    # Four grey levels, 1024 pixels each: the CDF mapping (cv2.equalizeHist) gives
    # round((cdf - 1024) * 255 / (4096 - 1024)) -> 0, 85, 170, 255.
    img = np.repeat(np.array([100, 101, 102, 103], dtype=np.uint8), 1024).reshape(64, 64)
    out = preprocess.equalize_invert(img, 0)  # centre 0: pure equalisation
    assert sorted(np.unique(out).tolist()) == [0, 85, 170, 255]


@pytest.mark.parametrize("size", [19, 320])
def test_equalize_is_near_uniform_at_any_size(size):
    """Pillow's equalisation saturated on the 28 px subset's 19 x 19 crops (28 % of
    pixels at one value). A dark, smooth frame (a blurred blob plus noise, 60-80 grey levels,
    none above 4 % of the pixels) must equalise to a near-uniform histogram at either size: no
    output value holds more than 1 point above the largest input level's share (Pillow gave
    27.7 % on the 19 x 19 one), the darkest level goes to 0 and the brightest to 255, and the
    CDF is within 0.1 of the uniform one (Kolmogorov-Smirnov distance; Pillow: 0.29)."""
    yy, xx = np.mgrid[:size, :size] / size
    blob = 30 + 60 * np.exp(-((xx - 0.5) ** 2 + (yy - 0.4) ** 2) / 0.15)
    noise = np.random.default_rng(0).normal(0, 3, (size, size))
    img = np.clip(blob + noise, 0, 255).astype(np.uint8)
    out = preprocess.equalize(img)
    share = lambda a: np.bincount(a.ravel(), minlength=256).max() / a.size  # noqa: E731
    assert share(img) < 0.04
    assert share(out) <= share(img) + 0.01
    assert out.min() == 0 and out.max() == 255
    cdf = np.cumsum(np.bincount(out.ravel(), minlength=256)) / out.size
    assert np.abs(cdf - (np.arange(256) + 1) / 256).max() < 0.1


def test_equalize_rejects_what_is_not_a_grey_frame():
    with pytest.raises(ValueError, match="expected a 2-D uint8 array, got float64"):
        preprocess.equalize(np.zeros((4, 4)))


def test_rotation_angles_paper():
    angles = preprocess.rotation_angles(18)
    assert len(angles) == 20 and angles[0] == 0 and angles[-1] == 342
    assert len(preprocess.rotation_angles(90)) == 4
    with pytest.raises(ConfigError, match="rotation_step"):
        preprocess.rotation_angles(0)


def test_rotate_90_equals_rot90():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    out = preprocess.rotate_resize(img, np.array([0.0, 90.0, 180.0]), 32)
    np.testing.assert_array_equal(out[0], img)
    np.testing.assert_array_equal(out[1], np.rot90(img))  # counter-clockwise
    np.testing.assert_array_equal(out[2], np.rot90(img, 2))


def test_rotation_fills_corners_with_zero_and_resizes():
    img = np.full((320, 320), 100, dtype=np.uint8)
    out = preprocess.rotate_resize(img, preprocess.rotation_angles(18), 64)
    assert out.shape == (20, 64, 64) and out.dtype == np.uint8
    assert out[1, 0, 0] == 0  # 18 degrees: corner outside the rotated frame -> fill 0
    assert out[1, 32, 32] == 100  # centre unchanged
    assert (out[0] == 100).all()  # 0 degrees: untouched, antialiased resize of a flat image


def _png(path, array, mode="L"):
    Image.fromarray(array).convert(mode).save(path)
    return path


def test_read_frame_errors_name_the_file(tmp_path):
    good = _png(tmp_path / "good.png", np.zeros((48, 48), np.uint8))
    assert preprocess.read_frame(str(good), 48).shape == (48, 48)
    with pytest.raises(DataError, match=r"good\.png: frame is 48x48 px; expected 64x64"):
        preprocess.read_frame(str(good), 64)
    rgb = _png(tmp_path / "rgb.png", np.zeros((48, 48), np.uint8), "RGB")
    with pytest.raises(DataError, match=r"rgb\.png: image mode 'RGB'"):
        preprocess.read_frame(str(rgb), 48)
    data = good.read_bytes()
    trunc = tmp_path / "trunc.png"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"trunc\.png: corrupt or truncated PNG"):
        preprocess.read_frame(str(trunc), 48)
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not a png at all")
    with pytest.raises(DataError, match=r"junk\.png: corrupt or truncated PNG"):
        preprocess.read_frame(str(junk), 48)
    with pytest.raises(DataError, match=r"missing\.png: frame not found"):
        preprocess.read_frame(str(tmp_path / "missing.png"), 48)


def _embryo_like(size: int, seed: int) -> np.ndarray:
    """An inverted-frame look-alike: a smooth blob, noise and a sharp-edged disc, 0-128."""
    yy, xx = np.mgrid[:size, :size] / size
    blob = 90 * np.exp(-((xx - 0.5) ** 2 + (yy - 0.45) ** 2) / 0.05)
    disc = 40.0 * (((xx - 0.6) ** 2 + (yy - 0.6) ** 2) < 0.02)
    noise = np.random.default_rng(seed).normal(0, 6, (size, size))
    return np.clip(blob + disc + noise, 0, 128).astype(np.uint8)


@pytest.mark.parametrize("shape,size", [((320, 320), 64), ((24, 24), 16), ((19, 19), 64),
                                        ((32, 32), 32), ((50, 37), 12)])  # fmt: skip
def test_resize_many_is_resize_bit_for_bit(shape, size):
    """Pillow's two passes run on 4 images at once (4-band, stacked): the same integers."""
    images = np.random.default_rng(1).integers(0, 256, (7, *shape), dtype=np.uint8)
    out = preprocess.resize_many(images, size)
    assert out.shape == (7, size, size) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.stack([preprocess.resize(i, size) for i in images]))


def test_rotate_is_pillows_rotation_within_one_grey_level():
    """OpenCV evaluates Pillow's bilinear rotation in float32 (Pillow: float64): the module
    documents at most 1 grey level apart at about 0.02 % of the pixels; multiples of 90
    degrees are exact."""
    images = [_embryo_like(320, seed) for seed in range(3)]
    diffs = []
    for angle in preprocess.rotation_angles(18):
        for img in images:
            ours = preprocess.rotate(img, angle)
            pillow = preprocess.rotate_pillow(img, angle)
            assert ours.shape == (320, 320) and ours.dtype == np.uint8
            if angle % 90 == 0:
                np.testing.assert_array_equal(ours, pillow)
            diffs.append(np.abs(ours.astype(int) - pillow))
    diff = np.stack(diffs)
    assert diff.max() <= 1 and (diff > 0).mean() < 0.001
    cv2 = pytest.importorskip("cv2")
    if int(cv2.__version__.split(".")[0]) >= 5:
        assert preprocess._opencv_rotates_like_pillow()  # the fast path, not the fallback


@pytest.mark.parametrize("size,side,step", [(40, 16, 18), (40, 16, 35), (320, 64, 18)])
def test_augment_chain_equals_the_sequential_reference(size, side, step):
    """rotate_resize_many (groups of 4, quarter turns shared, threads) is, sample for sample,
    resize(rotate()) of each frame at each angle in frame-major order, whatever the thread
    count."""
    n = 7 if size < 100 else 4  # 7: a partial group
    images = np.stack([_embryo_like(size, seed) for seed in range(n)])
    angles = preprocess.rotation_angles(step)
    reference = np.stack([preprocess.resize(preprocess.rotate(i, a), side) for i in images
                          for a in angles])  # fmt: skip
    for threads in (1, 3):
        out = preprocess.rotate_resize_many(images, angles, side, threads=threads)
        np.testing.assert_array_equal(out, reference)
    r = len(angles)
    np.testing.assert_array_equal(preprocess.rotate_resize(images[2], angles, side),
                                  reference[2 * r : 3 * r])  # fmt: skip


@pytest.mark.parametrize("n_in,n_out", [(320, 64), (24, 16), (19, 64), (320, 28), (33, 64)])
def test_lanczos_weights_are_pillows(n_in, n_out):
    """The weight table (whose mirror symmetry lets resizes be shared between quarter turns)
    is Pillow's: applied in integers as Pillow applies it, it gives Pillow's rows."""
    weights = preprocess.lanczos_weights(n_in, n_out)
    rows = np.random.default_rng(2).integers(0, 256, (3000, n_in), dtype=np.uint8)
    ours = np.clip((rows.astype(np.int64) @ weights.T + 2**21) >> 22, 0, 255)
    pillow = Image.fromarray(rows).resize((n_out, len(rows)), Image.Resampling.LANCZOS)
    np.testing.assert_array_equal(ours, np.asarray(pillow))
    assert preprocess._mirror_symmetric(n_in, n_out)


def test_without_a_faithful_opencv_pillow_rotates_exactly(monkeypatch):
    images = np.stack([_embryo_like(40, seed) for seed in range(5)])
    angles = preprocess.rotation_angles(18)
    monkeypatch.setattr(preprocess, "_opencv_rotates_like_pillow", lambda: False)
    out = preprocess.rotate_resize_many(images, angles, 16, threads=2)
    reference = [preprocess.resize(preprocess.rotate_pillow(i, a), 16) for i in images
                 for a in angles]  # fmt: skip
    np.testing.assert_array_equal(out, np.stack(reference))
    np.testing.assert_array_equal(preprocess.rotate(images[0], 18.0),
                                  preprocess.rotate_pillow(images[0], 18.0))  # fmt: skip


def test_the_probe_refuses_a_coarse_warp(monkeypatch):
    """OpenCV 4's float warp rounds coordinates to 1/32 px (a quarter of the pixels off, by up
    to 3): the probe must send such a warp to Pillow."""
    faithful = preprocess._rotate_opencv

    def coarse(planes, angles):
        out = faithful(planes, angles)
        return np.where(out[..., :1] % 4 == 1, np.minimum(out.astype(int) + 2, 255), out)

    probe = preprocess._opencv_rotates_like_pillow.__wrapped__
    assert probe()
    monkeypatch.setattr(preprocess, "_rotate_opencv", coarse)
    assert not probe()


def test_default_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert preprocess.default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert preprocess.default_threads() == len(__import__("os").sched_getaffinity(0))
