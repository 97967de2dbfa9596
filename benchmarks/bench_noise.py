"""Benchmark: which estimate of a run's speed varies least between identical runs in paired
rounds? Not a test.

The verdicts need little noise: a true 5 % found in 10 rounds at 95 % power asks for paired
log ratios with an sd near 2.5 % (bench_verdicts.py: at CV 3 % a single row is found in 71-89 %
of experiments). The run-to-run noise of this VM (3-9 %) comes partly from other tenants (CPU
steal, other processes on the core) and from the first epoch's warm-up. This benchmark takes
the runs of an A/A (identical copies of one target in paired rounds: ``bench_sessions.py`` or
``bench_position.py`` make them, or any outdir whose targets are copies) and, for each
estimate of a run's speed below, the paired log ratios of every copy to the first one, round
by round: their sd (with its 95 % interval, chi-square), the CV it is, and the power a
paired t at 95 % has to find a true 5 % difference in 10 rounds at that sd (noncentral t).

Estimates of a run's speed (images/s; each from what the run already records):

* ``epochs``: ``mean_images_per_s``, the steady epochs' training images / training seconds
  (the workflow's throughput);
* ``windows``: ``throughput_windows.median_images_per_s``, the median throughput window
  (windows.csv; a window whose time held a stall counts for one window, not its seconds);
* ``cpu_seconds``: images per CPU-second of the trainer: ``epochs`` / the trainer's CPU
  share of its cores over the steady epochs (telemetry.csv's ``cpu_percent_of_target``, already
  per core, from the first epoch's end to the last's, over 100): time the trainer waited for a core
  (steal, another process) does not count;
* ``probe``: ``epochs`` / the mean of the matrix-product probes before and after the run
  (``calibration``, GFLOP/s): the machine's speed that minute divided out;
* ``epochs adjusted by share`` and ``... by interference``: ``epochs``' paired log ratio
  adjusted by a covariate, the regression way (CUPED): d - b z, z the round's paired
  difference of the covariate (the log of the trainer's steady CPU share, as ``cpu_seconds``
  reads it; the log of the share left by interference, 1 - other processes' share of the run's
  cores - steal, from metrics.json's telemetry), b the least-squares slope of d on z over all
  pairs. Unlike ``cpu_seconds`` it keeps the ratio's meaning (images/s at the share the copies
  got) where the covariate's paired difference is zero on average: copies of one target on one
  core, interleaved, share the machine's contention alike. Its sd has one degree of freedom
  less (the slope), and the slope is printed.

Usage:
    python benchmarks/bench_noise.py OUTDIR [OUTDIR ...] [--workload paper] [--json PATH]

Its last line is the epochs' sd as ``compare.until``'s floor wants it: ``compare.noise: 0.069
(...)`` (config/schema.yaml).

Each OUTDIR's targets are taken as copies of one target in the order their names sort (the
first the reference); their rounds are the repeat numbers. The result: docs/results.md,
"Variance reduction in real paired rounds".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from embryo_bench.io import write_json
from embryo_bench.vocabulary import layout

#: The estimates, in the order printed.
ESTIMATES = ("epochs", "windows", "cpu_seconds", "probe")
#: The covariates ``epochs`` is adjusted by (:func:`adjusted_logs`): name -> the column of
#: :func:`read_runs` that holds its log.
COVARIATES = {"share": "log_cpu_share", "interference": "log_free_share"}
#: The rounds and the true difference the power column is at.
POWER_ROUNDS, POWER_AT = 10, 0.05


def _steady_cpu_share(run: Path) -> float:
    """The trainer's mean CPU share of its cores (0-1) over the steady epochs (the first
    epoch's end to the last's); NaN without the samples."""
    history = pd.read_csv(run / layout.HISTORY)
    telemetry = pd.read_csv(run / layout.TELEMETRY)
    if len(history) < 2 or "cpu_percent_of_target" not in telemetry:
        return math.nan
    start, end = history["ended_unix_s"].iloc[0], history["ended_unix_s"].iloc[-1]
    inside = telemetry[(telemetry["unix_s"] > start) & (telemetry["unix_s"] <= end)]
    if inside.empty:
        return math.nan
    # Already per core of the target (telemetry.py: cpu_percent / the target's cpus).
    return float(inside["cpu_percent_of_target"].mean()) / 100


def run_estimates(run: Path) -> dict:
    """One run's speed by every estimate (:data:`ESTIMATES`, images/s or images per
    CPU-second) and the logs of its covariates (:data:`COVARIATES`); NaN where the run does
    not record what it needs."""
    m = json.loads((run / layout.METRICS).read_text())
    epochs = float(m.get("mean_images_per_s") or math.nan)
    windows = (m.get("throughput_windows") or {}).get("median_images_per_s")
    share = _steady_cpu_share(run)
    probes = [(m.get("calibration") or {}).get(side, {}) or {} for side in ("before", "after")]
    gflops = [p.get("gflops") for p in probes if p.get("gflops")]
    seen = (m.get("telemetry") or {}).get("interference") or {}
    other, steal = seen.get("other_cpu_share_mean"), seen.get("steal_percent_mean")
    free = (
        1 - other - steal / 100
        if isinstance(other, int | float) and isinstance(steal, int | float)
        else math.nan
    )
    return {
        "epochs": epochs,
        "windows": float(windows) if windows else math.nan,
        "cpu_seconds": epochs / share if share and share > 0 else math.nan,
        "probe": epochs / float(np.mean(gflops)) if gflops else math.nan,
        "log_cpu_share": math.log(share) if share and share > 0 else math.nan,
        "log_free_share": math.log(free) if free > 0 else math.nan,
    }


def read_runs(outdir: Path, workload: str) -> pd.DataFrame:
    """Every run of ``workload`` under ``outdir``: folder, target, round, and each estimate."""
    train = outdir / layout.workload_dir(workload) / "train"
    rows = []
    for metrics in sorted(train.glob(f"*/repeat-*/{layout.METRICS}")):
        run = metrics.parent
        rows.append(
            {
                "folder": str(outdir),
                "target": run.parent.name,
                "round": int(run.name.removeprefix("repeat-")),
                **run_estimates(run),
            }
        )
    return pd.DataFrame(rows)


def paired_logs(runs: pd.DataFrame, estimate: str, covariate: str = "") -> np.ndarray:
    """The log ratios of every copy to the first (by name), in each folder's rounds where
    both have a value of ``estimate``: shape (pairs,) float64; with ``covariate`` (a column
    holding a log), shape (pairs, 2): the log ratio and the covariate's paired difference,
    in the rounds where both are known."""
    out = []
    for _, folder in runs.groupby("folder"):
        table = folder.pivot_table(index="round", columns="target", values=estimate)
        if table.shape[1] < 2:  # no value of this estimate for two copies
            continue
        first, *others = sorted(table.columns)
        if covariate:
            z = folder.pivot_table(index="round", columns="target", values=covariate)
        for other in others:
            logs = np.log(table[other] / table[first])
            if covariate and {first, other} <= set(z.columns):
                both = pd.concat([logs, z[other] - z[first]], axis=1).dropna()
                out.extend(both.to_numpy().tolist())
            elif not covariate:
                out.extend(logs.dropna().tolist())
    return np.array(out) if out or not covariate else np.empty((0, 2))


def adjusted_logs(runs: pd.DataFrame, covariate: str) -> tuple[np.ndarray, float]:
    """``epochs``' paired log ratios adjusted by ``covariate`` (a key of
    :data:`COVARIATES`): (d - b z, b), d the log ratios and z the covariate's paired
    differences (:func:`paired_logs`), b the least-squares slope of d on z (the ratio at
    equal covariates: the same ratio where z is zero on average); NaN slope and no ratios
    with fewer than 3 pairs or a constant covariate."""
    pairs = paired_logs(runs, "epochs", COVARIATES[covariate])
    if len(pairs) < 3 or np.ptp(pairs[:, 1]) == 0:
        return np.array([]), math.nan
    d, z = pairs[:, 0], pairs[:, 1]
    slope = float(np.polyfit(z, d, 1)[0])
    return d - slope * z, slope


def power(sd: float, rounds: int = POWER_ROUNDS, truth: float = POWER_AT) -> float:
    """A paired t test's power at 95 % (two-sided) to find a true ``truth`` difference in
    ``rounds`` rounds whose log ratios have sd ``sd`` (noncentral t)."""
    if not sd > 0 or rounds < 2:
        return math.nan
    df = rounds - 1
    crit = stats.t.ppf(0.975, df)
    shift = math.log1p(truth) / (sd / math.sqrt(rounds))
    return float(stats.nct.sf(crit, df, shift) + stats.nct.cdf(-crit, df, shift))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per estimate (:data:`ESTIMATES`, then ``epochs`` adjusted by each of
    :data:`COVARIATES`): pairs, mean log ratio (an A/A's should be near 0), sd with its 95 %
    interval (chi-square), the power at a true 5 % in 10 rounds, and the covariate's slope
    (NaN for the plain estimates)."""
    rows = []
    estimates = [(e, paired_logs(runs, e), 1, math.nan) for e in ESTIMATES]
    for covariate in COVARIATES:
        logs, slope = adjusted_logs(runs, covariate)
        estimates.append((f"epochs adjusted by {covariate}", logs, 2, slope))
    for estimate, logs, ddof, slope in estimates:
        n = len(logs)
        sd = float(np.std(logs, ddof=ddof)) if n > ddof else math.nan
        df = n - ddof
        low = sd * math.sqrt(df / stats.chi2.ppf(0.975, df)) if df > 0 else math.nan
        high = sd * math.sqrt(df / stats.chi2.ppf(0.025, df)) if df > 0 else math.nan
        rows.append(
            {
                "estimate": estimate,
                "pairs": n,
                "mean_log_ratio": float(np.mean(logs)) if n else math.nan,
                "sd": sd,
                "sd_low": low,
                "sd_high": high,
                "power_5pct_10_rounds": power(sd),
                "slope": slope,
            }
        )
    return pd.DataFrame(rows)


