"""``embryo-bench calibrate``: a machine baseline, the machine's own probe noise (issue 23,
item 5). Back-to-back calibration probes (:func:`embryo_bench.calibrate.matmul_probe`) on a
run's cores and threads, summarised by :func:`embryo_bench.calibrate.machine_baseline`; the
figures use it (``stability.baseline``) to flag a run drifted only when its probes moved more
than this machine's quiet probes do over the same time.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path

from .backend import limit_threads
from .calibrate import PROBE_METHOD, machine_baseline, matmul_probe
from .errors import ConfigError
from .hardware import cpu_model
from .io import write_json
from .train import select_backend


def take_baseline(
    probes: int, seconds: float, threads: int, cpus: int, backend: str, out: str | Path
) -> dict:
    """Run ``probes`` back-to-back :func:`matmul_probe` of ``seconds`` each on ``cpus``
    pinned cores with ``threads`` threads on Keras ``backend`` and write the machine baseline
    (:func:`machine_baseline`, with the settings, the machine and every probe's GFLOP/s) to
    ``out`` as JSON (the ``embryo-bench calibrate`` command). Run it with nothing else
    running: it measures the machine's own noise.

    Returns:
        the baseline written.

    Raises:
        ConfigError: probes < 3, seconds <= 0, threads or cpus < 1, or more threads than
            cpus (threads would share a core).
    """
    if probes < 3 or seconds <= 0 or threads < 1 or cpus < 1:
        raise ConfigError(
            f"calibrate: need probes >= 3, seconds > 0, threads and cpus >= 1; got {probes}, "
            f"{seconds}, {threads}, {cpus}"
        )
    if threads > cpus:
        raise ConfigError(f"calibrate: {threads} threads on {cpus} cpus would share cores")
    select_backend(backend)
    cores = limit_threads(threads, cpus)
    results = [matmul_probe(seconds) for _ in range(probes)]
    baseline = machine_baseline(results)
    baseline |= {
        "settings": {"threads": threads, "cpus": cpus, "cores": cores, "backend": backend},
        "method": PROBE_METHOD,
        "machine": {"hostname": platform.node(), "cpu_model": cpu_model()},
        "taken_unix_s": time.time(),
        "gflops": [r["gflops"] for r in results],
    }
    write_json(out, baseline)
    return baseline
