"""A study around the paper beside our runs.

* :func:`ours_tables`: every workload's finished runs of a configuration read as the figures
  read them (:func:`embryo_bench.reporting.runs.load_runs`, merged folders, one target's runs
  on two machines split, :func:`embryo_bench.reporting.summary.run_table` and
  :func:`~embryo_bench.reporting.summary.target_summary`, the paired ratios of
  :func:`embryo_bench.reporting.compare.comparison_table`), as two tables: every run
  (``study/runs.csv``) and one row per workload and target (``study/ours.csv``,
  :data:`OURS_COLUMNS`: what a study's claims module receives).
* :func:`embryo_bench.reporting.study_numbers.side_by_side`: the study's published numbers
  (:func:`embryo_bench.published.studies.load_numbers`) and ours on the same workloads, in
  one table with a ``side`` column ("theirs" / "ours") and both machines named, and
  :func:`fig_study`, their throughput on one log axis per workload.
* :func:`run_claims`: the study's claims module (its folder's ``claims.py``) run on
  ``published`` and ``ours``.
* the workload x target view (time and cost relative to the base target, per workload) is
  :mod:`embryo_bench.reporting.workload_view`, which reads ``study/runs.csv``
  (:func:`read_runs`).

Only measured values and the study's printed ones are shown; the study's are always labelled
as the study's, with their source. Where our runs trained on synthetic data, accuracy is
shown as meaningless and every table and figure says SYNTHETIC on its face.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..errors import DataError  # noqa: E402
from ..io import atomic_path, read_json  # noqa: E402
from ..published.studies import Study  # noqa: E402
from ..vocabulary.codehash import module_path  # noqa: E402
from ..vocabulary.figspec import FiguresSpec  # noqa: E402
from . import compare, summary  # noqa: E402
from .claims.common import Claim  # noqa: E402
from .merge import merge_runs, split_by_machine  # noqa: E402
from .runs import as_number, load_runs  # noqa: E402
from .study_numbers import readable_side, side_by_side

#: One row per (workload, target) of a configuration's finished runs: workload (the config's
#: name), catalog (the catalog workload, "paper" for the paper's, ""
#: for a model of the user's own), input ("memory" | "files"), data ("synthetic" | "real"), target,
#: runner, backend, cpus, threads, gpus, batch_size (ints), precision (the Keras dtype policy),
#: workers (input workers decoding files, an int; NA for memory input), sweep (the sweep point's
#: name, "" for a main target), runs (finished runs), epoch_seconds (median steady epoch, s),
#: throughput (median images/s), throughput_per_core (images/s per cpu), training_seconds (median,
#: s), test_accuracy (median final, a fraction; NaN where no test set was scored), hourly_usd
#: (USD/h), cost_usd (median, USD; NaN unpriced), input_wait_share (median share of training time
#: spent waiting for input, 0..1; NaN for memory input), ratio, ratio_low, ratio_high (throughput /
#: the compare base target's in the same workload, with its 95 % interval; 1 for the base; NaN where
#: none), verdict (:func:`embryo_bench.reporting.compare.verdict`'s words, "base" for the base, ""
#: where none), pairing ("paired" | "unpaired" | ""; "" for the base), machine (the machine label,
#: :class:`embryo_bench.reporting.runs.Machines`).
OURS_COLUMNS = [
    "workload",
    "catalog",
    "input",
    "data",
    "target",
    "runner",
    "backend",
    "cpus",
    "threads",
    "gpus",
    "batch_size",
    "precision",
    "workers",
    "sweep",
    "runs",
    "epoch_seconds",
    "throughput",
    "throughput_per_core",
    "training_seconds",
    "test_accuracy",
    "hourly_usd",
    "cost_usd",
    "input_wait_share",
    "ratio",
    "ratio_low",
    "ratio_high",
    "verdict",
    "pairing",
    "machine",
]
INT_COLUMNS = ("cpus", "threads", "gpus", "batch_size", "workers", "runs")
#: What ``study/runs.csv`` adds to each results-table row
#: (:func:`embryo_bench.reporting.summary.run_table`): the workload's catalog name and data,
#: its compare and cost bases as the tables name them, whether the run was merged from
#: another folder (compared unpaired) and ``compare.min_difference``.
RUN_EXTRA_COLUMNS = ["catalog", "data", "compare_base", "cost_base", "merged", "min_difference"]

SYNTHETIC_NOTE = (
    "SYNTHETIC: our runs trained on synthetic data of each dataset's shape; their speeds are "
    "measured, their accuracy is meaningless (not shown)."
)


@dataclass(frozen=True)
class StudyWorkload:
    """One workload of a configuration, as :func:`ours_tables` reads it.

    Attributes:
        name: the config's workload name (``workloads[].name``, "paper" for the paper's).
        catalog: the catalog workload it trains ("paper" for the paper's, "" for a model
            of the user's own).
        input: "memory" or "files".
        data: "synthetic" or "real".
        spec: its ``figures-spec.json`` (:class:`embryo_bench.vocabulary.figspec.FiguresSpec`:
            its runs in the planned order, merged folders, prices, bases).
        info: its data's record (the index stage's ``source.json``, a workload's
            ``data/info.json``): the data's ``label``.
    """

    name: str
    catalog: str
    input: str
    data: str
    spec: str
    info: str

    @classmethod
    def from_dict(cls, d: dict, where: str = "workload") -> StudyWorkload:
        """From a mapping of the attributes' names (the rule's JSON).

        Raises:
            DataError: a key missing or unknown, naming ``where``.
        """
        fields = set(cls.__dataclass_fields__)
        if not isinstance(d, dict) or set(d) != fields:
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise DataError(f"{where}: {got}; expected the keys {sorted(fields)}")
        return cls(**{k: str(v) for k, v in d.items()})


def median_or_nan(values: pd.Series) -> float:
    """The median of the numbers of ``values`` (NaN without one)."""
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.median()) if len(v) else math.nan


def number_or_nan(value) -> float:
    """A number (:func:`embryo_bench.reporting.summary.as_number`), else NaN."""
    v = as_number(value)
    return math.nan if v is None else v


def read_workload(w: StudyWorkload) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One workload's runs, as its figures read them: (its rows of ``study/runs.csv``, its
    rows of :data:`OURS_COLUMNS`).

    Raises:
        DataError: a spec, info or run file missing or unreadable (naming it).
        ConfigError: as :func:`embryo_bench.reporting.merge.merge_runs`.
    """
    spec = FiguresSpec.read(w.spec)
    runs = load_runs(spec.runs)
    merged, targets = merge_runs(spec.merge, runs, spec.targets)
    own = split_by_machine(runs, merged, targets)
    label = read_json(w.info).get("label", w.data)
    table = summary.run_table([*own.runs, *merged], own.targets, label, spec.stability)
    table["workload"] = w.name  # the config's name (a merged run's says its own folder's)
    elsewhere = set(table["target"].iloc[len(own.runs) :])
    base = own.name(spec.compare_base) or table["target"].iloc[0]
    paired = compare.comparison_table(table, base, spec.min_difference, elsewhere=elsewhere)
    table = table.assign(
        catalog=w.catalog,
        data=w.data,
        compare_base=base,
        cost_base=own.name(spec.cost_base),
        merged=[i >= len(own.runs) for i in range(len(table))],
        min_difference=spec.min_difference,
    )
    by_target = paired.set_index("target")
    rows = []
    for _, s in summary.target_summary(table).iterrows():
        mine = table[table["target"] == s["target"]]
        p = by_target.loc[s["target"]] if s["target"] in by_target.index else None
        is_base = p is not None and p["pairing"] == "base"
        cpus = int(s["cpus"])
        throughput = s["images_per_s_median"]
        rows.append(
            {
                "workload": w.name,
                "catalog": w.catalog,
                "input": w.input,
                "data": w.data,
                "target": s["target"],
                "runner": s["runner"],
                "backend": s["backend"],
                "cpus": cpus,
                "threads": s["threads"],
                "gpus": s["gpus"],
                "batch_size": s["batch_size"],
                "precision": s["precision"],
                "workers": s["workers"],
                "sweep": s["target"] if s["sweep"] else "",
                "runs": int(s["repeats"]),
                "epoch_seconds": s["steady_epoch_s_median"],
                "throughput": throughput,
                "throughput_per_core": throughput / cpus if cpus else math.nan,
                "training_seconds": s["training_s_median"],
                "test_accuracy": s["final_test_accuracy_median"],
                "hourly_usd": number_or_nan(s["hourly_usd"]),
                "cost_usd": s["cost_usd_median"],
                "input_wait_share": median_or_nan(mine["input_wait_share"]),
                "ratio": math.nan if p is None else p["throughput_ratio"],
                "ratio_low": math.nan if p is None else p["throughput_low"],
                "ratio_high": math.nan if p is None else p["throughput_high"],
                "verdict": "" if p is None else str(p["throughput_verdict"]),
                "pairing": "" if p is None or is_base else p["pairing"],
                "machine": s["machine"],
            }
        )
    return table, pd.DataFrame(rows, columns=OURS_COLUMNS)


