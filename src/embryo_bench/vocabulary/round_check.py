"""A round check (``compare.until``): the file the workflow's ``round_check`` job writes after
each round (:func:`embryo_bench.reporting.rounds.check_round` measures it) and the plan reads
to decide whether another round is needed (:func:`embryo_bench.planning.rounds.decide`): its
format version, its path (``rounds/round-<k>.json``) and its reader.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError
from ..io import check_format, read_json

#: Format version of a round check. (Its path is here, not in
#: :mod:`embryo_bench.vocabulary.layout`, which every training's code hash includes.)
ROUND_CHECK_FORMAT = 1


def check_path(round_: int | str) -> str:
    """Where the check after round ``round_`` goes, under ``outdir``:
    ``rounds/round-<k>.json``."""
    return f"rounds/round-{round_}.json"


def read_check(path: str | Path, round_: int) -> dict:
    """A round check written by :func:`embryo_bench.reporting.rounds.check_round`, checked.

    Raises:
        DataError: naming the file: missing, not JSON, a newer format, another round, or
            not the shape :func:`embryo_bench.reporting.rounds.check_round` writes; and how
            to have it measured again.
    """
    again = f"; delete {path} to have the workflow measure round {round_} again"
    try:
        d = read_json(path)
        if not isinstance(d, dict):
            raise DataError(f"{path}: expected a JSON object, found {type(d).__name__}")
        check_format(d, ROUND_CHECK_FORMAT, str(path))
    except DataError as exc:
        raise DataError(f"{exc}{again}") from None
    if d.get("round") != round_:
        raise DataError(f"{path}: a check of round {d.get('round')!r}, not {round_}{again}")
    workloads = d.get("workloads")
    if not isinstance(workloads, dict) or not all(
        isinstance(w, dict)
        and isinstance(w.get("targets"), dict)
        and all(
            isinstance(t, dict) and "half_width" in t and "pairs" in t
            for t in w["targets"].values()
        )
        for w in workloads.values()
    ):
        raise DataError(f"{path}: no workloads with targets, half-widths and pairs{again}")
    return d
