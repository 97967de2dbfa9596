"""The studies: every folder of this package that holds a ``study.yaml`` is one, found by
scanning (nothing lists them by hand). A study's folder (``studies/<folder>/``, the study's
name with ``-`` as ``_``, so that its modules import) holds everything of it:

- ``study.yaml``: its entry (:data:`FIELDS`): number, short name, titles, its sources for
  docs/studies/README.md, the sha256 of its numbers file, its own base system, and the
  headline and summary the README lists it with;
- ``numbers.csv``: the numbers it published, each with its source
  (:mod:`embryo_bench.published.studies` reads and checks them);
- ``catalog.yaml``: its workloads (:mod:`embryo_bench.workloads.catalog` gathers them);
- ``models.py``: their builders (the catalog's ``model:``), ``claims.py``: its headline
  claims checked on our runs (imported by name, :attr:`Study.claims`);
- ``config.yaml`` and ``short.yaml``: its configuration and the short form layered on it (the
  repository's ``config/<name>.yaml`` and ``config/<name>-short.yaml`` link to them);
  ``measured*.yaml``: its closing measurements, layered on both;
- ``README.md``: what it claims, what runs here and what was measured.

This module reads only the ``study.yaml`` files and knows the file names: no pandas, no Keras,
nothing of the package but its errors, so that the catalog (the workloads layer) can gather the
studies' workloads. A study's own modules sit in the layers of what they hold
(``tests/test_imports.py``: ``models`` with the workloads, ``claims`` with the reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import DataError

#: The folder of the study folders (this package's).
FOLDER = Path(__file__).parent
#: A study folder's files (see the module docstring).
STUDY_FILE = "study.yaml"
NUMBERS = "numbers.csv"
CATALOG = "catalog.yaml"
MODELS = "models.py"
CLAIMS = "claims.py"
CONFIG = "config.yaml"
SHORT = "short.yaml"
DOC = "README.md"
#: The dotted name of a study folder's package (``<folder>`` appended).
PACKAGE = "embryo_bench.studies"

#: ``study.yaml``'s fields: name -> (required, meaning). ``headline`` and ``summary`` are
#: required of a study with a configuration (the README lists it with them).
FIELDS = {
    "number": (True, "the project's number, 000 (the paper) to 004, three digits"),
    "seed": (True, "the short name it is cited by, e.g. 'Wu et al. 2018'"),
    "title": (True, "authors and title in one line, for the report"),
    "sha256": (True, "the sha256 of numbers.csv (hex): checked whenever it is read"),
    "base_system": (True, "the study's own base for time and cost ('' for none)"),
    "authors": (True, "docs/studies/README.md's 'author(s)' cell"),
    "work": (True, "its 'title' cell: the work's title (Markdown)"),
    "year": (True, "its 'year' cell"),
    "address": (True, "its 'where to read it' cell: public addresses (Markdown)"),
    "headline": (False, "what the study measures, in a few words (the README's heading)"),
    "summary": (False, "the README's paragraph on it: what runs, what is checked"),
}
NUMBER = re.compile(r"^[0-9]{3}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: A study's name: its folder's, with ``-`` for ``_`` (a configuration's ``study:``).
NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class Study:
    """One study: its ``study.yaml`` (:data:`FIELDS`) and where its files are.

    Attributes:
        name: the configuration's ``study:`` (its folder's name, ``-`` for ``_``).
        number, seed, title, base_system, sha256: as :data:`FIELDS` (sha256 "" in a study
            made in code, whose numbers file is not checked).
        claims: the dotted name of its claims module (``embryo_bench.studies.<folder>.claims``),
            imported by name when its claims are checked.
        folder: the study's folder; its numbers file is :attr:`path`.
        numbers: the numbers file's name in the folder.
        authors, work, year, address, headline, summary: as :data:`FIELDS` ("" where not given).
    """

    name: str
    number: str
    seed: str
    title: str
    base_system: str
    claims: str
    folder: Path = field(compare=False)
    sha256: str = ""
    numbers: str = NUMBERS
    authors: str = ""
    work: str = ""
    year: str = ""
    address: str = ""
    headline: str = ""
    summary: str = ""

    @property
    def path(self) -> Path:
        """The study's numbers file: :attr:`numbers` in :attr:`folder`."""
        return Path(self.folder) / self.numbers

    @property
    def registry(self) -> Path:
        """The study's entry, ``study.yaml`` in its folder."""
        return Path(self.folder) / STUDY_FILE

    @property
    def claims_path(self) -> Path:
        """Where the claims module's source should be: its last name ``.py`` in the folder."""
        return Path(self.folder) / f"{self.claims.rpartition('.')[2]}.py"

    def file(self, name: str) -> Path | None:
        """The study's file ``name`` (:data:`CATALOG`, :data:`CONFIG`, ...), or None where
        its folder has none."""
        path = Path(self.folder) / name
        return path if path.is_file() else None


