"""The builder paths of Woolf 2017 (minimaxir, 002),
``embryo_bench.workloads.minimaxir:<function>``, kept where they were: the catalog names
them and every run spec records them (a run.json written before the models moved still
trains). The models are the study's own, in its folder:
:mod:`embryo_bench.studies.minimaxir.models`."""

from ..studies.minimaxir.models import (  # noqa: F401
    cifar10_cnn,
    imdb_bilstm,
    imdb_fasttext,
    lstm_text_generation,
    mnist_cnn,
    mnist_mlp,
    text_generator,
)
