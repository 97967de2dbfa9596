"""minimaxir's IMDb fastText (study 002): keras-cntk-benchmark v2/test_files/imdb_fasttext.py
(commit 5b95f46, MIT licence; Keras 2.0's imdb_fasttext example, after Joulin et al.'s "Bag
of Tricks for Efficient Text Classification", with his logger), for Keras 3.

What differs from the script, and why:
* data: the benchmark's arrays (``_study.load_data("imdb")``) instead of
  ``keras.datasets.imdb.load_data(num_words=20000)``: lists of word ids below 20,000.
* ``ngram_range = 2``: ``_study.setting("ngram_range", 2)``. The benchmark sets 1 (the
  script's own switch: no bigram ids appended), so the script trains on exactly the arrays
  embryo-bench trains on: the catalog's imdb-fasttext embeds the dataset's 20,000 words
  (its vocabulary), where the bigrams of the real training set would make ~1.2 M rows.
* ``epochs = 5``: ``_study.setting("epochs", 5)``.
* ``from keras.preprocessing import sequence`` still works in Keras 3 (``pad_sequences``);
  ``Embedding(..., input_length=maxlen)`` is kept (Keras 3 warns that it is deprecated).
* the multi-GPU block is left out: Keras 3 has no ``multi_gpu_model`` and no
  ``K.tensorflow_backend``; on one device it did nothing.
"""

import _study
import numpy as np
from CustomCallback import EpochStatsLogger
from keras.layers import Dense, Embedding, GlobalAveragePooling1D
from keras.models import Sequential
from keras.preprocessing import sequence

logger = EpochStatsLogger()


def create_ngram_set(input_list, ngram_value=2):
    """The distinct n-grams (tuples of ``ngram_value`` ids) of one sequence of ids."""
    return set(zip(*[input_list[i:] for i in range(ngram_value)], strict=False))


def add_ngram(sequences, token_indice, ngram_range=2):
    """Each sequence with the ids of its known n-grams (2..ngram_range) appended."""
    new_sequences = []
    for input_list in sequences:
        new_list = input_list[:]
        for i in range(len(new_list) - ngram_range + 1):
            for ngram_value in range(2, ngram_range + 1):
                ngram = tuple(new_list[i : i + ngram_value])
                if ngram in token_indice:
                    new_list.append(token_indice[ngram])
        new_sequences.append(new_list)
    return new_sequences


ngram_range = _study.setting("ngram_range", 2)
max_features = 20000
maxlen = 400
batch_size = 32
embedding_dims = 50
epochs = _study.setting("epochs", 5)

print("Loading data...")
(x_train, y_train), (x_test, y_test) = _study.load_data("imdb")
print(len(x_train), "train sequences")
print(len(x_test), "test sequences")
print(f"Average train sequence length: {np.mean(list(map(len, x_train)), dtype=int)}")
print(f"Average test sequence length: {np.mean(list(map(len, x_test)), dtype=int)}")

if ngram_range > 1:
    print(f"Adding {ngram_range}-gram features")
    ngram_set = set()
    for input_list in x_train:
        for i in range(2, ngram_range + 1):
            ngram_set.update(create_ngram_set(input_list, ngram_value=i))

    start_index = max_features + 1
    token_indice = {v: k + start_index for k, v in enumerate(ngram_set)}
    indice_token = {token_indice[k]: k for k in token_indice}

    max_features = np.max(list(indice_token.keys())) + 1

    x_train = add_ngram(x_train, token_indice, ngram_range)
    x_test = add_ngram(x_test, token_indice, ngram_range)
    print(f"Average train sequence length: {np.mean(list(map(len, x_train)), dtype=int)}")
    print(f"Average test sequence length: {np.mean(list(map(len, x_test)), dtype=int)}")

print("Pad sequences (samples x time)")
x_train = sequence.pad_sequences(x_train, maxlen=maxlen)
x_test = sequence.pad_sequences(x_test, maxlen=maxlen)
print("x_train shape:", x_train.shape)
print("x_test shape:", x_test.shape)

print("Build model...")
model = Sequential()
model.add(Embedding(max_features, embedding_dims, input_length=maxlen))
model.add(GlobalAveragePooling1D())
model.add(Dense(1, activation="sigmoid"))

model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

model.fit(
    x_train,
    y_train,
    batch_size=batch_size,
    epochs=epochs,
    validation_data=(x_test, y_test),
    callbacks=[logger],
)
