"""Fault-injection pass over the surfaces of the workloads beyond the paper: a table of hostile
or careless inputs, each run as one command in a temporary folder of its own and judged from
what the command did, never by hand.

Surfaces: offline copies of a dataset (``workloads[].path``, ``sha256``) and the loaders behind
``embryo-bench workload-data`` (MNIST, CIFAR-10, IMDb, the text corpus, image folders) and
``workload-files`` (class names become folder names); downloads (``embryo-bench download``
against files served here on 127.0.0.1, connections cut short); a model of one's own
(``workloads[].model``: ``check-config`` must not import it; the trainer's checks of what a
builder returns); sizes (``planning.bounds``); NaN and infinity in configurations, run.json,
metrics.json, reference files and options; ``embryo-bench compare`` and ``--reference``;
the published numbers (each study's ``numbers.csv`` and its sha256 in its ``study.yaml``,
edited in a copy of the package); study configurations and their short forms; the GPU settings
(``targets[].precision``, ``gpus``, ``strategy``, ``embryo-bench batch-limit``'s options) and
``benchmarks/gpu_session.py unpack`` of a hostile archive.

Each case is judged as one of:

* ``clear``: refused with exit status 2 and one ``...: error: ...`` line (no traceback) that
  names what the case says it must (the file or setting), and no output that looks complete;
* ``correct``: a valid input that ran and gave what it should;
* ``silent``: a bad input accepted (exit 0), or a refusal that left an output looking complete;
* ``unclear``: refused, but not in one line naming the file or setting, or with another status;
* ``crash``: a traceback, or no answer within the case's time limit (a hang);
* ``loss``: a file of the user's that must stay as it was was changed or deleted;
* ``security``: something written outside the folder the command was given (a sentinel path
  appeared), or code of a configuration's or a file's run by a command that must not run it.

Usage::

    nice -n 19 python benchmarks/fault_pass.py [--json out.json] [--only SUBSTRING] [--list]

Exit status 0 (the counts are the result, not a pass/fail). Needs the repository's
environment (``embryo-bench`` importable, ``PYTHONPATH=src`` for a checkout); the trainer's
model checks import Keras on JAX (about 5 s each). 176 cases; about five minutes on two idle
cores (most of it the commands' own start: about 1 s each).

Internal: ``--probe NAME ARGS`` runs one of :data:`PROBES` (a call into the package that no
command makes on its own without training) as ``embryo-bench`` runs a command: exit status 2
and one ``embryo-bench: error:`` line for the package's errors.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PYTHON = sys.executable
#: The outcomes, in the order the counts are printed.
OUTCOMES = ("clear", "correct", "silent", "unclear", "crash", "loss", "security")
#: Seconds a case may take unless it says otherwise.
TIMEOUT = 60.0

# --- the cases' shape --------------------------------------------------------------------------


@dataclass
class Run:
    """One command of a case, and how to judge it.

    Attributes:
        argv: the command (``embryo-bench`` commands as ``python -m embryo_bench.cli``).
        expect: "refuse" (a bad input) or "succeed" (a valid one).
        mentions: what the error line must name (substrings), for a refusal to be clear.
        outputs: paths that must not exist after a refusal (they would look complete).
        outside: paths that must never appear (outside the folder given: security).
        keep: files that must be unchanged afterwards (the user's data: loss).
        verify: for "succeed": a check of the result, returning a problem or None.
        env: environment variables added. cwd: where it runs (default: the case's folder).
        timeout: seconds. refused_status: the exit status of a refusal. prefix: how the
            error line starts (the command's own name: not a line of the user's code).
    """

    argv: list[str]
    expect: str = "refuse"
    mentions: tuple[str, ...] = ()
    outputs: tuple[Path, ...] = ()
    outside: tuple[Path, ...] = ()
    keep: tuple[Path, ...] = ()
    verify: Callable[[], str | None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    timeout: float = TIMEOUT
    refused_status: int = 2
    prefix: str = "embryo-bench"


@dataclass
class Case:
    """A named fault: ``setup(folder)`` writes its inputs in an empty folder and returns the
    :class:`Run`."""

    name: str
    surface: str
    setup: Callable[[Path], Run]


CASES: list[Case] = []


def case(surface: str, name: str):
    """Register ``setup`` as a case of ``surface``."""

    def add(setup: Callable[[Path], Run]) -> Callable[[Path], Run]:
        CASES.append(Case(name, surface, setup))
        return setup

    return add


def eb(*args) -> list[str]:
    """An ``embryo-bench`` command line."""
    return [PYTHON, "-m", "embryo_bench.cli", *map(str, args)]


def probe(name: str, *args) -> list[str]:
    """A :data:`PROBES` call as a command line."""
    return [PYTHON, str(Path(__file__).resolve()), "--probe", name, json.dumps(list(args))]


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --- configurations ---------------------------------------------------------------------------

#: A configuration every case starts from: a tiny synthetic paper dataset (nothing of it runs
#: in a check) and one host target.
BASE = {
    "outdir": "out",
    "dataset": {
        "kind": "synthetic",
        "frame_size": 96,
        "synthetic": {"embryos": 10, "frames_per_embryo": 12, "seed": 0},
    },
    "split": {"test_mod": 5, "test_remainder": 0},
    "select": {"seed": 0, "shards": 2},
    "preprocess": {
        "crop_fraction": 0.6666666667,
        "invert_centre": 128,
        "rotation_step": 18,
        "image_size": 64,
    },
    "train": {
        "epochs": 1,
        "batch_size": 32,
        "learning_rate": 0.0001,
        "dropout": 0.5,
        "seed": 0,
        "accuracy_target": 0.85,
        "repeats": 1,
    },
    "on_missing_hardware": "skip",
    "targets": [{"name": "host-1cpu", "runner": "host", "cpus": 1}],
    "workloads": [{"name": "paper"}],
}
SYNTH_MLP = {"name": "mnist-mlp", "data": "synthetic", "train_samples": 256, "test_samples": 64}


def config(d: Path, workloads: list[dict] | None = None, name: str = "config.yaml", **top) -> Path:
    """Write :data:`BASE` with ``workloads`` and top-level keys replaced, as YAML."""
    c = copy.deepcopy(BASE)
    if workloads is not None:
        c["workloads"] = workloads
    c.update(top)
    path = d / name
    path.write_text(yaml.safe_dump(c, sort_keys=False))
    return path


def config_text(d: Path, extra: str, name: str = "config.yaml", **top) -> Path:
    """:func:`config` with YAML text appended (values YAML spells but safe_dump does not:
    ``.nan``, anchors)."""
    path = config(d, name=name, **top)
    path.write_text(path.read_text() + extra)
    return path


def check(d: Path, *files: Path, **run) -> Run:
    """``embryo-bench check-config`` of ``files`` in ``d``."""
    return Run(eb("check-config", *files), cwd=d, **run)


# --- dataset files ----------------------------------------------------------------------------


def npz(path: Path, **arrays) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def mnist_arrays(n_train=8, n_test=4, label=None) -> dict:
    rng = np.random.default_rng(0)
    y_train = (np.arange(n_train) % 10).astype(np.uint8)
    if label is not None:
        y_train[0] = label
    return {
        "x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": y_train,
        "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": (np.arange(n_test) % 10).astype(np.uint8),
    }


def npy_member(shape, dtype: str, payload: bytes) -> bytes:
    """An ``.npy`` file whose header declares ``shape`` and ``dtype``, then ``payload``."""
    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": tuple(shape)}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + payload


def zip_members(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def data_json(dataset: str, path: Path | str, shape, dtype: str, classes: int, **more) -> str:
    """``--data`` of ``workload-data`` (the plan's WorkloadData), real data from ``path``."""
    d = {
        "dataset": dataset,
        "synthetic": False,
        "path": str(path),
        "input_shape": list(shape),
        "input_dtype": dtype,
        "classes": classes,
        "train_samples": 0,
        "test_samples": 0,
        "seed": 0,
        "sha256": {},
    }
    d.update(more)
    return json.dumps(d)


def workload_data(d: Path, dataset: str, files: list[Path], shape, dtype, classes, **kw) -> Run:
    """``workload-data`` of ``files`` (an offline copy in ``d/copy``, each accepted by its own
    sha256 so that the loader, not the registry's checksum, meets the fault)."""
    accept = kw.pop("accept", True)
    digests = {f.name: sha(f) for f in files if f.is_file()} if accept else {}
    out = d / "out"
    mentions = kw.pop("mentions", ())
    expect = kw.pop("expect", "refuse")
    verify = kw.pop("verify", None)
    return Run(
        eb(
            "workload-data",
            "--workload",
            "w",
            "--data",
            data_json(dataset, d / "copy", shape, dtype, classes, sha256=digests, **kw),
            "--files",
            *files,
            "--out",
            out / "arrays.npz",
            "--info",
            out / "info.json",
        ),  # fmt: skip
        expect=expect,
        mentions=mentions,
        outputs=(out / "arrays.npz", out / "info.json"),
        verify=verify,
    )


def cifar_tar(path: Path, *, label: int = 0, names: str | None = None, huge: bool = False) -> Path:
    """A ``cifar-10-binary.tar.gz`` of 2 records a member; ``huge``: test_batch.bin, last,
    declares 10^8 records and holds 2 (a damaged or hostile archive)."""
    record = bytes([label]) + bytes(3072)
    members = [(f"data_batch_{i}.bin", record * 2) for i in range(1, 6)]
    members.append(("test_batch.bin", record * 2))
    if names is not None:
        members.insert(0, ("batches.meta.txt", names.encode()))
    raw = b""
    for name, data in members:
        info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
        info.size = 3073 * 10**8 if huge and name == "test_batch.bin" else len(data)
        raw += info.tobuf(format=tarfile.GNU_FORMAT) + data + bytes(-len(data) % 512)
    if not huge:
        raw += bytes(1024)  # the end of the archive
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw))
    return path


CIFAR_NAMES = "airplane automobile bird cat deer dog frog horse ship truck"


def idx_gz(path: Path, magic: int, dims: tuple[int, ...], payload: bytes) -> Path:
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in dims)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(header + payload))
    return path


