"""An image build's Docker client waits long enough for a silent build step: the SDK's
default read timeout (120 s) ended a gpu image build while the daemon was still copying its
6.5 GiB virtual environment between stages on a loaded 2-core machine."""

from __future__ import annotations

import pytest

from embryo_bench.runners import containers


class _Asked(Exception):
    pass


@pytest.fixture
def asked(monkeypatch):
    """The keyword arguments each docker_client call was given (the call then stops)."""
    calls: list[dict] = []

    def fake_client(daemon=None, **kwargs):
        calls.append(kwargs)
        raise _Asked

    monkeypatch.setattr(containers, "docker_client", fake_client)
    return calls


def test_an_image_build_waits_for_a_step_silent_for_many_minutes(asked, tmp_path):
    with pytest.raises(_Asked):
        containers.build_image(tmp_path, "x:1", "cpu", "base:1", "wheelhouse", tmp_path / "r")
    assert asked == [{"timeout": containers.BUILD_READ_TIMEOUT}]
    assert containers.BUILD_READ_TIMEOUT >= 3600


def test_a_base_image_import_waits_as_long(asked, tmp_path):
    with pytest.raises(_Asked):
        containers.build_base_image("x:1", "bookworm")
    assert asked == [{"timeout": containers.BUILD_READ_TIMEOUT}]
