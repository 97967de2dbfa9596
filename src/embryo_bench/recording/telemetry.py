"""Telemetry of a training run, sampled every second while it trains.

Docker targets are sampled from outside the container: CPU % and memory from the Docker
stats API with Docker's documented formulas (cgroup v1 and v2). Host targets are sampled in
the training process itself (:class:`ProcessSampler`: CPU time of the process from
``os.times``, resident memory from ``/proc/self/status``). GPU utilisation, memory, power and
energy come from NVML (``nvidia-ml-py``, imported as ``pynvml``) for the GPUs assigned to the
run; CPU energy comes from RAPL (``/sys/class/powercap/intel-rapl:*``, :class:`RaplMeter`)
where the host exposes it. Without an NVIDIA driver or RAPL those values are "not
measured"; nothing is estimated.

Beside the run, the whole machine is sampled (:class:`SystemCpu`, psutil's reading of
``/proc/stat``): CPU used by every process, CPU used on the run's cores by processes other
than the run, and steal time (a hypervisor giving the run's cores to another guest). These
are the evidence that a timing is clean (:mod:`embryo_bench.reporting.stability`).

``telemetry.csv`` columns: time_s (since the first sample), unix_s (the sample's wall-clock
time, s since 1970, the clock of ``history.csv``'s ``ended_unix_s``), cpu_percent (Docker's
formula: 100 = one core busy), cpu_percent_of_target (cpu_percent / the target's cpus),
memory_mib,
machine_cpu_percent (all processes, all cores; 100 = one core), other_cpu_percent (busy time
on the run's cores not used by the run; 100 = one core), steal_percent (steal time on the
run's cores, % of their time), gpu_index, gpu_util_percent, gpu_memory_mib, gpu_power_w,
gpu_energy_j (NVML total-energy counter since the first sample). One row per sample and
assigned GPU (one row per sample with empty GPU fields on CPU targets).
"""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pandas as pd

from .evidence import GAP_INTERVALS, IDLE_PERCENT

COLUMNS = [
    "time_s",
    "unix_s",
    "cpu_percent",
    "cpu_percent_of_target",
    "memory_mib",
    "machine_cpu_percent",
    "other_cpu_percent",
    "steal_percent",
    "gpu_index",
    "gpu_util_percent",
    "gpu_memory_mib",
    "gpu_power_w",
    "gpu_energy_j",
]
MIB = 1024 * 1024


class SystemCpu:
    """Whole-machine CPU time between readings, from psutil (``/proc/stat`` on Linux).

    Args:
        cores: the cores the run is pinned to (indices into the machine's cores).

    Each :meth:`read` returns, for the time since the previous one: machine_cpu_percent
    (busy time of all cores: user, nice, system, irq, softirq; 100 = one core),
    other_cpu_percent (busy time on the run's cores minus the run's own CPU %, floored at
    0; 100 = one core) and steal_percent (steal time of the run's cores as % of their time).
    """

    BUSY = ("user", "nice", "system", "irq", "softirq")

    def __init__(self, cores: list[int]):
        import psutil

        self.psutil = psutil
        self.cores = list(cores)
        self.last = psutil.cpu_times(percpu=True)

    def read(self, run_cpu_percent: float | None) -> dict:
        """Deltas since the last reading (see the class); ``run_cpu_percent`` is the run's own
        CPU % over the same second (None: other_cpu_percent is not measured)."""
        now = self.psutil.cpu_times(percpu=True)
        last, self.last = self.last, now

        def delta(core: int, fields) -> float:
            return sum(getattr(now[core], f) - getattr(last[core], f) for f in fields)

        fields = [f for f in now[0]._fields if f not in ("guest", "guest_nice")]  # in user
        totals = [max(delta(c, fields), 1e-9) for c in range(len(now))]
        wall = sum(totals) / len(totals)  # seconds per core
        busy = [delta(c, self.BUSY) for c in range(len(now))]
        mine = [c for c in self.cores if c < len(now)]
        steal = sum(delta(c, ("steal",)) for c in mine if "steal" in fields)
        on_run_cores = 100.0 * sum(busy[c] for c in mine) / wall
        return {
            "machine_cpu_percent": 100.0 * sum(busy) / wall,
            "other_cpu_percent": (
                max(on_run_cores - run_cpu_percent, 0.0) if run_cpu_percent is not None else None
            ),
            "steal_percent": 100.0 * steal / sum(totals[c] for c in mine) if mine else None,
        }


