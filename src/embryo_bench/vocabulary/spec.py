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

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from jsonschema import Draft202012Validator

from ..errors import ConfigError, DataError
from ..io import check_format, non_finite, read_json, write_json
from .layout import PAPER_WORKLOAD, RUN_SPEC_FORMAT


def as_floats(obj) -> None:
    """Make every field of the frozen dataclass ``obj`` that is annotated ``float`` and holds
    an ``int`` a ``float`` (in place, from ``__post_init__``).

    YAML and JSON read ``1`` as an int, and a JSON schema's ``number`` accepts it; Keras does
    not (``learning_rate: 1`` passed every check, then every training
    crashed in ``keras.optimizers.Adam``). Cast here, where a run's settings are made (from a
    configuration) and read (from ``run.json``), so every consumer gets a float and
    ``run.json`` records ``1.0``. Booleans and other types are left to the schema.
    """
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.type == "float" and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(obj, f.name, float(value))


@dataclass(frozen=True)
class Preprocessing:
    """The paper's preprocessing settings (section 3, figure 1).

    Attributes:
        frame_size: frame side in px (480 in the database).
        crop_fraction: centre-crop side / frame side (paper: 2/3, 480 -> 320 px).
        invert_centre: the grey level shadow inversion maps to 0 (p -> |p - centre|; 128).
        rotation_step: degrees between rotations (paper: 18, i.e. 20 rotations).
        image_size: model input side in px (paper: 64).
    """

    frame_size: int
    crop_fraction: float
    invert_centre: int
    rotation_step: float
    image_size: int

    def __post_init__(self):
        as_floats(self)

    @classmethod
    def from_dict(cls, d: dict, where: str = "preprocessing") -> Preprocessing:
        """From a dict with exactly these five keys (the config's, a shard's or
        ``settings.json``'s); extra keys are ignored.

        Raises:
            DataError: a key is missing (the message names ``where`` and the keys).
        """
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in d]
        if missing:
            raise DataError(f"{where}: preprocessing settings lack {missing}; expected {names}")
        return cls(
            frame_size=int(d["frame_size"]),
            crop_fraction=float(d["crop_fraction"]),
            invert_centre=int(d["invert_centre"]),
            rotation_step=float(d["rotation_step"]),
            image_size=int(d["image_size"]),
        )

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
        return dataclasses.asdict(self)


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


@dataclass(frozen=True)
class Container:
    """A docker target's container: which image, its limits, and which daemon runs it.

    Attributes:
        image: the project image, "cpu" or "gpu".
        memory: ``mem_limit`` = ``memswap_limit`` (no extra swap), a Docker size ("4g").
        shm_size: /dev/shm size ("1g").
        docker_host: the daemon's address (``tcp://``, ``ssh://``, ``unix://``), "" for the
            environment's (``DOCKER_HOST`` or the local socket).
    """

    image: str
    memory: str
    shm_size: str
    docker_host: str = ""


#: A model builder's path (a workload's ``model``): dotted module names, a colon, the
#: function's name (:mod:`embryo_bench.workloads.user` loads it).
BUILDER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"

#: How a workload's batches reach the model: arrays in RAM, or image files
#: decoded (and augmented) per batch by input workers.
INPUT_MODES = ("memory", "files")
#: The dtypes a workload's samples are stored in: images, token ids.
INPUT_DTYPES = ("uint8", "int32")


