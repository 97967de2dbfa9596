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


class _FakeImages:
    def list(self, filters=None):
        return []  # no image with these labels: build

    def get(self, name):
        return type("Image", (), {"id": "sha256:" + "b" * 64, "attrs": {"Size": 2**20}})()


class _FakeApi:
    """Receives the context and streams a build log, noting whether the context's file was
    still open when the first line of the log was read."""

    def __init__(self):
        self.open_while_streaming = None

    def build(self, fileobj, **kwargs):
        assert not fileobj.closed and fileobj.read(1)  # the context is sent first

        def stream():
            self.open_while_streaming = not fileobj.closed
            yield {"stream": "Step 1/1 : FROM base\n"}
            yield {"aux": {"ID": "sha256:" + "b" * 64}}

        return stream()


def test_the_context_file_is_gone_before_the_build_runs(monkeypatch, tmp_path):
    """Its temporary tar (3.2 GiB for the gpu image) is deleted once the daemon has it, not
    after the build: the build's own layers need that disk."""
    (tmp_path / ".dockerignore").write_text("results\n")
    for name in ("containers/Dockerfile", "containers/requirements-cpu.lock", "pyproject.toml",
                 "README.md", "src/x.py"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    api = _FakeApi()
    client = type("Client", (), {"api": api, "images": _FakeImages()})()
    monkeypatch.setattr(
        containers,
        "resolve_base_image",
        lambda client, base, log: {"base_image": base, "base_image_id": "sha256:" + "a" * 64},
    )
    # The code the container runs is hashed from the real package; this context has none.
    monkeypatch.setattr(containers, "image_content_hash", lambda context, image: "c" * 64)
    info = containers.build_image(
        tmp_path, "x:1", "cpu", "base:1", "wheelhouse", tmp_path / "r.json", client=client
    )
    assert api.open_while_streaming is False
    assert info["image_id"] == "sha256:" + "b" * 64 and (tmp_path / "r.json").exists()
