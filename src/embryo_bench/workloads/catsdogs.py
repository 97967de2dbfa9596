"""The builder paths of the V100 blog (004), ``embryo_bench.workloads.catsdogs:<function>``,
kept where they were: the catalog names them and every run spec records them (a
run.json written before the models moved still trains). The models are the study's
own, in its folder: :mod:`embryo_bench.studies.v100_blog.models`."""

from ..studies.v100_blog.models import cnn_128, deeper_cnn, tutorial_cnn  # noqa: F401
