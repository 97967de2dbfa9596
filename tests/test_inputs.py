"""Input modes: files mode decodes and augments image files per batch, each
epoch records how long its training steps waited for data, and a run that mostly waited is
flagged input-bound. Tiny sizes: 48 PNGs of 16 x 16 px, a one-layer model, TensorFlow."""

from __future__ import annotations

import functools
import multiprocessing
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from embryo_bench.errors import DataError
from embryo_bench.training.inputs import (
    INPUT_BOUND_SHARE,
    INPUT_WAIT_COLUMNS,
    ArrayImages,
    Augment,
    ImageFiles,
    TimedFeed,
    add_input_wait,
    decode_image,
    input_bound,
    read_images,
)

SHAPE = (16, 16, 1)
N, BATCH = 48, 8  # 6 batches an epoch


@pytest.fixture(scope="module")
def pngs(tmp_path_factory) -> tuple[list[str], np.ndarray, np.ndarray]:
    """48 grey 16 px PNGs of random pixels: (paths, pixels uint8 (48, 16, 16, 1), labels)."""
    root = tmp_path_factory.mktemp("pngs")
    pixels = np.random.default_rng(0).integers(0, 256, (N, *SHAPE), dtype=np.uint8)
    paths = []
    for i, image in enumerate(pixels):
        path = root / f"img-{i:02d}.png"
        Image.fromarray(image[..., 0]).save(path)
        paths.append(str(path))
    return paths, pixels, np.arange(N, dtype=np.int32) % 4


def slow_decode(path: str, shape, delay: float) -> np.ndarray:
    """Decoding slowed on purpose by ``delay`` s an image (module level: picklable)."""
    time.sleep(delay)
    return decode_image(path, shape)


def one_layer_model():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input(SHAPE),
            keras.layers.Rescaling(1 / 255),
            keras.layers.Flatten(),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def fit(feed: TimedFeed, labels: np.ndarray, epochs: int):
    """``fit_epochs`` on ``feed``, scoring 8 blank images: (rows, model); the model's
    ``trained_steps`` set to its optimizer's step count."""
    import keras

    from embryo_bench.training.epochs import fit_epochs

    model = one_layer_model()
    test = (np.zeros((8, *SHAPE), np.uint8), np.zeros(8, np.int32))
    rows = fit_epochs(
        model, (None, labels), test, batch_size=BATCH, epochs=epochs, seed=3, feed=feed
    )
    model.trained_steps = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    return rows, model


def test_files_mode_reads_the_files_pixels_in_a_seeded_order_and_trains_an_epoch(pngs):
    """Unaugmented batches are the PNGs' pixels, in epoch e's order drawn from (seed, e): the
    same for the same seed whatever the workers, another for another epoch or seed. One
    epoch of fit reads every file once and takes one step a batch."""
    paths, pixels, labels = pngs
    files = ImageFiles(paths, labels, SHAPE)
    feed = TimedFeed(files, BATCH, seed=3, workers=2)
    epoch1 = list(feed.batches())
    order = feed.order(1)
    assert [len(y) for _, y in epoch1] == [BATCH] * 6
    x = np.concatenate([b[0] for b in epoch1])
    assert x.dtype == np.uint8 and x.shape == (N, *SHAPE)
    np.testing.assert_array_equal(x, pixels[order])
    np.testing.assert_array_equal(np.concatenate([b[1] for b in epoch1]), labels[order])
    assert sorted(order) == list(range(N)) and list(order) != list(range(N))
    epoch2 = np.concatenate([b[0] for b in feed.batches()])
    assert not np.array_equal(epoch2, x)  # reshuffled
    np.testing.assert_array_equal(epoch2, pixels[feed.order(2)])
    same_seed = TimedFeed(files, BATCH, seed=3, workers=1)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in same_seed.batches()]), x)
    assert not np.array_equal(TimedFeed(files, BATCH, seed=4).order(1), feed.order(1))
    np.testing.assert_array_equal(read_images(files)[0], pixels)  # a split into memory

    seen: list[str] = []

    def logged(path, shape):
        seen.append(path)
        return decode_image(path, shape)

    train = TimedFeed(ImageFiles(paths, labels, SHAPE, decode=logged), BATCH, seed=3, workers=2)
    rows, model = fit(train, labels, epochs=1)
    assert len(rows) == 1 and model.trained_steps == 6 and train.epochs_read == 1
    assert sorted(seen) == sorted(paths)


