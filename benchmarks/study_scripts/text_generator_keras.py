"""minimaxir's text generator (study 002): keras-cntk-benchmark
test_files/text_generator_keras.py (commit 5b95f46, MIT licence; run in the v2 benchmark on
the K80 and P100), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.text_sequences()``: 40-character sequences as
  character ids, and the id of the character after each) instead of cutting
  ``nietzsche.txt`` (downloaded by ``get_file``) every 3 characters; ``chars`` are the ids
  and ``char_indices`` maps each to itself, so the vectorisation loop is unchanged (ids X
  (N, 40), one-hot bool y (N, chars)).
* ``np.int`` (gone from NumPy since 1.24): ``np.int64``, what it meant on Linux.
* imports Keras 3 moved or dropped: ``keras.layers.merge.concatenate`` and
  ``keras.utils.data_utils.get_file`` (neither used once the data comes from the arrays),
  ``keras.layers.normalization.BatchNormalization`` is ``keras.layers.BatchNormalization``;
  ``h5py``, ``random`` and ``plot_model`` (imported, not used) are left out.
* the logger: ``keras.callbacks.Callback`` from ``keras``; the backend's name is
  ``keras.backend.backend()``; the ``logs/`` folder is made here.
* ``Adam(lr=lr, decay=lr_decay)``: Keras 3 has no ``lr`` and ignores ``decay``; Keras 2's
  decay, lr / (1 + decay * iterations), is ``InverseTimeDecay(lr, decay_steps=1,
  decay_rate=lr_decay)``.
* ``compile(loss='categorical_crossentropy', loss_weights=[1., 0.2])``: Keras 3 refuses one
  loss for two outputs with two weights; the loss is given once per output.
* ``epochs=10`` in ``fit``: ``_study.setting("epochs", 10)``.
* the text generated after training (1,200 characters, one ``predict`` each, seeded with a
  piece of the text) is left out: it is not training, and the arrays hold no text.
* kept although Keras 3 warns: ``Embedding(..., input_length=maxlen)``; kept as they are:
  ``LSTM(128, implementation=2)``, the GloVe path (never read), ``use_pca``.
"""

import csv
import os
import sys
import time

import _study
import keras
import numpy as np
from keras.layers import LSTM, Activation, BatchNormalization, Dense, Embedding, Input
from keras.models import Model
from keras.optimizers import Adam


class EpochStatsLogger(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        filename = os.path.basename(sys.argv[0])[:-3]
        os.makedirs("logs", exist_ok=True)
        self.f = open(f"logs/{filename}_{keras.backend.backend()}.csv", "w")  # noqa: SIM115 (closed on_train_end)
        self.log_writer = csv.writer(self.f)
        self.log_writer.writerow(["epoch", "elapsed", "loss"])

    def on_train_end(self, logs=None):
        self.f.close()

    def on_epoch_begin(self, epoch, logs=None):
        self.start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.log_writer.writerow([epoch, time.time() - self.start_time, logs.get("main_out_loss")])


logger = EpochStatsLogger()

embeddings_path = "glove.840B.300d-char.txt"
embedding_dim = 300
batch_size = 128
use_pca = False
lr = 0.001
lr_decay = 1e-4
maxlen = 40
consume_less = 2

sentences, next_chars, chars = _study.text_sequences()
print("total chars:", len(chars))
char_indices = {c: c for c in chars}
print("nb sequences:", len(sentences))

print("Vectorization...")
X = np.zeros((len(sentences), maxlen), dtype=np.int64)
y = np.zeros((len(sentences), len(chars)), dtype=np.bool)
for i, sentence in enumerate(sentences):
    for t, char in enumerate(sentence):
        X[i, t] = char_indices[char]
    y[i, char_indices[next_chars[i]]] = 1

print("Build model...")
main_input = Input(shape=(maxlen,))
embedding_layer = Embedding(len(chars), embedding_dim, input_length=maxlen)

embedded = embedding_layer(main_input)

rnn = LSTM(128, implementation=consume_less)(embedded)

aux_output = Dense(len(chars))(rnn)
aux_output = Activation("softmax", name="aux_out")(aux_output)

hidden_1 = Dense(512, use_bias=False)(rnn)
hidden_1 = BatchNormalization()(hidden_1)
hidden_1 = Activation("relu")(hidden_1)

hidden_2 = Dense(256, use_bias=False)(hidden_1)
hidden_2 = BatchNormalization()(hidden_2)
hidden_2 = Activation("relu")(hidden_2)

main_output = Dense(len(chars))(hidden_2)
main_output = Activation("softmax", name="main_out")(main_output)

model = Model(inputs=main_input, outputs=[main_output, aux_output])

optimizer = Adam(
    learning_rate=keras.optimizers.schedules.InverseTimeDecay(
        lr, decay_steps=1, decay_rate=lr_decay
    )
)
model.compile(
    loss=["categorical_crossentropy", "categorical_crossentropy"],
    optimizer=optimizer,
    loss_weights=[1.0, 0.2],
)
model.summary()

for iteration in [1]:
    print()
    print("-" * 50)
    print("Iteration", iteration)
    model.fit(
        X, [y, y], batch_size=batch_size, epochs=_study.setting("epochs", 10), callbacks=[logger]
    )
