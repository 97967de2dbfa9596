"""The docker runner for real: images built through the SDK, a container training on tiny
synthetic data with a CPU quota and a memory limit, telemetry, OOM, missing daemon, and no
container left after SIGTERM. Then a target on another machine's daemon, for which a second
``dockerd --tlsverify`` here stands in (containers/second-dockerd.sh with ``DOCKERD2_TLS``,
certificates from tls_helpers.make_pki), listening on 127.0.0.1 and on the gateway of its
own bridge (an address that is not a loopback one): the daemon check passes over TLS and
names the CA or the certificate it used when they are wrong, a tiny training run goes through
it (the image shipped over TLS), a moved certificate retrains nothing, and the same daemon
behind OpenSSH. Tests needing a daemon skip without one (fail instead when
EMBRYO_BENCH_REQUIRE names docker, as in CI)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from embryo_bench.errors import DockerError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from conftest import nvidia_gpus, require_gpu, require_or_skip  # noqa: E402
from tls_helpers import (  # noqa: E402
    BRIDGE,
    GATEWAY,
    LOOPBACK,
    NO_TLS_ENV,
    PORT,
    REMOTE,
    in_pki,
    tls,
    tls_config,
)
from workflow_helpers import (  # noqa: E402
    copy_repo,
    docker_config,
    edit,
    job_counts,
    locked_versions,
    offline_config,
    snakemake,
    snakemake_command,
    train_command,
    write_spec,
)


def _daemon():
    from embryo_bench.runners.docker_api import docker_client

    try:
        return docker_client(timeout=10)
    except DockerError as exc:
        require_or_skip("docker", f"no Docker daemon: {exc}")


def _labelled(client):
    from embryo_bench.runners.docker_runner import containers_with_label

    return containers_with_label(client)


@pytest.fixture(scope="module")
def docker_run(tmp_path_factory):
    client = _daemon()
    work = tmp_path_factory.mktemp("docker")
    config = docker_config(work / "out")
    snakemake(work, config)
    return client, work, config, work / "out"


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_container_training_outputs_and_telemetry(docker_run):
    client, _, config, out = docker_run
    (target,) = config["targets"]
    run = out / "train" / target["name"] / "repeat-1"
    for name in ("history.csv", "metrics.json", "model.keras", "settings.json", "telemetry.csv"):
        assert (run / name).stat().st_size > 0, name
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["runner"] == "docker" and metrics["epochs"] == 2
    assert metrics["provenance"]["cpu_quota_cores"] == pytest.approx(target["cpus"])
    assert metrics["threads"] == target["cpus"] and len(metrics["cpu_affinity"]) == 1
    assert metrics["container"]["nano_cpus"] == 1_000_000_000
    assert metrics["container"]["mem_limit"] == target["memory"]
    assert metrics["provenance"]["container_image"].startswith("embryo-bench/cpu:")
    packages = metrics["provenance"]["packages"]  # the image's environment, not the host's
    assert "tensorflow-cpu" in {p.split("==")[0] for p in packages}
    assert "pytest" not in {p.split("==")[0] for p in packages}
    from embryo_bench.runners.containers import requirements_file

    locked = locked_versions(REPO / requirements_file("cpu"))
    installed = dict(p.split("==", 1) for p in packages)
    # The image holds exactly the lock, plus pip and the package itself.
    assert {n: installed.get(n) for n in locked} == locked
    assert set(installed) - set(locked) <= {"pip", "embryo-bench"}
    tel = pd.read_csv(run / "telemetry.csv")
    cpu = tel["cpu_percent"].dropna()
    assert len(cpu) >= 2 and cpu.max() <= 100 * target["cpus"] * 1.15
    assert cpu.max() > 30  # it did train
    assert tel["memory_mib"].max() < 3 * 1024
    assert tel["gpu_util_percent"].isna().all()  # no GPU: empty columns
    assert metrics["telemetry"]["energy_j"].startswith("not measured")
    assert _labelled(client) == []
    image = json.loads((out / "images/cpu.json").read_text())
    assert client.images.get(image["tag"]).id == image["image_id"]
    # Built FROM the base image's id, recorded: a moved base tag cannot change the build.
    assert image["base_image_id"] == client.images.get(image["base_image"]).id
    table = pd.read_csv(out / "figures/results_table.csv")
    assert table["runner"].tolist() == ["docker"]


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_second_invocation_builds_and_trains_nothing(docker_run):
    _, work, config, _ = docker_run
    proc = snakemake(work, config, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_an_image_with_the_same_labels_is_reused_not_built(docker_run, tmp_path):
    """A second build of the same content on the same base and pip source tags the image
    that has those labels and records it as reused; no build log is streamed."""
    from embryo_bench.runners.containers import build_image

    client, _, config, out = docker_run
    built = json.loads((out / "images/cpu.json").read_text())
    log = io.StringIO()
    again = build_image(
        REPO, "embryo-bench/cpu:reuse-test", "cpu", built["base_image"],
        config["containers"]["pip_source"], tmp_path / "cpu.json", log=log,
    )  # fmt: skip
    try:
        assert again["reused"] is True and again["image_id"] == built["image_id"]
        assert again["content_sha256"] == built["content_sha256"]
        assert "reused, not built again" in log.getvalue() and "Step 1/" not in log.getvalue()
        assert json.loads((tmp_path / "cpu.json").read_text()) == again
        assert client.images.get("embryo-bench/cpu:reuse-test").id == built["image_id"]
    finally:
        client.images.remove("embryo-bench/cpu:reuse-test")


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_the_image_keeps_no_wheels(docker_run):
    """Two stages: the wheels go into the first stage only, so no layer of the
    image is the wheelhouse copy (the one-stage cpu image carried 374 MB of wheels it had
    installed), and the record gives the image's size as the daemon reports it."""
    client, _, _, out = docker_run
    record = json.loads((out / "images/cpu.json").read_text())
    history = client.api.history(record["image_id"])
    assert history and not any("/tmp/wheelhouse" in (h.get("CreatedBy") or "") for h in history)
    size = client.images.get(record["image_id"]).attrs["Size"]
    assert record["size_mib"] == round(size / 2**20, 1)
    assert "tensorflow_build" not in record  # read for gpu images only


