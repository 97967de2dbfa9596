"""The settings a training run is made from, resolved once and written down.

* :class:`Preprocessing`: the five settings that turn a frame into the model's input (paper
  section 3): frame size, crop fraction, inversion centre, rotation step and output size. The
  stages record them in every shard they write; training reads them back from the shards,
  and ``evaluate`` from the run's ``settings.json``.
* :class:`RunSpec`: everything one training run needs (target, repeat, runner, container
  limits, threads, backend, strategy, batch size, epochs, learning rate, seed, ...), every
  default already applied by :mod:`embryo_bench.planning.plan`. The workflow writes it as
  ``train/<target>/repeat-<k>/run.json`` and both runners train from that file
  (``embryo-bench train --spec run.json``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator
from typing_extensions import NotRequired, TypedDict

from ..errors import ConfigError, DataError
from ..io import check_format, non_finite, read_json, write_json
from .layout import PAPER_WORKLOAD, RUN_SPEC_FORMAT
from .records import Record, allowed, first_error, key_errors, subschema

#: The pattern of a target's, a workload's, a dataset's, an optimizer's and a loss's name
#: (``targets[].name`` in config/schema.yaml).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
#: A Docker size, "4g" (``targets[].memory`` and ``shm_size`` in config/schema.yaml).
Size = Annotated[str, Field(pattern=r"^[0-9]+[kmg]$")]
#: Integers from 0 and from 1: counts, indices, seeds (each field below says whose range it
#: repeats).
Count0 = Annotated[int, Field(ge=0)]
Count1 = Annotated[int, Field(ge=1)]
#: A value of a Keras optimizer's or augmentation's option: a number or a switch, kept as
#: given (an int stays an int, so ``run.json`` is written as the catalog has it).
Option = int | float | bool


class Preprocessing(Record):
    """The paper's preprocessing settings (section 3, figure 1); each range is
    config/schema.yaml's (``dataset.frame_size`` and ``preprocess``).

    Attributes:
        frame_size: frame side in px (480 in the database).
        crop_fraction: centre-crop side / frame side (paper: 2/3, 480 -> 320 px).
        invert_centre: the grey level shadow inversion maps to 0 (p -> |p - centre|; 128).
        rotation_step: degrees between rotations (paper: 18, i.e. 20 rotations).
        image_size: model input side in px (paper: 64).

    Raises:
        pydantic.ValidationError: a value of the wrong type or out of range.
    """

    frame_size: Annotated[int, Field(ge=8)]
    crop_fraction: Annotated[float, Field(gt=0, le=1)]
    invert_centre: Annotated[int, Field(ge=0, le=255)]
    rotation_step: Annotated[float, Field(ge=1, le=360)]
    image_size: Annotated[int, Field(ge=8, le=1024)]

    @classmethod
    def from_dict(cls, d: dict, where: str = "preprocessing") -> Preprocessing:
        """From a dict with exactly these five keys (the config's, a shard's or
        ``settings.json``'s); extra keys are ignored.

        Raises:
            DataError: a key is missing (the message names ``where`` and the keys), or a
                value is out of range (naming ``where``, the key and the range).
        """
        names = list(cls.model_fields)
        missing = [n for n in names if n not in d]
        if missing:
            raise DataError(f"{where}: preprocessing settings lack {missing}; expected {names}")
        values = {
            "frame_size": int(d["frame_size"]),
            "crop_fraction": float(d["crop_fraction"]),
            "invert_centre": int(d["invert_centre"]),
            "rotation_step": float(d["rotation_step"]),
            "image_size": int(d["image_size"]),
        }
        try:
            return cls(**values)
        except ValidationError as exc:
            path, value = first_error(exc, values)
            schema = cls.model_json_schema()
            raise DataError(
                f"{where}: preprocessing.{path[0]} {value!r}: expected "
                f"{allowed(subschema(schema, path), schema)}"
            ) from None

    @classmethod
    def from_config(cls, config: dict) -> Preprocessing:
        """The settings a configuration asks for (``dataset.frame_size`` and
        ``preprocess``)."""
        return cls.from_dict(
            {"frame_size": config["dataset"]["frame_size"], **config["preprocess"]}, "config"
        )

    @classmethod
    def from_settings_file(cls, path: str | os.PathLike) -> Preprocessing:
        """The settings a trained model was trained with: ``preprocessing`` of the
        ``settings.json`` beside ``model.keras``.

        Raises:
            DataError: the file is missing, not JSON, or lacks a key.
        """
        return cls.from_dict(read_json(path).get("preprocessing", {}), str(path))

    def to_dict(self) -> dict:
        """The five settings as a plain dict."""
        return self.model_dump()


#: What a workload's runs train on, its input kind (a run's :attr:`RunSpec.input_kind`, a
#: workload's ``input_kind`` in :class:`embryo_bench.planning.workloads.Workload`; the
#: workflow chooses a training's and a figures job's inputs by it): ``shards``, augmented
#: ``.npz`` shards made by the paper's own stages (crop, invert, augment), each recording the
#: preprocessing settings it was made with, which the run's spec names; ``arrays``, a
#: workload's prepared arrays (:mod:`embryo_bench.data.arrays`), trained from memory or, in
#: its ``files`` input mode, with the training images read from an image folder.
INPUT_SHARDS = "shards"
INPUT_ARRAYS = "arrays"
INPUT_KINDS = (INPUT_SHARDS, INPUT_ARRAYS)

#: Runners that can train a run.
RUNNERS = ("host", "docker")
#: The Keras backends a run may ask for (``targets[].backend`` in the configuration schema
#: lists the same; ``tests/test_spec.py`` keeps the two equal).
BACKENDS = ("tensorflow", "jax", "torch")
#: Numeric precisions of a run: Keras dtype policies (``keras.config.set_dtype_policy``).
#: float32 everywhere; mixed_bfloat16 computes in bfloat16 with float32 weights; mixed_float16
#: the same in float16, with Keras's dynamic loss scaling (``compile(auto_scale_loss=True)``,
#: Keras's default, wraps the optimizer in ``LossScaleOptimizer``) so small gradients do
#: not underflow.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


class Container(Record):
    """A docker target's container: which image, its limits, and which daemon runs it (the
    ranges are config/schema.yaml's ``targets[]``'s).

    Attributes:
        image: the project image, "cpu" or "gpu".
        memory: ``mem_limit`` = ``memswap_limit`` (no extra swap), a Docker size ("4g").
        shm_size: /dev/shm size ("1g").
        docker_host: the daemon's address (``tcp://``, ``ssh://``, ``unix://``), "" for the
            environment's (``DOCKER_HOST`` or the local socket).

    Raises:
        pydantic.ValidationError: a value of the wrong type or not of its pattern.
    """

    image: Literal["cpu", "gpu"]
    memory: Size
    shm_size: Size
    # The scheme only: config/schema.yaml refuses the characters an address cannot have; any
    # character after the scheme (a newline too) is the command's quoting to carry.
    docker_host: Annotated[str, Field(pattern=r"^((unix|tcp|ssh)://[\s\S]*)?$")] = ""


#: A model builder's path (a workload's ``model``): dotted module names, a colon, the
#: function's name (:mod:`embryo_bench.workloads.user` loads it).
BUILDER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"

#: How a workload's batches reach the model: arrays in RAM, or image files
#: decoded (and augmented) per batch by input workers.
INPUT_MODES = ("memory", "files")
#: The dtypes a workload's samples are stored in: images, token ids.
INPUT_DTYPES = ("uint8", "int32")


class WorkloadSpec(Record):
    """What a run of a workload other than the paper's trains, and on what. A run
    of the paper's workload has none (``RunSpec.workload`` None): its model, data and recipe
    are the paper's (:mod:`embryo_bench.workloads.paper`, the augmented shards).

    Attributes:
        name: the workload's name (``workloads[].name``).
        model: its builder, ``package.module:function`` (called with the input shape and
            the class count; :mod:`embryo_bench.workloads.build`).
        dataset: the dataset the arrays hold (:mod:`embryo_bench.data.datasets`), or the
            one whose shape synthetic arrays take.
        synthetic: the arrays are synthetic (speed valid, accuracy meaningless).
        input_shape: one sample as stored, e.g. (28, 28, 1) images or (400,) token ids.
        input_dtype: "uint8" (images) or "int32" (token ids).
        classes: output classes (2 for a sigmoid output).
        optimizer: Keras optimizer name; optimizer_options: its other arguments.
        loss: Keras loss name.
        input_mode: "memory" or "files" (:data:`INPUT_MODES`).
        workers: input workers decoding files (files mode).
        augmentation: the files mode's augmentation (shear_range, zoom_range,
            horizontal_flip), as the study's generator.
        vocabulary: token ids are below it (text workloads; 0 for images).
        from_logits: the model outputs logits (its loss is computed from them).

    Raises:
        pydantic.ValidationError: a value of the wrong type or out of range.
    """

    name: Name
    model: Annotated[str, Field(pattern=BUILDER_PATTERN)]
    dataset: Name
    synthetic: bool
    # A list in JSON, a tuple here (immutable); up to 4 axes (a sample of images is 3).
    input_shape: Annotated[tuple[Count1, ...], Field(strict=False, min_length=1, max_length=4)]
    input_dtype: Literal[INPUT_DTYPES]
    classes: Annotated[int, Field(ge=2)]  # 2 for a sigmoid output
    optimizer: Name
    loss: Name
    input_mode: Literal[INPUT_MODES] = "memory"
    workers: Count1 = 1
    optimizer_options: dict[str, Option] = Field(default_factory=dict)
    augmentation: dict[str, Option] = Field(default_factory=dict)
    vocabulary: Count0 = 0
    from_logits: bool = False


VARIANTS = ("keras", "original")
"""Training variants: Keras 3 defaults, or the authors' original script's procedure."""


class Sweep(TypedDict):
    """A sweep point's run: its base target, batch size and threads, and its precision where
    the sweep lists precisions (a plain dict in :attr:`RunSpec.sweep`)."""

    __pydantic_config__ = Record.model_config

    base: Name
    batch_size: Count1
    threads: Count1
    precision: NotRequired[Literal[PRECISIONS]]


class RunSpec(Record):
    """One training run, with every setting resolved (see :mod:`embryo_bench.planning.plan`).

    Attributes:
        target: hardware target name (a sweep point's derived name for sweep points).
        repeat: repeat number, 1-based.
        runner: "host" (the job's own process) or "docker" (a container).
        cpus: cores the trainer is pinned to (and the container's CPU quota).
        threads: backend thread-pool size.
        gpus: GPUs assigned, indices 0..gpus-1.
        backend: Keras backend, "tensorflow", "jax" or "torch".
        strategy: "none" or "mirrored" (``tf.distribute.MirroredStrategy``).
        replicas: devices of a mirrored strategy (GPUs, else logical CPU devices).
        epochs, batch_size, learning_rate, dropout: paper: 20, 480, 1e-4, 0.5.
        seed: the run's seed (``train.seed + repeat - 1``).
        accuracy_target: test accuracy for time to accuracy (paper: ~0.85).
        probe_seconds: length of each calibration probe around the run (s).
        preprocessing: the settings the training data must have been made with.
        container: the container of a docker run; None for host runs.
        sweep: for a sweep point, {"base": target, "batch_size": B, "threads": T} (and
            "precision" where the sweep lists precisions); else None.
        variant: "keras" (Keras defaults) or "original" (the authors' script; see
            :data:`VARIANTS` and :mod:`embryo_bench.workloads.paper`).
        epoch_steps: batches per epoch, drawn from reshuffled passes with the leftover
            dropped; 0: an epoch is one pass over the training images.
        holdout: first training images never trained on (original: 500).
        test_subset: random test images scored after each epoch, new each epoch; 0: all.
        workload: a workload other than the paper's (:class:`WorkloadSpec`); None: the
            paper's (then ``preprocessing`` is the settings its shards must have; a
            workload's run has none).
        steps_per_execution: at most this many training steps per call into the backend
            (``train.steps_per_execution``); 0: the trainer's choice
            (:func:`embryo_bench.training.epochs.steps_per_execution_for`). Left out of
            ``run.json`` at 0.
        precision: the Keras dtype policy the model is built under (:data:`PRECISIONS`).
            Left out of ``run.json`` at float32, so runs made before it existed keep their
            cached spec.

    Raises:
        pydantic.ValidationError: a value of the wrong type or out of range.
        ConfigError: the settings disagree (preprocessing and workload, the variant, the
            runner and its container), naming the run's target.
    """

    # Each range is config/schema.yaml's setting of the same name (targets[] or train;
    # tests/test_spec.py keeps them equal); repeat and replicas count from 1.
    target: Name
    repeat: Count1
    runner: Literal[RUNNERS]
    cpus: Count1
    threads: Count1
    gpus: Count0
    backend: Literal[BACKENDS]
    strategy: Literal["none", "mirrored"]
    replicas: Count1
    epochs: Count1
    batch_size: Count1
    learning_rate: Annotated[float, Field(gt=0)]
    dropout: Annotated[float, Field(ge=0, lt=1)]
    seed: Count0
    accuracy_target: Annotated[float, Field(gt=0, le=1)]
    probe_seconds: Annotated[float, Field(ge=0)]
    preprocessing: Preprocessing | None = None
    container: Container | None = None
    sweep: Sweep | None = None
    variant: Literal[VARIANTS] = "keras"
    epoch_steps: Count0 = 0
    holdout: Count0 = 0
    test_subset: Count0 = 0
    workload: WorkloadSpec | None = None
    steps_per_execution: Count0 = 0
    precision: Literal[PRECISIONS] = "float32"

    @model_validator(mode="after")
    def _agree(self) -> RunSpec:
        """The rules across settings (see the class's Raises)."""
        if (self.workload is None) == (self.preprocessing is None):
            raise ConfigError(
                f"run {self.target}: a run of the paper's workload has preprocessing settings, "
                "a run of another workload has a workload and none"
            )
        if self.workload is not None and self.variant != "keras":
            raise ConfigError(
                f"run {self.target}: train.variant {self.variant} is the paper's script; "
                f"workload {self.workload.name} trains with Keras defaults"
            )
        if self.variant == "original" and self.backend != "tensorflow":
            raise ConfigError(
                f"run {self.target}: train.variant original runs on the TensorFlow backend "
                f"(the authors' script is TensorFlow), not {self.backend}"
            )
        if (self.runner == "docker") != (self.container is not None):
            raise ConfigError(f"run {self.target}: a docker run needs a container, others none")
        return self

    @property
    def name(self) -> str:
        """The target's name (as :class:`embryo_bench.planning.targets.Target` has it)."""
        return self.target

    @property
    def docker_host(self) -> str:
        """The container's daemon address, "" for the environment's (or a host run)."""
        return self.container.docker_host if self.container else ""

    @property
    def workload_name(self) -> str:
        """The workload's name: :data:`PAPER_WORKLOAD` for the paper's."""
        return self.workload.name if self.workload else PAPER_WORKLOAD

    @property
    def input_mode(self) -> str:
        """How the training samples reach the model (:data:`INPUT_MODES`): its workload's
        input mode; "memory" for a run on shards."""
        return self.workload.input_mode if self.workload else "memory"

    @property
    def input_kind(self) -> str:
        """What the run trains on (:data:`INPUT_KINDS`): shards made with the preprocessing
        settings it names (``preprocessing``, the paper's runs), else its workload's arrays."""
        return INPUT_SHARDS if self.preprocessing is not None else INPUT_ARRAYS

    def to_dict(self) -> dict:
        """Plain, JSON-ready dict (nested records as dicts), with the file's ``format``
        (:data:`embryo_bench.vocabulary.layout.RUN_SPEC_FORMAT`). A run of the paper's workload
        is written as before workloads existed (format 1, no ``workload`` and its
        ``preprocessing``), so its ``run.json`` and its cached run stay as they were; another
        workload's run is format 2 with its ``workload`` and no ``preprocessing``.
        ``steps_per_execution`` is written only where set (not 0), and ``precision`` only
        where not float32, for the same reason."""
        d = self.model_dump()
        if not self.steps_per_execution:
            del d["steps_per_execution"]
        if self.precision == "float32":
            del d["precision"]
        if self.input_kind == INPUT_SHARDS:  # the paper's runs, as before workloads
            del d["workload"]
            return {"format": 1, **d}
        del d["preprocessing"]
        d["workload"]["input_shape"] = list(self.workload.input_shape)
        return {"format": RUN_SPEC_FORMAT, **d}

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal specs give equal text."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict, where: str = "run spec") -> RunSpec:
        """The inverse of :meth:`to_dict`, checked (a hand-edited ``epochs: "2"`` or
        ``batch_size: 0`` crashed the trainer, ``epochs: 0`` after writing half its outputs):
        the keys and values first (:func:`run_spec_schema`), then threads <= cpus, then one of
        ``preprocessing`` and ``workload``, then the rules across settings.

        Raises:
            ConfigError: a key missing or unknown, or a value of the wrong type or out of
                range (NaN and infinities anywhere included), in one line naming ``where``,
                the key (dotted, e.g. ``preprocessing.rotation_step``), the value and what is
                allowed; threads over cpus; both or neither of ``preprocessing`` and
                ``workload``; or as the class's rules across settings.
            DataError: a ``format`` newer than
                :data:`embryo_bench.vocabulary.layout.RUN_SPEC_FORMAT`.
        """
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: a run spec is a JSON object, not {type(d).__name__}")
        d = check_format(d, RUN_SPEC_FORMAT, where)
        try:
            spec, disagree = cls.model_validate(d), None
        except ValidationError as exc:
            raise ConfigError(f"{where}: {_wrong(exc, d)}") from None
        except ConfigError as exc:  # the rules across settings: after the two below
            spec, disagree = None, exc
        if d["threads"] > d["cpus"]:
            raise ConfigError(
                f"{where}: threads {d['threads']} > cpus {d['cpus']}: the run is pinned to "
                f"{d['cpus']} core(s); expected threads <= cpus"
            )
        # The paper's runs have preprocessing settings, another workload's runs a workload.
        if ("workload" in d) == ("preprocessing" in d):
            keys = "both" if "workload" in d else "neither"
            raise ConfigError(
                f"{where}: {keys} of the keys preprocessing and workload; expected one"
            )
        if disagree is not None:
            raise disagree
        return spec

    @classmethod
    def read(cls, path: str | os.PathLike) -> RunSpec:
        """Read a ``run.json``.

        Raises:
            DataError: the file is missing or not JSON. ConfigError: keys missing or unknown.
        """
        return cls.from_dict(read_json(path), str(path))

    def write(self, path: str | os.PathLike) -> None:
        """Write this spec as ``run.json`` (atomically)."""
        write_json(Path(path), self.to_dict())


def run_spec_schema() -> dict:
    """The JSON schema of ``run.json`` (without its ``format``), derived from
    :class:`RunSpec`. It is here, not in ``config/schema.yaml``, because the trainer inside a
    container reads run.json without the repository."""
    return RunSpec.model_json_schema()


def _wrong(exc: ValidationError, d: dict) -> str:
    """What is wrong with the run spec ``d`` by ``exc``, in words: its unknown or missing
    keys (first: a renamed key is reported as such, not as its value), else its first wrong
    value with what is allowed."""
    if (keys := key_errors(exc)) is not None:
        kind, names, parent = keys
        return f"{kind} keys {names}" + (f" in {parent}" if parent else "")
    path, value = first_error(exc, d)
    at = ".".join(map(str, path))
    if non_finite(value) is not None:  # Python's JSON reads NaN and Infinity
        return f"{at} {value!r}: expected a finite number, not NaN or infinity"
    schema = run_spec_schema()
    return f"{at} {value!r}: expected {allowed(subschema(schema, path), schema)}"
