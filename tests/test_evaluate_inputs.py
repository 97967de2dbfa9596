"""evaluate checks the model file before reading any image (issue 12, item 6)."""

import json
import zipfile

import pytest

from embryo_bench.errors import DataError
from embryo_bench.evaluate import evaluate

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
        from embryo_bench.model import build_model

        build_model(24).save(model)
    # The image folder does not exist: the model's error must come first.
    with pytest.raises(DataError, match=message) as err:
        evaluate(model, tmp_path / "no-such-images")
    assert str(model) in str(err.value)


def test_the_runs_own_model_passes_the_check(tmp_path):
    from embryo_bench.model import build_model

    model = _run_dir(tmp_path) / "model.keras"
    build_model(16).save(model)
    with pytest.raises(DataError, match="no-such-images: image folder not found"):
        evaluate(model, tmp_path / "no-such-images")
