"""``embryo-bench calibrate``: take a machine baseline, this machine's own probe noise:
back-to-back calibration probes
(:func:`embryo_bench.recording.calibrate.matmul_probe`)
on a run's cores and threads, summarised by
:func:`embryo_bench.recording.calibrate.machine_baseline`
and written with the machine and the settings they were taken on, for
:mod:`embryo_bench.recording.baseline` to read and check. Every argument is checked before the
minutes
of probing.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
import time
from pathlib import Path

from ..errors import ConfigError
from ..io import write_json
from ..recording.calibrate import (
    BASELINE_PROBES,
    MIN_PAIRS,
    PROBE_METHOD,
    machine_baseline,
    matmul_probe,
)
from ..recording.hardware import this_machine, visible_cores
from ..vocabulary.layout import BASELINE_FORMAT
from ..vocabulary.spec import BACKENDS
from .backend import limit_threads, select_backend

log = logging.getLogger(__name__)


def check_calibration(
    probes: int, seconds: float, threads: int, cpus: int, backend: str, out: str | Path
) -> None:
    """Check ``embryo-bench calibrate``'s arguments before minutes of probing.

    Args:
        probes: probes to take back to back (``--probes``, a count).
        seconds: length of each probe (``--seconds``, s).
        threads: threads the probe runs with (``--threads``, a count).
        cpus: cores to pin the probe to (``--cpus``, a count of this process's cores).
        backend: Keras backend running the probe (``--backend``, one of
            :data:`embryo_bench.vocabulary.spec.BACKENDS`).
        out: the baseline file to write (``--out``, a path).

    Raises:
        ConfigError: one line naming the argument: fewer probes than any lag needs
            (:data:`embryo_bench.recording.calibrate.MIN_PAIRS` + 1), seconds <= 0, threads or cpus
            < 1, more threads than cpus, more cpus than this process may use here, a
            backend that is not a Keras backend or not installed, or an ``out`` that cannot
            be written (a folder, a missing folder, one without write permission).
    """
    if probes < MIN_PAIRS + 1:
        raise ConfigError(
            f"calibrate: --probes {probes}: a baseline gives the change between probes a lag "
            f"apart only from {MIN_PAIRS} pairs that far apart, so it needs at least "
            f"{MIN_PAIRS + 1} probes (default {BASELINE_PROBES})"
        )
    if not seconds > 0:
        raise ConfigError(f"calibrate: --seconds {seconds}: a probe's length must be > 0 s")
    if threads < 1 or cpus < 1:
        raise ConfigError(f"calibrate: --threads {threads} --cpus {cpus}: both must be >= 1")
    if threads > cpus:
        raise ConfigError(
            f"calibrate: --threads {threads} --cpus {cpus}: more threads than cpus would share "
            "cores (a run's threads are at most its cpus)"
        )
    usable = visible_cores()
    if cpus > usable:
        raise ConfigError(
            f"calibrate: --cpus {cpus}: this process may use {usable} core(s) here "
            "(its scheduler affinity); a baseline is taken on the cores a run is pinned to"
        )
    if backend not in BACKENDS:
        raise ConfigError(
            f"calibrate: --backend {backend!r}: expected one of {', '.join(BACKENDS)}"
        )
    if importlib.util.find_spec(backend) is None:
        raise ConfigError(
            f"calibrate: --backend {backend}: not installed here (no Python package {backend!r})"
        )
    target = Path(out)
    if target.is_dir():
        raise ConfigError(f"calibrate: --out {out}: a folder; give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise ConfigError(f"calibrate: --out {out}: folder {folder} does not exist")
    try:  # really write there (root may write where permissions say not; /proc may not)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".check")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(
            f"calibrate: --out {out}: cannot write in {folder} ({exc.strerror})"
        ) from None


def take_baseline(
    probes: int, seconds: float, threads: int, cpus: int, backend: str, out: str | Path
) -> dict:
    """Run ``probes`` back-to-back :func:`matmul_probe` of ``seconds`` each on ``cpus``
    pinned cores with ``threads`` threads on Keras ``backend`` and write the machine baseline
    (:func:`machine_baseline`, with its format, the settings, the machine
    (:func:`this_machine`), the probe method and every probe's GFLOP/s) to ``out`` as JSON
    (the ``embryo-bench calibrate`` command), atomically: an interrupted calibration leaves
    no file. Run it with nothing else running: it measures the machine's own noise.

    Returns:
        the baseline written.

    Raises:
        ConfigError: as :func:`check_calibration`, before any probe.
    """
    check_calibration(probes, seconds, threads, cpus, backend, out)
    select_backend(backend)
    cores = limit_threads(threads, cpus)
    log.info(
        "calibrate: %d probes of %g s on cores %s: about %.0f s",
        probes,
        seconds,
        cores,
        probes * seconds,
    )
    results = [matmul_probe(seconds) for _ in range(probes)]
    baseline = {"format": BASELINE_FORMAT, **machine_baseline(results)}
    baseline |= {
        "settings": {"threads": threads, "cpus": cpus, "cores": cores, "backend": backend},
        "method": PROBE_METHOD,
        "machine": this_machine(),
        "taken_unix_s": time.time(),
        "gflops": [r["gflops"] for r in results],
    }
    write_json(out, baseline)
    return baseline
