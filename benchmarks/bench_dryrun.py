"""Benchmark: orchestration overhead, the wall time of a no-op ``snakemake -n`` (not a test).

A dry run plans the whole DAG of a configuration (parsing the Snakefile: the config's
validation, the hardware check of every target, each rule's code hash) and executes nothing.
Each repeat is a fresh ``python -m snakemake -n --configfile CONFIG --config outdir=DIR`` from
the repository root, so the workflow profile (profiles/default) applies as it does for a
person. DIR is an empty temporary folder (every job planned), or with ``--existing`` a folder
where every output exists and is up to date (made once: empty outputs from
``snakemake --summary``, then ``snakemake --touch``; nothing to be done).

One untimed run comes first (it counts the jobs planned and fills the code-hash cache, see
:mod:`embryo_bench.vocabulary.codehash`), reported on its own; then ``--repeats`` timed runs.
``--cold`` removes each checkout's code-hash cache file before every run (the first dry run
after an edit of the package). With
``--baseline CHECKOUT`` (another copy of the repository, e.g. ``git archive HEAD | tar -x -C
/tmp/base``) the two are run interleaved, baseline then this one, repeat after repeat, so a
change in the machine's load hits both alike. ``--floor`` adds, interleaved the same way, a
one-rule workflow: what Snakemake's own start-up costs, which no change here can remove.

Slurm: snakemake-executor-plugin-slurm (2.8.0, a dev dependency) runs ``scontrol show config``
when it is imported, by every ``snakemake`` command, local runs and dry runs included. Where
Slurm's client tools are installed but no controller answers, that waits for scontrol's own
timeout (about 9 s here) before Snakemake reads the Snakefile. The benchmark times that call
first and says so; ``--stub-scontrol`` puts an ``scontrol`` that fails at once first on PATH
for every timed run (what a machine without Slurm, or with a controller that answers, pays).

Prints every repeat, the median, min and max seconds, the jobs planned, and whether the median
meets the target (``--target-s``, default 3 s); and the median CPU time (user +
system) of the snakemake processes, which a busy machine inflates far less than wall time.

Usage: python benchmarks/bench_dryrun.py [--configfile config/config.yaml] [--repeats 5]
       [--quiet] [--existing] [--cold] [--baseline PATH] [--floor] [--stub-scontrol]
       [--target-s 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: embryo_bench.vocabulary.codehash.CACHE_FILE in a checkout.
CODEHASH_CACHE = "src/embryo_bench/__pycache__/embryo_bench-codehash.json"
#: The floor: one rule, one output, nothing imported.
FLOOR_SNAKEFILE = 'rule all:\n    output:\n        "x",\n    shell:\n        "touch {output}"\n'


def dry_run(
    repo: Path, configfile: Path | None, outdir: Path, quiet: bool, env: dict | None = None
) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout + stderr) of one ``snakemake -n`` in ``repo`` (no
    configfile: the floor workflow, one core).

    Raises:
        SystemExit: snakemake failed.
    """
    cmd = [sys.executable, "-m", "snakemake", "-n"]
    if configfile is None:
        cmd += ["--cores", "1"]
    else:
        cmd += ["--configfile", str(configfile), "--config", f"outdir={outdir}"]
    cmd += ["--quiet"] if quiet else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {repo}:\n{proc.stderr[-3000:]}")
    return seconds, cpu, proc.stdout + proc.stderr


def jobs_planned(output: str) -> int:
    """The jobs a dry run's output plans: its job stats' ``total`` (0: nothing to be done)."""
    m = re.search(r"^total\s+(\d+)\s*$", output, re.MULTILINE)
    if m:
        return int(m.group(1))
    if "Nothing to be done" in output:
        return 0
    raise SystemExit(f"no job count in the dry run's output:\n{output[-2000:]}")


