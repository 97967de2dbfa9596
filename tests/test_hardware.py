"""Where targets can run: sizes, Slurm's sinfo and GRES strings, the per-node fit, and the
Slurm job environment recorded in provenance."""

from __future__ import annotations

import pytest

from embryo_bench.errors import ConfigError
from embryo_bench.planning.targets import target_from_entry
from embryo_bench.recording.hardware import (
    ClusterError,
    LocalProbe,
    Node,
    gres_gpus,
    parse_sinfo,
    size_mib,
    why_not,
    why_not_on_nodes,
)
from embryo_bench.recording.provenance import scheduler_job
from embryo_bench.vocabulary.spec import Container, Preprocessing

TRAIN = {"epochs": 1, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0, "accuracy_target": 0.85,
         "probe_seconds": 0.2, "variant": "keras"}  # fmt: skip


@pytest.mark.parametrize(
    ("size", "mib"), [("3g", 3072), ("512m", 512), ("2048k", 2), ("1k", 1), ("0m", 0)]
)
def test_size_mib(size, mib):
    assert size_mib(size) == mib


def test_size_mib_follows_docker():
    assert size_mib("3G") == size_mib("3gb") == 3072 and size_mib("1.5g") == 1536


# nang and infg: Docker's parser reads the digits as a float (1.5g), and a NaN or an
# infinity then failed in int() with a traceback.
@pytest.mark.parametrize("size", ["g", "", "lots", "-1g", "nang", "infg", "-infm"])
def test_size_mib_rejects(size):
    with pytest.raises(ConfigError, match="expected a Docker memory size such as 512m or 4g"):
        size_mib(size)


def _t(**entry):
    return target_from_entry({"name": "t", **entry})


def test_target_memory_defaults_per_runner():
    assert _t(runner="docker", cpus=1).memory_mib == 4096  # mem_limit default
    assert _t(runner="host", cpus=1).memory_mib == 8192
    assert _t(runner="host", cpus=1, memory="3g").memory_mib == 3072


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("(null)", 0),
        ("", 0),
        ("gpu:4", 4),
        ("gpu:a100:4(S:0-1)", 4),
        ("gpu:a100:2(S:0),gpu:v100:1(S:1)", 3),
        ("gpu", 1),
        ("mps:100,gpu:tesla:2", 2),
        ("shard:8", 0),
        ("gpu:k80:8(S:0-1,3)", 8),
    ],
)
def test_gres_gpus(gres, gpus):
    assert gres_gpus(gres) == gpus


def test_parse_sinfo_merges_partitions_and_reads_fields():
    text = "n1|2|23081|(null)\nn1|2|23081|(null)\ng1|32|256000|gpu:a100:4(S:0-1)\nn2|8+|N/A|\n"
    nodes = parse_sinfo(text)
    assert nodes == [
        Node("n1", 2, 23081, 0),
        Node("g1", 32, 256000, 4),
        Node("n2", 8, None, 0),
    ]


@pytest.mark.parametrize("line", ["n1 2 23081 (null)", "n1|two|1|(null)", "n1|2|1"])
def test_parse_sinfo_rejects_garbled_lines(line):
    with pytest.raises(ClusterError, match="sinfo line 1: expected 'node|cpus|memory MB|gres'"):
        parse_sinfo(line)


NODES = [Node("cpu1", 2, 23081, 0), Node("gpu1", 8, 64000, 2)]


def test_target_fits_when_one_node_has_everything():
    assert why_not_on_nodes(_t(runner="host", cpus=2), NODES) is None
    gpu = _t(runner="docker", image="gpu", cpus=8, gpus=2, memory="60g")
    assert why_not_on_nodes(gpu, NODES) is None


