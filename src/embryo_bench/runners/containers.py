"""Container images of the hardware targets, built through the Docker SDK for Python.

* :func:`build_base_image`: a Debian base image from Debian packages (``debootstrap`` +
  ``docker import``), for hosts without a container registry (air-gapped clusters, CI).
* :func:`embryo_bench.runners.wheelhouse.make_wheelhouse`: ``pip download`` of an image's locked
  requirements on the host, so the image build installs Python packages without network access
  (``PIP_SOURCE=wheelhouse``); each image has its own folder (:func:`wheelhouse_dir`), and a build
  sends only its own (:func:`build_context`): the gpu wheels (3.2 GiB) never travel with a cpu
  build.
* :func:`build_image`: ``docker build`` of ``containers/Dockerfile`` with the SDK from the base
  image's id (not its tag), build log streamed to a file, and a record (image id, tag, base
  image id, content hash; for gpu, TensorFlow's CUDA build, :func:`tensorflow_build_info`)
  written beside it.

Requirements: ``containers/requirements-<image>.txt`` holds the top-level pins (edited by
hand); ``containers/requirements-<image>.lock`` is generated from it by
``containers/lock-requirements.sh`` (uv: every package, with the sha256 of its files) and is
what the image installs, with ``--require-hashes``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

from ..errors import DockerError
from ..io import sha256_file, sha256_tree, write_json
from ..vocabulary.codehash import PACKAGE, code_hash
from .docker_api import Daemon, channel, daemon_identity, docker_client, resolve_daemon

#: The Dockerfile of both images, relative to the repository.
DOCKERFILE = "containers/Dockerfile"
#: What an image is built from, besides its requirements file and the package's code.
IMAGE_FILES = [DOCKERFILE, ".dockerignore", "pyproject.toml"]
#: The command the image runs (``embryo-bench train`` inside the container).
IMAGE_COMMAND = "cli:train"
#: Where the wheelhouses are, relative to the repository: one folder per image.
WHEELHOUSE_ROOT = "containers/wheelhouse"
#: Run inside an image: TensorFlow's ``tf.sysconfig.get_build_info()`` as one line of JSON.
TF_BUILD_INFO_CODE = (
    "import json, tensorflow as tf; print(json.dumps(dict(tf.sysconfig.get_build_info())))"
)
#: The keys of a gpu image's build info that must be there and not empty (a CPU-only
#: TensorFlow has none of them).
CUDA_BUILD_KEYS = ("cuda_version", "cudnn_version")


def requirements_pins(image: str) -> str:
    """The top-level pins of a project image ("cpu", "gpu"), relative to the repo: the file a
    person edits; :func:`requirements_file` is generated from it."""
    return f"containers/requirements-{image}.txt"


def requirements_file(image: str) -> str:
    """The hash-locked requirements a project image ("cpu", "gpu") installs, relative to the
    repo (``containers/lock-requirements.sh`` writes it from :func:`requirements_pins`)."""
    return f"containers/requirements-{image}.lock"


def wheelhouse_dir(image: str) -> str:
    """The wheelhouse folder of a project image ("cpu", "gpu"), relative to the repo:
    ``containers/wheelhouse/<image>``, filled by
    :func:`embryo_bench.runners.wheelhouse.make_wheelhouse` from :func:`requirements_file`."""
    return f"{WHEELHOUSE_ROOT}/{image}"


def build_context_patterns(context: str | Path, image: str, pip_source: str) -> list[str]:
    """The exclude patterns (``.dockerignore`` syntax) of an image's build context: the
    repository's ``.dockerignore``, then every wheelhouse folder left out but this image's
    (and that one too with ``pip_source`` "pypi").

    Raises:
        FileNotFoundError: ``context`` has no ``.dockerignore``.
    """
    lines = (Path(context) / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    patterns += [f"{WHEELHOUSE_ROOT}/*", f"!{WHEELHOUSE_ROOT}/.keep"]
    if pip_source == "wheelhouse":
        patterns.append(f"!{wheelhouse_dir(image)}")
    return patterns


def build_context_files(context: str | Path, image: str, pip_source: str) -> list[str]:
    """The files (and folders) of an image's build context, relative to ``context``, sorted:
    what :func:`build_context` packs.

    Raises:
        FileNotFoundError: ``context`` has no ``.dockerignore``.
    """
    from docker.utils.build import exclude_paths

    patterns = build_context_patterns(context, image, pip_source)
    return sorted(exclude_paths(str(context), patterns, dockerfile=DOCKERFILE))


def build_context(context: str | Path, image: str, pip_source: str):
    """The build context of a project image as an uncompressed tar in a temporary file
    (deleted when closed), read from its start: :func:`build_context_files` of ``context``.
    docker-py's own packing would send every wheelhouse folder (the ``.dockerignore`` cannot
    tell images apart).

    Raises:
        FileNotFoundError: ``context`` has no ``.dockerignore``.
    """
    from docker.utils.build import create_archive

    files = build_context_files(context, image, pip_source)
    archive = create_archive(root=str(Path(context).resolve()), files=files)
    archive.seek(0)
    return archive


#: Seconds the Docker SDK waits for the daemon's next word while an image is built or a base
#: image imported (the SDK's default is 120 s). A build step can be silent for minutes:
#: copying the gpu image's 6.5 GiB virtual environment from its install stage outlasted
#: 120 s on the loaded 2-core VM (2026-11-27), and the client's read timeout then ended a
#: build the daemon was still doing.
BUILD_READ_TIMEOUT = 3600


def tensorflow_build_info(tag: str, client=None, log=sys.stderr) -> dict:
    """TensorFlow's build information inside the image ``tag``
    (``tf.sysconfig.get_build_info()``: for a CUDA build, ``cuda_version``, ``cudnn_version``,
    ``cuda_compute_capabilities``, ``is_cuda_build``), from a container without network that is
    removed afterwards. Needs no GPU: it reads what TensorFlow was built for.

    Returns:
        the build information, as TensorFlow gives it (JSON types).

    Raises:
        DockerError: the container failed (with its output's tail) or printed no JSON.
    """
    client = client or docker_client()
    try:
        out = client.containers.run(
            tag,
            ["python3", "-c", TF_BUILD_INFO_CODE],
            remove=True,
            network_disabled=True,
            stdout=True,
            stderr=True,
            environment={"TF_CPP_MIN_LOG_LEVEL": "0"},
        )
    except Exception as exc:
        raise DockerError(
            f"image {tag}: reading TensorFlow's build info failed: {str(exc)[-3000:]}"
        ) from exc
    text = out.decode(errors="replace")
    print(text.rstrip(), file=log, flush=True)
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    raise DockerError(f"image {tag}: TensorFlow printed no build info (JSON): {text[-2000:]}")


def check_cuda_build(info: dict, tag: str, requirements: str) -> None:
    """Check that ``info`` (:func:`tensorflow_build_info` of a gpu image) is a CUDA build
    with its CUDA and cuDNN versions (:data:`CUDA_BUILD_KEYS`).

    Raises:
        DockerError: not a CUDA build, or a version missing; names the image and the lock.
    """
    missing = [k for k in CUDA_BUILD_KEYS if not info.get(k)]
    if not info.get("is_cuda_build") or missing:
        raise DockerError(
            f"image {tag}: TensorFlow from {requirements} is not a CUDA build "
            f"(is_cuda_build={info.get('is_cuda_build')!r}, missing {missing or 'nothing'}); "
            "a gpu image needs tensorflow[and-cuda]: its build info was "
            f"{json.dumps(info, sort_keys=True)}"
        )


def resolve_base_image(client, base_image: str, log=sys.stderr) -> dict:
    """The image a build starts ``FROM``, by id: ``base_image`` (a tag or id) looked up on the
    daemon, pulled first where it is missing and a registry can be reached.

    Returns:
        ``{"base_image": the name given, "base_image_id": "sha256:...",
        "base_repo_digests": [...]}`` (repo digests are empty for an imported image).

    Raises:
        DockerError: the image is neither on the daemon nor pullable.
    """
    import docker.errors

    try:
        image = client.images.get(base_image)
    except docker.errors.ImageNotFound:
        print(f"pulling base image {base_image}", file=log, flush=True)
        try:
            image = client.images.pull(base_image)
        except Exception as exc:
            raise DockerError(
                f"base image {base_image}: not on the daemon and not pullable ({exc}); build it "
                "with `embryo-bench base-image` (containers.build_base: true) or pull it"
            ) from exc
    except Exception as exc:
        raise DockerError(f"base image {base_image}: {exc}") from exc
    return {
        "base_image": base_image,
        "base_image_id": image.id,
        "base_repo_digests": list(image.attrs.get("RepoDigests") or []),
    }


def image_content_hash(context: str | Path, image: str) -> str:
    """sha256 (hex) of what a project image is built from: :data:`IMAGE_FILES`, its
    requirements file (by content) and the code the container runs (:func:`code_hash` of
    :data:`IMAGE_COMMAND` in the context's ``src/``: its import closure, as code, so comments
    and docstrings do not rebuild the image).

    Raises:
        FileNotFoundError: a build file or the package is missing.
    """
    files = sha256_tree(context, IMAGE_FILES + [requirements_file(image)])
    code = code_hash(IMAGE_COMMAND, root=Path(context) / "src" / PACKAGE)
    return hashlib.sha256(f"{files}\0{code}".encode()).hexdigest()


def default_mirror() -> str:
    """The host's Debian mirror (first ``URIs:`` of /etc/apt/sources.list.d/debian.sources),
    else http://deb.debian.org/debian."""
    try:
        for line in Path("/etc/apt/sources.list.d/debian.sources").read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


#: The tag :func:`build_base_image` gives a Debian image by default (``embryo-bench
#: base-image``), by suite.
DEBIAN_TAG = "embryo-bench/debian:{suite}"


def build_base_image(
    tag: str,
    suite: str = "bookworm",
    mirror: str | None = None,
    client=None,
    log=sys.stderr,
    reuse: bool = False,
    pull_first: bool = False,
) -> dict:
    """Build a minimal Debian image with python3 + venv from Debian packages.

    Runs ``debootstrap --variant=minbase`` (needs root and the ``debootstrap`` package) into
    a temporary folder, packs it, and imports it with the SDK as ``tag``. With ``reuse``, an
    existing image of that tag is kept instead. With ``pull_first`` (``containers.build_base:
    auto``), ``tag`` is pulled from its registry first, and built only where the pull fails:
    a user without root gets the image wherever a registry answers, a machine without a
    registry (this project's CI) builds it.

    Returns:
        dict with image_id, tag, suite and mirror; ``pulled`` (True, with ``repo_digests``,
        when the registry gave it; False with ``pull_error`` when it was built after a failed
        pull, or taken from :data:`DEBIAN_TAG`'s image, then ``built_as`` names it).

    Raises:
        DockerError: debootstrap missing, not run as root or failing (with its output's
            tail; after a failed pull, naming the pull's error too), or the import failed.
    """
    client = client or docker_client(timeout=BUILD_READ_TIMEOUT)
    if reuse:
        try:
            image = client.images.get(tag)
            print(f"{tag} exists ({image.id}); reused (remove it to rebuild)", file=log)
            return {"image_id": image.id, "tag": tag, "suite": suite, "reused": True}
        except Exception:  # docker.errors.ImageNotFound
            pass
    pulled: dict = {}
    if pull_first:
        try:
            image = client.images.pull(tag)
        except Exception as exc:  # docker.errors.APIError: no registry, no such image
            pulled = {"pulled": False, "pull_error": str(exc).strip()[:500]}
            print(f"pull {tag} failed ({exc}); a Debian image built here instead", file=log)
        else:
            print(f"pulled {tag} as {image.id}", file=log, flush=True)
            return {"image_id": image.id, "tag": tag, "pulled": True,
                    "repo_digests": image.attrs.get("RepoDigests", [])}  # fmt: skip
        # The Debian image this command builds under its default tag, when one is here
        # already (the offline configurations build it): the same packages, not bootstrapped
        # a second time.
        built = DEBIAN_TAG.format(suite=suite)
        try:
            image = client.images.get(built)
        except Exception:  # docker.errors.ImageNotFound
            pass
        else:
            repository, _, version = tag.partition(":")
            image.tag(repository, version or None)
            print(f"{built} ({image.id}), built here from Debian packages, tagged {tag}",
                  file=log, flush=True)  # fmt: skip
            return {"image_id": image.id, "tag": tag, "suite": suite, "built_as": built, **pulled}
    after = f" (pulling {tag} failed: {pulled['pull_error']})" if pulled else ""
    if shutil.which("debootstrap") is None:
        raise DockerError(f"debootstrap not found: apt-get install -y debootstrap{after}")
    if os.geteuid() != 0:
        raise DockerError(
            f"debootstrap builds {tag} as root only (uid {os.geteuid()}){after}: run as root, "
            "or set containers.build_base: false where a registry has the image"
        )
    mirror = mirror or default_mirror()
    with tempfile.TemporaryDirectory(prefix="embryo-bench-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        cmd = [
            "debootstrap",
            "--variant=minbase",
            "--include=python3,python3-venv,ca-certificates",
            suite,
            str(root),
            mirror,
        ]
        print("$ " + " ".join(cmd), file=log, flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        print(proc.stdout[-5000:], proc.stderr[-5000:], file=log, flush=True)
        if proc.returncode:
            raise DockerError(
                f"debootstrap {suite} from {mirror} failed (exit "
                f"{proc.returncode}): {proc.stderr.strip()[-1500:]}"
            )
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        tar = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
        repository, _, version = tag.partition(":")
        try:
            client.api.import_image_from_file(str(tar), repository=repository, tag=version or None)
            image = client.images.get(tag)
        except Exception as exc:
            raise DockerError(f"docker import of {tar} as {tag} failed: {exc}") from exc
    print(f"imported {tag} as {image.id}", file=log, flush=True)
    return {"image_id": image.id, "tag": tag, "suite": suite, "mirror": mirror, **pulled}


def build_image(
    context: str | Path,
    tag: str,
    image: str,
    base_image: str,
    pip_source: str,
    record: str | Path,
    log=sys.stderr,
    client=None,
) -> dict:
    """Build ``containers/Dockerfile`` in ``context`` (the repository) as ``tag`` with the SDK
    (``rm=True``), ``FROM`` the base image's id (:func:`resolve_base_image`: a tag moved to
    another image cannot change what is built), streaming the build log to ``log``, and write
    ``record`` (JSON: image id, tag, base image name, id and repo digests, pip source, the
    locked requirements and their sha256, :func:`image_content_hash`, the host it was built on
    and DOCKER_HOST, ``reused``, the image's ``size_mib`` (MiB, as the daemon reports it) and
    ``build_seconds`` (wall, s; 0 when reused); for "gpu" also ``tensorflow_build``:
    :func:`tensorflow_build_info`, checked to be a CUDA build by :func:`check_cuda_build`, so a
    gpu image without CUDA fails where it is built, not on the GPU machine).

    The context sent is :func:`build_context`: this image's wheelhouse folder only. The image
    carries labels of what it was built from (:func:`build_labels`); when the daemon already
    has an image with the same labels, it is tagged ``tag`` and reused instead of built again
    (sending the ~360 MB context and checking every cached layer took ~10-20 s).

    Args:
        image: "cpu" or "gpu": which requirements file (:func:`requirements_file`) and
            wheelhouse (:func:`wheelhouse_dir`).

    Raises:
        DockerError: daemon unreachable, the base image missing, the build failed (with the
            log's last lines; with ``pip_source`` "wheelhouse", a wheel missing from
            :func:`wheelhouse_dir` fails pip), or a gpu image whose TensorFlow is not a CUDA
            build.
    """
    client = client or docker_client(timeout=BUILD_READ_TIMEOUT)
    requirements = requirements_file(image)
    base = resolve_base_image(client, base_image, log=log)
    content = image_content_hash(context, image)
    labels = build_labels(content, base["base_image_id"], pip_source)
    started = time.monotonic()

    def record_image(image_id: str, reused: bool) -> dict:
        seconds = 0.0 if reused else time.monotonic() - started
        built = client.images.get(image_id)
        info = {
            "image_id": image_id,
            "tag": tag,
            **base,
            "pip_source": pip_source,
            "requirements": requirements,
            "requirements_sha256": sha256_file(Path(context) / requirements),
            "content_sha256": content,
            "built_on": socket.gethostname(),
            "docker_host": os.environ.get("DOCKER_HOST", ""),
            "reused": reused,
            "size_mib": round(built.attrs["Size"] / 2**20, 1),
            "build_seconds": round(seconds, 1),
        }
        if image == "gpu":
            info["tensorflow_build"] = tensorflow_build_info(tag, client=client, log=log)
            check_cuda_build(info["tensorflow_build"], tag, requirements)
        write_json(record, info)
        return info

    same = client.images.list(filters={"label": [f"{k}={v}" for k, v in labels.items()]})
    if same:
        repository, _, version = tag.partition(":")
        same[0].tag(repository, version or None)
        print(
            f"{same[0].id} has the same content, base image and pip source ({labels}): "
            f"tagged {tag} and reused, not built again",
            file=log,
            flush=True,
        )
        return record_image(same[0].id, reused=True)
    tail: deque[str] = deque(maxlen=40)
    image_id = None
    archive = build_context(context, image, pip_source)
    try:
        stream = client.api.build(
            fileobj=archive,
            custom_context=True,
            dockerfile=DOCKERFILE,
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            labels=labels,
            buildargs={
                "BASE_IMAGE": base["base_image_id"],
                "PIP_SOURCE": pip_source,
                "IMAGE": image,
                "REQUIREMENTS": requirements,
            },
        )
        # The daemon has the whole context once build() returns (the SDK posts it before
        # streaming the log): the temporary tar (3.2 GiB for gpu) goes now, not after a build
        # whose layers need that disk (a CI run's gpu build stopped there without a word, its
        # disk most likely full).
        archive.close()
        for chunk in stream:
            text = chunk.get("stream") or chunk.get("status") or ""
            if text:
                log.write(text)
                log.flush()
                tail.extend(text.rstrip("\n").splitlines())
            if "error" in chunk:
                raise DockerError(
                    f"image build {tag} failed: {chunk['error'].strip()}\n" + "\n".join(tail)
                )
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
    except DockerError:
        raise
    except Exception as exc:
        raise DockerError(f"image build {tag} failed: {exc}\n" + "\n".join(tail)) from exc
    finally:
        archive.close()
    return record_image(image_id or client.images.get(tag).id, reused=False)


def build_labels(content_sha256: str, base_image_id: str, pip_source: str) -> dict[str, str]:
    """The labels a project image is built with: what decides its contents (the
    :func:`image_content_hash`, the base image's id, where pip took the packages from)."""
    return {
        "embryo-bench.content-sha256": content_sha256,
        "embryo-bench.base-image-id": base_image_id,
        "embryo-bench.pip-source": pip_source,
    }


def ship_image(
    record: dict,
    daemon: Daemon | str,
    log=sys.stderr,
    source=None,
    target=None,
    timeout: int = 1800,
) -> dict:
    """Put the image of ``record`` (an image build's record) onto the daemon ``daemon``,
    where a target with that ``docker_host`` runs: ``docker save`` of exactly that image id
    on the local daemon streamed into ``docker load`` there (no registry, no temporary file),
    then tagged as on the local daemon. Save and load keep the image id, so both daemons run
    the same bytes. Nothing is sent when the daemon already has that id.

    Args:
        record: ``image_id`` and ``tag`` (the image rule's JSON).
        daemon: the remote daemon: a :class:`embryo_bench.runners.docker_api.Daemon` (address and
            TLS files: the workflow's daemon record) or an address (``tcp://``, ``ssh://``,
            ``unix://``; resolved with the Docker environment's TLS,
            :func:`embryo_bench.runners.docker_api.resolve_daemon`).
        source, target: Docker clients (default: the local daemon, ``daemon``).
        timeout: seconds the load may take to answer.

    Returns:
        ``record`` plus ``docker_host``, ``channel`` (how it was reached: "tls", "ssh",
        ...), ``daemon`` (:func:`daemon_identity` of the remote), ``source_daemon`` (the
        local one's), ``shipped`` (False when it was there), ``bytes`` (the tar stream sent)
        and ``seconds``.

    Raises:
        ConfigError: the address or its TLS files are refused (as ``resolve_daemon``).
        DockerError: either daemon unreachable (naming its address), the image not on the
            local daemon, or the load failed or did not produce that image id.
    """
    import docker.errors

    if isinstance(daemon, str):
        daemon = resolve_daemon(daemon, check_files=False)  # docker_client checks them
    docker_host = daemon.address
    source = source or docker_client()
    target = target or docker_client(daemon, timeout=timeout)
    image_id, tag = record.get("image_id") or record["tag"], record["tag"]
    started = time.monotonic()
    sent = 0
    try:
        target.images.get(image_id)
        shipped = False
        print(f"{tag} ({image_id}) is already on {docker_host}", file=log, flush=True)
    except docker.errors.ImageNotFound:
        try:
            source.images.get(image_id)
        except docker.errors.ImageNotFound:
            raise DockerError(
                f"image {tag} ({image_id}) is not on the local Docker daemon to send to "
                f"{docker_host}; rebuild it (remove its image record)"
            ) from None
        print(f"sending {tag} ({image_id}) to {docker_host}", file=log, flush=True)

        def chunks():
            nonlocal sent
            for chunk in source.api.get_image(image_id):
                sent += len(chunk)
                yield chunk

        try:
            target.images.load(chunks())
        except Exception as exc:
            raise DockerError(
                f"docker load of {tag} on {docker_host} failed after {sent / 2**20:.0f} MiB: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        shipped = True
    try:
        loaded = target.images.get(image_id)
    except docker.errors.ImageNotFound:
        raise DockerError(
            f"after docker load, {docker_host} has no image {image_id} ({tag})"
        ) from None
    repository, _, version = tag.partition(":")
    loaded.tag(repository, version or None)
    seconds = time.monotonic() - started
    print(
        f"{tag} on {docker_host}: {'sent' if shipped else 'already there'}, "
        f"{sent / 2**20:.0f} MiB in {seconds:.1f} s",
        file=log,
        flush=True,
    )
    return {
        **record,
        "docker_host": docker_host,
        "channel": channel(target),
        "daemon": daemon_identity(target.info()),
        "source_daemon": daemon_identity(source.info()),
        "shipped": shipped,
        "bytes": sent,
        "seconds": round(seconds, 1),
    }
