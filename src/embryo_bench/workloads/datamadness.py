"""The builder paths of DATAmadness 2019 (001), ``embryo_bench.workloads.datamadness:<function>``,
kept where they were: the catalog names them and every run spec records them (a
run.json written before the models moved still trains). The models are the study's
own, in its folder: :mod:`embryo_bench.studies.datamadness.models`."""

from ..studies.datamadness.models import cnn  # noqa: F401
