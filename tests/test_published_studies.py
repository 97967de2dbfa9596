"""The studies' registry and the loader of the numbers they published (issue 34, item 2):
every study's file is read and checked, and a damaged file is named in one line."""

import pytest

from embryo_bench.errors import DataError
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, HOLDS, Claim

HEAD = ",".join(pub.COLUMNS)
GOOD = 'K80,mnist-mlp,epoch_seconds,3.5,s,"batch_size=128;threads=8",002 table 1,true,\n'


def test_the_registry_names_the_four_studies_with_their_seed_files():
    known = pub.studies()
    assert [s.number for s in known.values()] == ["001", "002", "003", "004"]
    for study in known.values():
        assert study.seed.startswith(study.number + "_")


def test_a_numbers_file_is_read_with_its_types(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text(HEAD + "\n" + GOOD)
    table = pub.load_numbers("minimaxir", path)
    assert table["value"].tolist() == [3.5] and table["used"].tolist() == [True]
    assert pub.parse_settings(table["settings"][0]) == {"batch_size": "128", "threads": "8"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (GOOD.replace("3.5", "fast"), "value 'fast' is not a finite number"),
        (GOOD.replace("epoch_seconds", "speed"), "metric 'speed'"),
        (GOOD.replace(",s,", ",min,"), "unit 'min' for epoch_seconds; expected 's'"),
        (GOOD.replace("threads=8", "cores"), "'cores' is not key=value"),
        (GOOD.replace("002 table 1", ""), "no source"),
        (GOOD.replace("true", "yes"), "used 'yes'"),
    ],
)
def test_a_bad_number_is_named_with_its_file_and_line(tmp_path, line, expected):
    path = tmp_path / "n.csv"
    path.write_text(HEAD + "\n" + GOOD + line)
    with pytest.raises(DataError, match=rf"n\.csv, line 3: .*{expected[:12]}") as err:
        pub.load_numbers("minimaxir", path)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_other_columns_and_an_unknown_study_are_refused(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text("system,value\nK80,1\n")
    with pytest.raises(DataError, match="columns"):
        pub.load_numbers("minimaxir", path)
    with pytest.raises(DataError, match="study 'nope': expected one of"):
        pub.load_numbers("nope")


def test_a_claim_that_cannot_be_checked_says_why():
    claim = Claim("GPUs are faster", CANNOT, "2 s", "-", "004", why="no GPU")
    assert claim.verdict_text == "cannot be checked here (no GPU)"
    with pytest.raises(ValueError):
        Claim("x", CANNOT, "", "", "s")
    with pytest.raises(ValueError):
        Claim("x", HOLDS, "", "", "s", why="no GPU")
    with pytest.raises(ValueError):
        Claim("x", "probably", "", "", "s")
