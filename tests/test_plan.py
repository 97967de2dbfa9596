"""The plan: a configuration resolved into targets, runs and run specs without Snakemake -
schema defaults applied once, derived defaults, the hardware policy, sweeps, run.json, and
where the data comes from."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from workflow_helpers import layered_base

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.planning.plan import Plan
from embryo_bench.planning.schedule import williams_rows
from embryo_bench.runners.docker_api import Daemon
from embryo_bench.vocabulary.config import load_config, load_schema
from embryo_bench.vocabulary.spec import Preprocessing, RunSpec

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
PAPER = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
OFFLINE_NAMES = [t["name"] for t in OFFLINE["targets"]]


def everything_runs(target):
    return None


def plan(config=OFFLINE, probe=everything_runs) -> Plan:
    return Plan.from_config(copy.deepcopy(config), probe=probe)


def test_schema_defaults_are_filled_in_once_and_the_input_is_not_changed():
    raw = copy.deepcopy(OFFLINE)
    config = load_config(raw)
    assert raw == OFFLINE  # a new dict; the caller's is untouched
    docker = next(t for t in config["targets"] if t["runner"] == "docker")
    assert (docker["backend"], docker["strategy"], docker["gpus"]) == ("tensorflow", "none", 0)
    assert (docker["shm_size"], docker["runtime_min"]) == ("1g", 120)
    assert config["hardware_check"] == "local" and config["dataset"]["retries"] == 5
    paper = load_config(PAPER)
    assert paper["containers"]["tag_prefix"] == "embryo-bench"  # nested in an optional object
    assert paper["sweeps"] == [] and paper["cost"]["base_target"] == "cloud-1gpu-1vcpu"
    assert load_config({**PAPER, "cost": {}})["cost"] == {"base_target": ""}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("targets", 0, "cpus"), 0, "targets[0].cpus: 0 is less than the minimum of 1"),
        (("train", "batch_size"), "big", "train.batch_size: 'big' is not of type 'integer'"),
        (("split", "test_remainder"), 5, "split.test_remainder (5) must be below"),
        (("targets", 1, "name"), "host-1cpu", "targets: name 'host-1cpu' is used twice"),
        # 36,000 rotations: augment once asked for 5.49 GiB
        (("preprocess", "rotation_step"), 0.01,
         "preprocess.rotation_step: 0.01 is less than the minimum of 1"),
    ],
)  # fmt: skip
def test_bad_settings_are_named(path, value, message):
    config = copy.deepcopy(OFFLINE)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        load_config(config)
    assert message in str(err.value)


def test_derived_defaults_are_resolved_in_one_place():
    p = plan()
    host, docker = p.targets["host-1cpu"], p.targets["docker-1cpu"]
    assert host.threads == host.cpus == 1  # threads default to cpus
    assert host.memory == "8g" and docker.memory == "3g"  # the schema's host default; its own
    assert host.batch_size == OFFLINE["train"]["batch_size"] and host.repeats == 1
    assert host.replicas == 1 and host.docker_host == "" and host.gpu_model == ""


def test_runs_and_their_specs():
    p = plan()
    main = [n for n, t in p.targets.items() if t.sweep is None]
    assert main == ["host-1cpu", "host-1cpu-jax", "docker-1cpu", "host-2cpu"]
    assert p.workload_runs("paper")[:3] == [
        ("host-1cpu", 1),
        ("host-1cpu-jax", 1),
        ("docker-1cpu", 1),
    ]
    assert p.compare_base == "host-1cpu"  # cost.base_target, as compare.base is not set
    assert len(p.workload_runs("paper")) == 4 + 4  # and the 2 x 2 sweep points
    spec = p.spec("docker-1cpu", 1)
    assert spec.runner == "docker" and spec.container.memory == "3g"
    assert spec.container.image == "cpu" and spec.container.shm_size == "1g"
    assert spec.preprocessing == Preprocessing(
        frame_size=96,
        crop_fraction=0.6666666667,
        invert_centre=128,
        rotation_step=18.0,
        image_size=64,
    )
    assert p.spec("host-1cpu", 1).container is None
    point = p.spec("host-2cpu.bs120-t1", 1)
    assert (point.batch_size, point.threads, point.cpus) == (120, 1, 2)
    assert point.sweep == {"base": "host-2cpu", "batch_size": 120, "threads": 1}
    repeats = {**OFFLINE, "train": {**OFFLINE["train"], "repeats": 3, "seed": 10}}
    assert [plan(repeats).spec("host-1cpu", k).seed for k in (1, 2, 3)] == [10, 11, 12]


def test_run_json_round_trip_and_strict_reading(tmp_path):
    spec = plan().spec("docker-1cpu", 1)
    spec.write(tmp_path / "run.json")
    assert RunSpec.read(tmp_path / "run.json") == spec
    assert json.loads(spec.to_json()) == json.loads((tmp_path / "run.json").read_text())
    d = spec.to_dict()
    with pytest.raises(ConfigError, match=r"x: unknown keys \['cores'\]"):
        RunSpec.from_dict({**d, "cores": 2}, "x")
    with pytest.raises(ConfigError, match=r"x: missing keys \['epochs'\]"):
        RunSpec.from_dict({k: v for k, v in d.items() if k != "epochs"}, "x")
    with pytest.raises(ConfigError, match=r"x: missing keys \['crop_fraction', .*in preproc"):
        RunSpec.from_dict({**d, "preprocessing": {"frame_size": 96}}, "x")
    with pytest.raises(ConfigError, match="a docker run needs a container"):
        RunSpec.from_dict({**d, "container": None}, "x")
    with pytest.raises(ConfigError, match=r"x: unknown keys \['gpu'\] in container"):
        RunSpec.from_dict({**d, "container": {"gpu": 1}}, "x")


def test_run_and_metrics_files_carry_a_format_and_newer_ones_are_refused(tmp_path):
    """Merge reads folders written by other checkouts."""
    from embryo_bench.reporting.runs import load_runs
    from embryo_bench.vocabulary.layout import METRICS_FORMAT, RUN_SPEC_FORMAT

    spec = plan().spec("host-1cpu", 1)
    d = spec.to_dict()
    # The paper's runs are written as format 1 (as before workloads: not run again); 2 is
    # a run of another workload.
    assert d["format"] == 1 and RUN_SPEC_FORMAT == 2
    older = {k: v for k, v in d.items() if k != "format"}  # before versions were written
    assert RunSpec.from_dict(older, "x") == spec
    with pytest.raises(DataError, match="x: format 3 is newer than this embryo-bench reads"):
        RunSpec.from_dict({**d, "format": 3}, "x")
    with pytest.raises(DataError, match="x: format 'one' is not a version number"):
        RunSpec.from_dict({**d, "format": "one"}, "x")
    run = tmp_path / "run"
    run.mkdir()
    spec.write(run / "run.json")
    (run / "history.csv").write_text("epoch\n1\n")
    (run / "metrics.json").write_text(json.dumps({"target": "host-1cpu"}))
    assert load_runs([str(run)])[0].metrics == {"target": "host-1cpu"}  # version 0: read
    (run / "metrics.json").write_text(json.dumps({"format": METRICS_FORMAT + 1}))
    with pytest.raises(DataError, match=f"{run}/metrics.json: format 2 is newer than"):
        load_runs([str(run)])


def test_a_price_edit_changes_no_run_spec_but_a_training_setting_does():
    """Prices are report fields: run.json (what a training job depends on) does not hold
    them, so a price edit reruns the figures only."""
    base = plan()
    priced = copy.deepcopy(OFFLINE)
    priced["targets"][0]["hourly_usd"] = 9.99
    repriced = plan(priced)
    assert repriced.spec("host-1cpu", 1) == base.spec("host-1cpu", 1)
    assert repriced.report_targets()["host-1cpu"]["hourly_usd"] == 9.99
    faster = copy.deepcopy(OFFLINE)
    faster["train"]["learning_rate"] = 1e-3
    assert plan(faster).spec("host-1cpu", 1) != base.spec("host-1cpu", 1)


def test_hardware_policy_skip_fail_and_nothing_left():
    def no_docker(target):
        return "no Docker daemon answers at x" if target.runner == "docker" else None

    p = plan(probe=no_docker)  # offline: on_missing_hardware skip
    assert "docker-1cpu" not in p.targets
    assert p.skipped == {"docker-1cpu": "no Docker daemon answers at x"}
    strict = {**OFFLINE, "on_missing_hardware": "fail"}
    with pytest.raises(ConfigError, match="target docker-1cpu: no Docker daemon answers at x; set"):
        plan(strict, probe=no_docker)
    with pytest.raises(ConfigError, match="no target can run on this host: host-1cpu: nope"):
        plan(probe=lambda t: "nope")
    # The base of a sweep skipped: the sweep names it.
    with pytest.raises(ConfigError, match=r"sweeps\[0\].target 'host-2cpu': no such target"):
        plan(probe=lambda t: "gone" if t.name == "host-2cpu" else None)


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("preprocess", "rotation_step", 7, "rotation_step 7: does not divide 360 (51 angles and "
         "a last gap of 3 degrees)"),
        ("preprocess", "rotation_step", 1.7, "rotation_step 1.7: does not divide 360"),
        ("preprocess", "crop_fraction", 0.05, "crop_fraction 0.05: a 5 px crop of 96 px frames"),
    ],
)  # fmt: skip
def test_preprocessing_that_makes_nonsense_is_refused(section, key, value, message):
    """No 10 degree gap after 51 angles, no 1x1 px crops."""
    bad = copy.deepcopy(OFFLINE)
    bad[section][key] = value
    with pytest.raises(ConfigError, match=re.escape(message)):
        plan(bad)
    fine = copy.deepcopy(OFFLINE)
    fine["preprocess"]["rotation_step"] = 1.5  # 240 angles: divides 360
    assert plan(fine).preprocessing.rotation_step == 1.5


@pytest.mark.parametrize(
    "address, problem",
    [
        ("tcp://", "no host"),
        ("tcp://127.0.0.1:notaport", "cannot be parsed (Port could not be cast"),
        ("tcp://[::1:2375", "cannot be parsed (Invalid IPv6 URL)"),
        ("ssh://", "no host"),
        ("unix://", "no socket path"),
    ],
)
def test_a_docker_host_that_is_not_an_address_is_named_at_plan_time(address, problem):
    """These were "valid" to check-config and reported later as "no Docker daemon
    answers" (ssh:// without a host quietly tried 127.0.0.1:22)."""
    config = copy.deepcopy(OFFLINE)
    config["targets"].append({"name": "vm", "runner": "docker", "cpus": 1, "docker_host": address})
    said = f"target vm: docker_host {address!r}" + (" " if "parsed" in problem else ": ")
    with pytest.raises(ConfigError, match=re.escape(said + problem)):
        plan(config)