def png(path: Path, size=(8, 8), mode="RGB") -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, (10, 20, 30) if mode == "RGB" else 10).save(path, "PNG")
    return path


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose header claims ``width`` x ``height`` (a decompression bomb's header)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = zlib.compress(b"\0" * 64)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )
    return path


def image_folder(root: Path, classes=("cats", "dogs"), test_classes=None, per_class=2) -> Path:
    """A cats-vs-dogs copy: training_set/<class>/*.png and test_set/<class>/*.png."""
    for split, names in (("training_set", classes), ("test_set", test_classes or classes)):
        for c in names:
            for k in range(per_class):
                png(root / split / c / f"{k}.png")
    return root


def catsdogs(d: Path, **kw) -> Run:
    """``workload-data`` of the image folder ``d/copy`` (catsdogs, 64x64x3, 2 classes)."""
    out = d / "out"
    shape = kw.pop("shape", [64, 64, 3])
    return Run(
        eb(
            "workload-data",
            "--workload",
            "catsdogs-cnn",
            "--data",
            data_json("catsdogs", d / "copy", shape, "uint8", 2),
            "--out",
            out / "arrays.npz",
            "--info",
            out / "info.json",
        ),  # fmt: skip
        outputs=(out / "arrays.npz", out / "info.json"),
        **kw,
    )


def arrays_file(path: Path, *, classes=2, names=None, labels=(0, 1), info_classes=None) -> Path:
    """A prepared-arrays file (as workload-data writes it) of 2 images of 8x8x3."""
    from embryo_bench.data.arrays import write_arrays

    x = np.zeros((len(labels), 8, 8, 3), np.uint8)
    y = np.asarray(labels, np.int32)
    info = {"dataset": "catsdogs", "classes": classes if info_classes is None else info_classes}
    if names is not None:
        info["class_names"] = names
    path.parent.mkdir(parents=True, exist_ok=True)
    write_arrays(path, x, y, x[:1], y[:1], info)
    return path


def workload_files(d: Path, arrays: Path, **kw) -> Run:
    return Run(eb("workload-files", "--arrays", arrays, "--out", d / "files"), **kw)


# --- the cases: offline copies (path:, sha256:) at plan time -----------------------------------


def _offline(d: Path, entry: dict, **run) -> Run:
    return check(d, config(d, [{"name": "mnist-mlp", **entry}]), **run)


@case("offline copy", "path: a folder that does not exist")
def _(d):
    return _offline(d, {"path": "missing"}, mentions=("workloads[0]", "path", "no such folder"))


@case("offline copy", "path: a file, not a folder")
def _(d):
    (d / "file").write_text("x")
    return _offline(d, {"path": "file"}, mentions=("workloads[0]", "not a folder"))


@case("offline copy", "path: a folder without the dataset's file")
def _(d):
    (d / "copy").mkdir()
    return _offline(d, {"path": "copy"}, mentions=("workloads[0]", "mnist.npz"))


@case("offline copy", "path: the dataset's file is a folder")
def _(d):
    (d / "copy" / "mnist.npz").mkdir(parents=True)
    return _offline(d, {"path": "copy"}, mentions=("workloads[0]", "mnist.npz"))


@case("offline copy", "path: the dataset's file is a dangling symbolic link")
def _(d):
    (d / "copy").mkdir()
    (d / "copy" / "mnist.npz").symlink_to(d / "gone.npz")
    return _offline(d, {"path": "copy"}, mentions=("workloads[0]", "mnist.npz"))


@case("offline copy", "path: the file of another size than the registry's")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    return _offline(d, {"path": "copy"}, mentions=("mnist.npz", "bytes", "sha256"))


@case("offline copy", "path: beside data: synthetic")
def _(d):
    (d / "copy").mkdir()
    return _offline(d, {**SYNTH_MLP, "path": "copy"}, mentions=("workloads[0]", "synthetic"))


@case("offline copy", "sha256: without path:")
def _(d):
    return _offline(d, {"sha256": {"mnist.npz": "a" * 64}}, mentions=("workloads[0]", "sha256"))


@case("offline copy", "sha256: a file the dataset does not have")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    entry = {"path": "copy", "sha256": {"mnist.npz": sha(d / "copy" / "mnist.npz"),
                                        "evil.npz": "b" * 64}}  # fmt: skip
    return _offline(d, entry, mentions=("workloads[0]", "evil.npz"))


@case("offline copy", "sha256: not 64 hex digits")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    return _offline(d, {"path": "copy", "sha256": {"mnist.npz": "xyz"}}, mentions=("sha256",))


@case("offline copy", "sha256: a number, not text")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    return _offline(d, {"path": "copy", "sha256": {"mnist.npz": 12345}}, mentions=("sha256",))


@case("offline copy", "sha256: a file name that climbs out (../mnist.npz)")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    return _offline(d, {"path": "copy", "sha256": {"../mnist.npz": "a" * 64}}, mentions=("sha256",))


@case("offline copy", "image folder: path without its test split")
def _(d):
    image_folder(d / "copy")
    shutil.rmtree(d / "copy" / "test_set")
    entry = {"name": "catsdogs-cnn", "data": "real", "path": "copy"}
    return check(d, config(d, [entry]), mentions=("workloads[0]", "test_set"))


@case("offline copy", "one workload listed twice")
def _(d):
    return check(d, config(d, [SYNTH_MLP, SYNTH_MLP]), mentions=("workloads[1]", "twice"))


@case("offline copy", "path: a copy accepted by its own sha256 (valid)")
def _(d):
    npz(d / "copy" / "mnist.npz", **mnist_arrays())
    entry = {"path": "copy", "sha256": {"mnist.npz": sha(d / "copy" / "mnist.npz")}}
    return _offline(d, entry, expect="succeed")


# --- the cases: the loaders (workload-data) ---------------------------------------------------


@case("loader mnist", "mnist.npz: a valid small copy (control)")
def _(d):
    f = npz(d / "copy" / "mnist.npz", **mnist_arrays())
    run = workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, expect="succeed")

    def verify():
        info = json.loads((d / "out" / "info.json").read_text())
        return None if info["train"] == 8 and info["test"] == 4 else f"info {info}"

    run.verify = verify
    return run


@case("loader mnist", "mnist.npz: not a zip file")
def _(d):
    f = d / "copy" / "mnist.npz"
    f.parent.mkdir()
    f.write_bytes(b"garbage" * 100)
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz",))


@case("loader mnist", "mnist.npz: truncated in the middle")
def _(d):
    f = npz(d / "copy" / "mnist.npz", **mnist_arrays(64, 16))
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz",))


@case("loader mnist", "mnist.npz: a header declaring 10^12 bytes")
def _(d):
    arrays = mnist_arrays()
    members = {f"{k}.npy": _npy_bytes(v) for k, v in arrays.items()}
    members["x_train.npy"] = npy_member((10**6, 10**6), "|u1", b"\0" * 100)
    f = zip_members(d / "copy" / "mnist.npz", members)
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz",))


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


@case("loader mnist", "mnist.npz: an array missing (x_test)")
def _(d):
    arrays = mnist_arrays()
    del arrays["x_test"]
    f = npz(d / "copy" / "mnist.npz", **arrays)
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("x_test",))


@case("loader mnist", "mnist.npz: a label 200 of 10 classes")
def _(d):
    f = npz(d / "copy" / "mnist.npz", **mnist_arrays(label=200))
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz", "200"))


@case("loader mnist", "mnist.npz: float images")
def _(d):
    arrays = mnist_arrays()
    arrays["x_train"] = arrays["x_train"].astype(np.float32)
    f = npz(d / "copy" / "mnist.npz", **arrays)
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("x_train",))


@case("loader mnist", "mnist.npz: a pickled object array")
def _(d):
    arrays = mnist_arrays()
    arrays["y_train"] = np.array([[1], [2]] * 4, dtype=object)
    f = npz(d / "copy" / "mnist.npz", **arrays)
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz",))


@case("loader mnist", "mnist.npz: no training image")
def _(d):
    f = npz(d / "copy" / "mnist.npz", **mnist_arrays(0, 4))
    return workload_data(d, "mnist", [f], [28, 28, 1], "uint8", 10, mentions=("mnist.npz",))


def _idx_set(d: Path, *, images=None, labels=None) -> list[Path]:
    rng = np.random.default_rng(0)
    c = d / "copy"
    files = [
        images or idx_gz(c / "train-images-idx3-ubyte.gz", 0x803, (4, 28, 28),
                         rng.integers(0, 256, 4 * 784, dtype=np.uint8).tobytes()),
        labels or idx_gz(c / "train-labels-idx1-ubyte.gz", 0x801, (4,), bytes([0, 1, 2, 3])),
        idx_gz(c / "t10k-images-idx3-ubyte.gz", 0x803, (2, 28, 28), bytes(2 * 784)),
        idx_gz(c / "t10k-labels-idx1-ubyte.gz", 0x801, (2,), bytes([0, 1])),
    ]  # fmt: skip
    return files


