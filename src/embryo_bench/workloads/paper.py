"""The paper's CNN (section 4), TensorFlow's "Deep MNIST for Experts" adapted to 64x64 frames.

conv 5x5x32 + ReLU -> maxpool 2 -> conv 5x5x64 + ReLU -> maxpool 2 -> dense 1024 + ReLU ->
dropout 0.5 -> dense 4 (logits). With 64x64x1 inputs this has 16,834,436 trainable parameters
(the paper's text prints 16,832,432: its per-layer terms add up to 16,834,432, which leaves
out the output layer's 4 biases, and the printed total is a further 2,000 below that sum).
Written with the Keras 3 API only, so any Keras backend runs it.

Two variants (config ``train.variant``): "keras" uses Keras 3's defaults (Glorot-uniform
weights, zero biases, Adam epsilon 1e-7); "original" uses those of the authors' script
(compscied/tensorflow, EmbryoConvolutionLearning.py, after TensorFlow's Deep MNIST tutorial):
weights ``tf.truncated_normal(stddev=0.1)``, biases ``tf.constant(0.1)``, and
``tf.train.AdamOptimizer(1e-4)`` with TensorFlow 1's epsilon 1e-8.
"""

from __future__ import annotations

import keras
from keras import layers

from ..vocabulary.spec import RunSpec
from .build import make_adam

PAPER_PARAMETERS = 16_834_436


ORIGINAL_WEIGHT_STDDEV = 0.1
ORIGINAL_BIAS = 0.1
ORIGINAL_ADAM_EPSILON = 1e-8


def _initialisers(variant: str) -> dict:
    """Initialiser keyword arguments of the weighted layers for ``variant``.

    Raises:
        ValueError: an unknown variant.
    """
    if variant == "keras":
        return {}
    if variant == "original":
        return {
            "kernel_initializer": keras.initializers.TruncatedNormal(stddev=ORIGINAL_WEIGHT_STDDEV),
            "bias_initializer": keras.initializers.Constant(ORIGINAL_BIAS),
        }
    raise ValueError(f"model variant {variant!r}; expected 'keras' or 'original'")


def build_model(
    image_size: int = 64, classes: int = 4, dropout: float = 0.5, variant: str = "keras"
) -> keras.Model:
    """Build the (uncompiled) paper CNN.

    Args:
        image_size: input side in px; inputs are uint8 arrays (batch, image_size,
            image_size, 1), rescaled to [0, 1] inside the model.
        classes: number of output classes (paper: 4, for 1-4 cells).
        dropout: dropout rate before the output layer (paper: 0.5).
        variant: "keras" (default initialisers) or "original" (truncated normal sd 0.1
            weights, 0.1 biases, as the authors' script); Keras's truncated normal redraws
            beyond 2 sd, as ``tf.truncated_normal`` does.

    Returns:
        a ``keras.Sequential`` whose output is (batch, classes) float32 logits.

    Raises:
        ValueError: an unknown variant.
    """
    init = _initialisers(variant)
    return keras.Sequential(
        [
            keras.Input((image_size, image_size, 1), dtype="uint8", name="frame"),
            layers.Rescaling(1.0 / 255.0),
            layers.Conv2D(32, 5, padding="same", activation="relu", name="conv1", **init),
            layers.MaxPooling2D(2, name="pool1"),
            layers.Conv2D(64, 5, padding="same", activation="relu", name="conv2", **init),
            layers.MaxPooling2D(2, name="pool2"),
            layers.Flatten(),
            layers.Dense(1024, activation="relu", name="fc1", **init),
            layers.Dropout(dropout),
            layers.Dense(classes, name="logits", **init),
        ],
        name="paper_cnn",
    )


def compile_model(
    model: keras.Model,
    learning_rate: float = 1e-4,
    variant: str = "keras",
    steps_per_execution: int = 1,
) -> keras.Model:
    """Compile with Adam (paper: learning rate 1e-4; epsilon Keras's 1e-7, or TensorFlow 1's
    1e-8 for the "original" variant; TensorFlow's fused update on that backend,
    :func:`embryo_bench.workloads.build.make_adam`) and sparse categorical cross-entropy on
    logits; labels are int class indices (cells - 1); ``steps_per_execution`` training steps
    per call into the backend (the run's: :func:`embryo_bench.training.train.
    steps_per_execution_for`; the same updates and losses at any). Returns the same model."""
    epsilon = ORIGINAL_ADAM_EPSILON if variant == "original" else 1e-7
    model.compile(
        optimizer=make_adam(learning_rate=learning_rate, epsilon=epsilon),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    return model


def build_catalog_model(input_shape: tuple[int, ...], classes: int) -> keras.Model:
    """The paper CNN as the catalog's builders are called (``embryo_bench.workloads.catalog``:
    an input shape and a class count; square single-channel frames), Keras variant, dropout
    0.5; outputs logits.

    Raises:
        ValueError: frames that are not square with one channel.
    """
    side, width, channels = input_shape
    if side != width or channels != 1:
        raise ValueError(f"the paper CNN takes square 1-channel frames, not {input_shape}")
    return build_model(side, classes=classes)


def build_for_run(spec: RunSpec, image_size: int, steps_per_execution: int = 1) -> keras.Model:
    """A run's model where the run trains on the paper's shards (input kind shards,
    :mod:`embryo_bench.training.train`): the paper CNN at the shards' ``image_size`` (px), 4
    classes, with the spec's dropout, variant and learning rate, running
    ``steps_per_execution`` training steps per call (:func:`compile_model`).

    Raises:
        ValueError: an unknown variant.
    """
    return compile_model(
        build_model(image_size, classes=4, dropout=spec.dropout, variant=spec.variant),
        spec.learning_rate,
        variant=spec.variant,
        steps_per_execution=steps_per_execution,
    )
