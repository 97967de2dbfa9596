"""The catalog of the studies' workloads: every study's ``catalog.yaml`` (in its folder,
``src/embryo_bench/studies/<study>/``, found by :mod:`embryo_bench.studies.registry`) read into
:class:`Workload` and :class:`Recipe`, in the order of the studies' numbers.

A study's ``catalog.yaml`` is data: every published fact (shapes, classes, parameter counts,
batch sizes, epochs, optimizers) with the study, script or table it comes from, and what the
source leaves open written under ``assumed``; each entry's ``study`` is its folder's number. It
is validated against :data:`SCHEMA` on load. The models themselves are Python, each study's in
its folder's ``models.py`` (named by the entries' ``model``; the four studies' older builder
paths ``embryo_bench.workloads.<module>:<function>`` re-export them; the paper's CNN is
:mod:`embryo_bench.workloads.paper`), built by :mod:`.build`.

No Keras here: the plan reads the catalog in every Snakemake parse.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..studies.registry import CATALOG, studies
from ..vocabulary.config import apply_defaults, read_config_file
from ..vocabulary.spec import BUILDER_PATTERN

#: Losses a recipe may name (keras.losses names). Sparse categorical cross-entropy takes int
#: class indices; binary cross-entropy a sigmoid output of shape (batch, 1) and labels 0/1.
LOSSES = ("sparse_categorical_crossentropy", "binary_crossentropy")
#: The datasets the workloads train on (the data each is read from is data's business).
DATASETS = ("mnist", "cifar10", "imdb", "nietzsche", "catsdogs", "datamadness", "embryo")
#: How one sample is stored: images uint8 (H, W, C), text int32 token ids (T,).
INPUT_DTYPES = ("uint8", "int32")
#: The augmenting generators' settings (keras ImageDataGenerator's names), files mode.
AUGMENTATIONS = (
    "shear_range",
    "zoom_range",
    "rotation_range",
    "width_shift_range",
    "height_shift_range",
    "horizontal_flip",
)
#: A workload's name in a configuration.
NAME_PATTERN = "^[a-z0-9][a-z0-9-]*$"

_NUMBER_OR_FLAG = {"type": ["number", "boolean"]}

#: The recipe of a workload: ``optimizer_options`` are keyword arguments of the Keras
#: optimizer, plus ``decay`` (Keras 2's per-step inverse-time decay, lr / (1 + decay * step))
#: and ``exponential_decay_steps`` / ``exponential_decay_rate`` (TensorFlow 1's staircase
#: ``exponential_decay``), which :func:`embryo_bench.workloads.build.compile_model` turns into
#: learning-rate schedules.
RECIPE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["optimizer", "learning_rate", "batch_size", "epochs"],
    "properties": {
        "optimizer": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "learning_rate": {"type": "number", "exclusiveMinimum": 0},
        "batch_size": {"type": "integer", "minimum": 1},
        "epochs": {"type": "integer", "minimum": 1},
        "epoch_steps": {"type": "integer", "minimum": 0, "default": 0},
        "loss": {"enum": list(LOSSES), "default": LOSSES[0]},
        "from_logits": {"type": "boolean", "default": False},
        "optimizer_options": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z][a-z0-9_]*$"},
            "additionalProperties": _NUMBER_OR_FLAG,
            "default": {},
        },
    },
}

WORKLOAD_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "study",
        "source",
        "model",
        "dataset",
        "input_shape",
        "input_dtype",
        "classes",
        "parameters",
        "recipe",
    ],
    "properties": {
        "study": {"type": "string", "pattern": "^[0-9]{3}$"},
        "source": {"type": "string", "minLength": 1},
        "model": {"type": "string", "pattern": BUILDER_PATTERN},
        "dataset": {"enum": list(DATASETS)},
        "input_shape": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "minItems": 1,
            "maxItems": 3,
        },
        "input_dtype": {"enum": list(INPUT_DTYPES)},
        "classes": {"type": "integer", "minimum": 2},
        "parameters": {"type": "integer", "minimum": 0},
        "vocabulary": {"type": "integer", "minimum": 0, "default": 0},
        "ngram_range": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
        "recipe": RECIPE_SCHEMA,
        "augmentation": {
            "type": "object",
            "propertyNames": {"enum": list(AUGMENTATIONS)},
            "additionalProperties": _NUMBER_OR_FLAG,
            "default": {},
        },
        "assumed": {"type": "string", "default": ""},
        # A configuration's workloads[] take these as their defaults (before train:'s).
        "accuracy_target": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "repeats": {"type": "integer", "minimum": 1},
    },
}

#: A ``catalog.yaml``: a mapping ``workloads`` of name -> workload (a study's own file gives
#: each entry its folder's number as ``study``; another file names it in each entry).
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["workloads"],
    "properties": {
        "workloads": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": NAME_PATTERN},
            "additionalProperties": WORKLOAD_SCHEMA,
        }
    },
}


@dataclass(frozen=True)
class Recipe:
    """A study's training recipe.

    Attributes:
        optimizer: the Keras optimizer's name as ``keras.optimizers.get`` takes it ("adam",
            "rmsprop", "sgd", "adadelta").
        learning_rate: its (initial) learning rate.
        batch_size: images (or sequences) a step.
        epochs: epochs as the study ran them (Keras's ``epochs``; where the study counted
            steps, the epochs of ``epoch_steps`` its steps make).
        epoch_steps: >0 where the study counted training steps: batches an epoch, from
            passes over the training set that follow one another (004's tutorial: 25 Keras
            epochs of 8,000 steps; 003's 20,000 MNIST iterations: 20 epochs of 1,000); 0: an
            epoch is one pass.
        loss: one of :data:`LOSSES`.
        optimizer_options: further optimizer arguments, e.g. ``(("epsilon", 1e-8),)``; see
            :data:`RECIPE_SCHEMA` for the decay entries.
        from_logits: the model outputs logits (TensorFlow's scripts), not probabilities
            (softmax / sigmoid, as the Keras scripts).
    """

    optimizer: str
    learning_rate: float
    batch_size: int
    epochs: int
    epoch_steps: int = 0
    loss: str = LOSSES[0]
    optimizer_options: tuple[tuple[str, float | bool], ...] = ()
    from_logits: bool = False


@dataclass(frozen=True)
class Workload:
    """A catalog entry: a model, its data and its recipe, each with its source.

    Attributes:
        name: the configuration's name for it, e.g. "mnist-mlp" (:data:`NAME_PATTERN`).
        study: "000" (the paper) .. "004", as docs/studies/README.md numbers them.
        source: the study, script or table the model and recipe come from.
        model: its builder, ``"package.module:function"``, called
            ``builder(input_shape, classes)`` -> uncompiled ``keras.Model`` (text builders
            also take ``vocabulary=``).
        dataset: one of :data:`DATASETS`.
        input_shape: one sample as stored: images (H, W, C), text (T,).
        input_dtype: "uint8" (images, rescaled inside the model) or "int32" (token ids).
        classes: output classes; 2 for the sigmoid (binary cross-entropy) workloads.
        parameters: the model's parameter count (Keras's ``count_params``: trainable and
            not) at ``input_shape``, as the source prints it or as its layers give it; 0 where
            it depends on the data (``vocabulary`` 0 on a text workload).
        recipe: the study's :class:`Recipe`.
        vocabulary: text workloads: token ids are below it (the embedding's rows); 0 for
            images, or where the data decides it (imdb-fasttext: 20,001 + the distinct
            bigrams of its training set).
        ngram_range: text workloads whose script appended each review's n-grams of 2..this
            many ids as new ids (imdb-fasttext: 2, bigrams); 1: none. Its real data is made so
            (:func:`embryo_bench.data.imdb.load_npz_ngrams`).
        augmentation: the study's augmenting generator (:data:`AUGMENTATIONS`: shear and
            zoom ranges, 1.0 for a horizontal flip), for files mode; () where none.
        assumed: what the source does not pin down and the catalog chose.
        accuracy_target: the test accuracy (0-1] time to accuracy is measured to, where the
            source gives one to train to; None: the configuration's ``train.accuracy_target``.
        repeats: the runs of each measurement the source made, where it says; None: the
            configuration's ``train.repeats``.
    """

    name: str
    study: str
    source: str
    model: str
    dataset: str
    input_shape: tuple[int, ...]
    input_dtype: str
    classes: int
    parameters: int
    recipe: Recipe
    augmentation: tuple[tuple[str, float], ...] = ()
    assumed: str = ""
    vocabulary: int = 0
    ngram_range: int = 1
    accuracy_target: float | None = None
    repeats: int | None = None


def _options(mapping: dict) -> tuple[tuple[str, float | bool], ...]:
    return tuple((k, v if isinstance(v, bool) else float(v)) for k, v in mapping.items())


def _workload(name: str, entry: dict, where: str) -> Workload:
    """One validated ``catalog.yaml`` entry as a :class:`Workload` (``where``: its file)."""
    if entry["input_dtype"] == "uint8" and len(entry["input_shape"]) != 3:
        raise ConfigError(
            f"{where}: workloads.{name}.input_shape: {entry['input_shape']}: an image is "
            "stored as [height, width, channels]"
        )
    if entry["input_dtype"] == "int32" and len(entry["input_shape"]) != 1:
        raise ConfigError(
            f"{where}: workloads.{name}.input_shape: {entry['input_shape']}: token ids are "
            "stored as [length]"
        )
    if entry["parameters"] == 0 and (entry["input_dtype"] != "int32" or entry["vocabulary"]):
        raise ConfigError(
            f"{where}: workloads.{name}.parameters: 0 is only for a text workload whose "
            "vocabulary comes from its data (vocabulary 0); expected the model's count"
        )
    recipe = entry["recipe"]
    if recipe["loss"] == "binary_crossentropy" and entry["classes"] != 2:
        raise ConfigError(
            f"{where}: workloads.{name}.recipe.loss: binary_crossentropy (a sigmoid output) "
            f"goes with classes 2, found classes {entry['classes']}"
        )
    return Workload(
        name=name,
        study=entry["study"],
        source=entry["source"].strip(),
        model=entry["model"],
        dataset=entry["dataset"],
        input_shape=tuple(entry["input_shape"]),
        input_dtype=entry["input_dtype"],
        classes=entry["classes"],
        parameters=entry["parameters"],
        recipe=Recipe(
            optimizer=recipe["optimizer"],
            learning_rate=float(recipe["learning_rate"]),
            batch_size=recipe["batch_size"],
            epochs=recipe["epochs"],
            epoch_steps=recipe["epoch_steps"],
            loss=recipe["loss"],
            from_logits=recipe["from_logits"],
            optimizer_options=_options(recipe["optimizer_options"]),
        ),
        augmentation=_options(entry["augmentation"]),
        assumed=" ".join(entry["assumed"].split()),
        vocabulary=entry["vocabulary"],
        ngram_range=entry["ngram_range"],
        accuracy_target=entry.get("accuracy_target"),
        repeats=entry.get("repeats"),
    )


def _load_file(path: Path, study: str | None = None) -> dict[str, Workload]:
    """The workloads of one catalog file, validated; ``study``: the number each entry is
    given (a study's own file, whose entries do not name it)."""
    where = str(path)
    raw = read_config_file(path)
    entries = raw.get("workloads") if isinstance(raw, dict) else None
    if study is not None and isinstance(entries, dict):
        for name, entry in entries.items():
            if isinstance(entry, dict) and entry.setdefault("study", study) != study:
                raise ConfigError(
                    f"{where}: workloads.{name}.study: {entry['study']!r}; a study's "
                    f"catalog holds its own workloads ({study}): leave study out"
                )
    data = apply_defaults(raw, SCHEMA, sources=[(where, raw)])
    return {name: _workload(name, entry, where) for name, entry in data["workloads"].items()}


def load_catalog(path: str | Path | None = None) -> dict[str, Workload]:
    """Read and validate the catalog.

    Args:
        path: one catalog file, whose entries each name their study; None (the default):
            every study's ``catalog.yaml``, in the order of the studies' numbers.

    Returns:
        name -> :class:`Workload`, in the files' order.

    Raises:
        ConfigError: one line naming the file and the entry: unreadable or not YAML, a
            field missing or of the wrong type or range (:data:`SCHEMA`), facts that
            contradict each other (an image shape that is not H x W x C, binary
            cross-entropy with other than 2 classes, a parameter count of 0 where the model
            is fixed), a study's entry naming another study, or a name two studies give.
        DataError: a study's ``study.yaml`` is bad (:func:`embryo_bench.studies.registry.studies`).
    """
    if path is not None:
        return _load_file(Path(path))
    out: dict[str, Workload] = {}
    for study in studies().values():
        file = study.file(CATALOG)
        for name, workload in (_load_file(file, study.number) if file else {}).items():
            if name in out:
                raise ConfigError(
                    f"{file}: workloads.{name}: study {out[name].study}'s catalog has it too; "
                    "expected a name of one study"
                )
            out[name] = workload
    return out


@functools.cache
def catalog() -> dict[str, Workload]:
    """The package's catalog (every study's), read once. See :func:`load_catalog`."""
    return load_catalog()


def get(name: str) -> Workload:
    """The catalog's workload ``name``.

    Raises:
        ConfigError: ``name`` is not in the catalog (the message lists the known names).
    """
    known = catalog()
    if name not in known:
        raise ConfigError(f"workload {name!r}: not in the catalog; known: {', '.join(known)}")
    return known[name]
