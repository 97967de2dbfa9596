"""Benchmark: does a run's position within a round change its speed? Not a test.

On 2026-11-24 the A/A copy of config/offline-rounds.yaml, always in the middle of ABC CBA,
was faster in 4 of 5 rounds (+2.9 %). This measures the effect with N identical copies of one
target under each round order of ``compare.order`` (:func:`embryo_bench.planning.schedule.
round_order`): ``alternate`` (ABC CBA: position and copy are confounded, the middle is always
B), ``shuffle`` (a new order each round) and ``balanced`` (a Williams Latin square).

For each order it writes a configuration (:func:`position_config`): the base configfile with
its target replaced by N copies of one target (``<target>-a``, ``-b``, ... with identical
settings), no sweeps, no docker targets, no other workloads (the paper's only), no merged
folders, ``train.repeats`` = the rounds, ``compare.order`` = the order, its own outdir
``<out>/<order>/`` (the config is ``<out>/<order>.yaml``). Then it runs the workflow,
interleaved by rounds: for round k = 1..R, each order's ``snakemake --cores 2 --configfile
<out>/<order>.yaml <round k's metrics.json files>``, the orders rotated each round (round 1:
alternate shuffle balanced, round 2: shuffle balanced alternate, ...), so round k of every
order runs before round k+1 of any and a drift of the machine's speed over the hours lands on
every order alike. Each call asks only for round k's runs: the workflow's own chain of runs
(each waits for the one planned before it) runs round k in the order's planned order, and
finished rounds are never rerun (DAG caching): after an interruption the same command goes on
where it stopped, and ``--rounds`` may be raised later to add rounds. The figures are not
made (``snakemake --cores 2 --configfile <out>/<order>.yaml`` makes them afterwards,
retraining nothing).

Analysis (:func:`effects`), per order, over the complete rounds (every copy ran): each run's
deviation is its log images/s (``mean_images_per_s``, steady state) minus the mean log
images/s of its round. The position effect groups the deviations by the run's position in its
round (1 = first, by ``wall_clock.started_unix_s``); the copy effect groups them by copy name.
Each group: its mean with a 95 % t interval (:func:`scipy.stats.ttest_1samp`), shown as % (exp
- 1). An order "shows no position effect" when every position's interval covers 0. (The
deviations of one round sum to 0, so the groups are not independent of each other; each
group's rounds are.) With more than one order, the position effect of every order's rounds
pooled follows (:func:`analyse`); ``--skip-rounds K`` leaves rounds 1..K out of every table
(how much the machine's first rounds, a cold start, weigh).

Prints the machine (CPU model, whether the flags avx512f and amx are present, the load average
before and after), one line per workflow call as it ends, then per order the two tables and
which orders show no position effect. ``--json`` (default ``<out>/position.json``) keeps
every run, every call and the tables; it is written after every call, so a measurement cut
off keeps what it measured.

Usage:
    python benchmarks/bench_position.py [--configfile config/offline.yaml] [--target host-1cpu]
        [--copies 3] [--rounds 10] [--orders alternate shuffle balanced]
        [--out results/position] [--json PATH] [--cores 2] [--skip-rounds K]
    python benchmarks/bench_position.py --report [same options]   # the tables again, from the
        runs under --out, running nothing

Time, measured (the full default: 3 orders x 3 copies x 10 rounds, 90 runs in 30 calls) on
2026-11-26 on the shared 2-core development machine (an AMD EPYC with AVX-512 that day,
nothing else running): 27 min 56 s of workflow calls, 52-65 s a call (a training run about
12 s of timed training at ~227 images/s, the rest TensorFlow's start, the probes, the
evaluation and Snakemake's start). A slower CPU or a loaded machine takes longer: on a loaded
Intel Xeon a tiny run took about 50 s a training run. The result: docs/results.md, "Position
within a round, measured".
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import string
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

from embryo_bench.errors import EmbryoBenchError
from embryo_bench.io import read_json, write_json
from embryo_bench.planning.schedule import ROUND_ORDERS
from embryo_bench.recording.hardware import cpu_flags, cpu_model
from embryo_bench.vocabulary.config import load_config, read_config_file
from embryo_bench.vocabulary.layout import METRICS, run_dir

REPO = Path(__file__).resolve().parents[1]
#: Defaults of the command line (the measurement docs/results.md reports, "Position within
#: a round").
DEFAULT_CONFIG = REPO / "config" / "offline.yaml"
DEFAULT_TARGET = "host-1cpu"
DEFAULT_COPIES = 3
DEFAULT_ROUNDS = 10
DEFAULT_OUT = REPO / "results" / "position"
#: Confidence of the intervals.
CONFIDENCE = 0.95


def copy_names(target: str, copies: int) -> list[str]:
    """The copies' target names: ``<target>-a``, ``<target>-b``, ...

    Raises:
        EmbryoBenchError: copies not in 2..26.
    """
    if not 2 <= copies <= len(string.ascii_lowercase):
        raise EmbryoBenchError(f"--copies: expected 2 to 26 copies, got {copies}")
    return [f"{target}-{letter}" for letter in string.ascii_lowercase[:copies]]


def position_config(
    base: dict, target: str, copies: int, rounds: int, order: str, outdir: Path
) -> dict:
    """The configuration that measures ``order``: ``base`` (a configuration as read from its
    file) with ``copies`` identical copies of its target ``target`` as its only targets,
    no sweeps, no merged folders, the paper's workload only, ``train.repeats`` = ``rounds``,
    ``compare.order`` = ``order`` with the first copy as ``compare.base`` (and as
    ``cost.base_target`` where the base names one), and ``outdir``. Validated by
    :func:`embryo_bench.vocabulary.config.load_config`.

    Returns:
        a new dict (without the schema's defaults filled in), ready to be written as YAML.

    Raises:
        EmbryoBenchError: no target ``target`` in ``base``, a docker target (the measurement
            is of the host runner's rounds), rounds < 1, an unknown order, a bad copies
            count; ConfigError: the resulting configuration is refused by the schema.
    """
    if order not in ROUND_ORDERS:
        raise EmbryoBenchError(f"--orders: expected {', '.join(ROUND_ORDERS)}, got {order!r}")
    if rounds < 1:
        raise EmbryoBenchError(f"--rounds: expected at least 1 round, got {rounds}")
    names = copy_names(target, copies)
    entries = {t.get("name"): t for t in base.get("targets", [])}
    if target not in entries:
        raise EmbryoBenchError(
            f"--target: no target {target!r} in the configuration "
            f"(it has {', '.join(map(str, entries)) or 'none'})"
        )
    entry = entries[target]
    if entry.get("runner") != "host":
        raise EmbryoBenchError(
            f"--target: {target!r} is a {entry.get('runner')} target; expected a host target"
        )
    config = copy.deepcopy(base)
    for key in ("sweeps", "merge", "workloads"):
        config.pop(key, None)
    config["outdir"] = str(outdir)
    config.setdefault("train", {})["repeats"] = rounds
    single = {k: v for k, v in entry.items() if k not in ("name", "repeats", "description")}
    config["targets"] = [
        {"name": name, **copy.deepcopy(single), "description": f"a copy of {target}"}
        for name in names
    ]
    config["compare"] = {**config.get("compare", {}), "base": names[0], "order": order}
    if config.get("cost", {}).get("base_target"):
        config["cost"]["base_target"] = names[0]
    load_config(copy.deepcopy(config))
    return config


def schedule(orders: list[str], rounds: int) -> list[tuple[int, str]]:
    """The workflow calls as (round, order): round k of every order before round k+1 of any,
    the orders rotated by one each round (round 1 in the given order)."""
    n = len(orders)
    return [(k, orders[(k - 1 + i) % n]) for k in range(1, rounds + 1) for i in range(n)]


def round_files(outdir: Path, names: list[str], round_: int) -> list[str]:
    """The metrics.json of round ``round_``'s runs (one per copy) under ``outdir``."""
    return [str(outdir / run_dir(name, round_) / METRICS) for name in names]


def read_runs(outdir: Path, names: list[str]) -> list[dict]:
    """Every finished run of the copies ``names`` under ``outdir``: copy, repeat (its round),
    images_per_s (steady state), started_unix_s, ended_unix_s (s since 1970), sorted by
    start.

    Raises:
        DataError: a metrics.json is unreadable.
    """
    runs = []
    for name in names:
        for path in sorted(outdir.glob(f"{run_dir(name, '*')}/{METRICS}")):
            m = read_json(path)
            clock = m.get("wall_clock", {})
            runs.append(
                {
                    "copy": m["target"],
                    "repeat": int(m["repeat"]),
                    "images_per_s": float(m["mean_images_per_s"]),
                    "started_unix_s": clock.get("started_unix_s"),
                    "ended_unix_s": clock.get("ended_unix_s"),
                }
            )
    return sorted(runs, key=lambda r: (r["started_unix_s"] or 0.0, r["repeat"]))


def deviations(runs: list[dict], names: list[str], skip: int = 0) -> list[dict]:
    """The runs of the complete rounds (every copy in ``names`` ran, each with a start time)
    with their position in the round (1 = started first) and deviation (log images/s minus
    the round's mean log images/s; natural log). Incomplete rounds and rounds 1..``skip``
    (``--skip-rounds``: the machine's first rounds, e.g. a cold start) are left out."""
    rounds: dict[int, list[dict]] = {}
    for r in runs:
        if r["repeat"] > skip:
            rounds.setdefault(r["repeat"], []).append(r)
    out = []
    for k in sorted(rounds):
        members = rounds[k]
        timed = all(r["started_unix_s"] is not None for r in members)
        if sorted(r["copy"] for r in members) != sorted(names) or not timed:
            continue
        members = sorted(members, key=lambda r: r["started_unix_s"])
        logs = [math.log(r["images_per_s"]) for r in members]
        mean = sum(logs) / len(logs)
        for position, (r, log) in enumerate(zip(members, logs, strict=True), start=1):
            out.append({**r, "position": position, "deviation": log - mean})
    return out


def percent(log_value: float | None) -> float | None:
    """A log ratio as % (exp - 1): 0.0296 -> +3.0; None stays None."""
    return None if log_value is None else 100 * math.expm1(log_value)


def interval(values: list[float]) -> dict:
    """n, the mean and its 95 % t interval (:func:`scipy.stats.ttest_1samp`) of ``values``
    (log deviations), each also as % (exp - 1); low/high None for fewer than 2 values;
    covers_0: whether the interval holds 0 (None without an interval)."""
    n = len(values)
    mean = float(np.mean(values)) if n else float("nan")
    low = high = None
    if n >= 2:
        ci = stats.ttest_1samp(values, 0.0).confidence_interval(CONFIDENCE)
        low, high = float(ci.low), float(ci.high)
        if math.isnan(low):  # every value equal: no spread, the interval is the mean
            low = high = mean
    return {
        "n": n,
        "mean": mean,
        "low": low,
        "high": high,
        "mean_pct": percent(mean),
        "low_pct": percent(low),
        "high_pct": percent(high),
        "covers_0": None if low is None else low <= 0.0 <= high,
    }


def position_effect(devs: list[dict], positions: int) -> list[dict]:
    """Per position 1..``positions``: {"position": p, **:func:`interval`} of the deviations
    (:func:`deviations`) of the runs in that position."""
    return [
        {"position": p, **interval([d["deviation"] for d in devs if d["position"] == p])}
        for p in range(1, positions + 1)
    ]


def effects(runs: list[dict], names: list[str], skip: int = 0) -> dict:
    """The position and copy effects of one order's runs (:func:`deviations`, rounds
    1..``skip`` left out).

    Returns:
        {"rounds": complete rounds used, "position": [{"position": p, **interval}, ...],
        "copy": [{"copy": name, **interval}, ...], "no_position_effect": True when every
        position's interval covers 0, False when one does not, None without intervals}.
    """
    devs = deviations(runs, names, skip)
    position = position_effect(devs, len(names))
    by_copy = [
        {"copy": c, **interval([d["deviation"] for d in devs if d["copy"] == c])} for c in names
    ]
    covers = [p["covers_0"] for p in position]
    return {
        "rounds": len({d["repeat"] for d in devs}),
        "position": position,
        "copy": by_copy,
        "no_position_effect": None if None in covers else all(covers),
    }


def table(rows: list[dict], key: str) -> str:
    """A printed table of :func:`effects`' rows: key, n, mean %, 95 % interval %, covers 0."""
    lines = [f"  {key:<16} {'n':>3} {'mean %':>8}  {'95 % interval %':<20} covers 0"]
    for r in rows:
        if r["low"] is None:
            span, covers = "(needs 2 rounds)", "-"
        else:
            span = f"[{r['low_pct']:+.2f}, {r['high_pct']:+.2f}]"
            covers = "yes" if r["covers_0"] else "NO"
        mean = "-" if r["n"] == 0 else f"{r['mean_pct']:+.2f}"
        lines.append(f"  {str(r[key]):<16} {r['n']:>3} {mean:>8}  {span:<20} {covers}")
    return "\n".join(lines)


def machine() -> dict:
    """This machine: CPU model, whether avx512f and any amx flag are present, the flags
    (:func:`embryo_bench.recording.hardware.cpu_flags`), logical CPUs."""
    flags = cpu_flags()
    return {
        "cpu_model": cpu_model(),
        "avx512f": "avx512f" in flags,
        "amx": any(f.startswith("amx") for f in flags),
        "cpu_flags": flags,
        "cpus": os.cpu_count(),
    }


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def analyse(record: dict) -> None:
    """Fill in each order's runs and effects in ``record`` from its outdir, and the position
    effect of every order's complete rounds together (``pooled``: the orders' rounds are
    independent, so their deviations pool; the copy effect does not, as copies sit in
    different positions under each order)."""
    names = record["settings"]["copies"]
    skip = record["settings"].get("skip_rounds", 0)
    devs = []
    for entry in record["orders"].values():
        entry["runs"] = read_runs(Path(entry["outdir"]), names)
        entry.update(effects(entry["runs"], names, skip))
        devs += deviations(entry["runs"], names, skip)
    record["pooled"] = {
        "rounds": sum(e["rounds"] for e in record["orders"].values()),
        "position": position_effect(devs, len(names)),
    }
    record["orders_without_position_effect"] = [
        o for o, e in record["orders"].items() if e["no_position_effect"]
    ]


def report(record: dict) -> None:
    """Print each order's tables and the orders without a position effect."""
    for order, e in record["orders"].items():
        print(f"\n{order}: {e['rounds']} complete round(s), {len(e['runs'])} run(s)")
        print("position effect (run's log images/s - its round's mean, by position)")
        print(table(e["position"], "position"))
        print("copy effect (the same, by copy)")
        print(table(e["copy"], "copy"))
    pooled = record["pooled"]
    if len(record["orders"]) > 1:
        print(f"\nevery order pooled: {pooled['rounds']} complete round(s), position effect")
        print(table(pooled["position"], "position"))
    verdicts = {o: e["no_position_effect"] for o, e in record["orders"].items()}
    print(
        "\nno position effect (every position's interval covers 0): "
        + (", ".join(o for o, v in verdicts.items() if v) or "none")
    )
    undecided = [o for o, v in verdicts.items() if v is None]
    if undecided:
        print(f"undecided (fewer than 2 complete rounds): {', '.join(undecided)}")


def call(cmd: list[str], log: Path) -> tuple[int, float]:
    """Run ``cmd`` in the repository, its output to ``log``; (exit status, seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT).returncode
    return rc, time.perf_counter() - start


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", type=Path, default=DEFAULT_CONFIG)
    p.add_argument("--target", default=DEFAULT_TARGET)
    p.add_argument("--copies", type=int, default=DEFAULT_COPIES)
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    p.add_argument("--orders", nargs="+", default=list(ROUND_ORDERS))
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--json", type=Path, help="the record (default: <out>/position.json)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--skip-rounds", type=int, default=0, help="leave rounds 1..K out of the tables")
    p.add_argument(
        "--report", action="store_true", help="print the tables of the runs under --out only"
    )
    return p.parse_args(argv)


def measure(args: argparse.Namespace) -> int:
    """Write the configurations, run the rounds (unless ``args.report``), print the tables;
    the exit status (1: a workflow call failed).

    Raises:
        EmbryoBenchError: a bad option or configuration, an unreadable metrics.json.
    """
    out = args.out.resolve()
    record_path = args.json or out / "position.json"
    if args.skip_rounds < 0:
        raise EmbryoBenchError(f"--skip-rounds: expected 0 or more, got {args.skip_rounds}")
    if len(set(args.orders)) != len(args.orders):
        raise EmbryoBenchError(f"--orders: an order given twice in {args.orders}")
    base = read_config_file(args.configfile)
    names = copy_names(args.target, args.copies)
    configs = {
        o: position_config(base, args.target, args.copies, args.rounds, o, out / o)
        for o in args.orders
    }
    record = {
        "settings": {
            "configfile": str(args.configfile),
            "target": args.target,
            "copies": names,
            "rounds": args.rounds,
            "orders": args.orders,
            "cores": args.cores,
            "skip_rounds": args.skip_rounds,
            "out": str(out),
        },
        "machine": {**machine(), "load_average_before": load_average()},
        "calls": [],
        "orders": {o: {"config": str(out / f"{o}.yaml"), "outdir": str(out / o)} for o in configs},
    }
    m = record["machine"]
    print(
        f"machine: {m['cpu_model']}, {m['cpus']} CPUs, avx512f {'yes' if m['avx512f'] else 'no'}"
        f", amx {'yes' if m['amx'] else 'no'}; load average {m['load_average_before']} before"
    )
    print(
        f"{args.copies} copies of {args.target} ({', '.join(names)}), {args.rounds} rounds, "
        f"orders {' '.join(args.orders)}; out {out}"
    )
    if args.report:
        analyse(record)
        report(record)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for order, config in configs.items():
        (out / f"{order}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for k, order in schedule(args.orders, args.rounds):
        # The files first: --configfile takes every word after it.
        cmd = [sys.executable, "-m", "snakemake", *round_files(out / order, names, k),
               "--cores", str(args.cores), "--configfile", str(out / f"{order}.yaml")]  # fmt: skip
        log = out / "logs" / f"{order}-round-{k}.log"
        before = load_average()
        rc, seconds = call(cmd, log)
        record["calls"].append(
            {"order": order, "round": k, "rc": rc, "seconds": round(seconds, 1),
             "load_before": before, "load_after": load_average(), "log": str(log)}
        )  # fmt: skip
        analyse(record)
        record["machine"]["load_average_after"] = load_average()
        write_json(record_path, record)
        runs = [r for r in record["orders"][order]["runs"] if r["repeat"] == k]
        speeds = ", ".join(f"{r['copy']} {r['images_per_s']:.1f}" for r in runs)
        print(f"round {k} {order}: {seconds:.0f} s, rc {rc}; images/s {speeds}", flush=True)
        if rc:
            tail = log.read_text().strip().splitlines()[-1:] or [""]
            print(
                f"bench_position: error: snakemake failed on round {k} of {order} "
                f"(exit {rc}; {log}: {tail[0]}); the same command goes on from here",
                file=sys.stderr,
            )
            return 1
    report(record)
    print(f"load average {record['machine']['load_average_after']} after; record {record_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return measure(parse_args(argv))
    except EmbryoBenchError as exc:
        print(f"bench_position: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
