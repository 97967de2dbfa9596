"""What a runner plug-in is given: one training run as the ``train`` command names it."""

from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary.spec import RunSpec
from ..vocabulary.training_input import TrainingInput


@dataclass(frozen=True)
class TrainJob:
    """One run to train, as ``embryo-bench train`` was given it.

    Attributes:
        spec: the run's settings, read from ``spec_file`` (its ``run.json``).
        spec_file: the path of ``run.json`` (shipped into a container, named in messages).
        inputs: what the run trains on, on this host (its shards, or its arrays and image
            folder).
        source_info: the index stage's ``source.json``, or a workload's data ``info.json``.
        out_dir: the run folder that receives the run's files.
        image_record: the image build's record (JSON), for a runner that trains in an image;
            None when not given.
        daemon: the workflow's record of how the spec's ``docker_host`` is reached (TLS
            files); None: the address alone, with the Docker environment's TLS.
        in_container: this process runs inside the container a runner started (it trains
            here; the runner outside measures).
    """

    spec: RunSpec
    spec_file: str
    inputs: TrainingInput
    source_info: str
    out_dir: str
    image_record: str | None = None
    daemon: str | None = None
    in_container: bool = False
