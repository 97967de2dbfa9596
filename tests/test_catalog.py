"""The catalog of the studies' models: parameter counts against the model
and against the sources, one training step of every model with its recipe, the layers that
stand in for the scripts' input pipelines, a user's builder by module path, and a damaged
catalog named in one line. Tiny and fast: no training beyond one step on 2 samples."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml

from embryo_bench.errors import ConfigError
from embryo_bench.studies.minimaxir.models import AUX_LOSS_WEIGHT
from embryo_bench.studies.registry import CATALOG, studies
from embryo_bench.studies.wu.models import LRN, Cifar10Distortion, LocalResponseNormalization
from embryo_bench.workloads.build import build_model, compile_model, make_optimizer
from embryo_bench.workloads.builders import load_checked_builder
from embryo_bench.workloads.catalog import Recipe, Workload, catalog, get, load_catalog
from embryo_bench.workloads.user import load_builder

#: The parameter counts as the sources give them, written out by hand from each source's
#: layers (a conv k x k x in x out + out; a dense in x out + out; an LSTM 4 x (units x
#: (inputs + units) + units); a batch norm 4 x features, half of them moving statistics).
SOURCE_COUNTS = {
    # Lawrence et al. (000), section II.D's terms plus the output layer's 4 biases, which
    # they leave out (the paper's printed total, 16,832,432, is 2,000 below its terms too).
    "paper": 832 + 51_264 + 16_778_240 + 4_100,
    # DATAmadness (001): the post's summary, "Total params: 58,091,396", row by row.
    "datamadness-cnn": sum(
        (896, 128, 18_496, 256, 36_928, 256, 73_856, 512, 147_584, 512, 57_803_776, 4_096, 4_100)
    ),
    # minimaxir (002), from the scripts' layers (they print no counts):
    "mnist-mlp": (784 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10),
    "mnist-cnn": (9 * 1 * 32 + 32)
    + (9 * 32 * 64 + 64)
    + (12 * 12 * 64 * 128 + 128)
    + (128 * 10 + 10),
    "cifar10-cnn": (9 * 3 * 32 + 32)
    + (9 * 32 * 32 + 32)
    + (9 * 32 * 64 + 64)
    + (9 * 64 * 64 + 64)
    + (6 * 6 * 64 * 512 + 512)
    + (512 * 10 + 10),
    "imdb-bilstm": 20_000 * 128 + 2 * 4 * (64 * (128 + 64) + 64) + (2 * 64 + 1),
    "lstm-text-generation": 4 * (128 * (57 + 128) + 128) + (128 * 57 + 57),
    "text-generator": 57 * 300
    + 4 * (128 * (300 + 128) + 128)
    + (128 * 57 + 57)
    + 128 * 512
    + 4 * 512
    + 512 * 256
    + 4 * 256
    + (256 * 57 + 57),
    # Wu et al. (003): 3,274,634 for TensorFlow's MNIST network; the CIFAR-10
    # tutorial's layers (24x24 crops, two stride-2 pools: 6 x 6 x 64 into local3).
    "tf-mnist-deep": (25 * 32 + 32)
    + (25 * 32 * 64 + 64)
    + (7 * 7 * 64 * 1024 + 1024)
    + (1024 * 10 + 10),
    "tf-cifar10": (25 * 3 * 64 + 64)
    + (25 * 64 * 64 + 64)
    + (6 * 6 * 64 * 384 + 384)
    + (384 * 192 + 192)
    + (192 * 10 + 10),
    # The cats-vs-dogs tutorial (004): 64 -> 62 -> 31 -> 29 -> 14 px; the variants as the
    # post describes them (catsdogs.py): 14 -> 12 -> 6 px; 128 -> ... -> 6 px.
    "catsdogs-cnn": (27 * 32 + 32) + (9 * 32 * 32 + 32) + (14 * 14 * 32 * 128 + 128) + 129,
    "catsdogs-deeper": (27 * 32 + 32)
    + (9 * 32 * 32 + 32)
    + (9 * 32 * 64 + 64)
    + (6 * 6 * 64 * 128 + 128)
    + 129,
    "catsdogs-128": (27 * 64 + 64) + 3 * (9 * 64 * 64 + 64) + (6 * 6 * 64 * 128 + 128) + 129,
}
#: Where the count depends on the data: imdb_fasttext.py, embedding 50 x vocabulary + dense
#: 50 + 1 (vocabulary = 20,001 + the distinct training bigrams).
DATA_COUNTS = {"imdb-fasttext": lambda vocabulary: 50 * vocabulary + 51}
#: A vocabulary for building imdb-fasttext in tests.
TEST_VOCABULARY = 1_000
#: Over 5 s a step on one shared core: 58 M parameters.
HEAVY = {"datamadness-cnn"}


def _build(workload: Workload, **kwargs) -> keras.Model:
    """``build_model``, skipping the paper's entry while its builder
    (``workloads.paper.build_catalog_model``, the integrator's) is not in this checkout."""
    if workload.name == "paper":
        try:
            load_builder(workload.model)
        except ConfigError as exc:
            if "has no 'build_catalog_model'" in str(exc):
                pytest.skip("workloads.paper.build_catalog_model is not written yet")
            raise
    if workload.name in DATA_COUNTS:
        kwargs.setdefault("vocabulary", TEST_VOCABULARY)
    return build_model(workload, **kwargs)


def _expected_count(workload: Workload) -> int:
    if workload.name in DATA_COUNTS:
        assert workload.parameters == 0 and workload.vocabulary == 0
        return DATA_COUNTS[workload.name](TEST_VOCABULARY)
    return workload.parameters


def _params():
    slow = pytest.mark.slow
    return [pytest.param(n, marks=slow) if n in HEAVY else n for n in catalog()]


def test_the_hand_counts_cover_the_catalog():
    """A new catalog entry needs its source's count written here."""
    assert set(SOURCE_COUNTS) | set(DATA_COUNTS) == set(catalog())


@pytest.mark.parametrize("name", list(SOURCE_COUNTS))
def test_catalog_counts_are_the_sources(name):
    assert get(name).parameters == SOURCE_COUNTS[name]


def test_datamadness_count_is_the_posts_summary():
    # "Total params: 58,091,396 / Trainable params: 58,088,516 / Non-trainable params: 2,880"
    assert SOURCE_COUNTS["datamadness-cnn"] == 58_091_396
    model = _build(get("datamadness-cnn"))
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert (model.count_params(), trainable) == (58_091_396, 58_088_516)


@pytest.mark.parametrize("name", list(catalog()))
def test_model_count_is_the_catalogs(name):
    workload = get(name)
    assert _build(workload).count_params() == _expected_count(workload)


def _batch(workload: Workload, n: int = 2, seed: int = 0):
    """``n`` random samples of the workload's input as stored, and labels."""
    rng = np.random.default_rng(seed)
    shape = (n, *workload.input_shape)
    if workload.input_dtype == "uint8":
        x = rng.integers(0, 256, shape, dtype=np.uint8)
    else:
        x = rng.integers(0, workload.vocabulary or TEST_VOCABULARY, shape, dtype=np.int32)
    y = rng.integers(0, workload.classes, n, dtype=np.int32)
    if workload.recipe.loss == "binary_crossentropy":
        y = y.astype(np.float32)[:, None]
    return x, y


@pytest.mark.parametrize("name", _params())
def test_model_trains_a_step_with_its_recipe(name):
    workload = get(name)
    model = compile_model(_build(workload), workload.recipe)
    x, y = _batch(workload)
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    logs = model.train_on_batch(x, y, return_dict=True)
    assert np.isfinite(logs["loss"]) and 0.0 <= logs["accuracy"] <= 1.0
    after = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert any(not np.allclose(a, b) for a, b in zip(before, after, strict=True))
    out = model.predict(x, verbose=0)
    binary = workload.recipe.loss == "binary_crossentropy"
    assert out.shape == (2, 1 if binary else workload.classes)


def test_text_generator_trains_on_both_outputs():
    """loss_weights [1, 0.2]: the training loss is main + 0.2 x auxiliary, one label array;
    evaluation and prediction see the main output only."""
    workload = get("text-generator")
    model = compile_model(_build(workload), workload.recipe)
    x, y = _batch(workload, n=4)
    main, aux = model.network(x, training=True)  # batch norms on batch statistics
    loss = keras.losses.SparseCategoricalCrossentropy()
    expected = float(loss(y, main)) + AUX_LOSS_WEIGHT * float(loss(y, aux))
    assert model.train_on_batch(x, y, return_dict=True)["loss"] == pytest.approx(expected, 1e-5)
    out = model.predict(x, verbose=0)
    assert out.shape == (4, 57) and np.allclose(out.sum(axis=1), 1.0, atol=1e-5)
    evaluated = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert evaluated == pytest.approx(float(loss(y, model.network(x)[0])), 1e-5)


@pytest.mark.parametrize("name", ["text-generator", "tf-cifar10", "lstm-text-generation"])
def test_models_with_own_layers_save_and_load(name, tmp_path):
    workload = get(name)
    model = compile_model(_build(workload), workload.recipe)
    x, y = _batch(workload)
    model.train_on_batch(x, y)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.count_params() == workload.parameters
    assert np.allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)