@dataclass(frozen=True)
class WorkloadSpec:
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
    """

    name: str
    model: str
    dataset: str
    synthetic: bool
    input_shape: tuple
    input_dtype: str
    classes: int
    optimizer: str
    loss: str
    input_mode: str = "memory"
    workers: int = 1
    optimizer_options: dict = field(default_factory=dict)
    augmentation: dict = field(default_factory=dict)
    vocabulary: int = 0
    from_logits: bool = False

    def __post_init__(self):
        object.__setattr__(self, "input_shape", tuple(int(n) for n in self.input_shape))


VARIANTS = ("keras", "original")
"""Training variants: Keras 3 defaults, or the authors' original script's procedure."""


@dataclass(frozen=True)
class RunSpec:
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
    """

    target: str
    repeat: int
    runner: str
    cpus: int
    threads: int
    gpus: int
    backend: str
    strategy: str
    replicas: int
    epochs: int
    batch_size: int
    learning_rate: float
    dropout: float
    seed: int
    accuracy_target: float
    probe_seconds: float
    preprocessing: Preprocessing | None
    container: Container | None = None
    sweep: dict | None = field(default=None)
    variant: str = "keras"
    epoch_steps: int = 0
    holdout: int = 0
    test_subset: int = 0
    workload: WorkloadSpec | None = None
    steps_per_execution: int = 0
    precision: str = "float32"

    def __post_init__(self):
        as_floats(self)  # learning_rate: 1 reaches Keras as 1.0
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
        if self.variant not in VARIANTS:
            raise ConfigError(f"run {self.target}: variant {self.variant!r}; expected {VARIANTS}")
        if self.variant == "original" and self.backend != "tensorflow":
            raise ConfigError(
                f"run {self.target}: train.variant original runs on the TensorFlow backend "
                f"(the authors' script is TensorFlow), not {self.backend}"
            )
        if self.runner not in RUNNERS:
            raise ConfigError(f"run {self.target}: runner {self.runner!r}; expected {RUNNERS}")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"run {self.target}: precision {self.precision!r}; expected one of {PRECISIONS}"
            )
        if (self.runner == "docker") != (self.container is not None):
            raise ConfigError(f"run {self.target}: a docker run needs a container, others none")

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
        """Plain, JSON-ready dict (nested dataclasses as dicts), with the file's ``format``
        (:data:`embryo_bench.vocabulary.layout.RUN_SPEC_FORMAT`). A run of the paper's workload
        is written as before workloads existed (format 1, no ``workload`` and its
        ``preprocessing``), so its ``run.json`` and its cached run stay as they were; another
        workload's run is format 2 with its ``workload`` and no ``preprocessing``.
        ``steps_per_execution`` is written only where set (not 0), and ``precision`` only
        where not float32, for the same reason."""
        d = dataclasses.asdict(self)
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
        """The inverse of :meth:`to_dict`, checked against :data:`RUN_SPEC_SCHEMA` first
        (a hand-edited ``epochs: "2"`` or ``batch_size: 0`` crashed the
        trainer, ``epochs: 0`` after writing half its outputs).

        Raises:
            ConfigError: a key missing or unknown, or a value of the wrong type or out of
                range, in one line naming ``where``, the key, the value and what is allowed.
            DataError: a ``format`` newer than
                :data:`embryo_bench.vocabulary.layout.RUN_SPEC_FORMAT`.
        """
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: a run spec is a JSON object, not {type(d).__name__}")
        d = check_format(d, RUN_SPEC_FORMAT, where)
        check_run_spec(d, where)
        values = dict(d)
        # The paper's runs have preprocessing settings, another workload's runs a workload.
        if ("workload" in d) == ("preprocessing" in d):
            keys = "both" if "workload" in d else "neither"
            raise ConfigError(
                f"{where}: {keys} of the keys preprocessing and workload; expected one"
            )
        if "workload" in d:
            values["workload"] = WorkloadSpec(**d["workload"])
            values["preprocessing"] = None
        else:
            values["preprocessing"] = Preprocessing.from_dict(d["preprocessing"], where)
        if d.get("container") is not None:
            values["container"] = Container(**d["container"])
        return cls(**values)

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


# --- what a run.json may hold ----------------------------------------------------------------

_INT = {"type": "integer"}
_NAME = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"}
_SIZE = {"type": "string", "pattern": "^[0-9]+[kmg]$"}
_OPTION = {"type": ["number", "boolean"]}

#: The JSON schema of ``run.json``. It lives here, not in
#: ``config/schema.yaml``, because the trainer inside a container reads run.json without the
#: repository; the ranges a configuration also sets are the configuration schema's, and
#: ``tests/test_spec.py`` keeps the two equal.
RUN_SPEC_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        f.name
        for f in dataclasses.fields(RunSpec)
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and f.name != "preprocessing"
    ],
    "properties": {
        "target": _NAME,
        "repeat": {**_INT, "minimum": 1},
        "runner": {"enum": list(RUNNERS)},
        "cpus": {**_INT, "minimum": 1},
        "threads": {**_INT, "minimum": 1},
        "gpus": {**_INT, "minimum": 0},
        "backend": {"enum": list(BACKENDS)},
        "strategy": {"enum": ["none", "mirrored"]},
        "replicas": {**_INT, "minimum": 1},
        "epochs": {**_INT, "minimum": 1},
        "batch_size": {**_INT, "minimum": 1},
        "learning_rate": {"type": "number", "exclusiveMinimum": 0},
        "dropout": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        "seed": {**_INT, "minimum": 0},
        "accuracy_target": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "probe_seconds": {"type": "number", "minimum": 0},
        "preprocessing": {
            "type": "object",
            "additionalProperties": False,
            "required": [f.name for f in dataclasses.fields(Preprocessing)],
            "properties": {
                "frame_size": {**_INT, "minimum": 8},
                "crop_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "invert_centre": {**_INT, "minimum": 0, "maximum": 255},
                "rotation_step": {"type": "number", "minimum": 1, "maximum": 360},
                "image_size": {**_INT, "minimum": 8, "maximum": 1024},
            },
        },
        "container": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": [f.name for f in dataclasses.fields(Container)],
                    "properties": {
                        "image": {"enum": ["cpu", "gpu"]},
                        "memory": _SIZE,
                        "shm_size": _SIZE,
                        "docker_host": {"type": "string", "pattern": "^((unix|tcp|ssh)://.*)?$"},
                    },
                },
            ]
        },
        "sweep": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["base", "batch_size", "threads"],
                    "properties": {
                        "base": _NAME,
                        "batch_size": {**_INT, "minimum": 1},
                        "threads": {**_INT, "minimum": 1},
                        # only where the sweep lists precisions
                        "precision": {"enum": list(PRECISIONS)},
                    },
                },
            ]
        },
        "workload": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                f.name
                for f in dataclasses.fields(WorkloadSpec)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ],
            "properties": {
                "name": _NAME,
                "model": {"type": "string", "pattern": BUILDER_PATTERN},
                "dataset": _NAME,
                "synthetic": {"type": "boolean"},
                "input_shape": {
                    "type": "array",
                    "items": {**_INT, "minimum": 1},
                    "minItems": 1,
                    "maxItems": 4,
                },
                "input_dtype": {"enum": list(INPUT_DTYPES)},
                "classes": {**_INT, "minimum": 2},
                "optimizer": _NAME,
                "loss": _NAME,
                "input_mode": {"enum": list(INPUT_MODES)},
                "workers": {**_INT, "minimum": 1},
                "optimizer_options": {"type": "object", "additionalProperties": _OPTION},
                "augmentation": {"type": "object", "additionalProperties": _OPTION},
                "vocabulary": {**_INT, "minimum": 0},
                "from_logits": {"type": "boolean"},
            },
        },
        "variant": {"enum": list(VARIANTS)},
        "epoch_steps": {**_INT, "minimum": 0},
        "holdout": {**_INT, "minimum": 0},
        "test_subset": {**_INT, "minimum": 0},
        "steps_per_execution": {**_INT, "minimum": 0},
        "precision": {"enum": list(PRECISIONS)},
    },
}