@case("loader mnist-idx", "idx: another magic number")
def _(d):
    bad = idx_gz(d / "copy" / "train-images-idx3-ubyte.gz", 0x802, (4, 28, 28), bytes(4 * 784))
    files = _idx_set(d, images=bad)
    return workload_data(
        d, "mnist-idx", files, [28, 28, 1], "uint8", 10, mentions=("train-images-idx3-ubyte.gz",)
    )


@case("loader mnist-idx", "idx: dimensions whose product overflows 64 bits")
def _(d):
    bad = idx_gz(d / "copy" / "train-images-idx3-ubyte.gz", 0x803, (2**22, 2**22, 2**20), b"")
    files = _idx_set(d, images=bad)
    return workload_data(
        d, "mnist-idx", files, [28, 28, 1], "uint8", 10, mentions=("train-images-idx3-ubyte.gz",)
    )


@case("loader mnist-idx", "idx: a truncated gzip stream")
def _(d):
    files = _idx_set(d)
    files[0].write_bytes(files[0].read_bytes()[:-20])
    return workload_data(
        d, "mnist-idx", files, [28, 28, 1], "uint8", 10, mentions=("train-images-idx3-ubyte.gz",)
    )


@case("loader mnist-idx", "idx: a label 255 of 10 classes")
def _(d):
    bad = idx_gz(d / "copy" / "train-labels-idx1-ubyte.gz", 0x801, (4,), bytes([0, 1, 255, 3]))
    files = _idx_set(d, labels=bad)
    return workload_data(
        d, "mnist-idx", files, [28, 28, 1], "uint8", 10, mentions=("train-labels", "255")
    )


def _cifar(d: Path, **kw) -> Run:
    mentions = kw.pop("mentions", ("cifar-10-binary.tar.gz",))
    f = cifar_tar(d / "copy" / "cifar-10-binary.tar.gz", **kw)
    return workload_data(d, "cifar10", [f], [32, 32, 3], "uint8", 10, mentions=mentions)


@case("loader cifar10", "cifar10: a valid small copy (control)")
def _(d):
    run = _cifar(d, names=CIFAR_NAMES)
    run.expect = "succeed"
    return run


@case("loader cifar10", "cifar10: a label byte 10")
def _(d):
    return _cifar(d, label=10)


@case("loader cifar10", "cifar10: batches.meta.txt names ../../evil")
def _(d):
    return _cifar(d, names=CIFAR_NAMES.replace("bird", "../../evil"), mentions=("../../evil",))


@case("loader cifar10", "cifar10: batches.meta.txt names a class twice")
def _(d):
    return _cifar(d, names=CIFAR_NAMES.replace("bird", "cat"), mentions=("batches.meta.txt",))


@case("loader cifar10", "cifar10: batches.meta.txt names 9 classes")
def _(d):
    return _cifar(d, names=CIFAR_NAMES.replace(" bird", ""), mentions=("batches.meta.txt",))


@case("loader cifar10", "cifar10: a member declaring 10^8 records")
def _(d):
    return _cifar(d, huge=True)


@case("loader cifar10", "cifar10: not a gzip/tar file")
def _(d):
    f = d / "copy" / "cifar-10-binary.tar.gz"
    f.parent.mkdir()
    f.write_bytes(b"\x1f\x8b" + b"garbage" * 50)
    return workload_data(
        d, "cifar10", [f], [32, 32, 3], "uint8", 10, mentions=("cifar-10-binary.tar.gz",)
    )


def _imdb(d: Path, members: dict[str, bytes], **kw) -> Run:
    f = zip_members(d / "copy" / "imdb.npz", members)
    return workload_data(d, "imdb", [f], [400], "int32", 2, **kw)


def _imdb_members(**replace: bytes) -> dict[str, bytes]:
    reviews = np.empty(2, dtype=object)
    reviews[0], reviews[1] = [1, 5, 9], [2, 7]
    out = {
        "x_train.npy": _npy_pickle(reviews),
        "y_train.npy": _npy_bytes(np.array([0, 1])),
        "x_test.npy": _npy_pickle(reviews),
        "y_test.npy": _npy_bytes(np.array([1, 0])),
    }
    out.update(replace)
    return out


def _npy_pickle(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


class _System:
    """Pickles as ``os.system(command)``: what a hostile imdb.npz would hold."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


@case("loader imdb", "imdb.npz: a valid small copy (control)")
def _(d):
    return _imdb(d, _imdb_members(), expect="succeed")


@case("loader imdb", "imdb.npz: a pickle that runs os.system")
def _(d):
    import pickle

    sentinel = d / "pwned"
    payload = pickle.dumps(_System(f"touch {sentinel}"), protocol=2)
    member = npy_member((2,), "|O", payload)
    run = _imdb(d, _imdb_members(**{"x_train.npy": member}), mentions=("imdb.npz", "x_train"))
    run.outside = (sentinel,)
    return run


@case("loader imdb", "imdb.npz: a pickle asking for a 10^15-element array")
def _(d):
    import pickle

    class Huge:
        def __reduce__(self):
            return (np.ndarray, ((10**15,), np.dtype(object)))

    member = npy_member((2,), "|O", pickle.dumps(Huge(), protocol=2))
    return _imdb(d, _imdb_members(**{"x_train.npy": member}), mentions=("imdb.npz",))


@case("loader imdb", "imdb.npz: negative word ids")
def _(d):
    reviews = np.empty(2, dtype=object)
    reviews[0], reviews[1] = [1, -5], [2]
    members = _imdb_members(**{"x_train.npy": _npy_pickle(reviews)})
    return _imdb(d, members, mentions=("imdb.npz", "x_train"))


@case("loader imdb", "imdb.npz: a label 2")
def _(d):
    members = _imdb_members(**{"y_train.npy": _npy_bytes(np.array([0, 2]))})
    return _imdb(d, members, mentions=("imdb.npz", "y_train"))


def _text(d: Path, data: bytes, **kw) -> Run:
    f = d / "copy" / "nietzsche.txt"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)
    return workload_data(d, "nietzsche", [f], [40], "int32", 57, **kw)


@case("loader text", "nietzsche.txt: not UTF-8")
def _(d):
    return _text(d, b"abc " * 40 + b"\xff\xfe" + b"def " * 40, mentions=("nietzsche.txt", "UTF-8"))


@case("loader text", "nietzsche.txt: shorter than one sequence")
def _(d):
    return _text(d, b"too short", mentions=("nietzsche.txt",))


@case("loader text", "nietzsche.txt: more distinct characters than classes")
def _(d):
    text = "".join(chr(0x4E00 + i) for i in range(200)) * 2
    return _text(d, text.encode(), mentions=("nietzsche.txt", "distinct"))


@case("loader text", "nietzsche.txt: empty")
def _(d):
    return _text(d, b"", mentions=("nietzsche.txt",))


# --- the cases: image folders -----------------------------------------------------------------


@case("loader image folder", "a valid two-class copy (control)")
def _(d):
    image_folder(d / "copy")
    return catsdogs(d, expect="succeed")


@case("loader image folder", "three class folders for two classes")
def _(d):
    image_folder(d / "copy", classes=("cats", "dogs", "birds"))
    return catsdogs(d, mentions=("training_set",))


@case("loader image folder", "class folders Cats and cats (one folder where case is ignored)")
def _(d):
    image_folder(d / "copy", classes=("Cats", "cats"))
    return catsdogs(d, mentions=("Cats", "cats"))


@case("loader image folder", "the test split's classes differ from the train split's")
def _(d):
    image_folder(d / "copy", test_classes=("cats", "wolves"))
    return catsdogs(d, mentions=("test_set",))


@case("loader image folder", "a class folder that is a looping symbolic link")
def _(d):
    image_folder(d / "copy")
    (d / "copy" / "training_set" / "loop").symlink_to(d / "copy" / "training_set" / "loop")
    return catsdogs(d, mentions=("loop",))


@case("loader image folder", "a class folder named with bytes that are not UTF-8")
def _(d):
    image_folder(d / "copy")
    os.rename(d / "copy" / "training_set" / "cats", os.fsencode(d / "copy" / "training_set") +
              b"/caf\xe9")  # fmt: skip
    return catsdogs(d, mentions=("caf",))


@case("loader image folder", "an image that is text")
def _(d):
    image_folder(d / "copy")
    (d / "copy" / "training_set" / "cats" / "0.png").write_text("not an image")
    return catsdogs(d, mentions=("0.png",))


@case("loader image folder", "an image whose header claims 40000x40000 px (a bomb)")
def _(d):
    image_folder(d / "copy")
    png_header_only(d / "copy" / "training_set" / "cats" / "0.png", 40000, 40000)
    return catsdogs(d, mentions=("0.png",))


@case("loader image folder", "a folder named like an image (x.jpg/)")
def _(d):
    image_folder(d / "copy")
    (d / "copy" / "training_set" / "cats" / "x.jpg").mkdir()
    return catsdogs(d, mentions=("x.jpg",))


@case("loader image folder", "a named pipe named like an image")
def _(d):
    image_folder(d / "copy")
    os.mkfifo(d / "copy" / "training_set" / "cats" / "fifo.png")
    run = catsdogs(d, mentions=("fifo.png",))
    run.timeout = 15
    return run


@case("loader image folder", "class folders without images")
def _(d):
    for split in ("training_set", "test_set"):
        for c in ("cats", "dogs"):
            (d / "copy" / split / c).mkdir(parents=True)
    return catsdogs(d, mentions=("training_set",))


# --- the cases: class names written as folders (workload-files) -------------------------------


@case("class folders", "class_names ../../evil in the arrays' info")
def _(d):
    a = arrays_file(d / "arrays.npz", names=["../../evil", "dogs"])
    return workload_files(d, a, mentions=("../../evil",), outputs=(d / "files" / "train",),
                          outside=(d / "evil",))  # fmt: skip


@case("class folders", "class_names /tmp/<abs> (an absolute path)")
def _(d):
    target = d / "abs"
    a = arrays_file(d / "arrays.npz", names=[str(target), "zz"])
    return workload_files(d, a, mentions=(str(target),), outside=(target,))


@case("class folders", "class_names not in sorted order")
def _(d):
    a = arrays_file(d / "arrays.npz", names=["dogs", "cats"])
    return workload_files(d, a, mentions=("class names",), outputs=(d / "files" / "train",))


@case("class folders", "labels beyond the class count in the arrays")
def _(d):
    a = arrays_file(d / "arrays.npz", labels=(0, 5))
    return workload_files(d, a, mentions=("arrays.npz",), outputs=(d / "files" / "train",))


@case("class folders", "info classes is text ('2'), not a number")
def _(d):
    a = arrays_file(d / "arrays.npz", info_classes="2")
    return workload_files(d, a, mentions=("arrays.npz",), outputs=(d / "files" / "train",))


@case("class folders", "valid arrays with sorted names (control)")
def _(d):
    a = arrays_file(d / "arrays.npz", names=["cats", "dogs"])

    def verify():
        n = len(list((d / "files" / "train").rglob("*.jpg")))
        return None if n == 2 else f"{n} images written"

    return workload_files(d, a, expect="succeed", verify=verify)


# --- the cases: downloads ----------------------------------------------------------------------


class Server:
    """Files served on 127.0.0.1 by path, with faults: see :meth:`Handler.do_GET`."""

    def __init__(self):
        self.zip_bytes = _zip_bytes()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                body = server.zip_bytes
                path = self.path
                try:
                    if path == "/ok.zip":
                        self._send(200, body)
                    elif path == "/missing.zip":
                        self._send(404, b"no")
                    elif path == "/page.zip":
                        self._send(200, b"<!DOCTYPE html><html>login</html>")
                    elif path == "/garbage.zip":
                        self._send(200, b"\x00\x01garbage" * 100)
                    elif path == "/cut.zip":  # promises the whole file, sends a third
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body[: len(body) // 3])
                        self.wfile.flush()
                        self.connection.shutdown(2)
                    elif path == "/endless.txt":  # no length, no end
                        self.send_response(200)
                        self.end_headers()
                        while True:
                            self.wfile.write(b"endless text " * 8192)
                    elif path == "/badlength.zip":
                        self.send_response(200)
                        self.send_header("Content-Length", "lots")
                        self.end_headers()
                        self.wfile.write(body)
                        self.close_connection = True
                    else:
                        self._send(404, b"no")
                except OSError:
                    pass

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self) -> None:
        self.httpd.shutdown()


def _zip_bytes() -> bytes:
    """A small zip archive, the same bytes at every call (a fixed member date)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("E00/Frame000.png", (2026, 1, 1, 0, 0, 0)), b"x" * 5000)
    return buf.getvalue()


