"""The batch-size search (``embryo-bench batch-limit``): doubling then bisection down to the
resolution, checked exactly against made-up trials; the frameworks' out-of-memory errors
told from other errors; one real search on the CPU under a memory limit; bad settings
refused in one line before anything is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_workload_train import _spec

from embryo_bench import cli
from embryo_bench.training import batch_limit as bl
from embryo_bench.training import batch_trial

MLP = {"name": "mnist-mlp", "data": "synthetic", "epochs": 1, "batch_size": 32}


def fits_up_to(limit: int, calls: list | None = None):
    """A made-up trial: batch sizes up to ``limit`` fit, larger ones run out of memory."""

    def trial(batch: int, left: float | None) -> bl.Trial:
        if calls is not None:
            calls.append((batch, left))
        if batch <= limit:
            return bl.Trial(batch, bl.FITS, images_per_s=float(batch), seconds=1.0)
        return bl.Trial(batch, bl.OUT_OF_MEMORY_OUTCOME, memory="device", error="OOM")

    return trial


def test_the_search_doubles_then_bisects_to_the_resolution():
    result = bl.search(fits_up_to(300), 32, 2**20, resolution=0.05)
    assert [t.batch_size for t in result.trials] == [
        32, 64, 128, 256, 512,  # doubling until 512 does not fit
        384, 320, 288, 304, 296,  # bisection on multiples of 8 between 256 and 512
    ]  # fmt: skip
    assert result.largest == 296 and result.stop == bl.STOP_OOM and result.stopped_at == 304
    assert 300 - result.largest <= max(0.05 * result.largest, bl.ALIGN)
    assert "out of device memory at batch 304" in result.text


@pytest.mark.parametrize("limit", [1, 5, 8, 100, 300, 1000, 4097, 70_000])
@pytest.mark.parametrize("start", [1, 32, 480, 5000])
@pytest.mark.parametrize("resolution", [0.01, 0.05, 0.5])
def test_the_largest_found_is_within_the_resolution_of_the_true_limit(limit, start, resolution):
    result = bl.search(fits_up_to(limit), start, 2**20, resolution=resolution)
    assert result.largest is not None and result.largest <= limit
    assert limit - result.largest <= max(resolution * result.largest, bl.ALIGN)
    tried = [t.batch_size for t in result.trials]
    assert len(tried) == len(set(tried)), f"a batch size tried twice: {tried}"
    assert result.stopped_at > result.largest


def test_a_start_that_does_not_fit_halves_and_none_fitting_says_so():
    result = bl.search(fits_up_to(100), 1000, 2**20)
    assert [t.batch_size for t in result.trials][:4] == [1000, 500, 250, 125]
    assert result.trials[4].batch_size == 62 and result.largest >= 95
    nothing = bl.search(fits_up_to(0), 4, 100)
    assert [t.batch_size for t in nothing.trials] == [4, 2, 1]
    assert nothing.largest is None and nothing.stopped_at == 1
    assert nothing.text == "out of device memory at batch 1: no batch fits"


def test_the_cap_stops_the_search_and_says_the_limit_is_higher():
    result = bl.search(fits_up_to(10**9), 32, 100)
    assert [t.batch_size for t in result.trials] == [32, 64, 100]
    assert result.largest == 100 and result.stop == bl.STOP_CAP and "higher" in result.text


def test_the_time_budget_stops_the_search_and_each_trial_gets_the_time_left():
    now = [0.0]
    calls: list = []
    inner = fits_up_to(10**9, calls)

    def trial(batch, left):
        now[0] += 10.0
        return inner(batch, left)

    result = bl.search(trial, 8, 2**20, budget=25, clock=lambda: now[0])
    assert calls == [(8, 25.0), (16, 15.0), (32, 5.0)]
    assert result.stop == bl.STOP_BUDGET and result.largest == 32
    assert "time budget (25 s) was spent after 3 trial(s)" in result.text


def test_an_error_is_reported_as_such_and_not_counted_as_not_fitting():
    def trial(batch, left):
        if batch == 128:
            return bl.Trial(batch, bl.ERROR, error="ValueError: a bad layer")
        return bl.Trial(batch, bl.FITS, images_per_s=1.0)

    result = bl.search(trial, 32, 2**20)
    assert [t.batch_size for t in result.trials] == [32, 64, 128]
    assert result.stop == bl.STOP_ERROR and result.largest == 64
    assert "failed (not by memory): ValueError: a bad layer" in result.text


@pytest.mark.parametrize(
    ("text", "on_gpu", "where"),
    [
        ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 1 bytes.",
         True, "device"),
        ("jax.errors.JaxRuntimeError: INTERNAL: Error dispatching computation: Out of memory "
         "allocating 11912044776 bytes.", False, "host"),
        ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
         "to allocate 1 bytes.", True, "device"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", True, "device"),
        ("builtins.RuntimeError: Exception encountered when calling MaxPooling2D.call().\n\n"
         "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
         "memory: you tried to allocate 268435456 bytes. Error code 12", False, "host"),
        ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
         "tensor with shape[4096,64,64,32] on /device:GPU:0 by allocator GPU_0_bfc", True,
         "device"),
        ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
         "tensor with shape[4096,64,64,32] on /device:CPU:0 by allocator cpu", True, "host"),
        ("builtins.MemoryError: Unable to allocate 4.00 GiB", False, "host"),
        ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  "
         "std::bad_alloc\nthe process ended by SIGABRT", False, "host"),
    ],
)  # fmt: skip
def test_each_frameworks_out_of_memory_error_is_recognised(text, on_gpu, where):
    found = batch_trial.out_of_memory(text, on_gpu)
    assert found is not None and found[1] == where


def test_other_errors_are_not_taken_for_out_of_memory():
    for text in (
        "builtins.ValueError: Input 0 of layer dense is incompatible with the layer",
        "embryo_bench.errors.ConfigError: gpus 1, but Keras on jax sees 0 GPU(s) (cpu)",
        "builtins.RuntimeError: CUDA error: an illegal memory access was encountered",
    ):
        assert batch_trial.out_of_memory(text, True) is None


def _run_cli(capsys, *argv) -> tuple[int, str]:
    code = cli.main(["batch-limit", *argv])
    return code, capsys.readouterr().err.strip()


def test_bad_settings_are_refused_in_one_line_before_anything_is_written(tmp_path, capsys):
    spec = _spec(MLP).replace(backend="jax")
    run_json = tmp_path / "run.json"
    spec.write(run_json)
    out = tmp_path / "out"
    cases = [
        (["--most", "16"], "--most 16: below --start 32"),
        (["--most", str(2**40)], f"--most {2**40}: the synthetic data of a trial"),
        (["--start", "0"], "--start 0: expected at least 1"),
        (["--resolution", "0"], "--resolution 0.0: expected a fraction"),
        (["--memory-limit", "lots"], "--memory-limit: size 'lots'"),
        (["--memory-limit", "100m"], "--memory-limit 100 MiB: too little"),
        (["--memory-limit", "1g", "--most", "2000000"], "would not fit in the --memory-limit"),
        # NaN passed "budget <= 0" (a search with no time limit, or an error at the first
        # trial); a NaN memory size ended in int()'s traceback.
        (["--budget", "nan"], "--budget nan: expected seconds > 0"),
        (["--memory-limit", "nang"], "--memory-limit: size 'nang'"),
        # Not one sample's data over the steps fits: the cap fell back to 2^20 and every
        # trial ran out of memory ("no batch fits"), blaming the model.
        (["--memory-limit", "1g", "--steps", str(10**9)], f"--steps {10**9}: one sample's"),
    ]
    for extra, message in cases:
        code, err = _run_cli(capsys, "--spec", str(run_json), "--out", str(out), *extra)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("embryo-bench: error: ") and message in err, err
        assert not out.exists()
    bad = spec.to_dict() | {"backend": "mxnet"}
    run_json.write_text(json.dumps(bad))
    code, err = _run_cli(capsys, "--spec", str(run_json), "--out", str(out))
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{run_json}: backend 'mxnet': expected one of" in err
    run_json.write_text("{")
    code, err = _run_cli(capsys, "--spec", str(run_json), "--out", str(out))
    assert code == 2 and f"{run_json}: not valid JSON" in err and not out.exists()
    run_json.unlink()
    run_json.mkdir()  # an IsADirectoryError's traceback
    code, err = _run_cli(capsys, "--spec", str(run_json), "--out", str(out))
    assert code == 2 and f"{run_json}: a folder; expected a JSON file" in err, err


def test_an_out_that_is_a_file_is_refused_before_any_trial(tmp_path, capsys):
    """A file at --out (a FileExistsError's traceback, after the settings were read) is
    refused before the first trial and kept."""
    spec = _spec(MLP).replace(backend="jax")
    spec.write(tmp_path / "run.json")
    (tmp_path / "out").write_text("mine")
    code, err = _run_cli(capsys, "--spec", str(tmp_path / "run.json"), "--out",
                         str(tmp_path / "out"))  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err == f"embryo-bench: error: --out {tmp_path / 'out'}: a file; expected a folder"
    assert (tmp_path / "out").read_text() == "mine"


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_run_whose_every_trial_fails_is_refused_and_no_result_is_written(tmp_path, capsys):
    """A GPU run where the framework sees no GPU (this machine's JAX): its first trial fails
    with the trainer's own line, and the search halves down to batch 1 failing alike; a
    setting to fix, not a limit measured, so no batch_limit.json says "largest: None"."""
    spec = _spec(MLP).replace(backend="jax", gpus=1)
    spec.write(tmp_path / "run.json")
    out = tmp_path / "out"
    code, err = _run_cli(capsys, "--spec", str(tmp_path / "run.json"), "--out", str(out),
                         "--start", "2", "--steps", "1", "--epochs", "2")  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "no trial could train:" in err and "gpus 1, but Keras on jax sees 0 GPU(s)" in err
    assert not any(out.glob("batch_limit.*"))


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_search_on_the_cpu_finds_where_a_memory_limit_stops_it(tmp_path, capsys):
    """mnist-mlp on JAX under RLIMIT_DATA 1050 MiB: batch 16,384 trains (about 850 MiB
    resident), 32,768 asks XLA for 675 MiB more and fails with JAX's RESOURCE_EXHAUSTED;
    one step an epoch, two epochs, the search resolved at once (resolution 1)."""
    spec = _spec(MLP).replace(backend="jax")
    run_json = tmp_path / "run.json"
    spec.write(run_json)
    out = tmp_path / "out"
    code, err = _run_cli(
        capsys, "--spec", str(run_json), "--out", str(out), "--start", "16384",
        "--resolution", "1", "--memory-limit", "1050m", "--steps", "1", "--epochs", "2",
    )  # fmt: skip
    assert code == 0, err[-3000:]
    trials = pd.read_csv(out / bl.CSV_NAME)
    assert list(trials.columns) == bl.TRIAL_COLUMNS
    fitting = trials[trials["outcome"] == bl.FITS]
    oom = trials[trials["outcome"] == bl.OUT_OF_MEMORY_OUTCOME]
    assert len(fitting) and len(oom), trials.to_string()
    assert (fitting["images_per_s"] > 0).all() and fitting["device_memory_peak_mib"].isna().all()
    assert (fitting["rss_peak_mib"] > 100).all()
    assert oom["error"].str.contains("RESOURCE_EXHAUSTED|Out of memory").all()
    assert (oom["memory"] == "host").all() and (trials["outcome"] != bl.ERROR).all()
    result = json.loads((out / bl.JSON_NAME).read_text())
    assert result["largest_batch_size"] == fitting["batch_size"].max()
    assert result["largest_batch_size"] < oom["batch_size"].min()
    assert result["stopped"]["reason"] == bl.STOP_OOM and "SYNTHETIC" in result["data"]
    assert result["memory_limit"]["rlimit"] == "RLIMIT_DATA"
    assert result["devices"]["backend"]["platform"] == "cpu"
    assert result["run"]["parameters"] == 669_706  # the catalog's mnist-mlp, as trained
    assert (out / bl.PNG_NAME).stat().st_size > 10_000
