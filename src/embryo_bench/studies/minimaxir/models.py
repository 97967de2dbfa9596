"""Max Woolf's (minimaxir) Keras benchmark scripts (study 002, Woolf 2017).

The seven scripts of his November 2017 GPU/CPU cost benchmark: ``v2/test_files/`` of
github.com/minimaxir/keras-cntk-benchmark (MNIST MLP and CNN, CIFAR-10 CNN, IMDb fastText and
bidirectional LSTM, LSTM text generation; Keras 2.0 examples with his logging callback) and
the text generator (``test_files/text_generator_keras.py``, run in v2 on the K80 and P100
only: ``v2/logs/{k80,p100}/text_generator_keras_*.csv``). Rewritten with the Keras 3 API.

What differs from the scripts, everywhere:

* Data as stored: images uint8 (H, W, C), rescaled by 1/255 inside the model
  (``Rescaling``, no parameters) where the scripts divided float32 copies; text as int32
  token ids (the char-LSTM's one-hot coding is done inside by ``CategoryEncoding``).
* Labels are class indices (sparse categorical cross-entropy) where the scripts one-hot
  coded them for categorical cross-entropy: the same loss.
* Their LSTMs are Keras 2's ``LSTM`` on CPUs (``recurrent_activation="hard_sigmoid"``,
  ``implementation=0``) and ``CuDNNLSTM`` on GPUs (sigmoid; two bias vectors, so 4 x units
  more parameters). Keras 3's ``LSTM`` (sigmoid, one bias) uses cuDNN on a GPU by itself;
  parameter counts here are the CPU scripts' (one bias).
* ``multi_gpu_model`` on more than one GPU is left out (one device per run here).
"""

from __future__ import annotations

import keras
from keras import layers

from ...errors import ConfigError

#: imdb_fasttext.py and imdb_bidirectional_lstm.py: ``max_features = 20000`` (the words
#: kept by ``imdb.load_data(num_words=...)``).
IMDB_WORDS = 20_000
#: imdb_fasttext.py: ``embedding_dims = 50``.
FASTTEXT_DIMS = 50
#: text_generator_keras.py: ``loss_weights=[1., 0.2]`` (main output, auxiliary output).
AUX_LOSS_WEIGHT = 0.2


def _image_input(input_shape) -> keras.KerasTensor:
    return keras.Input(tuple(input_shape), dtype="uint8", name="image")


def _binary(classes: int) -> None:
    if classes != 2:
        raise ConfigError(f"classes {classes}: the model has one sigmoid output; expected 2")


def mnist_mlp(input_shape, classes) -> keras.Model:
    """mnist_mlp.py: dense 512 ReLU, dropout 0.2, dense 512 ReLU, dropout 0.2, dense softmax.

    28x28x1 uint8 -> 669,706 parameters. The script reshaped the images to 784 floats;
    here ``Flatten`` does it inside. Recipe: RMSprop (Keras 2 defaults: lr 0.001, rho 0.9,
    epsilon 1e-8), batch 128, 20 epochs.
    """
    return keras.Sequential(
        [
            _image_input(input_shape),
            layers.Rescaling(1.0 / 255.0),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(classes, activation="softmax"),
        ],
        name="mnist_mlp",
    )


def mnist_cnn(input_shape, classes) -> keras.Model:
    """mnist_cnn.py: conv 3x3x32 ReLU, conv 3x3x64 ReLU, max-pool 2, dropout 0.25, dense 128
    ReLU, dropout 0.5, dense softmax (valid padding). 28x28x1 -> 1,199,882 parameters.
    Recipe: Adadelta (Keras 2: lr 1.0, rho 0.95, epsilon 1e-8), batch 128, 12 epochs."""
    return keras.Sequential(
        [
            _image_input(input_shape),
            layers.Rescaling(1.0 / 255.0),
            layers.Conv2D(32, 3, activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(128, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(classes, activation="softmax"),
        ],
        name="mnist_cnn",
    )


def cifar10_cnn(input_shape, classes) -> keras.Model:
    """cifar10_cnn.py: [conv 3x3x32 same, conv 3x3x32 valid, max-pool 2, dropout 0.25],
    the same with 64 filters, dense 512 ReLU, dropout 0.5, dense softmax (ReLU after each
    conv). 32x32x3 -> 1,250,858 parameters.

    Recipe: RMSprop lr 1e-4 with Keras 2's ``decay=1e-6`` (an inverse-time schedule here),
    batch 32, 20 epochs of ``50000 // 32`` steps from an augmenting ``ImageDataGenerator``
    (shifts of 0.1 of the width and height, horizontal flips; the workload's augmentation).
    """
    return keras.Sequential(
        [
            _image_input(input_shape),
            layers.Rescaling(1.0 / 255.0),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(classes, activation="softmax"),
        ],
        name="cifar10_cnn",
    )


def imdb_fasttext(input_shape, classes, vocabulary: int | None = None) -> keras.Model:
    """imdb_fasttext.py: embedding 50, global average pooling, dense 1 sigmoid.

    The script keeps 20,000 words, appends to each review the ids of its bigrams
    (``ngram_range = 2``; ids from 20,001 on, one per distinct bigram of the training set)
    and pads or truncates to 400 ids at the front (``pad_sequences``' defaults). So the
    embedding's rows, ``vocabulary`` = 20,001 + the distinct training bigrams, are known only
    once the data is read, and the parameters are 50 x vocabulary + 51. Recipe: Adam (Keras
    2 defaults: lr 0.001, epsilon 1e-8), binary cross-entropy, batch 32, 5 epochs.

    Raises:
        ConfigError: no ``vocabulary`` given, or ``classes`` other than 2.
    """
    _binary(classes)
    if not vocabulary:
        raise ConfigError(
            "no vocabulary: the embedding's rows come from the data (20,001 + the distinct "
            "bigrams of the training set); expected vocabulary= from the data"
        )
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="int32", name="tokens"),
            layers.Embedding(vocabulary, FASTTEXT_DIMS),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ],
        name="imdb_fasttext",
    )


