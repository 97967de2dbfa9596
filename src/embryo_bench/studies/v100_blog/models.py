"""The cats-vs-dogs CNNs of the V100 blog (study 004, phoenixNAP: "GPU vs CPU
Deep Learning: Training Performance of Convolutional Networks").

The post trains Venkatesh Tata's Keras tutorial network ("Building an image classifier using
deep learning in Python"; the post shows it only as a figure) and two larger variants it
describes in words. The tutorial: 64x64x3 images from ``flow_from_directory``, rescaled by
1/255, augmented with shear 0.2, zoom 0.2 and horizontal flips; conv 3x3x32 ReLU, max-pool 2,
conv 3x3x32 ReLU, max-pool 2, flatten, dense 128 ReLU, dense 1 sigmoid; Adam, binary
cross-entropy, batch 32, 25 epochs of 8,000 steps (the post: "8000 steps and 32 images
per-step", "the default setting of 25 epochs").

The variants, as far as the post pins them down (what it leaves open is assumed, as written
in each builder and in the catalog's ``assumed``): "a pair of convolutional (64 filters) and
max-pooling layers" added (84 %), then "a dropout layer with a rate of 0.5" (90 %, 425
images/s on the V100); then 128x128 inputs, "another pair of convolutional and max pool
layers" and 64 filters "on all layers" (94 %, 333 images/s). The "30+ convolutional layers"
network is not described enough to build.

Images are uint8 (H, W, C), rescaled inside (``Rescaling``, no parameters); the augmentation
is the files-mode generator's (the catalog's ``augmentation``), not part of the model.
"""

from __future__ import annotations

import keras
from keras import layers

from ...errors import ConfigError


def _network(input_shape, classes, filters: tuple[int, ...], dropout: float, name: str):
    """[conv 3x3 ReLU (valid), max-pool 2] for each of ``filters``, flatten, dense 128 ReLU,
    optional dropout, dense 1 sigmoid."""
    if classes != 2:
        raise ConfigError(f"classes {classes}: the model has one sigmoid output; expected 2")
    convs = []
    for n in filters:
        convs += [layers.Conv2D(n, 3, activation="relu"), layers.MaxPooling2D(2)]
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="uint8", name="image"),
            layers.Rescaling(1.0 / 255.0),
            *convs,
            layers.Flatten(),
            layers.Dense(128, activation="relu"),
            *([layers.Dropout(dropout)] if dropout else []),
            layers.Dense(1, activation="sigmoid"),
        ],
        name=name,
    )


def tutorial_cnn(input_shape, classes) -> keras.Model:
    """The tutorial's network: [conv 3x3x32, max-pool 2] x 2, dense 128, dense 1 sigmoid.
    64x64x3: 813,217 parameters (896 + 9,248 + 14 x 14 x 32 x 128 + 128 + 129)."""
    return _network(input_shape, classes, (32, 32), 0.0, "catsdogs_tutorial")


def deeper_cnn(input_shape, classes) -> keras.Model:
    """The post's 90 % network: the tutorial's plus a conv 3x3x64 / max-pool 2 pair and
    dropout 0.5. Assumed: the pair goes after the tutorial's two (before flatten), 3x3
    kernels and 2x2 pools as the tutorial's, the dropout after dense 128. 64x64x3: 323,809
    parameters."""
    return _network(input_shape, classes, (32, 32, 64), 0.5, "catsdogs_deeper")


def cnn_128(input_shape, classes) -> keras.Model:
    """The post's 94 % network: 128x128x3 inputs, four conv 3x3x64 / max-pool 2 pairs, dense
    128, dropout 0.5, dense 1 sigmoid. Assumed as for :func:`deeper_cnn`; the post gives
    the input size, the fourth pair and "64 filters on all layers". 128x128x3: 407,745
    parameters."""
    return _network(input_shape, classes, (64, 64, 64, 64), 0.5, "catsdogs_128")