SERVER: Server | None = None


def server() -> Server:
    global SERVER
    if SERVER is None:
        SERVER = Server()
    return SERVER


def download(d: Path, path: str, *extra, out: Path | None = None, **run) -> Run:
    out = out or d / "db.zip"
    argv = eb("download", "--url", server().url(path), "--out", out, "--info", d / "info.json",
              "--retries", "0", "--timeout", "5", "--no-progress", *extra)  # fmt: skip
    run.setdefault("outputs", (out, d / "info.json"))
    return Run(argv, **run)


@case("download", "a file served whole (control)")
def _(d):
    def verify():
        info = json.loads((d / "info.json").read_text())
        return None if info["sha256"] == hashlib.sha256(_zip_bytes()).hexdigest() else "sha256"

    return download(d, "/ok.zip", expect="succeed", verify=verify, outputs=())


@case("download", "HTTP 404")
def _(d):
    return download(d, "/missing.zip", mentions=("404",))


@case("download", "a login page sent with HTTP 200")
def _(d):
    return download(
        d, "/page.zip", mentions=("web page",), outputs=(d / "db.zip", d / "db.zip.part")
    )


@case("download", "bytes that are not an archive")
def _(d):
    return download(d, "/garbage.zip", mentions=("archive",))


@case("download", "the connection cut after a third, no sha256")
def _(d):
    return download(d, "/cut.zip", mentions=("cut.zip",), outputs=(d / "db.zip", d / "db.zip.part"))


@case("download", "the connection cut after a third, with a sha256 (kept for resume)")
def _(d):
    digest = hashlib.sha256(_zip_bytes()).hexdigest()
    return download(d, "/cut.zip", "--sha256", digest, mentions=("cut.zip",))


@case("download", "a sha256 that does not match")
def _(d):
    return download(d, "/ok.zip", "--sha256", "0" * 64, mentions=("sha256",),
                    outputs=(d / "db.zip", d / "db.zip.part"))  # fmt: skip


@case("download", "a Content-Length that is not a number (the body is whole)")
def _(d):
    # A length that is not a number is no length (as urllib3 reads it): the bytes are what
    # the archive check judges.
    def verify():
        got = hashlib.sha256((d / "db.zip").read_bytes()).hexdigest()
        return None if got == hashlib.sha256(_zip_bytes()).hexdigest() else "other bytes"

    return download(d, "/badlength.zip", expect="succeed", verify=verify, outputs=())


@case("download", "--out is an existing folder of the user's")
def _(d):
    (d / "mine").mkdir()
    (d / "mine" / "notes.txt").write_text("mine")
    notes = d / "mine" / "notes.txt"
    return download(d, "/ok.zip", out=d / "mine", mentions=("mine",), keep=(notes,), outputs=())


@case("download", "--out's .part is a folder")
def _(d):
    (d / "db.zip.part").mkdir()
    return download(d, "/ok.zip", mentions=("db.zip.part",))


@case("download", "--timeout 0")
def _(d):
    return download(d, "/ok.zip", "--timeout", "0", mentions=("timeout",))


@case("download", "--timeout nan")
def _(d):
    return download(d, "/ok.zip", "--timeout", "nan", mentions=("timeout",))


@case("download", "--retries -1")
def _(d):
    return download(d, "/ok.zip", "--retries", "-1", mentions=("retries",))


@case("download", "a host name that does not resolve")
def _(d):
    out = d / "db.zip"
    argv = eb("download", "--url", "http://no-such-host.invalid/db.zip", "--out", out,
              "--info", d / "info.json", "--retries", "0", "--no-progress")  # fmt: skip
    return Run(argv, mentions=("no-such-host.invalid",), outputs=(out,))


@case("download", "a dataset's file sent without end (the registry gives its size)")
def _(d):
    run = Run(probe("fetch_file", server().url("/endless.txt"), str(d / "raw" / "nietzsche.txt")),
              mentions=("endless.txt", "600,901"), outputs=(d / "raw" / "nietzsche.txt",),
              timeout=20)  # fmt: skip
    return run


@case("download", "dataset-file of a dataset name that climbs out (../../etc)")
def _(d):
    return Run(eb("dataset-file", "--dataset", "../../etc", "--file", "passwd", "--out", d / "x"),
               mentions=("../../etc",), outputs=(d / "x",))  # fmt: skip


# --- the cases: a model of one's own -----------------------------------------------------------


def _model(d: Path, model: str, files: dict[str, str], **run) -> Run:
    for name, text in files.items():
        (d / "mods" / name).parent.mkdir(parents=True, exist_ok=True)
        (d / "mods" / name).write_text(text)
    entry = {"name": "mine", "model": model, "dataset": "mnist", "data": "synthetic",
             "train_samples": 64, "test_samples": 16, "epochs": 1, "batch_size": 8,
             "learning_rate": 0.001}  # fmt: skip
    env = {"PYTHONPATH": os.pathsep.join([str(d / "mods"), str(SRC)])}
    return check(d, config(d, [entry]), env=env, **run)


BUILD = "def build(input_shape, classes):\n    return None\n"


@case("own model", "a module that writes a file when imported (check-config must not run it)")
def _(d):
    sentinel = d / "imported"
    text = f"open({str(sentinel)!r}, 'w').write('ran')\n" + BUILD
    return _model(d, "evilmod:build", {"evilmod.py": text}, expect="succeed", outside=(sentinel,))


@case("own model", "a package whose __init__ writes a file (check-config must not run it)")
def _(d):
    sentinel = d / "imported"
    init = f"open({str(sentinel)!r}, 'w').write('ran')\n"
    files = {"evilpkg/__init__.py": init, "evilpkg/models.py": BUILD}
    return _model(d, "evilpkg.models:build", files, expect="succeed", outside=(sentinel,))


@case("own model", "model: os:system")
def _(d):
    return _model(d, "os:system", {}, mentions=("model", "os:system"))


@case("own model", "model: subprocess:run")
def _(d):
    return _model(d, "subprocess:run", {}, mentions=("model", "subprocess"))