def test_augmentation_changes_pixels_but_not_shape_or_dtype_and_follows_the_seed(pngs):
    paths, pixels, labels = pngs
    augment = Augment(shear_range=20, zoom_range=0.3, horizontal_flip=True)
    unchanged = TimedFeed(ImageFiles(paths, labels, SHAPE), BATCH)
    plain = np.concatenate([b[0] for b in unchanged.batches()])
    feed = TimedFeed(ImageFiles(paths, labels, SHAPE, augment), BATCH, workers=3)
    batches = list(feed.batches())
    x = np.concatenate([b[0] for b in batches])
    assert x.shape == plain.shape and x.dtype == np.uint8
    changed = [not np.array_equal(a, b) for a, b in zip(x, plain, strict=True)]
    assert sum(changed) == N  # every image sheared or zoomed by some amount
    # The same seed gives the same transforms, whichever worker reads a batch.
    again = TimedFeed(ImageFiles(paths, labels, SHAPE, augment), BATCH, workers=1)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in again.batches()]), x)
    # A flip alone mirrors about half the images and leaves the rest as they were.
    flip = ImageFiles(paths, labels, SHAPE, Augment(horizontal_flip=True))
    flipped = np.concatenate([b[0] for b in TimedFeed(flip, BATCH).batches()])
    mirrored = [np.array_equal(a, b[:, ::-1]) for a, b in zip(flipped, plain, strict=True)]
    kept = [np.array_equal(a, b) for a, b in zip(flipped, plain, strict=True)]
    assert all(m or k for m, k in zip(mirrored, kept, strict=True))
    assert 0.25 * N < sum(mirrored) < 0.75 * N


def test_slow_decoding_is_flagged_input_bound_and_memory_input_is_not(pngs):
    """Decoding slowed by 15 ms an image (one worker): an epoch's 6 batches of 8 wait about
    6 x 8 x 15 ms = 0.72 s for data, less the steps' own time while the next batch decodes
    (about 10 ms a step here), nearly all the epoch's training time; the same images from
    memory, through the same timed feed, wait next to nothing."""
    paths, pixels, labels = pngs
    delay = 0.015
    slow = functools.partial(slow_decode, delay=delay)
    feed = TimedFeed(ImageFiles(paths, labels, SHAPE, decode=slow), BATCH, workers=1)
    rows, _ = fit(feed, labels, epochs=2)
    steady = rows[1]  # epoch 1 holds the tracing of the step
    expected = feed.steps * BATCH * delay
    assert 0.75 * expected < steady["input_wait_seconds"] < 1.6 * expected
    assert steady["input_wait_seconds"] < steady["epoch_seconds"]
    assert steady["input_wait_share"] == pytest.approx(
        steady["input_wait_seconds"] / steady["epoch_seconds"]
    )
    flag = input_bound(steady["input_wait_share"])
    assert flag is not None and f"{steady['input_wait_share'] * 100:.0f} %" in flag

    memory = TimedFeed(ArrayImages(pixels, labels), BATCH, workers=1)
    rows, _ = fit(memory, labels, epochs=2)
    assert rows[1]["input_wait_seconds"] < 0.1 * expected
    assert input_bound(rows[1]["input_wait_share"]) is None


def test_the_flag_and_the_history_columns():
    assert input_bound(INPUT_BOUND_SHARE + 0.01) == (
        "input-bound: 51 % of training time waiting for data"
    )
    assert input_bound(INPUT_BOUND_SHARE) is None
    assert input_bound(None) is None and input_bound(float("nan")) is None
    assert input_bound(0.3, threshold=0.2) is not None
    row = add_input_wait({"epoch_seconds": 4.0}, 1.0)
    assert {k: row[k] for k in INPUT_WAIT_COLUMNS} == {
        "input_wait_seconds": 1.0,
        "input_wait_share": 0.25,
    }


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing"])
def test_a_bad_image_file_fails_the_batch_with_one_line_naming_it(pngs, tmp_path, damage):
    paths, _, labels = pngs
    bad = tmp_path / "bad.png"
    if damage == "garbage":
        bad.write_bytes(b"this is not a PNG")
    elif damage == "truncated":
        bad.write_bytes(Path(paths[0]).read_bytes()[:60])
    paths = [*paths[:-1], str(bad)]
    feed = TimedFeed(ImageFiles(paths, labels, SHAPE), BATCH, workers=2)  # nothing read yet
    with pytest.raises(DataError) as caught:
        list(feed.batches())
    message = str(caught.value)
    assert message.startswith(f"{bad}: not a readable image") and "\n" not in message
    if damage == "garbage":  # through fit on TensorFlow: the same one line, not tf's error
        with pytest.raises(DataError) as caught:
            fit(TimedFeed(ImageFiles(paths, labels, SHAPE), BATCH, workers=2), labels, 1)
        assert str(caught.value) == message


