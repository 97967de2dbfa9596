"""The runner plug-ins: one module a runner kind, found by name in the registry."""

from __future__ import annotations

import json

import pytest

from embryo_bench.errors import ConfigError, EmbryoBenchError
from embryo_bench.launch import registry
from embryo_bench.launch.job import TrainJob
from embryo_bench.vocabulary.config import load_schema
from embryo_bench.vocabulary.spec import RUNNERS


def test_the_registry_names_every_runner_a_run_may_name():
    """A run's runner is checked (run.json, the configuration's schema) without importing the
    trainers: the three lists of names are one."""
    target = load_schema()["properties"]["targets"]["items"]["properties"]["runner"]
    assert sorted(registry.RUNNERS) == sorted(RUNNERS) == sorted(target["enum"])
    assert registry.IN_CONTAINER in registry.RUNNERS


def test_each_plugin_is_a_module_of_its_name_with_train():
    for name, module in registry.RUNNERS.items():
        assert module.__name__ == f"embryo_bench.launch.{name}"
        assert callable(module.train) and module.train.__doc__


def test_an_unknown_runner_is_named_in_one_line():
    with pytest.raises(ConfigError, match=r"runner 'slurm': expected one of \['docker', 'host'\]"):
        registry.runner("slurm")


class _Spec:
    def __init__(self, runner):
        self.runner = runner


def _job(runner: str, in_container: bool = False) -> TrainJob:
    return TrainJob(
        _Spec(runner), "run.json", None, "source.json", "out", in_container=in_container
    )


def test_a_run_goes_to_its_runner_and_inside_a_container_to_the_host_runner(monkeypatch):
    called = []
    for name, module in registry.RUNNERS.items():
        monkeypatch.setattr(module, "train", lambda job, name=name: called.append(name))
    registry.train(_job("docker"))
    registry.train(_job("host"))
    registry.train(_job("docker", in_container=True))
    assert called == ["docker", "host", "host"]


def test_a_docker_run_without_an_image_record_is_refused_before_any_daemon():
    with pytest.raises(EmbryoBenchError, match="run.json: a docker run needs --image-record"):
        registry.train(_job("docker"))


def test_a_daemon_record_for_another_address_is_refused_before_any_daemon(tmp_path):
    record = tmp_path / "daemon.json"
    fields = {"address": "tcp://10.0.0.2:2376", "ca_cert": "", "client_cert": "",
              "client_key": "", "tls_from": "", "accept_unauthenticated": False}  # fmt: skip
    record.write_text(json.dumps(fields))
    spec = _Spec("docker")
    spec.docker_host = "tcp://10.0.0.1:2376"
    job = TrainJob(spec, "run.json", None, "s.json", "out", "image.json", str(record))
    with pytest.raises(
        ConfigError, match="is for tcp://10.0.0.2:2376, run.json trains on tcp://10.0.0.1:2376"
    ):
        registry.train(job)
