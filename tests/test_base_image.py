"""The base image with ``containers.build_base: auto``: pulled where a registry answers (no
root needed), built from Debian packages only where the pull fails, and a build that cannot
run says why in one line, naming the failed pull too. A fake Docker client: no daemon."""

from __future__ import annotations

import pytest

from embryo_bench.errors import DockerError
from embryo_bench.runners import containers


class _Image:
    id = "sha256:" + "a" * 64
    attrs = {"RepoDigests": ["python@sha256:" + "b" * 64]}


class _Built(_Image):
    id = "sha256:" + "c" * 64

    def __init__(self):
        self.tags = []

    def tag(self, repository, version):
        self.tags.append(f"{repository}:{version}")


class _Images:
    def __init__(self, registry: bool, built: _Built | None = None):
        self.registry, self.pulled, self.built = registry, [], built

    def get(self, tag):
        if self.built and tag == "embryo-bench/debian:bookworm":
            return self.built
        raise LookupError(tag)  # not on the daemon (docker.errors.ImageNotFound)

    def pull(self, tag):
        self.pulled.append(tag)
        if not self.registry:
            raise RuntimeError("dial tcp: lookup registry-1.docker.io: no such host")
        return _Image()


def _client(registry: bool, built: _Built | None = None):
    return type("Client", (), {"images": _Images(registry, built)})()


def test_auto_pulls_where_a_registry_answers(monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("debootstrap ran though the pull worked")

    monkeypatch.setattr(containers.subprocess, "run", no_build)
    client = _client(registry=True)
    info = containers.build_base_image("python:3.11-slim-bookworm", client=client,
                                       reuse=True, pull_first=True)  # fmt: skip
    assert client.images.pulled == ["python:3.11-slim-bookworm"]
    assert info["pulled"] is True and info["image_id"] == _Image.id
    assert info["repo_digests"] == _Image.attrs["RepoDigests"]


@pytest.mark.parametrize("why", ["no debootstrap", "not root"])
def test_auto_without_a_registry_builds_or_says_both_reasons(monkeypatch, why):
    if why == "no debootstrap":
        monkeypatch.setattr(containers.shutil, "which", lambda name: None)
        expected = r"debootstrap not found.*pulling python:3.11-\S+ failed: .*no such host"
    else:
        monkeypatch.setattr(containers.shutil, "which", lambda name: "/usr/sbin/" + name)
        monkeypatch.setattr(containers.os, "geteuid", lambda: 1000)
        expected = r"as root only \(uid 1000\) \(pulling python:3.11-slim-bookworm failed: "
    with pytest.raises(DockerError, match=expected):
        containers.build_base_image("python:3.11-slim-bookworm", client=_client(False),
                                    pull_first=True)  # fmt: skip


def test_without_auto_nothing_is_pulled(monkeypatch):
    monkeypatch.setattr(containers.shutil, "which", lambda name: None)
    client = _client(registry=True)
    with pytest.raises(DockerError, match=r"^debootstrap not found: apt-get install -y \w+$"):
        containers.build_base_image("embryo-bench/debian:bookworm", client=client)
    assert client.images.pulled == []


def test_auto_without_a_registry_takes_the_debian_image_built_here(monkeypatch):
    """The offline configurations build embryo-bench/debian:bookworm: the same packages are
    not bootstrapped again under the pulled image's name."""
    monkeypatch.setattr(containers.shutil, "which", lambda name: None)  # would fail a build
    built = _Built()
    info = containers.build_base_image("python:3.11-slim-bookworm", client=_client(False, built),
                                       pull_first=True)  # fmt: skip
    assert built.tags == ["python:3.11-slim-bookworm"]
    assert info["image_id"] == _Built.id and info["pulled"] is False
    assert info["built_as"] == "embryo-bench/debian:bookworm"
    assert "no such host" in info["pull_error"]
