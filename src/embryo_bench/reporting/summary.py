"""Tables of measured results (the runs read back by :mod:`embryo_bench.reporting.runs`): one row
per
run, one per target (median and min-max over repeats), cost (and whether it can be
normalised), provenance, and the paper-vs-reproduction comparison.

Every number here comes from a run's files or from the config (prices the user gave, with
their source); the paper's values come from :mod:`embryo_bench.published.paper` and are always
labelled
as the paper's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..published import paper
from ..vocabulary.layout import PAPER_WORKLOAD
from .runs import NOT_MEASURED, Machines, Run, as_number, machine_identity, machine_name
from .stability import assess, flag_runs, thresholds


def cost_usd(training_seconds: float, hourly_usd: float | None) -> float | None:
    """Cost of a run in USD: training time (s) / 3600 x price per hour (USD/h), the way
    cloud machines are billed per second; None without a price."""
    if hourly_usd is None:
        return None
    return training_seconds / 3600.0 * hourly_usd


def _nan_for_none(value):
    """``value``, or NaN for None (an accuracy of a run scored on no test set)."""
    return np.nan if value is None else value


def _workers(run: Run) -> float:
    """The input workers that decoded a files-input run's batches (its ``run.json``'s
    ``workload.workers``); NaN for memory input or a run without a spec."""
    workload = (run.spec or {}).get("workload") or {}
    if workload.get("input_mode") != "files" or "workers" not in workload:
        return np.nan
    return float(workload["workers"])


def run_table(
    runs: list[Run],
    targets: dict[str, dict],
    label: str,
    limits: dict | None = None,
    baseline: dict | None = None,
) -> pd.DataFrame:
    """One row per run (target x repeat).

    Args:
        runs: the runs (their metrics; cpus and gpus as the run recorded them).
        targets: target name -> hourly_usd, price_source, paper_system, sweep
            (:meth:`embryo_bench.planning.plan.Plan.report_targets`).
        label: the dataset label (e.g. "SYNTHETIC frames ...") for the ``data`` column.
        limits: the stability thresholds (:func:`embryo_bench.reporting.stability.thresholds`;
            default: the schema's).
        baseline: the machine's probe baseline for the drift flag
            (:func:`embryo_bench.recording.calibrate.machine_baseline`), or None.

    Columns: target, repeat, machine (the label of the machine it ran on,
    :class:`embryo_bench.reporting.runs.Machines` of ``runs``: CPU, its ISA, cores, memory,
    GPUs and a fingerprint, e.g. "xeon-avx512-amx-2c-24g-9f3e"), host (a docker run's daemon's
    host name, else the host's), machine_fingerprint, software_differs (merged runs: how
    their software differs from this workflow's, :mod:`embryo_bench.reporting.merge`), seed, runner,
    backend, variant (train.variant: keras or original), workload, input ("memory" | "files"),
    workers (input workers decoding files, from the run's spec; NaN for memory input),
    input_wait_share, input_bound, cpus, threads, gpus, batch_size, precision (the Keras
    dtype policy: float32, mixed_bfloat16, mixed_float16), sweep
    (base target of a sweep point, else empty), data, train_images, test_images, epochs, flags
    (:data:`embryo_bench.reporting.stability.FLAGS` the run carries, ", "-joined; empty for a clean
    run), flag_reasons (why, "; "-joined), training_s (fit only), wall_s (training
    + per-epoch evaluation, the paper's clock), first_epoch_s, steady_epoch_s (s), images_per_s
    (steady state), final_test_accuracy, best_test_accuracy, time_to_accuracy_s (s, evaluation
    included, MLPerf; empty if not reached or the run diverged), probe_gflops (the calibration
    probes' mean), achieved_gflops, efficiency (achieved / probe), other_cpu_share, steal_percent,
    longest_stall_s, window_images_per_s, window_cv and worst_window_ratio (the run's own
    throughput windows: the median window's images/s, their coefficient of variation,
    slowest / median; empty without windows), hourly_usd (USD/h),
    price_source, cost_usd, cpu_percent_mean,
    memory_mib_peak (MiB), gpu_energy_j, cpu_energy_j (J; "not measured" where no reading),
    gpu_util_percent_mean (NVML's GPU utilisation, %, mean over samples and GPUs; empty on
    the CPU), device_memory_peak_mib (the framework's peak on its GPUs, MiB; empty on the CPU),
    images_per_joule, parameters, cpu_model, started_unix_s and ended_unix_s (when the timed
    part ran, s since 1970; empty for runs made before it was recorded). ``repeat`` is also
    the run's round (:func:`embryo_bench.planning.schedule.round_order`).
    """
    limits = limits or thresholds()
    machines = Machines(runs)
    rows = []
    for r in runs:
        m = r.metrics
        machine = machines.of(r)
        verdict = assess(m, limits, baseline, r.history)
        flops = m.get("flops", {})
        seen = m.get("telemetry", {}).get("interference", {})
        t = targets.get(m["target"], {})
        gpus = m["gpus"]
        tel = m.get("telemetry", {})
        gpu_energy = tel.get("energy_j", NOT_MEASURED)
        cpu_energy = tel.get("cpu_energy_j", NOT_MEASURED)
        per_joule = (
            tel.get("images_per_joule") if gpus else tel.get("cpu_images_per_joule", NOT_MEASURED)
        )
        rows.append(
            {
                "target": m["target"],
                "repeat": m.get("repeat", 1),
                "machine": machine.label,
                "host": machine_name(m),
                "machine_fingerprint": machine.fingerprint,
                "software_differs": m.get("software_differs", ""),
                "seed": m.get("seed"),
                "runner": m.get("runner", "host"),
                "backend": m.get("backend", m["provenance"].get("keras_backend")),
                "variant": m.get("variant", "keras"),
                # The workload, how its batches were fed, and how long its steps
                # waited for them (runs made before: the paper's, from memory).
                "workload": m.get("workload", PAPER_WORKLOAD),
                "input": m.get("input_mode", "memory"),
                # Input workers decoding files (the run's spec); none for memory input.
                "workers": _workers(r),
                "input_wait_share": as_number(m.get("input_wait", {}).get("share")),
                "input_bound": m.get("input_wait", {}).get("input_bound") or "",
                "cpus": m["cpus"],
                "threads": m.get("threads"),
                "gpus": gpus,
                "batch_size": m["batch_size"],
                # The Keras dtype policy (runs made before it was recorded: float32).
                "precision": m.get("precision", "float32"),
                "sweep": (t.get("sweep") or {}).get("base", ""),
                "data": label,
                "train_images": m["n_train"],
                "test_images": m["n_test"],
                "epochs": m["epochs"],
                "flags": ", ".join(verdict["flags"]),
                "flag_reasons": "; ".join(verdict["reasons"]),
                "training_s": m["training_seconds"],
                "wall_s": m.get("wall_seconds", NOT_MEASURED),
                "first_epoch_s": m["first_epoch_seconds"],
                "steady_epoch_s": m["steady_epoch_seconds"],
                "images_per_s": m["mean_images_per_s"],
                # NaN where no test set was scored (null in metrics.json).
                "final_test_accuracy": _nan_for_none(m["final_test_accuracy"]),
                "best_test_accuracy": _nan_for_none(m["best_test_accuracy"]),
                "accuracy_target": m["accuracy_target"],
                # A diverged run has none, even where an accuracy crossed the target (runs
                # made before the trainer said so are judged here, from their history).
                "time_to_accuracy_s": (
                    None if "diverged" in verdict["flags"] else m["time_to_accuracy_seconds"]
                ),
                "probe_gflops": flops.get("probe_gflops", NOT_MEASURED),
                "achieved_gflops": flops.get("achieved_gflops", NOT_MEASURED),
                "efficiency": flops.get("efficiency", NOT_MEASURED),
                "other_cpu_share": seen.get("other_cpu_share_mean", NOT_MEASURED),
                "steal_percent": seen.get("steal_percent_mean", NOT_MEASURED),
                "longest_stall_s": seen.get("longest_stall_s", NOT_MEASURED),
                "window_images_per_s": as_number(
                    m.get("throughput_windows", {}).get("median_images_per_s")
                ),
                "window_cv": as_number(m.get("throughput_windows", {}).get("cv")),
                "worst_window_ratio": as_number(m.get("throughput_windows", {}).get("worst_ratio")),
                "hourly_usd": t.get("hourly_usd"),
                "price_source": t.get("price_source", ""),
                "cost_usd": cost_usd(m["training_seconds"], t.get("hourly_usd")),
                "cpu_percent_mean": tel.get("cpu_percent_mean", NOT_MEASURED),
                "memory_mib_peak": tel.get("memory_mib_peak", NOT_MEASURED),
                "gpu_energy_j": gpu_energy if gpus else "no GPU",
                # How busy the run's GPUs were (NVML, % of the time a kernel ran, the mean
                # over samples and GPUs) and the most the framework held on them (MiB).
                "gpu_util_percent_mean": _gpu_mean(tel, "gpu_util_percent_mean") if gpus else None,
                "device_memory_peak_mib": as_number(m.get("device_memory_peak_mib")),
                "cpu_energy_j": cpu_energy,
                "images_per_joule": per_joule,
                "parameters": m["parameter_count"],
                "cpu_model": m["provenance"]["cpu_model"],
                "started_unix_s": as_number(m.get("wall_clock", {}).get("started_unix_s")),
                "ended_unix_s": as_number(m.get("wall_clock", {}).get("ended_unix_s")),
            }
        )
    return pd.DataFrame(rows)


def _gpu_mean(telemetry: dict, key: str) -> float | None:
    """The mean over a run's GPUs of one of their telemetry summaries (``key`` of each entry
    of ``telemetry["gpus"]``); None where no GPU has a number."""
    values = [as_number(g.get(key)) for g in telemetry.get("gpus") or []]
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


#: Columns summarised per target (median, min, max over repeats).
SUMMARISED = [
    "training_s",
    "wall_s",
    "first_epoch_s",
    "steady_epoch_s",
    "images_per_s",
    "final_test_accuracy",
    "time_to_accuracy_s",
    "efficiency",
    "cost_usd",
    "memory_mib_peak",
    "cpu_energy_j",
    "gpu_energy_j",
]


def _numbers(column: pd.Series) -> np.ndarray:
    """The numbers of a table column (float64), leaving out missing and "not measured"."""
    return np.array([v for v in map(as_number, column) if v is not None], dtype=float)


def olympic_mean(values) -> float | None:
    """MLPerf's olympic mean: the mean after dropping the fastest and the slowest result;
    None with fewer than 5 results (MLPerf's minimum for it)."""
    vals = sorted(float(v) for v in values)
    return float(np.mean(vals[1:-1])) if len(vals) >= 5 else None


def target_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per target, over every run (a flag is a warning, not a gate): repeats (the
    runs), flagged_runs and ``<flag>_runs`` for each of
    :data:`embryo_bench.reporting.stability.FLAGS`
    (:func:`embryo_bench.reporting.stability.flag_runs`: how many runs carry a flag, that flag) and
    clean_runs (how many carry none), and for each :data:`SUMMARISED` column ``<col>_median``,
    ``<col>_min`` and ``<col>_max``; NaN where no run has a number. ``images_per_s_median_clean``
    is the median throughput of the clean runs alone (NaN without one), to read beside. A
    time to accuracy only counts the runs that reached it (``tta_reached`` says how many);
    ``time_to_accuracy_s_olympic`` is MLPerf's olympic mean of it (5 or more runs). Targets
    keep the order of their first run."""
    rows = []
    for name, g in runs.groupby("target", sort=False):
        flags = g.get("flags", pd.Series("", index=g.index)).fillna("").astype(str)
        clean = g[(flags == "").to_numpy()]
        row = {
            "target": name,
            "runner": g["runner"].iloc[0],
            "backend": g["backend"].iloc[0],
            "variant": g["variant"].iloc[0] if "variant" in g else "keras",
            "cpus": g["cpus"].iloc[0],
            "gpus": g["gpus"].iloc[0],
            "batch_size": g["batch_size"].iloc[0],
            "precision": g["precision"].iloc[0] if "precision" in g else "float32",
            "workers": g["workers"].iloc[0] if "workers" in g else np.nan,
            "threads": g["threads"].iloc[0],
            # one machine per target (a target that ran on several is split before)
            "machine": ", ".join(dict.fromkeys(g["machine"])) if "machine" in g else "",
            "sweep": g["sweep"].iloc[0],
            "repeats": len(g),
            **flag_runs(flags),
            "clean_runs": len(clean),
            "train_images": g["train_images"].iloc[0],
            "epochs": g["epochs"].iloc[0],
            "hourly_usd": g["hourly_usd"].iloc[0],
            "price_source": g["price_source"].iloc[0],
            "tta_reached": int(g["time_to_accuracy_s"].notna().sum()),
            "time_to_accuracy_s_olympic": olympic_mean(g["time_to_accuracy_s"].dropna()),
        }
        for col in SUMMARISED:
            vals = _numbers(g[col])
            for stat, fn in (("median", np.median), ("min", np.min), ("max", np.max)):
                row[f"{col}_{stat}"] = float(fn(vals)) if len(vals) else np.nan
        clean_rates = _numbers(clean["images_per_s"])
        row["images_per_s_median_clean"] = (
            float(np.median(clean_rates)) if len(clean_rates) else np.nan
        )
        rows.append(row)
    return pd.DataFrame(rows)


def normalised_cost(summary: pd.DataFrame, base_target: str) -> pd.DataFrame:
    """Median training time and cost of every priced target relative to ``base_target``
    (minimaxir's normalisation): columns target, time_relative, cost_relative (1.0 = the
    base; below 1 = faster / cheaper), training_s_median, cost_usd_median, hourly_usd and
    price_source (where the price comes from, as the config says).

    Raises:
        ConfigError: the base target did not run, or has no ``hourly_usd``.
    """
    base = summary[summary["target"] == base_target]
    if base.empty:
        raise ConfigError(
            f"cost.base_target {base_target!r}: no such target ran "
            f"(ran: {', '.join(summary['target'])})"
        )
    base_cost = base["cost_usd_median"].iloc[0]
    if not np.isfinite(base_cost):
        raise ConfigError(f"cost.base_target {base_target!r} has no hourly_usd")
    priced = summary[np.isfinite(summary["cost_usd_median"].astype(float))]
    return pd.DataFrame(
        {
            "target": priced["target"],
            "time_relative": priced["training_s_median"] / base["training_s_median"].iloc[0],
            "cost_relative": priced["cost_usd_median"] / base_cost,
            "training_s_median": priced["training_s_median"],
            "cost_usd_median": priced["cost_usd_median"],
            "hourly_usd": priced["hourly_usd"],
            "price_source": priced["price_source"],
        }
    ).reset_index(drop=True)


def paper_comparison(
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    targets: dict[str, dict],
    counts: dict | None = None,
) -> pd.DataFrame:
    """The paper's values beside ours (``paper vs reproduction``).

    With ``counts`` (the select stage's ``summary.json``, :func:`embryo_bench.data.select.summary`)
    the data counts come first: labelled frames, frames per class after balancing, balanced
    frames, and training / test samples after rotation (ours from the runs), with why the
    printed 49,024 / 12,256 cannot be matched (:data:`embryo_bench.published.paper.SPLIT_NOTE`).

    Rows: the paper's 2-core laptop and 4-core desktop training times (for each, the target
    whose ``paper_system`` names it, else "no matching target ran"), compared per training
    image per epoch (ms) because the workloads differ, with both workloads stated; test
    accuracy after the paper's ~20 epochs; the parameter count as printed vs as counted;
    the paper's ~83 MB memory-per-image estimate vs peak training memory / batch size.

    Columns: quantity, paper, ours, ratio (ours / paper, empty where not comparable), our
    target, note.
    """
    rows = _count_rows(counts, runs) if counts and "source" in counts else []
    by_system = {
        t["paper_system"]: name
        for name, t in targets.items()
        if t.get("paper_system") and not t.get("sweep") and name in set(summary["target"])
    }
    for system, minutes in paper.TRAINING_MINUTES.items():
        paper_ms = minutes * 60_000 / (paper.TRAIN_IMAGES * paper.EPOCHS)
        name = by_system.get(system)
        s = summary[summary["target"] == name] if name else summary.iloc[0:0]
        if s.empty:
            rows.append(
                {
                    "quantity": f"training time, {system}",
                    "paper": f"{minutes:g} min ({paper_ms:.2f} ms/image-epoch)",
                    "ours": "no matching target ran",
                    "ratio": None,
                    "target": name or "",
                    "note": f"set paper_system: {system} on the matching target",
                }
            )
            continue
        row = s.iloc[0]
        ours_s = row["training_s_median"]
        ours_ms = ours_s * 1000 / (row["train_images"] * row["epochs"])
        rows.append(
            {
                "quantity": f"training time, {system}",
                "paper": f"{minutes:g} min ({paper_ms:.2f} ms/image-epoch)",
                "ours": f"{ours_s / 60:.3g} min ({ours_ms:.2f} ms/image-epoch)",
                "ratio": ours_ms / paper_ms,
                "target": name,
                "note": (
                    f"paper: {paper.TRAIN_IMAGES:,} images x {paper.EPOCHS} epochs; ours: "
                    f"{int(row['train_images']):,} x {int(row['epochs'])}, median of "
                    f"{int(row['repeats'])}; ratio per image-epoch"
                ),
            }
        )
    main = runs[runs["sweep"] == ""]
    acc = float(main["final_test_accuracy"].median())
    epochs = int(main["epochs"].iloc[0])
    rows.append(
        {
            "quantity": "test accuracy after ~20 epochs",
            "paper": f"~{paper.TEST_ACCURACY:.2f}",
            "ours": f"{acc:.4f} after {epochs} epochs",
            "ratio": acc / paper.TEST_ACCURACY,
            "target": "all main targets",
            "note": f"median final test accuracy over {len(main)} runs",
        }
    )
    counted = int(runs["parameters"].iloc[0])
    rows.append(
        {
            "quantity": "parameters",
            "paper": f"{paper.PARAMETERS_PRINTED:,} (as printed)",
            "ours": f"{counted:,} (counted by Keras)",
            "ratio": counted / paper.PARAMETERS_PRINTED,
            "target": "model",
            "note": (
                "the paper's per-layer terms add up to 16,834,432 (the output layer's 4 biases "
                "left out); its printed total is 2,000 below that sum"
            ),
        }
    )
    mem = [
        (as_number(m), b)
        for m, b in zip(main["memory_mib_peak"], main["batch_size"], strict=True)
        if as_number(m) is not None
    ]
    if mem:
        per_image = float(np.median([m * 1.048576 / b for m, b in mem]))  # MiB -> MB
        ours_mem, ratio = (
            f"{per_image:.2f} MB (peak memory / batch size)",
            (per_image / paper.MEMORY_MB_PER_IMAGE),
        )
    else:
        ours_mem, ratio = NOT_MEASURED, None
    rows.append(
        {
            "quantity": "memory per image",
            "paper": f"~{paper.MEMORY_MB_PER_IMAGE:g} MB (estimate)",
            "ours": ours_mem,
            "ratio": ratio,
            "target": "all main targets",
            "note": "ours: median over runs of peak training-process memory / batch size",
        }
    )
    return pd.DataFrame(rows)


def _count_rows(counts: dict, runs: pd.DataFrame) -> list[dict]:
    """:func:`paper_comparison`'s rows for the data counts."""
    src = counts["source"]
    per_class = ", ".join(f"{c}: {n:,}" for c, n in src["per_class"].items())
    rows = [
        {
            "quantity": "labelled frames",
            "paper": f"{paper.LABELLED_FRAMES:,}",
            "ours": f"{src['labelled_frames']:,}",
            "ratio": src["labelled_frames"] / paper.LABELLED_FRAMES,
            "target": "data",
            "note": f"ours per cell count: {per_class}",
        },
        {
            "quantity": "frames per class after balancing",
            "paper": f"{paper.RAREST_CLASS_FRAMES:,} (all 3-cell frames)",
            "ours": f"{counts['balanced_per_class']:,}",
            "ratio": counts["balanced_per_class"] / paper.RAREST_CLASS_FRAMES,
            "target": "data",
            "note": "every frame of the rarest 1-4 cell class, as many drawn from each other",
        },
        {
            "quantity": "balanced frames",
            "paper": f"{paper.BALANCED_FRAMES:,}",
            "ours": f"{counts['total']:,}",
            "ratio": counts["total"] / paper.BALANCED_FRAMES,
            "target": "data",
            "note": "train {:,} / test {:,} frames".format(
                *(sum(counts.get(s, {}).values()) for s in ("train", "test"))
            ),
        },
    ]
    main = runs[runs["sweep"] == ""]
    if len(main):
        train, test = int(main["train_images"].iloc[0]), int(main["test_images"].iloc[0])
        rows.append(
            {
                "quantity": "samples after rotation (train / test)",
                "paper": (
                    f"{paper.TRAIN_SAMPLES_PRINTED:,} / {paper.TEST_SAMPLES_PRINTED:,} "
                    f"(as printed; {paper.SAMPLES:,} in all)"
                ),
                "ours": f"{train:,} / {test:,} ({train + test:,} in all)",
                "ratio": (train + test) / paper.SAMPLES,
                "target": "data",
                "note": paper.SPLIT_NOTE,
            }
        )
    return rows


def cost_summary(
    main: pd.DataFrame, cost_base: str, cost_note: str = ""
) -> tuple[pd.DataFrame | None, str]:
    """The cost policy: normalise to the base target when there is one, else say why not.

    Args:
        main: :func:`target_summary` rows of the main targets (no sweep points).
        cost_base: ``cost.base_target`` when it ran, else "".
        cost_note: why the base target could not be used (it was skipped), if so.

    Returns:
        (:func:`normalised_cost` table, "") or (None, why cost is not normalised).

    Raises:
        ConfigError: as :func:`normalised_cost`.
    """
    if cost_base:
        return normalised_cost(main, cost_base), ""
    if cost_note:
        return None, cost_note
    if main["hourly_usd"].notna().any():
        return None, "set cost.base_target in the config to normalise"
    return None, "no hourly_usd in the config: cost not computed"


def isolation_text(isolation: dict | None) -> str:
    """A container's ``isolation`` (metrics.json) in words, e.g. "network none, cap_drop
    ALL, no-new-privileges, pids 4096"; "" for host runs and runs recorded before it."""
    if not isolation:
        return ""
    parts = [
        f"network {isolation.get('network_mode') or 'default'}",
        f"cap_drop {','.join(isolation.get('cap_drop') or []) or 'none'}",
        *(isolation.get("security_opt") or []),
        f"pids {isolation.get('pids_limit') or 'unlimited'}",
    ]
    if isolation.get("read_only_rootfs"):
        parts.append("read-only root")
    return ", ".join(parts)


def provenance_table(runs: list[Run]) -> pd.DataFrame:
    """Per run: the machine it ran on (its label, as :func:`run_table`'s), the host (a
    docker run's daemon's host name, else the host's), the machine's fingerprint, its ISA
    (the :data:`embryo_bench.reporting.runs.MACHINE_FLAGS` it has), logical cores and memory
    (GiB; empty where not recorded), the Docker daemon's ID and how it was reached (docker
    runs: "tls", "ssh", "unix socket"), what the container was allowed (its ``isolation``,
    e.g. "network none, cap_drop ALL, no-new-privileges, pids 4096"), git commit, container
    image (id), Keras/backend versions, CPU model, GPU names and driver, Python, dataset
    identity (sha256 or "synthetic"), Slurm job."""
    machines = Machines(runs)
    rows = []
    for r in runs:
        m, p = r.metrics, r.metrics["provenance"]
        machine = machines.of(r)
        seen = machine_identity(m)
        ds = p.get("dataset", {})
        versions = p.get("versions", {})
        sched = p.get("scheduler") or {}
        container = m.get("container") or {}
        daemon = container.get("daemon") or {}
        rows.append(
            {
                "target": m["target"],
                "repeat": m.get("repeat", 1),
                "machine": machine.label,
                "host": machine_name(m),
                "machine_fingerprint": machine.fingerprint,
                "isa": " ".join(seen["isa"] or ()),
                "cores": seen["cores"],
                "memory_gib": seen["memory_gib"],
                "docker_daemon": daemon.get("id", ""),
                "docker_channel": container.get("channel", ""),
                "container_isolation": isolation_text(container.get("isolation")),
                "git_commit": p.get("git_commit"),
                "container_image": p.get("container_image") or "host",
                "backend": m.get("backend", p.get("keras_backend")),
                "versions": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
                "python": p.get("python"),
                "cpu_model": p.get("cpu_model"),
                "gpus": ", ".join(p.get("gpus") or []) or "none",
                "gpu_driver": p.get("gpu_driver", "not recorded"),
                "dataset": ds.get("label", ds.get("name", "")),
                "dataset_sha256": "synthetic" if ds.get("synthetic") else ds.get("sha256", ""),
                "slurm_job": sched.get("job_id", ""),
            }
        )
    return pd.DataFrame(rows)