def test_more_threads_than_cpus_is_refused_at_plan_time():
    """Threads beyond the pinned cores would share them, the probe too."""
    one_core = {**OFFLINE, "sweeps": [{"target": "host-1cpu", "threads": [1, 2]}]}
    with pytest.raises(ConfigError, match=r"sweeps\[0\]: threads 2 on target host-1cpu, which "
                       r"has cpus 1: the point's threads would share 1 pinned core"):  # fmt: skip
        plan(one_core)
    crowded = copy.deepcopy(OFFLINE)
    crowded["targets"][0]["threads"] = 4
    with pytest.raises(ConfigError, match="target host-1cpu: threads 4 > cpus 1: the run is"):
        plan(crowded)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"runner": "host", "backend": "jax", "strategy": "mirrored", "gpus": 1},
         "target gpu-1: strategy mirrored with backend jax: MirroredStrategy is TensorFlow's "
         "(tf.distribute); use backend: tensorflow, or strategy: none"),
        ({"runner": "docker", "image": "cpu", "gpus": 1},
         "target gpu-1: gpus 1 with image cpu, whose TensorFlow is a CPU build; use image: gpu"),
        ({"runner": "docker", "gpus": 2},  # the image's default is cpu
         "target gpu-1: gpus 2 with image cpu, whose TensorFlow is a CPU build; use image: gpu"),
    ],
)  # fmt: skip
def test_a_gpu_target_that_no_run_of_it_could_train_is_refused_at_plan_time(target, message):
    """Each passed check-config and every dry run; each of its runs then failed (the trainer
    refuses a strategy its backend lacks, and a GPU run its framework cannot see)."""
    config = copy.deepcopy(OFFLINE)
    config["targets"].append({"name": "gpu-1", "cpus": 1, **target})
    with pytest.raises(ConfigError) as err:
        plan(config)
    assert str(err.value) == message


