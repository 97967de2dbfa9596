"""Benchmark: a real A/A, in rounds and across workflow invocations (sessions). Not a test.

The verdicts' simulation (``bench_verdicts.py``) says how often identical machines are
called different under a noise model; this measures it once on this machine. It writes one
configuration per session: the base configfile with its target replaced by ``--copies``
identical copies of one host target (``<target>-a``, ``-b``, ...; :func:`bench_position.
position_config`, ``compare.order: balanced``, ``--rounds`` rounds), each session its own
outdir ``<out>/session-<k>/``, and runs the whole workflow for each session, one after the
other (``snakemake --cores N --configfile <out>/session-<k>.yaml``: its runs, figures and
tables; a finished session is not rerun). Then :func:`embryo_bench.reporting.crossfolder.
compare_folders` reads the sessions as ``embryo-bench compare <session-1> <session-k>...
--control <target>-a`` would, and it prints:

* **in rounds**: each session's own comparison of every copy with the first (its paired
  rounds, the intervals of a session's copies holding together at 95 %);
* **across sessions, plain**: each copy in session k against the same copy in session 1
  (unpaired, Welch);
* **across sessions, relative to the control** (copy a): every other copy's ratio to copy a
  in session k's rounds over the same in session 1's.

Every row compares identical settings, so "faster" or "slower" is a false call; "the same
within ±X %" or "unresolved" is what an A/A should say. The last line counts the false calls.

Time, measured (2026-12-01, the shared 2-core VM, AMD EPYC Zen 4 with AVX-512, 3 sessions of
the defaults): 243-257 s a session. The result: docs/results.md, "A real A/A, in rounds and
across three workflow invocations".

Usage:
    python benchmarks/bench_sessions.py [--configfile config/offline.yaml] [--target host-1cpu]
        [--copies 2] [--rounds 5] [--sessions 2] [--out results/sessions] [--cores 2]
        [--min-difference 0.05] [--neighbour CPUS] [--json PATH]

``--neighbour 0`` runs ``noisy_neighbour.py`` on CPU 0 for the whole of every session (random
bursts of a busy CPU: another tenant's stand-in), one seed a session.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_position import call, copy_names, load_average, machine, position_config  # noqa: E402

from embryo_bench.errors import EmbryoBenchError  # noqa: E402
from embryo_bench.io import write_json  # noqa: E402
from embryo_bench.reporting import compare, crossfolder  # noqa: E402
from embryo_bench.vocabulary.config import read_config_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def rows_of(result: crossfolder.Comparison) -> list[dict]:
    """The A/A's rows: (kind, session, copy, ratio, low, high, verdict, called) per compared
    row, kind "in rounds", "across, plain" or "across, relative to the control"; ``called``
    is True where the verdict says faster or slower (a false call in an A/A)."""
    out = []
    for folder, _workload, _base, paired in result.within:
        for _, r in paired.iloc[1:].iterrows():
            out.append(
                {"kind": "in rounds", "session": folder, "copy": r["target"],
                 "ratio": r["throughput_ratio"], "low": r["throughput_low"],
                 "high": r["throughput_high"], "verdict": r["throughput_verdict"]}
            )  # fmt: skip
    kinds = {"across": "across, plain", "controlled": "across, relative to the control"}
    t = result.table
    for _, r in t[t["section"].isin(list(kinds))].iterrows():
        out.append(
            {"kind": kinds[r["section"]], "session": r["folder"], "copy": r["target"],
             "ratio": r["ratio"], "low": r["ratio_low"], "high": r["ratio_high"],
             "verdict": r["verdict"]}
        )  # fmt: skip
    for row in out:
        row["called"] = compare.direction(str(row["verdict"])) in (compare.FASTER, compare.SLOWER)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", type=Path, default=REPO / "config" / "offline.yaml")
    p.add_argument("--target", default="host-1cpu")
    p.add_argument("--copies", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sessions", type=int, default=2)
    p.add_argument("--out", type=Path, default=REPO / "results" / "sessions")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--min-difference", type=float, default=0.05)
    p.add_argument("--neighbour", metavar="CPUS", help="a noisy neighbour on these CPUs")
    p.add_argument("--json", type=Path, help="the record (default: <out>/sessions.json)")
    args = p.parse_args(argv)
    try:
        if args.sessions < 2:
            raise EmbryoBenchError(f"--sessions: expected 2 or more, got {args.sessions}")
        out = args.out.resolve()
        base = read_config_file(args.configfile)
        names = copy_names(args.target, args.copies)
        folders = [out / f"session-{k}" for k in range(1, args.sessions + 1)]
        configs = [
            position_config(base, args.target, args.copies, args.rounds, "balanced", f)
            for f in folders
        ]
    except EmbryoBenchError as exc:
        print(f"bench_sessions: error: {exc}", file=sys.stderr)
        return 2
    m = machine()
    record = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "machine": {**m, "load_average_before": load_average()},
        "calls": [],
    }
    print(
        f"machine: {m['cpu_model']}, {m['cpus']} CPUs, avx512f {'yes' if m['avx512f'] else 'no'};"
        f" load average {record['machine']['load_average_before']} before; "
        f"{args.copies} copies of {args.target} ({', '.join(names)}), {args.rounds} rounds, "
        f"{args.sessions} sessions; out {out}",
        flush=True,
    )
    out.mkdir(parents=True, exist_ok=True)
    for k, (folder, config) in enumerate(zip(folders, configs, strict=True), start=1):
        path = out / f"session-{k}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores),
               "--configfile", str(path)]  # fmt: skip
        log = out / "logs" / f"session-{k}.log"
        started = time.time()
        neighbour = None
        if args.neighbour is not None:
            neighbour = subprocess.Popen(
                [sys.executable, str(REPO / "benchmarks" / "noisy_neighbour.py"),
                 "--cpus", args.neighbour, "--seed", str(k)]
            )  # fmt: skip
        try:
            rc, seconds = call(cmd, log)
        finally:
            if neighbour is not None:
                neighbour.terminate()
                neighbour.wait(timeout=30)
        record["calls"].append(
            {"session": k, "rc": rc, "seconds": round(seconds, 1), "started_unix_s": started,
             "log": str(log)}
        )  # fmt: skip
        print(f"session {k}: {seconds:.0f} s, rc {rc} ({folder})", flush=True)
        if rc:
            print(f"bench_sessions: error: session {k} failed (exit {rc}; {log})", file=sys.stderr)
            return 1
    record["machine"]["load_average_after"] = load_average()
    result = crossfolder.compare_folders(
        [str(f) for f in folders], args.min_difference, control=names[0]
    )
    rows = rows_of(result)
    record["rows"] = rows
    write_json(args.json or out / "sessions.json", record)
    shown = pd.DataFrame(rows)
    shown["session"] = shown["session"].map(lambda s: Path(s).name)
    print()
    print(shown.to_markdown(index=False, floatfmt=".3f"))
    called = shown.groupby("kind", sort=False)["called"].agg(["sum", "size"])
    print()
    for kind, c in called.iterrows():
        print(f"{kind}: {c['sum']} of {c['size']} rows called faster or slower")
    print(f"load average {record['machine']['load_average_after']} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
