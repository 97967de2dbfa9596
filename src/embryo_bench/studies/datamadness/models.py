"""DATAmadness's CNN (study 001, DATAmadness 2019: "TensorFlow 2 - CPU vs GPU
Performance Comparison", 2019).

The post prints the model's Keras summary (58,091,396 parameters, 2,880 of them the batch
norms' moving statistics) and its training log (10 epochs of 153 steps, ~10k 256x256 images
from an augmenting generator) but not the code. The summary fixes every layer's kind, order,
output shape and parameter count. It shows no activations or dropout rates; the layer
sequence is that of the widely copied Keras "SmallerVGGNet" (pyimagesearch, 2018), whose
choices this builder assumes: ReLU inside each conv and the dense layer (no Activation rows
in the summary), before its batch norm; dropout 0.25 after the conv blocks and 0.5 before the
output; a softmax output. Images are uint8 (H, W, C), rescaled by 1/255 inside (assumed as
well: the post does not say how its generator scaled them).
"""

from __future__ import annotations

import keras
from keras import layers


def cnn(input_shape, classes) -> keras.Model:
    """The post's model summary, layer for layer: conv 3x3x32 same, batch norm, max-pool 3,
    dropout; [conv 3x3x64, batch norm] x 2, max-pool 2, dropout; [conv 3x3x128, batch
    norm] x 2, max-pool 2, dropout; flatten (21 x 21 x 128 = 56,448), dense 1024, batch norm,
    dropout, dense ``classes``. 256x256x3, 4 classes: 58,091,396 parameters.

    Args:
        input_shape: (H, W, C) of the uint8 images (256, 256, 3 in the post).
        classes: output classes (4 in the post).

    Returns:
        the uncompiled model, (batch, H, W, C) uint8 -> (batch, classes) softmax.
    """
    blocks = []
    for filters, convs, pool in ((32, 1, 3), (64, 2, 2), (128, 2, 2)):
        for _ in range(convs):
            blocks += [
                layers.Conv2D(filters, 3, padding="same", activation="relu"),
                layers.BatchNormalization(),
            ]
        blocks += [layers.MaxPooling2D(pool), layers.Dropout(0.25)]
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="uint8", name="image"),
            layers.Rescaling(1.0 / 255.0),
            *blocks,
            layers.Flatten(),
            layers.Dense(1024, activation="relu"),
            layers.BatchNormalization(),
            layers.Dropout(0.5),
            layers.Dense(classes, activation="softmax"),
        ],
        name="datamadness_cnn",
    )