def _rounds(repeats=3, **compare):
    config = {**OFFLINE, "sweeps": [], "train": {**OFFLINE["train"], "repeats": repeats}}
    return plan({**config, "compare": compare})


def test_repeats_run_as_alternating_rounds_and_each_waits_for_the_one_before():
    p = _rounds(order="alternate")
    a, b, c, d = OFFLINE_NAMES
    abcd = [(a, 1), (b, 1), (c, 1), (d, 1)]
    assert p.workload_runs("paper") == abcd + [(d, 2), (c, 2), (b, 2), (a, 2)] + [
        (t, 3) for t, _ in abcd
    ]
    assert p.previous_run(a, 1) is None
    assert p.previous_run(d, 2) == (d, 1, "paper") and p.previous_run(a, 3) == (a, 2, "paper")
    with pytest.raises(KeyError, match="no run host-1cpu repeat 4"):
        p.previous_run(a, 4)


def test_a_shuffled_order_is_fixed_by_its_seed_and_holds_every_run_once_per_round():
    one, same, other = (
        _rounds(8, order="shuffle", seed=s).workload_runs("paper") for s in (1, 1, 2)
    )
    assert one == same and one != other
    for k in range(1, 9):
        assert sorted(t for t, r in one if r == k) == sorted(OFFLINE_NAMES)
    firsts = {one[4 * k][0] for k in range(8)}
    assert len(firsts) > 1  # not the same target first in every round