def cpu_percent(stats: dict) -> float | None:
    """Docker's CPU % of one stats sample (``docker stats``: 100 = one core fully busy).

    ``(cpu_delta / system_delta) * online_cpus * 100`` with the deltas between
    ``cpu_stats`` and ``precpu_stats``; None when the sample has no previous reading.
    """
    cpu, pre = stats.get("cpu_stats", {}), stats.get("precpu_stats", {})
    try:
        cpu_delta = cpu["cpu_usage"]["total_usage"] - pre["cpu_usage"]["total_usage"]
        system_delta = cpu["system_cpu_usage"] - pre["system_cpu_usage"]
    except (KeyError, TypeError):
        return None
    online = cpu.get("online_cpus") or len(cpu["cpu_usage"].get("percpu_usage") or []) or 1
    if system_delta <= 0 or cpu_delta < 0:
        return None
    return cpu_delta / system_delta * online * 100.0


def memory_mib(stats: dict) -> float | None:
    """Docker's memory use of one stats sample in MiB: usage minus the page cache that can
    be reclaimed (cgroup v1: ``total_inactive_file``; cgroup v2: ``inactive_file``)."""
    mem = stats.get("memory_stats", {})
    if "usage" not in mem:
        return None
    extra = mem.get("stats", {})
    cache = extra.get("total_inactive_file", extra.get("inactive_file", 0))
    return max(mem["usage"] - cache, 0) / MIB


class NvmlGpus:
    """NVML readings of some GPUs; empty (no readings) when NVML or a driver is absent."""

    def __init__(self, indices: list[int]):
        self.handles: dict[int, object] = {}
        self.energy0: dict[int, float] = {}
        self.available = False
        if not indices:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # no pynvml, no driver
            return
        self.nvml = pynvml
        self.available = True
        for i in indices:
            self.handles[i] = pynvml.nvmlDeviceGetHandleByIndex(i)

    def read(self) -> list[dict]:
        """One dict per GPU: gpu_index, gpu_util_percent, gpu_memory_mib, gpu_power_w,
        gpu_energy_j (None where the GPU does not support a reading)."""
        rows = []
        for i, h in self.handles.items():
            row = {"gpu_index": i}
            nv = self.nvml
            for key, fn in (
                ("gpu_util_percent", lambda h=h, nv=nv: nv.nvmlDeviceGetUtilizationRates(h).gpu),
                ("gpu_memory_mib", lambda h=h, nv=nv: nv.nvmlDeviceGetMemoryInfo(h).used / MIB),
                ("gpu_power_w", lambda h=h, nv=nv: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
            ):
                try:
                    row[key] = float(fn())
                except Exception:
                    row[key] = None
            try:
                mj = float(nv.nvmlDeviceGetTotalEnergyConsumption(h))
                self.energy0.setdefault(i, mj)
                row["gpu_energy_j"] = (mj - self.energy0[i]) / 1000.0
            except Exception:
                row["gpu_energy_j"] = None
            rows.append(row)
        return rows

    def energy_j(self) -> float | None:
        """The GPUs' own energy counters (NVML ``nvmlDeviceGetTotalEnergyConsumption``, Volta
        and newer) summed over the GPUs, J since this object first read them; None without
        GPUs, NVML or a counter on every GPU. Read it on both sides of an interval: the
        difference is the energy the GPUs used in it, at the counter's own resolution (not
        the 1 s telemetry samples')."""
        total = 0.0
        if not self.handles:
            return None
        for i, h in self.handles.items():
            try:
                mj = float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h))
            except Exception:  # a GPU without the counter
                return None
            total += (mj - self.energy0.setdefault(i, mj)) / 1000.0
        return total

    def close(self) -> None:
        """Shut NVML down (no-op without it)."""
        if self.available:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()


