"""``embryo-bench`` commands for the docker runner's images and daemons: a Debian base image,
wheelhouses, the hardware images built and shipped to a target's daemon, and the record of how
a daemon is reached.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("embryo_bench")


def cmd_base_image(p):
    """build a Debian base image (debootstrap + import)"""
    p.add_argument(
        "--tag",
        help="the tag to give the imported image (name:version; default: "
        "embryo-bench/debian:<suite>)",
    )
    p.add_argument(
        "--suite", default="bookworm", help="the Debian suite to install (a codename: bookworm)"
    )
    p.add_argument("--mirror", help="Debian mirror (default: the host's apt mirror)")
    p.add_argument("--record", help="write the image record (JSON) here")
    p.add_argument("--reuse", action="store_true", help="keep an existing image of --tag")
    p.add_argument(
        "--pull-first",
        choices=["yes", "no"],
        default="no",
        help="yes: pull --tag from its registry first, and build it only where the pull fails",
    )

    def run(a):
        from ..io import write_json
        from ..runners.containers import DEBIAN_TAG, build_base_image

        tag = a.tag or DEBIAN_TAG.format(suite=a.suite)
        info = build_base_image(
            tag, suite=a.suite, mirror=a.mirror, reuse=a.reuse, pull_first=a.pull_first == "yes"
        )
        if a.record:
            write_json(a.record, info)

    return run


def cmd_wheelhouse(p):
    """download an image's wheels on the host"""
    p.add_argument(
        "--image",
        choices=["cpu", "gpu"],
        default="cpu",
        help="whose wheels: the cpu or the gpu image's (its lock and wheel folder)",
    )
    # Defaults relative to the current folder: run it in the repository.
    p.add_argument(
        "--requirements", help="the lock (default: containers/requirements-<image>.lock)"
    )
    p.add_argument("--out", help="the wheel folder (default: containers/wheelhouse/<image>)")
    p.add_argument("--record", help="write the wheel list (JSON) here")

    def run(a):
        from ..io import write_json
        from ..runners.containers import requirements_file, wheelhouse_dir
        from ..runners.wheelhouse import make_wheelhouse

        out = a.out or wheelhouse_dir(a.image)
        record = make_wheelhouse(a.requirements or requirements_file(a.image), out)
        log.info("%d wheels in %s", len(record["wheels"]), out)
        if a.record:
            write_json(a.record, record)

    return run


def cmd_build_image(p):
    """build a hardware image with the Docker SDK"""
    p.add_argument(
        "--image",
        choices=["cpu", "gpu"],
        required=True,
        help="which hardware image: cpu (TensorFlow's CPU build) or gpu (its CUDA build); it "
        "picks the lock containers/requirements-<image>.lock and the wheel folder",
    )
    p.add_argument("--tag", required=True, help="the tag to give the image (name:version)")
    p.add_argument(
        "--base-image",
        required=True,
        help="the image to build FROM, a tag or id (pulled when the daemon lacks it): Debian "
        "with python3 (3.11) and python3-venv",
    )
    p.add_argument(
        "--pip-source",
        choices=["pypi", "wheelhouse"],
        default="pypi",
        help="where pip installs from: pypi (PyPI reached from inside the build) or wheelhouse "
        "(only containers/wheelhouse/<image>/, filled by embryo-bench wheelhouse)",
    )
    p.add_argument(
        "--context",
        default=str(Path(__file__).resolve().parents[3]),
        help="the repository (build context; default: this checkout)",
    )
    p.add_argument(
        "--record",
        required=True,
        help="write the image record here (JSON: image id, tag, base image, requirements, size, "
        "build time)",
    )

    def run(a):
        from ..runners.containers import build_image

        info = build_image(a.context, a.tag, a.image, a.base_image, a.pip_source, a.record)
        log.info(
            "%s %s: %s, %.0f MiB, %.0f s",
            "reused" if info["reused"] else "built",
            info["tag"],
            info["image_id"],
            info["size_mib"],
            info["build_seconds"],
        )
        if "tensorflow_build" in info:
            log.info("TensorFlow's build: %s", json.dumps(info["tensorflow_build"]))

    return run


def cmd_ship_image(p):
    """put a built image onto a target's Docker daemon (docker_host)"""
    p.add_argument("--record", required=True, help="the image build's record (JSON)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--docker-host",
        help="tcp://, ssh:// or unix:// address (tcp:// over TLS from DOCKER_TLS_VERIFY and "
        "DOCKER_CERT_PATH, or on a loopback address)",
    )
    where.add_argument("--daemon", help="the workflow's daemon record (address, TLS files)")
    p.add_argument("--out", required=True, help="write the record for that daemon here")

    def run(a):
        from ..io import read_json, write_json
        from ..runners.containers import ship_image
        from ..runners.docker_api import Daemon

        daemon = Daemon.read(a.daemon) if a.daemon else a.docker_host
        info = ship_image(read_json(a.record), daemon)
        write_json(a.out, info)
        name, how = info["daemon"]["name"], info["channel"]
        log.info("%s on %s (%s, %s)", info["tag"], info["docker_host"], name, how)

    return run


def cmd_daemon(p):
    """write how a target's Docker daemon is reached (address, TLS file paths)"""
    p.add_argument("--json", required=True, help="the daemon (docker_api.Daemon) as JSON")
    p.add_argument(
        "--out", required=True, help="write the daemon record here (JSON: address, TLS files)"
    )

    def run(a):
        from ..io import parse_json, write_json
        from ..runners.docker_api import Daemon

        where = "--json (the daemon)"
        fields = parse_json(a.json, where)
        # Its TLS files are checked at plan time and where a client of it is built
        # (ship-image, train: docker_client), not here.
        Daemon.from_dict(fields, where)
        write_json(a.out, fields)

    return run
