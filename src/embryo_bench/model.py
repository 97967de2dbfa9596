"""The paper's CNN (section 4), TensorFlow's "Deep MNIST for Experts" adapted to 64x64 frames.

conv 5x5x32 + ReLU -> maxpool 2 -> conv 5x5x64 + ReLU -> maxpool 2 -> dense 1024 + ReLU ->
dropout 0.5 -> dense 4 (logits). With 64x64x1 inputs this has 16,834,436 trainable parameters
(the paper's text prints 16,832,432: its per-layer terms add up to 16,834,432, which leaves
out the output layer's 4 biases, and the printed total is a further 2,000 below that sum).
Written with the Keras 3 API only, so any Keras backend runs it.
"""

from __future__ import annotations

import keras
from keras import layers

PAPER_PARAMETERS = 16_834_436


def build_model(image_size: int = 64, classes: int = 4, dropout: float = 0.5) -> keras.Model:
    """Build the (uncompiled) paper CNN.

    Args:
        image_size: input side in px; inputs are uint8 arrays (batch, image_size,
            image_size, 1), rescaled to [0, 1] inside the model.
        classes: number of output classes (paper: 4, for 1-4 cells).
        dropout: dropout rate before the output layer (paper: 0.5).

    Returns:
        a ``keras.Sequential`` whose output is (batch, classes) float32 logits.
    """
    return keras.Sequential(
        [
            keras.Input((image_size, image_size, 1), dtype="uint8", name="frame"),
            layers.Rescaling(1.0 / 255.0),
            layers.Conv2D(32, 5, padding="same", activation="relu", name="conv1"),
            layers.MaxPooling2D(2, name="pool1"),
            layers.Conv2D(64, 5, padding="same", activation="relu", name="conv2"),
            layers.MaxPooling2D(2, name="pool2"),
            layers.Flatten(),
            layers.Dense(1024, activation="relu", name="fc1"),
            layers.Dropout(dropout),
            layers.Dense(classes, name="logits"),
        ],
        name="paper_cnn",
    )


def compile_model(model: keras.Model, learning_rate: float = 1e-4) -> keras.Model:
    """Compile with Adam (paper: learning rate 1e-4) and sparse categorical cross-entropy on
    logits; labels are int class indices (cells - 1). Returns the same model."""
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model
