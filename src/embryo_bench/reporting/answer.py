"""The answer a benchmark ends with, printed where the run ends (the workflow's ``onsuccess``
and ``embryo-bench run``): each workload's speed and cost relative to the base target, as the
readable tables the figures job wrote (:mod:`embryo_bench.reporting.readable_tables`)."""

from __future__ import annotations

import os
from pathlib import Path

from ..vocabulary import layout

#: Set to "0" in the workflow's environment by a command that prints the answer itself
#: (``embryo-bench run``), so that it is not printed twice.
PRINT_ANSWER_ENV = "EMBRYO_BENCH_PRINT_ANSWER"


def answer_files(outdir: str | Path, workloads: list[str]) -> list[Path]:
    """The tables that answer the question, in the order printed: with several workloads the
    workload view (``study/workload_view.md``: time and cost relative to the base, per workload
    and target), then each workload's comparison (``comparison_table.md``: speed relative to the
    base with intervals and verdicts) and cost (``cost_table.md``). Those that exist.

    Args:
        outdir: the results folder.
        workloads: the workloads' names, in the configuration's order.
    """
    outdir = Path(outdir)
    found = []
    if len(workloads) > 1:
        found.append(outdir / f"{layout.WORKLOAD_VIEW}.md")
    for w in workloads:
        figures = outdir / layout.figures_dir(layout.workload_dir(w))
        found += [figures / f"{name}.md" for name in ("comparison_table", "cost_table")]
    return [p for p in found if p.is_file()]


def answer_text(outdir: str | Path, workloads: list[str]) -> str:
    """:func:`answer_files` one after the other, each under a heading naming its path, and a
    last line saying where the figures are; "" when there is no table (a run that stopped
    before its figures, or an invocation that asked for something else)."""
    tables = answer_files(outdir, workloads)
    if not tables:
        return ""
    text = "".join(f"\n## {table}\n\n{table.read_text().strip()}\n" for table in tables)
    report = Path(outdir) / "report.zip"
    return text + (
        f"\nfigures and every table: {outdir}/; one page with all of them: "
        f"snakemake ... --report {report}\n"
    )


def print_answer(outdir: str | Path, workloads: list[str]) -> None:
    """Print :func:`answer_text` (nothing when it is empty, or when :data:`PRINT_ANSWER_ENV`
    is "0")."""
    if os.environ.get(PRINT_ANSWER_ENV) == "0":
        return
    text = answer_text(outdir, workloads)
    if text:
        print(text, flush=True)