def ours_tables(workloads: list[StudyWorkload]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every workload's finished runs of a configuration (the paper's and each
    ``workloads:`` entry): (every run, ``study/runs.csv``: the results table's columns and
    :data:`RUN_EXTRA_COLUMNS`; one row per workload and target, :data:`OURS_COLUMNS`, with
    :data:`INT_COLUMNS` as integers (nullable ``Int64``), the rest float64 or str).

    Raises:
        DataError: no workload, or as :func:`read_workload`.
        ConfigError: as :func:`read_workload`.
    """
    if not workloads:
        raise DataError("no workload given: the tables need at least one workload's runs")
    parts = [read_workload(w) for w in workloads]
    runs = pd.concat([r for r, _ in parts], ignore_index=True)
    ours = pd.concat([o for _, o in parts], ignore_index=True)
    for col in INT_COLUMNS:
        ours[col] = pd.to_numeric(ours[col], errors="coerce").astype("Int64")
    return runs, ours[OURS_COLUMNS]


def read_ours(path: str | Path) -> pd.DataFrame:
    """``study/ours.csv`` read back as :func:`ours_tables` made it (str columns "" where
    empty).

    Raises:
        DataError: missing, unreadable, or other columns than :data:`OURS_COLUMNS`.
    """
    text = ("workload", "catalog", "input", "data", "target", "runner", "backend", "sweep",
            "verdict", "pairing", "machine")  # fmt: skip
    table = _read_csv(path, text)
    if list(table.columns) != OURS_COLUMNS:
        raise DataError(f"{path}: columns {list(table.columns)}; expected {OURS_COLUMNS}")
    for col in INT_COLUMNS:
        table[col] = pd.to_numeric(table[col], errors="coerce").astype("Int64")
    return table


def _read_csv(path: str | Path, text: tuple[str, ...] = ()) -> pd.DataFrame:
    """A CSV table, the columns ``text`` as str ("" where empty); DataError naming ``path``
    when it is missing or unreadable."""
    try:
        table = pd.read_csv(path, dtype={c: str for c in text})
        for col in text:
            if col in table:
                table[col] = table[col].fillna("")
        return table
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: not a readable CSV table ({why})") from exc


# --- the study's claims --------------------------------------------------------------------

CLAIM_COLUMNS = ["claim", "verdict", "theirs", "ours", "source"]


def run_claims(
    study: Study, published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame
) -> pd.DataFrame:
    """The study's headline claims checked on ``ours``: its claims module's
    (:attr:`Study.claims`, ``embryo_bench.studies.<study>.claims``) ``claims(published, ours,
    runs)`` (``runs``: ``study/runs.csv``, :func:`read_runs`: ratios between two workloads
    paired within the rounds), as a table of :data:`CLAIM_COLUMNS` (verdict as printed, e.g.
    "cannot be checked here (no GPU)"), one row per claim in the module's order.

    Raises:
        DataError: one line naming the module's file: it does not exist, cannot be imported,
            has no ``claims`` function, raised, or returned something other than a list of
            :class:`embryo_bench.reporting.claims.common.Claim`.
    """
    name = study.claims
    where = f"study {study.name}: claims module {name}"
    try:
        path = module_path(name)
    except FileNotFoundError:
        raise DataError(
            f"{where}: {study.claims_path} does not exist; expected a module "
            "defining claims(published, ours, runs) -> list[Claim]"
        ) from None
    where = f"{where} ({path})"
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the module's, named
        raise DataError(f"{where} cannot be imported: {type(exc).__name__}: {exc}") from None
    check = getattr(module, "claims", None)
    if not callable(check):
        raise DataError(f"{where} defines no claims(published, ours, runs)")
    try:
        found = check(published.copy(), ours.copy(), runs.copy())
    except Exception as exc:  # noqa: BLE001 - a failing check is named in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DataError(f"{where} failed: {type(exc).__name__}: {first}") from None
    if not isinstance(found, list) or not all(isinstance(c, Claim) for c in found):
        raise DataError(f"{where} returned {type(found).__name__}; expected a list of Claim")
    return pd.DataFrame(
        [(c.claim, c.verdict_text, c.theirs, c.ours, c.source) for c in found],
        columns=CLAIM_COLUMNS,
    )


# --- files ---------------------------------------------------------------------------------


def write_table(
    table: pd.DataFrame,
    path: Path,
    readable: pd.DataFrame | None = None,
    head: str = "",
) -> None:
    """``path``.csv with every column of ``table`` and ``path``.md with ``readable`` (else
    ``table``) under ``head`` (Markdown), each written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path.with_suffix(".csv")) as tmp:
        table.to_csv(tmp, index=False)
    shown = table if readable is None else readable
    text = shown.to_markdown(index=False, floatfmt=".4g") if len(shown) else "(no rows)"
    with atomic_path(path.with_suffix(".md")) as tmp:
        tmp.write_text(f"{head.strip()}\n\n{text}\n" if head.strip() else f"{text}\n")