@pytest.mark.parametrize("n", range(1, 8))
def test_a_williams_design_puts_every_target_in_every_position_and_after_every_other_alike(n):
    rows = williams_rows(n)
    assert len(rows) == (2 * n if n % 2 and n > 1 else n)
    assert all(sorted(row) == list(range(n)) for row in rows)
    positions = Counter((i, pos) for row in rows for pos, i in enumerate(row))
    assert set(positions.values()) == {len(rows) // n} and len(positions) == n * n
    follows = Counter(pair for row in rows for pair in zip(row[:-1], row[1:], strict=True))
    if n > 1:
        assert len(follows) == n * (n - 1) and len(set(follows.values())) == 1


@pytest.mark.parametrize("n", range(1, 8))
def test_every_n_rounds_of_a_williams_design_put_each_target_in_each_position_once(n):
    """For odd n the cycle is 2n rounds, but its first n rows already form a Latin square:
    at repeats = n (3 rounds of 3 targets) no target keeps the middle, as under alternate."""
    rows = williams_rows(n)
    assert rows[0] == list(range(n))  # round 1 in configuration order
    for start in range(0, len(rows), n):
        square = rows[start : start + n]
        assert all(sorted(r[pos] for r in square) == list(range(n)) for pos in range(n))


def test_the_default_order_is_balanced():
    """No order showed a position effect (docs/results.md); balanced is
    the default, so a middle target does not always run in the middle."""
    balanced, alternate = (
        _rounds(4, order="balanced").workload_runs("paper"),
        _rounds(4, order="alternate").workload_runs("paper"),
    )
    assert _rounds(4).workload_runs("paper") == balanced != alternate
    three = {**OFFLINE, "sweeps": [], "targets": OFFLINE["targets"][:3]}
    three["train"] = {**OFFLINE["train"], "repeats": 3}
    runs = plan({**three, "compare": {}}).workload_runs("paper")
    middles = [runs[3 * k + 1][0] for k in range(3)]
    assert sorted(middles) == sorted(t["name"] for t in OFFLINE["targets"][:3])


def test_a_balanced_order_cycles_the_rows_and_is_alternate_for_two_targets():
    p = _rounds(8, order="balanced")
    rows = williams_rows(4)
    for k in range(1, 9):
        assert [t for t, r in p.workload_runs("paper") if r == k] == [
            OFFLINE_NAMES[i] for i in rows[(k - 1) % 4]
        ]
    two = {**OFFLINE, "sweeps": [], "targets": OFFLINE["targets"][:2]}
    two["train"] = {**OFFLINE["train"], "repeats": 4}
    assert plan({**two, "compare": {"order": "balanced"}}).workload_runs("paper") == plan(
        {**two, "compare": {"order": "alternate"}}
    ).workload_runs("paper")


def test_the_compare_base_runs_in_every_round():
    assert _rounds(base="docker-1cpu").compare_base == "docker-1cpu"
    with pytest.raises(ConfigError, match="compare.base 'nope': no such target"):
        _rounds(base="nope")
    few = {**OFFLINE, "sweeps": [], "compare": {"base": "docker-1cpu"}}
    few["targets"] = [{**t, "repeats": 1} if t["name"] == "docker-1cpu" else t for t in
                      OFFLINE["targets"]]  # fmt: skip
    few["train"] = {**OFFLINE["train"], "repeats": 3}
    with pytest.raises(ConfigError, match="compare.base docker-1cpu: 1 repeats, but host-1cpu"):
        plan(few)
    # A skipped base: the next choice, said in a note.
    p = plan(
        {**OFFLINE, "sweeps": [], "compare": {"base": "docker-1cpu"}},
        probe=lambda t: "no daemon" if t.runner == "docker" else None,
    )
    assert p.compare_base == "host-1cpu"
    assert p.compare_note == (
        "compare.base docker-1cpu does not run here (skipped); comparing with host-1cpu"
    )


def test_cost_base_skipped_gives_a_note():
    p = plan(probe=lambda t: "gone" if t.name == "host-1cpu" else None, config={
        **OFFLINE, "sweeps": []})  # fmt: skip
    assert p.cost_base == "" and "base target host-1cpu does not run here" in p.cost_note


def test_where_the_data_comes_from(tmp_path):
    out = OFFLINE["outdir"]
    synthetic = plan()
    assert synthetic.index_inputs() == {"db": f"{out}/data/synthetic"}
    assert synthetic.index_flags() == ["--synthetic"] and synthetic.source_stamp() == ""
    db = {"kind": "mouse-embryo-tracking-db", "url": "http://h/x/Mou.zip", "frame_size": 48}
    download = plan({**OFFLINE, "dataset": db})
    assert download.download_path == download.archive == f"{out}/data/Mou.zip"
    assert download.index_inputs() == {"db": f"{out}/data/db", "info": f"{out}/data/download.json"}
    assert download.index_flags() == ["--download-info", f"{out}/data/download.json"]
    archive = plan({**OFFLINE, "dataset": {"kind": "local", "path": "m.zip", "frame_size": 48}})
    assert archive.archive == "m.zip" and archive.index_flags() == ["--checksum-of", "m.zip"]
    (tmp_path / "Train").mkdir()
    folder = {"kind": "imagefolder", "path": str(tmp_path), "frame_size": 28}
    images = plan({**OFFLINE, "dataset": folder})
    assert images.index_inputs() == {} and images.reads_in_place
    assert images.dataset_label == f"real images from {tmp_path}"
    stamp = images.source_stamp()
    (tmp_path / "Train" / "new.png").write_bytes(b"x")
    assert images.source_stamp() != stamp  # changed images rerun indexing


def test_images_and_their_inputs():
    p = plan()
    assert p.image_tag("cpu") == "embryo-bench/cpu:0.1.0"  # the package's version
    assert p.image_record("docker-1cpu") == [f"{OFFLINE['outdir']}/images/cpu.json"]
    assert p.image_record("host-1cpu") == []
    assert set(p.image_inputs("cpu")) == {"base", "wheelhouse"}  # offline builds both here


def test_a_target_on_another_daemon_needs_the_image_sent_there():
    config = copy.deepcopy(OFFLINE)
    config["targets"].append(
        {"name": "vm", "runner": "docker", "cpus": 1, "docker_host": "ssh://bench@gpu-box:22"}
    )
    p = plan(config)
    out = OFFLINE["outdir"]
    assert p.image_record("vm") == [f"{out}/images/cpu@ssh-bench-gpu-box-22.json"]
    assert p.image_record("docker-1cpu") == [f"{out}/images/cpu.json"]  # the local daemon
    assert p.remote_daemons == {"ssh-bench-gpu-box-22": Daemon("ssh://bench@gpu-box:22")}
    config["targets"].append(
        {"name": "vm2", "runner": "docker", "cpus": 1, "docker_host": "ssh://bench@gpu-box/22"}
    )
    with pytest.raises(ConfigError, match="same file key ssh-bench-gpu-box-22"):
        plan(config)  # at plan time, not when the property is first read


def test_check_config_makes_the_checks_the_workflow_makes_later(tmp_path, capsys):
    """A missing merge: folder and colliding docker_host keys were "valid"
    to check-config, and refused only when the workflow first read those settings."""
    from embryo_bench.cli import main

    config = copy.deepcopy(OFFLINE)
    config["merge"] = [str(tmp_path / "nowhere")]
    (tmp_path / "merge.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "merge.yaml")]) == 2
    assert f"merge: {tmp_path / 'nowhere'} is not a folder" in capsys.readouterr().err
    config = copy.deepcopy(OFFLINE)
    config["targets"] += [
        {"name": f"vm{k}", "runner": "docker", "cpus": 1, "docker_host": host}
        for k, host in enumerate(("ssh://b@box:22", "ssh://b@box/22"))
    ]
    (tmp_path / "hosts.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "hosts.yaml")]) == 2
    assert "have the same file key ssh-b-box-22" in capsys.readouterr().err


def test_paper_config_plans_every_system_when_hardware_allows():
    p = plan(PAPER)
    assert len(p.targets) == 7 and len(p.workload_runs("paper")) == 21  # 3 repeats each
    assert p.spec("cloud-2gpu-mirrored", 2).replicas == 2
    assert p.targets["laptop-2cpu"].memory_mib == 8192
    assert p.cost_base == "cloud-1gpu-1vcpu"


def test_schema_is_where_the_defaults_come_from():
    """Every static default the plan relies on is written in the schema (not in code)."""
    item = load_schema()["properties"]["targets"]["items"]["properties"]
    for key in ("image", "gpus", "backend", "strategy", "shm_size", "runtime_min"):
        assert "default" in item[key], key


@pytest.mark.parametrize(
    "text, where, problem",
    [
        ("outdir: x\ntrain:\n  epochs: 3\n   batch_size: 4\n", "line 4, column 14", "mapping"),
        ("outdir: x\ntrain: {epochs: [1, 2}\n", "line 2, column 22", "expected ','"),
        ("outdir: x\ntrain:\n\tepochs: 3\n", "line 3, column 1", "cannot start any token"),
        (
            "outdir: x\ntrain:\n  epochs: 3\n  epochs: 5\n",
            "line 4, column 3",
            r"found the key 'epochs' twice in one mapping \(first on line 3\)",
        ),
        (
            "targets: []\nouutdir: x\ntargets: [{name: a}]\n",
            "line 3, column 1",
            "found the key 'targets' twice",
        ),
    ],
    ids=["indentation", "unclosed flow sequence", "tab", "key twice", "section twice"],
)
def test_a_config_syntax_error_names_file_line_and_column(tmp_path, capsys, text, where, problem):
    # Snakemake says only "not valid JSON or YAML"; check-config says where.
    from embryo_bench.cli import main
    from embryo_bench.vocabulary.config import read_config_file

    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"broken\.yaml, {where}: .*{problem}"):
        read_config_file(path)
    assert main(["check-config", str(path)]) == 2
    assert f"broken.yaml, {where}" in capsys.readouterr().err


def test_check_config_accepts_the_shipped_configs_and_names_a_bad_setting(tmp_path, capsys):
    from embryo_bench.cli import main

    repo = Path(__file__).resolve().parents[1]
    files = sorted(p for p in (repo / "config").glob("*.yaml") if p.name != "schema.yaml")
    # A study's short form and the GPU measurement's parts are second configfiles, layered on
    # the configuration they name (workflow_helpers.layered_base).
    layered = [p for p in files if layered_base(p)]
    shipped = [str(p) for p in files if p not in layered]
    assert len(shipped) == 14 and len(layered) == 6
    assert main(["check-config", "--each", *shipped]) == 0
    assert capsys.readouterr().out.count(": valid (") == 14
    for part in layered:
        assert main(["check-config", str(layered_base(part)), str(part)]) == 0, part.name
    assert capsys.readouterr().out.count(": valid (") == 6
    bad = tmp_path / "bad.yaml"
    config = yaml.safe_load((repo / "config" / "offline.yaml").read_text())
    config["train"]["epochs"] = 0
    bad.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(bad)]) == 2
    assert "train.epochs" in capsys.readouterr().err
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    assert main(["check-config", str(tmp_path / "list.yaml")]) == 2
    assert "expected a mapping of settings" in capsys.readouterr().err