@case("own model", "model: builtins:eval")
def _(d):
    return _model(d, "builtins:eval", {}, mentions=("model", "builtins"))


@case("own model", "model: embryo_bench.cli:main")
def _(d):
    return _model(d, "embryo_bench.cli:main", {}, mentions=("model", "embryo_bench.cli"))


@case("own model", "model: a module that does not exist")
def _(d):
    return _model(d, "nosuchmod:build", {}, mentions=("model", "nosuchmod"))


@case("own model", "model: a name bound to os.system (from os import system as build)")
def _(d):
    return _model(d, "mymod:build", {"mymod.py": "from os import system as build\n"},
                  mentions=("model", "mymod:build"))  # fmt: skip


@case("own model", "model: a name assigned a lambda")
def _(d):
    return _model(d, "mymod:build", {"mymod.py": "build = lambda s, c: None\n"},
                  mentions=("model", "mymod:build"))  # fmt: skip


@case("own model", "model: a class")
def _(d):
    return _model(d, "mymod:Build", {"mymod.py": "class Build:\n    pass\n"},
                  mentions=("model", "mymod:Build"))  # fmt: skip


@case("own model", "model: a module with a syntax error")
def _(d):
    return _model(d, "mymod:build", {"mymod.py": "def build(:\n"}, mentions=("model", "mymod"))


@case("own model", "model: without dataset:")
def _(d):
    (d / "mods").mkdir()
    (d / "mods" / "mymod.py").write_text(BUILD)
    entry = {"name": "mine", "model": "mymod:build", "data": "synthetic", "epochs": 1,
             "batch_size": 8, "learning_rate": 0.001}  # fmt: skip
    env = {"PYTHONPATH": os.pathsep.join([str(d / "mods"), str(SRC)])}
    return check(d, config(d, [entry]), env=env, mentions=("workloads[0]", "dataset"))


def _builder_module(d: Path, text: str) -> dict[str, str]:
    (d / "mods").mkdir(exist_ok=True)
    (d / "mods" / "mymod.py").write_text(text)
    return {"PYTHONPATH": os.pathsep.join([str(d / "mods"), str(SRC)]), "KERAS_BACKEND": "jax"}


@case("own model", "trainer: a module that calls sys.exit(0) when imported")
def _(d):
    env = _builder_module(d, "import sys\nsys.exit(0)\n" + BUILD)
    return Run(probe("load_builder", "mymod:build"), env=env, mentions=("mymod", "SystemExit"))


@case("own model", "trainer: a module that parses sys.argv with argparse when imported")
def _(d):
    text = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data')\n"
    env = _builder_module(d, text + "args = p.parse_args()\n" + BUILD)
    return Run(probe("load_builder", "mymod:build"), env=env, mentions=("mymod", "SystemExit"))


@case("own model", "trainer: a builder that returns None")
def _(d):
    env = _builder_module(d, BUILD)
    return Run(probe("build_model", "mymod:build"), env=env, mentions=("mymod:build", "None"))


@case("own model", "trainer: a builder whose output is 50 wide for 10 classes")
def _(d):
    text = ("import keras\ndef build(input_shape, classes):\n"
            "    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),"
            " keras.layers.Dense(50)])\n")  # fmt: skip
    env = _builder_module(d, text)
    return Run(probe("build_model", "mymod:build"), env=env, mentions=("mymod:build", "output"))


@case("own model", "trainer: a builder that calls sys.exit(3)")
def _(d):
    env = _builder_module(d, "import sys\ndef build(input_shape, classes):\n    sys.exit(3)\n")
    return Run(probe("build_model", "mymod:build"), env=env, mentions=("mymod:build", "SystemExit"))


# --- the cases: sizes ------------------------------------------------------------------------


@case("sizes", "synthetic MNIST of 10^12 training samples")
def _(d):
    entry = {**SYNTH_MLP, "train_samples": 10**12}
    return check(d, config(d, [entry]), mentions=("workloads[0]", "train_samples"))


@case("sizes", "a model of one's own on 100000x100000x3 synthetic images")
def _(d):
    (d / "mods").mkdir()
    (d / "mods" / "mymod.py").write_text(BUILD)
    entry = {"name": "mine", "model": "mymod:build", "dataset": "cifar10", "data": "synthetic",
             "input_shape": [100000, 100000, 3], "train_samples": 1000, "test_samples": 10,
             "epochs": 1, "batch_size": 8, "learning_rate": 0.001}  # fmt: skip
    env = {"PYTHONPATH": os.pathsep.join([str(d / "mods"), str(SRC)])}
    return check(d, config(d, [entry]), env=env, mentions=("workloads[0]",))


@case("sizes", "batch_size above the training samples")
def _(d):
    entry = {**SYNTH_MLP, "batch_size": 10**9}
    return check(d, config(d, [entry]), mentions=("workloads[0]", "batch_size"))


@case("sizes", "train_samples: -1")
def _(d):
    entry = {**SYNTH_MLP, "train_samples": -1}
    return check(d, config(d, [entry]), mentions=("train_samples",))


@case("sizes", "cifar10 copy at input_shape 64x64x3 (larger than its 32x32 images)")
def _(d):
    f = cifar_tar(d / "copy" / "cifar-10-binary.tar.gz", names=CIFAR_NAMES)
    entry = {"name": "cifar10-cnn", "path": "copy", "input_shape": [64, 64, 3],
             "sha256": {f.name: sha(f)}}  # fmt: skip
    return check(d, config(d, [entry]), mentions=("workloads[0]", "input_shape"))


@case("sizes", "an image folder at input_shape 64x64x2 (two channels)")
def _(d):
    image_folder(d / "copy")
    entry = {"name": "catsdogs-cnn", "path": "copy", "input_shape": [64, 64, 2]}
    return check(d, config(d, [entry]), mentions=("workloads[0]", "input_shape"))


@case("sizes", "a text workload's real data at input_shape 40x2 (sequences are one axis)")
def _(d):
    entry = {"name": "lstm-text-generation", "input_shape": [40, 2], "batch_size": 8}
    return check(d, config(d, [entry]), mentions=("workloads[0]", "input_shape"))


# --- the cases: NaN and infinity ---------------------------------------------------------------


@case("NaN", "a workload's learning_rate: .nan")
def _(d):
    text = ("  - {name: mnist-mlp, data: synthetic, train_samples: 256, test_samples: 64,"
            " learning_rate: .nan}\n")  # fmt: skip
    path = config(d)
    path.write_text(path.read_text().replace("workloads:\n- name: paper\n", "workloads:\n" + text))
    return check(d, path, mentions=("learning_rate", "nan"))


@case("NaN", "hourly_usd: .inf")
def _(d):
    path = config(d, targets=[{"name": "host-1cpu", "runner": "host", "cpus": 1,
                               "hourly_usd": 1.0}])  # fmt: skip
    path.write_text(path.read_text().replace("hourly_usd: 1.0", "hourly_usd: .inf"))
    return check(d, path, mentions=("hourly_usd", "inf"))


@case("NaN", "compare.min_difference: .nan in a second configfile")
def _(d):
    second = d / "second.yaml"
    second.write_text("compare:\n  min_difference: .nan\n")
    return check(d, config(d), second, mentions=("second.yaml", "min_difference"))


@case("NaN", "run.json with learning_rate NaN (batch-limit --spec)")
def _(d):
    spec = run_json(d / "run.json")
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "learning_rate": float("nan")}))
    return Run(eb("batch-limit", "--spec", spec, "--out", d / "bl"),
               mentions=("run.json", "learning_rate"), outputs=(d / "bl",))  # fmt: skip


@case("NaN", "metrics.json with mean_images_per_s NaN (compare)")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _edit_metrics(b, mean_images_per_s=float("nan"))
    return Run(eb("compare", a, b), mentions=("metrics.json", "mean_images_per_s"))


@case("NaN", "compare --min-difference nan")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    return Run(eb("compare", a, b, "--min-difference", "nan"), mentions=("--min-difference",))


@case("NaN", "a --reference file with tolerance: .nan")
def _(d):
    a = result_folder(d / "a", 100)
    ref = d / "ref.yaml"
    ref.write_text("tolerance: .nan\ntargets:\n  host-1cpu: {images_per_s: 100}\n")
    return Run(eb("compare", a, "--reference", ref), mentions=("ref.yaml", "tolerance"))


@case("NaN", "batch-limit --budget nan")
def _(d):
    spec = run_json(d / "run.json")
    # --memory-limit 10m is refused after --budget is checked: a refusal naming
    # --memory-limit means that --budget nan was accepted.
    argv = eb("batch-limit", "--spec", spec, "--out", d / "bl", "--budget", "nan",
              "--memory-limit", "10m")  # fmt: skip
    return Run(argv, mentions=("--budget",), outputs=(d / "bl",))


@case("NaN", "batch-limit --resolution inf")
def _(d):
    spec = run_json(d / "run.json")
    return Run(eb("batch-limit", "--spec", spec, "--out", d / "bl", "--resolution", "inf"),
               mentions=("--resolution",), outputs=(d / "bl",))  # fmt: skip


@case("config files", "a configuration of aliases of aliases (10^10 values once expanded)")
def _(d):
    lines = ["x-0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"x-{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 10)]
    path = config(d)
    path.write_text(path.read_text() + "\n".join(lines) + "\n")
    return check(d, path, mentions=("config.yaml", "values"), timeout=20)


@case("config files", "a configuration nested 3,000 levels deep")
def _(d):
    path = config(d)
    path.write_text(path.read_text() + "x-deep: " + "[" * 3000 + "]" * 3000 + "\n")
    return check(d, path, mentions=("config.yaml",))


