"""The answer where a run ends, and the report's landing page made of it: the readable
tables as reStructuredText that Snakemake's report renders (docutils, after Jinja) without a
warning, every cell kept, the description first; the description alone before any run."""

from __future__ import annotations

from pathlib import Path

import jinja2
from docutils.core import publish_parts

from embryo_bench.reporting.answer import (
    answer_text,
    landing_page,
    landing_rst,
    markdown_to_rst,
    write_landing,
)
from embryo_bench.vocabulary import layout

REPO = Path(__file__).resolve().parents[1]
COMPARISON = """Data: **SYNTHETIC frames (generated, not real embryos)**

Each target's speed relative to host-1cpu's (above 1: faster); `compare.min_difference`.

| target      | throughput ratio [95 % interval]   | throughput   | time to accuracy   |
|:------------|:-----------------------------------|:-------------|:-------------------|
| host-1cpu   | 1.000                              | base         | base: not reached  |
| host-2cpu   | 1.659 [1.483, 1.857]               | faster       |                    |
|             | {{ not a template }} {% x %}       | the same within ±5 % |          |
"""
VIEW = """**SYNTHETIC: our runs trained on synthetic data.**

# Every workload: time and cost relative to the base target

| workload  | target    | verdict |
|:----------|:----------|:--------|
| mnist-mlp | host-1cpu | base    |
"""


def _outdir(tmp_path: Path) -> Path:
    figures = tmp_path / layout.figures_dir(layout.workload_dir(layout.PAPER_WORKLOAD))
    figures.mkdir(parents=True)
    (figures / "comparison_table.md").write_text(COMPARISON)
    (tmp_path / f"{layout.WORKLOAD_VIEW}.md").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / f"{layout.WORKLOAD_VIEW}.md").write_text(VIEW)
    return tmp_path


def _render(rst: str) -> str:
    """As Snakemake's report renders its description after Jinja: docutils to HTML, with its
    warnings raised instead of printed into the page."""
    settings = {"halt_level": 2, "report_level": 2}  # a warning stops it
    return publish_parts(rst, writer_name="html", settings_overrides=settings)["html_body"]


def test_the_tables_become_grid_tables_with_every_cell():
    rst = markdown_to_rst(COMPARISON)
    assert rst.count("\n+-") >= 3 and "``compare.min_difference``" in rst  # a grid table
    html = _render(rst)
    for cell in ("1.659 [1.483, 1.857]", "faster", "base: not reached", "the same within ±5 %"):
        assert cell in html
    assert "<strong>SYNTHETIC frames (generated, not real embryos)</strong>" in html


def test_the_landing_page_is_the_description_then_the_answer(tmp_path):
    out = _outdir(tmp_path / "out")
    description = (REPO / "workflow/report/workflow.rst").read_text()
    workloads = [layout.PAPER_WORKLOAD, "mnist-mlp"]
    page = landing_rst(out, workloads, description)
    assert page.startswith(description.rstrip())
    html = (
        jinja2.Environment()
        .from_string(page)
        .render(snakemake=type("S", (), {"config": {"dataset": {"kind": "synthetic"}}}))
    )
    html = publish_parts(html, writer_name="html", settings_overrides={"halt_level": 2})[
        "html_body"
    ]
    assert "The answer" in html and "1.659 [1.483, 1.857]" in html
    assert "{{ not a template }} {% x %}" in html  # a table's text is never a template
    assert html.index("Every workload") < html.index("1.659")  # answer_files' order
    assert f"{layout.WORKLOAD_VIEW}.md" in html
    # On the landing page the answer comes first: the table before the note on how it was
    # computed, and without the column empty in every row.
    assert html.index("1.659 [1.483, 1.857]") < html.index("Each target's speed relative")
    assert "time to accuracy" in html and "not reached" in html
    empty = "| target | ratio | never |\n|:--|:--|:--|\n| a | 1.000 | |\n| b | 1.2 | |\n"
    assert "never" in markdown_to_rst(empty)
    assert "never" not in markdown_to_rst(empty, landing=True)


def test_the_report_names_the_landing_page_once_a_run_wrote_it(tmp_path):
    out = tmp_path / "out"
    description = "workflow/report/workflow.rst"
    assert landing_page(out, description) == description  # no run has ended yet
    _outdir(out)
    written = write_landing(out, [layout.PAPER_WORKLOAD], REPO / description)
    assert written == out / layout.REPORT_LANDING and not list(out.glob("*.part"))
    assert landing_page(out, description) == str(written.resolve())
    assert "1.659 [1.483, 1.857]" in written.read_text()
    assert "comparison_table.md" in answer_text(out, [layout.PAPER_WORKLOAD])


def test_with_no_table_the_landing_page_is_the_description(tmp_path):
    assert landing_rst(tmp_path, [layout.PAPER_WORKLOAD], "just this\n") == "just this\n"
