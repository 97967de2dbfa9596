"""Finished runs read back from their folders (``train/<target>/repeat-<k>/``): metrics,
history, telemetry, throughput windows and run spec, and how a run's readings are read as
numbers. The tables (:mod:`embryo_bench.reporting.summary`), the stability verdict
(:mod:`embryo_bench.reporting.stability`) and merging (:mod:`embryo_bench.reporting.merge`) all
start here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..io import check_format, read_json
from ..vocabulary.layout import (
    HISTORY,
    METRICS,
    METRICS_FORMAT,
    RUN_SPEC,
    RUN_SPEC_FORMAT,
    TELEMETRY,
    WINDOWS,
)

NOT_MEASURED = "not measured"
#: What :func:`machine_name` says of a run that recorded no machine.
NOT_RECORDED = "not recorded"


@dataclass
class Run:
    """One finished run, as read back from its folder.

    Attributes:
        dir: the run folder. metrics: ``metrics.json``. history: ``history.csv``.
        telemetry: ``telemetry.csv`` (None when absent). spec: ``run.json`` (dict).
        windows: ``windows.csv``, the throughput windows (None when absent: runs made
        before they were recorded).
    """

    dir: str
    metrics: dict
    history: pd.DataFrame
    telemetry: pd.DataFrame | None = None
    spec: dict | None = None
    windows: pd.DataFrame | None = None

    @property
    def name(self) -> str:
        """The run's target, as the tables name it (``<target>@<machine>`` for a merged run
        and for a run of a target that ran on several machines)."""
        return self.metrics["target"]

    @property
    def planned_name(self) -> str:
        """The target the run was planned as: its run.json's (its folder's) name."""
        return (self.spec or {}).get("target") or Path(self.dir).parent.name


def machine_name(metrics: dict) -> str:
    """The host a run ran on, from its ``metrics.json``: its Docker daemon's name for a
    docker run (the host the daemon runs on), else the host name its provenance recorded;
    "not recorded" for runs made before either was (a docker run's provenance holds its
    container's host name, a random one: never taken for the host's)."""
    container = metrics.get("container") or {}
    daemon = container.get("daemon") or {}
    if container or metrics.get("runner") == "docker":
        return daemon.get("name") or NOT_RECORDED
    return (metrics.get("provenance") or {}).get("hostname") or NOT_RECORDED


def run_machine(metrics: dict) -> dict:
    """A run's machine in :func:`embryo_bench.recording.hardware.this_machine`'s keys, from its
    ``metrics.json``: hostname (:func:`machine_name`: a docker run's daemon, else the host),
    cpu_model, cpu_id, cpu_flags, host_cores and memory_mib from its provenance (None where
    not recorded); a machine baseline's machine is compared with it
    (:func:`embryo_bench.recording.baseline.machine_differences`)."""
    prov = metrics.get("provenance") or {}
    name = machine_name({**metrics, "provenance": prov})
    return {
        "hostname": None if name == NOT_RECORDED else name,
        **{
            key: prov.get(key)
            for key in ("cpu_model", "cpu_id", "cpu_flags", "host_cores", "memory_mib")
        },
    }


# --- the machine a run ran on --------------------------------------------------------------

#: The CPU flags that move training speed, as a machine identity compares them: the
#: instruction sets oneDNN (TensorFlow's and PyTorch's CPU kernels) dispatches on: AVX, AVX2
#: with FMA, AVX-512 core (F, BW, VL, DQ), its VNNI, BF16 and FP16 extensions, AVX-VNNI and
#: the AMX tile unit with its BF16 operations. Each is among the flags every run records
#: (:func:`embryo_bench.recording.hardware.cpu_flags`), so runs made before this list
#: was written have the same identity as runs made after it on the same CPU.
MACHINE_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512dq",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
)
#: What a machine identity holds (:func:`machine_identity`), in the order a label and a
#: difference name them.
IDENTITY_FIELDS = (
    "host",
    "cpu_model",
    "cpu_id",
    "isa",
    "cores",
    "memory_gib",
    "gpus",
    "docker_daemon",
)


def machine_identity(metrics: dict) -> dict:
    """The machine a run ran on, from what its ``metrics.json`` recorded (its provenance,
    :func:`embryo_bench.recording.hardware.this_machine`'s keys, and a docker run's
    ``container.daemon``), as :data:`IDENTITY_FIELDS`:

    - host: :func:`machine_name` (a docker run's daemon's name, else the host name);
    - cpu_model (the model name), cpu_id (vendor family/model/stepping);
    - isa: the :data:`MACHINE_FLAGS` the CPU has, a tuple in that order;
    - cores: the machine's logical CPUs (``host_cores``; a docker run made before it was
      recorded: its daemon's ``ncpu``), not the run's own after pinning (``visible_cores``,
      its target's ``cpus``);
    - memory_gib: physical memory in GiB, rounded (``memory_mib``, else a docker run's
      daemon's), so a few MiB that a kernel reserves differently do not make another
      machine;
    - gpus: the GPU models the run saw (sorted, one entry per GPU);
    - docker_daemon: a docker run's daemon ID, "" for a host run.

    A field the run did not record (runs made before it was) is None.
    """
    prov = metrics.get("provenance") or {}
    container = metrics.get("container") or {}
    daemon = container.get("daemon") or {}
    docker = bool(container) or metrics.get("runner") == "docker"
    host = machine_name(metrics)
    flags = prov.get("cpu_flags")
    memory = prov.get("memory_mib") or (daemon.get("memory_mib") if docker else None)
    gpus = prov.get("gpus")
    return {
        "host": None if host == NOT_RECORDED else host,
        "cpu_model": prov.get("cpu_model"),
        "cpu_id": prov.get("cpu_id"),
        "isa": None if flags is None else tuple(f for f in MACHINE_FLAGS if f in flags),
        "cores": prov.get("host_cores") or (daemon.get("ncpu") if docker else None),
        "memory_gib": round(memory / 1024) if memory else None,
        "gpus": None if gpus is None else tuple(sorted(gpus)),
        "docker_daemon": (daemon.get("id") or None) if docker else "",
    }


def _words(text: str, drop: set[str], most: int) -> list[str]:
    """Lower-case words of ``text`` (letters and digits), without trademarks, clock speeds,
    core counts and ``drop``; at most ``most``."""
    text = re.sub(r"\((r|tm)\)|@.*$|\b\d+-core\b", " ", text.lower())
    return [w for w in re.split(r"[^a-z0-9]+", text) if w and w not in drop][:most]


_CPU_WORDS = {"intel", "amd", "cpu", "processor", "with", "radeon", "graphics", "genuine"}
_GPU_WORDS = {"nvidia", "geforce", "tesla", "amd", "radeon"}
#: A label's vector ISA word: the widest the CPU has (flag, word).
_VECTOR_WORDS = (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"))


def describe_machine(identity: dict) -> list[str]:
    """The readable words of a machine label from a :func:`machine_identity` (fields that are
    None left out): CPU (its model name's words, e.g. "xeon-platinum-8481c", "epyc-7b13"),
    vector ISA ("avx512", "avx2" or "avx") and "amx" for a matrix unit, logical cores ("2c"),
    memory ("24g"), GPUs ("2xa100-sxm4")."""
    parts = ["-".join(_words(identity.get("cpu_model") or "", _CPU_WORDS, 3)) or "cpu"]
    isa = identity.get("isa")
    if isa is not None:
        widest = [word for flag, word in _VECTOR_WORDS if flag in isa][:1]
        parts += widest + ["amx"] * ("amx_tile" in isa)
    if identity.get("cores"):
        parts.append(f"{identity['cores']}c")
    if identity.get("memory_gib"):
        parts.append(f"{identity['memory_gib']}g")
    for name, count in Counter(identity.get("gpus") or ()).items():
        short = "-".join(_words(name, _GPU_WORDS, 2)) or "gpu"
        parts.append(f"{count}x{short}" if count > 1 else short)
    return parts


@dataclass(frozen=True)
class Machine:
    """One machine runs ran on, as :class:`Machines` tells them apart.

    Attributes:
        label: readable and unique among the machines of the runs it was made for, e.g.
            "xeon-avx512-amx-2c-24g-9f3e" (:func:`describe_machine`, then the shortest
            prefix of the fingerprint, at least 4 hex digits, that no other machine's
            readable words share).
        fingerprint: sha256 (first 12 hex digits) of the identity's compared fields.
        identity: the fields of :func:`machine_identity` its runs were told apart by (those
            its most complete run recorded).
    """

    label: str
    fingerprint: str
    identity: dict

    def differences(self, other: Machine) -> list[str]:
        """The fields in which ``other`` differs from this machine, in
        :data:`IDENTITY_FIELDS`' order."""
        return [f for f in IDENTITY_FIELDS if self.identity.get(f) != other.identity.get(f)]


class Machines:
    """The machines a set of runs ran on. Two runs are on one machine when every field of
    :func:`machine_identity` that *both* recorded is equal: the runs that recorded the most
    fields make the machines, and a run that lacks some field (made before it was recorded)
    joins the one machine it agrees with on the fields it has, or is a machine of its own
    where it agrees with several (it cannot tell them apart) or with none. A field one run
    lacks is thus never dropped for the others: one old run without ``cpu_id`` no longer
    pools every CPU model's runs of a host (a statistical review found it did). The fields
    and since when they are recorded: CPU model and host name always, CPU flags and cores
    since 2026-11-25, the Docker daemon's ID since 2026-11-23, CPU ID and host memory since
    the runs were first grouped by machine, the same day.

    Args:
        runs: every run the tables will show (this workflow's and the merged ones), so
            that one machine has one label in all of them.
    """

    def __init__(self, runs: list[Run]):
        identities = [machine_identity(r.metrics) for r in runs]
        recorded = lambda i: {f: i[f] for f in IDENTITY_FIELDS if i[f] is not None}  # noqa: E731
        groups: list[dict] = []  # each machine's identity: the fields its first run recorded
        self._of: dict[tuple, int] = {}
        for identity in sorted(identities, key=lambda i: -len(recorded(i))):
            key = self._key(identity)
            if key in self._of:
                continue
            mine = recorded(identity)
            agree = [
                n for n, g in enumerate(groups)
                if all(g[f] == v for f, v in mine.items() if f in g)
            ]  # fmt: skip
            if len(agree) == 1 and set(mine) <= set(groups[agree[0]]):
                self._of[key] = agree[0]
            else:
                self._of[key] = len(groups)
                groups.append(mine)
        found = []
        for compared in groups:
            digest = hashlib.sha256(json.dumps(compared, sort_keys=True).encode()).hexdigest()
            found.append(("-".join(describe_machine(compared)), digest))
        self._machines = []
        for n, (words, digest) in enumerate(found):
            same = [d for m, (w, d) in enumerate(found) if w == words and m != n]
            k = 4
            while any(d[:k] == digest[:k] for d in same):
                k += 1
            self._machines.append(Machine(f"{words}-{digest[:k]}", digest[:12], groups[n]))

    @staticmethod
    def _key(identity: dict) -> tuple:
        return tuple((f, identity[f]) for f in IDENTITY_FIELDS)

    def of(self, run: Run) -> Machine:
        """The machine ``run`` ran on.

        Raises:
            KeyError: ``run`` was not among the runs this was made for, and ran on none
                of their machines.
        """
        return self._machines[self._of[self._key(machine_identity(run.metrics))]]


def read_table(path: Path) -> pd.DataFrame:
    """A run's CSV file (history, telemetry, windows).

    Raises:
        DataError: naming the file: missing, empty, or not CSV that pandas can read.
    """
    try:
        return pd.read_csv(path)
    except FileNotFoundError as exc:
        raise DataError(f"{path}: not found") from exc
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas' parser errors too
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: not a readable CSV table ({why})") from exc


def load_runs(run_dirs: list[str]) -> list[Run]:
    """Read each run folder's metrics.json, history.csv, run.json and (if present)
    telemetry.csv and windows.csv.

    Raises:
        DataError: naming the file: metrics.json, history.csv or run.json is missing or
            unreadable (:func:`read_table`), a JSON file is not an object, or metrics.json's
            or run.json's format is newer than this embryo-bench reads.
    """
    runs = []
    for d in run_dirs:
        metrics = read_json(Path(d) / METRICS)
        if not isinstance(metrics, dict):
            raise DataError(
                f"{d}/{METRICS}: expected a JSON object, found {type(metrics).__name__}"
            )
        check_format(metrics, METRICS_FORMAT, f"{d}/{METRICS}")
        history = read_table(Path(d) / HISTORY)
        tel, win = Path(d) / TELEMETRY, Path(d) / WINDOWS
        telemetry = read_table(tel) if tel.is_file() else None
        windows = read_table(win) if win.is_file() else None
        spec = read_json(Path(d) / RUN_SPEC)
        if not isinstance(spec, dict):
            raise DataError(f"{d}/{RUN_SPEC}: expected a JSON object, found {type(spec).__name__}")
        check_format(spec, RUN_SPEC_FORMAT, f"{d}/{RUN_SPEC}")
        runs.append(Run(str(d), metrics, history, telemetry, spec, windows))
    return runs


def as_number(value) -> float | None:
    """A float, or None for missing, NaN (a run that never reached its accuracy target, an
    empty table cell) and "not measured (...)" values."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None
