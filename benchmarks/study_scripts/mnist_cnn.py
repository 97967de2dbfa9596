"""minimaxir's MNIST CNN (study 002): keras-cntk-benchmark v2/test_files/mnist_cnn.py (commit
5b95f46, MIT licence; Keras 2.0's mnist_cnn example with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.load_data("mnist")``) instead of
  ``keras.datasets.mnist.load_data()``: the same form (uint8 (N, 28, 28), labels (N,)).
* ``epochs = 12``: ``_study.setting("epochs", 12)``.
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model`` and no
  ``K.tensorflow_backend``; on one device it did nothing.
* ``K.image_data_format()`` is ``keras.config.image_data_format()`` in Keras 3.
* unchanged although Keras 3's defaults differ: ``keras.optimizers.Adadelta()`` (Keras 2.0:
  lr 1.0, epsilon 1e-8; Keras 3: 0.001, 1e-7; the same work per step).
"""

import _study
import keras
from CustomCallback import EpochStatsLogger
from keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from keras.models import Sequential

logger = EpochStatsLogger()

batch_size = 128
num_classes = 10
epochs = _study.setting("epochs", 12)

img_rows, img_cols = 28, 28

(x_train, y_train), (x_test, y_test) = _study.load_data("mnist")

if keras.config.image_data_format() == "channels_first":
    x_train = x_train.reshape(x_train.shape[0], 1, img_rows, img_cols)
    x_test = x_test.reshape(x_test.shape[0], 1, img_rows, img_cols)
    input_shape = (1, img_rows, img_cols)
else:
    x_train = x_train.reshape(x_train.shape[0], img_rows, img_cols, 1)
    x_test = x_test.reshape(x_test.shape[0], img_rows, img_cols, 1)
    input_shape = (img_rows, img_cols, 1)

x_train = x_train.astype("float32")
x_test = x_test.astype("float32")
x_train /= 255
x_test /= 255
print("x_train shape:", x_train.shape)
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")

y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = Sequential()
model.add(Conv2D(32, kernel_size=(3, 3), activation="relu", input_shape=input_shape))
model.add(Conv2D(64, (3, 3), activation="relu"))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Flatten())
model.add(Dense(128, activation="relu"))
model.add(Dropout(0.5))
model.add(Dense(num_classes, activation="softmax"))

model.compile(
    loss=keras.losses.categorical_crossentropy,
    optimizer=keras.optimizers.Adadelta(),
    metrics=["accuracy"],
)

model.fit(
    x_train,
    y_train,
    batch_size=batch_size,
    epochs=epochs,
    verbose=1,
    validation_data=(x_test, y_test),
    callbacks=[logger],
)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
