"""The builder paths of Wu et al. 2018 (003), ``embryo_bench.workloads.wu:<function>``,
kept where they were: the catalog names them and every run spec records them (a
run.json written before the models moved still trains). The models are the study's
own, in its folder: :mod:`embryo_bench.studies.wu.models`."""

from ..studies.wu.models import tf_cifar10, tf_mnist_deep  # noqa: F401
