"""Input modes: how training batches reach Keras ``fit``, and how long the
training steps waited for them.

* ``memory``: the images are arrays in RAM, fed by
  :func:`embryo_bench.training.backend.input_pipeline` (unchanged here).
* ``files``: images decoded from disk with Pillow and augmented per batch, as the studies'
  generators did (Keras 2's ``ImageDataGenerator.flow_from_directory`` with shear, zoom and
  flip, in studies 001 and 004): :class:`ImageFiles` read by a :class:`TimedFeed` with a
  number of workers, reshuffled every epoch with the run's seed, uint8 batches.

A :class:`TimedFeed` is the consuming side of the workers: it hands the training step one
batch at a time and times how long it blocked for each (:meth:`TimedFeed.waited_seconds`).
Keras' own ``PyDataset`` machinery could not be timed: ``fit`` wraps a ``PyDataset`` in an
adapter whose enqueuer blocks on its workers' results where no caller code runs (Keras
3.15, ``trainers/data_adapters/py_dataset_adapter.py``: ``OrderedEnqueuer.get``), and a
callback's gap between ``on_train_batch_end`` and the next ``on_train_batch_begin`` does not
see it either: Keras' TensorFlow trainer fetches the batch inside the step function
(``iterator.get_next()``), so the wait is counted inside the step. On TensorFlow the feed is
a ``tf.data.Dataset.from_generator`` over :meth:`TimedFeed.batches` with no prefetch: the
step's ``get_next`` calls the generator, and the time the generator blocks is the time the
step waited (checked against a known decoding delay in tests/test_inputs.py). On JAX and
PyTorch it is a ``keras.utils.PyDataset`` that Keras reads in the training thread (one
worker: no enqueuer and no prefetch); PyTorch on a CPU runs a step before it asks for the
next batch, so the time is the step's wait there too; JAX dispatches steps asynchronously,
so there the time may include a step still computing while the next batch is awaited: an
upper bound of the wait.

Memory: a feed with ``workers`` workers holds at most ``workers`` batches decoded or being
decoded ahead of the batch the step trains on: one per worker (each worker's queue is one
batch deep; :meth:`TimedFeed.batches`). Keras' enqueuer, by contrast, holds up to
``max_queue_size`` results plus one it has submitted while waiting to queue it.

Each epoch's wait goes into its history row (:func:`add_input_wait`,
:data:`INPUT_WAIT_COLUMNS`); a run whose training mostly waited is input-bound
(:func:`input_bound`, :data:`INPUT_BOUND_SHARE`).

Keras and TensorFlow are imported inside the functions that build a feed for ``fit``: this
module is imported before the backend is chosen.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..errors import DataError, EmbryoBenchError
from .backend import backend_name

#: A run is input-bound when its training steps waited for data more than this share of the
#: training time (s waiting / s training): then most of the time goes to feeding the model,
#: not to training it, and a faster machine for the model would not make the run faster
#: (studies 001 and 004: GPUs at 1-11 % utilisation behind an image generator). "Mostly"
#: is more than half; a judgement, not a measurement.
INPUT_BOUND_SHARE = 0.5

#: The history columns of the input wait (:func:`add_input_wait`): input_wait_seconds (s the
#: epoch's training steps waited for batches), input_wait_share (that / the epoch's training
#: seconds, a fraction 0..1).
INPUT_WAIT_COLUMNS = ("input_wait_seconds", "input_wait_share")

#: Pillow image modes for the channel counts a files feed decodes to.
_MODES = {1: "L", 3: "RGB"}


def input_bound(wait_share: float | None, threshold: float = INPUT_BOUND_SHARE) -> str | None:
    """The input-bound flag of a run (or an epoch) whose steps waited ``wait_share`` of its
    training time for data (s/s): a sentence with the share when it is above ``threshold``
    ("input-bound: 83 % of training time waiting for data"), else None; None too when the
    wait was not measured (``wait_share`` None or NaN)."""
    if wait_share is None or math.isnan(wait_share) or wait_share <= threshold:
        return None
    return f"input-bound: {wait_share * 100:.0f} % of training time waiting for data"


def add_input_wait(row: dict, wait_seconds: float) -> dict:
    """Write an epoch's input wait into its history row (:data:`INPUT_WAIT_COLUMNS`):
    ``wait_seconds`` (s) and its share of the row's ``epoch_seconds`` (the epoch's training,
    s). Returns ``row``, changed in place."""
    seconds, share = INPUT_WAIT_COLUMNS
    row[seconds] = float(wait_seconds)
    row[share] = float(wait_seconds) / row["epoch_seconds"] if row["epoch_seconds"] else None
    return row


def decode_image(path: str, shape: tuple[int, int, int]) -> np.ndarray:
    """One image file decoded with Pillow and resized to ``shape``.

    As Keras 2's ``load_img`` did for ``flow_from_directory``: converted to grey ("L") for one
    channel or RGB for three, resized with nearest-neighbour interpolation when its size
    differs.

    Args:
        path: an image file any Pillow plugin reads (PNG, JPEG, ...).
        shape: (height, width, channels), channels 1 or 3.

    Returns:
        uint8 array of ``shape``.

    Raises:
        DataError: the file is missing, truncated or not an image (one line naming it).
    """
    height, width, channels = shape
    try:
        with Image.open(path) as img:
            img = img.convert(_MODES[channels])
            if img.size != (width, height):
                img = img.resize((width, height), Image.Resampling.NEAREST)
            pixels = np.asarray(img, dtype=np.uint8)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"{path}: not a readable image ({why}); expected an image file") from None
    return pixels.reshape(shape)


@dataclass(frozen=True)
class Augment:
    """Random shear, zoom and horizontal flip per image, as Keras 2's
    ``ImageDataGenerator.random_transform`` drew them (studies 001 and 004: shear_range 0.2,
    zoom_range 0.2, horizontal_flip).

    Attributes:
        shear_range: shear angle drawn from [-shear_range, shear_range], in degrees (Keras 2
            read the studies' 0.2 as degrees too).
        zoom_range: zoom factors for x and y drawn apart from [1 - zoom_range, 1 + zoom_range]
            (above 1: the image shrinks).
        horizontal_flip: flip left-right with probability 1/2.
        width_shift_range, height_shift_range: shifts drawn from [-range, range] times the
            width and the height (002's cifar10_cnn.py: 0.1 each).

    The shear, zoom and shifts are one affine map about the image centre, applied by Pillow's
    ``Image.transform`` (bilinear, as Keras 2's order-1 spline); where the map reaches
    outside the image the pixels are 0 (Keras 2 repeated the nearest edge pixel).
    """

    shear_range: float = 0.0
    zoom_range: float = 0.0
    horizontal_flip: bool = False
    width_shift_range: float = 0.0
    height_shift_range: float = 0.0

    def apply(self, pixels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One image (uint8 (H, W, C)) transformed with parameters drawn from ``rng``;
        returns a new uint8 array of the same shape."""
        shear = np.deg2rad(rng.uniform(-self.shear_range, self.shear_range))
        zx, zy = rng.uniform(1 - self.zoom_range, 1 + self.zoom_range, 2)
        flip = self.horizontal_flip and rng.random() < 0.5
        height, width, channels = pixels.shape
        tx = ty = 0.0
        if self.width_shift_range or self.height_shift_range:  # drawn only when asked for
            tx = rng.uniform(-self.width_shift_range, self.width_shift_range) * width
            ty = rng.uniform(-self.height_shift_range, self.height_shift_range) * height
        out = pixels
        if shear or zx != 1 or zy != 1 or tx or ty:
            # Output (x, y) -> input: Keras 2's shear @ zoom, written for x = column, y = row
            # (its row/column matrix [[1, -sin, 0], [0, cos, 0]] @ diag(zx, zy)), about the
            # centre.
            a, b = np.cos(shear) * zy, 0.0
            d, e = -np.sin(shear) * zy, zx
            cx, cy = width / 2, height / 2
            data = (a, b, cx - a * cx - b * cy + tx, d, e, cy - d * cx - e * cy + ty)
            img = Image.fromarray(pixels[..., 0] if channels == 1 else pixels)
            img = img.transform(
                (width, height), Image.Transform.AFFINE, data, Image.Resampling.BILINEAR
            )
            out = np.asarray(img, dtype=np.uint8).reshape(pixels.shape)
        return out[:, ::-1] if flip else out


@dataclass(frozen=True, eq=False)
class ImageFiles:
    """Images on disk and their labels: the source of a files-mode :class:`TimedFeed`.

    Attributes:
        paths: image files (one per image).
        labels: int labels, one per path (kept as int32).
        shape: (height, width, channels) every image is decoded to; channels 1 or 3.
        augment: random transforms per image (:class:`Augment`), or None.
        decode: ``decode(path, shape) -> uint8 (H, W, C)``; :func:`decode_image` unless a
            test slows it down. With process workers it must be picklable (a module-level
            function).
    """

    paths: Sequence[str]
    labels: np.ndarray
    shape: tuple[int, int, int]
    augment: Augment | None = None
    decode: Callable[[str, tuple[int, int, int]], np.ndarray] = decode_image

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", np.asarray(self.labels, np.int32))
        if len(self.paths) != len(self.labels):
            raise ValueError(f"{len(self.paths)} paths but {len(self.labels)} labels")
        if len(self.shape) != 3 or self.shape[2] not in _MODES:
            raise ValueError(f"shape {self.shape}: expected (height, width, 1 or 3)")

    def __len__(self) -> int:
        return len(self.paths)

    def read(self, indices: np.ndarray, seed: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The images at ``indices`` decoded (and augmented with random parameters from
        ``seed``): (uint8 (len(indices), H, W, C), int32 (len(indices),)).

        Raises:
            DataError: an image file is missing or not an image (named).
        """
        rng = np.random.default_rng(list(seed))
        x = np.empty((len(indices), *self.shape), np.uint8)
        for k, i in enumerate(indices):
            pixels = self.decode(str(self.paths[i]), self.shape)
            x[k] = self.augment.apply(pixels, rng) if self.augment else pixels
        return x, self.labels[indices]


@dataclass(frozen=True, eq=False)
class ArrayImages:
    """Images already in memory, read through a :class:`TimedFeed`: augmented per batch as
    Keras 2's ``ImageDataGenerator.flow(x, y)`` did (002's cifar10_cnn.py: shifts of 0.1 and
    horizontal flips on CIFAR-10's arrays), or, with no augmentation, to measure the same
    wait as a files feed's on data that needs no decoding.

    Attributes:
        x: images, uint8 (N, H, W, C). y: labels, int (N,) (kept as int32).
        augment: random transforms per image (:class:`Augment`), or None.
    """

    x: np.ndarray
    y: np.ndarray
    augment: Augment | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", np.asarray(self.y, np.int32))

    @property
    def shape(self) -> tuple[int, int, int]:
        """(height, width, channels) of every image."""
        return tuple(self.x.shape[1:])

    def __len__(self) -> int:
        return len(self.y)

    def read(self, indices: np.ndarray, seed: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The images and labels at ``indices`` (copies), augmented with random parameters
        from ``seed`` where :attr:`augment` is set: (uint8 (len(indices), H, W, C), int32
        (len(indices),))."""
        x = self.x[indices]
        if self.augment:
            rng = np.random.default_rng(list(seed))
            for k in range(len(x)):
                x[k] = self.augment.apply(x[k], rng)
        return x, self.y[indices]


# The source a process worker reads (set once per worker by the pool's initializer).
_WORKER_SOURCE: ImageFiles | ArrayImages | None = None


def _install_source(source) -> None:
    global _WORKER_SOURCE
    _WORKER_SOURCE = source


def _read_in_worker(indices: np.ndarray, seed: Sequence[int]):
    return _WORKER_SOURCE.read(indices, seed)


class TimedFeed:
    """Training batches read by ``workers`` workers from a source (:class:`ImageFiles`,
    :class:`ArrayImages`), reshuffled every epoch with the run's seed, and the time the
    training steps waited for them.

    Args:
        source: what to read.
        batch_size: images per batch (an epoch's last batch may be smaller).
        seed: the run's seed: pass p's order (p from 1) is a permutation drawn from
            (seed, p), its batch i's augmentation from (seed, p, i), whichever worker reads
            it.
        workers: threads (or processes) reading batches; also the most batches held ahead
            of the one the step trains on.
        use_multiprocessing: processes (forked) instead of threads. Threads suit Pillow,
            which decodes and transforms without holding the GIL.
        shuffle: a new order every pass; False: the stored order.
        epoch_steps: batches an epoch, drawn from passes that follow one another across
            epochs, each pass's leftover (fewer images than a batch) dropped: a study that
            counted steps (the V100 post's 25 epochs of "8000 steps and 32 images per-step"
            from Keras 2's endless generator; Wu et al.'s 20,000 iterations). 0: an epoch
            is one pass, its last batch smaller where the images do not fill it.

    Raises:
        ValueError: batch_size or workers below 1, an empty source, or fixed-step epochs
            over fewer images than a batch.
    """

    def __init__(
        self,
        source: ImageFiles | ArrayImages,
        batch_size: int,
        *,
        seed: int = 0,
        workers: int = 1,
        use_multiprocessing: bool = False,
        shuffle: bool = True,
        epoch_steps: int = 0,
    ) -> None:
        if batch_size < 1 or workers < 1 or len(source) == 0:
            raise ValueError(
                f"batch_size {batch_size} and workers {workers} must be >= 1, and the source "
                f"must hold images ({len(source)})"
            )
        if epoch_steps and len(source) < batch_size:
            raise ValueError(
                f"epoch_steps {epoch_steps}: a pass of {len(source)} images holds no whole "
                f"batch of {batch_size}"
            )
        self.source, self.batch_size, self.seed = source, batch_size, seed
        self.epoch_steps = epoch_steps
        self.workers, self.use_multiprocessing, self.shuffle = workers, use_multiprocessing, shuffle
        self.epochs_read = 0  # epochs whose every batch was handed out
        self.failure: EmbryoBenchError | None = None  # the error a batch was read with
        self.batches_taken = 0  # batches handed out, over all epochs
        self._waited = 0.0

    @property
    def steps(self) -> int:
        """Batches per epoch: ``epoch_steps``, else one pass's."""
        return self.epoch_steps or -(-len(self.source) // self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """The image indices in pass ``epoch``'s order (passes count from 1; without
        ``epoch_steps`` a pass is an epoch)."""
        n = len(self.source)
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([self.seed, epoch]).permutation(n)

    def _batch_at(self, epoch: int, i: int) -> tuple[int, int]:
        """(pass from 1, batch within that pass) of epoch ``epoch``'s batch ``i``."""
        if not self.epoch_steps:
            return epoch, i
        p, j = divmod((epoch - 1) * self.epoch_steps + i, len(self.source) // self.batch_size)
        return p + 1, j

    def waited_seconds(self) -> float:
        """Seconds the consumer (the training step) has waited for batches so far, over all
        epochs."""
        return self._waited

    def _pool(self) -> Executor:
        if self.use_multiprocessing:
            return ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_install_source,
                initargs=(self.source,),
            )
        return ThreadPoolExecutor(self.workers, thread_name_prefix="embryo-bench-input")

    def batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """One epoch's batches in order: (images uint8 (B, H, W, C), labels int32 (B,)).

        ``workers`` batches are read ahead of the one handed out, no more: the next is
        submitted only when one is taken. The time spent blocked on a batch not yet read is
        added to :meth:`waited_seconds`. An epoch's order is fixed when its first batch is
        asked for; an epoch left before its end (Keras peeks at one batch before training
        on some backends) is read again from its start by the next call.

        Raises:
            DataError: from the source (e.g. an image file that is not an image), when that
                batch is taken.
        """
        epoch = self.epochs_read + 1
        orders = functools.lru_cache(maxsize=2)(self.order)
        steps, size = self.steps, self.batch_size
        read = _read_in_worker if self.use_multiprocessing else self.source.read
        pool = self._pool()
        pending: deque = deque()

        def submit(i: int) -> None:
            p, j = self._batch_at(epoch, i)
            pending.append(
                pool.submit(read, orders(p)[j * size : (j + 1) * size], (self.seed, p, j))
            )

        try:
            for i in range(min(self.workers, steps)):
                submit(i)
            for i in range(steps):
                start = time.perf_counter()
                try:
                    batch = pending.popleft().result()
                except EmbryoBenchError as exc:
                    self.failure = exc
                    raise
                self._waited += time.perf_counter() - start
                self.batches_taken += 1
                if i + self.workers < steps:
                    submit(i + self.workers)
                if i == steps - 1:
                    self.epochs_read = epoch
                    pool.shutdown(wait=False)
                yield batch
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _tf_batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        # An error raised inside tf.data's generator op is logged by TensorFlow with its
        # Python traceback before fit raises; stopping the batches instead ends the epoch
        # short of its cardinality, which fails fit with no traceback logged, and
        # feed_errors raises the recorded failure.
        with contextlib.suppress(EmbryoBenchError):
            yield from self.batches()

    def fit_kwargs(self) -> dict:
        """Keyword arguments of ``fit`` for these batches (the feed shuffles itself, so
        ``fit``'s own shuffle is off): on TensorFlow a ``tf.data.Dataset`` over
        :meth:`batches` (no prefetch, autotuning off); on JAX and PyTorch a
        ``keras.utils.PyDataset`` Keras reads in the training thread."""
        if backend_name() != "tensorflow":
            return {"x": _in_thread_dataset_class()(self), "shuffle": False}
        import tensorflow as tf

        signature = (
            tf.TensorSpec((None, *self.source.shape), tf.uint8),
            tf.TensorSpec((None,), tf.int32),
        )
        dataset = tf.data.Dataset.from_generator(self._tf_batches, output_signature=signature)
        # The number of batches known, Keras steps through exactly one epoch of them (and a
        # generator that stops early is an error, which feed_errors turns into the feed's).
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(self.steps))
        options = tf.data.Options()
        options.autotune.enabled = False
        options.threading.private_threadpool_size = 1
        return {"x": dataset.with_options(options), "shuffle": False}


@contextlib.contextmanager
def feed_errors(feed) -> Iterator[None]:
    """Around ``fit``: a batch that ``feed`` could not read raises the feed's own error
    (e.g. a :class:`DataError` naming an image file, one line) instead of the framework's
    wrapping of it (TensorFlow's ``UnknownError``, which holds the Python traceback in its
    message). Other errors, and every error of a feed that records none (``failure``),
    pass unchanged."""
    try:
        yield
    except Exception:
        failure = getattr(feed, "failure", None)
        if failure is None:
            raise
        raise failure from None


@functools.cache
def _in_thread_dataset_class():
    """The ``keras.utils.PyDataset`` over a :class:`TimedFeed` for JAX and PyTorch, made on
    first use (Keras must wait for the backend choice)."""
    import keras

    class InThreadBatches(keras.utils.PyDataset):
        """A :class:`TimedFeed`'s batches, asked for in order by Keras in the training thread
        (one worker: Keras starts no enqueuer of its own)."""

        def __init__(self, feed: TimedFeed) -> None:
            super().__init__(workers=1, use_multiprocessing=False, max_queue_size=1)
            self.feed, self.stream, self.next_index = feed, None, 0

        def __len__(self) -> int:
            return self.feed.steps

        def __getitem__(self, index: int):
            if index == 0:
                self.on_epoch_end()
                self.stream = self.feed.batches()
            elif self.stream is None or index != self.next_index:
                raise ValueError(f"batch {index} asked for; the feed gives batches in order")
            self.next_index = index + 1
            return next(self.stream)

        def on_epoch_end(self) -> None:
            if self.stream is not None:
                self.stream.close()
            self.stream = None

    return InThreadBatches


def read_images(files: ImageFiles) -> tuple[np.ndarray, np.ndarray]:
    """Every image of ``files`` decoded into memory, in order and not augmented (e.g. a test
    split scored after every epoch): (uint8 (N, H, W, C), int32 (N,)).

    Raises:
        DataError: an image file is missing or not an image (named).
    """
    plain = ImageFiles(files.paths, files.labels, files.shape, None, files.decode)
    return plain.read(np.arange(len(plain)), ())
