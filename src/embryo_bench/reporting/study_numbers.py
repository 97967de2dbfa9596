"""A study's published numbers beside ours (:mod:`embryo_bench.reporting.study`): its numbers
(:func:`theirs_table`, from :func:`embryo_bench.published.studies.load_numbers`, each with its
source) and ours on the same workloads (:func:`ours_side`, from ``study/ours.csv``) in one
table with a ``side`` column ("theirs" / "ours") and both machines named
(:func:`side_by_side`, :data:`SIDE_COLUMNS`), time and cost relative to each side's own base,
and its readable form (:func:`readable_side`: accuracy of synthetic data shown as
:data:`MEANINGLESS`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..published.studies import Study, parse_settings
from . import readable_tables

MEANINGLESS = "meaningless (SYNTHETIC data)"


#: Columns of :func:`side_by_side`: side ("theirs" | "ours"), workload (the catalog name),
#: system (their system as the study names it; our target), machine (theirs: the system;
#: ours: the machine label), settings (``key=value;...``), cpus (their vCPUs; our target's),
#: gpus, epoch_seconds (s), throughput (images/s), throughput_per_core (images/s per core,
#: CPU systems only), time_relative and cost_relative (x the base: theirs as published, each
#: relative to the system its ``base`` setting names, else computed against the study's
#: ``base_system``; ours the config's ``cost.base_target`` in the same workload; NaN where
#: no base or no price), relative_to (that base's name; "" where there is none),
#: hourly_usd (USD/h), test_accuracy (a fraction; NaN where not
#: published or our data was synthetic), data ("published", "real" or "SYNTHETIC"), our
#: workload (the config's name; "" for theirs), source (theirs: where it was printed; ours:
#: "measured, <n> runs").
SIDE_COLUMNS = [
    "side",
    "workload",
    "system",
    "machine",
    "settings",
    "cpus",
    "gpus",
    "epoch_seconds",
    "throughput",
    "throughput_per_core",
    "time_relative",
    "cost_relative",
    "relative_to",
    "hourly_usd",
    "test_accuracy",
    "data",
    "our_workload",
    "source",
]


#: Their metrics a row of :func:`side_by_side` shows, by column.
THEIR_METRICS = {
    "epoch_seconds": "epoch_seconds",
    "throughput": "throughput",
    "test_accuracy": "test_accuracy",
    "time_relative": "relative_time",
    "cost_relative": "relative_cost",
}


#: Their metrics only a claim reads: a change between two networks is no row of one.
CLAIMS_ONLY = ("throughput_drop",)

#: Their per-system metrics (rows with workload ""): price and cores.
SYSTEM_METRICS = ("hourly_usd", "vcpus", "gpus")


def _system_facts(used: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per system, the first used value of each :data:`SYSTEM_METRICS` among the rows with
    no workload."""
    facts: dict[str, dict[str, float]] = {}
    for _, r in used[(used["workload"] == "") & used["metric"].isin(SYSTEM_METRICS)].iterrows():
        facts.setdefault(r["system"], {}).setdefault(r["metric"], float(r["value"]))
    return facts


def _their_cost(row: dict, hourly: float) -> float:
    """A row's cost (USD): its published cost_usd, else its training time (a whole
    training's, else one epoch's, s) x the system's price (USD/h); NaN without either."""
    if np.isfinite(row.get("cost_usd", math.nan)):
        return row["cost_usd"]
    seconds = row.get("training_seconds", math.nan)
    if not np.isfinite(seconds):
        seconds = row.get("epoch_seconds", math.nan)
    return seconds / 3600.0 * hourly if np.isfinite(hourly) else math.nan