def test_target_needing_more_than_any_one_node_is_explained():
    # 8 cpus exist (gpu1) and 2 GPUs exist (gpu1), but not with 100 GiB on one node.
    target = _t(runner="docker", image="gpu", cpus=8, gpus=2, memory="100g")
    why = why_not_on_nodes(target, NODES)
    assert why.startswith("asks for 8 cpus, 102400 MiB and 2 GPUs on one node; no Slurm node")
    assert "cpu1: 2 cpus, 23081 MiB, 0 GPUs" in why and "gpu1: 8 cpus, 64000 MiB, 2 GPUs" in why


def test_why_not_uses_the_daemon_for_docker_targets():
    host = Node("this host", 2, 24000, 0)
    docker = _t(runner="docker", cpus=4)
    assert why_not(docker, host, {"NCPU": 8}) is None
    assert why_not(docker, host, {"NCPU": 2}) == "asks for 4 cpus, the Docker daemon has 2"
    assert why_not(_t(runner="host", cpus=4), host) == "asks for 4 cpus, this host has 2"
    gpu = _t(runner="host", cpus=1, gpus=1)
    assert why_not(gpu, host) == "asks for 1 GPUs, this host has 0 (NVML)"
    remote = _t(runner="docker", image="gpu", cpus=1, gpus=1, docker_host="ssh://bench@gpu-box")
    assert why_not(remote, host, {"NCPU": 8, "Runtimes": {"nvidia": {}}}) is None
    assert why_not(remote, host, {"NCPU": 8, "Runtimes": {"runc": {}}}) == (
        "asks for 1 GPUs; the Docker daemon at ssh://bench@gpu-box has no nvidia runtime"
    )


def test_the_runner_checks_a_run_spec_as_planning_checks_its_target():
    """The docker runner checks the run's spec right before a container with the same
    function planning used on the target: the same answers for both."""
    host = Node("this host", 2, 24000, 0)
    for entry, info in [
        ({"runner": "docker", "cpus": 4}, {"NCPU": 2}),
        ({"runner": "docker", "image": "gpu", "cpus": 1, "gpus": 1}, {"NCPU": 2}),
        ({"runner": "docker", "cpus": 2}, {"NCPU": 2}),
    ]:
        t = _t(**entry)
        spec = t.spec(
            1,
            TRAIN,
            Preprocessing(
                frame_size=480,
                crop_fraction=2 / 3,
                invert_centre=128,
                rotation_step=18.0,
                image_size=64,
            ),
        )
        assert isinstance(spec.container, Container)
        assert why_not(spec, host, info) == why_not(t, host, info)


def test_local_probe_asks_each_daemon_once_and_names_a_dead_one():
    from embryo_bench.errors import DockerError

    asked = []

    def daemon_info(daemon):
        asked.append(daemon.address)  # how each target reaches it (docker_api.Daemon)
        if daemon.address == "tcp://127.0.0.1:9":
            raise DockerError("no Docker daemon answers at tcp://127.0.0.1:9")
        return {"NCPU": 4}

    probe = LocalProbe(Node("this host", 2, 24000, 0), daemon_info=daemon_info)
    assert probe(_t(runner="docker", cpus=2)) is None
    assert probe(_t(runner="docker", cpus=3)) is None  # the daemon has 4
    assert probe(_t(runner="host", cpus=3)) == "asks for 3 cpus, this host has 2"
    dead = _t(runner="docker", cpus=1, docker_host="tcp://127.0.0.1:9")
    assert probe(dead) == probe(dead) == "no Docker daemon answers at tcp://127.0.0.1:9"
    assert asked == ["", "tcp://127.0.0.1:9"]


def test_scheduler_job_from_slurm_environment():
    assert scheduler_job({}) is None
    env = {
        "SLURM_JOB_ID": "24",
        "SLURM_JOB_PARTITION": "main",
        "SLURM_JOB_NODELIST": "vm",
        "SLURM_CPUS_PER_TASK": "2",
        "SLURM_MEM_PER_NODE": "8192",
        "HOME": "/root",
    }
    assert scheduler_job(env) == {
        "name": "slurm",
        "job_id": 24,
        "partition": "main",
        "nodes": "vm",
        "cpus_per_task": 2,
        "mem_per_node_mib": 8192,
    }
