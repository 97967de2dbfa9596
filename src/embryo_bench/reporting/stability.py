"""Is a run's timing clean? Flags from the evidence each run records.

A flag is a warning, not a gate: every run counts in every statistic (as MLPerf, pyperf,
hyperfine and Criterion count every run), and the tables say how many runs carry each flag.
A run is flagged, with the reason, when it diverged or one of the config's ``stability``
thresholds is crossed:

* **diverged**: its loss became NaN or infinite, or exploded
  (:func:`embryo_bench.recording.evidence.divergence`); its throughput still
  counts
  (the machine did the work), but it never has a time to accuracy;
* **interfered**: other processes used more than ``other_cpu_share`` of its cores, steal
  time on its cores exceeded ``steal_percent``, or it stalled (sat idle, or was frozen: a
  gap between its telemetry samples) for ``stall_seconds`` or longer
  (:func:`embryo_bench.recording.telemetry.interference`);
* **drifted**: its two calibration probes (:mod:`embryo_bench.recording.calibrate`) differ by more
than
  the machine's own quiet probes that far apart do (the 99th percentile of a machine
  baseline, ``embryo-bench calibrate``, given as ``stability.baseline``, where the baseline
  fits the run: the same machine, backend, threads and cpus, and a lag near the run's
  length, :mod:`embryo_bench.recording.baseline`), or otherwise by more than ``probe_change`` (on a
  shared VM that alone happens to about four runs in ten at 10 %);
* **noisy**: its own throughput, measured every few training steps
  (:func:`embryo_bench.training.history.window_summary`), varies with a coefficient of variation
  above ``window_cv`` (the training is its own probe, many times per run).

Evidence that was not measured (a remote Docker daemon's machine, a run without probes) is
listed as unchecked and flags nothing.
"""

from __future__ import annotations

import pandas as pd

from ..recording.baseline import machine_differences, settings_differences
from ..recording.calibrate import LAG_REACH, drift_limit, lag_reaches
from ..recording.evidence import IDLE_PERCENT, divergence
from ..vocabulary.config import apply_defaults, load_schema
from .runs import as_number, run_machine

#: The flags, in the order tables list them.
FLAGS = ("diverged", "interfered", "drifted", "noisy")


def flag_runs(flags: pd.Series) -> dict[str, int]:
    """How many runs carry a flag, from their ``flags`` column (each run's :func:`assess`
    flags, ", "-joined; empty or missing for a clean run).

    Returns:
        dict: flagged_runs (runs with any flag) and ``<flag>_runs`` for each of
        :data:`FLAGS` (runs with that flag), in that order.
    """
    raised = flags.fillna("").astype(str).str.split(", ")
    counts = {"flagged_runs": int((flags.fillna("").astype(str) != "").sum())}
    return counts | {
        f"{f}_runs": int(raised.map(lambda names, f=f: f in names).sum()) for f in FLAGS
    }


def thresholds(given: dict | None = None, schema: dict | None = None) -> dict:
    """The ``stability`` thresholds: ``given`` (a config's section) with the schema's
    defaults filled in.

    Raises:
        ConfigError: a threshold is not a number in the schema's range.
    """
    section = (schema or load_schema())["properties"]["stability"]
    return apply_defaults(given or {}, section)


def diverged(metrics: dict, history: pd.DataFrame | None = None) -> str | None:
    """Why a run diverged, or None: its ``metrics.json``'s ``diverged`` (the trainer's
    verdict), else, for runs made before it was recorded,
    :func:`embryo_bench.recording.evidence.divergence`
    of its ``history``. A run scored on no test set (``n_test`` 0) is judged from its
    history again: trainers before 2026-11-26 called its empty test loss a NaN.

    Raises:
        KeyError: neither says (no ``diverged`` in the metrics and no history).
    """
    if "diverged" in metrics and not (metrics.get("n_test") == 0 and history is not None):
        return metrics["diverged"]
    if history is None:
        raise KeyError("diverged")
    return divergence(history)


def baseline_limit(
    baseline: dict, metrics: dict, length: float | None
) -> tuple[tuple[float, float] | None, str | None]:
    """The drift limit ``baseline`` sets this run, or why it cannot judge the run's drift (and
    ``probe_change`` does): it was taken on another machine or with other settings
    (:mod:`embryo_bench.recording.baseline`), the run's length is not recorded, or the baseline's
    lag
    nearest that length is not within :data:`embryo_bench.recording.calibrate.LAG_REACH` of it.

    Args:
        length: the run's length (s), None where not recorded.

    Returns:
        ((limit as a fraction, the lag it was measured at in s), None): the baseline judges
        the run (:func:`embryo_bench.recording.calibrate.drift_limit`); (None, why not) otherwise.
    """
    other = machine_differences(baseline["machine"], run_machine(metrics))
    if other:
        return None, "taken on another machine: " + "; ".join(other)
    settings = settings_differences(
        baseline,
        metrics.get("backend", ""),
        metrics.get("threads"),
        metrics.get("cpus"),
        metrics.get("gpus", 0),
    )
    if settings:
        return None, settings
    if length is None:
        return None, "the run's length is not recorded"
    limit, lag = drift_limit(baseline, length)
    if not lag_reaches(lag, length):
        return None, (
            f"its lag nearest the run's {length:.0f} s is {lag:.0f} s, not within {LAG_REACH:g} x"
        )
    return (limit, lag), None