def folder_name(name: str) -> str:
    """A study's folder (and package) name: ``v100-blog`` -> ``v100_blog``."""
    return name.replace("-", "_")


def read_study(folder: Path) -> Study:
    """The study of one folder, from its ``study.yaml``.

    Raises:
        DataError: one line naming the file: unreadable or not YAML, not a mapping, a field
            missing (a study with ``config.yaml`` needs a headline and a summary) or unknown,
            a field that is not text, a number other than three digits, a sha256 other than
            64 hex digits, or a folder name that is no study name.
    """
    folder = Path(folder)
    path = folder / STUDY_FILE
    try:
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: cannot read the study's entry: {exc}") from exc
    if not isinstance(entry, dict):
        raise DataError(
            f"{path}: {type(entry).__name__}; expected a mapping of {', '.join(FIELDS)}"
        )
    needed = {k for k, (required, _) in FIELDS.items() if required}
    if (folder / CONFIG).is_file():
        needed |= {"headline", "summary"}
    missing, unknown = sorted(needed - entry.keys()), sorted(entry.keys() - FIELDS.keys())
    if missing or unknown:
        what = [f"no {', '.join(missing)}"] if missing else []
        what += [f"unknown {', '.join(map(str, unknown))}"] if unknown else []
        raise DataError(f"{path}: {'; '.join(what)}; expected the fields {', '.join(FIELDS)}")
    if bad := [k for k, v in entry.items() if not isinstance(v, str)]:
        raise DataError(
            f'{path}: {", ".join(bad)} not text; expected a string each (quote a number: "003")'
        )
    name = folder.name.replace("_", "-")
    if not NAME.match(name) or folder_name(name) != folder.name:
        raise DataError(
            f"{folder}: a study's folder is named by the study in lower case, '_' for '-' "
            "(e.g. v100_blog for v100-blog)"
        )
    if not NUMBER.match(entry["number"]):
        raise DataError(f"{path}: number {entry['number']!r}; expected three digits (e.g. '003')")
    if not SHA256.match(entry["sha256"]):
        raise DataError(
            f"{path}: sha256 {entry['sha256']!r}; expected the 64 hex digits of {NUMBERS}'s sha256"
        )
    text = {k: " ".join(v.split()) if k == "summary" else v.strip() for k, v in entry.items()}
    return Study(
        name=name, claims=f"{PACKAGE}.{folder.name}.{Path(CLAIMS).stem}", folder=folder, **text
    )


def studies(folder: Path = FOLDER) -> dict[str, Study]:
    """Every study under ``folder`` (each sub-folder with a ``study.yaml``), by name, in the
    order of their numbers.

    Raises:
        DataError: ``folder`` holds no study; a study's entry is bad (:func:`read_study`);
            two studies share a number.
    """
    folder = Path(folder)
    found = [read_study(p.parent) for p in sorted(folder.glob(f"*/{STUDY_FILE}"))]
    if not found:
        raise DataError(f"{folder}: no study (a folder with a {STUDY_FILE}) found")
    by_number: dict[str, Study] = {}
    for study in found:
        if (other := by_number.setdefault(study.number, study)) is not study:
            raise DataError(
                f"{study.registry}: number {study.number} is {other.name}'s too "
                f"({other.registry}); expected one number a study"
            )
    return {s.name: s for s in sorted(found, key=lambda s: s.number)}
