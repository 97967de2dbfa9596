"""The answer a benchmark ends with, printed where the run ends (the workflow's ``onsuccess``
and ``embryo-bench run``): each workload's speed and cost relative to the base target, as the
readable tables the figures job wrote (:mod:`embryo_bench.reporting.readable_tables`); and the
same tables as the report's landing page (:func:`write_landing`), so that the report opens on
the answer rather than on the rule graph."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tabulate import tabulate

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


def _inline(line: str) -> str:
    """A line of our Markdown with its `code` spans as reStructuredText's ``code``."""
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", line)


def _cells(line: str) -> list[str]:
    """The cells of a Markdown pipe-table row (``| a | b |``), stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _blocks(text: str) -> list[tuple]:
    """Our Markdown as blocks: ("heading", title), ("para", lines), ("table", header,
    rows)."""
    blocks: list[tuple] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|"):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            blocks.append(("table", rows[0], rows[2:]))
            continue
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading:
            blocks.append(("heading", heading.group(2).strip()))
        elif line.strip():
            if blocks and blocks[-1][0] == "para" and lines[i - 1].strip():
                blocks[-1][1].append(line)
            else:
                blocks.append(("para", [line]))
        i += 1
    return blocks


def _landing_order(blocks: list[tuple]) -> list[tuple]:
    """Within each heading's section: the lead paragraphs (the data's label, a bold line)
    first, then the tables without their columns empty in every row, then the notes, so
    that the answer comes before how it was computed."""
    out: list[tuple] = []
    section: list[tuple] = []

    def flush():
        lead = [b for b in section if b[0] == "para" and b[1][0].startswith(("Data:", "**"))]
        tables = []
        for b in section:
            if b[0] == "table":
                keep = [k for k in range(len(b[1])) if any(r[k] for r in b[2] if k < len(r))]
                header = [b[1][k] for k in keep]
                rows = [[r[k] if k < len(r) else "" for k in keep] for r in b[2]]
                tables.append(("table", header, rows))
        notes = [b for b in section if b[0] == "para" and b not in lead]
        out.extend(lead + tables + notes)
        section.clear()

    for b in blocks:
        if b[0] == "heading":
            flush()
            out.append(b)
        else:
            section.append(b)
    flush()
    return out


def markdown_to_rst(text: str, landing: bool = False) -> str:
    """Our readable tables' Markdown as reStructuredText: paragraphs (``**bold**`` is the
    same in both), ``#`` headings as section titles, `code` spans, and pipe tables (as
    :meth:`pandas.DataFrame.to_markdown` writes them: a header row, a rule, the rows) as grid
    tables through :func:`tabulate.tabulate` (a grid table allows empty cells, a simple one
    not in its first column).

    Args:
        text: the Markdown of :func:`answer_files` (str).
        landing: for the report's landing page (:func:`_landing_order`): the tables before
            the notes, without their empty columns.
    """
    blocks = _blocks(text)
    if landing:
        blocks = _landing_order(blocks)
    out: list[str] = []
    for b in blocks:
        if b[0] == "table":
            table = tabulate(b[2], headers=b[1], tablefmt="grid", disable_numparse=True)
            out += ["", table, ""]
        elif b[0] == "heading":
            title = _inline(b[1])
            out += ["", title, "~" * len(title), ""]
        else:
            out += ["", *(_inline(line) for line in b[1]), ""]
    return "\n".join(out).strip() + "\n"


def landing_rst(outdir: str | Path, workloads: list[str], description: str) -> str:
    """The report's landing page: ``description`` (the workflow's, workflow/report/
    workflow.rst: a Jinja template Snakemake renders), then a section "The answer" with each
    of :func:`answer_files` as reStructuredText (:func:`markdown_to_rst`, its tables before
    its notes, without empty columns) under its path
    relative to ``outdir``; inside a Jinja raw block, so that nothing in a table is read as
    a template. ``description`` alone when there is no table."""
    tables = answer_files(outdir, workloads)
    if not tables:
        return description
    parts = [description.rstrip(), "", "The answer", "==========", "", "{% raw %}"]
    for table in tables:
        name = str(table.relative_to(outdir))
        parts += ["", name, "-" * len(name), "", markdown_to_rst(table.read_text(), landing=True)]
    return "\n".join(parts + ["{% endraw %}", ""])


def write_landing(outdir: str | Path, workloads: list[str], description: str | Path) -> Path:
    """Write :func:`landing_rst` (``description`` read from that file) to the outdir's
    :data:`~embryo_bench.vocabulary.layout.REPORT_LANDING` (through a temporary file, so that a
    report never reads half of it); the path written."""
    out = Path(outdir) / layout.REPORT_LANDING
    text = landing_rst(outdir, workloads, Path(description).read_text())
    part = out.with_name(out.name + ".part")
    part.write_text(text)
    part.replace(out)
    return out


def landing_page(outdir: str | Path, description: str) -> str:
    """What the workflow's ``report:`` directive names: the landing page the last successful
    run wrote (:func:`write_landing`; an absolute path, since Snakemake reads it relative to
    the Snakefile's folder), else ``description`` (no run has ended yet)."""
    page = Path(outdir) / layout.REPORT_LANDING
    return str(page.resolve()) if page.is_file() else description
