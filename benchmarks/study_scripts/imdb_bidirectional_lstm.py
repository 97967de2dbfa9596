"""minimaxir's IMDb bidirectional LSTM (study 002): keras-cntk-benchmark
v2/test_files/imdb_bidirectional_lstm.py (commit 5b95f46, MIT licence; Keras 2.0's example
with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.load_data("imdb")``) instead of
  ``keras.datasets.imdb.load_data(num_words=20000)``: lists of word ids below 20,000.
* ``epochs=4`` in ``fit``: ``_study.setting("epochs", 4)``.
* ``CuDNNLSTM`` on a GPU, ``LSTM`` otherwise: Keras 3 has no ``CuDNNLSTM`` (its ``LSTM`` uses
  cuDNN on a GPU by itself) and no ``K.tensorflow_backend``: ``LSTM`` always.
* ``validation_data=[x_test, y_test]``: a tuple (Keras 3 takes a tuple).
* ``Embedding(..., input_length=maxlen)`` is kept (Keras 3 warns that it is deprecated).
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model``; on one device it did
  nothing.
"""

import _study
import numpy as np
from CustomCallback import EpochStatsLogger
from keras.layers import LSTM, Bidirectional, Dense, Dropout, Embedding
from keras.models import Sequential
from keras.preprocessing import sequence

logger = EpochStatsLogger()

max_features = 20000
maxlen = 100
batch_size = 32

print("Loading data...")
(x_train, y_train), (x_test, y_test) = _study.load_data("imdb")
print(len(x_train), "train sequences")
print(len(x_test), "test sequences")

print("Pad sequences (samples x time)")
x_train = sequence.pad_sequences(x_train, maxlen=maxlen)
x_test = sequence.pad_sequences(x_test, maxlen=maxlen)
print("x_train shape:", x_train.shape)
print("x_test shape:", x_test.shape)
y_train = np.array(y_train)
y_test = np.array(y_test)

model = Sequential()
model.add(Embedding(max_features, 128, input_length=maxlen))
model.add(Bidirectional(LSTM(64)))
model.add(Dropout(0.5))
model.add(Dense(1, activation="sigmoid"))

model.compile("adam", "binary_crossentropy", metrics=["accuracy"])

print("Train...")
model.fit(
    x_train,
    y_train,
    batch_size=batch_size,
    epochs=_study.setting("epochs", 4),
    validation_data=(x_test, y_test),
    callbacks=[logger],
)
