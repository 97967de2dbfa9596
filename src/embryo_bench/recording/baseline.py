"""A machine baseline, the machine's own probe noise: back-to-back
calibration probes on a run's cores and threads (``embryo-bench calibrate``,
:func:`embryo_bench.training.noise.take_baseline`), summarised by
:func:`embryo_bench.recording.calibrate.machine_baseline`; the figures use it
(``stability.baseline``)
to flag a run drifted only when its probes moved more than this machine's quiet probes do
over the same time.

A baseline describes one machine and one way of probing it (backend, threads, cpus), so it
is checked before use: :func:`load_baseline` is the one reader (the file,
its format and layout, the probe method, enough probes for a lag), :func:`machine_differences`
compares the machine it was taken on with another (this one at plan time, a run's at figures
time), and :func:`settings_differences` the settings it was taken with with a run's or a
target's. This module reads and judges; it neither probes nor asks the hardware, so the
figures that use it do not rerun when the hardware code changes. They do when the probing
code does: the method and the probe counts it checks are :mod:`embryo_bench.recording.calibrate`'s,
which also holds the probe (:func:`embryo_bench.recording.calibrate.matmul_probe`).
"""

from __future__ import annotations

import os

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..errors import ConfigError, DataError
from ..io import check_format, non_finite, read_json
from ..vocabulary.layout import BASELINE_FORMAT
from ..vocabulary.spec import BACKENDS
from .calibrate import BASELINE_PROBES, MIN_PAIRS, PROBE_METHOD

#: The setting that names a baseline, as its errors name it.
SETTING = "stability.baseline"

_NUMBER = {"type": "number"}
#: What a machine baseline must hold to be used (the keys
#: :func:`embryo_bench.training.noise.take_baseline` writes that the drift flag and the checks
#: read).
BASELINE_SCHEMA: dict = {
    "type": "object",
    "required": ["probes", "probe_seconds", "changes", "settings", "machine", "method"],
    "properties": {
        "probes": {"type": "integer", "minimum": MIN_PAIRS + 1},
        "probe_seconds": {**_NUMBER, "exclusiveMinimum": 0},
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["lag_s", "pairs", "p99"],
                "properties": {
                    "lag_s": {**_NUMBER, "exclusiveMinimum": 0},
                    "pairs": {"type": "integer", "minimum": MIN_PAIRS},
                    "p99": {**_NUMBER, "minimum": 0},
                },
            },
        },
        "settings": {
            "type": "object",
            "required": ["threads", "cpus", "backend"],
            "properties": {
                "threads": {"type": "integer", "minimum": 1},
                "cpus": {"type": "integer", "minimum": 1},
                "backend": {"enum": list(BACKENDS)},
            },
        },
        "machine": {
            "type": "object",
            "required": ["hostname", "cpu_model"],
            "properties": {
                "hostname": {"type": "string"},
                "cpu_model": {"type": "string"},
                "cpu_flags": {"type": "array", "items": {"type": "string"}},
                "host_cores": {"type": "integer", "minimum": 1},
            },
        },
        "method": {"type": "string"},
    },
}
_VALIDATOR = Draft202012Validator(BASELINE_SCHEMA)
#: How to make a baseline, for the errors that ask for a new one.
HOW = "take one on the machine that runs the targets with `embryo-bench calibrate --out {path}`"


