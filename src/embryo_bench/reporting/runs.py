"""Finished runs read back from their folders (``train/<target>/repeat-<k>/``): metrics,
history, telemetry, throughput windows and run spec, and how a run's readings are read as
numbers. The tables (:mod:`embryo_bench.reporting.summary`), the stability verdict
(:mod:`embryo_bench.reporting.stability`) and merging (:mod:`embryo_bench.reporting.merge`) all
start here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..io import check_format, read_json
from ..planning.layout import (
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
        """The run's target."""
        return self.metrics["target"]


def machine_of(run: Run) -> str:
    """The machine ``run`` ran on (:func:`machine_name` of its metrics)."""
    return machine_name(run.metrics)


def machine_name(metrics: dict) -> str:
    """The machine a run ran on, from its ``metrics.json``: its Docker daemon's name for a
    docker run (the host the daemon runs on), else the host name its provenance recorded;
    "not recorded" for runs made before either was."""
    daemon = (metrics.get("container") or {}).get("daemon") or {}
    return daemon.get("name") or metrics["provenance"].get("hostname") or NOT_RECORDED


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
