"""A noisy neighbour for the real A/As: a process that keeps one CPU busy in random bursts.
Not a test.

A stand-in for another tenant on a shared VM or a burst of CPU steal: pinned to the given CPUs,
it spins for a random 0.2-1.5 s, then sleeps a random 1-6 s, until it is stopped (SIGTERM or
SIGINT) or ``--seconds`` have passed. Seeded, so two A/As beside it see the same pattern of
bursts (not the same times: the bursts follow the neighbour's own clock). ``bench_sessions.py
--neighbour CPUS`` starts it beside the sessions; the result: docs/results.md, "Variance
reduction in real paired rounds".

Usage:
    python benchmarks/noisy_neighbour.py --cpus 0 [--seed 0] [--seconds 0]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time

#: A burst's length and the pause after it (s): ranges drawn uniformly.
BUSY_S, IDLE_S = (0.2, 1.5), (1.0, 6.0)


def parse_cpus(text: str) -> set[int]:
    """``"0"`` or ``"0,1"`` -> a set of CPU numbers.

    Raises:
        ValueError: when ``text`` is not a comma-separated list of non-negative integers.
    """
    try:
        cpus = {int(part) for part in text.split(",")}
    except ValueError:
        raise ValueError(f"--cpus: expected CPU numbers like 0 or 0,1, got {text!r}") from None
    if not cpus or min(cpus) < 0:
        raise ValueError(f"--cpus: expected CPU numbers like 0 or 0,1, got {text!r}")
    return cpus


def spin(seconds: float) -> int:
    """Keep one CPU busy for ``seconds`` (wall clock); the loop count, so it is not optimised
    away."""
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", required=True, help="the CPUs to share, e.g. 0 or 0,1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=0, help="stop after this (0: when killed)")
    args = p.parse_args(argv)
    try:
        os.sched_setaffinity(0, parse_cpus(args.cpus))
    except (ValueError, OSError) as exc:
        print(f"noisy_neighbour: error: {exc}", file=sys.stderr)
        return 2
    # Stop at the next check on SIGTERM, as on Ctrl-C.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    rng = random.Random(args.seed)
    stop = time.monotonic() + args.seconds if args.seconds > 0 else float("inf")
    try:
        while time.monotonic() < stop:
            spin(rng.uniform(*BUSY_S))
            time.sleep(rng.uniform(*IDLE_S))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