#: What a training container is allowed, as metrics.json and provenance.csv record it.
ISOLATED = {
    "network_mode": "none",
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "pids_limit": 4096,
    "read_only_rootfs": False,
    "inputs": "read-only (uid 0, 444)",
}

#: Run in a container made as the runner makes a training one: what it can reach and do.
PROBE = r"""
echo "interfaces: $(ls /sys/class/net | tr '\n' ' ')"
grep -E '^(CapPrm|CapEff|CapBnd|NoNewPrivs):' /proc/self/status
echo "uid: $(id -u)"
echo "pids.max: $(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max)"
echo "inputs: $(stat -c '%u %a %n' /work/in /work/in/run.json | tr '\n' ' ')"
echo x >> /work/in/run.json 2>/dev/null && echo "write input: done" || echo "write input: refused"
rm -f /work/in/run.json 2>/dev/null; test -e /work/in/run.json && echo "remove input: refused"
touch /work/in/new 2>/dev/null && echo "add input: done" || echo "add input: refused"
chmod 666 /work/in/run.json 2>/dev/null && echo "chmod input: done" || echo "chmod input: refused"
mkdir -p /work/out && echo ok > /work/out/x && echo "output: written"
python -c "import socket; socket.create_connection(('192.0.2.1', 80), 2)" 2>&1 | tail -n 1
"""


def test_a_training_container_is_created_isolated(tmp_path):
    """The create arguments of every training container (no daemon)."""
    from embryo_bench.runners.docker_runner import ISOLATION, container_kwargs

    config = docker_config(tmp_path / "out")
    spec = write_spec(tmp_path / "run.json", config, config["targets"][0])
    kwargs = container_kwargs(spec, {"tag": "t", "image_id": "i"}, ["true"], "id")
    assert {k: kwargs[k] for k in ISOLATION} == {
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": 4096,
    }


