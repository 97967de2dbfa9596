"""The paper CNN's shape, parameter count and variants; metrics arithmetic on a hand-made
history."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import require_or_skip

from embryo_bench.errors import ConfigError
from embryo_bench.training.history import summarise, time_to_accuracy, window_summary
from embryo_bench.vocabulary.spec import VARIANTS


def test_parameter_count_matches_paper_architecture():
    from embryo_bench.workloads.paper import PAPER_PARAMETERS, build_model

    model = build_model(64)
    # conv1 5*5*1*32+32, conv2 5*5*32*64+64, fc1 16*16*64*1024+1024, logits 1024*4+4
    assert model.count_params() == 832 + 51_264 + 16_778_240 + 4_100 == PAPER_PARAMETERS
    out = model(np.zeros((2, 64, 64, 1), np.uint8))
    assert tuple(out.shape) == (2, 4)


def _history():
    return pd.DataFrame(
        {
            "epoch": [1, 2, 3, 4],
            "epoch_seconds": [10.0, 4.0, 5.0, 6.0],
            "eval_seconds": [1.0, 1.0, 2.0, 1.0],
            "wall_seconds": [11.5, 5.5, 7.5, 7.5],  # training + test + Keras's own work
            "test_accuracy": [0.5, 0.84, 0.86, 0.80],
        }
    )


def test_time_to_accuracy_hand_made():
    # MLPerf's time to accuracy counts the evaluations (wall seconds); fit-only on request.
    assert time_to_accuracy(_history(), 0.85) == (24.5, 3)
    assert time_to_accuracy(_history(), 0.85, clock="epoch_seconds") == (19.0, 3)
    assert time_to_accuracy(_history(), 0.95) == (None, None)


def test_summarise_hand_made():
    s = summarise(_history(), images_per_epoch=1000, target=0.85)
    assert s["training_seconds"] == 25.0  # fit only
    assert s["wall_seconds"] == 32.0  # the paper's clock: training and per-epoch evaluation
    assert s["eval_seconds_total"] == 5.0 and s["time_to_accuracy_seconds"] == 24.5
    assert s["first_epoch_seconds"] == 10.0
    assert s["steady_epoch_seconds"] == pytest.approx(5.0)
    assert s["mean_images_per_s"] == pytest.approx(200.0)
    assert s["final_test_accuracy"] == 0.80 and s["best_test_accuracy"] == 0.86
    assert s["epochs_to_accuracy"] == 3


def test_window_summary_leaves_out_tracing_and_partial_batches():
    """A partial last batch costs more per image (80 images in 0.33 s against 480 in 1.4 s
    measured here), so only full windows are compared; the first window (tracing) is out."""
    rows = [  # epoch, window, steps, images, full, seconds
        (1, 1, 1, 480, True, 5.0), (1, 2, 1, 80, False, 0.33),
        (2, 1, 1, 480, True, 1.5), (2, 2, 1, 80, False, 0.33),
        (3, 1, 1, 480, True, 1.2), (3, 2, 1, 80, False, 0.33),
    ]  # fmt: skip
    w = pd.DataFrame(rows, columns=["epoch", "window", "steps", "images", "full", "seconds"])
    w["images_per_s"] = w["images"] / w["seconds"]
    s = window_summary(w)
    assert (s["windows"], s["window_steps"]) == (2, 1)
    assert s["median_images_per_s"] == pytest.approx((320 + 400) / 2)
    assert s["worst_images_per_s"] == pytest.approx(320.0)
    assert s["cv"] == pytest.approx(np.std([320, 400], ddof=1) / 360)
    assert window_summary(w[w["epoch"] < 3])["cv"] is None  # one window: no spread


def test_summarise_single_epoch():
    s = summarise(_history().iloc[:1], images_per_epoch=1000, target=0.85)
    assert s["steady_epoch_seconds"] is None
    assert s["mean_images_per_s"] == pytest.approx(100.0)


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.parametrize(
    ("threads", "cores", "pinned"),
    [(1, None, 1), (2, 1, 1)],  # a threads sweep: 2 pool threads on 1 pinned core
    ids=["1 thread", "2 threads on 1 core"],
)
def test_limit_threads_pins_and_sizes_pools(threads, cores, pinned):
    import subprocess
    import sys

    code = (
        "import os, json\n"
        "from embryo_bench.training.backend import limit_threads\n"
        f"cores = limit_threads({threads}, cores={cores})\n"
        "import tensorflow as tf\n"
        "print(json.dumps([cores, len(os.sched_getaffinity(0)),\n"
        "  tf.config.threading.get_intra_op_parallelism_threads(),\n"
        "  tf.config.threading.get_inter_op_parallelism_threads()]))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "KERAS_BACKEND"}
    out = (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    got, visible, intra, inter = __import__("json").loads(out)
    assert len(got) == pinned and visible == pinned and intra == threads and inter == threads


def test_limit_threads_rejects_zero():
    from embryo_bench.training.backend import limit_threads

    with pytest.raises(ValueError, match="threads and cores must be >= 1, got 0 and 0"):
        limit_threads(0)
    with pytest.raises(ValueError, match="got 1 and 0"):
        limit_threads(1, cores=0)


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_every_keras_backend_trains_the_same_model_and_times_it(backend):
    """Same parameter count on every backend, and each epoch's training time holds its
    training steps, not the scoring after it: JAX dispatches steps asynchronously, and
    without a wait at the epoch's end its 2 training steps (~0.5 s) were counted as the
    scoring of 4 images. Seeding (as a run seeds) leaves TensorFlow out of a JAX or PyTorch
    process (Keras's own set_random_seed imports it: +460 MiB)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec(backend) is None:
        require_or_skip(backend, f"{backend} is not installed (optional Keras backend)")
    code = (
        "import numpy as np\n"
        "from embryo_bench.training.backend import limit_threads\n"
        "limit_threads(1)\n"
        "import keras\n"
        "from embryo_bench.workloads.paper import build_model, compile_model\n"
        "from embryo_bench.training.backend import seed_everything\n"
        "from embryo_bench.training.epochs import fit_epochs\n"
        "seed_everything(0)\n"
        "m = compile_model(build_model(64))\n"
        "x = np.random.default_rng(0).integers(0, 129, (64, 64, 64, 1), dtype=np.uint8)\n"
        "y = np.arange(64, dtype=np.int32) % 4\n"
        "w = []\n"
        "rows = fit_epochs(m, (x, y), (x[:4], y[:4]), batch_size=32, epochs=3, windows=w,\n"
        "                  window_steps=1)\n"
        "print(keras.backend.backend(), m.count_params(), len(rows),\n"
        "      all(np.isfinite(r['train_loss']) and r['eval_seconds'] > 0 for r in rows),\n"
        "      [r['epoch_seconds'] > r['eval_seconds'] for r in rows[1:]],\n"
        "      'tensorflow' in __import__('sys').modules,\n"
        "      [(v['epoch'], v['window'], v['images']) for v in w][:3],\n"
        "      all(abs(sum(v['seconds'] for v in w if v['epoch'] == r['epoch'])\n"
        "              - r['epoch_seconds']) < 1e-3 for r in rows))\n"
    )
    env = {**__import__("os").environ, "KERAS_BACKEND": backend}
    out = (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    tf_loaded = backend == "tensorflow"
    # Windows of one step (2 per epoch) hold the epoch's training time between them, on
    # every backend (the clock waits for the step before each window's end).
    windows = "[(1, 1, 32), (1, 2, 32), (2, 1, 32)] True"
    assert out == f"{backend} 16834436 3 True [True, True] {tf_loaded} {windows}"


def test_both_variants_build_the_paper_model_with_their_own_initial_weights():
    """keras: Glorot-uniform weights, zero biases, Adam epsilon 1e-7; original (the authors'
    script): truncated normal sd 0.1 weights (none beyond 2 sd), biases 0.1, epsilon 1e-8."""
    import keras

    from embryo_bench.workloads.paper import PAPER_PARAMETERS, build_model, compile_model

    keras.utils.set_random_seed(0)
    models = {v: compile_model(build_model(64, variant=v), variant=v) for v in VARIANTS}
    for variant, model in models.items():
        assert model.count_params() == PAPER_PARAMETERS, variant
    for name in ("conv1", "conv2", "fc1", "logits"):
        (w_k, b_k), (w_o, b_o) = (
            [np.asarray(v) for v in models[v].get_layer(name).weights] for v in VARIANTS
        )
        fan_in, fan_out = np.prod(w_k.shape[:-1]), w_k.shape[-1]
        if w_k.ndim == 4:
            fan_out *= np.prod(w_k.shape[:2])
        glorot = np.sqrt(6 / (fan_in + fan_out))
        assert np.abs(w_k).max() <= glorot and np.abs(w_k).max() > 0.9 * glorot, name
        assert not b_k.any(), name
        assert np.abs(w_o).max() <= 0.2 + 1e-6 and 0.08 < w_o.std() < 0.095, (
            name
        )  # sd 0.1 cut at 2 sd
        assert np.all(b_o == np.float32(0.1)), name
    assert float(models["keras"].optimizer.epsilon) == 1e-7
    assert float(models["original"].optimizer.epsilon) == 1e-8
    with pytest.raises(ValueError, match="model variant 'tf1'"):
        build_model(64, variant="tf1")


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_original_variant_trains_fixed_step_epochs_without_the_holdout(tmp_path):
    """epoch_steps batches per epoch from reshuffled passes (leftover dropped), the first
    `holdout` training images never used, a random test subset scored after each epoch."""

    import keras

    from embryo_bench.training.epochs import fit_epochs
    from embryo_bench.vocabulary.spec import Preprocessing, RunSpec

    pp = Preprocessing(
        frame_size=48, crop_fraction=0.5, invert_centre=128, rotation_step=90, image_size=16
    )
    base = dict(
        target="t",
        repeat=1,
        runner="host",
        cpus=1,
        threads=1,
        gpus=0,
        backend="tensorflow",
        strategy="none",
        replicas=1,
        epochs=2,
        batch_size=8,
        learning_rate=1e-3,
        dropout=0.5,
        seed=0,
        accuracy_target=0.9,
        probe_seconds=0,
        preprocessing=pp,
    )
    with pytest.raises(ConfigError, match="variant original runs on the TensorFlow backend"):
        RunSpec(**{**base, "backend": "jax"}, variant="original")
    spec = RunSpec(**base, variant="original", epoch_steps=5, holdout=3, test_subset=12)
    assert RunSpec.from_dict(json.loads(spec.to_json())) == spec
    assert spec.replace(variant="keras").epoch_steps == 5

    from embryo_bench.workloads.paper import build_model, compile_model

    m = compile_model(build_model(16, variant="original"), 1e-3, variant="original")
    x = np.random.default_rng(0).integers(0, 129, (20, 16, 16, 1), dtype=np.uint8)
    y = np.arange(20, dtype=np.int32) % 4
    windows = []
    rows = fit_epochs(
        m, (x, y), (x, y), batch_size=8, epochs=3, epoch_steps=5, test_subset=12,
        windows=windows, window_steps=2,
    )  # fmt: skip
    # 5 steps per epoch whatever the training set's size (20 images: 2 full batches a pass).
    assert int(keras.ops.convert_to_numpy(m.optimizer.iterations)) == 15
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert all(r["images_per_s"] == pytest.approx(40 / r["epoch_seconds"]) for r in rows)
    # Windows of 2 steps: 2, 2 and the epoch's last 1, full batches of 8 each.
    assert [(w["epoch"], w["window"], w["steps"], w["images"]) for w in windows[:3]] == [
        (1, 1, 2, 16), (1, 2, 2, 16), (1, 3, 1, 8)]  # fmt: skip
    assert len(windows) == 9 and all(w["images_per_s"] > 0 for w in windows)
    summary = window_summary(pd.DataFrame(windows))
    assert summary["windows"] == 8  # the first window (tracing) left out
    rates = [w["images_per_s"] for w in windows[1:]]
    assert summary["worst_images_per_s"] == min(rates)
    assert summary["median_images_per_s"] == pytest.approx(float(np.median(rates)))