def load_baseline(path: str | os.PathLike) -> dict:
    """Read and check the machine baseline at ``path`` (``stability.baseline``): the one
    reader of a baseline, for the plan (before any job) and the figures.

    Returns:
        the baseline (:func:`embryo_bench.training.noise.take_baseline`'s dict, without
        ``format``).

    Raises:
        ConfigError: one line naming ``stability.baseline`` and the file: it is missing or
            not JSON, its format is newer than
            :data:`embryo_bench.vocabulary.layout.BASELINE_FORMAT`, a number in it is NaN or
            an infinity, it is not a machine baseline (a key missing or of the wrong type),
            its probes were taken with another method than this embryo-bench's, it has too
            few probes to give the change at any lag (fewer than
            :data:`embryo_bench.recording.calibrate.MIN_PAIRS` + 1), or it lists no lag.
    """
    how = HOW.format(path=path)
    try:
        data = read_json(path)
    except DataError as exc:
        raise ConfigError(f"{SETTING} {exc}; {how}") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{SETTING} {path}: a JSON {type(data).__name__}, not a machine baseline; {how}"
        )
    try:
        data = check_format(data, BASELINE_FORMAT, str(path))
    except DataError as exc:  # its own advice: read it with the newer embryo-bench
        raise ConfigError(f"{SETTING} {exc}") from None
    # Python's JSON reads NaN and Infinity, and a NaN drift limit would flag no run.
    if (found := non_finite(data)) is not None:
        at = "/".join(map(str, found[0]))
        raise ConfigError(
            f"{SETTING} {path}: {at}: {found[1]}: expected a finite number, not NaN or "
            f"infinity; {how}"
        )
    error = best_match(_VALIDATOR.iter_errors(data))
    if (
        error is not None
        and list(error.absolute_path) == ["probes"]
        and error.validator == "minimum"
    ):
        raise ConfigError(
            f"{SETTING} {path}: its {data['probes']} probes give no lag with "
            f"{MIN_PAIRS} probe pairs, so no drift limit at all; take at least "
            f"{MIN_PAIRS + 1} (`embryo-bench calibrate --probes {BASELINE_PROBES} --out {path}`)"
        )
    if error is not None:
        at = "/".join(map(str, error.absolute_path))
        raise ConfigError(
            f"{SETTING} {path}: not a machine baseline ({error.message}"
            + (f" at {at}" if at else "")
            + f"); {how}"
        )
    if data["method"] != PROBE_METHOD:
        raise ConfigError(
            f"{SETTING} {path}: probes of another method ({data['method']}) than this "
            f"embryo-bench's ({PROBE_METHOD}); {how}"
        )
    if not data["changes"]:
        raise ConfigError(
            f"{SETTING} {path}: it lists no lag (changes: []), so no drift limit; {how}"
        )
    return data


def machine_differences(recorded: dict, other: dict) -> list[str]:
    """How the machine a baseline recorded (``machine``) differs from ``other`` (the same
    keys: :func:`embryo_bench.recording.hardware.this_machine`, or a run's,
    :func:`embryo_bench.reporting.runs.run_machine`), one phrase per difference, e.g. "host
    vm-a, not vm-b"; keys either side lacks (baselines of format 0 recorded no flags or
    cores) are not compared."""
    out = []
    for key, name in (("hostname", "host"), ("cpu_model", "CPU"), ("host_cores", "cores")):
        a, b = recorded.get(key), other.get(key)
        if a is not None and b is not None and a != b:
            out.append(f"{name} {a}, not {b}")
    a, b = recorded.get("cpu_flags"), other.get("cpu_flags")
    if a is not None and b is not None and set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        out.append(
            "CPU flags "
            + ", ".join(
                part
                for part in (
                    f"{' '.join(only_a)} only in the baseline's" if only_a else "",
                    f"{' '.join(only_b)} only in the other" if only_b else "",
                )
                if part
            )
        )
    return out


def describe_settings(backend: str, threads: int, cpus: int, gpus: int = 0) -> str:
    """Settings in words, e.g. "tensorflow, 1 thread on 1 cpu" (", 1 GPU" added for GPUs)."""
    s = f"{backend}, {threads} thread{'s' * (threads != 1)} on {cpus} cpu{'s' * (cpus != 1)}"
    return s + (f", {gpus} GPU{'s' * (gpus != 1)}" if gpus else "")


def settings_differences(
    baseline: dict, backend: str, threads: int, cpus: int, gpus: int = 0, what: str = "the run"
) -> str | None:
    """Why ``baseline`` does not fit ``what`` (a run or a target) with these settings, or
    None when it does: the same backend, threads and cpus, and no GPU (a baseline's probes
    ran on CPU cores; a probe on a GPU, or on more cores or threads, has other noise), e.g.
    "taken with tensorflow, 1 thread on 1 cpu, the run with tensorflow, 2 threads on 2
    cpus"."""
    s = baseline["settings"]
    mine = (s["backend"], s["threads"], s["cpus"], 0)
    if mine == (backend, threads, cpus, gpus):
        return None
    return (
        f"taken with {describe_settings(*mine)}, {what} with "
        f"{describe_settings(backend, threads, cpus, gpus)}"
    )