def allowed(schema: dict) -> str:
    """What a (sub)schema of :data:`RUN_SPEC_SCHEMA` allows, in words, e.g. "an integer
    >= 1" or "one of ['host', 'docker']"."""
    if "enum" in schema:
        return f"one of {schema['enum']}"
    if "oneOf" in schema:
        return " or ".join(allowed(s) for s in schema["oneOf"])
    kind = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "object": "an object",
        "null": "null",
    }.get(schema.get("type"), "a value")
    bounds = [
        f"{op} {schema[key]}"
        for key, op in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        )
        if key in schema
    ]
    if "pattern" in schema:
        bounds.append(f"matching {schema['pattern']}")
    return " ".join([kind, " and ".join(bounds)]).strip()


_RUN_SPEC_VALIDATOR = Draft202012Validator(RUN_SPEC_SCHEMA)
KEY_ERRORS = ("additionalProperties", "required")


def check_run_spec(d: dict, where: str = "run spec") -> None:
    """Check a run spec dict (without ``format``) against :data:`RUN_SPEC_SCHEMA` and the
    rules across keys (:meth:`RunSpec.__post_init__`'s, and threads <= cpus).

    Raises:
        ConfigError: one line naming ``where``, the first offending key (dotted, e.g.
            ``preprocessing.rotation_step``), its value and what is allowed (a number that
            is NaN or an infinity, anywhere, included); or the unknown and missing keys.
    """
    errors = []
    for error in _RUN_SPEC_VALIDATOR.iter_errors(d):
        # A container or sweep that is an object but a bad one: its own keys' errors.
        while error.validator == "oneOf" and isinstance(error.instance, dict) and error.context:
            inner = [e for e in error.context if e.relative_schema_path[0] == 1]
            error = min(inner or error.context, key=lambda e: list(e.absolute_path))
        errors.append(error)
    # Unknown and missing keys first (a renamed key is reported as such, not as its value).
    errors.sort(key=lambda e: (e.validator not in KEY_ERRORS, list(map(str, e.absolute_path))))
    if errors:
        error = errors[0]
        at = ".".join(map(str, error.absolute_path))
        if error.validator == "additionalProperties":
            unknown = sorted(set(error.instance) - set(error.schema["properties"]))
            raise ConfigError(f"{where}: unknown keys {unknown}" + (f" in {at}" if at else ""))
        if error.validator == "required":
            missing = sorted(set(error.validator_value) - set(error.instance))
            raise ConfigError(f"{where}: missing keys {missing}" + (f" in {at}" if at else ""))
        raise ConfigError(f"{where}: {at} {error.instance!r}: expected {allowed(error.schema)}")
    # Python's JSON reads NaN and Infinity, and every bound above lets NaN through.
    if (found := non_finite(d)) is not None:
        at = ".".join(map(str, found[0]))
        raise ConfigError(
            f"{where}: {at} {found[1]!r}: expected a finite number, not NaN or infinity"
        )
    if d["threads"] > d["cpus"]:
        raise ConfigError(
            f"{where}: threads {d['threads']} > cpus {d['cpus']}: the run is pinned to "
            f"{d['cpus']} core(s); expected threads <= cpus"
        )
