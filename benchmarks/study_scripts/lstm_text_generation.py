"""minimaxir's LSTM text generation (study 002): keras-cntk-benchmark
v2/test_files/lstm_text_generation.py (commit 5b95f46, MIT licence; Keras 2.0's example on
Nietzsche's writings, with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.text_sequences()``: 40-character sequences as
  character ids, and the id of the character after each) instead of cutting
  ``nietzsche.txt`` (downloaded by ``get_file``) every 3 characters; ``chars`` are the ids
  and ``char_indices`` maps each to itself, so the script's vectorisation loop is unchanged
  (one-hot bool X (N, 40, chars) and y (N, chars)).
* ``epochs=10`` in ``fit``: ``_study.setting("epochs", 10)``.
* ``CuDNNLSTM`` on a GPU, ``LSTM`` otherwise: Keras 3 has no ``CuDNNLSTM`` (its ``LSTM`` uses
  cuDNN on a GPU by itself) and no ``K.tensorflow_backend``: ``LSTM`` always.
* ``RMSprop(lr=0.01)``: ``learning_rate=0.01`` (Keras 3 has no ``lr``).
* the text generated after training (400 characters, one ``predict`` each, seeded with a
  piece of the text) is left out: it is not training, and the arrays hold no text.
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model``; on one device it did
  nothing.
"""

import _study
import numpy as np
from CustomCallback import EpochStatsLogger
from keras.layers import LSTM, Activation, Dense
from keras.models import Sequential
from keras.optimizers import RMSprop

logger = EpochStatsLogger()

sentences, next_chars, chars = _study.text_sequences()
print("total chars:", len(chars))
char_indices = {c: c for c in chars}

maxlen = 40
print("nb sequences:", len(sentences))

print("Vectorization...")
X = np.zeros((len(sentences), maxlen, len(chars)), dtype=np.bool)
y = np.zeros((len(sentences), len(chars)), dtype=np.bool)
for i, sentence in enumerate(sentences):
    for t, char in enumerate(sentence):
        X[i, t, char_indices[char]] = 1
    y[i, char_indices[next_chars[i]]] = 1

print("Build model...")
model = Sequential()
model.add(LSTM(128, input_shape=(maxlen, len(chars))))
model.add(Dense(len(chars)))
model.add(Activation("softmax"))

optimizer = RMSprop(learning_rate=0.01)
model.compile(loss="categorical_crossentropy", optimizer=optimizer)

for iteration in [1]:
    print()
    print("-" * 50)
    print("Iteration", iteration)
    model.fit(X, y, batch_size=128, epochs=_study.setting("epochs", 10), callbacks=[logger])
