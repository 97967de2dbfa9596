"""minimaxir's MNIST MLP (study 002): keras-cntk-benchmark v2/test_files/mnist_mlp.py (commit
5b95f46, MIT licence; Keras 2.0's mnist_mlp example with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.load_data("mnist")``) instead of
  ``keras.datasets.mnist.load_data()``: the same form (uint8 (N, 28, 28), labels (N,)).
* ``reshape(60000, 784)`` / ``reshape(10000, 784)``: ``len(x_train)`` / ``len(x_test)`` (the
  benchmark's sample counts).
* ``epochs = 20``: ``_study.setting("epochs", 20)``.
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model`` and no
  ``K.tensorflow_backend``; on one device it did nothing.
* unchanged although Keras 3's default differs: ``RMSprop()`` (Keras 2.0: epsilon 1e-8,
  Keras 3: 1e-7; the same work per step).
"""

import _study
import keras
from CustomCallback import EpochStatsLogger
from keras.layers import Dense, Dropout
from keras.models import Sequential
from keras.optimizers import RMSprop

logger = EpochStatsLogger()

batch_size = 128
num_classes = 10
epochs = _study.setting("epochs", 20)

(x_train, y_train), (x_test, y_test) = _study.load_data("mnist")

x_train = x_train.reshape(len(x_train), 784)
x_test = x_test.reshape(len(x_test), 784)
x_train = x_train.astype("float32")
x_test = x_test.astype("float32")
x_train /= 255
x_test /= 255
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")

y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = Sequential()
model.add(Dense(512, activation="relu", input_shape=(784,)))
model.add(Dropout(0.2))
model.add(Dense(512, activation="relu"))
model.add(Dropout(0.2))
model.add(Dense(10, activation="softmax"))

model.summary()

model.compile(loss="categorical_crossentropy", optimizer=RMSprop(), metrics=["accuracy"])

history = model.fit(
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
