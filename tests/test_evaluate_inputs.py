"""evaluate checks the model file before reading any image, and says what
layout it reads when the image folder has another."""

import json
import zipfile

import numpy as np
import pytest
from PIL import Image

from embryo_bench.cli import main
from embryo_bench.errors import DataError
from embryo_bench.training.evaluate import evaluate

SETTINGS = {
    "preprocessing": {"frame_size": 28, "crop_fraction": 0.5, "invert_centre": 128,
                      "rotation_step": 90, "image_size": 16},
}  # fmt: skip


def _run_dir(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "settings.json").write_text(json.dumps(SETTINGS))
    return run


@pytest.mark.parametrize(
    "kind, message",
    [
        ("text", r"not a Keras model archive \(not a zip file\)"),
        ("zip", r"a zip without config.json and model.weights.h5"),
        ("other_size", r"model maps \(None, 24, 24, 1\) to \(None, 4\); expected \(None, 16, 16"),
    ],
)
def test_a_file_that_is_not_the_runs_model_is_named_before_any_image_is_read(
    tmp_path, kind, message
):
    model = _run_dir(tmp_path) / "model.keras"
    if kind == "text":
        model.write_text("not a model\n")
    elif kind == "zip":
        with zipfile.ZipFile(model, "w") as zf:
            zf.writestr("readme.txt", "hello")
    else:
        from embryo_bench.workloads.paper import build_model

        build_model(24).save(model)
    # The image folder does not exist: the model's error must come first.
    with pytest.raises(DataError, match=message) as err:
        evaluate(model, tmp_path / "no-such-images")
    assert str(model) in str(err.value)


def test_the_runs_own_model_passes_the_check(tmp_path):
    from embryo_bench.workloads.paper import build_model

    model = _run_dir(tmp_path) / "model.keras"
    build_model(16).save(model)
    with pytest.raises(DataError, match="no-such-images: image folder not found"):
        evaluate(model, tmp_path / "no-such-images")


# --- image folders evaluate cannot read -----------------------------------------------------


@pytest.fixture(scope="module")
def model16(tmp_path_factory):
    """A paper CNN for 16 px inputs of 28 px frames, with its run's settings.json."""
    from embryo_bench.workloads.paper import build_model

    model = _run_dir(tmp_path_factory.mktemp("model")) / "model.keras"
    build_model(16).save(model)
    return model


def _png(path, kind="PNG"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((28, 28), 90, np.uint8)).save(path, kind)


def _db_folder(images):
    for k in range(3):
        _png(images / "E00" / f"Frame{k:03d}.png")
    (images / "E00" / "_trajectories.txt").write_text("1\t2\t3\n" * 3)


def _class_less_split(images):
    for k in range(3):
        _png(images / "Train" / f"im{k}.png")


def _top_level_images(images):
    for k in range(3):
        _png(images / f"im{k}.png")


@pytest.mark.parametrize(
    "make, message",
    [
        (
            _db_folder,
            "images: a Mouse Embryo Tracking Database folder (E00/...); evaluate reads class "
            "folders <class>/*.png or <split>/<class>/*.png",
        ),
        (
            lambda d: _db_folder(d / "Mouse"),
            "images: a Mouse Embryo Tracking Database folder (Mouse/E00/...); evaluate reads",
        ),
        (
            _class_less_split,
            "images: no class folders (0-3) with .png images (found folders Train without class "
            "folders 0-3 of .png images); expected <class>/*.png or <split>/<class>/*.png",
        ),
        (
            _top_level_images,
            "images: no class or split folders (found 3 .png files at the top level); expected "
            "<class>/*.png or <split>/<class>/*.png",
        ),
        (
            lambda d: (_png(d / "0" / "a.png"), _png(d / "1" / "frame.png", "JPEG")),
            "images/1/frame.png: a JPEG image named .png; expected PNG",
        ),
    ],
    ids=["database layout", "database one level down", "no class folders", "images only", "jpeg"],
)
def test_a_folder_evaluate_cannot_read_says_what_it_needs(tmp_path, capsys, model16, make, message):
    """Before: the database layout and a split folder of images without class folders crashed
    with 'ValueError: need at least one array to concatenate'; a JPEG renamed .png was
    scored."""
    images = tmp_path / "images"
    images.mkdir()
    make(images)
    rc = main(["evaluate", "--model", str(model16), "--images", str(images)])
    captured = capsys.readouterr()
    assert rc == 2 and "Traceback" not in captured.err and captured.out == ""
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("embryo-bench: error: ") and message in last, last
    assert str(tmp_path) in last