def test_local_response_normalization_is_tensorflows():
    x = np.random.default_rng(1).normal(0, 3, (2, 5, 5, 64)).astype(np.float32)
    ours = keras.ops.convert_to_numpy(LocalResponseNormalization(**LRN)(x))
    theirs = tf.nn.local_response_normalization(x, **LRN)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5)


def test_cifar10_distortion_evaluates_the_centre_crop_standardised():
    x = np.random.default_rng(2).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    layer = Cifar10Distortion(24, seed=0)
    ours = keras.ops.convert_to_numpy(layer(x, training=False))
    crop = tf.image.resize_with_crop_or_pad(tf.cast(x, tf.float32), 24, 24)
    np.testing.assert_allclose(ours, tf.image.per_image_standardization(crop), atol=1e-5)


def test_cifar10_distortion_crops_each_image_apart():
    """Training: a 24x24 window of each image (its own place, perhaps flipped), brightness
    and contrast, then standardised per image."""
    x = np.zeros((64, 32, 32, 1), np.uint8)
    x[:, 4, 4, 0] = 255  # one bright pixel: where it lands shows the window
    layer = Cifar10Distortion(24, seed=0)
    out = keras.ops.convert_to_numpy(layer(x, training=True))
    assert out.shape == (64, 24, 24, 1)
    flat = out.reshape(64, -1)
    np.testing.assert_allclose(flat.mean(axis=1), 0.0, atol=1e-3)
    places = {np.unravel_index(np.argmax(o), o.shape) for o in out[..., 0]}
    assert len(places) > 8  # 25 windows hold the pixel, in one place or its mirror each