def test_a_daemon_is_here_on_every_loopback_address():
    """The runner samples this machine's cores around a container only when its daemon runs
    here: the same loopback rule as the one that lets plain TCP through (127.0.0.2 is
    loopback too; a hand-made list said it was another machine)."""
    from embryo_bench.runners.docker_api import is_loopback
    from embryo_bench.runners.docker_runner import daemon_is_here

    for host in ("127.0.0.1", "127.0.0.2", "localhost", "[::1]", "10.0.0.5", "gpu-box"):
        address = f"tcp://{host}:2375"
        assert daemon_is_here(address) == is_loopback(host.strip("[]")), address
    assert daemon_is_here("tcp://127.0.0.2:2375")
    assert daemon_is_here("") and daemon_is_here("unix:///var/run/docker.sock")


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_the_training_container_gets_only_what_training_needs(docker_run, tmp_path):
    """The run trained (docker_run) in a container without network,
    capabilities or privilege gain, with a pids limit and read-only inputs, and recorded so
    (metrics.json container.isolation, provenance.csv). A container made the same way
    (container_kwargs, inputs put in by the runner's own container()) with a probe instead of
    the trainer: the daemon reports those settings, and inside there is only lo, no
    capability, no route out, and the trainer's user can read its inputs but not change,
    remove or add any, while it can write its outputs."""
    from embryo_bench.runners import docker_runner

    client, _, config, out = docker_run
    (target,) = config["targets"]
    metrics = json.loads((out / f"train/{target['name']}/repeat-1/metrics.json").read_text())
    assert metrics["container"]["isolation"] == ISOLATED
    prov = pd.read_csv(out / "figures/provenance.csv", keep_default_na=False)
    assert prov["container_isolation"].tolist() == [
        "network none, cap_drop ALL, no-new-privileges, pids 4096"
    ]
    spec = write_spec(tmp_path / "run.json", config, target)
    image = json.loads((out / "images/cpu.json").read_text())
    kwargs = docker_runner.container_kwargs(spec, image, ["sh", "-c", PROBE], "probe")
    with docker_runner.container(
        client, kwargs, {"run.json": tmp_path / "run.json"}, io.StringIO()
    ) as box:
        box.reload()
        assert docker_runner.isolation(box.attrs) == ISOLATED
        box.start()
        assert box.wait(timeout=120)["StatusCode"] == 0
        said = box.logs().decode(errors="replace")
    lines = {
        key.strip(): value.strip()
        for key, _, value in (line.partition(":") for line in said.strip().splitlines())
    }
    assert lines["interfaces"].split() == ["lo"], said
    assert int(lines["CapPrm"], 16) == int(lines["CapEff"], 16) == int(lines["CapBnd"], 16) == 0
    assert lines["NoNewPrivs"] == "1"
    assert lines["uid"] == "1000" and lines["pids.max"] == "4096"
    assert lines["inputs"].split() == ["0", "555", "/work/in", "0", "444", "/work/in/run.json"]
    for change in ("write", "remove", "add", "chmod"):
        assert lines[f"{change} input"] == "refused", said
    assert lines["output"] == "written"
    assert "Network is unreachable" in said.strip().splitlines()[-1]
    assert _labelled(client) == []


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_hardware_code_change_reruns_docker_training(docker_run, tmp_path):
    """hardware.py decides what a container gets and is checked before it starts: a code
    change there rebuilds the image (the container runs that code) and reruns the training."""
    _, work, config, _ = docker_run
    repo = copy_repo(tmp_path / "repo")
    assert "Nothing to be done" in snakemake(work, config, "-n", repo=repo).stdout
    edit(repo / "src/embryo_bench/recording/hardware.py", '"this host has"', '"this machine has"')
    jobs = job_counts(snakemake(work, config, "-n", repo=repo).stdout)
    assert jobs == {"image": 1, "train": 1, "figures": 1, "all": 1}


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_oom_kill_is_reported_with_the_memory_limit(docker_run, tmp_path):

    client, _, config, out = docker_run
    target = {**config["targets"][0], "memory": "96m"}
    image = json.loads((out / "images/cpu.json").read_text())
    with pytest.raises(DockerError, match=r"killed for memory .*mem_limit 96m"):
        _run_one_epoch(docker_run, target, image, tmp_path)
    assert not (tmp_path / "run" / "metrics.json").exists()
    assert _labelled(client) == []


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_image_missing_on_the_daemon_is_named(docker_run, tmp_path):
    """A record whose image is not on this daemon (built on another node's daemon) stops the
    run before any container, naming the image and where it was built."""

    client, _, config, out = docker_run
    image = json.loads((out / "images/cpu.json").read_text())
    assert image["built_on"]  # the build records its host
    image.update(image_id="sha256:" + "0" * 64, built_on="node-a")
    with pytest.raises(DockerError) as err:
        _run_one_epoch(docker_run, config["targets"][0], image, tmp_path)
    message = str(err.value)
    assert f"image {image['tag']} (sha256:{'0' * 64}) is not on the Docker daemon" in message
    assert "it was built on node-a" in message
    assert not (tmp_path / "run").exists()
    assert _labelled(client) == []


def _run_one_epoch(docker_run, target: dict, image: dict, work: Path):
    """docker_runner.run of ``target`` (a targets: entry) on the docker_run fixture's shards,
    one epoch, into ``work/run``, log discarded."""
    from embryo_bench.runners import docker_runner
    from embryo_bench.vocabulary.spec import INPUT_SHARDS
    from embryo_bench.vocabulary.training_input import TrainingInput

    _, _, config, out = docker_run
    spec = write_spec(work / "run.json", config, target, epochs=1)
    shards = sorted(str(p) for p in (out / "augment").glob("shard-*.npz"))
    return docker_runner.run(
        spec,
        spec_file=work / "run.json",
        image=image,
        inputs=TrainingInput(INPUT_SHARDS, tuple(shards)),
        source_info=str(out / "manifest/source.json"),
        out_dir=work / "run",
        log=io.StringIO(),
    )


