"""Building and compiling a workload's model (issue 32, item 2). Imports Keras: import this
module only once the backend is chosen (``KERAS_BACKEND``), as ``train`` does."""

from __future__ import annotations

import keras

from ..errors import ConfigError
from ..planning.spec import WorkloadSpec
from .catalog import Recipe, Workload
from .user import load_builder

#: keras.losses classes by the names a recipe uses (catalog.LOSSES).
LOSS_CLASSES = {
    "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
    "binary_crossentropy": keras.losses.BinaryCrossentropy,
}
#: Recipe options that are learning-rate schedules, not optimizer arguments.
SCHEDULE_OPTIONS = ("decay", "exponential_decay_steps", "exponential_decay_rate")


def build_model(
    workload: Workload,
    input_shape: tuple[int, ...] | None = None,
    classes: int | None = None,
    vocabulary: int | None = None,
) -> keras.Model:
    """The workload's model, built by its builder (``workload.model``), uncompiled.

    Args:
        workload: a catalog entry (:func:`embryo_bench.workloads.catalog.get`) or the user's.
        input_shape: one sample's shape as stored ((H, W, C) uint8 images, (T,) int32 token
            ids); the workload's by default (smaller ones for tests and synthetic data).
        classes: output classes; the workload's by default.
        vocabulary: text workloads: token ids are below it; the workload's by default (it
            must be given where the workload's is 0: the data decides, as for imdb-fasttext).
            Passed to the builder as ``vocabulary=`` only when it is not 0.

    Returns:
        the ``keras.Model`` (batch, *input_shape) -> (batch, classes) probabilities or logits
        (``workload.recipe.from_logits``), or (batch, 1) for the binary workloads.

    Raises:
        ConfigError: the builder path does not import (:func:`.user.load_builder`), or the
            builder refuses the shape, classes or vocabulary (one line naming the workload).
    """
    builder = load_builder(workload.model, setting=f"workload {workload.name!r}: model")
    shape = tuple(input_shape or workload.input_shape)
    extra = {"vocabulary": vocabulary or workload.vocabulary}
    if not extra["vocabulary"]:
        extra = {}
    try:
        return builder(shape, classes or workload.classes, **extra)
    except ConfigError as exc:
        raise ConfigError(f"workload {workload.name!r}: {exc}") from None


def _learning_rate(recipe: Recipe, options: dict):
    """The recipe's learning rate: a float, or a schedule where its options ask for one."""
    rate = recipe.learning_rate
    if "decay" in options:  # Keras 2: lr / (1 + decay * iterations), updated every step
        return keras.optimizers.schedules.InverseTimeDecay(
            rate, decay_steps=1, decay_rate=float(options["decay"])
        )
    if "exponential_decay_steps" in options:  # tf.train.exponential_decay(staircase=True)
        return keras.optimizers.schedules.ExponentialDecay(
            rate,
            decay_steps=int(options["exponential_decay_steps"]),
            decay_rate=float(options.get("exponential_decay_rate", 0.1)),
            staircase=True,
        )
    return rate


def make_adam(**kwargs) -> keras.optimizers.Adam:
    """Adam with ``keras.optimizers.Adam``'s arguments (``learning_rate``, ``epsilon``...):
    on the TensorFlow backend :class:`embryo_bench.training.fused_adam.FusedAdam` (the same
    update through TensorFlow's fused kernel: docs/results.md, bench_studies), else, and
    with ``amsgrad=True`` (which that kernel does not compute), Keras's.

    Raises:
        TypeError, ValueError: as ``keras.optimizers.Adam`` for an argument it does not take.
    """
    if keras.backend.backend() != "tensorflow" or kwargs.get("amsgrad"):
        return keras.optimizers.Adam(**kwargs)
    # Imported here: it imports TensorFlow, which only that backend may load.
    from ..training.fused_adam import FusedAdam

    return FusedAdam(**kwargs)


def make_optimizer(recipe: Recipe) -> keras.optimizers.Optimizer:
    """The recipe's optimizer: ``keras.optimizers`` by name, with its learning rate (or
    schedule) and options; Adam by :func:`make_adam`.

    Raises:
        ConfigError: an optimizer Keras does not know, or an option it does not take.
    """
    options = dict(recipe.optimizer_options)
    kwargs = {k: v for k, v in options.items() if k not in SCHEDULE_OPTIONS}
    kwargs["learning_rate"] = _learning_rate(recipe, options)
    try:
        if recipe.optimizer.lower() == "adam":
            return make_adam(**kwargs)
        return keras.optimizers.deserialize({"class_name": recipe.optimizer, "config": kwargs})
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"optimizer {recipe.optimizer!r} with {sorted(options)}: {str(exc).splitlines()[0]}"
        ) from None


def compile_model(model: keras.Model, recipe: Recipe, steps_per_execution: int = 1) -> keras.Model:
    """Compile ``model`` with the recipe's optimizer (:func:`make_optimizer`), its loss
    (``from_logits`` as the recipe says) and ``metrics=["accuracy"]`` (Keras picks sparse
    categorical or binary accuracy from the loss), running ``steps_per_execution`` training
    steps per call into the backend (a run's: :func:`embryo_bench.training.train.
    steps_per_execution_for`; only the dispatch changes, not the updates). Returns the same
    model.

    Raises:
        ConfigError: see :func:`make_optimizer`.
    """
    model.compile(
        optimizer=make_optimizer(recipe),
        loss=LOSS_CLASSES[recipe.loss](from_logits=recipe.from_logits),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    return model


def build_for_spec(
    spec: WorkloadSpec, learning_rate: float, steps_per_execution: int = 1
) -> keras.Model:
    """A run's model (:mod:`embryo_bench.training.train`): built by the builder its spec
    names at its input shape, class count and vocabulary, compiled with its optimizer (at
    ``learning_rate``, the run's), options, loss and ``from_logits``, running
    ``steps_per_execution`` training steps per call (:func:`compile_model`).

    Raises:
        ConfigError: as :func:`build_model` and :func:`make_optimizer`.
    """
    workload = Workload(
        name=spec.name,
        study="",
        source="",
        model=spec.model,
        dataset=spec.dataset,
        input_shape=spec.input_shape,
        input_dtype=spec.input_dtype,
        classes=spec.classes,
        parameters=0,
        recipe=Recipe(
            optimizer=spec.optimizer,
            learning_rate=learning_rate,
            batch_size=1,
            epochs=1,
            loss=spec.loss,
            optimizer_options=tuple(spec.optimizer_options.items()),
            from_logits=spec.from_logits,
        ),
        vocabulary=spec.vocabulary,
    )
    return compile_model(build_model(workload), workload.recipe, steps_per_execution)
