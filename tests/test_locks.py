"""The hash-locked requirements (issue 13, item 4): the images install
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

from embryo_bench.containers import requirements_file, requirements_pins

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