RAPL_ROOT = "/sys/class/powercap"


class RaplMeter:
    """CPU package energy from Intel RAPL (also exposed for AMD Zen by Linux's powercap
    driver): the sum over top-level zones ``intel-rapl:<N>`` of ``energy_uj`` between
    :meth:`start` and :meth:`stop`, counter wrap-around handled with
    ``max_energy_range_uj``. It measures the whole package (every process on the socket),
    not only the training process; ``scope`` says so wherever it is reported."""

    scope = "CPU package(s), whole socket (RAPL)"

    def __init__(self, root: str = RAPL_ROOT):
        import glob
        import os

        self.zones = sorted(
            z
            for z in glob.glob(os.path.join(root, "intel-rapl:*"))
            if z.rsplit(":", 1)[-1].isdigit()  # packages, not their sub-zones (:0:0)
        )
        self.start_uj: dict[str, int] = {}
        self.why_not = None
        if not self.zones:
            self.why_not = f"not measured (no RAPL: {root}/intel-rapl:* absent)"

    def _read(self, zone: str, name: str) -> int:
        with open(f"{zone}/{name}") as fh:
            return int(fh.read().strip())

    def start(self) -> None:
        """Read every zone's counter (unreadable counters make the result "not measured")."""
        for z in self.zones:
            try:
                self.start_uj[z] = self._read(z, "energy_uj")
            except (OSError, ValueError) as exc:
                self.why_not = f"not measured (RAPL counter {z}/energy_uj unreadable: {exc})"
                return

    def stop(self) -> float | str:
        """Energy since :meth:`start` in J, or a "not measured (...)" string saying why."""
        if self.why_not:
            return self.why_not
        if not self.start_uj:
            return "not measured (RAPL: stop() without start())"
        total = 0
        try:
            for z, e0 in self.start_uj.items():
                e1 = self._read(z, "energy_uj")
                if e1 < e0:  # wrapped around
                    e1 += self._read(z, "max_energy_range_uj")
                total += e1 - e0
        except (OSError, ValueError) as exc:
            return f"not measured (RAPL counter unreadable: {exc})"
        return total / 1e6


