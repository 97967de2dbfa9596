"""Whether the runs ran as planned: in the planned order, one after another (the
comparison figure's title says so)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def in_planned_order(runs: pd.DataFrame, planned: list[tuple[str, int]]) -> tuple[bool | None, str]:
    """Did the runs start in the planned order, one after another?

    Args:
        runs: columns target, repeat, started_unix_s, ended_unix_s (s since 1970; missing
            for runs made before these were recorded).
        planned: (target, repeat) in the planned order
        (:meth:`embryo_bench.planning.plan.Plan.workload_runs`).

    Returns:
        (ok, a sentence saying what was found: the order as run where it differs, or which
        timed runs overlapped); ok is None when a run recorded no start time (made before
        they were recorded): the order cannot be checked.
    """
    timed = runs.dropna(subset=["started_unix_s", "ended_unix_s"])
    if len(timed) < len(runs):
        return None, (
            f"order not checked: {len(runs) - len(timed)} of {len(runs)} runs recorded no "
            "start time"
        )
    timed = timed.sort_values("started_unix_s")
    ran = list(zip(timed["target"], timed["repeat"].astype(int), strict=True))
    wanted = [p for p in planned if p in set(ran)]
    if ran != wanted:
        return False, "ran in another order than planned: " + ", ".join(f"{t}#{k}" for t, k in ran)
    ends, starts = timed["ended_unix_s"].to_numpy(), timed["started_unix_s"].to_numpy()
    overlaps = np.flatnonzero(starts[1:] < ends[:-1])
    if overlaps.size:
        i = overlaps[0]
        return False, (
            f"timed runs overlapped: {ran[i + 1][0]}#{ran[i + 1][1]} started before "
            f"{ran[i][0]}#{ran[i][1]} ended"
        )
    return True, f"{len(ran)} run{'s' * (len(ran) != 1)} ran one after another in the planned order"