def test_optimizer_options_and_schedules():
    rms = make_optimizer(get("cifar10-cnn").recipe)  # rmsprop(lr=1e-4, decay=1e-6)
    assert isinstance(rms, keras.optimizers.RMSprop) and rms.epsilon == 1e-8
    schedule = rms._learning_rate
    assert float(schedule(0)) == pytest.approx(1e-4)
    assert float(schedule(1000)) == pytest.approx(1e-4 / (1 + 1e-6 * 1000))
    sgd = make_optimizer(get("tf-cifar10").recipe)  # 0.1, x 0.1 every 136,718 steps
    assert isinstance(sgd, keras.optimizers.SGD) and sgd.use_ema and sgd.ema_momentum == 0.9999
    rate = sgd._learning_rate
    assert [float(rate(s)) for s in (0, 136_717, 136_718)] == pytest.approx([0.1, 0.1, 0.01])
    adadelta = make_optimizer(get("mnist-cnn").recipe)
    assert isinstance(adadelta, keras.optimizers.Adadelta)
    assert (float(adadelta.learning_rate), adadelta.rho) == (1.0, 0.95)


def test_an_option_the_optimizer_lacks_is_one_line():
    recipe = Recipe("adam", 1e-3, 32, 1, optimizer_options=(("momentum", 0.9),))
    with pytest.raises(ConfigError) as err:
        make_optimizer(recipe)
    assert str(err.value).startswith("optimizer 'adam' with ['momentum']: ")
    assert "\n" not in str(err.value)


