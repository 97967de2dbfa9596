"""TensorFlow's default networks as Wu et al. ran them (study 003, Wu et al. 2018: "A
Comparative Measurement Study of Deep Learning as a Service Framework"; Tables II-V).

* MNIST: TensorFlow's "Deep MNIST for Experts" (``mnist_deep.py``): conv 5x5x32, max-pool 2,
  conv 5x5x64, max-pool 2, dense 1024, dropout 0.5, dense 10 logits; 3,274,634 parameters;
  Adam 1e-4 (TensorFlow 1's epsilon 1e-8), batch 50, 20,000 iterations over 55,000 images
  (Table II: 18.18 epochs). It is the paper's CNN (``workloads.paper``) at 28x28x1 and
  10 classes with the tutorial's initialisers (its "original" variant).
* CIFAR-10: TensorFlow's CIFAR-10 tutorial (``cifar10.py``, ``cifar10_input.py``): 24x24x3
  crops; conv 5x5x64, max-pool 3/2, local response norm, conv 5x5x64, local response norm,
  max-pool 3/2, dense 384, dense 192 (L2 weight decay 0.004 on both), dense 10 logits;
  1,068,298 parameters; SGD lr 0.1, divided by 10 every 350 epochs, batch 128, 1,000,000
  iterations (Table III: 2,560 epochs), moving averages of the weights (decay 0.9999).

Images are stored uint8 (H, W, C) and scaled inside the model. The tutorial's input
pipeline (random 24x24 crop, flip, brightness and contrast, per-image standardisation; a
centre crop when evaluating) is :class:`Cifar10Distortion` here, a layer without parameters,
so it runs where the model runs (the tutorial ran it on CPU threads feeding a queue).
"""

from __future__ import annotations

import keras
from keras import layers, ops

from ...errors import ConfigError
from ...workloads.paper import build_model as build_paper_cnn

#: cifar10_input.py: ``IMAGE_SIZE = 24`` (the crop the network sees).
CIFAR10_CROP = 24
#: cifar10_input.py, ``distorted_inputs``: brightness max_delta 63, contrast 0.2-1.8.
CIFAR10_BRIGHTNESS = 63.0
CIFAR10_CONTRAST = (0.2, 1.8)
#: cifar10.py, ``inference``: tf.nn.lrn(depth_radius=4, bias=1.0, alpha=0.001 / 9.0,
#: beta=0.75) after each conv.
LRN = {"depth_radius": 4, "bias": 1.0, "alpha": 0.001 / 9.0, "beta": 0.75}
#: cifar10.py: weight decay 0.004 of ``tf.nn.l2_loss`` (sum of squares / 2) on local3 and
#: local4, i.e. Keras's L2(0.002).
CIFAR10_L2 = 0.004 / 2


def tf_mnist_deep(input_shape, classes) -> keras.Model:
    """TensorFlow's Deep MNIST network (see the module), built by the paper's builder.

    Args:
        input_shape: (side, side, 1) of the uint8 images (28, 28, 1 for MNIST).
        classes: output classes (10).

    Returns:
        (batch, side, side, 1) uint8 -> (batch, classes) logits.

    Raises:
        ConfigError: a shape that is not square with one channel.
    """
    side, width, channels = (tuple(input_shape) + (0, 0, 0))[:3]
    if len(input_shape) != 3 or side != width or channels != 1:
        raise ConfigError(f"input shape {tuple(input_shape)}; expected (side, side, 1)")
    return build_paper_cnn(image_size=side, classes=classes, variant="original")


@keras.saving.register_keras_serializable(package="embryo_bench")
class Cifar10Distortion(layers.Layer):
    """TensorFlow's CIFAR-10 input pipeline as a layer without parameters.

    Training: per image, a random ``crop`` x ``crop`` window, a random left-right flip, a
    random brightness delta in [-63, 63) and contrast factor in [0.2, 1.8) (on 0-255 floats,
    not clipped, as ``tf.image`` does), then per-image standardisation ((x - mean) /
    max(std, 1 / sqrt(pixels))). Evaluation: the centre crop, standardised.

    Input (batch, H, W, C) uint8 (H, W >= crop); output (batch, crop, crop, C) float32.
    """

    def __init__(self, crop: int = CIFAR10_CROP, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.crop = crop
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.crop, self.crop, input_shape[3])

    def _window(self, start, size: int):
        """One-hot rows (batch, crop, size) selecting ``start + i`` for i < crop."""
        return ops.one_hot(ops.expand_dims(start, 1) + ops.arange(self.crop), size)

    def call(self, images, training=None):
        x = ops.cast(images, "float32")
        height, width = x.shape[1], x.shape[2]
        if training:
            batch = ops.shape(x)[0]
            seed = self.seed_generator
            top = keras.random.randint((batch,), 0, height - self.crop + 1, seed=seed)
            left = keras.random.randint((batch,), 0, width - self.crop + 1, seed=seed)
            flip = keras.random.uniform((batch,), seed=seed) < 0.5
            rows = self._window(top, height)
            cols = self._window(left, width)
            cols = ops.where(flip[:, None, None], ops.flip(cols, axis=1), cols)
            # Per-image windows by one-hot products: exact (one 1.0, zeros), on any backend.
            x = ops.einsum("bih,bhwc->biwc", rows, x)
            x = ops.einsum("bjw,biwc->bijc", cols, x)
            shape = (batch, 1, 1, 1)
            x = x + keras.random.uniform(shape, -CIFAR10_BRIGHTNESS, CIFAR10_BRIGHTNESS, seed=seed)
            factor = keras.random.uniform(shape, *CIFAR10_CONTRAST, seed=seed)
            mean = ops.mean(x, axis=(1, 2), keepdims=True)  # per channel
            x = (x - mean) * factor + mean
        else:
            top, left = (height - self.crop) // 2, (width - self.crop) // 2
            x = x[:, top : top + self.crop, left : left + self.crop, :]
        pixels = self.crop * self.crop * x.shape[3]
        mean = ops.mean(x, axis=(1, 2, 3), keepdims=True)
        std = ops.std(x, axis=(1, 2, 3), keepdims=True)
        return (x - mean) / ops.maximum(std, 1.0 / pixels**0.5)

    def get_config(self):
        return {**super().get_config(), "crop": self.crop, "seed": self.seed}