# --- the cases: compare and its --reference ----------------------------------------------------

PP = {"frame_size": 48, "crop_fraction": 0.5, "invert_centre": 128, "rotation_step": 90.0,
      "image_size": 16}  # fmt: skip
TRAIN = {"epochs": 1, "batch_size": 480, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0,
         "accuracy_target": 0.85, "repeats": 1, "probe_seconds": 0, "variant": "keras"}  # fmt: skip
MACHINE = {"hostname": "vm", "cpu_model": "Xeon", "cpu_id": "GenuineIntel 6/143/8",
           "cpu_flags": ["avx2"], "host_cores": 2, "memory_mib": 24105, "gpus": []}  # fmt: skip


def result_folder(root: Path, speed: float, rounds: int = 3) -> Path:
    """A made-up outdir: host-1cpu at ``speed`` images/s (times a small noise) and host-2cpu
    at 1.5 x, ``rounds`` rounds."""
    from embryo_bench.planning.targets import target_from_entry
    from embryo_bench.vocabulary.layout import METRICS_FORMAT
    from embryo_bench.vocabulary.spec import Preprocessing

    for k in range(1, rounds + 1):
        for target, factor in (("host-1cpu", 1.0), ("host-2cpu", 1.5)):
            rate = speed * factor * (1 + 0.01 * (k - 2)) if k != 1 else speed * factor
            run = root / "train" / target / f"repeat-{k}"
            run.mkdir(parents=True)
            seconds = 2000 / rate
            start = 1.8e9 + 10 * k
            metrics = {
                "format": METRICS_FORMAT, "target": target, "repeat": k, "seed": 0,
                "runner": "host", "cpus": 1, "gpus": 0, "backend": "tensorflow", "threads": 1,
                "batch_size": 480, "n_train": 1000, "n_test": 250, "epochs": 2,
                "training_seconds": seconds, "first_epoch_seconds": seconds / 2,
                "steady_epoch_seconds": seconds / 2, "mean_images_per_s": rate,
                "final_test_accuracy": 0.6, "best_test_accuracy": 0.6, "accuracy_target": 0.85,
                "time_to_accuracy_seconds": None, "parameter_count": 10, "telemetry": {},
                "wall_clock": {"started_unix_s": start, "ended_unix_s": start + 1},
                "provenance": {**MACHINE, "keras_backend": "tensorflow", "versions": {},
                               "dataset": {"label": "made up", "synthetic": True}},
            }  # fmt: skip
            (run / "metrics.json").write_text(json.dumps(metrics))
            (run / "history.csv").write_text(
                "epoch,test_accuracy,epoch_seconds\n1,0.5,1\n2,0.6,1\n"
            )
            entry = {"name": target, "runner": "host", "cpus": 1}
            spec = target_from_entry(entry).spec(k, TRAIN, Preprocessing.from_dict(PP))
            (run / "run.json").write_text(json.dumps(spec.to_dict()))
    return root


def _metrics(folder: Path) -> Path:
    return folder / "train" / "host-1cpu" / "repeat-1" / "metrics.json"


def _edit_metrics(folder: Path, **values) -> None:
    """Set keys of host-1cpu repeat 1's metrics.json (NaN written as JSON's NaN)."""
    path = _metrics(folder)
    path.write_text(json.dumps({**json.loads(path.read_text()), **values}))


@case("compare", "two folders of one speed (control)")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    return Run(eb("compare", a, b), expect="succeed")


@case("compare", "one folder and no --reference")
def _(d):
    return Run(eb("compare", result_folder(d / "a", 100)), mentions=("--reference",))


@case("compare", "the same folder twice")
def _(d):
    a = result_folder(d / "a", 100)
    return Run(eb("compare", a, f"{a}/"), mentions=("same folder",))


@case("compare", "a folder that does not exist")
def _(d):
    return Run(eb("compare", result_folder(d / "a", 100), d / "b"), mentions=(str(d / "b"),))


@case("compare", "metrics.json is a folder")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _metrics(b).unlink()
    _metrics(b).mkdir()
    return Run(eb("compare", a, b), mentions=("metrics.json",))


@case("compare", "metrics.json is not UTF-8")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _metrics(b).write_bytes(b'{"target": "\xff\xfe"}')
    return Run(eb("compare", a, b), mentions=("metrics.json",))


@case("compare", "metrics.json holds a list")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _metrics(b).write_text("[1, 2]")
    return Run(eb("compare", a, b), mentions=("metrics.json",))


@case("compare", "mean_images_per_s -5")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _edit_metrics(b, mean_images_per_s=-5)
    return Run(eb("compare", a, b), mentions=("metrics.json", "mean_images_per_s"))


@case("compare", "mean_images_per_s a string")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    _edit_metrics(b, mean_images_per_s="fast")
    return Run(eb("compare", a, b), mentions=("metrics.json", "mean_images_per_s"))


@case("compare", "a run's run.json deleted")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    (_metrics(b).parent / "run.json").unlink()
    return Run(eb("compare", a, b), mentions=("run.json",))


@case("compare", "--reference a folder")
def _(d):
    (d / "ref").mkdir()
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref"),
               mentions=("--reference",))  # fmt: skip


@case("compare", "--reference an empty file")
def _(d):
    (d / "ref.yaml").write_text("")
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref.yaml"),
               mentions=("ref.yaml",))  # fmt: skip


@case("compare", "--reference with an unknown key")
def _(d):
    (d / "ref.yaml").write_text("targets:\n  host-1cpu: {images_per_sec: 100}\n")
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref.yaml"),
               mentions=("ref.yaml", "images_per_sec"))  # fmt: skip


@case("compare", "--reference expecting 0 images/s")
def _(d):
    (d / "ref.yaml").write_text("targets:\n  host-1cpu: {images_per_s: 0}\n")
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref.yaml"),
               mentions=("ref.yaml", "images_per_s"))  # fmt: skip


@case("compare", "--reference with a target given twice")
def _(d):
    (d / "ref.yaml").write_text(
        "targets:\n  host-1cpu: {images_per_s: 100}\n  host-1cpu: {images_per_s: 5}\n"
    )
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref.yaml"),
               mentions=("ref.yaml", "twice"))  # fmt: skip


@case("compare", "--reference whose only target is misspelt (host-1-cpu)")
def _(d):
    (d / "ref.yaml").write_text("targets:\n  host-1-cpu: {images_per_s: 1000}\n")
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", d / "ref.yaml"),
               mentions=("ref.yaml", "host-1-cpu"))  # fmt: skip


@case("compare", "--markdown onto the --reference file itself")
def _(d):
    ref = d / "ref.yaml"
    ref.write_text("targets:\n  host-1cpu: {images_per_s: 100}\n")
    return Run(eb("compare", result_folder(d / "a", 100), "--reference", ref, "--markdown", ref),
               mentions=("--markdown",), keep=(ref,))  # fmt: skip


@case("compare", "--csv onto a run's metrics.json in a compared folder")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    return Run(eb("compare", a, b, "--csv", _metrics(b)), mentions=("--csv",), keep=(_metrics(b),))


@case("compare", "--csv and --markdown the same file")
def _(d):
    a, b = result_folder(d / "a", 100), result_folder(d / "b", 100)
    return Run(eb("compare", a, b, "--csv", d / "x", "--markdown", d / "x"),
               mentions=("--markdown",), outputs=(d / "x",))  # fmt: skip


# --- the cases: published numbers and studies --------------------------------------------------


def package_copy(d: Path) -> Path:
    """A copy of the package and its configs (src/, config/) in ``d``: its studies' files are
    edited there, never in this checkout. Returns the copy's Wu et al. folder."""
    shutil.copytree(SRC, d / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "config", d / "config")
    return d / "src" / "embryo_bench" / "studies" / "wu"


def _study_check(d: Path, *files: str, **run) -> Run:
    env = {"PYTHONPATH": str(d / "src")}
    return Run(eb("check-config", *files), cwd=d, env=env, **run)


@case("published", "a number edited in wu's numbers.csv")
def _(d):
    wu = package_copy(d)
    text = (wu / "numbers.csv").read_text()
    (wu / "numbers.csv").write_text(text.replace("1114.34", "114.34", 1))
    return _study_check(d, "config/wu.yaml", mentions=("numbers.csv", "sha256"))


@case("published", "wu's numbers.csv deleted")
def _(d):
    wu = package_copy(d)
    (wu / "numbers.csv").unlink()
    return _study_check(d, "config/wu.yaml", mentions=("numbers.csv",))


@case("published", "wu's numbers.csv replaced by a folder")
def _(d):
    wu = package_copy(d)
    (wu / "numbers.csv").unlink()
    (wu / "numbers.csv").mkdir()
    return _study_check(d, "config/wu.yaml", mentions=("numbers.csv",))


@case("published", "wu's study.yaml: an empty list")
def _(d):
    wu = package_copy(d)
    (wu / "study.yaml").write_text("[]\n")
    return _study_check(d, "config/wu.yaml", mentions=("study.yaml",))


@case("published", "wu's study.yaml: a sha256 that is not hex")
def _(d):
    wu = package_copy(d)
    text = (wu / "study.yaml").read_text()
    (wu / "study.yaml").write_text(text.replace("sha256: 69cb", "sha256: zz69", 1))
    return _study_check(d, "config/wu.yaml", mentions=("study.yaml", "sha256"))