def test_fasttext_needs_the_datas_vocabulary():
    with pytest.raises(
        ConfigError,
        match=r"^workloads \(imdb-fasttext\): model '[\w.:]+': no vocabulary: .*vocabulary= from",
    ):
        build_model(get("imdb-fasttext"))
    model = build_model(get("imdb-fasttext"), vocabulary=20_001 + 5)
    assert model.count_params() == 50 * 20_006 + 51


def test_builders_take_other_shapes_and_refuse_impossible_ones():
    assert build_model(get("tf-mnist-deep"), input_shape=(64, 64, 1), classes=4).count_params()
    assert build_model(get("catsdogs-cnn"), input_shape=(32, 32, 3)).output_shape == (None, 1)
    with pytest.raises(
        ConfigError,
        match=r"^workloads \(tf-cifar10\): model '[\w.:]+': .*\(16, 16, 3\).*H, W >= 24",
    ):
        build_model(get("tf-cifar10"), input_shape=(16, 16, 3))
    with pytest.raises(
        ConfigError,
        match=r"^workloads \(catsdogs-cnn\): model '[\w.:]+': classes 3: .* sigmoid output; "
        "expected 2$",
    ):
        build_model(get("catsdogs-cnn"), classes=3)


# --- the user's own builder ----------------------------------------------------------------

USER_MODULE = """
import json
import sys
from json import loads

import keras

from other_models import reexported


def tiny(input_shape, classes):
    return keras.Sequential([keras.Input(input_shape, dtype="uint8"),
                             keras.layers.Flatten(), keras.layers.Dense(classes)])


def raises(input_shape, classes):
    return {}["no such key"]


def none(input_shape, classes):
    return None


def not_a_model(input_shape, classes):
    return keras.layers.Dense(classes)


def wrong_input(input_shape, classes):
    return keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Flatten(),
                             keras.layers.Dense(classes)])


def two_inputs(input_shape, classes):
    a, b = keras.Input(input_shape), keras.Input(input_shape)
    out = keras.layers.Dense(classes)(keras.layers.Flatten()(keras.layers.Add()([a, b])))
    return keras.Model([a, b], out)


def wrong_rank(input_shape, classes):
    return keras.Sequential([keras.Input(input_shape), keras.layers.Dense(classes)])


def fewer(input_shape, classes):
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                             keras.layers.Dense(classes - 5)])


def more(input_shape, classes):
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                             keras.layers.Dense(50)])


def two_outputs(input_shape, classes):
    x = keras.Input(input_shape)
    flat = keras.layers.Flatten()(x)
    return keras.Model(x, [keras.layers.Dense(classes)(flat), keras.layers.Dense(classes)(flat)])


class Subclassed(keras.Model):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.flatten, self.dense = keras.layers.Flatten(), keras.layers.Dense(units)

    def call(self, x):
        return self.dense(self.flatten(x))


def subclassed(input_shape, classes):
    return Subclassed(classes)


def subclassed_more(input_shape, classes):
    return Subclassed(50)


def exits(input_shape, classes):
    sys.exit(3)


def subclassed_fails(input_shape, classes):
    return keras.Sequential([keras.layers.Reshape((32, 32, 3)), keras.layers.Flatten(),
                             keras.layers.Dense(classes)])


NOT_A_FUNCTION = 3
"""