def _wait_for_container(client, proc, timeout=240):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        running = [c for c in _labelled(client) if c.status == "running"]
        if running:
            return running
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before a container started")
        time.sleep(0.5)
    raise AssertionError("no container started")


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    ["ctrl-c", "sigkill-snakemake"],
    ids=["SIGINT to the process group (Ctrl-C)", "SIGKILL of snakemake alone"],
)
def test_interrupted_snakemake_leaves_no_container(docker_run, tmp_path, how):
    """Ctrl-C reaches every process of the foreground group; a snakemake killed outright
    leaves its job orphaned, and the runner notices its parent is gone. (SIGTERM to
    snakemake alone asks it to finish running jobs gracefully: Snakemake's own semantics.)"""
    import os

    client, work, config, _ = docker_run
    slow = docker_config(config["outdir"], epochs=200)
    slow["targets"][0]["name"] = "docker-slow"
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(slow))
    proc = subprocess.Popen(
        snakemake_command(cfg, f"{config['outdir']}/train/docker-slow/repeat-1/metrics.json"),
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for_container(client, proc)
        time.sleep(2)
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.kill()
        proc.communicate(timeout=120)
        t0 = time.monotonic()
        while _labelled(client) and time.monotonic() - t0 < 60:
            time.sleep(0.5)
        assert _labelled(client) == []
        assert not (Path(config["outdir"]) / "train/docker-slow/repeat-1/metrics.json").exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_sigterm_to_the_runner_leaves_no_container(docker_run, tmp_path):
    client, _, config, out = docker_run
    target = {**config["targets"][0], "name": "docker-term"}
    write_spec(tmp_path / "run.json", config, target, epochs=200)
    image = ["--image-record", str(out / "images/cpu.json")]
    cmd = train_command(tmp_path / "run.json", out, tmp_path / "run", *image)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for_container(client, proc)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output[-2000:]
    assert "interrupted (signal SIGTERM)" in output
    assert _labelled(client) == []
    assert not (tmp_path / "run" / "metrics.json").exists()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_sigkilled_runners_container_stops_and_the_next_runner_removes_it(docker_run, tmp_path):
    # SIGKILL of the runner left its container training on for minutes,
    # then Exited and never removed. Its trainer now ends when the runner's stdin lifeline
    # closes, and the next runner of the same run folder removes the leftover container.
    from embryo_bench.runners import lifeline
    from embryo_bench.runners.docker_runner import RUN_DIR_LABEL, run_key

    client, _, config, out = docker_run
    target = {**config["targets"][0], "name": "docker-kill"}
    write_spec(tmp_path / "run.json", config, target, epochs=200)
    image = ["--image-record", str(out / "images/cpu.json")]
    cmd = train_command(tmp_path / "run.json", out, tmp_path / "run", *image)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        (box,) = _wait_for_container(client, proc)
        assert box.labels[RUN_DIR_LABEL] == run_key(tmp_path / "run")
        time.sleep(2)
        proc.kill()
        proc.communicate(timeout=60)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            box.reload()
            if box.status != "running":
                break
            time.sleep(0.5)
        assert box.status == "exited", f"the container is {box.status} 30 s after the runner"
        assert "lifeline (stdin) closed" in box.logs().decode(errors="replace")
        assert box.attrs["State"]["ExitCode"] == lifeline.EXIT_CODE

        write_spec(tmp_path / "run.json", config, target, epochs=1)
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]
        assert f"removed container {box.short_id} (exited)" in again.stderr
        assert _labelled(client) == []
        assert (tmp_path / "run" / "metrics.json").exists()
    finally:
        for c in _labelled(client):
            c.remove(force=True)


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_image_build_failure_shows_the_log_tail(tmp_path):
    import tarfile

    from embryo_bench.runners.containers import build_image

    client = _daemon()
    # A base image that exists but has no python3: the build's first RUN fails.
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("etc/empty")
        tar.addfile(info, io.BytesIO(b""))
    client.api.import_image_from_data(data.getvalue(), repository="embryo-bench/empty", tag="0")
    try:
        with pytest.raises(DockerError, match=r"image build embryo-bench/broken:0 failed") as err:
            build_image(
                REPO,
                "embryo-bench/broken:0",
                "cpu",
                "embryo-bench/empty:0",
                "wheelhouse",
                tmp_path / "rec.json",
                log=io.StringIO(),
                client=client,
            )
        assert "python3" in str(err.value)  # the log's tail: what failed
        assert not (tmp_path / "rec.json").exists()
    finally:
        client.images.remove("embryo-bench/empty:0", force=True)