def stall_kind(seen: dict, stall: float) -> str:
    """How a run's longest stall of ``stall`` s was spent, in words, from its
    ``telemetry.interference`` (:func:`embryo_bench.recording.telemetry.interference`): "idle (CPU
    and
    GPUs under 5 %)", "frozen (telemetry samples, due every 1.0 s, came 5.2 s late)" or
    "frozen and idle (...; 2.0 s with CPU and GPUs under 5 %)". Frozen only where gaps
    between samples counted as stalled time (a host run's sampler is a thread of the
    trainer) and were part of that stall; "idle or frozen" for a run that recorded gaps but
    not which it was (made before ``longest_stall_frozen_s`` was recorded); idle for one
    made before gaps were recorded (none counted then)."""
    idle = f"CPU and GPUs under {IDLE_PERCENT:g} %"
    frozen = as_number(seen.get("longest_stall_frozen_s"))
    if frozen is None and "longest_gap_s" in seen:
        return f"idle or frozen ({idle}, or no telemetry sample; the run did not record which)"
    if not frozen:
        return f"idle ({idle})"
    interval = as_number(seen.get("interval_s"))
    due = f", due every {interval:.1f} s," if interval else ""
    late = f"telemetry samples{due} came {frozen:.1f} s late"
    idle_s = stall - frozen
    if idle_s < 0.05:  # the stall was the gaps' time alone
        return f"frozen ({late})"
    return f"frozen and idle ({late}; {idle_s:.1f} s with {idle})"


def assess(
    metrics: dict,
    limits: dict,
    baseline: dict | None = None,
    history: pd.DataFrame | None = None,
) -> dict:
    """The verdict on one run.

    Args:
        metrics: the run's ``metrics.json`` (``diverged``, ``calibration``,
            ``flops.probe_change``, ``telemetry.interference``, ``throughput_windows``,
            ``wall_clock``, and for the baseline's checks backend, threads, cpus, gpus and
            provenance).
        limits: :func:`thresholds`.
        baseline: the machine's probe baseline
        (:func:`embryo_bench.recording.baseline.load_baseline`)
            or None: then ``probe_change`` is the drift limit; also where the baseline does
            not fit the run (:func:`baseline_limit`, said in the drift reason and listed
            as unchecked).
        history: the run's ``history.csv``, to judge divergence where ``metrics`` does not
            say (runs made before it was recorded).

    Returns:
        dict: clean (bool: no flag), flags (the :data:`FLAGS` raised, in that order),
        reasons (why, one sentence each, with the measured value and the threshold: the
        divergence first, then the interference reasons), unchecked (evidence that was not
        measured).
    """
    interfered, drifted, unchecked = [], [], []
    try:
        why_diverged = diverged(metrics, history)
    except KeyError:
        why_diverged = None
        unchecked.append("loss (divergence)")
    change = as_number(metrics.get("flops", {}).get("probe_change"))
    if change is None:
        unchecked.append("calibration probes")
    else:
        clock = metrics.get("wall_clock") or {}
        length = (
            clock["ended_unix_s"] - clock["started_unix_s"]
            if {"started_unix_s", "ended_unix_s"} <= set(clock)
            else None
        )
        found, misfit = baseline_limit(baseline, metrics, length) if baseline else (None, None)
        if found:
            limit, lag = found
            why = (
                f"limit {limit:.0%}: this machine's quiet probes {lag:.0f} s apart differ by "
                "up to that, 99th percentile of its baseline"
            )
        else:
            limit, why = limits["probe_change"], f"limit {limits['probe_change']:.0%}"
            if misfit:
                why += f"; the machine baseline does not fit this run: {misfit}"
                unchecked.append(f"machine baseline ({misfit})")
        if change > limit:
            cal = metrics.get("calibration", {})
            before, after = (
                cal.get(k, {}).get("gflops", float("nan")) for k in ("before", "after")
            )
            drifted.append(
                f"calibration probes differ by {change:.0%} ({before:.1f} -> {after:.1f} "
                f"GFLOP/s; {why})"
            )
    seen = metrics.get("telemetry", {}).get("interference", {})
    other = as_number(seen.get("other_cpu_share_mean"))
    if other is None:
        unchecked.append("other processes' CPU")
    elif other > limits["other_cpu_share"]:
        interfered.append(
            f"other processes used {other:.0%} of its cores (limit {limits['other_cpu_share']:.0%})"
        )
    steal = as_number(seen.get("steal_percent_mean"))
    if steal is None:
        unchecked.append("steal time")
    elif steal > limits["steal_percent"]:
        interfered.append(
            f"steal time {steal:.1f} % of its cores (limit {limits['steal_percent']} %)"
        )
    stall = as_number(seen.get("longest_stall_s"))
    if stall is None:
        unchecked.append("stalls")
    elif stall >= limits["stall_seconds"]:
        interfered.append(
            f"stalled {stall:.0f} s {stall_kind(seen, stall)}; limit {limits['stall_seconds']} s"
        )
    noisy = []
    windows = metrics.get("throughput_windows", {})
    cv = as_number(windows.get("cv"))
    if cv is None:
        unchecked.append("throughput windows")
    elif cv > limits["window_cv"]:
        noisy.append(
            f"its throughput varied by {cv:.0%} (coefficient of variation over "
            f"{windows['windows']} windows of {windows['window_steps']} steps; slowest "
            f"{windows['worst_ratio']:.2f} x the median; limit {limits['window_cv']:.0%})"
        )
    gone = [f"diverged: {why_diverged}"] if why_diverged else []
    found = (gone, interfered, drifted, noisy)
    flags = [f for f, hit in zip(FLAGS, found, strict=True) if hit]
    return {
        "clean": not flags,
        "flags": flags,
        "reasons": gone + interfered + drifted + noisy,
        "unchecked": unchecked,
    }