OTHER_MODULE = """
def reexported(input_shape, classes):
    return None
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(USER_MODULE)
    (tmp_path / "other_models.py").write_text(OTHER_MODULE)
    (tmp_path / "broken_models.py").write_text("def tiny(:\n")
    (tmp_path / "failing_models.py").write_text("import no_such_package_here\n")
    # A script's top level: it ends the program when imported.
    (tmp_path / "exiting_models.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "script_models.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data')\n"
        "args = p.parse_args(['--epochs', '3'])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("my_models", "other_models", "broken_models", "failing_models",
                 "exiting_models", "script_models"):  # fmt: skip
        sys.modules.pop(name, None)


def _user(model: str, **recipe) -> Workload:
    return Workload(
        name="mine",
        study="user",
        source="the user's",
        model=model,
        dataset="mnist",
        input_shape=(28, 28, 1),
        input_dtype="uint8",
        classes=10,
        parameters=0,
        recipe=Recipe("sgd", 0.01, 8, 1, **recipe),
    )


@pytest.mark.parametrize("builder", ["tiny", "subclassed"])
def test_a_user_model_by_module_path(user_module, builder):
    workload = _user(f"my_models:{builder}", from_logits=True)
    model = compile_model(build_model(workload), workload.recipe)
    assert model.count_params() == 784 * 10 + 10
    x, y = _batch(workload)
    assert np.isfinite(model.train_on_batch(x, y, return_dict=True)["loss"])


#: builder -> what the line says after "workloads (mine): model 'my_models:<builder>' ".
#: Each was a Keras or TensorFlow traceback of up to 40 lines naming no setting, or (more,
#: subclassed_more) a run that trained and was reported like any other.
BAD_MODELS = {
    "raises": r"raised KeyError: 'no such key' \(.*my_models\.py, line \d+\); expected a "
    r"keras\.Model for input_shape \[28, 28, 1\] and 10 classes$",
    "none": r"returned None; expected a keras\.Model$",
    "not_a_model": r"returned a keras\.src\..*Dense; expected a keras\.Model$",
    "wrong_input": r"returned a model whose input is \(None, 32, 32, 3\); expected "
    r"\(None, 28, 28, 1\), the workload's input_shape \[28, 28, 1\]$",
    "two_inputs": r"returned a model whose input is \(None, 28, 28, 1\) and "
    r"\(None, 28, 28, 1\); expected \(None, 28, 28, 1\)",
    "wrong_rank": r"returned a model whose output is \(None, 28, 28, 10\); expected "
    r"\(None, 10\): one probability per class of its 10 \(sparse categorical cross-entropy\)$",
    "fewer": r"returned a model whose output is \(None, 5\); expected \(None, 10\): ",
    "more": r"returned a model whose output is \(None, 50\); expected \(None, 10\): ",
    "two_outputs": r"returned a model whose output is \(None, 10\) and \(None, 10\); "
    r"expected \(None, 10\)",
    "subclassed_more": r"returned a model whose output is \(None, 50\); expected \(None, 10\)",
    # SystemExit is no Exception: it ended the trainer, with the builder's exit status.
    "exits": r"raised SystemExit: 3 \(.*my_models\.py, line \d+\); expected a keras\.Model ",
    "subclassed_fails": r"returned a model that cannot take inputs of \(None, 28, 28, 1\), the "
    r"workload's input_shape \[28, 28, 1\] \(ValueError: ",
}


@pytest.mark.parametrize("builder", list(BAD_MODELS))
def test_a_user_model_that_cannot_train_is_one_line_naming_the_setting(user_module, builder):
    with pytest.raises(ConfigError) as err:
        build_model(_user(f"my_models:{builder}"))
    text = str(err.value)
    prefix = f"workloads (mine): model 'my_models:{builder}' "
    assert text.startswith(prefix) and "\n" not in text, text
    assert re.search(BAD_MODELS[builder], text.removeprefix(prefix)), text
    assert err.value.__cause__ is None


def test_a_binary_loss_expects_one_output_whatever_the_class_count(user_module):
    """The catalog's sigmoid workloads: binary cross-entropy on (None, 1), logits or not."""
    binary = _user("my_models:tiny", loss="binary_crossentropy", from_logits=True)
    with pytest.raises(ConfigError, match=r"expected \(None, 1\): one logit for its 2 classes "):
        build_model(binary, classes=2)
    assert build_model(get("catsdogs-cnn"), input_shape=(32, 32, 3)).output_shape == (None, 1)


