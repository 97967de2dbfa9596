"""A failing figures job never costs the existing figures. Snakemake
removes a job's outputs before it runs it and after it fails, so what the figures will read
that no job writes is checked when the plan is made (a garbled metrics.json of one run, a
garbled or missing baseline: refused before any job, the figures untouched), and the last
complete set is kept in figures.previous, named when a figures job fails on what no plan can
see. Each test works on a copy of the shared tiny run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import copy_run
from workflow_helpers import job_counts, snakemake

from embryo_bench.cli import main
from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan

RUN = "out/train/host-1cpu/repeat-1"


#: The mark Snakemake leaves in a folder it was given as an output (the figures job's
#: utilisation folder): Snakemake's, not a figure, and never in a kept set.
FOLDER_MARK = ".snakemake_timestamp"


def _digests(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder`` but Snakemake's
    :data:`FOLDER_MARK` ({} when it is missing)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != FOLDER_MARK
    }


@pytest.fixture
def work(tiny_run, tmp_path) -> tuple[Path, dict]:
    """A private copy of the tiny run (nothing to do until a setting changes) and its config."""
    src, config, _ = tiny_run
    return copy_run(src, tmp_path / "w"), config


def _snakemake(work: Path, config: dict, *args: str):
    return snakemake(work, config, *args, check=False)


def _garble_figure_one(out: Path) -> None:
    """Point figure 1's frame (the first selected) at a garbled PNG: a failure of the figures
    job that no plan sees, without touching the shared run's database or the times Snakemake
    compares (the selection keeps its time: no preprocessing job reruns)."""
    selection = out / "select" / "selected.csv"
    stat = selection.stat()
    table = pd.read_csv(selection)
    (out / "garbled.png").write_bytes(b"not a png")
    table.loc[0, "path"] = str(out / "garbled.png")
    table.to_csv(selection, index=False)
    os.utime(selection, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.slow
def test_a_garbled_metrics_json_is_refused_before_any_job_naming_the_run(work, monkeypatch):
    work, config = work
    before = _digests(work / "out" / "figures")
    assert len(before) == 36
    (work / RUN / "metrics.json").write_text('{"tar')
    proc = _snakemake(work, config)
    assert proc.returncode == 1
    line = (
        f"{RUN}/metrics.json: not valid JSON (Unterminated string starting at: line 1 column 2 "
        f"(char 1)); delete {RUN} to retrain that run"
    )
    assert line in proc.stderr and "Traceback" not in proc.stderr
    assert "Job stats" not in proc.stdout + proc.stderr  # no job ran
    assert _digests(work / "out" / "figures") == before
    # check-config makes the same check (the outdir is relative: from the work folder).
    monkeypatch.chdir(work)
    assert main(["check-config", "config.yaml"]) == 2
    # A cluster job's own parse does not read the runs again (the workflow that submitted it did).
    Plan.from_config(config, hardware_check="none", on_this_machine=False)
    # A run with a file missing is trained again before the figures read it: not checked.
    (work / RUN / "history.csv").unlink()
    Plan.from_config(config, hardware_check="none")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, damage, message",
    [
        ("history.csv", b"", "history.csv: not a readable CSV table (No columns to parse"),
        ("history.csv", b"a,b\n1,2\n", "history.csv lacks the columns ['epoch', 'test_accuracy']"),
        ("run.json", b"[1, 2]", "run.json: expected a JSON object, found list"),
        ("telemetry.csv", b"\x00\xff\xfe", "telemetry.csv: not a readable CSV table ('utf-8'"),
        ("metrics.json", b'{"format": 7}', "metrics.json: format 7 is newer than"),
    ],
)
def test_each_file_the_figures_read_of_a_finished_run_is_checked(
    work, monkeypatch, name, damage, message
):
    work, config = work
    (work / RUN / name).write_bytes(damage)
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError) as exc:
        Plan.from_config(config, hardware_check="none")
    assert message in str(exc.value) and str(exc.value).endswith(
        f"; delete {RUN} to retrain that run"
    )


@pytest.mark.slow
def test_a_garbled_baseline_stops_the_workflow_with_the_figures_untouched(work):
    work, config = work
    before = _digests(work / "out" / "figures")
    (work / "base.json").write_text('{"changes": [')
    proc = _snakemake(work, {**config, "stability": {"baseline": "base.json"}})
    assert proc.returncode == 1
    assert "stability.baseline base.json: not valid JSON (Expecting value: line 1 column 14" in (
        proc.stderr
    )
    assert _digests(work / "out" / "figures") == before


@pytest.mark.slow
def test_a_figures_job_that_fails_on_what_no_plan_sees_names_the_kept_set(work):
    """The figures job fails (its figure 1 frame is garbled; the plan does not read frames)
    after a price edit: Snakemake removes the figures; the last complete set is in
    figures.previous, byte for byte, the message says so, and the next run makes them."""
    work, config = work
    out = work / "out"
    before = _digests(out / "figures")
    assert _digests(out / "figures.previous") == before  # kept by the job that made them
    _garble_figure_one(out)
    config = yaml.safe_load(yaml.safe_dump(config))
    config["targets"][0]["hourly_usd"] = 1.23  # reruns the spec and the figures, nothing else
    proc = _snakemake(work, config)
    assert proc.returncode == 1
    assert job_counts(proc.stdout + proc.stderr) == {"figures_spec": 1, "figures": 1, "all": 1}
    assert "garbled.png: corrupt or truncated PNG" in (out / "logs" / "figures.log").read_text()
    assert (
        "figures: 36 files of the last complete figures are missing from out/figures; that set "
        "is kept in out/figures.previous, and the next run makes the figures again"
    ) in proc.stderr
    assert _digests(out / "figures") == {}
    assert _digests(out / "figures.previous") == before
    assert job_counts(_snakemake(work, config, "-n").stdout) == {"figures": 1, "all": 1}


@pytest.mark.slow
def test_a_complete_set_made_before_sets_were_kept_is_kept_when_jobs_run(work):
    """onstart keeps a complete figures/ when nothing is kept yet; dry runs and --report
    run no handler and leave the outdir alone."""
    work, config = work
    out = work / "out"
    before = _digests(out / "figures")
    for path in sorted((out / "figures.previous").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (out / "figures.previous").rmdir()
    config = yaml.safe_load(yaml.safe_dump(config))
    config["targets"][0]["hourly_usd"] = 2.5
    assert _snakemake(work, config, "-n").returncode == 0
    assert _snakemake(work, config, "--report", str(work / "report.zip")).returncode == 0
    assert not (out / "figures.previous").exists()
    _garble_figure_one(out)
    assert _snakemake(work, config).returncode == 1
    assert _digests(out / "figures.previous") == before


def test_a_kept_set_is_the_last_complete_one_and_costs_no_copy(tmp_path):
    from embryo_bench.io import kept_missing, kept_path, staged_folder

    out = tmp_path / "figures"
    with staged_folder(out, keep=kept_path(out)) as staging:
        (staging / "a.png").write_text("1")
        (staging / "sub").mkdir()
        (staging / "sub" / "b.png").write_text("1")
    with pytest.raises(RuntimeError), staged_folder(out, keep=kept_path(out)) as staging:
        (staging / "a.png").write_text("half")
        raise RuntimeError("a figure failed")
    assert _digests(tmp_path / "figures.previous") == _digests(out)  # the failure kept nothing
    with staged_folder(out, keep=kept_path(out)) as staging:
        (staging / "a.png").write_text("2")
    # The last complete set only (b.png was not part of it), as hard links of figures/'s.
    assert sorted(_digests(tmp_path / "figures.previous")) == ["a.png"]
    assert (out / "a.png").stat().st_ino == (tmp_path / "figures.previous" / "a.png").stat().st_ino
    (out / "a.png").unlink()
    assert kept_missing(out) == [str(out / "a.png")]
    assert (tmp_path / "figures.previous" / "a.png").read_text() == "2"
