"""What every shipped configuration plans, written as one JSON file per configuration.

A refactoring of the planning code must leave the runs of every shipped configuration as they
were: the same runs in the same order, the same run specs (run.json) and the same figures
specs. ``tests/test_plan_snapshots.py`` compares the plans made now with the files under
``tests/data/plans/``, written by ``python tests/plan_snapshot.py --write`` from the code
before the change. The plan is made as a job on a cluster node makes it
(``hardware_check: none``, not on this machine), so it does not depend on the machine's cores,
its Docker daemon or its files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "data" / "plans"
sys.path.insert(0, str(ROOT / "tests"))

from workflow_helpers import layered_base  # noqa: E402


def shipped_configs() -> list[Path]:
    """Every configuration file under config/ but the schema."""
    return sorted(p for p in (ROOT / "config").glob("*.yaml") if p.name != "schema.yaml")


def plan_of(path: Path) -> dict:
    """The runs, run specs and figures specs a configuration file plans (layered on its base
    as the README runs it), as plain JSON data."""
    from embryo_bench.planning.plan import Plan
    from embryo_bench.vocabulary.config import read_config_files

    files = [p for p in (layered_base(path), path) if p is not None]
    config, sources = read_config_files(files)
    plan = Plan.from_config(config, hardware_check="none", on_this_machine=False, sources=sources)
    runs = plan.all_runs
    workloads = sorted({w for w, _, _ in runs})
    return {
        "files": [str(p.relative_to(ROOT)) for p in files],
        "targets": list(plan.targets),
        "skipped": plan.skipped,
        "planned_runs": [list(r) for r in plan.planned_runs],
        "specs": {f"{w}/{t}/{k}": json.loads(plan.spec(t, k, w).to_json()) for w, t, k in runs},
        "figures_specs": {w: plan.figures_spec(w).to_dict() for w in workloads},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the snapshots")
    args = parser.parse_args()
    for path in shipped_configs():
        plan = plan_of(path)
        text = json.dumps(plan, indent=1, sort_keys=True) + "\n"
        out = SNAPSHOTS / f"{path.stem}.json"
        if args.write:
            out.write_text(text)
        print(f"{path.name}: {len(plan['specs'])} runs" + (f" -> {out}" if args.write else ""))


if __name__ == "__main__":
    main()