@pytest.mark.parametrize(
    "path, message",
    [
        ("my_models.tiny", "'my_models.tiny': expected a builder of the form "),
        ("my_models:", "'my_models:': expected a builder of the form "),
        ("a b:c", "'a b:c': expected a builder of the form 'package.module:function'"),
        ("no_such_models:tiny", "module 'no_such_models' does not import (ModuleNotFoundError: "),
        ("broken_models:tiny", "module 'broken_models' does not import (SyntaxError: "),
        ("failing_models:tiny", "(ModuleNotFoundError: No module named 'no_such_package_here')"),
        ("my_models:huge", "'my_models:huge': module 'my_models' has no 'huge'"),
        ("my_models:NOT_A_FUNCTION", "'NOT_A_FUNCTION' is a int, not a function"),
        # A script's top level ended the trainer (status 0, read as success) or printed its
        # argparse usage and ended it (status 2), naming no setting.
        ("exiting_models:tiny", "module 'exiting_models' ends the program when imported "
         "(SystemExit: 0); expected a module that only defines"),
        ("script_models:tiny", "module 'script_models' ends the program when imported "
         "(SystemExit: 2)"),
    ],
)  # fmt: skip
def test_a_bad_builder_path_is_one_line(user_module, path, message):
    with pytest.raises(ConfigError) as err:
        load_builder(path, setting="workloads.mine.model")
    text = str(err.value)
    assert text.startswith(f"workloads.mine.model: {path!r}") and message in text
    assert "\n" not in text and err.value.__cause__ is None


@pytest.mark.parametrize(
    "path, message",
    [
        # Importable callables that build no model: each passed check-config and ran.
        ("os:system", "os is a module of Python's standard library, which builds no model; "
         "expected a Python module of your own (or embryo_bench.workloads' or a study's "
         "models) defining the function"),
        ("subprocess:run", "subprocess is a module of Python's standard library"),
        ("embryo_bench.io:atomic_path", "embryo_bench.io is a module of embryo-bench outside "
         "embryo_bench.workloads and the studies' models"),
        ("embryo_bench.studies.wu.claims:claims", "embryo_bench.studies.wu.claims is a module of "
         "embryo-bench outside embryo_bench.workloads and the studies' models"),
        ("my_models:Subclassed", "'Subclassed' is a type, not a function (def)"),
        ("my_models:loads", "'loads' comes from json, a module of Python's standard library"),
        ("my_models:json", "'json' is a module, not a function"),
        # load_builder's refusals, in the same form.
        ("my_models:huge", "module 'my_models' has no 'huge'"),
        ("no_such_models:tiny", "module 'no_such_models' does not import (ModuleNotFoundError: "),
    ],
)  # fmt: skip
def test_a_builder_of_no_module_of_models_is_one_line(user_module, path, message):
    with pytest.raises(ConfigError) as err:
        load_checked_builder(path, "workloads (mine): model")
    text = str(err.value)
    assert text.startswith(f"workloads (mine): model {path!r}: {message}"), text
    assert "\n" not in text and err.value.__cause__ is None
    with pytest.raises(ConfigError, match=f"^workloads \\(mine\\): model {re.escape(repr(path))}"):
        build_model(_user(path))


def test_a_function_imported_from_another_module_of_models_is_that_function(user_module):
    builder = load_checked_builder("my_models:reexported", "workloads (mine): model")
    assert builder.__module__ == "other_models"


# --- the catalog file ------------------------------------------------------------------------


