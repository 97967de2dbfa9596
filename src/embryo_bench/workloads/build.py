"""Building and compiling a workload's model. Imports Keras: import this
module only once the backend is chosen (``KERAS_BACKEND``), as ``train`` does."""

from __future__ import annotations

import traceback

import keras

from ..errors import ConfigError
from ..vocabulary.spec import WorkloadSpec
from .builders import first_line, load_checked_builder
from .catalog import Recipe, Workload

#: keras.losses classes by the names a recipe uses (catalog.LOSSES).
LOSS_CLASSES = {
    "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
    "binary_crossentropy": keras.losses.BinaryCrossentropy,
}
#: Recipe options that are learning-rate schedules, not optimizer arguments.
SCHEDULE_OPTIONS = ("decay", "exponential_decay_steps", "exponential_decay_rate")


def _setting(workload: Workload) -> str:
    """The setting a workload's model comes from, for messages: ``workloads (name): model``
    (a run's spec knows the workload by its name, not by its index in the configuration)."""
    return f"workloads ({workload.name}): model"


def _shape_text(shape) -> str:
    """``(None, 28, 28, 1)``: a Keras shape as messages write it."""
    return "(" + ", ".join("None" if n is None else str(n) for n in shape) + ")"


def _raised_at(exc: BaseException, builder) -> str:
    """`` (file, line N)`` of where ``exc`` was raised in the builder's own module (the
    innermost such frame), else of the innermost frame; "" without a traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename == getattr(builder.__code__, "co_filename", None)]
    frame = (own or frames or [None])[-1]
    return f" ({frame.filename}, line {frame.lineno})" if frame else ""


def expected_output(workload: Workload, classes: int) -> tuple[int, str]:
    """The output width a workload's loss needs, and why (for messages): 1 for binary
    cross-entropy (one sigmoid probability, or logit with ``from_logits``), else ``classes``
    (sparse categorical cross-entropy: one probability, or logit, per class)."""
    kind = "logit" if workload.recipe.from_logits else "probability"
    if workload.recipe.loss == "binary_crossentropy":
        return 1, f"one {kind} for its 2 classes (binary cross-entropy)"
    return classes, f"one {kind} per class of its {classes} (sparse categorical cross-entropy)"


def check_model(
    model, workload: Workload, input_shape: tuple[int, ...], classes: int, setting: str
) -> keras.Model:
    """Refuse what a builder returned unless it is a model the trainer can fit: a
    ``keras.Model`` that takes (None, *input_shape) (its declared input, where it declares
    one; else a symbolic call at that shape must succeed) and returns one output of
    (None, n) with n as :func:`expected_output` says. A wider output (50 for 10 classes)
    trains without an error and is refused too: its accuracy and loss are not the
    workload's. The symbolic call builds a subclassed model's weights, as its first batch
    would.

    Returns:
        ``model``.

    Raises:
        ConfigError: one line: ``setting``, what was returned and what was expected.
    """
    if not isinstance(model, keras.Model):
        got = "None" if model is None else f"a {type(model).__module__}.{type(model).__qualname__}"
        raise ConfigError(f"{setting} returned {got}; expected a keras.Model")
    want_in = (None, *input_shape)
    try:  # a functional or Sequential model declares its inputs and outputs
        declared, outputs = list(model.inputs), model.outputs
    except (AttributeError, ValueError, TypeError):  # subclassed, or not built yet
        declared = None
    if declared:
        got = " and ".join(_shape_text(t.shape) for t in declared)
        if len(declared) != 1 or tuple(declared[0].shape[1:]) != tuple(input_shape):
            raise ConfigError(
                f"{setting} returned a model whose input is {got}; expected "
                f"{_shape_text(want_in)}, the workload's input_shape {list(input_shape)}"
            )
    else:
        try:
            outputs = model(keras.KerasTensor(want_in, dtype=workload.input_dtype))
        except Exception as exc:  # the user's model: any failure is a bad setting
            raise ConfigError(
                f"{setting} returned a model that cannot take inputs of "
                f"{_shape_text(want_in)}, the workload's input_shape {list(input_shape)} "
                f"({first_line(exc)})"
            ) from None
    outputs = keras.tree.flatten(outputs)
    width, why = expected_output(workload, classes)
    want_out = (None, width)
    got = " and ".join(_shape_text(getattr(t, "shape", ())) for t in outputs)
    if len(outputs) != 1 or tuple(outputs[0].shape[1:]) != want_out[1:]:
        raise ConfigError(
            f"{setting} returned a model whose output is {got}; expected "
            f"{_shape_text(want_out)}: {why}"
        )
    return model


def build_model(
    workload: Workload,
    input_shape: tuple[int, ...] | None = None,
    classes: int | None = None,
    vocabulary: int | None = None,
) -> keras.Model:
    """The workload's model, built by its builder (``workload.model``), uncompiled, and
    checked (:func:`check_model`): the one place a run's, a batch-limit trial's and the
    tests' models are made, so a builder that fails is one line naming the setting before
    any training starts.

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
        ConfigError: one line naming the workload's model setting: the builder path does not
            import or names no function of a module of models
            (:func:`.builders.load_checked_builder`), the builder raises (its own
            ConfigError's message, or the exception's type, first line and where; a
            ``SystemExit`` included), or it returns what :func:`check_model` refuses.
        MemoryError: as raised by the builder (out of memory is not a bad setting).
    """
    builder = load_checked_builder(workload.model, _setting(workload))
    setting = f"{_setting(workload)} {workload.model!r}"
    shape = tuple(input_shape or workload.input_shape)
    classes = classes or workload.classes
    extra = {"vocabulary": vocabulary or workload.vocabulary}
    if not extra["vocabulary"]:
        extra = {}
    try:
        model = builder(shape, classes, **extra)
    except ConfigError as exc:
        raise ConfigError(f"{setting}: {exc}") from None
    except MemoryError:
        raise
    # The user's code: any failure is a bad setting, in one line; SystemExit too, which is
    # no Exception and ended the trainer with the builder's exit status.
    except (Exception, SystemExit) as exc:
        raise ConfigError(
            f"{setting} raised {first_line(exc)}{_raised_at(exc, builder)}; expected a "
            f"keras.Model for input_shape {list(shape)} and {classes} classes"
        ) from None
    return check_model(model, workload, shape, classes, setting)


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
    on the TensorFlow backend :class:`embryo_bench.workloads.fused_adam.FusedAdam` (the same
    update through TensorFlow's fused kernel: docs/results.md, bench_studies), else, and
    with ``amsgrad=True`` (which that kernel does not compute), Keras's.

    Raises:
        TypeError, ValueError: as ``keras.optimizers.Adam`` for an argument it does not take.
    """
    if keras.backend.backend() != "tensorflow" or kwargs.get("amsgrad"):
        return keras.optimizers.Adam(**kwargs)
    # Imported here: it imports TensorFlow, which only that backend may load.
    from .fused_adam import FusedAdam

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
    spec: WorkloadSpec, learning_rate: float, steps_per_execution: int = 1, vocabulary: int = 0
) -> keras.Model:
    """A run's model (:mod:`embryo_bench.training.train`): built by the builder its spec
    names at its input shape, class count and vocabulary (the spec's, else ``vocabulary``,
    the data's: imdb-fasttext's 20,001 + its training set's distinct bigrams), compiled with
    its optimizer (at ``learning_rate``, the run's), options, loss and ``from_logits``,
    running ``steps_per_execution`` training steps per call (:func:`compile_model`).

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
        vocabulary=spec.vocabulary or vocabulary,
    )
    return compile_model(build_model(workload), workload.recipe, steps_per_execution)
