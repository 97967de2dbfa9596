"""Adam through TensorFlow's fused kernel (tf-mnist-deep was at 0.76x its
script with Keras 3's unfused Adam): the same weights and moments as Keras's Adam after a
few steps, one ``ResourceApplyAdam`` per variable in the update graph, Keras's own update
where the kernel does not apply (sparse gradients, amsgrad), the trainer's recipes and the
paper CNN compiled with it on TensorFlow and not on other backends, saved models that load
(scoring: in a process that never imported it), and tf.distribute's mirrored replicas."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from embryo_bench.workloads.build import make_adam, make_optimizer
from embryo_bench.workloads.catalog import Recipe, get
from embryo_bench.workloads.fused_adam import FusedAdam
from embryo_bench.workloads.paper import ORIGINAL_ADAM_EPSILON, build_model, compile_model

#: Float32 rounding after a few steps (the two compute in different orders).
TOLERANCE = {"rtol": 1e-5, "atol": 2e-6}
STEPS = 6


def _dense_model() -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(3),
        ]
    )


def _embedding_model() -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((6,), dtype="int32"),
            keras.layers.Embedding(20, 4),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(2),
        ]
    )


def _train(optimizer, make_model=_dense_model) -> keras.Model:
    """``STEPS`` batches of 8 from the same seeded model and data."""
    keras.utils.set_random_seed(0)
    model = make_model()
    model.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1)
    for _ in range(STEPS):
        if make_model is _embedding_model:  # 48 ids of 20 a batch: some repeat
            x = rng.integers(0, 20, (8, 6), dtype=np.int32)
        else:
            x = rng.normal(size=(8, 8, 8, 1)).astype(np.float32)
        model.train_on_batch(x, rng.integers(0, model.output_shape[-1], 8))
    return model


def _state(model: keras.Model) -> list[np.ndarray]:
    """The weights, then the optimizer's variables (iterations, moments)."""
    return [*model.get_weights(), *(v.numpy() for v in model.optimizer.variables)]


def _assert_same(ours: keras.Model, kerass: keras.Model) -> None:
    for a, b in zip(_state(ours), _state(kerass), strict=True):
        np.testing.assert_allclose(a, b, **TOLERANCE)