def test_no_more_than_one_batch_per_worker_is_read_ahead_of_the_step(pngs):
    """With 2 workers and slow decoding, a batch starts decoding only when at most 2 batches
    (the one decoding included) lie ahead of those the training step has taken; and when
    the step starts, it has taken exactly the batches before it (no buffer between the feed
    and the step, such as a tf.data prefetch)."""
    import keras

    paths, _, labels = pngs
    workers = 2
    ahead: list[int] = []
    feed: TimedFeed

    def watched(path, shape):
        order = feed.order(feed.epochs_read + 1)
        position = int(np.flatnonzero(order == paths.index(path))[0])
        batch = feed.epochs_read * feed.steps + position // BATCH  # counted over the epochs
        ahead.append(batch - feed.batches_taken + 1)
        return slow_decode(path, shape, 0.002)

    feed = TimedFeed(ImageFiles(paths, labels, SHAPE, decode=watched), BATCH, workers=workers)
    taken: list[int] = []

    class Taken(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            taken.append(feed.batches_taken)

    one_layer_model().fit(**feed.fit_kwargs(), epochs=2, verbose=0, callbacks=[Taken()])
    assert max(ahead) == workers and min(ahead) >= 1
    assert taken == list(range(12))


def test_process_workers_read_the_same_augmented_batches_as_threads(pngs):
    """use_multiprocessing: forked workers, each given the source once, read what threads
    read (the augmentation's draws follow the batch, not the worker); a bad file still
    fails with its one line."""
    paths, _, labels = pngs
    files = ImageFiles(paths, labels, SHAPE, Augment(shear_range=10, zoom_range=0.2))
    threads = [b[0] for b in TimedFeed(files, BATCH, workers=2).batches()]
    processes = TimedFeed(files, BATCH, workers=2, use_multiprocessing=True)
    for a, b in zip(threads, processes.batches(), strict=True):
        np.testing.assert_array_equal(a, b[0])
        assert multiprocessing.active_children()  # read by processes
    broken = ImageFiles([*paths[:-1], paths[0] + ".missing"], labels, SHAPE)
    with pytest.raises(DataError, match=r"\.missing: not a readable image"):
        list(TimedFeed(broken, BATCH, workers=2, use_multiprocessing=True).batches())


def test_fixed_step_epochs_continue_through_passes_and_drop_each_pass_leftover(pngs):
    """A study that counted steps (the V100 post's 8,000 a Keras epoch over 8,000 images; Wu
    et al.'s 20,000 iterations): ``epoch_steps`` batches an epoch, drawn from passes that
    follow one another across epochs, each pass reshuffled and its leftover dropped; fit
    trains exactly that many steps an epoch."""
    paths, pixels, labels = pngs
    files = ImageFiles(paths, labels, SHAPE)
    batch = 10  # 48 images: 4 whole batches a pass, 8 images left over
    feed = TimedFeed(files, batch, seed=3, workers=2, epoch_steps=6)
    assert feed.steps == 6
    epoch1, epoch2 = list(feed.batches()), list(feed.batches())
    assert [len(y) for _, y in epoch1 + epoch2] == [batch] * 12
    x = np.concatenate([b[0] for b in epoch1 + epoch2])
    # 12 batches = passes 1, 2 and 3 of 4 batches each, in their own orders
    want = np.concatenate([pixels[feed.order(p)[: 4 * batch]] for p in (1, 2, 3)])
    np.testing.assert_array_equal(x, want)
    assert not np.array_equal(feed.order(1), feed.order(2))
    with pytest.raises(ValueError, match="no whole batch"):
        TimedFeed(files, N + 1, epoch_steps=2)

    train = TimedFeed(files, BATCH, seed=3, workers=1, epoch_steps=9)  # 1.5 passes an epoch
    import keras

    from embryo_bench.training.epochs import fit_epochs

    model = one_layer_model()
    test = (np.zeros((8, *SHAPE), np.uint8), np.zeros(8, np.int32))
    rows = fit_epochs(
        model, (None, labels), test, batch_size=BATCH, epochs=2, seed=3, feed=train,
        epoch_steps=9,
    )  # fmt: skip
    assert len(rows) == 2
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 18
    assert [r["images_per_s"] > 0 for r in rows] == [True, True]
    with pytest.raises(ValueError, match="batches an epoch"):
        fit_epochs(model, (None, labels), test, batch_size=BATCH, epochs=1, feed=train,
                   epoch_steps=5)  # fmt: skip


def test_arrays_in_memory_are_augmented_per_batch_as_keras_flow_did(pngs):
    """minimaxir's CIFAR-10 CNN trains from ``ImageDataGenerator(width_shift_range=0.1,
    height_shift_range=0.1, horizontal_flip=True).flow(x_train, y_train)``: arrays in
    memory, each batch shifted and flipped per image, by the run's seed; the arrays
    themselves are left as they were."""
    _, pixels, labels = pngs
    stored = pixels.copy()
    augment = Augment(width_shift_range=0.25, height_shift_range=0.25, horizontal_flip=True)
    plain = np.concatenate([b[0] for b in TimedFeed(ArrayImages(pixels, labels), BATCH).batches()])
    feed = TimedFeed(ArrayImages(pixels, labels, augment), BATCH, seed=3, workers=2)
    x = np.concatenate([b[0] for b in feed.batches()])
    assert x.shape == plain.shape and x.dtype == np.uint8
    order = feed.order(1)
    changed = sum(not np.array_equal(a, b) for a, b in zip(x, pixels[order], strict=True))
    assert changed > 0.75 * N  # a shift of 0-4 px or a flip moves almost every image
    np.testing.assert_array_equal(pixels, stored)
    again = TimedFeed(ArrayImages(pixels, labels, augment), BATCH, seed=3, workers=1)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in again.batches()]), x)
