"""benchmarks/gpu_session.py, the prepared script of the lent GPU machine: its dress rehearsal
on this CPU (every part at tiny sizes, GPU targets as CPU ones), what its records hold, that
``merge:`` reads them beside this machine's runs, and that unpacking refuses what could land
outside the folder. The rehearsal is .ci/run's step gpu-session (5-7 min on 2 cores)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest
from verified_records import Verified
from workflow_helpers import REPO, load_benchmark, snakemake

session = load_benchmark("gpu_session")


def test_the_rehearsal_turns_every_gpu_target_into_a_cpu_one_at_tiny_sizes(tmp_path):
    config, _ = session_config(["config/gpu.yaml", "config/gpu-workloads.yaml"])
    overlay = session.tiny_overlay(config, True, True, tmp_path / "out", True)
    names = [t["name"] for t in overlay["targets"]]
    assert names == ["cpu-jax"] and overlay["compare"] == {"base": "cpu-jax"}
    assert all(t["gpus"] == 0 and "CPU stand-in" in t["description"] for t in overlay["targets"])
    kept = {w["name"] for w in overlay["workloads"]}
    assert kept == set(session.TINY_WORKLOADS)
    assert all(w["train_samples"] == 64 for w in overlay["workloads"])
    paper, _ = session_config(["config/gpu.yaml"])
    plain = session.tiny_overlay(paper, False, False, tmp_path / "out", False)
    assert plain == {"outdir": str(tmp_path / "out")}  # the measurement itself: as configured


def session_config(files):
    from embryo_bench.vocabulary.config import read_config_files

    return read_config_files([str(REPO / f) for f in files])


def test_the_gpu_configurations_ask_for_the_papers_size_and_every_workload():
    from embryo_bench.published import paper
    from embryo_bench.vocabulary.config import load_config
    from embryo_bench.workloads.catalog import load_catalog

    config = load_config(session_config(["config/gpu.yaml"])[0])
    syn = config["dataset"]["synthetic"]
    assert (syn["total_frames"], syn["three_cell_frames"]) == (
        paper.LABELLED_FRAMES,
        paper.RAREST_CLASS_FRAMES,
    )
    assert 360 // config["preprocess"]["rotation_step"] * paper.BALANCED_FRAMES == paper.SAMPLES
    assert (config["train"]["epochs"], config["train"]["batch_size"]) == (20, 480)
    targets = {t["name"]: t for t in config["targets"]}
    assert all(t["gpus"] == 1 and t["runner"] == "host" for t in targets.values())
    assert {(t["backend"], t["precision"]) for t in targets.values()} == {
        (b, p) for b in ("jax", "torch") for p in ("float32", "mixed_bfloat16")
    }
    assert sorted(t["cpus"] for t in targets.values() if t["backend"] == "jax") == [1, 8, 8]
    workloads = load_config(session_config(["config/gpu.yaml", "config/gpu-workloads.yaml"])[0])[
        "workloads"
    ]
    catalog = set(load_catalog()) - {"paper"}
    assert {w.get("catalog", w["name"]) for w in workloads} == catalog


def _tar_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "records-x.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


@pytest.mark.parametrize(
    "name, kind",
    [("../escape.json", tarfile.REGTYPE), ("/etc/x.json", tarfile.REGTYPE),
     ("gpu/link.json", tarfile.SYMTYPE), ("gpu/hard.json", tarfile.LNKTYPE)],
)  # fmt: skip
def test_unpacking_refuses_members_that_could_land_outside_the_folder(tmp_path, name, kind):
    member = tarfile.TarInfo(name)
    member.type = kind
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        member.linkname = "/etc/passwd"
    into = tmp_path / "into"
    records = _tar_with(tmp_path, member)
    assert _unpack_refused(records, into) == f"{records}: refusing member {name!r} (outside " \
        "the folder or not a file)"  # fmt: skip
    assert not (tmp_path / "escape.json").exists()
    assert not any(into.rglob("*.json")) if into.exists() else True


def _unpack_refused(records: Path, into: Path) -> str:
    """``unpack records --into into`` in a process of its own: exit status 2 and one line
    ``gpu_session: error: <what>``; returns what."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_session.py"), "unpack", str(records),
         "--into", str(into)], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("gpu_session: error: "), line
    return line.removeprefix("gpu_session: error: ")