def _pct(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{100 * x:.1f} %"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdirs", nargs="+", type=Path)
    p.add_argument("--workload", default=layout.PAPER_WORKLOAD)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    runs = pd.concat([read_runs(d, args.workload) for d in args.outdirs], ignore_index=True)
    if runs.empty:
        print(f"bench_noise: no runs of {args.workload} under {args.outdirs}", file=sys.stderr)
        return 1
    table = summary(runs)
    print(f"bench_noise: {len(runs)} runs of {args.workload} in {len(args.outdirs)} folder(s)\n")
    print(
        "| estimate | pairs | mean ratio - 1 | sd of the log ratio [95 %] "
        "| power at 5 %, 10 rounds | covariate's slope |"
    )
    print("|---|---|---|---|---|---|")
    for r in table.itertuples():
        print(
            f"| {r.estimate} | {r.pairs} | {_pct(math.expm1(r.mean_log_ratio))} | "
            f"{_pct(r.sd)} [{_pct(r.sd_low)}, {_pct(r.sd_high)}] | "
            f"{_pct(r.power_5pct_10_rounds)} | "
            f"{'-' if math.isnan(r.slope) else f'{r.slope:.2f}'} |"
        )
    epochs = table.set_index("estimate").loc["epochs"]
    if math.isfinite(epochs["sd"]):
        # The estimate the comparisons use: what compare.until's floor wants.
        print(
            f"\ncompare.noise: {epochs['sd']:.3f} (the epochs' sd; 95 % interval "
            f"{epochs['sd_low']:.3f}-{epochs['sd_high']:.3f} from {int(epochs['pairs'])} pairs)"
        )
    if args.json:
        write_json(
            args.json, {"runs": runs.to_dict("records"), "summary": table.to_dict("records")}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