def test_a_missing_base_image_is_named(tmp_path):
    from embryo_bench.runners.containers import build_image

    client = _daemon()
    with pytest.raises(DockerError, match=r"base image 127.0.0.1:9/none:0: not on the daemon"):
        build_image(
            REPO,
            "embryo-bench/broken:0",
            "cpu",
            "127.0.0.1:9/none:0",
            "wheelhouse",
            tmp_path / "rec.json",
            log=io.StringIO(),
            client=client,
        )
    assert not (tmp_path / "rec.json").exists()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_missing_daemon_fails_before_any_job(tmp_path):
    config = docker_config(tmp_path / "out")
    config["targets"][0]["docker_host"] = "tcp://127.0.0.1:9"
    proc = snakemake(tmp_path, config, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no Docker daemon answers at tcp://127.0.0.1:9" in text
    assert not (tmp_path / "out").exists()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_missing_daemon_target_is_skipped_when_asked(tmp_path):
    config = offline_config(tmp_path / "out", docker=True)
    for t in config["targets"]:
        if t["runner"] == "docker":
            t["docker_host"] = "tcp://127.0.0.1:9"
    config["on_missing_hardware"] = "skip"
    proc = snakemake(tmp_path, config, "-n")
    text = proc.stdout + proc.stderr
    assert "target docker-1cpu: skipped, no Docker daemon answers at tcp://127.0.0.1:9" in text
    assert "train/docker-1cpu" not in text and "train/host-1cpu" in text


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_missing_gpus_reported(tmp_path):
    if nvidia_gpus():
        pytest.skip("this host has GPUs (nvidia-smi -L)")
    config = offline_config(tmp_path / "out")
    config["targets"] = [{"name": "host-gpu", "runner": "host", "cpus": 1, "gpus": 1}]
    config.pop("cost", None)  # its base target is not among these
    config["on_missing_hardware"] = "fail"
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert "target host-gpu: asks for 1 GPUs, this host has 0" in proc.stdout + proc.stderr


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_gpu_target_samples_nvml(tmp_path):
    """Where a GPU and a daemon with the NVIDIA runtime exist: build the gpu image and train
    one epoch on one GPU; the telemetry has NVML readings. Skipped elsewhere."""
    require_gpu()
    client = _daemon()
    if "nvidia" not in client.info().get("Runtimes", {}):
        require_or_skip("gpu", "the Docker daemon has no nvidia runtime (NVIDIA Container Toolkit)")
    config = docker_config(tmp_path / "out", epochs=1)
    config["targets"] = [
        {
            "name": "docker-1gpu",
            "runner": "docker",
            "image": "gpu",
            "cpus": 1,
            "memory": "8g",
            "gpus": 1,
        }
    ]
    config.pop("cost", None)  # its base target is not among these
    snakemake(tmp_path, config)
    run = tmp_path / "out/train/docker-1gpu/repeat-1"
    tel = pd.read_csv(run / "telemetry.csv")
    assert tel["gpu_util_percent"].notna().any() and tel["gpu_memory_mib"].notna().any()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["provenance"]["gpus"] and metrics["telemetry"]["gpus"]
    assert _labelled(client) == []


# --- a target on another machine's daemon: a second dockerd here stands in for it ---------
#
# dockerd --tlsverify with the test CA's certificates (tls_helpers.make_pki), listening on
# 127.0.0.1 and on the gateway of its own bridge (tls_helpers.GATEWAY: an address that is not
# a loopback one, as another machine's would be). The remote training run (remote_run) reaches
# it over TLS at that gateway; the daemon check's errors are asked of it too; the ssh tests put
# sshd in front of its unix socket.

#: The daemon's key in the workflow's file names (images/cpu@KEY.json, images/daemon@KEY.json).
KEY = f"tcp-{GATEWAY}-{PORT}"


@pytest.fixture(scope="module")
def second_daemon(pki, tmp_path_factory):
    """A second Docker daemon (containers/second-dockerd.sh with DOCKERD2_TLS: the pki's
    server folder) at :data:`~tls_helpers.LOOPBACK` and :data:`~tls_helpers.REMOTE`, over
    TLS with --tlsverify: its own data, exec root, bridge and ID; stopped (and its data
    removed) after the module. Yields a client through its unix socket (the test's own view
    of it)."""
    import docker

    _daemon()
    root = tmp_path_factory.mktemp("dockerd2")
    env = {
        **os.environ,
        "DOCKERD2_ROOT": str(root),
        "DOCKERD2_TLS": str(pki / "server"),
        "DOCKERD2_LISTEN": f"127.0.0.1 {GATEWAY}",
        "DOCKERD2_BRIDGE": BRIDGE,
        "DOCKERD2_GATEWAY": f"{GATEWAY}/24",
    }
    script = ["bash", str(REPO / "containers/second-dockerd.sh")]
    proc = subprocess.run([*script, "start", str(PORT)], env=env, text=True, capture_output=True)
    try:
        if proc.returncode:
            require_or_skip("docker", f"second dockerd did not start: {proc.stderr[-2000:]}")
        assert f"{REMOTE} (TLS, --tlsverify)" in proc.stdout, proc.stdout
        yield docker.DockerClient(base_url=f"unix://{root}/docker.sock")
    finally:
        subprocess.run([*script, "stop"], env=env, capture_output=True)


def _plan(config: dict):
    from embryo_bench.planning.plan import Plan

    return Plan.from_config(config, hardware_check="local")


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_the_daemon_check_passes_over_tls(second_daemon, pki, tmp_path, no_docker_env):
    """The plan's hardware check reaches the daemon over TLS, with the target's files or the
    Docker environment's; the client it builds is that daemon's."""
    from embryo_bench.runners.docker_api import docker_client

    config = tls_config(tmp_path / "out", REMOTE, tls(pki / "client"))
    daemon = _plan(config).targets["docker-tls"].daemon
    assert docker_client(daemon).info()["ID"] == second_daemon.info()["ID"]
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    no_docker_env.setenv("DOCKER_CERT_PATH", str(pki / "client"))
    plan = _plan(tls_config(tmp_path / "out", REMOTE))
    assert plan.targets["docker-tls"].daemon.tls_from == "DOCKER_CERT_PATH"
    # ship-image by hand: an address, with the environment's TLS.
    assert docker_client(REMOTE).info()["ID"] == second_daemon.info()["ID"]
    # The environment's daemon (a docker target without docker_host, image builds).
    no_docker_env.setenv("DOCKER_HOST", REMOTE)
    _plan(docker_config(tmp_path / "out"))
    assert docker_client().info()["ID"] == second_daemon.info()["ID"]


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("address", "files", "said"),
    [
        (
            REMOTE,
            {"ca_cert": "other/ca.pem"},
            "(DockerException: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable "
            "to get local issuer certificate); over TLS with docker_tls.ca_cert {other/ca.pem} "
            "and docker_tls.client_cert {client/cert.pem}",
        ),
        (
            REMOTE,
            {"client_cert": "other/cert.pem", "client_key": "other/key.pem"},
            "over TLS with docker_tls.ca_cert {client/ca.pem} and docker_tls.client_cert "
            "{other/cert.pem}",
        ),
        (REMOTE, None, "is plain TCP to another machine: no authentication"),
        (LOOPBACK, None, "that daemon speaks TLS: give the target docker_tls"),
    ],
    ids=["wrong CA", "a client the daemon does not trust", "plain tcp", "plain tcp, loopback"],
)
def test_what_fails_is_named(second_daemon, pki, tmp_path, no_docker_env, address, files, said):
    """Each a ConfigError of one line: the certificate problems from the daemon check, naming
    the CA and client certificate it used; plain tcp:// to the gateway refused before any
    connection; plain tcp:// to the loopback address answered by an HTTPS server."""
    from embryo_bench.errors import ConfigError

    docker_tls = tls(pki / "client", **{k: pki / v for k, v in files.items()}) if files else None
    with pytest.raises(ConfigError) as err:
        _plan(tls_config(tmp_path / "out", address, docker_tls))
    message = str(err.value)
    assert in_pki(said, pki) in message
    assert message.startswith("target docker-tls: ") and "\n" not in message


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_snakemake_names_the_wrong_ca_in_one_line(second_daemon, pki, tmp_path, no_docker_env):
    config = tls_config(tmp_path / "out", REMOTE, tls(pki / "client", ca_cert=pki / "other/ca.pem"))
    proc = snakemake(tmp_path, config, "-n", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"over TLS with docker_tls.ca_cert {pki / 'other/ca.pem'}" in text
    assert "Traceback" not in text and "embryo_bench/" not in text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def remote_run(second_daemon, pki, tmp_path_factory):
    """The docker target with ``docker_host`` :data:`~tls_helpers.REMOTE` (the second
    daemon at its gateway address, over TLS with the pki's client files alone), one epoch,
    through the workflow: the image is shipped there over TLS and trained there. (local
    client, second client, work dir, config, output dir)."""
    local = _daemon()
    work = tmp_path_factory.mktemp("remote")
    config = tls_config(work / "out", REMOTE, tls(pki / "client"), name="docker-remote")
    snakemake(work, config, env=NO_TLS_ENV)
    return local, second_daemon, work, config, work / "out"


@pytest.mark.ci_step("long-workflows", "a run shipped to the second daemon (a minute)")
@pytest.mark.slow
def test_a_target_on_another_daemon_trains_there(remote_run, pki):
    """The image is sent over TLS (docker save | docker load, same id), the container runs
    and is sampled on the second daemon, and the run records that daemon as its machine and
    TLS as how it was reached; the daemon record holds the certificates' paths, never the
    key."""
    from embryo_bench.planning.plan import Plan
    from embryo_bench.runners.docker_api import Daemon

    local, second, _, config, out = remote_run
    assert local.info()["ID"] != second.info()["ID"]  # two daemons, not one
    record = json.loads((out / f"images/daemon@{KEY}.json").read_text())
    assert (
        Daemon.from_dict(record)
        == Plan.from_config(config, hardware_check="none").targets["docker-remote"].daemon
    )
    assert record["client_key"] == str(pki / "client/key.pem")  # the path, never the key
    built = json.loads((out / "images/cpu.json").read_text())
    sent = json.loads((out / f"images/cpu@{KEY}.json").read_text())
    assert sent["image_id"] == built["image_id"] and sent["shipped"] and sent["bytes"] > 1e8
    assert sent["channel"] == "tls"
    assert sent["daemon"]["id"] == second.info()["ID"]
    assert sent["source_daemon"]["id"] == local.info()["ID"]
    assert second.images.get(sent["image_id"]).tags == [built["tag"]]
    run = out / "train/docker-remote/repeat-1"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["container"]["channel"] == "tls"
    assert metrics["container"]["docker_host"] == REMOTE
    assert metrics["container"]["daemon"]["id"] == second.info()["ID"]
    assert metrics["container"]["daemon"]["ncpu"] == second.info()["NCPU"]
    cpu = pd.read_csv(run / "telemetry.csv")["cpu_percent"].dropna()
    assert len(cpu) >= 2 and cpu.max() > 30  # that daemon's stats of a training container
    prov = pd.read_csv(out / "figures/provenance.csv", keep_default_na=False)
    assert prov["docker_daemon"].tolist() == [second.info()["ID"]]
    assert prov["docker_channel"].tolist() == ["tls"]
    assert prov["host"].tolist() == [second.info()["Name"]]
    assert prov["container_isolation"].tolist() == [
        "network none, cap_drop ALL, no-new-privileges, pids 4096"
    ]
    assert _labelled(second) == [] and _labelled(local) == []


@pytest.mark.ci_step("long-workflows", "a run shipped to the second daemon (a minute)")
@pytest.mark.slow
def test_the_image_is_sent_once(remote_run):
    """Nothing to do on a second invocation; sending again (the workflow's daemon record:
    over TLS) finds the image there."""
    from embryo_bench.runners.containers import ship_image
    from embryo_bench.runners.docker_api import Daemon

    local, _, work, config, out = remote_run
    assert "Nothing to be done" in snakemake(work, config, "-n", env=NO_TLS_ENV).stdout
    again = ship_image(
        json.loads((out / "images/cpu.json").read_text()),
        Daemon.read(out / f"images/daemon@{KEY}.json"),
        log=io.StringIO(),
        source=local,
    )
    assert again["shipped"] is False and again["bytes"] == 0
    assert again["channel"] == "tls"


@pytest.mark.ci_step("long-workflows", "a run shipped to the second daemon (a minute)")
@pytest.mark.slow
def test_the_hardware_check_asks_the_targets_daemon(remote_run):
    """With the local daemon unreachable (DOCKER_HOST at a closed port) the plan of a target
    on the second daemon still passes its check: it asked that daemon."""
    _, _, work, config, _ = remote_run
    env = {**NO_TLS_ENV, "DOCKER_HOST": "tcp://127.0.0.1:9"}
    proc = snakemake(work, config, "-n", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no Docker daemon answers" not in proc.stdout + proc.stderr


@pytest.mark.ci_step("long-workflows", "a run shipped to the second daemon (a minute)")
@pytest.mark.slow
def test_a_moved_certificate_retrains_nothing(remote_run, pki, tmp_path):
    """The certificates' paths are how the daemon is reached, not what is trained: moved,
    the daemon record is written again (ship_image and train take it ancient()) and the
    figures, which show the configuration, are drawn again; no image is sent, no run
    retrains."""
    _, _, work, config, _ = remote_run
    moved = tmp_path / "moved"
    shutil.copytree(pki / "client", moved)
    config = json.loads(json.dumps(config))
    config["targets"][0]["docker_tls"] = tls(moved)
    proc = snakemake(work, config, "-n", env=NO_TLS_ENV)
    jobs = job_counts(proc.stdout)
    assert jobs == {"daemon": 1, "figures_spec": 1, "figures": 1, "all": 1}, proc.stdout[-3000:]


# --- the same daemon behind OpenSSH: docker_host ssh://root@127.0.0.1:PORT ------------------

SSH_PORT = 23752


def _sshd(root: Path, port: int, docker_host: str) -> subprocess.Popen:
    """sshd on 127.0.0.1:``port``, keys only, whose sessions get DOCKER_HOST=``docker_host``
    (so `docker system dial-stdio` reaches that daemon); host key and config under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    key = root / f"host_key_{port}"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    config = root / f"sshd_config_{port}"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\n"
        f"AuthorizedKeysFile {root}/authorized_keys\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nUsePAM no\n"
        f"StrictModes no\nPidFile {root}/sshd_{port}.pid\nSetEnv DOCKER_HOST={docker_host}\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    proc = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True
    )
    import socket

    for _ in range(50):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"sshd on port {port} did not listen: {proc.stderr.read()[-2000:]}")


def socket_of(client) -> Path:
    """The unix socket of a daemon started by containers/second-dockerd.sh (beside its data
    root)."""
    return Path(client.info()["DockerRootDir"]).parent / "docker.sock"


@pytest.fixture(scope="module")
def ssh_home(second_daemon, tmp_path_factory):
    """A throwaway client key in a HOME of its own (~/.ssh/config, known_hosts) and sshd in
    front of the second daemon at :data:`SSH_PORT`, and a second sshd at SSH_PORT + 1 whose
    sessions find no daemon. Yields (home, ssh address)."""
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        require_or_skip("docker", "no sshd (apt-get install openssh-server)")
    root = tmp_path_factory.mktemp("sshd")
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    client = home / ".ssh" / "id_bench"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(client)], check=True)
    (root / "authorized_keys").write_text((home / ".ssh/id_bench.pub").read_text())
    servers = [
        _sshd(root, SSH_PORT, f"unix://{socket_of(second_daemon)}"),
        _sshd(root, SSH_PORT + 1, "unix:///nonexistent/docker.sock"),
    ]
    known = []
    for port in (SSH_PORT, SSH_PORT + 1):
        pub = (root / f"host_key_{port}.pub").read_text().split()
        known.append(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}")
    (home / ".ssh/known_hosts").write_text("\n".join(known) + "\n")
    (home / ".ssh/config").write_text(f"Host 127.0.0.1\n  IdentityFile {client}\n")
    try:
        yield home, f"ssh://root@127.0.0.1:{SSH_PORT}"
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.ci_step("long-workflows", "a run shipped to the second daemon (a minute)")
@pytest.mark.slow
def test_a_target_behind_ssh_trains_on_that_daemon(remote_run, ssh_home, tmp_path, monkeypatch):
    """docker_host ssh://: the Docker SDK over OpenSSH (paramiko) reaches the second daemon
    (sshd in front of its unix socket), which already has the image; one epoch trains there
    and records that daemon."""
    from embryo_bench.runners.docker_api import docker_client

    local, second, work, config, out = remote_run
    home, address = ssh_home
    monkeypatch.setenv("HOME", str(home))
    assert docker_client(address).info()["ID"] == second.info()["ID"]
    image = json.loads((out / f"images/cpu@{KEY}.json").read_text())
    target = {**config["targets"][0], "name": "docker-ssh", "docker_host": address}
    del target["docker_tls"]  # for tcp:// only: ssh:// uses keys
    metrics = _run_one_epoch((local, work, config, out), target, image, tmp_path)
    assert metrics["container"]["daemon"]["id"] == second.info()["ID"]
    assert metrics["container"]["docker_host"] == address
    assert (tmp_path / "run/model.keras").exists() and _labelled(second) == []


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_ssh_errors_name_the_host(ssh_home, tmp_path, monkeypatch):
    """A key the server refuses, and a server with no daemon behind it: one error each,
    naming the ssh address."""
    from embryo_bench.runners.docker_api import docker_client

    home, address = ssh_home
    monkeypatch.setenv("HOME", str(home))
    other = tmp_path / "id_other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    config = home / ".ssh/config"
    good = config.read_text()
    try:
        config.write_text(f"Host 127.0.0.1\n  IdentityFile {other}\n")
        with pytest.raises(DockerError, match=rf"no Docker daemon answers at {address} \("):
            docker_client(address, timeout=20)
    finally:
        config.write_text(good)
    no_daemon = f"ssh://root@127.0.0.1:{SSH_PORT + 1}"
    with pytest.raises(DockerError, match=rf"no Docker daemon answers at {no_daemon} \("):
        docker_client(no_daemon, timeout=20)
