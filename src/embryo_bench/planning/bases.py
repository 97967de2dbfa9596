"""The targets that others are measured against: the cost base (``cost.base_target``, what
time and cost are normalised to) and the comparison base (``compare.base``, what every other
target is compared with round by round), each with a note when the configured one does not
run here, and the check that the comparison base runs the most repeats of each workload.
"""

from __future__ import annotations

from ..errors import ConfigError
from .schedule import Schedule
from .targets import Target


def cost_base(cost: dict, targets: list[dict], running: list[str]) -> tuple[str, str]:
    """The target that time and cost are normalised to (``cost.base_target``), and a note
    when it cannot be used here.

    Args:
        cost: the config's ``cost`` section.
        targets: the config's targets, as written (before the hardware check).
        running: names of the main targets that run here.

    Returns:
        (base target name or "", note): the note is non-empty when the base target exists
        but was skipped on this host, in which case cost is not normalised.

    Raises:
        ConfigError: the base target is not among the targets, or has no ``hourly_usd``.
    """
    base = (cost or {}).get("base_target", "")
    if not base:
        return "", ""
    configured = {t["name"]: t for t in targets}
    if base not in configured:
        raise ConfigError(
            f"cost.base_target {base!r}: no such target (targets: {', '.join(configured)})"
        )
    if configured[base].get("hourly_usd") is None:
        raise ConfigError(f"cost.base_target {base!r} has no hourly_usd")
    if base not in running:
        return "", f"cost not normalised: base target {base} does not run here (skipped)"
    return base, ""


def compare_base(
    compare: dict, cost_base_name: str, targets: dict[str, Target], configured: list[str]
) -> tuple[str, str]:
    """The target every other is compared with round by round (``compare.base``), and a note
    when the configured one cannot be used here.

    Args:
        compare: the config's ``compare`` section.
        cost_base_name: the cost base that runs here ("" if none).
        targets: the targets that run, main targets first (config order), then sweep points.
        configured: every target name the config gives (before the hardware check), and the
            sweep points' names.

    Returns:
        (base, note): ``compare.base`` if it runs; else the cost base if it runs; else the
        first target; the note is non-empty when ``compare.base`` was skipped here. That
        the base has the most repeats of each workload is :func:`check_base_repeats`'.

    Raises:
        ConfigError: ``compare.base`` names no target.
    """
    wanted, note = compare.get("base", ""), ""
    if wanted and wanted not in configured:
        raise ConfigError(
            f"compare.base {wanted!r}: no such target (targets: {', '.join(configured)})"
        )
    if wanted and wanted not in targets:
        note = f"compare.base {wanted} does not run here (skipped); comparing with "
        wanted = ""
    base = wanted or cost_base_name or next(iter(targets))
    if note:
        note += base
    return base, note


def check_base_repeats(schedule: Schedule) -> None:
    """Every workload's comparison base (:attr:`Schedule.compare_base`, where it trains the
    workload) runs at least as many repeats of it as any other target: round k compares each
    target's repeat k with the base's.

    Raises:
        ConfigError: naming the base, its repeats (of the workload, where it is not the
            paper's) and the targets that run more.
    """
    for workload in schedule.workloads:
        targets = schedule.workload_targets(workload)
        base = targets.get(schedule.compare_base)
        if base is None:
            continue
        more = [n for n, t in targets.items() if t.repeats > base.repeats]
        if more:
            # The repeats of a workload with a recipe of its own are its own; the
            # train section's are the targets'.
            own = schedule.workloads[workload].own_recipe
            of = f" of workload {workload}" if own else ""
            raise ConfigError(
                f"compare.base {base.name}: {base.repeats} repeats{of}, but "
                f"{', '.join(more)} run more; each round needs the base target, so give "
                "it the most repeats"
            )