@pytest.mark.parametrize(
    "options",
    [
        {"learning_rate": 1e-2},
        {"learning_rate": 1e-3, "epsilon": 1e-8},  # tf.train.AdamOptimizer's
        {"learning_rate": 3e-3, "beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-4},
        {"learning_rate": 1e-2, "weight_decay": 0.1, "clipnorm": 0.5},
    ],
)
def test_fused_adam_gives_kerass_weights_and_moments(options):
    ours, kerass = _train(FusedAdam(**options)), _train(keras.optimizers.Adam(**options))
    _assert_same(ours, kerass)
    assert int(ours.optimizer.iterations) == STEPS
    sgd = _train(keras.optimizers.SGD(options["learning_rate"]))
    assert not np.allclose(ours.get_weights()[0], sgd.get_weights()[0], **TOLERANCE)


def test_fused_adam_follows_a_learning_rate_schedule():
    """Keras 2's ``decay`` (text-generator's recipe): the rate changes every step."""

    def schedule():
        return keras.optimizers.schedules.InverseTimeDecay(1e-2, decay_steps=1, decay_rate=0.5)

    _assert_same(
        _train(FusedAdam(schedule(), epsilon=1e-8)),
        _train(keras.optimizers.Adam(schedule(), epsilon=1e-8)),
    )


def _update_ops(optimizer, model: keras.Model) -> list[str]:
    """The op types of one traced ``optimizer.apply`` on ``model``'s variables."""
    variables = model.trainable_variables
    optimizer.build(variables)
    grads = [tf.ones_like(v) for v in variables]
    graph = tf.function(lambda: optimizer.apply(grads, variables)).get_concrete_function().graph
    return [op.type for op in graph.get_operations()]


def test_the_update_is_one_fused_kernel_per_variable():
    model = _dense_model()
    ours = _update_ops(FusedAdam(), model)
    assert ours.count("ResourceApplyAdam") == len(model.trainable_variables) == 6
    assert "ResourceApplyAdam" not in _update_ops(keras.optimizers.Adam(), model)


def test_sparse_gradients_take_kerass_update():
    """An embedding's gradient is a ``tf.IndexedSlices``; Keras's Adam squares its slices
    before summing repeated ids (the dense kernel would square their sum), so it keeps
    Keras's update and the same weights."""
    _assert_same(
        _train(FusedAdam(1e-2), _embedding_model),
        _train(keras.optimizers.Adam(1e-2), _embedding_model),
    )


def test_amsgrad_is_kerass_adam():
    assert type(make_adam(learning_rate=1e-3, amsgrad=True)) is keras.optimizers.Adam
    # Built from a saved config with amsgrad, the class falls back to Keras's update too.
    _assert_same(
        _train(FusedAdam(1e-2, amsgrad=True)), _train(keras.optimizers.Adam(1e-2, amsgrad=True))
    )


def test_recipes_and_the_paper_cnn_train_with_it_on_tensorflow():
    deep = make_optimizer(get("tf-mnist-deep").recipe)
    assert type(deep) is FusedAdam
    assert (float(deep.learning_rate), deep.epsilon) == (pytest.approx(1e-4), 1e-8)
    decayed = make_optimizer(get("text-generator").recipe)  # adam with decay 1e-4
    assert type(decayed) is FusedAdam
    assert isinstance(decayed._learning_rate, keras.optimizers.schedules.InverseTimeDecay)
    amsgrad = Recipe("adam", 1e-3, 32, 1, optimizer_options=(("amsgrad", True),))
    assert type(make_optimizer(amsgrad)) is keras.optimizers.Adam
    assert not isinstance(make_optimizer(get("cifar10-cnn").recipe), FusedAdam)  # rmsprop
    keras_variant = compile_model(build_model(16)).optimizer
    original = compile_model(build_model(16, variant="original"), variant="original").optimizer
    assert type(keras_variant) is type(original) is FusedAdam
    assert (keras_variant.epsilon, original.epsilon) == (1e-7, ORIGINAL_ADAM_EPSILON)


def test_a_model_saved_with_it_loads_with_its_state(tmp_path):
    model = _train(FusedAdam(1e-2, epsilon=1e-8))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert type(loaded.optimizer) is FusedAdam and loaded.optimizer.epsilon == 1e-8
    for a, b in zip(_state(loaded), _state(model), strict=True):
        np.testing.assert_array_equal(a, b)


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter (this checkout's ``src`` first); its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_other_backends_compile_kerass_adam_without_tensorflow():
    out = _python(
        """
        import sys
        from embryo_bench.workloads.build import make_optimizer
        from embryo_bench.workloads.catalog import get
        from embryo_bench.workloads.paper import build_model, compile_model
        optimizers = [compile_model(build_model(16)).optimizer,
                      make_optimizer(get("tf-mnist-deep").recipe)]
        print([type(o).__name__ for o in optimizers], "tensorflow" in sys.modules)
        """,
        KERAS_BACKEND="jax",
    )
    assert out.split("\n")[-2] == "['Adam', 'Adam'] False"


def test_scoring_loads_a_paper_model_trained_with_it_in_a_fresh_process(tmp_path):
    """``evaluate`` loads ``model.keras`` in a process that never imported the optimizer's
    module (Keras would not know the class for ``compile=True``)."""
    model = compile_model(build_model(16))
    model.train_on_batch(np.zeros((2, 16, 16, 1), np.uint8), np.array([0, 3]))
    model.save(tmp_path / "model.keras")
    out = _python(
        f"""
        import sys
        from pathlib import Path
        from embryo_bench.training.evaluate import load_checked_model
        model = load_checked_model(Path({str(tmp_path / "model.keras")!r}), 16)
        print(model.output_shape, "embryo_bench.workloads.fused_adam" in sys.modules)
        """
    )
    assert out.split("\n")[-2] == "(None, 4) False"


def test_mirrored_replicas_update_as_kerass_adam():
    """tf.distribute's MirroredStrategy over two logical CPUs: each replica's variables and
    moments are updated through their own handles, as Keras's Adam updates them."""
    out = _python(
        """
        import numpy as np, keras, tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        two = [tf.config.LogicalDeviceConfiguration()] * 2
        tf.config.set_logical_device_configuration(cpu, two)
        from embryo_bench.workloads.fused_adam import FusedAdam
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        def train(make):
            keras.utils.set_random_seed(0)
            with strategy.scope():
                layers = [keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(3)]
                model = keras.Sequential(layers)
                model.compile(make(), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            rng = np.random.default_rng(1)
            x, y = rng.normal(size=(64, 8)).astype("float32"), rng.integers(0, 3, 64)
            model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
            return model
        ours, kerass = train(lambda: FusedAdam(1e-2)), train(lambda: keras.optimizers.Adam(1e-2))
        weights = max(np.abs(a - b).max() for a, b in zip(ours.get_weights(), kerass.get_weights()))
        replicas = [np.asarray(r) for r in ours.optimizer.variables[2].value.values]
        moved = np.abs(replicas[0]).sum() > 0
        print(weights < 2e-6, len(replicas), np.array_equal(*replicas), moved)
        """
    )
    assert out.split("\n")[-2] == "True 2 True True"