@keras.saving.register_keras_serializable(package="embryo_bench")
class LocalResponseNormalization(layers.Layer):
    """``tf.nn.local_response_normalization`` over channels, with keras.ops (any backend):
    x / (bias + alpha * sum of x^2 over channels d - r .. d + r) ** beta. No parameters."""

    def __init__(self, depth_radius=4, bias=1.0, alpha=1.0, beta=0.5, **kwargs):
        super().__init__(**kwargs)
        self.depth_radius, self.bias, self.alpha, self.beta = depth_radius, bias, alpha, beta

    def call(self, x):
        r = self.depth_radius
        channels = x.shape[-1]
        squares = ops.pad(ops.square(x), [[0, 0]] * (len(x.shape) - 1) + [[r, r]])
        window = squares[..., 0:channels]
        for k in range(1, 2 * r + 1):  # the 2r + 1 channels around each: exact sums
            window = window + squares[..., k : k + channels]
        return x / ops.power(self.bias + self.alpha * window, self.beta)

    def get_config(self):
        return {
            **super().get_config(),
            "depth_radius": self.depth_radius,
            "bias": self.bias,
            "alpha": self.alpha,
            "beta": self.beta,
        }


def tf_cifar10(input_shape, classes) -> keras.Model:
    """TensorFlow's CIFAR-10 tutorial network (see the module) with its initialisers
    (truncated normal: conv 0.05, dense 0.04, logits 1/192; biases conv1 0, conv2 0.1,
    dense 0.1, logits 0).

    Args:
        input_shape: (H, W, C) of the stored uint8 images, H and W >= 24 ((32, 32, 3)).
        classes: output classes (10).

    Returns:
        (batch, H, W, C) uint8 -> (batch, classes) logits; 1,068,298 parameters at 3
        channels and 10 classes, whatever H and W (the network sees 24x24 crops).

    Raises:
        ConfigError: images smaller than the 24x24 crop.
    """
    if len(input_shape) != 3 or min(input_shape[:2]) < CIFAR10_CROP:
        raise ConfigError(
            f"input shape {tuple(input_shape)}; expected (H, W, C) with H, W >= "
            f"{CIFAR10_CROP} (the tutorial's crop)"
        )

    def normal(stddev):
        return keras.initializers.TruncatedNormal(stddev=stddev)

    const = keras.initializers.Constant
    pool = {"pool_size": 3, "strides": 2, "padding": "same"}
    dense = {
        "activation": "relu",
        "kernel_initializer": normal(0.04),
        "bias_initializer": const(0.1),
        "kernel_regularizer": keras.regularizers.L2(CIFAR10_L2),
    }
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="uint8", name="image"),
            Cifar10Distortion(CIFAR10_CROP),
            layers.Conv2D(
                64,
                5,
                padding="same",
                activation="relu",
                name="conv1",
                kernel_initializer=normal(5e-2),
                bias_initializer="zeros",
            ),
            layers.MaxPooling2D(name="pool1", **pool),
            LocalResponseNormalization(name="norm1", **LRN),
            layers.Conv2D(
                64,
                5,
                padding="same",
                activation="relu",
                name="conv2",
                kernel_initializer=normal(5e-2),
                bias_initializer=const(0.1),
            ),
            LocalResponseNormalization(name="norm2", **LRN),
            layers.MaxPooling2D(name="pool2", **pool),
            layers.Flatten(),
            layers.Dense(384, name="local3", **dense),
            layers.Dense(192, name="local4", **dense),
            layers.Dense(classes, name="softmax_linear", kernel_initializer=normal(1 / 192.0)),
        ],
        name="tf_cifar10",
    )