@case("published", "wu's study.yaml deleted")
def _(d):
    wu = package_copy(d)
    (wu / "study.yaml").unlink()
    return _study_check(d, "config/wu.yaml", mentions=("study", "wu"))


@case("published", "the claims module of the study deleted")
def _(d):
    wu = package_copy(d)
    (wu / "claims.py").unlink()
    return _study_check(d, "config/wu.yaml", mentions=("claims.py",))


@case("studies", "study: a name that is not a study")
def _(d):
    return check(d, config(d, study="nosuch"), mentions=("study", "nosuch"))


@case("studies", "study: WU (another case)")
def _(d):
    return check(d, config(d, study="WU"), mentions=("study", "WU"))


@case("studies", "wu.yaml + minimaxir-short.yaml (another study's short form)")
def _(d):
    return Run(eb("check-config", REPO / "config/wu.yaml", REPO / "config/minimaxir-short.yaml"),
               cwd=d, mentions=("minimaxir", "wu"))  # fmt: skip


@case("studies", "wu.yaml + wu-short.yaml (its own short form: control)")
def _(d):
    return Run(eb("check-config", REPO / "config/wu.yaml", REPO / "config/wu-short.yaml"),
               cwd=d, expect="succeed")  # fmt: skip


@case("studies", "wu-short.yaml + wu.yaml (the study over its short form, reversed)")
def _(d):
    # Both name wu: the study's own configuration replaces the short form's lists (runs
    # the whole study). Valid, as the order says.
    return Run(eb("check-config", REPO / "config/wu-short.yaml", REPO / "config/wu.yaml"),
               cwd=d, expect="succeed")  # fmt: skip


@case("studies", "a third file naming another study over a study and its short form")
def _(d):
    third = d / "third.yaml"
    third.write_text("study: datamadness\n")
    return Run(eb("check-config", REPO / "config/wu.yaml", REPO / "config/wu-short.yaml", third),
               cwd=d, mentions=("datamadness", "third.yaml"))  # fmt: skip


# --- the cases: GPU settings -------------------------------------------------------------------


def _target(d: Path, mentions: tuple[str, ...], **target) -> Run:
    t = {"name": "gpu-1", "runner": "host", "cpus": 1, **target}
    return check(d, config(d, targets=[t]), mentions=mentions)


@case("GPU settings", "precision: float64")
def _(d):
    return _target(d, ("precision",), precision="float64")


@case("GPU settings", "gpus: -1 on a host target")
def _(d):
    return _target(d, ("gpus",), gpus=-1)


@case("GPU settings", "gpus: 1.5")
def _(d):
    return _target(d, ("gpus",), gpus=1.5)


@case("GPU settings", "strategy: mirrored on the JAX backend")
def _(d):
    return _target(d, ("gpu-1", "mirrored", "jax"), strategy="mirrored", backend="jax", gpus=1)


@case("GPU settings", "gpus: 1 on a docker target of the cpu image")
def _(d):
    return _target(d, ("gpu-1", "image", "cpu"), runner="docker", image="cpu", gpus=1)


@case("GPU settings", "a sweep of precisions listing one twice")
def _(d):
    sweeps = [{"target": "host-1cpu", "precision": ["float32", "float32"]}]
    return check(d, config(d, sweeps=sweeps), mentions=("sweeps[0].precision",))


@case("GPU settings", "gpus: 2 on this machine with on_missing_hardware: fail (dry run)")
def _(d):
    path = config(d, targets=[{"name": "gpu-2", "runner": "host", "cpus": 1, "gpus": 2}],
                  on_missing_hardware="fail")  # fmt: skip
    argv = [PYTHON, "-m", "snakemake", "-n", "-s", REPO / "Snakefile", "--configfile", path]
    return Run([str(a) for a in argv], cwd=d, mentions=("gpu-2", "GPU"), refused_status=1,
               timeout=90, prefix="")  # fmt: skip


def run_json(path: Path) -> Path:
    """A run.json of workload mnist-mlp (synthetic) on host-1cpu, as the workflow writes it."""
    from embryo_bench.planning.plan import Plan

    c = copy.deepcopy(BASE)
    c["workloads"] = [SYNTH_MLP]
    plan = Plan.from_config(c, hardware_check="none")
    plan.spec("host-1cpu", 1, "mnist-mlp").write(path)
    return path


def _bl(d: Path, *extra, **run) -> Run:
    spec = run_json(d / "run.json")
    run.setdefault("outputs", (d / "bl" / "batch_limit.json",))
    return Run(eb("batch-limit", "--spec", spec, "--out", d / "bl", *extra), **run)


@case("batch-limit", "--spec a file that does not exist")
def _(d):
    return Run(eb("batch-limit", "--spec", d / "run.json", "--out", d / "bl"),
               mentions=("run.json",))  # fmt: skip


@case("batch-limit", "--spec a folder")
def _(d):
    (d / "run.json").mkdir()
    return Run(eb("batch-limit", "--spec", d / "run.json", "--out", d / "bl"),
               mentions=("run.json",))  # fmt: skip


@case("batch-limit", "--start 0")
def _(d):
    return _bl(d, "--start", "0", mentions=("--start",))


@case("batch-limit", "--epochs 1")
def _(d):
    return _bl(d, "--epochs", "1", mentions=("--epochs",))


@case("batch-limit", "--budget -1")
def _(d):
    return _bl(d, "--budget", "-1", mentions=("--budget",))


@case("batch-limit", "--memory-limit 10m")
def _(d):
    return _bl(d, "--memory-limit", "10m", mentions=("--memory-limit",))


@case("batch-limit", "--memory-limit nang")
def _(d):
    return _bl(d, "--memory-limit", "nang", mentions=("--memory-limit",))


@case("batch-limit", "--memory-limit infg")
def _(d):
    return _bl(d, "--memory-limit", "infg", mentions=("--memory-limit",))


@case("batch-limit", "--out an existing file")
def _(d):
    (d / "bl").write_text("mine")
    # A budget spent before the first trial: no trial runs, whatever --out does.
    return _bl(d, "--budget", "1e-9", mentions=("--out",), keep=(d / "bl",), outputs=())


@case("batch-limit", "a run.json of 1 GPU on this machine without one (one JAX trial)")
def _(d):
    spec = run_json(d / "run.json")
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "gpus": 1, "backend": "jax"}))
    argv = eb("batch-limit", "--spec", spec, "--out", d / "bl", "--steps", "2", "--epochs", "2",
              "--memory-limit", "2g")  # fmt: skip
    return Run(argv, mentions=("gpus",), outputs=(d / "bl" / "batch_limit.json",))


@case("batch-limit", "--steps 10^9: not one sample's data fits in --memory-limit")
def _(d):
    spec = run_json(d / "run.json")
    return Run(probe("check_settings", str(spec), 10**9, "1g"), mentions=("--steps",))


# --- the cases: gpu_session.py unpack -----------------------------------------------------------


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode="w:gz") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, None


