"""Reference files of expected speeds (``embryo-bench compare --reference``, and
``--write-reference``, which writes one from two or more sessions' folders), in the manner of
ReFrame's performance references: per (workload, target) the expected images/s and a
tolerance.

A reference written here is bound to the machine each entry was measured on
(``<target>@<machine>``, :class:`embryo_bench.reporting.runs.Machines`' label): another CPU is
never judged against it (a day's new CPU would read as a regression). A hand-written entry
may name a plain target only in a file that says ``machines: any`` (every machine's runs of
it are then judged against it, and its rows say so); without it, a plain name is refused when
it meets a run, naming the machine to bind it to. Its tolerance is the
sessions' own spread, not a guess: from k folders' geometric means g_1..g_k of one part, the
95 % prediction interval of one more session's on the log scale, t(0.975, k - 1) x s x
sqrt(1 + 1 / k) (s the sd of log g), never below ``--min-difference``. A statistical review
of this project's functions found ``--reference`` called 8-10 % false regressions with no
session effect and 13-28.5 % with one, against a constant with a made-up tolerance.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import yaml
from jsonschema import Draft202012Validator
from scipy import stats

from ..errors import ConfigError
from ..vocabulary.config import read_config_file
from ..vocabulary.layout import PAPER_WORKLOAD
from .crossfolder_rows import Expected, Part, geomean

_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["images_per_s"],
    "properties": {
        "images_per_s": {"type": "number", "exclusiveMinimum": 0},
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
#: What a reference file (``--reference``) may hold: a tolerance for every entry, whether
#: entries named without a machine hold for any machine (``machines: any``), the paper's
#: workload's targets, and other workloads' targets by workload name; an entry is the
#: expected images/s and, optionally, its own tolerance (a fraction).
REFERENCE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1},
        # Plain target names (no @<machine>) judge every machine's runs: said, not assumed.
        "machines": {"const": "any"},
        "targets": {"type": "object", "additionalProperties": _ENTRY},
        "workloads": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": _ENTRY},
        },
    },
}
_REFERENCE_VALIDATOR = Draft202012Validator(REFERENCE_SCHEMA)


def read_reference(path: str | Path, tolerance: float) -> dict[tuple[str, str], Expected]:
    """A reference file: expected images/s per target, as ReFrame's references give
    ``(value, lower, upper, unit)`` per system and variable, here per (workload, target),
    images/s only and a single tolerance (slowdowns only), e.g.::

        tolerance: 0.10            # every entry's, unless it gives its own
        targets:                   # the paper's workload
          host-1cpu@epyc-avx512-2c-24g-9f3e: {images_per_s: 52.0}
          host-2cpu@epyc-avx512-2c-24g-9f3e: {images_per_s: 95.0, tolerance: 0.05}
        workloads:
          mnist-mlp:
            host-1cpu@epyc-avx512-2c-24g-9f3e: {images_per_s: 900}

    An entry is bound to a machine by its name, ``<target>@<machine>`` (the label ``embryo-bench
    compare`` prints). A plain target name holds for every machine's part of that target only in
    a file that says ``machines: any``
    (:attr:`~embryo_bench.reporting.crossfolder_rows.Expected.any_machine`); elsewhere
    :func:`embryo_bench.reporting.crossfolder.compare_folders` refuses it. Validated against
    :data:`REFERENCE_SCHEMA` (jsonschema). The tolerance is judged as ``compare.min_difference``
    is, on the log scale (:func:`embryo_bench.reporting.compare.verdict`): with 0.10, a
    geometric mean below expected / 1.10 whose interval is below the expected value is a
    regression (ReFrame's lower threshold -0.10 would fail below expected x 0.90 on a single
    value).

    Args:
        tolerance: the tolerance of entries that give none, in a file that gives none
            (``--min-difference``).

    Returns:
        (workload, target) -> :class:`embryo_bench.reporting.crossfolder_rows.Expected`; the paper's
        workload is :data:`embryo_bench.vocabulary.layout.PAPER_WORKLOAD`.

    Raises:
        ConfigError: one line naming the file and the key: not a file, not YAML (line and
            column), a number that is NaN or an infinity, an unknown key, a value of the
            wrong type or range, no entry.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--reference {path}: not a file (expected images/s per target, YAML)")
    data = read_config_file(path)
    errors = sorted(_REFERENCE_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path)
        if e.validator == "additionalProperties":
            known = ", ".join(e.schema.get("properties", {}))
            extra = [k for k in e.instance if k not in e.schema.get("properties", {})]
            where = ".".join(p for p in (where, extra[0]) if p)
            message = f"unknown key; expected one of {known}"
        elif e.validator == "minProperties":
            message = "holds no reference; expected targets: or workloads:"
        else:
            message = e.message
        raise ConfigError(f"{path}: {where + ': ' if where else ''}{message}")
    default = data.get("tolerance", tolerance)
    any_machine = data.get("machines") == "any"
    entries = {(PAPER_WORKLOAD, t): e for t, e in data.get("targets", {}).items()}
    for workload, targets in data.get("workloads", {}).items():
        entries |= {(workload, t): e for t, e in targets.items()}
    if not entries:
        raise ConfigError(
            f"{path}: holds no target; expected images/s under targets: or workloads:"
        )
    return {
        key: Expected(
            float(e["images_per_s"]),
            float(e.get("tolerance", default)),
            any_machine=any_machine and "@" not in key[1],
        )
        for key, e in entries.items()
    }


