"""The machine baseline a configuration names (``stability.baseline``), checked before any
job against this machine and the targets that run, and the notes on what it judges.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..recording import hardware
from ..recording.baseline import SETTING, load_baseline, machine_differences, settings_differences
from ..recording.calibrate import LAG_REACH, judged_lengths
from .targets import Target


def check_baseline(
    config: dict, targets: dict[str, Target], on_this_machine: bool = True
) -> dict | None:
    """The machine baseline ``stability.baseline`` names, read and checked before any
    job (and by ``check-config``); None when the setting is empty.

    Checked here: the file (:func:`embryo_bench.recording.baseline.load_baseline`: missing,
    not JSON, a newer format, another layout or probe method, too few probes for any
    lag); with ``hardware_check: local`` (the targets run on this machine) and
    ``on_this_machine`` (as :meth:`embryo_bench.planning.plan.Plan.from_config`'s), that it
    was taken on this machine (host, CPU, its flags and cores); and that it fits at least one
    of ``targets``, those that run (:func:`baseline_misfits`).
    The run's length cannot be known yet: the figures judge each run by the baseline's
    lag nearest its length only when that lag is within
    :data:`embryo_bench.recording.calibrate.LAG_REACH` of it, and by
    ``probe_change`` otherwise, saying so (:func:`embryo_bench.reporting.stability.assess`).

    Raises:
        ConfigError: one line naming ``stability.baseline``, the file, and what was
            expected and found.
    """
    path = config["stability"]["baseline"]
    if not path:
        return None
    base = load_baseline(path)
    if on_this_machine and config["hardware_check"] == "local":
        other = machine_differences(base["machine"], hardware.this_machine())
        if other:
            raise ConfigError(
                f"{SETTING} {path}: taken on another machine than this one ("
                + "; ".join(other)
                + "), whose probe noise is not this machine's; take one here with "
                f"`embryo-bench calibrate --out {path}`, or set {SETTING}: ''"
            )
    misfits = baseline_misfits(base, targets)
    if len(misfits) == len(targets):
        remote = all(t.runner == "docker" and t.docker_host for t in targets.values())
        raise ConfigError(
            f"{SETTING} {path}: fits no running target, so it would judge no run ("
            + "; ".join(f"{n}: {why}" for n, why in misfits.items())
            + "); "
            + (
                "a baseline judges no run on a remote daemon; set"
                if remote
                else "take one with a target's --backend, --threads and --cpus, or set"
            )
            + f" {SETTING}: ''"
        )
    return base


def baseline_misfits(baseline: dict, targets: dict[str, Target]) -> dict[str, str]:
    """Running target -> why ``baseline`` cannot judge its runs (they are judged by
    ``probe_change``): other settings (backend, threads, cpus, GPUs,
    :func:`embryo_bench.recording.baseline.settings_differences`) or another machine (a docker
    target on a remote daemon)."""
    out = {}
    for name, t in targets.items():
        why = settings_differences(baseline, t.backend, t.threads, t.cpus, t.gpus, "the target")
        if why is None and t.runner == "docker" and t.docker_host:
            why = f"runs on the daemon at {t.docker_host}, another machine"
        if why:
            out[name] = why
    return out


def baseline_notes(config: dict, targets: dict[str, Target], baseline: dict | None) -> list[str]:
    """One line for each running target ``baseline`` (:func:`check_baseline`'s) does not
    judge, and one on the run lengths it judges; [] without a baseline."""
    if baseline is None:
        return []
    path = config["stability"]["baseline"]
    lags = [row["lag_s"] for row in baseline["changes"]]
    lengths = " and ".join(f"{low:.3g}-{high:.3g} s" for low, high in judged_lengths(baseline))
    notes = [
        f"{SETTING} {path}: judges runs of {lengths} (its lags "
        f"{', '.join(f'{x:.3g}' for x in lags)} s: a run by the lag nearest its length, "
        f"within {LAG_REACH:g} x of it); other runs' drift by stability.probe_change"
    ]
    for name, why in baseline_misfits(baseline, targets).items():
        notes.append(
            f"{SETTING} {path}: not for target {name} ({why}); its drift is judged by "
            "stability.probe_change"
        )
    return notes
