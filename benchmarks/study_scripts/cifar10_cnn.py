"""minimaxir's CIFAR-10 CNN (study 002): keras-cntk-benchmark v2/test_files/cifar10_cnn.py
(commit 5b95f46, MIT licence; Keras 2.0's cifar10_cnn example with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.load_data("cifar10")``) instead of
  ``keras.datasets.cifar10.load_data()``: the same form (uint8 (N, 32, 32, 3), labels (N, 1)).
* ``epochs = 20``: ``_study.setting("epochs", 20)``; ``data_augmentation = True``:
  ``_study.setting("data_augmentation", True)`` (the benchmark sets False, the script's own
  other path, to compare with embryo-bench's memory input, which does not augment).
* ``keras.optimizers.rmsprop(lr=0.0001, decay=1e-6)``: Keras 3 has no ``rmsprop`` alias and
  no ``lr``, and ignores ``decay`` (with a warning); Keras 2's decay, lr / (1 + decay *
  iterations), is ``InverseTimeDecay(0.0001, decay_steps=1, decay_rate=1e-6)``.
* the augmenting path: Keras 3 has no ``ImageDataGenerator``. Its closest equivalent: a
  ``tf.data`` pipeline over the arrays, shuffled, batched and augmented by Keras 3's
  preprocessing layers ``RandomTranslation(0.1, 0.1, fill_mode="nearest")`` (the
  generator's width/height_shift_range 0.1, its default fill "nearest") and
  ``RandomFlip("horizontal")``; ``datagen.fit`` is left out (it computes statistics only
  for featurewise or ZCA settings, all off here); ``fit_generator`` is ``fit`` with the same
  ``steps_per_epoch``.
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model`` and no
  ``K.tensorflow_backend``; on one device it did nothing.
"""

import _study
import keras
from CustomCallback import EpochStatsLogger
from keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from keras.models import Sequential

logger = EpochStatsLogger()

batch_size = 32
num_classes = 10
epochs = _study.setting("epochs", 20)
data_augmentation = _study.setting("data_augmentation", True)

(x_train, y_train), (x_test, y_test) = _study.load_data("cifar10")
print("x_train shape:", x_train.shape)
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")

y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = Sequential()

model.add(Conv2D(32, (3, 3), padding="same", input_shape=x_train.shape[1:]))
model.add(Activation("relu"))
model.add(Conv2D(32, (3, 3)))
model.add(Activation("relu"))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))

model.add(Conv2D(64, (3, 3), padding="same"))
model.add(Activation("relu"))
model.add(Conv2D(64, (3, 3)))
model.add(Activation("relu"))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))

model.add(Flatten())
model.add(Dense(512))
model.add(Activation("relu"))
model.add(Dropout(0.5))
model.add(Dense(num_classes))
model.add(Activation("softmax"))

opt = keras.optimizers.RMSprop(
    learning_rate=keras.optimizers.schedules.InverseTimeDecay(
        0.0001, decay_steps=1, decay_rate=1e-6
    )
)

model.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy"])

x_train = x_train.astype("float32")
x_test = x_test.astype("float32")
x_train /= 255
x_test /= 255

if not data_augmentation:
    print("Not using data augmentation.")
    model.fit(
        x_train,
        y_train,
        batch_size=batch_size,
        epochs=epochs,
        validation_data=(x_test, y_test),
        shuffle=True,
    )
else:
    print("Using real-time data augmentation.")
    import tensorflow as tf

    augment = keras.Sequential(
        [
            keras.layers.RandomTranslation(0.1, 0.1, fill_mode="nearest"),
            keras.layers.RandomFlip("horizontal"),
        ]
    )
    flow = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(len(x_train))
        .repeat()
        .batch(batch_size)
        .map(lambda x, y: (augment(x, training=True), y))
    )
    model.fit(
        flow,
        steps_per_epoch=x_train.shape[0] // batch_size,
        epochs=epochs,
        validation_data=(x_test, y_test),
        callbacks=[logger],
    )