def imdb_bilstm(input_shape, classes, vocabulary: int = IMDB_WORDS) -> keras.Model:
    """imdb_bidirectional_lstm.py: embedding 128, bidirectional LSTM 64, dropout 0.5, dense 1
    sigmoid, on 100 token ids (``maxlen = 100``) of a 20,000-word vocabulary: 2,658,945
    parameters. Recipe: Adam (Keras 2 defaults), binary cross-entropy, batch 32, 4 epochs.

    Raises:
        ConfigError: ``classes`` other than 2.
    """
    _binary(classes)
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="int32", name="tokens"),
            layers.Embedding(vocabulary, 128),
            layers.Bidirectional(layers.LSTM(64)),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ],
        name="imdb_bilstm",
    )


def lstm_text_generation(input_shape, classes, vocabulary: int | None = None) -> keras.Model:
    """lstm_text_generation.py: LSTM 128 on 40 one-hot coded characters, dense softmax over
    the next character. Nietzsche's text lower-cased has 57 characters: 102,585 parameters.

    The script stored the one-hot codes (40 x 57 booleans a sequence); here the sequences
    are int32 character ids, one-hot coded inside (``CategoryEncoding``, no parameters).
    Recipe: RMSprop lr 0.01, batch 128, 10 epochs (one ``fit`` of its generation loop; the
    400 characters it then generates are not training).
    """
    chars = vocabulary or classes
    return keras.Sequential(
        [
            keras.Input(tuple(input_shape), dtype="int32", name="chars"),
            layers.CategoryEncoding(num_tokens=chars, output_mode="one_hot"),
            layers.LSTM(128),
            layers.Dense(classes, activation="softmax"),
        ],
        name="lstm_text_generation",
    )


@keras.saving.register_keras_serializable(package="embryo_bench")
class AuxiliaryLossModel(keras.Model):
    """A two-output network trained on ``loss(main) + weight * loss(aux)`` (Keras 2's
    ``loss_weights=[1, weight]``) with one label array, that predicts with its main output.

    Training (``training=True``) returns ``(main, aux)`` and :meth:`compute_loss` adds the
    auxiliary term with the compiled loss; evaluation and prediction return ``main`` only,
    so the trainer, the metrics and ``predict`` see a one-output classifier. The auxiliary
    term is not in the evaluation loss.
    """

    def __init__(self, network: keras.Model, aux_weight: float = AUX_LOSS_WEIGHT, **kwargs):
        super().__init__(**kwargs)
        self.network = network
        self.aux_weight = aux_weight
        self.built = network.built  # its weights are the network's, made already

    def call(self, inputs, training=None):
        main, aux = self.network(inputs, training=training)
        return (main, aux) if training else main

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if isinstance(y_pred, tuple | list):
            main, aux = y_pred
            loss = super().compute_loss(x, y, main, sample_weight, training=training)
            return loss + self.aux_weight * self._compile_loss(y, aux, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if isinstance(y_pred, tuple | list):
            y_pred = y_pred[0]
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def get_config(self):
        return {
            **super().get_config(),
            "network": keras.saving.serialize_keras_object(self.network),
            "aux_weight": self.aux_weight,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        network = keras.saving.deserialize_keras_object(config.pop("network"))
        return cls(network, **config)


def text_generator(input_shape, classes, vocabulary: int | None = None) -> keras.Model:
    """text_generator_keras.py: embedding 300 of 40 character ids, LSTM 128; an auxiliary
    dense softmax on the LSTM, and the main output through dense 512 (no bias), batch norm,
    ReLU, dense 256 (no bias), batch norm, ReLU, dense softmax. 57 characters: 458,430
    parameters (456,894 trainable; the batch norms' 1,536 moving statistics are not).

    The script trained both outputs on the same one-hot labels with
    ``loss_weights=[1., 0.2]``; :class:`AuxiliaryLossModel` does that with one label array.
    Its GloVe path is never read (the embedding trains from scratch), and ``implementation=2``
    is Keras 2's fused-gates LSTM (Keras 3 has one implementation). Recipe: Adam lr 0.001
    with Keras 2's ``decay=1e-4``, batch 128, 10 epochs.
    """
    chars = vocabulary or classes
    inputs = keras.Input(tuple(input_shape), dtype="int32", name="chars")
    rnn = layers.LSTM(128)(layers.Embedding(chars, 300)(inputs))
    aux = layers.Dense(classes, activation="softmax", name="aux_out")(rnn)
    hidden = rnn
    for units in (512, 256):
        hidden = layers.Dense(units, use_bias=False)(hidden)
        hidden = layers.BatchNormalization()(hidden)
        hidden = layers.Activation("relu")(hidden)
    main = layers.Dense(classes, activation="softmax", name="main_out")(hidden)
    network = keras.Model(inputs, [main, aux], name="text_generator_network")
    return AuxiliaryLossModel(network, name="text_generator")