def make_outputs(repo: Path, configfile: Path, outdir: Path, env: dict | None) -> None:
    """Every output of the configuration's DAG in ``outdir``, empty and up to date: paths from
    ``snakemake --summary`` (a name without a suffix is a directory output), then
    ``snakemake --touch`` in the DAG's order."""
    base = [sys.executable, "-m", "snakemake", "--configfile", str(configfile)]
    base += ["--config", f"outdir={outdir}"]
    summary = subprocess.run(
        base + ["--summary"], cwd=repo, capture_output=True, text=True, env=env
    )
    if summary.returncode != 0:
        raise SystemExit(f"snakemake --summary failed:\n{summary.stderr[-3000:]}")
    for line in summary.stdout.splitlines()[1:]:
        path = Path(line.split("\t")[0])
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
    touch = subprocess.run(
        base + ["--touch", "--cores", "1"], cwd=repo, capture_output=True, env=env
    )
    if touch.returncode != 0:
        raise SystemExit(f"snakemake --touch failed:\n{touch.stderr.decode()[-3000:]}")


def scontrol_wait() -> float | None:
    """Seconds ``scontrol show config`` takes here (what the Slurm plugin's import waits
    for), None without scontrol."""
    exe = shutil.which("scontrol")
    if exe is None:
        return None
    start = time.perf_counter()
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run([exe, "show", "config"], capture_output=True, timeout=15)
    return time.perf_counter() - start


def stub_scontrol(folder: Path) -> dict:
    """An environment whose PATH starts with an ``scontrol`` that fails at once."""
    folder.mkdir(parents=True, exist_ok=True)
    stub = folder / "scontrol"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def describe(name: str, times: list[float], cpu: list[float], target: float) -> str:
    med = statistics.median(times)
    runs = " ".join(f"{t:.2f}" for t in times)
    verdict = "meets" if med < target else "MISSES"
    return (
        f"{name}: median {med:.2f} s, min {min(times):.2f}, max {max(times):.2f} "
        f"({len(times)} runs: {runs}); {verdict} the {target:g} s target; "
        f"CPU median {statistics.median(cpu):.2f} s ({' '.join(f'{c:.2f}' for c in cpu)})"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configfile", default="config/config.yaml", help="relative to the repo")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quiet", action="store_true", help="time `snakemake -n --quiet`")
    p.add_argument("--existing", action="store_true", help="every output exists (no-op)")
    p.add_argument("--cold", action="store_true", help="no code-hash cache file")
    p.add_argument("--baseline", type=Path, help="another checkout, timed interleaved")
    p.add_argument("--floor", action="store_true", help="time a one-rule workflow too")
    p.add_argument(
        "--stub-scontrol", action="store_true", help="an scontrol that fails at once on PATH"
    )
    p.add_argument("--target-s", type=float, default=3.0)
    args = p.parse_args()

    checkouts: dict[str, Path | None] = {"this": REPO}
    if args.baseline:
        checkouts = {"baseline": args.baseline.resolve(), "this": REPO}
    if args.floor:
        checkouts["floor"] = None
    times: dict[str, list[float]] = {name: [] for name in checkouts}
    cpu: dict[str, list[float]] = {name: [] for name in checkouts}
    wait = scontrol_wait()
    if wait is not None:
        print(
            f"scontrol show config: {wait:.2f} s (snakemake-executor-plugin-slurm runs it at "
            f"every snakemake start){'; stubbed for the timed runs' if args.stub_scontrol else ''}"
        )
    with tempfile.TemporaryDirectory(prefix="bench-dryrun-") as tmp:
        env = stub_scontrol(Path(tmp) / "stub") if args.stub_scontrol else None
        runs = {}
        for name, repo in checkouts.items():
            outdir = Path(tmp) / name / "out"
            outdir.mkdir(parents=True)
            configfile = None
            if repo is None:  # the floor
                repo = Path(tmp) / name
                (repo / "Snakefile").write_text(FLOOR_SNAKEFILE)
            else:
                configfile = (repo / args.configfile).resolve()
                if args.existing:
                    make_outputs(repo, configfile, outdir, env)
            runs[name] = (repo, configfile, outdir)
            first, _, output = dry_run(repo, configfile, outdir, quiet=False, env=env)
            print(f"{name}: {repo}, {jobs_planned(output)} jobs planned; first run {first:.2f} s")
        for _ in range(args.repeats):
            for name, (repo, configfile, outdir) in runs.items():
                if args.cold:
                    (repo / CODEHASH_CACHE).unlink(missing_ok=True)
                seconds, cpu_s, _ = dry_run(repo, configfile, outdir, args.quiet, env)
                times[name].append(seconds)
                cpu[name].append(cpu_s)
    for name, t in times.items():
        print(describe(name, t, cpu[name], args.target_s))


if __name__ == "__main__":
    main()
