"""What every study's claim check returns (issue 34, item 3).

A study's module (``embryo_bench.reporting.claims.<name>``, named by ``studies.yaml``) has

    def claims(published: pandas.DataFrame, ours: pandas.DataFrame) -> list[Claim]

``published`` is :func:`embryo_bench.published.studies.load_numbers` of the study; ``ours``
has one row per workload and target of this configuration's runs, with the columns of
``embryo_bench.reporting.study.OURS_COLUMNS``. A claim our machines cannot test (it is about
a GPU, or its workload or target did not run) is returned with :data:`CANNOT`, never left
out, and its ``ours`` says what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

HOLDS = "holds here"
DOES_NOT_HOLD = "does not hold here"
CANNOT = "cannot be checked here"
#: The verdicts, as the tables print them.
VERDICTS = (HOLDS, DOES_NOT_HOLD, CANNOT)


@dataclass(frozen=True)
class Claim:
    """One headline claim of a study and its verdict on our runs.

    Attributes:
        claim: the claim, in a few words ("the MNIST MLP is cheapest on CPUs").
        verdict: one of :data:`VERDICTS`; :data:`CANNOT` with why in ``ours`` (e.g.
            "cannot be checked here (no GPU)" is ``verdict`` CANNOT, ``why`` "no GPU").
        theirs: the study's numbers behind it, as text with units.
        ours: our numbers, as text with units and intervals where rounds give them.
        source: where the study makes the claim (seed file and section or table).
        why: for CANNOT, the reason ("no GPU", "the workload did not run"); else "".
    """

    claim: str
    verdict: str
    theirs: str
    ours: str
    source: str
    why: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}; expected one of {VERDICTS}")
        if (self.verdict == CANNOT) != bool(self.why):
            raise ValueError("a claim that cannot be checked says why, and only such a claim")

    @property
    def verdict_text(self) -> str:
        """The verdict as the table prints it: "cannot be checked here (no GPU)"."""
        return f"{self.verdict} ({self.why})" if self.why else self.verdict