def _every_entry() -> dict:
    """Every study's catalog entries in one catalog file's form (each naming its study)."""
    entries = {}
    for study in studies().values():
        if study.file(CATALOG):
            own = yaml.safe_load(study.file(CATALOG).read_text())["workloads"]
            entries |= {name: {**entry, "study": study.number} for name, entry in own.items()}
    return {"workloads": entries}


def test_one_file_of_every_entry_is_the_catalog(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(_every_entry(), sort_keys=False))
    assert load_catalog(path) == catalog()


def test_a_studys_catalog_gives_its_own_workloads_once(tmp_path, monkeypatch):
    """A study's entries take its number; one naming another study, or a name two studies
    give, is refused in one line naming the file."""
    from embryo_bench.workloads import catalog as catalog_mod

    wu = studies()["wu"]
    folder = tmp_path / "wu"
    folder.mkdir()
    shutil.copy(wu.file(CATALOG), folder / CATALOG)
    own = dataclasses.replace(wu, folder=folder)
    twin = dataclasses.replace(wu, name="twin", number="009", folder=tmp_path / "twin")
    monkeypatch.setattr(catalog_mod, "studies", lambda: {"wu": own})
    assert {w.study for w in load_catalog().values()} == {"003"}
    data = yaml.safe_load((folder / CATALOG).read_text())
    data["workloads"]["tf-cifar10"]["study"] = "002"
    (folder / CATALOG).write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"workloads\.tf-cifar10\.study: '002'; a study's"):
        load_catalog()
    del data["workloads"]["tf-cifar10"]["study"]
    (folder / CATALOG).write_text(yaml.safe_dump(data))
    shutil.copytree(folder, twin.folder)
    monkeypatch.setattr(catalog_mod, "studies", lambda: {"wu": own, "twin": twin})
    with pytest.raises(ConfigError, match=r"twin/catalog\.yaml: workloads\.tf-[a-z0-9-]+: "
                       r"study 003's catalog has it too"):  # fmt: skip
        load_catalog()


def _damaged(tmp_path, edit) -> str:
    data = _every_entry()
    edit(data["workloads"])
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as err:
        load_catalog(path)
    assert "\n" not in str(err.value)
    return str(err.value).removeprefix(f"{path}: ")


def test_a_damaged_entry_is_named(tmp_path):
    def drop(entries):
        del entries["mnist-cnn"]["classes"]

    def batch(entries):
        entries["imdb-bilstm"]["recipe"]["batch_size"] = "32"

    def binary(entries):
        entries["catsdogs-cnn"]["classes"] = 3

    def zero(entries):
        entries["mnist-mlp"]["parameters"] = 0

    def shape(entries):
        entries["cifar10-cnn"]["input_shape"] = [32, 32]

    assert _damaged(tmp_path, drop) == "workloads.mnist-cnn: 'classes' is a required property"
    assert _damaged(tmp_path, batch) == (
        "workloads.imdb-bilstm.recipe.batch_size: '32' is not of type 'integer'"
    )
    assert _damaged(tmp_path, binary).startswith(
        "workloads.catsdogs-cnn.recipe.loss: binary_crossentropy (a sigmoid output) goes with"
    )
    assert _damaged(tmp_path, zero).startswith("workloads.mnist-mlp.parameters: 0 is only for")
    assert _damaged(tmp_path, shape).startswith(
        "workloads.cifar10-cnn.input_shape: [32, 32]: an image is stored as"
    )


def test_an_unknown_workload_lists_the_known():
    with pytest.raises(ConfigError) as err:
        get("resnet-50")
    assert str(err.value) == (
        f"workload 'resnet-50': not in the catalog; known: {', '.join(catalog())}"
    )


def test_the_catalog_does_not_import_keras():
    """The plan reads the catalog at every Snakemake parse: no Keras, no TensorFlow."""
    code = (
        "import sys; from embryo_bench.workloads.catalog import catalog; catalog(); "
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
