"""The lists of the studies in the documentation, rendered from their ``study.yaml`` files, so
that no document lists the studies by hand: the README's section per study (its commands and
what it checks), the table of sources in docs/studies/README.md, and the studies'
configurations in config/README.md (:func:`config_list`, which
:mod:`embryo_bench.planning.configdoc` renders with the rest of that file).

A document holds each list between two marker lines, ``<!-- studies:<name> ... -->`` and
``<!-- /studies:<name> -->`` (:data:`LISTS`); ``tests/test_study_docs.py`` checks that each is
what its studies give. Rewrite them after adding or editing a study with::

    python -m embryo_bench.studies.docs README.md docs/studies/README.md
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from .registry import CONFIG, DOC, Study, studies

#: The width the README's paragraphs are wrapped to.
WIDTH = 96


def _link(study: Study, document: Path) -> str:
    """The study's README.md as a link from ``document`` (a file of the repository)."""
    target = Path(study.folder) / DOC
    return os.path.relpath(target, Path(document).resolve().parent).replace(os.sep, "/")


def configured(known: dict[str, Study]) -> list[Study]:
    """The studies that ship a configuration (``config.yaml`` in their folder), in the order
    of their numbers: the ones the README lists and CI runs in their short form."""
    return [s for s in known.values() if s.file(CONFIG)]


def readme_sections(known: dict[str, Study], document: Path) -> str:
    """The README's section per study with a configuration: a heading (number, short name,
    headline), its two commands (the study, its short form) and its summary, with a link to
    its folder's README.md."""
    parts = []
    for s in configured(known):
        summary = f"{s.summary} More: [its folder's README]({_link(s, document)})."
        parts.append(
            f"### {s.number} {s.seed}: {s.headline}\n\n"
            "```bash\n"
            f"snakemake --cores all --configfile config/{s.name}.yaml\n"
            f"snakemake --cores all --configfile config/{s.name}.yaml "
            f"config/{s.name}-short.yaml\n"
            "```\n\n" + textwrap.fill(summary, WIDTH, break_on_hyphens=False)
        )
    return "\n\n".join(parts)


def sources_table(known: dict[str, Study], document: Path) -> str:
    """docs/studies/README.md's table: each study's number, short name, authors, title,
    year, public address and where it is here (its folder's README.md, its configuration)."""
    rows = [
        "| no. | short name | author(s) | title | year | where to read it | here |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in known.values():
        config = f"`config/{s.name}.yaml`" if s.file(CONFIG) else "the default configuration"
        here = f"[{s.folder.name}/]({_link(s, document)}), {config}"
        cells = (s.number, s.seed, s.authors, s.work, s.year, s.address, here)
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def config_list(known: dict[str, Study]) -> str:
    """config/README.md's bullets of the studies' configurations (the files there are links
    to each study's folder)."""
    return "\n".join(
        textwrap.fill(
            f"- [`{s.name}.yaml`]({s.name}.yaml): {s.seed} ({s.number}), {s.headline}; "
            f"[`{s.name}-short.yaml`]({s.name}-short.yaml), its short form, layered on it "
            f"(both in `src/embryo_bench/studies/{s.folder.name}/`: `config.yaml`, "
            "`short.yaml`).",
            WIDTH,
            subsequent_indent="  ",
            break_on_hyphens=False,
        )
        for s in configured(known)
    )


#: The lists a document may hold: marker name -> its renderer (the studies, the document).
LISTS: dict[str, Callable[[dict[str, Study], Path], str]] = {
    "readme": readme_sections,
    "sources": sources_table,
}


def _marked(name: str) -> re.Pattern:
    return re.compile(
        rf"(?s)(^<!-- studies:{name}\b[^\n]*-->\n)(.*?)(^<!-- /studies:{name} -->$)", re.M
    )


def render(text: str, document: Path, known: dict[str, Study] | None = None) -> str:
    """``text`` (the document's) with each of its marked lists rendered again."""
    known = studies() if known is None else known
    for name, renderer in LISTS.items():
        body = renderer(known, document)
        text = _marked(name).sub(lambda m, body=body: f"{m[1]}\n{body}\n\n{m[3]}", text)
    return text


def lists_in(text: str) -> list[str]:
    """The names of the marked lists ``text`` holds."""
    return [name for name in LISTS if _marked(name).search(text)]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the marked lists of the documents given (``--check``: only say which differ;
    exit status 1 when one does)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("documents", nargs="+", type=Path, help="e.g. README.md")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a change")
    args = parser.parse_args(argv)
    changed = []
    for path in args.documents:
        text = path.read_text(encoding="utf-8")
        if not lists_in(text):
            parser.error(f"{path}: no <!-- studies:<name> --> list ({', '.join(LISTS)})")
        new = render(text, path)
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for path in changed:
        print(f"{path}: {'differs from its studies' if args.check else 'rewritten'}")
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