def save_figure(fig: plt.Figure, path: Path, footer: str) -> None:
    """Save ``fig`` as PNG at ``path`` (atomically) with ``footer`` under it, as the figures
    of :mod:`embryo_bench.reporting.figures` do."""
    fig.text(0.01, -0.02, footer, fontsize=7, color="dimgray", ha="left", va="top")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight", format="png")
    plt.close(fig)


def panel_grid(n: int, width: float = 5.0, height: float = 3.0):
    """A figure of ``n`` panels, up to 3 a row; returns (fig, the n axes)."""
    cols = min(3, max(n, 1))
    rows = math.ceil(max(n, 1) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def any_synthetic(table: pd.DataFrame) -> bool:
    """Whether any row of ``table`` (a ``data`` column: "synthetic" / "SYNTHETIC ..."
    labels or "real") trained on synthetic data, so its table or figure must say so."""
    return bool((table["data"].astype(str).str.upper() == "SYNTHETIC").any())


THEIR_COLOR, OUR_COLOR = "tab:purple", "tab:blue"


def fig_study(table: pd.DataFrame, study: Study, path: Path) -> None:
    """Per workload of :func:`embryo_bench.reporting.study_numbers.side_by_side`, their systems and
    our targets on one
    throughput axis (images/s, log scale), each bar labelled "theirs: <system>" or "ours:
    <target> (<machine>)"; a workload the study published no images/s for says so. SYNTHETIC
    on the figure's face when our runs were synthetic."""
    workloads = list(dict.fromkeys(table["workload"]))
    fig, axes = panel_grid(len(workloads), width=6.0, height=1.0 + 0.35 * max(
        [len(table[table["workload"] == w]) for w in workloads] or [1]))  # fmt: skip
    synthetic = any_synthetic(table)
    for ax, w in zip(axes, workloads, strict=True):
        rows = table[(table["workload"] == w) & np.isfinite(table["throughput"].astype(float))]
        if rows.empty:
            ax.text(0.5, 0.5, f"{w}: no images/s published or measured", ha="center",
                    va="center", transform=ax.transAxes, fontsize=8, color="dimgray")  # fmt: skip
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        y = np.arange(len(rows))
        colors = [THEIR_COLOR if s == "theirs" else OUR_COLOR for s in rows["side"]]
        ax.barh(y, rows["throughput"].astype(float), color=colors)
        labels = [
            f"theirs: {s}"
            if side == "theirs"
            else f"ours: {s}" + (f", {o}" if o != w else "") + f" ({m})"
            for side, s, m, o in zip(
                rows["side"], rows["system"], rows["machine"], rows["our_workload"], strict=True
            )
        ]
        ax.set_yticks(y, labels, fontsize=6)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("images/s (log scale)", fontsize=7)
        has_theirs = (table.loc[table["workload"] == w, "side"] == "theirs").any()
        missing = (
            "" if (rows["side"] == "theirs").any() or not has_theirs else " (no images/s published)"
        )
        ax.set_title(f"{w}{missing}", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    title = f"{study.title.strip()} beside ours: training throughput"
    if synthetic:
        title = f"SYNTHETIC DATA (ours) - {title}"
    fig.suptitle(title, fontsize=9, color="tab:red" if synthetic else "black")
    fig.tight_layout()
    footer = (
        "purple: the study's systems, as published (study/numbers.csv: source); blue: our "
        "targets, measured (median over runs)"
    )
    save_figure(fig, path, (SYNTHETIC_NOTE + " " if synthetic else "") + footer)


def study_head(study: Study, table: pd.DataFrame) -> str:
    """The Markdown above the study's numbers: the study, both sides, SYNTHETIC where our
    runs were."""
    machines = sorted(set(table.loc[table["side"] == "ours", "machine"]))
    lines = [
        f"# {study.title.strip()} (study {study.number}) beside ours",
        "",
        "Theirs: as the study published them (source on each row; the numbers file's `used` "
        "rows). Ours: measured here, the median over each target's runs, on "
        + (", ".join(machines) if machines else "no machine (no run on these workloads)")
        + ". Time and cost vs base: relative to the system the `base` column names; theirs "
        + "as the study published them"
        + (f", else computed against {study.base_system}" if study.base_system else "")
        + "; ours against the configuration's cost.base_target in the same workload.",
    ]
    if any_synthetic(table):
        lines = [f"**{SYNTHETIC_NOTE}**", "", *lines]
    return "\n".join(lines)


def claims_head(study: Study, ours: pd.DataFrame) -> str:
    """The Markdown above the claims table."""
    head = f"# {study.title.strip()}: its headline claims, checked on our runs"
    if any_synthetic(ours):
        head = f"**{SYNTHETIC_NOTE}**\n\n{head}"
    return head


def write_study(
    study: Study,
    published: pd.DataFrame,
    ours: pd.DataFrame,
    runs: pd.DataFrame,
    out_dir: str | Path,
    cost_base: str | dict[str, str] = "",
) -> None:
    """The study's outputs (the ``study`` rule): ``numbers.csv``/``.md``
    (:func:`embryo_bench.reporting.study_numbers.side_by_side`), ``claims.csv``/``.md``
    (:func:`run_claims`) and ``study.png`` (:func:`fig_study`) in ``out_dir``. The claims run first:
    a failing claims module writes nothing.

    Raises:
        DataError: as :func:`run_claims`.
    """
    out_dir = Path(out_dir)
    claims = run_claims(study, published, ours, runs)
    table = side_by_side(published, ours, study, cost_base)
    write_table(table, out_dir / "numbers", readable_side(table), study_head(study, table))
    write_table(claims, out_dir / "claims", head=claims_head(study, ours))
    fig_study(table, study, out_dir / "study.png")


def read_runs(path: str | Path) -> pd.DataFrame:
    """``study/runs.csv`` read back.

    Raises:
        DataError: missing, unreadable or without the columns
            :func:`embryo_bench.reporting.workload_view.workload_view` and the
            claims modules read.
    """
    text = ("sweep", "cost_base", "compare_base", "catalog", "workload", "target", "data")
    table = _read_csv(path, text)
    needed = {"workload", "target", "repeat", "training_s", "steady_epoch_s", "images_per_s",
              "hourly_usd", "sweep", "machine", "input", *RUN_EXTRA_COLUMNS}  # fmt: skip
    if missing := sorted(needed - set(table.columns)):
        raise DataError(f"{path}: no column {', '.join(missing)}; expected study/runs.csv")
    return table
