"""A model of one's own, as embryo-bench trains it (``config/my-model.yaml``): a function
defined with ``def`` that takes one sample's shape and the number of classes and returns an
uncompiled Keras model. The workflow compiles it (Adam at the workload's learning rate, sparse
categorical cross-entropy on its output probabilities) and trains it on every target; the
plan finds it without importing it, so its module must be importable where Snakemake runs
and where the runs train (this folder on ``PYTHONPATH`` for host targets; docker targets need
it in their image)::

    PYTHONPATH=examples snakemake --cores all --configfile config/my-model.yaml

Its layer sizes are this example's choice, not a published model's.
"""

import keras


def build(input_shape, classes):
    """A small convolutional network for images stored as uint8 (height, width, channels).

    Args:
        input_shape: one sample's shape, e.g. (28, 28, 1) for MNIST.
        classes: the number of classes: the output's units.

    Returns:
        An uncompiled ``keras.Model`` from (None, *input_shape) pixels (0-255) to (None,
        classes) class probabilities (softmax): the shapes the trainer checks before it
        trains.
    """
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape)),
            keras.layers.Rescaling(1 / 255),  # uint8 pixels to 0-1
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(classes, activation="softmax"),
        ]
    )
