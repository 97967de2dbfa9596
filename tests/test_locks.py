"""The hash-locked requirements: the images install
containers/requirements-<image>.lock with --require-hashes; the lock must stay in step with the
hand-edited pins it is generated from (containers/lock-requirements.sh), and the host lock with
pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from workflow_helpers import locked_versions

from embryo_bench.errors import DockerError
from embryo_bench.runners.containers import requirements_file, requirements_pins

REPO = Path(__file__).resolve().parents[1]
HOST_LOCK = REPO / "envs" / "host-requirements.lock"


def _blocks(path: Path) -> dict[str, list[str]]:
    """{requirement line: its --hash values} of a pip requirements file."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("--hash="):
            assert current is not None, f"{path}: a hash before any requirement"
            blocks[current].append(text.rstrip(" \\"))
        else:
            current = text.rstrip(" \\")
            blocks[current] = []
    return blocks


def test_locked_versions_reads_names_as_pep_503_and_drops_extras(tmp_path):
    f = tmp_path / "r.txt"
    f.write_text(
        "# comment\nTensorflow[and-cuda]==2.21.0\nPyYAML == 6.0.3 \\\n"
        "    --hash=sha256:00\ntyping_extensions==4.16.0 ; python_version >= '3.9'\n"
        "numpy>=2\n"
    )
    assert locked_versions(f) == {
        "tensorflow": "2.21.0",
        "pyyaml": "6.0.3",
        "typing-extensions": "4.16.0",
    }


@pytest.mark.parametrize("image", ["cpu", "gpu"])
def test_an_images_lock_holds_its_pins_and_a_hash_for_every_package(image):
    pins = locked_versions(REPO / requirements_pins(image))
    lock_path = REPO / requirements_file(image)
    locked = locked_versions(lock_path)
    assert pins and {n: locked.get(n) for n in pins} == pins, (
        f"{lock_path} is out of step with {requirements_pins(image)}: "
        "run containers/lock-requirements.sh"
    )
    blocks = _blocks(lock_path)
    assert len(blocks) == len(locked)  # every line is name==version
    for requirement, hashes in blocks.items():
        assert hashes and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), (
            requirement
        )
    assert requirements_pins(image) in lock_path.read_text().splitlines()[1]
    # The build context admits the lock (and the image build reads nothing else).
    assert f"!{requirements_file(image)}" in (REPO / ".dockerignore").read_text().splitlines()


def test_the_host_lock_satisfies_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    locked = locked_versions(HOST_LOCK)
    wanted = project["dependencies"] + project["optional-dependencies"]["workflow"]
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in locked, f"{HOST_LOCK.name} lacks {name}: run containers/lock-requirements.sh"
        assert req.specifier.contains(locked[name], prereleases=True), (text, locked[name])
    assert all(_blocks(HOST_LOCK).values())  # every package hashed


def test_a_wheelhouse_is_complete_only_with_every_locked_hash(tmp_path):
    """make_wheelhouse skips pip when every locked requirement has a wheel whose sha256 the
    lock allows: a missing wheel, or one with other bytes, leaves it incomplete."""
    import hashlib

    from embryo_bench.runners.wheelhouse import locked_hashes, wheelhouse_missing

    a, b = b"wheel a bytes", b"wheel b bytes"
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in (("a", a), ("b", b))}
    lock = tmp_path / "req.lock"
    lock.write_text(
        "# header\n"
        f"alpha==1.0 \\\n    --hash=sha256:{sha['a']} \\\n    --hash=sha256:{'0' * 64}\n"
        "    # via beta\n"
        f"beta==2.0 ; python_version >= '3.8' \\\n    --hash=sha256:{sha['b']}\n"
    )
    assert locked_hashes(lock) == {"alpha==1.0": {sha["a"], "0" * 64}, "beta==2.0": {sha["b"]}}
    house = tmp_path / "wheels"
    house.mkdir()
    assert wheelhouse_missing(lock, house) == ["alpha==1.0", "beta==2.0"]
    (house / "alpha-1.0-py3-none-any.whl").write_bytes(a)
    (house / "beta-2.0-py3-none-any.whl").write_bytes(b + b"tampered")
    assert wheelhouse_missing(lock, house) == ["beta==2.0"]
    (house / "beta-2.0-py3-none-any.whl").write_bytes(b)
    assert wheelhouse_missing(lock, house) == []
    unlocked = tmp_path / "plain.txt"
    unlocked.write_text("alpha==1.0\n")
    with pytest.raises(DockerError, match=r"plain.txt: alpha==1.0 has no --hash=sha256:"):
        locked_hashes(unlocked)


def test_the_shipped_locks_are_read_whole():
    """Every requirement of each image's lock is found with its hashes (the continuation
    lines joined), as many as locked_versions finds."""
    from embryo_bench.runners.wheelhouse import locked_hashes

    for image in ("cpu", "gpu"):
        path = REPO / requirements_file(image)
        found = locked_hashes(path)
        assert len(found) == len(locked_versions(path)) > 40
        assert all(len(d) >= 1 and all(len(h) == 64 for h in d) for d in found.values())