#: The fewest folders (sessions) a written reference is made from: one gives no spread.
MIN_SESSIONS = 2


def reference_from(
    parts: dict[tuple[str, str], list[Part]], outdirs: list[str], min_difference: float
) -> tuple[dict, list[str]]:
    """A reference file's contents from the folders' runs (:data:`REFERENCE_SCHEMA`): per
    workload and ``<target>@<machine>`` run in at least :data:`MIN_SESSIONS` of ``outdirs``,
    the geometric mean over the folders of each folder's geometric mean images/s, and the
    tolerance the module's docstring gives (a fraction, rounded up to 0.001; at most 1).

    Args:
        parts: :func:`embryo_bench.reporting.crossfolder_rows.folder_parts`' parts per
            (folder, workload).
        outdirs: the folders, two or more.
        min_difference: the least tolerance (``--min-difference``).

    Returns:
        (the contents, as YAML writes them; notes: the parts left out, run in one folder only,
        and tolerances capped at 1).

    Raises:
        ConfigError: fewer than :data:`MIN_SESSIONS` folders, or no part run in two of them.
    """
    if len(outdirs) < MIN_SESSIONS:
        raise ConfigError(
            f"--write-reference: {len(outdirs)} folder; expected {MIN_SESSIONS} or more "
            "sessions' folders (a tolerance is their spread)"
        )
    speeds: dict[tuple[str, str], list[float]] = {}
    for (_folder, workload), ps in parts.items():
        for part in ps:
            g = geomean(part.rows["images_per_s"])
            if math.isfinite(g):
                speeds.setdefault((workload, f"{part.target}@{part.machine}"), []).append(g)
    notes, targets, workloads = [], {}, {}
    for (workload, name), values in speeds.items():
        k = len(values)
        if k < MIN_SESSIONS:
            notes.append(f"{workload}/{name}: in one folder only, no spread: left out")
            continue
        logs = np.log(values)
        spread = float(stats.t.ppf(0.975, k - 1) * logs.std(ddof=1) * math.sqrt(1 + 1 / k))
        tolerance = max(min_difference, math.expm1(spread))
        if tolerance > 1:
            notes.append(
                f"{workload}/{name}: the sessions' spread gives {tolerance:.2f}; capped at 1"
            )
            tolerance = 1.0
        entry = {
            "images_per_s": float(f"{math.exp(logs.mean()):.4g}"),
            "tolerance": math.ceil(tolerance * 1000) / 1000,
        }
        if workload == PAPER_WORKLOAD:
            targets[name] = entry
        else:
            workloads.setdefault(workload, {})[name] = entry
    if not targets and not workloads:
        raise ConfigError(
            "--write-reference: no target ran on one machine in two of the folders; expected "
            "the same targets' runs in two or more sessions"
        )
    data: dict = {"tolerance": min_difference}
    if targets:
        data["targets"] = targets
    if workloads:
        data["workloads"] = workloads
    errors = list(_REFERENCE_VALIDATOR.iter_errors(data))
    if errors:  # what it writes it must read back
        raise AssertionError(f"a written reference does not validate: {errors[0].message}")
    return data, notes


def reference_text(data: dict, outdirs: list[str], date: str) -> str:
    """The reference file's text: a header saying where it came from, then ``data`` as
    YAML."""
    head = (
        f"# Written by embryo-bench compare --write-reference on {date} from {len(outdirs)} "
        "sessions' folders:\n"
        + "".join(f"#   {o}\n" for o in outdirs)
        + "# Each entry: the sessions' geometric mean images/s on the machine it names, and "
        "the 95 % prediction\n# interval of one more session from their spread as its "
        "tolerance (at least the top-level one).\n"
    )
    return head + yaml.safe_dump(data, sort_keys=False)