def _inner(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def unpack(d: Path, members, **run) -> Run:
    rec = _tar(d / "in" / "records-paper.tar.gz", members)
    run.setdefault("outside", (d / "evil", Path("/tmp/fault-pass-evil")))
    argv = [PYTHON, str(REPO / "benchmarks" / "gpu_session.py"), "unpack", str(rec),
            "--into", str(d / "into")]  # fmt: skip
    return Run(argv, cwd=d, prefix="gpu_session", **run)


@case("gpu_session unpack", "a member ../evil")
def _(d):
    return unpack(d, [_file("../evil")], mentions=("../evil",))


@case("gpu_session unpack", "a member /tmp/fault-pass-evil (absolute)")
def _(d):
    return unpack(d, [_file("/tmp/fault-pass-evil")], mentions=("/tmp/fault-pass-evil",))


@case("gpu_session unpack", "a symbolic link member to ..")
def _(d):
    return unpack(d, [_special("link", tarfile.SYMTYPE, ".."), _file("link/evil")],
                  mentions=("link",))  # fmt: skip


@case("gpu_session unpack", "a hard link member")
def _(d):
    return unpack(d, [_special("hard", tarfile.LNKTYPE, "/etc/passwd")], mentions=("hard",))


@case("gpu_session unpack", "a device member")
def _(d):
    return unpack(d, [_special("dev", tarfile.CHRTYPE)], mentions=("dev",))


@case("gpu_session unpack", "a nested .tar.gz holding ../../evil")
def _(d):
    inner = _inner([_file("../../evil")])
    return unpack(d, [_file("results.tar.gz", inner)], mentions=("../../evil",))


@case("gpu_session unpack", "a nested .tar.gz holding a symbolic link out")
def _(d):
    inner = _inner([_special("up", tarfile.SYMTYPE, "../.."), _file("up/evil")])
    return unpack(d, [_file("results.tar.gz", inner)], mentions=("up",))


@case("gpu_session unpack", "a member named .tar.gz that is a folder")
def _(d):
    info = tarfile.TarInfo("results.tar.gz")
    info.type = tarfile.DIRTYPE
    return unpack(d, [(info, None)], mentions=("results.tar.gz",))


@case("gpu_session unpack", "a member named .tar.gz that is not gzip")
def _(d):
    return unpack(d, [_file("results.tar.gz", b"garbage" * 20)], mentions=("results.tar.gz",))


@case("gpu_session unpack", "the records file is not a tar archive")
def _(d):
    rec = d / "in" / "records-paper.tar.gz"
    rec.parent.mkdir()
    rec.write_bytes(b"garbage" * 20)
    argv = [PYTHON, str(REPO / "benchmarks" / "gpu_session.py"), "unpack", str(rec),
            "--into", str(d / "into")]  # fmt: skip
    return Run(argv, cwd=d, mentions=("records-paper.tar.gz",), prefix="gpu_session")


@case("gpu_session unpack", "the records file does not exist")
def _(d):
    argv = [PYTHON, str(REPO / "benchmarks" / "gpu_session.py"), "unpack",
            str(d / "records-paper.tar.gz"), "--into", str(d / "into")]  # fmt: skip
    return Run(argv, cwd=d, mentions=("records-paper.tar.gz",), prefix="gpu_session")


@case("gpu_session unpack", "--into an existing file")
def _(d):
    (d / "into").write_text("mine")
    return unpack(d, [_file("a.json", b"{}")], mentions=("into",), keep=(d / "into",))


@case("gpu_session unpack", "--into holds a link a.json to a file outside; the archive an a.json")
def _(d):
    (d / "into").mkdir()
    (d / "outside.json").write_text("mine")
    (d / "into" / "a.json").symlink_to(d / "outside.json")
    return unpack(d, [_file("a.json", b"{}")], mentions=("a.json",), keep=(d / "outside.json",))


@case("gpu_session unpack", "a valid records archive (control)")
def _(d):
    inner = _inner([_file("train/t/repeat-1/metrics.json", b"{}")])

    def verify():
        f = d / "into" / "results" / "train" / "t" / "repeat-1" / "metrics.json"
        return None if f.is_file() else "metrics.json not unpacked"

    return unpack(d, [_file("results.tar.gz", inner)], expect="succeed", verify=verify)


# --- probes: package calls run as a command -----------------------------------------------------


def _probe_load_builder(path: str) -> None:
    from embryo_bench.workloads.builders import load_checked_builder

    load_checked_builder(path, "workloads (mine): model")
    print("loaded")


def _probe_build_model(path: str) -> None:
    from embryo_bench.vocabulary.spec import WorkloadSpec
    from embryo_bench.workloads.build import build_for_spec

    spec = WorkloadSpec(
        name="mine", model=path, dataset="mnist", synthetic=True, input_shape=(28, 28, 1),
        input_dtype="uint8", classes=10, optimizer="adam",
        loss="sparse_categorical_crossentropy", input_mode="memory", workers=1,
    )  # fmt: skip
    build_for_spec(spec, 0.001)
    print("built")


def _probe_check_settings(spec: str, steps: int, memory: str) -> None:
    from embryo_bench.recording.hardware import size_mib
    from embryo_bench.training import batch_limit as bl
    from embryo_bench.vocabulary.spec import RunSpec

    s = bl.check_settings(RunSpec.read(spec), spec, start=None, most=None, resolution=0.05,
                          budget=None, memory_limit_mib=size_mib(memory), steps=steps,
                          epochs=3)  # fmt: skip
    print(f"accepted: batch {s.start} to {s.most}")


def _probe_fetch_file(url: str, dest: str) -> None:
    """The dataset_file rule's download (``fetch_file``) of nietzsche.txt from ``url``."""
    import dataclasses

    from embryo_bench.data import fetch, registry

    ds = registry.get("nietzsche")
    f = dataclasses.replace(ds.files[0], url=url)
    fetch.fetch_file(dataclasses.replace(ds, files=(f,)), f, dest, progress=False, retries=0)
    print("fetched")


#: Package calls the cases make as commands (``--probe NAME``).
PROBES: dict[str, Callable] = {
    "load_builder": _probe_load_builder,
    "build_model": _probe_build_model,
    "check_settings": _probe_check_settings,
    "fetch_file": _probe_fetch_file,
}


def run_probe(name: str, args: str) -> int:
    """Run a probe as ``embryo-bench`` runs a command: the package's errors as one line and
    exit status 2 (:func:`embryo_bench.cli.main`'s handling)."""
    from embryo_bench.errors import EmbryoBenchError

    try:
        PROBES[name](*json.loads(args))
    except EmbryoBenchError as exc:
        print(f"embryo-bench: error: {exc}", file=sys.stderr)
        return 2
    return 0


# --- judging ----------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    surface: str
    outcome: str
    why: str
    seconds: float
    status: int | None
    error: str


def _digest(path: Path) -> str | None:
    try:
        return sha(path) if path.is_file() else ("folder" if path.is_dir() else None)
    except OSError:
        return "unreadable"


def _error_lines(stderr: str, prefix: str = "") -> list[str]:
    """The lines that say a command refused its input: ``<prog>: error: ...`` (the package's
    and argparse's) starting with ``prefix`` (a line of the user's own code, e.g. its argparse,
    is not the command's), or a Snakemake WorkflowError's message."""
    lines = stderr.splitlines()
    out = [ln for ln in lines if ": error: " in ln and ln.startswith(prefix) and ln[:1] != " "]
    for i, ln in enumerate(lines):
        if ln.startswith("WorkflowError") and i + 1 < len(lines):
            out.append(lines[i + 1])
    return out


def judge(
    run: Run, status: int | None, stderr: str, before: dict[Path, str | None]
) -> tuple[str, str]:
    """The outcome of a run and why, from its exit status, stderr and files (module docstring)."""
    appeared = [p for p in run.outside if p.exists() or p.is_symlink()]
    if appeared:
        return "security", f"appeared: {', '.join(map(str, appeared))}"
    changed = [p for p, h in before.items() if _digest(p) != h]
    if changed:
        return "loss", f"changed: {', '.join(map(str, changed))}"
    if status is None:
        return "crash", f"no answer in {run.timeout:g} s (a hang)"
    if "Traceback (most recent call last)" in stderr:
        last = [ln for ln in stderr.splitlines() if ln.strip()][-1:]
        return "crash", f"traceback: {last[0][:160] if last else ''}"
    if run.expect == "succeed":
        if status != 0:
            return "unclear", f"a valid input refused (exit {status})"
        problem = run.verify() if run.verify else None
        return ("silent", problem) if problem else ("correct", "")
    if status == 0:
        return "silent", "accepted (exit 0)"
    left = [p for p in run.outputs if p.exists()]
    if left:
        return "silent", f"refused, but left {', '.join(map(str, left))}"
    errors = _error_lines(stderr, run.prefix)
    if status != run.refused_status:
        return "unclear", f"exit status {status}, expected {run.refused_status}"
    if len(errors) != 1:
        return "unclear", f"{len(errors)} error lines"
    if run.prefix and stderr.strip().splitlines()[-1] != errors[0]:
        # A command's error line is the last it writes: more after it is the message going
        # on over several lines.
        return "unclear", "the error goes on over more than one line"
    missing = [m for m in run.mentions if m not in errors[0]]
    if missing:
        return "unclear", f"the error line does not name {missing}"
    return "clear", ""


def run_case(c: Case, root: Path) -> Result:
    d = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    began = time.monotonic()
    try:
        run = c.setup(d)
    except Exception as exc:  # a case that cannot be set up is the script's own fault
        raise RuntimeError(f"case {c.name!r}: setup failed: {exc!r}") from exc
    before = {p: _digest(p) for p in run.keep}
    env = {**os.environ, "PYTHONPATH": str(SRC), **run.env}
    try:
        proc = subprocess.run(
            run.argv, cwd=run.cwd or d, env=env, capture_output=True, text=True,
            timeout=run.timeout, stdin=subprocess.DEVNULL, errors="backslashreplace",
        )  # fmt: skip
        # Snakemake writes its WorkflowError on stdout.
        status, stderr = proc.returncode, proc.stderr + ("" if run.prefix else proc.stdout)
    except subprocess.TimeoutExpired as exc:
        status = None
        stderr = (exc.stderr or b"").decode(errors="backslashreplace") if exc.stderr else ""
    outcome, why = judge(run, status, stderr, before)
    errors = _error_lines(stderr, run.prefix)
    shutil.rmtree(d, ignore_errors=True)
    return Result(c.name, c.surface, outcome, why, time.monotonic() - began, status,
                  errors[0] if errors else "")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write every case's result here")
    p.add_argument("--only", default="", help="run the cases whose surface or name holds this")
    p.add_argument("--list", action="store_true", help="list the cases and stop")
    p.add_argument("--probe", nargs=2, metavar=("NAME", "ARGS"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.probe:
        return run_probe(*a.probe)
    cases = [c for c in CASES if a.only in c.surface or a.only in c.name]
    if a.list:
        for c in cases:
            print(f"{c.surface:<20} {c.name}")
        return 0
    began = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory(prefix="fault-pass-") as root:
        try:
            for i, c in enumerate(cases, 1):
                r = run_case(c, Path(root))
                results.append(r)
                note = f" ({r.why})" if r.why else ""
                print(f"{i:3d} {r.outcome:<8} {r.surface:<20} {r.name}{note}  [{r.seconds:.1f} s]")
                if r.error and r.outcome not in ("correct",):
                    print(f"      {r.error[:300]}")
                sys.stdout.flush()
        finally:
            if SERVER is not None:
                SERVER.close()
    counts = Counter(r.outcome for r in results)
    seconds = time.monotonic() - began
    print(f"\n{len(results)} cases in {seconds:.0f} s: " +
          ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES))  # fmt: skip
    if a.json:
        Path(a.json).write_text(json.dumps({
            "seconds": seconds, "counts": {k: counts.get(k, 0) for k in OUTCOMES},
            "cases": [r.__dict__ for r in results],
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