def theirs_table(published: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The study's used numbers (``used`` true) as :data:`SIDE_COLUMNS` rows: one per
    (system, workload, settings), in the file's order.

    Per core only for a CPU system (its vCPUs published, and no GPU count above 0);
    time_relative and cost_relative as published (``relative_time``, ``relative_cost``),
    else computed against ``study.base_system``'s row of the same workload (the same
    settings, else its one row of that workload): times from ``training_seconds`` (else
    ``epoch_seconds``), costs from ``cost_usd`` (else time x the systems' ``hourly_usd``);
    NaN without a base or a price.
    """
    used = published[published["used"]]
    facts = _system_facts(used)
    keyed: dict[tuple[str, str, str], dict] = {}
    for _, r in used[(used["workload"] != "") & ~used["metric"].isin(CLAIMS_ONLY)].iterrows():
        # A relative number's base is not a setting of the measurement: it joins the row of
        # the same system, workload and settings, its base kept beside it.
        settings = parse_settings(r["settings"])
        base = settings.pop("base", "")
        key = (r["system"], r["workload"], ";".join(f"{k}={v}" for k, v in settings.items()))
        row = keyed.setdefault(key, {"sources": [], "bases": {}})
        row.setdefault(r["metric"], float(r["value"]))
        if base:
            row["bases"].setdefault(r["metric"], base)
        if r["source"] not in row["sources"]:
            row["sources"].append(r["source"])
    rows = []
    for (system, workload, settings), row in keyed.items():
        f = facts.get(system, {})
        vcpus, gpus = f.get("vcpus", math.nan), f.get("gpus", math.nan)
        hourly = f.get("hourly_usd", math.nan)
        throughput = row.get("throughput", math.nan)
        cpu_system = np.isfinite(vcpus) and not (np.isfinite(gpus) and gpus > 0)
        time_rel, cost_rel = row.get("relative_time", math.nan), row.get("relative_cost", math.nan)
        published_bases = set(row["bases"].values())
        if len(published_bases) > 1:  # one column cannot hold two bases
            raise ValueError(
                f"{study.name}: {system}'s relative time and cost of {workload} have the "
                f"bases {sorted(published_bases)}; expected one"
            )
        relative_to = next(iter(published_bases), "")
        base = _their_base(keyed, study.base_system, workload, settings)
        if relative_to and base is not None and relative_to != study.base_system:
            base = None  # published against another system: not mixed with computed ones
        if base is not None and (system, workload, settings) != base[0]:
            b = base[1]
            b_hourly = facts.get(study.base_system, {}).get("hourly_usd", math.nan)
            for key in ("training_seconds", "epoch_seconds"):
                if not np.isfinite(time_rel) and np.isfinite(row.get(key, math.nan)):
                    time_rel = row[key] / b.get(key, math.nan)
            if not np.isfinite(cost_rel):
                cost_rel = _their_cost(row, hourly) / _their_cost(b, b_hourly)
        elif base is not None:
            time_rel = 1.0 if not np.isfinite(time_rel) else time_rel
            cost_rel = 1.0 if not np.isfinite(cost_rel) else cost_rel
        if base is not None and not relative_to:
            relative_to = study.base_system
        if not (np.isfinite(time_rel) or np.isfinite(cost_rel)):
            relative_to = ""
        rows.append(
            {
                "side": "theirs",
                "workload": workload,
                "system": system,
                "machine": system,
                "settings": settings,
                "cpus": vcpus,
                "gpus": gpus,
                "epoch_seconds": row.get("epoch_seconds", math.nan),
                "throughput": throughput,
                "throughput_per_core": throughput / vcpus if cpu_system else math.nan,
                "time_relative": time_rel,
                "cost_relative": cost_rel,
                "relative_to": relative_to,
                "hourly_usd": hourly,
                "test_accuracy": row.get("test_accuracy", math.nan),
                "data": "published",
                "our_workload": "",
                "source": "; ".join(row["sources"]),
            }
        )
    return pd.DataFrame(rows, columns=SIDE_COLUMNS)


def _their_base(
    keyed: dict, base_system: str, workload: str, settings: str
) -> tuple[tuple, dict] | None:
    """The base system's row of ``workload`` with ``settings`` (else its only row of that
    workload), as (key, row); None without one."""
    if not base_system:
        return None
    same = (base_system, workload, settings)
    if same in keyed:
        return same, keyed[same]
    rows = [(k, v) for k, v in keyed.items() if k[0] == base_system and k[1] == workload]
    return rows[0] if len(rows) == 1 else None


def our_settings(row) -> str:
    """An ``ours`` row's settings in the numbers files' form
    (:func:`embryo_bench.published.studies.parse_settings`):
    ``batch_size=128;threads=2;input=memory``, and ``workers=4`` for files input (the
    input workers, as the studies' ``workers`` setting)."""
    parts = {"batch_size": row["batch_size"], "threads": row["threads"], "input": row["input"]}
    if row["input"] == "files":
        parts["workers"] = row.get("workers", "")
    text = ";".join(f"{k}={v}" for k, v in parts.items() if not pd.isna(v) and v != "")
    parse_settings(text, "our settings")  # the same keys as the study's
    return text


def ours_side(ours: pd.DataFrame, cost_base: str | dict[str, str] = "") -> pd.DataFrame:
    """``ours`` (:data:`embryo_bench.reporting.study.OURS_COLUMNS`) as :data:`SIDE_COLUMNS` rows:
    time and cost relative
    to ``cost_base`` (the config's ``cost.base_target`` as the tables name it; a dict:
    per our workload) in the same workload; test accuracy only from real data."""
    rows = []
    for _, r in ours.iterrows():
        base_name = cost_base.get(r["workload"], "") if isinstance(cost_base, dict) else cost_base
        base = ours[(ours["workload"] == r["workload"]) & (ours["target"] == base_name)]
        time_rel = cost_rel = math.nan
        if len(base):
            time_rel = r["training_seconds"] / base["training_seconds"].iloc[0]
            cost_rel = r["cost_usd"] / base["cost_usd"].iloc[0]
        synthetic = r["data"] == "synthetic"
        gpus = not pd.isna(r["gpus"]) and int(r["gpus"]) > 0
        rows.append(
            {
                "side": "ours",
                "workload": r["catalog"],
                "system": r["target"],
                "machine": r["machine"],
                "settings": our_settings(r),
                "cpus": r["cpus"],
                "gpus": r["gpus"],
                "epoch_seconds": r["epoch_seconds"],
                "throughput": r["throughput"],
                "throughput_per_core": math.nan if gpus else r["throughput_per_core"],
                "time_relative": time_rel,
                "cost_relative": cost_rel,
                "relative_to": base_name if len(base) else "",
                "hourly_usd": r["hourly_usd"],
                "test_accuracy": math.nan if synthetic else r["test_accuracy"],
                "data": "SYNTHETIC" if synthetic else "real",
                "our_workload": r["workload"],
                "source": f"measured, {r['runs']} run{'s' * (r['runs'] != 1)}",
            }
        )
    return pd.DataFrame(rows, columns=SIDE_COLUMNS)


def side_by_side(
    published: pd.DataFrame,
    ours: pd.DataFrame,
    study: Study,
    cost_base: str | dict[str, str] = "",
) -> pd.DataFrame:
    """The study's numbers and ours on the same workloads: the study's
    rows (:func:`theirs_table`, every workload it published) and ours on the workloads it
    published (:func:`ours_side`; matched on the catalog name), grouped by workload in the
    study's order, theirs first; :data:`SIDE_COLUMNS`.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of ``study``.
        ours: :data:`embryo_bench.reporting.study.OURS_COLUMNS`
        (:func:`embryo_bench.reporting.study.ours_tables`).
        study: its entry (``base_system`` for their relative time and cost).
        cost_base: the config's ``cost.base_target`` (as the tables name it), or per our
            workload; "" for none (our relative time and cost then NaN).
    """
    theirs = theirs_table(published, study)
    mine = ours_side(ours, cost_base)
    order = list(dict.fromkeys(theirs["workload"]))
    mine = mine[mine["workload"].isin(order)]
    parts = []
    for w in order:
        parts += [theirs[theirs["workload"] == w], mine[mine["workload"] == w]]
    frames = [p for p in parts if len(p)]
    if not frames:
        return pd.DataFrame(columns=SIDE_COLUMNS)
    return pd.concat(frames, ignore_index=True)[SIDE_COLUMNS]


def readable_side(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`side_by_side` as a person reads it: side, workload, system or target, machine,
    settings, s/epoch, images/s, images/s per core, time and cost relative to the base and
    the base's name, test accuracy ("meaningless (SYNTHETIC data)" for our synthetic runs),
    source."""
    return pd.DataFrame(
        {
            "side": table["side"],
            "workload": table["workload"],
            "system / target": table["system"],
            "machine": table["machine"],
            "settings": table["settings"],
            "s/epoch": table["epoch_seconds"].map(readable_tables.number_text),
            "images/s": table["throughput"].map(readable_tables.number_text),
            "images/s per core": table["throughput_per_core"].map(readable_tables.number_text),
            "time vs base": table["time_relative"].map(
                lambda v: readable_tables.number_text(v, ".3g")
            ),
            "cost vs base": table["cost_relative"].map(
                lambda v: readable_tables.number_text(v, ".3g")
            ),
            "base": table["relative_to"],
            "test accuracy": [
                MEANINGLESS if d == "SYNTHETIC" else readable_tables.number_text(a, ".3f")
                for a, d in zip(table["test_accuracy"], table["data"], strict=True)
            ],
            "source": table["source"],
        }
    )
