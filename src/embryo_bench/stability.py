"""Is a run's timing clean? The verdict from the evidence each run records (issue 10).

A run is unstable, with the reason, when any of the config's ``stability`` thresholds is
crossed: its two calibration probes (:mod:`embryo_bench.calibrate`) differ by more than
``probe_change``; other processes used more than ``other_cpu_share`` of its cores; steal
time on its cores exceeded ``steal_percent``; or it sat idle (a stall) for
``stall_seconds`` or longer (:func:`embryo_bench.telemetry.interference`). Evidence that
was not measured (a remote Docker daemon's machine, a run without probes) is listed as
unchecked and does not make a run unstable.
"""

from __future__ import annotations


def thresholds(given: dict | None = None, schema: dict | None = None) -> dict:
    """The ``stability`` thresholds: ``given`` (a config's section) with the schema's
    defaults filled in.

    Raises:
        ConfigError: a threshold is not a number in the schema's range.
    """
    from .plan import apply_defaults, load_schema

    section = (schema or load_schema())["properties"]["stability"]
    return apply_defaults(given or {}, section)


def assess(metrics: dict, limits: dict) -> dict:
    """The verdict on one run.

    Args:
        metrics: the run's ``metrics.json`` (``calibration``, ``flops.probe_change`` and
            ``telemetry.interference``).
        limits: :func:`thresholds`.

    Returns:
        dict: stable (bool), reasons (why not, one sentence each, with the measured value
        and the threshold), unchecked (evidence that was not measured).
    """
    from .summary import as_number

    reasons, unchecked = [], []
    change = as_number(metrics.get("flops", {}).get("probe_change"))
    if change is None:
        unchecked.append("calibration probes")
    elif change > limits["probe_change"]:
        cal = metrics.get("calibration", {})
        before, after = (cal.get(k, {}).get("gflops", float("nan")) for k in ("before", "after"))
        reasons.append(
            f"calibration probes differ by {change:.0%} ({before:.1f} -> {after:.1f} GFLOP/s; "
            f"limit {limits['probe_change']:.0%})"
        )
    seen = metrics.get("telemetry", {}).get("interference", {})
    other = as_number(seen.get("other_cpu_share_mean"))
    if other is None:
        unchecked.append("other processes' CPU")
    elif other > limits["other_cpu_share"]:
        reasons.append(
            f"other processes used {other:.0%} of its cores (limit {limits['other_cpu_share']:.0%})"
        )
    steal = as_number(seen.get("steal_percent_mean"))
    if steal is None:
        unchecked.append("steal time")
    elif steal > limits["steal_percent"]:
        reasons.append(f"steal time {steal:.1f} % of its cores (limit {limits['steal_percent']} %)")
    stall = as_number(seen.get("longest_stall_s"))
    if stall is None:
        unchecked.append("stalls")
    elif stall >= limits["stall_seconds"]:
        reasons.append(
            f"stalled {stall:.0f} s idle (CPU and GPUs under 5 %; limit "
            f"{limits['stall_seconds']} s)"
        )
    return {"stable": not reasons, "reasons": reasons, "unchecked": unchecked}