def _inner(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.size = len(data) if kind == tarfile.REGTYPE else 0
    return member


@pytest.mark.parametrize(
    "case",
    ["nested escape", "nested .tar.gz a folder", "nested .tar.gz not gzip", "not a tar",
     "missing", "into a file", "through a link in into"],
)  # fmt: skip
def test_unpacking_a_damaged_or_hostile_archive_is_one_line(tmp_path, case):
    """A refused member exited 1 through SystemExit; a damaged archive, a member named
    .tar.gz that is a folder or not gzip, a missing file or --into a file ended in a
    traceback (an AssertionError, tarfile's ReadError, FileNotFoundError, FileExistsError)."""
    records, into = tmp_path / "records-x.tar.gz", tmp_path / "into"
    if case == "nested escape":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as inner:
            inner.addfile(_inner("../../escape.json"), io.BytesIO(b"x"))
        with tarfile.open(records, "w:gz") as tar:
            tar.addfile(_inner("gpu.tar.gz", data=buf.getvalue()), io.BytesIO(buf.getvalue()))
        says = "records-x.tar.gz: member gpu.tar.gz: refusing member '../../escape.json'"
    elif case == "nested .tar.gz a folder":
        with tarfile.open(records, "w:gz") as tar:
            tar.addfile(_inner("gpu.tar.gz", tarfile.DIRTYPE))
        says = "records-x.tar.gz: member gpu.tar.gz is not a file; expected a .tar.gz of records"
    elif case == "nested .tar.gz not gzip":
        with tarfile.open(records, "w:gz") as tar:
            tar.addfile(_inner("gpu.tar.gz", data=b"garbage"), io.BytesIO(b"garbage"))
        says = "records-x.tar.gz: member gpu.tar.gz: not a readable .tar.gz archive ("
    elif case == "not a tar":
        records.write_bytes(b"garbage" * 20)
        says = "records-x.tar.gz: not a readable tar archive ("
    elif case == "missing":
        says = "records-x.tar.gz: not found"
    elif case == "through a link in into":
        with tarfile.open(records, "w:gz") as tar:
            tar.addfile(_inner("a.json", data=b"{}"), io.BytesIO(b"{}"))
        into.mkdir()
        (tmp_path / "outside.json").write_text("mine")
        (into / "a.json").symlink_to(tmp_path / "outside.json")
        says = "records-x.tar.gz: refusing member 'a.json' ('a.json' would be extracted to "
    else:
        with tarfile.open(records, "w:gz") as tar:
            tar.addfile(_inner("a.json", data=b"{}"), io.BytesIO(b"{}"))
        into.write_text("mine")
        says = f"--into {into}: a file; expected a folder"
    assert says in _unpack_refused(records, into)
    assert not (tmp_path / "escape.json").exists()
    if case == "into a file":
        assert into.read_text() == "mine"
    if case == "through a link in into":
        assert (tmp_path / "outside.json").read_text() == "mine"


def test_packing_keeps_the_records_and_leaves_out_data_models_and_old_figures(tmp_path):
    results = tmp_path / "gpu"
    files = {
        "train/t/repeat-1/metrics.json": "{}",
        "train/t/repeat-1/model.keras": "weights",
        "augment/shard-0.npz": "images",
        "figures/summary_table.csv": "a,b",
        "figures.previous/summary_table.csv": "old",
        "figures-spec.json": "{}",
        "logs/train.log": "line",
    }
    for rel, text in files.items():
        (results / rel).parent.mkdir(parents=True, exist_ok=True)
        (results / rel).write_text(text)
    members = session.pack(results, tmp_path / "p.tar.gz")
    assert sorted(members) == [
        "figures-spec.json",
        "figures/summary_table.csv",
        "logs/train.log",
        "train/t/repeat-1/metrics.json",
    ]


def test_no_gpu_without_the_rehearsals_cpu_flag_stops_before_any_part(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_session.py"), "run", "--out", str(out),
         "--results", str(tmp_path / "results"), "--parts", "paper"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("no GPU to measure: NVML []")
    assert not list(out.glob("records-*"))  # nothing that looks like a measurement


#: The last rehearsal that passed: the sha256 of :data:`REHEARSAL_FILES` it ran, when, where.
REHEARSAL_RECORD = Path(__file__).with_name("gpu-session-verified.json")
#: What the rehearsal tries before a GPU session: the script, the peers it runs and the GPU
#: configurations. The workflow, trainer and backends it drives are the
#: workflows and trainings steps' every run.
REHEARSAL_FILES = (
    "benchmarks/gpu_session.py",
    "benchmarks/bench_peers.py",
    "config/gpu.yaml",
    "config/gpu-workloads.yaml",
    "config/gpu-here.yaml",
)


#: What a passing rehearsal verified.
VERIFIED = Verified(
    REHEARSAL_RECORD, files=REHEARSAL_FILES, setting=("EMBRYO_BENCH_GPU_SESSION", "run")
)


def rehearsal_identity(repo: Path = REPO) -> dict:
    """The sha256 of each of :data:`REHEARSAL_FILES` in ``repo`` (``files``)."""
    return VERIFIED.identity(repo)


def rehearsal_reason(repo: Path = REPO, record: Path = REHEARSAL_RECORD) -> str | None:
    """Why the rehearsal runs (None: its files are as :data:`REHEARSAL_RECORD` verified):
    EMBRYO_BENCH_GPU_SESSION=run, no record, or which files changed since it."""
    return VERIFIED.reason(repo, record)


def test_the_rehearsal_runs_when_its_files_change(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBRYO_BENCH_GPU_SESSION", raising=False)
    for name in REHEARSAL_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    record = tmp_path / "record.json"
    assert rehearsal_reason(tmp_path, record) == "no record.json"
    record.write_text(json.dumps(rehearsal_identity(tmp_path)))
    assert rehearsal_reason(tmp_path, record) is None
    (tmp_path / "config/gpu.yaml").write_text("# an edit\n")
    assert rehearsal_reason(tmp_path, record) == "changed since record.json: config/gpu.yaml"
    monkeypatch.setenv("EMBRYO_BENCH_GPU_SESSION", "run")
    assert rehearsal_reason(tmp_path, record) == "EMBRYO_BENCH_GPU_SESSION=run"


@pytest.mark.ci_step("gpu-session", "the GPU machine's whole script at tiny sizes (5-13 min)")
def test_the_rehearsal_runs_every_part_and_its_paper_runs_merge_beside_ours(tmp_path):
    """Only where :func:`rehearsal_reason` gives a reason (its files changed since the last
    rehearsal that passed): 13 min on the 2-core Zen 3 VM beside the studies' short forms, a
    time CI's 90 minutes do not have on every commit. A passing rehearsal rewrites
    :data:`REHEARSAL_RECORD` (commit it with the change it verified)."""
    why = rehearsal_reason()
    if why is None:
        pytest.skip(
            f"the GPU session's script and configurations are as rehearsed "
            f"{VERIFIED.as_verified()}: not rehearsed again (EMBRYO_BENCH_GPU_SESSION=run "
            "rehearses anyway)"
        )
    print(f"gpu-session: rehearsed ({why})", file=sys.stderr)
    started = time.monotonic()
    # A budget the parts fit in on a slow CPU with the studies' short forms beside them
    # (.ci/run runs both steps side by side): 17 min 56 s beside other steps on 2026-11-27.
    out, results = tmp_path / "out", tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_session.py"), "run", "--tiny", "--cpu",
         "--out", str(out), "--results", str(results), "--budget", "2400",
         "--parts", "paper,sweep,workloads,peers"],
        capture_output=True, text=True, timeout=3000,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tag = "paper-sweep-workloads-peers"
    record = json.loads((out / f"session-{tag}.json").read_text())
    assert [r["status"] for r in record["ran"]] == [0] * len(record["ran"]) and not record[
        "left_out"
    ]
    assert {r["part"] for r in record["ran"]} >= {"paper", "workloads", "peers"}
    bundle = out / f"records-{tag}.tar.gz"
    assert bundle.stat().st_size < session.MOST_BYTES
    into = tmp_path / "records"
    assert session.main(["unpack", str(bundle), "--into", str(into)]) == 0
    bf16 = json.loads((into / "gpu/train/cpu-jax-bf16/repeat-1/metrics.json").read_text())
    assert bf16["precision"] == "mixed_bfloat16" and bf16["gpus"] == 0
    assert bf16["provenance"]["devices"]["backend"]["platform"] == "cpu"
    assert not list(into.rglob("*.keras")) and not list(into.rglob("*.npz"))
    kinds = {p.parent.parent.parent.name for p in into.glob("gpu-workloads/workloads/*/train/*/*")}
    assert kinds >= {"mnist-mlp", "catsdogs-cnn-files"}
    assert list(into.glob("batch-limit/*/batch_limit.csv"))
    assert (into / "peers" / "peers.json").is_file()
    # This machine's run beside the merged ones: the figures read both.
    overlay = results / "session-work" / "overlay-paper.yaml"
    config, _ = session_config(["config/gpu.yaml", str(overlay)])
    config |= {
        "outdir": str(tmp_path / "here"),
        "merge": [str(into / "gpu")],
        "compare": {"base": "here-1cpu"},
        "targets": [{"name": "here-1cpu", "runner": "host", "cpus": 1}],
    }
    snakemake(tmp_path, config)
    table = pd.read_csv(tmp_path / "here/figures/results_table.csv")
    merged = {t.split("@")[0] for t in table["target"] if "@" in t}
    assert merged == {"cpu-jax", "cpu-jax-1cpu", "cpu-jax-bf16", "cpu-torch", "cpu-torch-bf16"}
    assert "here-1cpu" in set(table["target"])
    assert set(table["precision"]) == {"float32", "mixed_bfloat16"}
    VERIFIED.write(time.monotonic() - started)