def test_the_schema_reads_as_pyyamls_safe_loader_reads_it():
    """load_schema uses libyaml's parser where PyYAML has it: the same dict."""
    assert load_schema() == yaml.safe_load((REPO / "config" / "schema.yaml").read_text())


def test_planning_asks_each_docker_daemon_once(monkeypatch):
    """The local check asks the daemon of every docker target before any job, once per
    address however many targets name it (each answer costs a client and a round
    trip)."""
    from embryo_bench.recording import hardware
    from embryo_bench.runners import docker_api

    asked = []

    def daemon_info(daemon):
        asked.append(daemon.address)  # how the targets reach it (docker_api.Daemon)
        return {"NCPU": 8, "Runtimes": {"runc": {}}}

    monkeypatch.setattr(docker_api, "daemon_info", daemon_info)
    monkeypatch.setattr(hardware, "local_node", lambda: hardware.Node("this host", 8, None, 2))
    config = copy.deepcopy(PAPER)
    remote = {**config["targets"][0], "docker_host": "ssh://bench@10.0.0.9"}
    config["targets"] += [{**remote, "name": "elsewhere"}, {**remote, "name": "elsewhere-2"}]
    p = Plan.from_config(config, hardware_check="local")
    assert asked == ["", "ssh://bench@10.0.0.9"]
    assert len(p.targets) == len(config["targets"]) and not p.skipped
