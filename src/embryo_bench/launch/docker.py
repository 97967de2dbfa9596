"""The ``docker`` runner: train in a container of the run's image, on the daemon its
``docker_host`` names (:mod:`embryo_bench.runners.docker_runner` starts, measures and removes
it; inside, the host runner trains)."""

from __future__ import annotations

from ..errors import ConfigError, EmbryoBenchError
from ..io import read_json
from ..runners import docker_runner
from ..runners.docker_api import Daemon
from .job import TrainJob


def train(job: TrainJob) -> None:
    """Train ``job`` in a container of ``job.image_record``'s image.

    Raises:
        EmbryoBenchError: no image record given.
        ConfigError: the daemon record is for another address than the spec's
            ``docker_host``, or its address or TLS files are refused.
        DockerError: the daemon, the image or the container failed
            (:func:`embryo_bench.runners.docker_runner.run`).
        Interrupted: a signal, or the parent process went away (the container removed first).
    """
    if not job.image_record:
        raise EmbryoBenchError(f"{job.spec_file}: a docker run needs --image-record")
    spec = job.spec
    daemon = Daemon.read(job.daemon) if job.daemon else None
    if daemon is not None and daemon.address != spec.docker_host:
        raise ConfigError(
            f"--daemon {job.daemon} is for {daemon.address or 'the environment'}, "
            f"{job.spec_file} trains on {spec.docker_host or 'the environment'}"
        )
    docker_runner.run(
        spec,
        spec_file=job.spec_file,
        image=read_json(job.image_record),
        daemon=daemon,
        inputs=job.inputs,
        source_info=job.source_info,
        out_dir=job.out_dir,
    )