def _rss_mib() -> float | None:
    """Resident memory of this process, MiB (VmRSS), None where /proc is absent."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class ProcessSampler(threading.Thread):
    """Samples the training process itself every ``interval`` s until :meth:`stop`: CPU %
    (user + system CPU seconds of every thread over wall seconds, 100 = one core), resident
    memory (MiB), the machine around it on ``cores`` (:class:`SystemCpu`) and NVML readings
    of the assigned GPUs; rows in :data:`COLUMNS`."""

    #: A thread of the trainer: a frozen trainer freezes it, and the frozen time is a gap
    #: between its samples (:func:`interference` counts it as stalled).
    in_process = True

    def __init__(
        self, cpus: float, gpu_indices: list[int], cores: list[int], interval: float = 1.0
    ):
        super().__init__(daemon=True)
        self.cpus, self.interval = cpus, interval
        self.cores = list(cores)
        self.system = SystemCpu(cores)
        self.gpu_indices = list(gpu_indices)
        self.gpus = NvmlGpus(gpu_indices)
        self.rows: list[dict] = []
        self._halt = threading.Event()

    def run(self) -> None:
        import os

        t0 = last_t = time.monotonic()
        times = os.times()
        last_cpu = times.user + times.system
        try:
            while not self._halt.wait(self.interval):
                now = time.monotonic()
                times = os.times()
                cpu_s = times.user + times.system
                cpu = (cpu_s - last_cpu) / (now - last_t) * 100.0
                last_cpu, last_t = cpu_s, now
                base = {
                    "time_s": now - t0,
                    "unix_s": time.time(),
                    "cpu_percent": cpu,
                    "cpu_percent_of_target": cpu / self.cpus,
                    "memory_mib": _rss_mib(),
                    **self.system.read(cpu),
                }
                self.rows.extend({**base, **g} for g in (self.gpus.read() or [{}]))
        finally:
            self.gpus.close()

    def stop(self) -> None:
        """Stop sampling and wait (at most 5 s) for the last sample."""
        self._halt.set()
        if self.is_alive():
            self.join(timeout=5)

    def frame(self) -> pd.DataFrame:
        """The samples as a DataFrame with :data:`COLUMNS`."""
        return pd.DataFrame(self.rows, columns=COLUMNS)


class ContainerSampler(threading.Thread):
    """Samples a running container every ``interval`` s (Docker's stats stream delivers one
    reading a second) until :meth:`stop`; rows accumulate in :attr:`rows`. With ``cores``
    (a container on this machine, whose trainer pins itself to those cores), the machine
    around it is sampled too (:class:`SystemCpu`); None for a remote daemon, whose machine
    this process cannot see (those columns stay empty: not measured)."""

    #: Outside the trainer: a frozen container reads as idle samples, and a gap between
    #: samples is the daemon's stats stream running late, not the run.
    in_process = False

    def __init__(
        self,
        container,
        cpus: float,
        gpu_indices: list[int],
        cores: list[int] | None,
        interval: float = 1.0,
    ):
        super().__init__(daemon=True)
        self.container, self.cpus, self.interval = container, cpus, interval
        self.cores = list(cores) if cores is not None else None
        self.system = SystemCpu(cores) if cores is not None else None
        self.gpu_indices = list(gpu_indices)
        self.gpus = NvmlGpus(gpu_indices)
        self.rows: list[dict] = []
        self._halt = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        t0 = time.monotonic()
        last = -1e9
        try:
            for stats in self.container.stats(stream=True, decode=True):
                if self._halt.is_set():
                    break
                now = time.monotonic()
                if now - last < self.interval * 0.5:
                    continue
                last = now
                cpu = cpu_percent(stats)
                base = {
                    "time_s": now - t0,
                    "unix_s": time.time(),
                    "cpu_percent": cpu,
                    "cpu_percent_of_target": cpu / self.cpus if cpu is not None else None,
                    "memory_mib": memory_mib(stats),
                    **(self.system.read(cpu) if self.system else {}),
                }
                if not stats.get("memory_stats") and not stats.get("cpu_stats", {}).get(
                    "system_cpu_usage"
                ):
                    break  # container gone
                gpu_rows = self.gpus.read() or [{}]
                self.rows.extend({**base, **g} for g in gpu_rows)
        except Exception as exc:  # the container went away mid-stream
            self.error = exc
        finally:
            self.gpus.close()

    def stop(self) -> None:
        """Stop sampling (the stats stream ends with the container)."""
        self._halt.set()

    def frame(self) -> pd.DataFrame:
        """The samples as a DataFrame with :data:`COLUMNS`."""
        return pd.DataFrame(self.rows, columns=COLUMNS)


class Measurement:
    """Telemetry and CPU energy of a training run, as one context: ``with Measurement(s) as
    m:`` starts RAPL (:class:`RaplMeter`) and the sampler (:class:`ProcessSampler` for host
    runs, :class:`ContainerSampler` for docker runs) and stops both on exit, success or not.

    Attributes:
        gpus: GPUs assigned to the run, which the sampler reads through NVML.
        cores: how many cores the run is pinned to (None: the machine is not sampled).
        cpu_energy_j: RAPL package energy in J after exit, or why it was not measured.
    """

    def __init__(self, sampler: ProcessSampler | ContainerSampler):
        self.sampler = sampler
        self.gpus = len(sampler.gpu_indices)
        self.cores = len(sampler.cores) if sampler.cores is not None else None
        self.rapl = RaplMeter()
        self.cpu_energy_j: float | str = "not measured (RAPL not read)"

    def __enter__(self) -> Measurement:
        self.rapl.start()
        self.sampler.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.sampler.stop()
        self.cpu_energy_j = self.rapl.stop()
        return False

    def frame(self) -> pd.DataFrame:
        """The samples (:data:`COLUMNS`)."""
        return self.sampler.frame()


def interference(df: pd.DataFrame, cores: int | None, gaps_stall: bool = True) -> dict:
    """What else happened on the machine while the run trained, from its telemetry.

    Args:
        df: telemetry rows (:data:`COLUMNS`), one or more per sample.
        cores: cores the run was pinned to (None: the machine was not sampled).
        gaps_stall: a gap between samples is stalled time (the sampler ran in the trainer,
            :attr:`ProcessSampler.in_process`); False for samples taken from outside.

    Returns:
        dict: other_cpu_share_mean/peak (CPU time of other processes on the run's cores as
        a fraction of those cores), steal_percent_mean/peak (%), machine_cpu_percent_mean
        (100 = one core), stall_samples (samples with the run below
        :data:`~embryo_bench.recording.evidence.IDLE_PERCENT` CPU and its GPUs below it too),
        interval_s (the sampling interval: the median time between samples, s), gaps (times
        two samples were more than :data:`~embryo_bench.recording.evidence.GAP_INTERVALS` intervals
        apart), longest_gap_s (s, the longest time between two samples),
        gaps_stall (``gaps_stall``: whether gaps counted as stalled time),
        longest_stall_s (s, the longest stretch of stalled time: an idle sample counts the
        time since the sample before it, a gap its time beyond one interval, and
        neighbouring ones add up), longest_stall_frozen_s (s, the part of that stretch that
        was gaps' time beyond one interval: 0 where gaps do not count); "not measured
        (...)" where a column has no readings.
    """
    per_sample = df.drop_duplicates("time_s")
    out: dict = {"cores": cores}

    def column(name):
        return pd.to_numeric(per_sample[name], errors="coerce").dropna()

    why = "not measured (the machine running the container is not this one)"
    other, steal, machine = (
        column(c) for c in ("other_cpu_percent", "steal_percent", "machine_cpu_percent")
    )
    if cores and len(other):
        out["other_cpu_share_mean"] = float(other.mean()) / (100.0 * cores)
        out["other_cpu_share_peak"] = float(other.max()) / (100.0 * cores)
    else:
        out["other_cpu_share_mean"] = out["other_cpu_share_peak"] = why
    out["steal_percent_mean"] = float(steal.mean()) if len(steal) else why
    out["steal_percent_peak"] = float(steal.max()) if len(steal) else why
    out["machine_cpu_percent_mean"] = float(machine.mean()) if len(machine) else why
    cpu = pd.to_numeric(per_sample["cpu_percent"], errors="coerce")
    gpu = pd.to_numeric(df["gpu_util_percent"], errors="coerce").groupby(df["time_s"]).max()
    gpu = gpu.reindex(per_sample["time_s"]).to_numpy()
    idle = (cpu.to_numpy() < IDLE_PERCENT) & ~(gpu >= IDLE_PERCENT)
    times = pd.to_numeric(per_sample["time_s"], errors="coerce").to_numpy(float)
    # The first sample's time is counted from the sampler's start (time_s 0 there).
    spans = np.diff(times, prepend=0.0) if len(times) else times
    interval = float(np.median(spans[1:])) if len(spans) > 1 else 1.0
    gap = spans > GAP_INTERVALS * interval
    frozen = np.where(gap, spans - interval, 0.0) if gaps_stall else np.zeros_like(spans)
    stalled = np.where(idle, spans, frozen)
    longest = current = longest_frozen = current_frozen = 0.0
    for seconds, frozen_s in zip(stalled, frozen, strict=True):
        if seconds > 0:
            current, current_frozen = current + seconds, current_frozen + frozen_s
        else:
            current = current_frozen = 0.0
        if current > longest:
            longest, longest_frozen = current, current_frozen
    out["stall_samples"] = int(idle.sum())
    out["interval_s"] = interval
    out["gaps"] = int(gap.sum())
    out["longest_gap_s"] = float(spans.max()) if len(spans) else 0.0
    out["gaps_stall"] = bool(gaps_stall)
    out["longest_stall_s"] = float(longest)
    out["longest_stall_frozen_s"] = float(longest_frozen)
    return out


def summarise(
    df: pd.DataFrame,
    images_trained: int,
    gpus_expected: int,
    cpu_energy_j: float | str = "not measured (RAPL not read)",
    cores: int | None = None,
    gaps_stall: bool = True,
) -> dict:
    """Mean and peak of each telemetry column, energy per run (J) and images per joule.

    Args:
        df: telemetry rows (:data:`COLUMNS`).
        images_trained: training images processed during the run (n_train x epochs).
        gpus_expected: GPUs assigned to the run (0 for CPU targets).
        cpu_energy_j: RAPL package energy of the run (J), or why it was not measured
            (:meth:`RaplMeter.stop`).
        cores: the cores the run was pinned to (count), for :func:`interference`.
        gaps_stall: as :func:`interference`.

    Returns:
        dict: samples, interference (:func:`interference`), cpu_percent_mean/peak,
        cpu_percent_of_target_mean/peak, memory_mib_mean/peak, per-GPU lists, energy_j and
        images_per_joule (GPU energy for GPU targets), cpu_energy_j, cpu_energy_scope and
        cpu_images_per_joule (RAPL), or the string "not measured (...)" where no reading
        exists.
    """
    per_sample = df.drop_duplicates("time_s")
    out: dict = {"samples": int(len(per_sample))}
    out["interference"] = interference(df, cores, gaps_stall)
    out["cpu_energy_j"] = cpu_energy_j
    out["cpu_energy_scope"] = RaplMeter.scope
    out["cpu_images_per_joule"] = (
        images_trained / cpu_energy_j
        if isinstance(cpu_energy_j, float) and cpu_energy_j > 0
        else cpu_energy_j
    )
    for col in ("cpu_percent", "cpu_percent_of_target", "memory_mib"):
        vals = pd.to_numeric(per_sample[col], errors="coerce").dropna()
        out[f"{col}_mean"] = float(vals.mean()) if len(vals) else "not measured"
        out[f"{col}_peak"] = float(vals.max()) if len(vals) else "not measured"
    gpu = df.dropna(subset=["gpu_index"])
    if gpus_expected == 0 or gpu.empty:
        why = (
            "not measured (no GPU assigned)"
            if gpus_expected == 0
            else ("not measured (no NVML readings: driver or pynvml absent)")
        )
        out.update({"gpus": [], "energy_j": why, "images_per_joule": why})
        return out
    gpus, energy = [], 0.0
    for idx, g in gpu.groupby("gpu_index"):
        entry = {"gpu_index": int(idx)}
        for col in ("gpu_util_percent", "gpu_memory_mib", "gpu_power_w"):
            vals = pd.to_numeric(g[col], errors="coerce").dropna()
            entry[f"{col}_mean"] = float(vals.mean()) if len(vals) else "not measured"
            entry[f"{col}_peak"] = float(vals.max()) if len(vals) else "not measured"
        e = pd.to_numeric(g["gpu_energy_j"], errors="coerce").dropna()
        entry["energy_j"] = float(e.iloc[-1]) if len(e) else "not measured"
        energy = (
            energy + entry["energy_j"]
            if isinstance(entry["energy_j"], float) and isinstance(energy, float)
            else "not measured"
        )
        gpus.append(entry)
    out["gpus"] = gpus
    out["energy_j"] = energy
    out["images_per_joule"] = (
        images_trained / energy if isinstance(energy, float) and energy > 0 else "not measured"
    )
    return out


__all__ = [
    "COLUMNS",
    "ContainerSampler",
    "Measurement",
    "NvmlGpus",
    "ProcessSampler",
    "RaplMeter",
    "SystemCpu",
    "cpu_percent",
    "interference",
    "memory_mib",
    "summarise",
]
