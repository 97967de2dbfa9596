"""Result folders compared with each other: ``embryo-bench compare A B
[C ...]``, for runs from any machines or days, and against expected speeds.

A result folder is a workflow's ``outdir``: the paper's runs under
``train/<target>/repeat-<k>/``, each other workload's under
``workloads/<name>/train/<target>/repeat-<k>/``. The choices:

* **The first folder is the reference point.** For each other folder, each (workload,
  target) it shares with the first gets the ratio of its images/s to the first folder's:
  the ratio of the geometric means with Welch's t interval on the logarithms (every row
  against the first folder one of a family that holds together at 95 %, Bonferroni), and the
  same verdict rule as the figures (:func:`embryo_bench.reporting.compare.verdict`: at least
  :data:`~embryo_bench.reporting.compare.MIN_PAIRS` runs on each side, the interval alone
  deciding, ``min_difference`` the band on the log scale). Always
  *unpaired*: runs in different folders never share a round, whatever their repeat numbers.
  Time to accuracy is compared the same way (as a speed: above 1 is faster). **Shown, never
  a regression**: two folders are two sessions, and a speed shared by all of one session's
  runs (the day's CPU, the host's load, one invocation's drift) is in the ratio and not in
  Welch's interval, so the data of one session a side cannot tell a slowdown from a slower
  session: a simulation of these functions called an A/A pair of folders a slowdown in up to
  66 % with a 3-6 % session effect, and two real invocations of one workflow on this
  project's 2-core VM read one copy 12 % and the other 10 % faster in the second
  (docs/results.md). The regression checks are the two that hold a session's speed: a
  control, and a reference written from several sessions.
* **Runs on different machines are never pooled.** A target whose runs in one folder ran on
  several machines becomes ``<target>@<machine>`` parts
  (:func:`embryo_bench.reporting.merge.split_by_machine`, as the figures split it), with one
  machine label for one machine in every folder (:class:`embryo_bench.reporting.runs.Machines`
  of all the folders' runs). Each part of another folder is compared with the first
  folder's part on the same machine, else with the part that stands for that target there
  (most runs); each row names both machines, so a ratio between two CPUs says so.
* **Each folder's own rounds** (where a folder ran two or more targets of a workload): its
  paired comparison with its ``compare.base`` (from its ``figures-spec.json``; without one,
  the first target by name), as its figures show it. Shown beside, never an exit status: a
  target slower than another target is no regression.
* **Relative to a control** (``--control``, :func:`~embryo_bench.reporting.crossfolder_rows.
  controlled_row`): a target run unchanged in every folder; each other target's paired
  ratios to it in each folder's rounds, this folder's over the first's (Welch on the
  logarithms, a folder's rows at once at 95 %, Bonferroni). A session's own speed (the
  day's CPU, the host's load, the invocation's drift) moves all its runs and divides out,
  which the plain rows cannot do; these rows are regression checks.
* **A reference file** (:func:`embryo_bench.reporting.reference_file.read_reference`):
  expected images/s per target, each with a tolerance, as ReFrame's performance references
  give a value and thresholds per system.
  Every folder's runs of a target are compared with its expected value: the geometric mean
  over the expected value with a 95 % t interval on the logarithms, and the verdict rule
  with the tolerance in place of ``min_difference`` (log scale: a tolerance of 0.10 calls
  "at least 10 % slower" a ratio whose whole interval lies below 1 / 1.10 = 0.909).
* **A regression** is a row whose throughput verdict is "at least X slower" (X the noise or
  the tolerance; :func:`~embryo_bench.reporting.compare.is_regression`): another folder against
  the first relative to the control, or any folder against the reference file. Without
  either, nothing is checked (:attr:`Comparison.checked`), and the Markdown says so. Fewer than
  :data:`~embryo_bench.reporting.compare.MIN_PAIRS` runs give a ratio and no verdict, so no
  regression (the table says so).

The folders are read, never written, and checked as ``merge:`` checks them
(:func:`embryo_bench.reporting.merge.run_dirs`,
:func:`~embryo_bench.reporting.merge.read_finished_run`: every run's images/s and times
positive and finite; the data and preprocessing of each workload's runs alike in every
folder), before anything is compared: a bad folder is one line naming it, and a reference
file's numbers are finite (:func:`embryo_bench.reporting.reference_file.read_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import ConfigError, DataError
from ..vocabulary.layout import PAPER_WORKLOAD
from . import compare
from .crossfolder_rows import (
    COLUMNS,
    Expected,
    Part,
    across_row,
    base_of,
    check_comparable,
    controlled_row,
    folder_parts,
    read_folder,
    reference_row,
    row_of,
)
from .readable_tables import comparison_note, number_text, readable_comparison, usd_text
from .runs import Run

#: The sections of a comparison, as its CSV's ``section`` column names them: another folder
#: against the first, the same relative to a control target (``--control``), a folder's own
#: rounds against its base, a folder against the reference file.
SECTIONS = ("across", "controlled", "within", "reference")
#: The verdicts' directions that have an interval (the others say why there is none).
CALLED = (compare.FASTER, compare.SLOWER, compare.SAME, compare.UNRESOLVED)
#: What a row says where one side has no runs of its target.
ONLY_FIRST = "not in this folder"
ONLY_THIS = "not in the first folder"
NO_RUN = "no run"
#: What a comparison without a control or a reference says where its regressions would be.
NOT_CHECKED = (
    "Not checked: one session a side cannot tell a slowdown from a slower session; "
    "`--control TARGET` (a target run unchanged in every folder) or `--reference FILE` "
    "(written from five or more sessions with `--write-reference`) makes the check"
)


@dataclass
class Comparison:
    """What :func:`compare_folders` found.

    Attributes:
        folders: the result folders, the first the reference point.
        table: one row per compared (section, folder, workload, target),
        :data:`embryo_bench.reporting.crossfolder_rows.COLUMNS`: section
            (:data:`SECTIONS`), ratio (above 1: faster than the reference side), ratio_low
            and ratio_high (95 % interval), verdict, threshold (the fraction within which a
            difference is noise: ``min_difference`` or the reference's tolerance),
            images_per_s (geometric mean of the row's runs, images/s), flagged_runs and
            reference_flagged_runs (runs that carry a stability flag, each side), differs
            (run settings and software that differ from the first folder's), regression
            (True where the throughput verdict is "at least X slower" relative to the control
            or against the reference; never in a plain across row).
        within: (folder, workload, base, :func:`embryo_bench.reporting.compare.comparison_table`)
            per folder and workload with two or more targets: the folder's own rounds.
        notes: sentences to show once (split targets, unfinished runs left out, bases).
        min_difference: the fraction used.
        reference: the reference file, or "".
        control: the control target (``--control``), or "".
        parts: each folder's runs per workload as parts
            (:func:`embryo_bench.reporting.crossfolder_rows.folder_parts`), for a reference
            file written from them (:func:`embryo_bench.reporting.reference_file.reference_from`).
    """

    folders: list[str]
    table: pd.DataFrame
    within: list[tuple[str, str, str, pd.DataFrame]]
    notes: list[str]
    min_difference: float
    reference: str = ""
    control: str = ""
    parts: dict = field(default_factory=dict, repr=False)

    @property
    def checked(self) -> bool:
        """Whether any row could be a regression: a control or a reference was given (the
        plain across rows never are: :func:`compare_folders`)."""
        return bool(self.control or self.reference)

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows that measured a slowdown (:attr:`table`'s regression)."""
        return self.table[self.table["regression"].astype(bool)]


def _entry_path(key: tuple[str, str]) -> str:
    """A reference entry's place in its file: ``targets.<t>`` (the paper's workload) or
    ``workloads.<w>.<t>``."""
    workload, target = key
    return f"targets.{target}" if workload == PAPER_WORKLOAD else f"workloads.{workload}.{target}"


def compare_folders(
    outdirs: list[str],
    min_difference: float,
    reference: dict[tuple[str, str], Expected] | None = None,
    reference_name: str = "",
    control: str = "",
) -> Comparison:
    """Compare result folders: every other folder's targets against the first folder's,
    each folder's own rounds, and every folder against ``reference`` (the module's
    docstring says how).

    Args:
        outdirs: two or more result folders (workflow outdirs), the first the reference
            point; with ``reference``, one is enough.
        min_difference: the fraction within which a difference is noise
            (``compare.min_difference``, e.g. 0.05).
        reference: :func:`embryo_bench.reporting.reference_file.read_reference`'s entries, or None.
        reference_name: the reference file's name, for the table.
        control: a target every folder ran in each workload they share (``--control``):
            each other folder's targets are then compared with the first's relative to it
            as well (section "controlled", :func:`embryo_bench.reporting.crossfolder_rows.
            controlled_row`), rows that can be regressions; "" for none.

    Returns:
        :class:`Comparison`.

    Raises:
        ConfigError: a folder given twice (after normalising the path), not a folder, with
            no finished run, a run the figures could not read (a measurement such as its
            images/s not a positive finite number included:
            :func:`embryo_bench.reporting.merge.check_measurements`), runs of a workload on
            other data or preprocessing than the first folder's, a ``reference`` of which no
            entry matches a run (one line naming it), a ``reference`` entry named without a
            machine in a file that does not say ``machines: any`` (one line naming the entry
            and the machine its runs ran on), a ``control`` that a folder did not
            run in a workload it shares with the first.
        DataError: a folder's ``figures-spec.json`` is unreadable.
    """
    seen: dict[Path, str] = {}
    for outdir in outdirs:
        real = Path(outdir).resolve()
        if real in seen:
            raise ConfigError(f"compare: {seen[real]} and {outdir} are the same folder")
        seen[real] = outdir
    folders: dict[str, dict[str, list[Run]]] = {}
    notes: list[str] = []
    for outdir in outdirs:
        folders[outdir], more = read_folder(outdir)
        notes += more
    check_comparable(folders)
    parts, splits, split_notes = folder_parts(folders)
    notes += split_notes
    first = outdirs[0]
    rows = []
    matched_parts: dict[str, list[tuple[Part, Part]]] = {}
    for outdir in outdirs[1:]:
        matched_parts[outdir] = []
        workloads = dict.fromkeys([*folders[first], *folders[outdir]])
        for workload in workloads:
            theirs = parts.get((first, workload), [])
            used = set()
            for part in parts.get((outdir, workload), []):
                same = [p for p in theirs if p.target == part.target]
                on_machine = [p for p in same if p.machine == part.machine]
                stands = splits[first, workload].name(part.target) if same else ""
                ref = (on_machine or [p for p in same if p.name == stands] or [None])[0]
                if ref is None:
                    rows.append(row_of("across", part, None, reference=first, verdict=ONLY_THIS))
                    continue
                used.add(ref.name)
                matched_parts[outdir].append((part, ref))
                rows.append({"pending": (part, ref)})  # once the family's size is known
            for ref in theirs:
                if ref.name not in used:
                    row = row_of("across", None, ref, reference=first, verdict=ONLY_FIRST)
                    rows.append(row | {"folder": outdir})
    # Every folder's rows against the first are one family: their intervals hold together at
    # 95 % (Bonferroni), so that some A/A row is called different at most 5 % of the time.
    family = sum(len(m) for m in matched_parts.values())
    rows = [
        across_row(*r["pending"], first, min_difference, family) if "pending" in r else r
        for r in rows
    ]
    if not reference:
        for outdir in outdirs[1:]:
            mine = [r for r in rows if r["folder"] == outdir]
            if mine and all(r["verdict"] in (ONLY_THIS, ONLY_FIRST) for r in mine):
                # Nothing to compare: every row would say "not in this folder" and the exit
                # status 0 would read as "no regression".
                ran = sorted({f"{r['workload']}/{r['target'] or r['reference_target']}"
                              for r in mine})  # fmt: skip
                raise ConfigError(
                    f"compare: {outdir} and {first} share no workload and target (their runs: "
                    f"{', '.join(ran)}); expected folders of the same workloads' runs"
                )
    if control:
        controlled = sum(
            1 for m in matched_parts.values() for part, _ in m if part.target != control
        )
        for outdir in outdirs[1:]:
            rows += _controlled(outdir, first, matched_parts[outdir], parts, splits, control,
                                min_difference, controlled)  # fmt: skip
    within = []
    for (outdir, workload), ps in parts.items():
        names = [p.name for p in ps]
        if len(names) < 2:
            continue
        base, note = base_of(outdir, workload, names, splits[outdir, workload])
        notes += [note] if note else []
        table = pd.concat([p.rows for p in ps])
        try:
            paired = compare.comparison_table(table, base, min_difference, order=names)
        except ValueError as exc:
            raise DataError(f"compare: {outdir}, workload {workload}: {exc}") from None
        within.append((outdir, workload, base, paired))
        for _, r in paired.iloc[1:].iterrows():
            part = next(p for p in ps if p.name == r["target"])
            rows.append(
                row_of(
                    "within", part, next(p for p in ps if p.name == base),
                    reference=outdir, pairing=r["pairing"], ratio=r["throughput_ratio"],
                    ratio_low=r["throughput_low"], ratio_high=r["throughput_high"],
                    verdict=r["throughput_verdict"], threshold=min_difference,
                    time_to_accuracy_ratio=r["time_to_accuracy_ratio"],
                    time_to_accuracy_low=r["time_to_accuracy_low"],
                    time_to_accuracy_high=r["time_to_accuracy_high"],
                    time_to_accuracy_verdict=r["time_to_accuracy_verdict"],
                    flagged_runs=int(r["flagged_runs"]),
                )
            )  # fmt: skip
    reference = reference or {}
    matched = set()
    for (_, workload), ps in parts.items():
        for part in ps:
            # A split part's own entry (<target>@<machine>), else its target's.
            key = next(
                (k for k in ((workload, f"{part.target}@{part.machine}"), (workload, part.target))
                 if k in reference),
                None,
            )  # fmt: skip
            if key is not None and "@" not in key[1] and not reference[key].any_machine:
                # A plain name would judge any day's CPU against one machine's speed: a new
                # CPU would read as a regression. Binding it is the file's to say.
                raise ConfigError(
                    f"{reference_name}: {_entry_path(key)} names no machine and met runs "
                    f"on {part.machine}; expected {key[1]}@{part.machine} (bound to the "
                    "machine the speed was measured on), or `machines: any` in the file to "
                    "judge every machine's runs against it"
                )
            if key is not None:
                matched.add(key)
                row = reference_row(part, reference[key], reference_name)
                # The entry that judged it: bound to one machine (<target>@<machine>) or not.
                rows.append(row | {"reference_target": key[1]})
    if reference and not matched:
        # Every entry misses (a misspelt target): "no run" rows and exit status 0, so a
        # nightly job against this reference could never fail.
        ran = sorted({f"{w}/{p.name}" for (_, w), ps in parts.items() for p in ps})
        raise ConfigError(
            f"{reference_name}: no entry matches a run of the folders (its entries: "
            f"{', '.join(f'{w}/{t}' for w, t in reference)}; the folders' runs: "
            f"{', '.join(ran)}); expected targets (or workloads and targets) as the folders "
            "name them"
        )
    for (workload, target), expected in reference.items():
        if (workload, target) not in matched:
            rows.append(
                row_of("reference", None, None)
                | {"workload": workload, "target": target, "reference_target": target,
                   "reference": reference_name,
                   "verdict": NO_RUN,
                   "reference_images_per_s": expected.images_per_s,
                   "threshold": expected.tolerance}
            )  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    return Comparison(
        list(outdirs), table, within, notes, min_difference, reference_name, control, parts
    )


def _controlled(
    outdir: str,
    first: str,
    matched: list[tuple[Part, Part]],
    parts: dict[tuple[str, str], list[Part]],
    splits: dict,
    control: str,
    min_difference: float,
    family: int,
) -> list[dict]:
    """The controlled rows of ``outdir`` against ``first``: one per matched (part, ref) other
    than the control's own, their intervals one of ``family`` (every folder's controlled
    rows) that hold together at 95 %
    (:func:`embryo_bench.reporting.compare.simultaneous_confidence`). Each side's control is
    the control's part on that side's machine, else the part that stands for it there.

    Raises:
        ConfigError: a folder ran no ``control`` in a workload both folders ran.
    """

    def controls(folder: str, workload: str) -> list[Part]:
        found = [p for p in parts[folder, workload] if p.target == control]
        if not found:
            raise ConfigError(
                f"compare --control {control}: {folder}, workload {workload} has no run of "
                f"{control}; expected the control target in every folder's runs of each "
                "workload compared"
            )
        return found

    def control_of(part: Part) -> Part:
        mine = controls(part.folder, part.workload)
        stands = splits[part.folder, part.workload].name(control)
        return next(
            (p for p in mine if p.machine == part.machine),
            next((p for p in mine if p.name == stands), mine[0]),
        )

    for workload in dict.fromkeys(part.workload for part, _ in matched):
        controls(outdir, workload)  # raises where a folder lacks the control
        controls(first, workload)
    pairs = [(part, ref) for part, ref in matched if part.target != control]
    level = compare.simultaneous_confidence(family)
    return [
        controlled_row(part, ref, (control_of(part), control_of(ref)), first, min_difference,
                       level)
        for part, ref in pairs
    ]  # fmt: skip


def ratio_words(row, prefix: str = "") -> str:
    """A row's ratio as a person reads it: "0.900 [0.880, 0.921]" where its verdict has an
    interval, the ratio alone where it has none, "" without a ratio."""
    ratio = number_text(row[f"{prefix}ratio"], ".3f")
    if not ratio:
        return ""
    if compare.direction(row[f"{prefix}verdict"]) not in CALLED:
        return ratio
    return f"{ratio} [{number_text(row[f'{prefix}low' if prefix else 'ratio_low'], '.3f')}, " + (
        f"{number_text(row[f'{prefix}high' if prefix else 'ratio_high'], '.3f')}]"
    )


def _machines(row) -> str:
    """ "epyc-...-aa8a / same": the row's machine and the first folder's side's."""
    mine, theirs = row["machine"] or "-", row["reference_machine"]
    return f"{mine} / same" if row["machine"] == theirs else f"{mine} / {theirs or '-'}"


def _sides(row) -> str:
    """ "3 / 5": the row's runs and the other side's."""
    return f"{int(row['runs'])} / {int(row['reference_runs'])}"


def markdown(result: Comparison) -> str:
    """The comparison as Markdown: what was compared and how, one table per other folder
    against the first, each folder's own rounds, the reference file's table, and the
    regressions found."""
    t, first = result.table, result.folders[0]
    md = result.min_difference
    across = t[(t["section"] == "across") & ~t["verdict"].isin([ONLY_THIS, ONLY_FIRST])]
    lines = [
        "# embryo-bench compare",
        "",
        f"Reference point: `{first}` (the first folder). Other folders' targets against it: "
        "the ratio of the geometric means of images/s (above 1: faster), with Welch's t "
        "interval on the logarithms, **unpaired** (runs in different folders share no "
        "rounds); time to accuracy likewise, as a speed (its intervals at 95 % each). "
        + (compare.family_note(len(across), "throughput") or "The interval is at 95 %.")
        + " "
        + compare.verdict_rule(md, "--min-difference", "runs on each side")
        + " A regression: at least that much slower relative to a control or against a "
        "reference, never in these plain rows. Runs of one target on different "
        "machines are never pooled: such a target is split, `<target>@<machine>`."
        + (
            ""
            if result.control or len(result.folders) < 2
            else " Two folders are two sessions: a speed shared by all of a session's runs "
            "(the day's CPU, the host's load, the invocation's drift) is in these ratios and "
            "not in their intervals, so an unchanged target can read as a slowdown "
            "(simulated with a 3-6 % session effect: up to 66 % of such pairs at 10 runs a "
            "side, docs/results.md); `--control TARGET` (a target run unchanged in every "
            "folder) divides it out, and a reference written from five or more sessions "
            "holds it in its tolerance."
        ),
    ]
    for outdir in result.folders[1:]:
        rows = t[(t["section"] == "across") & (t["folder"] == outdir)]
        shown = pd.DataFrame(
            {
                "workload": rows["workload"],
                "target": [r["target"] or r["reference_target"] for _, r in rows.iterrows()],
                "machine (this / first)": [_machines(r) for _, r in rows.iterrows()],
                "runs (this / first)": [_sides(r) for _, r in rows.iterrows()],
                "images/s (this / first)": [
                    f"{number_text(r['images_per_s'])} / {number_text(r['reference_images_per_s'])}"
                    for _, r in rows.iterrows()
                ],
                "ratio [interval]": [ratio_words(r) for _, r in rows.iterrows()],
                # About these two sessions' runs: the day's own speed is in it.
                "verdict (these two sessions)": rows["verdict"],
                # a flag is a warning, not a gate: counted beside
                "flagged runs (this / first)": [
                    f"{r['flagged_runs'] or 0} / {r['reference_flagged_runs'] or 0}"
                    for _, r in rows.iterrows()
                ],
                "cost a run, USD (this / first)": [
                    f"{usd_text(r['cost_usd']) or '-'} / {usd_text(r['reference_cost_usd']) or '-'}"
                    for _, r in rows.iterrows()
                ],
                "time-to-accuracy ratio": [
                    " ".join(
                        w
                        for w in (
                            ratio_words(r, "time_to_accuracy_"),
                            r["time_to_accuracy_verdict"],
                        )
                        if w
                    )
                    for _, r in rows.iterrows()
                ],
                "differs from the first folder's runs": rows["differs"],
            }
        )
        lines += ["", f"## `{outdir}` against `{first}`", ""]
        lines += [
            "Shown, not a regression check: each folder's own speed that day is in these "
            "ratios"
            + (f" (`--control {result.control}` below divides it out)." if result.control
               else "."),
            "",
        ]  # fmt: skip
        lines.append(shown.to_markdown(index=False) if len(shown) else "Nothing in common.")
    for outdir in result.folders[1:] if result.control else []:
        rows = t[(t["section"] == "controlled") & (t["folder"] == outdir)]
        shown = pd.DataFrame(
            {
                "workload": rows["workload"],
                "target": rows["target"],
                "machine (this / first)": [_machines(r) for _, r in rows.iterrows()],
                "rounds with the control (this / first)": [_sides(r) for _, r in rows.iterrows()],
                "ratio of ratios [interval]": [ratio_words(r) for _, r in rows.iterrows()],
                "verdict": rows["verdict"],
                "differs from the first folder's runs": rows["differs"],
            }
        )
        lines += [
            "",
            f"## `{outdir}` against `{first}`, relative to `{result.control}`",
            "",
            f"Each target's images/s over `{result.control}`'s in the same round, in each "
            "folder; this folder's geometric mean of those ratios over the first's, with "
            "Welch's t interval on the logarithms: a speed shared by all of one session's "
            "runs (the day's CPU, the host's load) divides out, and a change that slows "
            f"`{result.control}` as much as the target is not seen. These rows, not the "
            "plain ones above, are the regression check. "
            + (
                compare.family_note(int((t["section"] == "controlled").sum()), "ratio-of-ratios")
                or "The interval is at 95 %."
            ),
            "",
            shown.to_markdown(index=False) if len(shown) else "Nothing in common.",
        ]
    if result.within:
        lines += [
            "",
            "## Each folder's own rounds",
            "",
            "Paired within the folder's rounds against its compare.base (its figures' "
            "comparison): not a regression check.",
        ]
        for outdir, workload, base, paired in result.within:
            lines += ["", f"### `{outdir}`, workload {workload}, base {base}", ""]
            lines.append(readable_comparison(paired).to_markdown(index=False))
            if note := comparison_note(paired):
                lines += ["", note]
    rows = t[t["section"] == "reference"]
    if len(rows):
        shown = pd.DataFrame(
            {
                "folder": rows["folder"],
                "workload": rows["workload"],
                "target": rows["target"],
                "machine": rows["machine"],
                "entry": [
                    e if "@" in str(e) else f"{e} (any machine)" if e else ""
                    for e in rows["reference_target"]
                ],
                "runs": rows["runs"],
                "flagged runs": rows["flagged_runs"],
                "images/s": rows["images_per_s"].map(number_text),
                "expected": rows["reference_images_per_s"].map(number_text),
                "tolerance": rows["threshold"].map(lambda v: f"{v:.0%}"),
                "ratio [95 % interval]": [ratio_words(r) for _, r in rows.iterrows()],
                "verdict": rows["verdict"],
            }
        )
        lines += [
            "",
            f"## Against the reference `{result.reference}`",
            "",
            "Each folder's runs over the expected images/s: the geometric mean with a 95 % t "
            "interval on the logarithms; a regression where the whole interval lies below "
            "1 / (1 + tolerance). An entry that names no machine holds for every machine's "
            "runs of its target, so a day's other CPU is judged against it too; "
            "`--write-reference` writes entries bound to the machine they were measured on.",
            "",
            shown.to_markdown(index=False),
        ]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    reg = result.regressions
    lines += ["", "## Regressions", ""]
    if len(reg):
        lines.append("\n".join(f"- {line}" for line in regression_lines(result)))
    elif result.checked:
        lines.append("None measured (exit status 0).")
    else:
        lines.append(NOT_CHECKED + " (exit status 0).")
    return "\n".join(lines) + "\n"


def regression_lines(result: Comparison) -> list[str]:
    """One sentence per regression (:attr:`Comparison.regressions`), e.g. "out-b, workload
    paper, host-1cpu: 0.900 [0.880, 0.921] of out-a's images/s (slower)"."""
    out = []
    for _, r in result.regressions.iterrows():
        against = (
            f"the reference's {number_text(r['reference_images_per_s'])} images/s"
            if r["section"] == "reference"
            else f"{r['reference']}'s {r['reference_target']}"
            + (f", {r['pairing']}" if r["section"] == "controlled" else "")
        )
        out.append(
            f"{r['folder']}, workload {r['workload']}, {r['target']}: {ratio_words(r)} of "
            f"{against} (slower by more than {r['threshold']:.0%})"
        )
    return out
