"""The figures job's settings as one file, ``figures-spec.json`` (issue 24, item 4), as
``run.json`` is a run's: which runs (in the planned order) and which other machines' result
folders, the targets' report fields (prices, paper systems, sweep points), cost and
comparison bases, the stability thresholds, the machine baseline, and the effective
configuration (written beside the figures as ``config.yaml``). A small rule writes it from the
plan (:meth:`embryo_bench.plan.Plan.figures_spec`); ``embryo-bench figures --spec`` reads and
checks it; merging reads another folder's spec for its targets' prices.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError
from .io import check_format, read_json, write_json
from .layout import FIGURES_SPEC_FORMAT


@dataclass(frozen=True)
class FiguresSpec:
    """What the figures job is given.

    Attributes:
        runs: this workflow's run folders, in the planned order (:attr:`Plan.runs`).
        merge: other machines' result folders (``merge:``).
        targets: target name -> report fields (:meth:`embryo_bench.plan.Target.report_fields`:
            hourly_usd in USD/h, price_source, paper_system, description, sweep).
        cost_base, cost_note: :func:`embryo_bench.plan.cost_base`.
        compare_base: :attr:`embryo_bench.plan.Plan.compare_base`.
        min_difference: ``compare.min_difference`` (a fraction).
        stability: the ``stability`` section with every default (its ``baseline``: a machine
            baseline's path, "" for none).
        config: the effective configuration (every default filled in).
    """

    runs: list
    merge: list
    targets: dict
    cost_base: str
    cost_note: str
    compare_base: str
    min_difference: float
    stability: dict
    config: dict

    def to_dict(self) -> dict:
        """Plain, JSON-ready dict with the file's ``format``
        (:data:`embryo_bench.layout.FIGURES_SPEC_FORMAT`)."""
        return {"format": FIGURES_SPEC_FORMAT, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, d: dict, where: str = "figures spec") -> FiguresSpec:
        """The inverse of :meth:`to_dict`, checked.

        Raises:
            DataError: not a mapping, a newer ``format``, a key missing or unknown, or a value
                of the wrong type (the message names ``where``, the key and what is expected).
        """
        if not isinstance(d, dict):
            raise DataError(f"{where}: expected a mapping, found {type(d).__name__}")
        d = check_format(d, FIGURES_SPEC_FORMAT, where)
        fields = {f.name: f.type for f in dataclasses.fields(cls)}
        if unknown := sorted(set(d) - set(fields)):
            raise DataError(f"{where}: unknown keys {unknown}")
        if missing := sorted(set(fields) - set(d)):
            raise DataError(f"{where}: missing keys {missing}")
        kinds = {"list": list, "dict": dict, "str": str, "float": (int, float)}
        for key, kind in fields.items():
            value = d[key]
            if not isinstance(value, kinds[kind]) or isinstance(value, bool):
                raise DataError(f"{where}: {key} is {value!r}; expected a {kind}")
        for key in ("runs", "merge"):
            if not all(isinstance(v, str) for v in d[key]):
                raise DataError(f"{where}: {key} must list folders (strings), got {d[key]!r}")
        if not d["runs"]:
            raise DataError(f"{where}: runs is empty; the figures need at least one run")
        return cls(**{**d, "min_difference": float(d["min_difference"])})

    @classmethod
    def read(cls, path: str | os.PathLike) -> FiguresSpec:
        """Read a ``figures-spec.json``.

        Raises:
            DataError: missing, not JSON, or as :meth:`from_dict`.
        """
        return cls.from_dict(read_json(path), str(path))

    def write(self, path: str | os.PathLike, log: str | os.PathLike | None = None) -> None:
        """Write this spec (atomically) and, with ``log``, one line saying what it holds."""
        write_json(path, self.to_dict())
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            Path(log).write_text(
                f"{path}: {len(self.runs)} runs, {len(self.targets)} targets, merge: "
                f"{self.merge or 'none'}\n"
            )


def write_spec(spec: dict, output, log) -> None:
    """The ``figures_spec`` rule's body: check ``spec`` (:meth:`FiguresSpec.from_dict`) and
    write it to ``output[0]``, with a line in ``log[0]``.

    Raises:
        DataError: as :meth:`FiguresSpec.from_dict`.
    """
    FiguresSpec.from_dict(spec, str(output[0])).write(output[0], log=log[0])
