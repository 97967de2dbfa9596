"""An image's wheelhouse (``containers/wheelhouse/<image>``): the wheels of its hash-locked
requirements, downloaded on the host by ``pip download`` (:func:`make_wheelhouse`) so that an
image build installs them without asking the package index again; which locked requirements
have no wheel there yet (:func:`wheelhouse_missing`, by :func:`locked_hashes`).
:mod:`embryo_bench.runners.containers` builds the images from it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..errors import DockerError
from ..io import sha256_file


def locked_hashes(requirements: str | Path) -> dict[str, set[str]]:
    """The sha256 digests a hash-locked requirements file allows, per requirement line.

    Returns:
        ``{requirement: {hex sha256, ...}}``, the requirement as written (``name==version``).

    Raises:
        DockerError: a requirement without any ``--hash=sha256:`` (not a hash-locked file).
    """
    logical = Path(requirements).read_text().replace("\\\n", " ")
    found: dict[str, set[str]] = {}
    for line in logical.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0].startswith("-"):
            continue
        digests = {w.split(":", 1)[1] for w in words[1:] if w.startswith("--hash=sha256:")}
        if not digests:
            raise DockerError(f"{requirements}: {words[0]} has no --hash=sha256: (not a lock)")
        found[words[0]] = digests
    return found


def wheelhouse_missing(requirements: str | Path, out_dir: str | Path) -> list[str]:
    """The locked requirements of ``requirements`` that no wheel in ``out_dir`` satisfies
    with one of its allowed sha256 digests (all of them when the folder is empty), as
    written in the lock (``name==version``), in its order.

    Raises:
        DockerError: a requirement is not hash-locked (:func:`locked_hashes`).
    """
    have = {sha256_file(p) for p in Path(out_dir).glob("*.whl")}
    return [req for req, digests in locked_hashes(requirements).items() if not digests & have]


def make_wheelhouse(requirements: str | Path, out_dir: str | Path, log=sys.stderr) -> dict:
    """Download wheels of ``requirements`` (and their dependencies) into ``out_dir`` with the
    host's pip, for an offline image build. The host's Python (3.11, x86_64 Linux) must match
    the image's. When ``out_dir`` already holds a wheel with an allowed sha256 for every
    locked requirement (:func:`wheelhouse_missing`), pip is not run (it asked the index again
    for every package: ~20 s each time).

    Returns:
        the wheelhouse record: requirements (path), wheels (file names), requirements_sha256,
        downloaded (whether pip ran).

    Raises:
        DockerError: pip fails (with its output's tail), or a requirement is not hash-locked.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "requirements": str(requirements),
        "requirements_sha256": sha256_file(requirements),
    }
    missing = wheelhouse_missing(requirements, out)
    if not missing:
        print(
            f"every locked wheel of {requirements} is in {out} with its sha256: "
            "pip download skipped",
            file=log,
            flush=True,
        )
        return {**record, "wheels": sorted(p.name for p in out.glob("*.whl")), "downloaded": False}
    print(f"{len(missing)} locked wheels missing from {out} (first: {missing[0]})", file=log)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "-r",
        str(requirements),
        "-d",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout[-5000:], proc.stderr[-5000:], file=log, flush=True)
    if proc.returncode:
        raise DockerError(f"pip download -r {requirements} failed: {proc.stderr[-1500:]}")
    return {**record, "wheels": sorted(p.name for p in out.glob("*.whl")), "downloaded": True}
