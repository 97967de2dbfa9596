"""The numbers the four studies around the paper published, and the paper's systems, read
from each study's ``numbers.csv`` (in its folder, ``src/embryo_bench/studies/<study>/``) and
always drawn labelled as the study's. The studies are found by
:mod:`embryo_bench.studies.registry` (numbered 001-004; docs/studies/README.md gives their
authors, titles and addresses; the paper, 000, is one too so that its GPU claims run as a
study's: ``study: paper``); the paper's own training times and data counts are
:mod:`embryo_bench.published.paper`.

A numbers file has one row per published number, with the columns of :data:`COLUMNS`:

- ``system``: the study's machine as it names it ("Ryzen 2700X", "GCE 16 vCPU", "K80").
- ``workload``: the catalog name of the workload (its study's ``catalog.yaml``) the number is
  about; "" for a number about the system alone (its price, its vCPUs).
- ``metric`` and ``unit``: one of :data:`METRICS`, in the unit given there.
- ``value``: the number as the study printed it (a float).
- ``settings``: what else the number depends on, ``key=value`` pairs joined by ``;``
  (``batch_size=500;threads=8``; keys in :data:`SETTING_KEYS`; ``gpus=0`` marks a CPU
  measurement, ``gpus=1`` one on a GPU); "" for none. A number in ``x base`` names its base,
  the system it is relative to (``base=RTX 2080``): one study's relative numbers can have
  several (DATAmadness gives the Ryzen's time over the RTX's and the RTX's over the Ryzen's).
- ``source``: where it was printed: the study's short name (its ``seed``) and table,
  figure or section, or the file of a public repository it was read from
  (``minimaxir/keras-cntk-benchmark:v2/logs/...``).
- ``used``: ``true`` for the number our tables use; ``false`` for a number kept because the
  study printed two that disagree (its text and its table), the note saying which.
- ``note``: free text ("" for none).

Each file's sha256 is recorded in its study's ``study.yaml`` and checked whenever the file is
read (:func:`check_numbers_file`; the plan checks it before any job): an edited,
added or deleted row would otherwise change or drop a claim without a word. A correction is
made with its source and its new sha256 recorded in the same commit.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..studies.registry import Study, studies

COLUMNS = ["system", "workload", "metric", "value", "unit", "settings", "source", "used", "note"]

#: Metric -> its unit. A number in another unit is converted by the file's author, not here.
METRICS = {
    "epoch_seconds": "s",  # one epoch's training
    "training_seconds": "s",  # a whole training (the study's epochs or iterations)
    "step_seconds": "s",  # one training step (one batch)
    "steps_per_epoch": "count",  # training steps (batches) an epoch
    "images": "count",  # training images (samples) the study's dataset holds
    "throughput": "images/s",  # samples per second of training (images, sequences)
    # images/s lost from one network to another on one system, 100 x (1 - new / old): the
    # network it is from in the ``from`` setting
    "throughput_drop": "%",
    "test_accuracy": "fraction",
    "relative_time": "x base",  # training time / the study's base system's
    "relative_cost": "x base",  # training cost / the study's base system's
    "hourly_usd": "USD/h",  # the system's price
    "cost_usd": "USD",  # a whole training's cost
    "gpu_utilisation": "%",
    "cpu_utilisation": "%",
    "vcpus": "count",  # the system's (virtual) cores
    "gpus": "count",
    "memory_gb": "GB",  # the system's memory (RAM), as the study prints it
    "clock_ghz": "GHz",  # the system's CPU clock, as the study prints it
}

#: The values a unit allows: (the lowest, whether the lowest itself is allowed, the highest).
#: A time, a speed or a ratio of them is above 0; a count, a price or a share at least 0; a
#: fraction at most 1. No published number is negative.
RANGES = {
    "s": (0.0, False, math.inf),
    "images/s": (0.0, False, math.inf),
    "x base": (0.0, False, math.inf),
    "count": (0.0, True, math.inf),
    "USD/h": (0.0, True, math.inf),
    "USD": (0.0, True, math.inf),
    "%": (0.0, True, math.inf),
    "fraction": (0.0, True, 1.0),
    "GB": (0.0, False, math.inf),
    "GHz": (0.0, False, math.inf),
}
#: What one published number is about: two rows that our tables use (``used`` true) may not
#: share it.
KEY = ("system", "workload", "metric", "settings")

#: Keys a ``settings`` cell may hold.
SETTING_KEYS = {
    "batch_size",
    "threads",
    "epochs",
    "iterations",
    "framework",
    "blas",
    "input",
    "precision",
    "workers",  # input workers of an image generator (Keras fit's workers=)
    "augmentation",  # true / false: the generator augmented the images
    "gpus",  # GPUs the number was measured with (0: CPU only)
    "base",  # the system an x-base number is relative to (every x-base row names one)
    "from",  # the catalog workload a throughput_drop is from
}


def sha256_of(path: Path) -> str:
    """The sha256 of a file's bytes, hex.

    Raises:
        DataError: the file cannot be read (naming it).
    """
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the study's numbers: {exc}") from exc


def check_numbers_file(study: Study) -> None:
    """The study's numbers file (:attr:`Study.path`) is the one its ``study.yaml`` records:
    its sha256 is :attr:`Study.sha256`. A study made in code, without one, is not checked.

    Raises:
        DataError: the file is missing or unreadable, or its sha256 differs: one line naming
            the file, both sums and the study's ``study.yaml``.
    """
    if not study.sha256:
        return
    got = sha256_of(study.path)
    if got != study.sha256:
        raise DataError(
            f"{study.path}: sha256 {got}, not the {study.sha256} that {study.registry} "
            "records for it: the study's published numbers were changed (a row edited, added "
            "or deleted); restore the file, or record a correction's sha256 there with it"
        )


def parse_settings(text: str, where: str = "settings") -> dict[str, str]:
    """``"batch_size=500;threads=8"`` -> ``{"batch_size": "500", "threads": "8"}``.

    Raises:
        DataError: a pair without ``=`` or a key not in :data:`SETTING_KEYS`, named with
            ``where``.
    """
    out = {}
    for pair in filter(None, (p.strip() for p in str(text or "").split(";"))):
        key, sep, value = pair.partition("=")
        if not sep or key.strip() not in SETTING_KEYS:
            raise DataError(
                f"{where}: {pair!r} is not key=value with a key of {sorted(SETTING_KEYS)}"
            )
        out[key.strip()] = value.strip()
    return out


def _check_base(row, value: float, settings: dict, systems: set[str], where: str) -> None:
    """An ``x base`` row names the system it is relative to, a system of the file (itself
    only at 1); no other row names one.

    Raises:
        DataError: as :func:`load_numbers` says, naming ``where``.
    """
    base = settings.get("base")
    if row["unit"] != "x base":
        if base is not None:
            raise DataError(f"{where}: base={base} on a number in {row['unit']}; only an x-base "
                            "number is relative to a system")  # fmt: skip
        return
    if not base:
        raise DataError(
            f"{where}: {row['metric']} of {row['system']} is in x base without a base setting; "
            "expected base=<the system it is relative to>"
        )
    if base not in systems:
        raise DataError(f"{where}: base={base} is not a system of the file")
    if base == row["system"] and value != 1:
        raise DataError(f"{where}: {row['system']} relative to itself is 1, not {value:g}")


def load_numbers(study: str | Study, path: Path | None = None) -> pd.DataFrame:
    """The numbers a study published: a table with :data:`COLUMNS` (value float64, used
    bool, the rest str), one row per number, in the file's order.

    Args:
        study: a study's name (or its :class:`Study`).
        path: the CSV file (default: the study's own, :attr:`Study.path`). The study's own
            file is checked against its recorded sha256 (:func:`check_numbers_file`); another
            file (numbers of one's own, a test's variant) is only validated.

    Raises:
        DataError: an unknown study; the study's own file changed (its sha256); a missing
            file, other columns, a value that is not a finite number or out of its unit's
            range (:data:`RANGES`: none negative), a metric not in :data:`METRICS` or a unit
            other than its own, bad settings, an empty source, ``used`` other than
            true/false, a row given twice, two used rows of one :data:`KEY`, or an ``x
            base`` number without a ``base`` setting naming a system of the file (itself
            only at 1), or a ``base`` on another unit: one line naming the file, its line and
            what was expected.
    """
    if isinstance(study, str):
        known = studies()
        if study not in known:
            raise DataError(f"study {study!r}: expected one of {sorted(known)}")
        study = known[study]
    path = Path(path) if path is not None else study.path
    if path.resolve() == study.path.resolve():
        check_numbers_file(study)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read the study's numbers: {exc}") from exc
    if list(table.columns) != COLUMNS:
        raise DataError(f"{path}: columns {list(table.columns)}; expected {COLUMNS}")
    values, used = [], []
    rows_seen: dict[tuple, int] = {}
    used_seen: dict[tuple, int] = {}
    for i, row in table.iterrows():
        where = f"{path}, line {i + 2}"
        try:
            value = float(row["value"])
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise DataError(f"{where}: value {row['value']!r} is not a finite number")
        if row["metric"] not in METRICS:
            raise DataError(f"{where}: metric {row['metric']!r}; expected one of {list(METRICS)}")
        if row["unit"] != METRICS[row["metric"]]:
            raise DataError(
                f"{where}: unit {row['unit']!r} for {row['metric']}; "
                f"expected {METRICS[row['metric']]!r}"
            )
        low, low_allowed, high = RANGES[row["unit"]]
        if value < low or (value == low and not low_allowed) or value > high:
            bounds = f"{'at least' if low_allowed else 'above'} {low:g}"
            bounds += f" and at most {high:g}" if math.isfinite(high) else ""
            raise DataError(
                f"{where}: value {row['value']} for {row['metric']}: expected {bounds} "
                f"({row['unit']})"
            )
        if not row["source"].strip():
            raise DataError(f"{where}: no source")
        if row["used"] not in ("true", "false"):
            raise DataError(f"{where}: used {row['used']!r}; expected true or false")
        settings = parse_settings(row["settings"], where)
        _check_base(row, value, settings, set(table["system"]), where)
        values.append(value)
        used.append(row["used"] == "true")
        # A row given twice, or a second number our tables would use for the same thing
        # (settings in any order), is an edit that changes a claim without a word.
        if (first := rows_seen.setdefault(tuple(row), i)) != i:
            raise DataError(f"{where}: the same row as line {first + 2}")
        if used[-1]:
            key = (*(row[k] for k in KEY[:-1]), frozenset(settings.items()))
            if (first := used_seen.setdefault(key, i)) != i:
                raise DataError(
                    f"{where}: a second used number for {row['metric']} of "
                    f"{row['system'] or row['workload']} with these settings (line {first + 2}); "
                    "expected one used row, the other used false with a note saying why"
                )
    table["value"] = pd.Series(values, index=table.index, dtype="float64")
    table["used"] = pd.Series(used, index=table.index, dtype=bool)
    return table
