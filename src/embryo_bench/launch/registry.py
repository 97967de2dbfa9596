"""The runner plug-ins by name: a run's ``runner`` (``run.json``) picks its module here.

A new runner is one module of this package with a ``train(job)`` function
(:class:`embryo_bench.launch.job.TrainJob`) and its line in :data:`RUNNERS`; its name is also
one of :data:`embryo_bench.vocabulary.spec.RUNNERS` and of the schema's ``targets[].runner``,
which check a run's settings without importing any trainer (``tests/test_launch.py`` keeps
the three equal). The plug-ins are imported here, not looked up by a dotted path, so the train
command's code hash (:mod:`embryo_bench.vocabulary.codehash`, which follows imports) covers
every runner it may run.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import ConfigError
from . import docker, host
from .job import TrainJob

#: Runner name -> its plug-in module.
RUNNERS: dict[str, ModuleType] = {
    "host": host,
    "docker": docker,
}
#: The runner that trains inside a container another runner started: the process there
#: trains as on a host, while the runner outside measures.
IN_CONTAINER = "host"


def runner(name: str) -> ModuleType:
    """The plug-in module of runner ``name``.

    Raises:
        ConfigError: no runner of that name.
    """
    try:
        return RUNNERS[name]
    except KeyError:
        raise ConfigError(f"runner {name!r}: expected one of {sorted(RUNNERS)}") from None


def train(job: TrainJob) -> None:
    """Train ``job`` with its runner (:data:`IN_CONTAINER`'s inside a runner's container).

    Raises:
        ConfigError: no runner of the spec's name; what the runner's ``train`` raises.
    """
    runner(IN_CONTAINER if job.in_container else job.spec.runner).train(job)
