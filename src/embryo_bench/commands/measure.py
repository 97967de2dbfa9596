"""``embryo-bench`` commands that measure the machine rather than train a run: its own probe
noise (a machine baseline) and the largest batch a run's model trains at.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..errors import ConfigError

log = logging.getLogger("embryo_bench")


def cmd_calibrate(p):
    """measure this machine's own probe noise: back-to-back calibration probes on given cores
    and threads, written as a machine baseline (stability.baseline)"""
    from ..recording.calibrate import BASELINE_PROBES, MIN_PAIRS

    p.add_argument(
        "--probes",
        type=int,
        default=BASELINE_PROBES,
        help=f"probes, back to back (>= {MIN_PAIRS + 1})",
    )
    p.add_argument("--seconds", type=float, default=2.0, help="length of each probe (s)")
    p.add_argument("--threads", type=int, default=1, help="threads, as a run's threads")
    p.add_argument("--cpus", type=int, default=1, help="cores to pin to, as a run's cpus")
    p.add_argument(
        "--backend", default="tensorflow", help="Keras backend running the probe (installed)"
    )
    p.add_argument(
        "--out", required=True, help="the baseline JSON to write (its folder must exist)"
    )

    def run(a):
        from ..training.noise import take_baseline

        # Every argument is checked before the probing (minutes) starts.
        base = take_baseline(a.probes, a.seconds, a.threads, a.cpus, a.backend, a.out)
        rows = "; ".join(
            f"{c['lag_s']:.3g} s apart: median {c['median']:.1%}, p99 {c['p99']:.1%}"
            for c in base["changes"]
        )
        print(
            f"{base['probes']} probes of {base['probe_seconds']:.1f} s: "
            f"{base['gflops_mean']:.1f} GFLOP/s mean ({base['gflops_min']:.1f}-"
            f"{base['gflops_max']:.1f}), CV {base['cv']:.1%}; change {rows}; written {a.out}"
        )

    return run


def cmd_batch_limit(p):
    """find the largest batch a run's model trains at on this machine, and draw throughput
    against batch size (SYNTHETIC inputs: speed and memory only)"""
    p.add_argument(
        "--spec",
        required=True,
        help="a run.json: its backend, gpus, cpus, threads, precision and model (the paper's "
        "at its preprocessing's image size, or its workload's)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the folder to write batch_limit.csv, batch_limit.json and batch_limit.png in",
    )
    p.add_argument(
        "--start", type=int, help="the first batch size tried (images; default: the run's)"
    )
    p.add_argument(
        "--most",
        type=int,
        help="the largest batch size tried (images; default 2**20, lowered to what this "
        "machine's memory, or --memory-limit, holds of a trial's synthetic data)",
    )
    p.add_argument(
        "--resolution",
        type=float,
        default=0.05,
        help="stop bisecting when the gap is this fraction of the fitting batch or 8 images, "
        "whichever is larger (default 0.05)",
    )
    p.add_argument(
        "--budget", type=float, help="seconds the whole search may take (default: no limit)"
    )
    p.add_argument(
        "--memory-limit",
        help="each trial's memory (a Docker size: 512m, 2g), as RLIMIT_DATA: writable address "
        "space, at least the resident memory (for CPU trials; default: none)",
    )
    p.add_argument(
        "--steps", type=int, default=10, help="training steps an epoch of a trial (default 10)"
    )
    p.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="epochs a trial (>= 2; the first, with compilation, is left out; default 3)",
    )

    def run(a):
        from ..recording.hardware import size_mib
        from ..reporting.batch_limit import draw, limit_words
        from ..training import batch_limit as bl
        from ..vocabulary.spec import RunSpec

        spec = RunSpec.read(a.spec)
        out = Path(a.out)
        if out.exists() and not out.is_dir():  # mkdir failed with a traceback
            raise ConfigError(f"--out {out}: a file; expected a folder")
        limit = None
        if a.memory_limit is not None:
            try:
                limit = size_mib(a.memory_limit)
            except ConfigError as exc:
                raise ConfigError(f"--memory-limit: {exc}") from None
        # Every setting is checked before the first trial, and before any file is written.
        settings = bl.check_settings(
            spec,
            a.spec,
            start=a.start,
            most=a.most,
            resolution=a.resolution,
            budget=a.budget,
            memory_limit_mib=limit,
            steps=a.steps,
            epochs=a.epochs,
        )
        out.mkdir(parents=True, exist_ok=True)
        # A former search's files go first: an interrupted search leaves none that look
        # complete. The JSON is written last, so a folder holding it holds the others.
        for name in (bl.JSON_NAME, bl.CSV_NAME, bl.PNG_NAME):
            (out / name).unlink(missing_ok=True)
        log.info(
            "batch-limit of %s (%s, %s, %d GPU(s)): batch %d to %d, %d steps x %d epochs a "
            "trial, each in a fresh process; SYNTHETIC inputs",
            spec.workload_name, spec.backend, spec.precision, spec.gpus, settings.start,
            settings.most, settings.steps, settings.epochs,
        )  # fmt: skip
        for note in bl.notes(spec)[1:]:
            log.warning("%s", note)
        result = bl.find_batch_limit(spec, settings, log)
        failed = [t for t in result["trials"] if t["outcome"] == bl.ERROR]
        if failed and len(failed) == len(result["trials"]):
            # No trial trained at all (a GPU the framework does not see, a model that cannot be
            # built): a setting to fix, not a limit measured; nothing that looks like one.
            raise ConfigError(f"{a.spec}: no trial could train: {failed[0]['error']}")
        bl.write_trials(result, out / bl.CSV_NAME)
        draw(bl.trials_frame(result), result, out / bl.PNG_NAME)
        bl.write_result(result, out / bl.JSON_NAME)
        print(
            f"{limit_words(result)}: {result['largest_batch_size']} "
            f"({result['stopped']['text']}); {len(result['trials'])} trials in "
            f"{result['seconds']:.0f} s; written {out / bl.JSON_NAME}"
        )

    return run
