"""The studies' registry and the loader of the numbers they published: every study's file is
read and checked, and a damaged file is named in one line."""

import hashlib
import shutil

import numpy as np
import pytest
import yaml
from conftest import REPO
from scipy import stats
from study_helpers import study_runs

from embryo_bench.errors import DataError
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, HOLDS, Claim, paired_workload_ratio
from embryo_bench.studies import registry

HEAD = ",".join(pub.COLUMNS)
GOOD = 'K80,mnist-mlp,epoch_seconds,3.5,s,"batch_size=128;threads=8",002 table 1,true,\n'
#: GOOD with its settings in another order: the same number.
REORDERED = GOOD.replace('"batch_size=128;threads=8"', "threads=8;batch_size=128")


def test_the_registry_names_the_paper_and_the_four_studies_as_the_docs_cite_them():
    known = pub.studies()
    # The project's own five first, in the order of their numbers (a study added later
    # follows them: the registry finds it by its folder).
    numbers = [s.number for s in known.values()]
    assert numbers[:5] == ["000", "001", "002", "003", "004"] and numbers == sorted(set(numbers))
    assert list(known)[:5] == ["paper", "datamadness", "minimaxir", "wu", "v100-blog"]
    assert known["paper"].claims == "embryo_bench.studies.paper.claims"
    assert known["v100-blog"].path == registry.FOLDER / "v100_blog" / "numbers.csv"
    # Each study's short name is a row of the list of sources, with its number.
    listed = (REPO / "docs" / "studies" / "README.md").read_text()
    for study in known.values():
        assert f"| {study.number} | {study.seed} |" in listed, study.name


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
        (GOOD.replace("3.5", "-3.5"), "value -3.5 for epoch_seconds: expected above 0 (s)"),
        (GOOD.replace("3.5", "0"), "value 0 for epoch_seconds: expected above 0 (s)"),
        (GOOD.replace("epoch_seconds,3.5,s", "test_accuracy,-0.1,fraction"),
         "value -0.1 for test_accuracy: expected at least 0 and at most 1 (fraction)"),
        (GOOD.replace("epoch_seconds,3.5,s", "test_accuracy,99.2,fraction"),
         "value 99.2 for test_accuracy: expected at least 0 and at most 1 (fraction)"),
        (GOOD.replace("epoch_seconds,3.5,s", "vcpus,-8,count"),
         "value -8 for vcpus: expected at least 0 (count)"),
        (GOOD, "the same row as line 2"),
        (GOOD.replace("3.5", "3.9"), "a second used number for epoch_seconds of K80 with these "
                                     "settings (line 2)"),
        (REORDERED.replace("3.5", "3.9"), "a second used number for epoch_seconds of K80"),
    ],
)  # fmt: skip
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


def test_a_workload_ratio_is_paired_within_the_rounds_on_one_target():
    # The machine's speed halves from round to round; workload b takes 0.70, 0.72 and 0.68 of
    # a's time in each round. Another target's run and a run merged from another folder (in
    # round 1 beside b's own: counted, it would be two runs in one round) do not enter.
    base, ratios = [10.0, 20.0, 40.0], [0.70, 0.72, 0.68]
    rows = [dict(workload="a", target="t", repeat=k, steady_epoch_s=s)
            for k, s in enumerate(base, 1)]  # fmt: skip
    rows += [dict(workload="b", target="t", repeat=k, steady_epoch_s=s * r)
             for k, (s, r) in enumerate(zip(base, ratios, strict=True), 1)]  # fmt: skip
    rows += [dict(workload="b", target="u", repeat=1, steady_epoch_s=1.0),
             dict(workload="b", target="t", repeat=1, steady_epoch_s=1.0, merged=True)]  # fmt: skip
    got = paired_workload_ratio(study_runs(*rows), "t", "b", "a", "steady_epoch_s")
    logs = np.log(ratios)
    half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / np.sqrt(3)
    assert got.pairs == 3
    assert got.ratio == pytest.approx(np.exp(logs.mean()))
    assert (got.low, got.high) == pytest.approx(np.exp([logs.mean() - half, logs.mean() + half]))
    assert got.text == f"x{got.ratio:.3f} [{got.low:.3f}, {got.high:.3f}], 3 rounds"
    # One round: no interval, and the text says so; no common round or no run: None.
    one = paired_workload_ratio(study_runs(*rows[:1], rows[3]), "t", "b", "a", "steady_epoch_s")
    assert (one.pairs, one.text) == (1, "x0.700, 1 round, no interval")
    apart = study_runs(rows[0], {**rows[4], "repeat": 9})
    assert paired_workload_ratio(apart, "t", "b", "a", "steady_epoch_s") is None
    assert paired_workload_ratio(study_runs(*rows), "u", "b", "a", "steady_epoch_s") is None
    assert paired_workload_ratio(study_runs(*rows), "t", "b", "a", "images_per_s") is None
    with pytest.raises(
        ValueError, match="workload 'b' has more than one run on target 't' in round 1"
    ):
        paired_workload_ratio(study_runs(*rows, rows[3]), "t", "b", "a", "steady_epoch_s")


def test_a_numbers_file_may_keep_a_second_number_not_used(tmp_path):
    """The study printed two that disagree: both kept, one used (two used are refused)."""
    path = tmp_path / "n.csv"
    path.write_text(HEAD + "\n" + GOOD + GOOD.replace("3.5", "3.9").replace("true", "false"))
    assert pub.load_numbers("minimaxir", path)["used"].tolist() == [True, False]


def test_the_recorded_sha256_is_each_numbers_file_as_it_is():
    """Each study.yaml records its numbers file as it is in the repository."""
    for study in pub.studies().values():
        assert study.path == study.folder / "numbers.csv" and study.path.is_file()
        assert study.sha256 == hashlib.sha256(study.path.read_bytes()).hexdigest(), study.name
        pub.check_numbers_file(study)


def _copy(tmp_path):
    """Every study's entry, numbers file and claims module, copied to edit: a studies folder
    of one's own."""
    folder = tmp_path / "studies"
    for study in pub.studies().values():
        own = folder / study.folder.name
        own.mkdir(parents=True)
        shutil.copy(study.path, own / study.numbers)
        shutil.copy(study.registry, own / registry.STUDY_FILE)
        shutil.copy(study.claims_path, own / registry.CLAIMS)
    return folder


def _edit(text: str, how: str) -> str:
    lines = text.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if ",epoch_seconds," in line and ",true," in line)
    if how == "edited":
        value = lines[row].split(",")[3]
        lines[row] = lines[row].replace(f",{value},", f",{float(value) * 1.5},", 1)
    elif how == "deleted":
        del lines[row]
    elif how == "duplicated":
        lines.insert(row, lines[row])
    elif how == "negative":
        value = lines[row].split(",")[3]
        lines[row] = lines[row].replace(f",{value},", f",-{value},", 1)
    elif how == "a row added":
        lines.append(lines[row].replace(",true,", ",false,", 1))
    return "".join(lines)


EDITS = ["edited", "deleted", "duplicated", "negative", "a row added"]
#: Every study whose numbers hold a used epoch time (the row the edits change): all but the
#: paper's, whose file holds its systems only.
TIMED = [
    name
    for name, study in registry.studies().items()
    if any(",epoch_seconds," in line and ",true," in line for line in study.path.open())
]


def test_every_study_with_times_is_edited():
    assert set(TIMED) == set(registry.studies()) - {"paper"}


@pytest.mark.parametrize("how", EDITS)
@pytest.mark.parametrize("name", TIMED)
def test_an_edited_copy_of_a_studys_numbers_is_refused_in_one_line(tmp_path, capsys, name, how):
    """An edited, deleted, duplicated or negated row (or one more) changed or dropped a
    claim without a word; the file's recorded sha256 refuses it, where it is read and when
    a plan names the study."""
    folder = _copy(tmp_path)
    study = pub.studies(folder)[name]
    assert pub.load_numbers(study).equals(pub.load_numbers(name))  # the copy reads as is
    study.path.write_text(_edit(study.path.read_text(), how))
    with pytest.raises(pub.DataError) as err:
        pub.load_numbers(study)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{study.path}: sha256 {pub.sha256_of(study.path)}, not the ")
    assert f"{study.sha256} that {study.registry} records for it" in message
    assert study.registry == folder / study.folder.name / "study.yaml"
    # The same edit in a file of one's own, no recorded sum: the rows' own checks.
    if how in ("duplicated", "negative"):
        with pytest.raises(pub.DataError, match="the same row as|expected above 0"):
            pub.load_numbers(name, study.path)


def test_a_plan_naming_a_study_whose_numbers_were_changed_is_refused(tmp_path, monkeypatch):
    from embryo_bench.planning import study

    folder = _copy(tmp_path)
    changed = pub.studies(folder)
    monkeypatch.setattr(pub, "studies", lambda path=None: changed)
    study.check_study("wu")
    changed["wu"].path.write_text(_edit(changed["wu"].path.read_text(), "deleted"))
    with pytest.raises(pub.DataError, match=r"wu/numbers\.csv: sha256 [0-9a-f]{64}, not the "):
        study.check_study("wu")


def test_a_registry_without_a_sha256_is_refused(tmp_path):
    folder = _copy(tmp_path)
    entry = folder / "wu" / "study.yaml"
    data = yaml.safe_load(entry.read_text())
    del data["sha256"]
    entry.write_text(yaml.safe_dump(data))
    with pytest.raises(pub.DataError, match=r"wu/study\.yaml: no sha256; expected the fields"):
        pub.studies(folder)
    data["sha256"] = "abc"
    entry.write_text(yaml.safe_dump(data))
    with pytest.raises(pub.DataError, match="sha256 'abc'; expected the 64 hex"):
        pub.studies(folder)


@pytest.mark.parametrize("text", ["[]\n", "", "3\n"])
def test_a_study_entry_that_is_no_mapping_is_one_line(tmp_path, text):
    """An empty list, nothing or a number for an entry: one line naming the file."""
    folder = _copy(tmp_path)
    entry = folder / "wu" / "study.yaml"
    entry.write_text(text)
    with pytest.raises(pub.DataError) as err:
        pub.studies(folder)
    assert str(err.value).startswith(f"{entry}: ") and "\n" not in str(err.value)
    assert "expected a mapping of number, seed" in str(err.value)


def test_the_registry_finds_a_new_study_by_its_folder_and_refuses_a_bad_one(tmp_path):
    """A folder with a study.yaml is a study: no list names it. Two studies of one number, a
    folder named otherwise than its study, a field unknown or a study with a configuration
    but no summary are refused in one line; a folder without studies is one line too."""
    folder = _copy(tmp_path)
    new = folder / "a_new_one"
    new.mkdir()
    entry = yaml.safe_load((folder / "wu" / "study.yaml").read_text())
    last = max(int(s.number) for s in pub.studies().values())
    number, other = f"{last + 1:03d}", f"{last + 2:03d}"
    (new / "study.yaml").write_text(yaml.safe_dump({**entry, "number": number}))
    found = registry.studies(folder)
    assert list(found)[-1] == "a-new-one" and found["a-new-one"].number == number
    assert found["a-new-one"].claims == "embryo_bench.studies.a_new_one.claims"
    assert found["a-new-one"].path == new / "numbers.csv"

    def refused(data: dict, match: str, name: str = "a_new_one") -> None:
        shutil.rmtree(new, ignore_errors=True)
        (folder / name).mkdir()
        (folder / name / "study.yaml").write_text(yaml.safe_dump(data))
        (folder / name / "config.yaml").write_text("outdir: results/x\n")
        with pytest.raises(pub.DataError, match=match) as err:
            registry.studies(folder)
        assert "\n" not in str(err.value)
        shutil.rmtree(folder / name)

    refused(entry, r"number 003 is (wu|a-new-one)'s too")
    refused({**entry, "number": other, "rank": "1"}, r"study\.yaml: unknown rank")
    refused({**entry, "number": other, "number_of": "x"}, r"unknown number_of")
    refused({k: v for k, v in entry.items() if k != "summary"} | {"number": other}, "no summary")
    refused({**entry, "number": "6"}, r"number '6'; expected three digits")
    refused({**entry, "number": 6}, r"number not text")
    refused({**entry, "number": other}, r"a study's folder is named by the study", "New")
    with pytest.raises(pub.DataError, match="no study .* found"):
        registry.studies(tmp_path / "empty")


@pytest.mark.parametrize(
    "row, message",
    [
        ("P100,m,relative_time,0.5,x base,,s,true,", "x base without a base setting"),
        ("P100,m,relative_time,0.5,x base,base=K40,s,true,", "base=K40 is not a system of"),
        ("K80,m,relative_time,1.2,x base,base=K80,s,true,", "K80 relative to itself is 1, not 1.2"),
        ("P100,m,epoch_seconds,2,s,base=K80,s,true,", "base=K80 on a number in s"),
    ],
)
def test_a_relative_number_names_its_base(tmp_path, row, message):
    """One study's relative numbers can be against different systems (DATAmadness's Ryzen
    over the RTX and the RTX over the Ryzen, minimaxir's two K80s): each names its own."""
    path = tmp_path / "numbers.csv"
    path.write_text(f"{HEAD}\n{GOOD}P100,m,relative_time,0.5,x base,base=K80,s,true,\n{row}\n")
    with pytest.raises(DataError, match=message):
        pub.load_numbers("datamadness", path)


def test_each_published_relative_number_is_shown_with_its_own_base():
    """DATAmadness published the Ryzen's time over the RTX's (6) and the RTX's over the
    Ryzen's (0.15): one column, two bases, each named beside its number; minimaxir's July
    systems are against the July K80, never the November one (the study's base_system)."""
    from embryo_bench.reporting.study_numbers import theirs_table

    studies = registry.studies()
    dm = theirs_table(pub.load_numbers("datamadness"), studies["datamadness"]).set_index("system")
    assert dm.loc["Ryzen 2700X", "time_relative"] == 6
    assert dm.loc["Ryzen 2700X", "relative_to"] == "RTX 2080"
    assert dm.loc["RTX 2080", "relative_to"] == "Ryzen 2700X"
    mm = theirs_table(pub.load_numbers("minimaxir"), studies["minimaxir"])
    july = mm[mm["system"].str.endswith("(2017-07)") & mm["time_relative"].notna()]
    assert len(july) and set(july["relative_to"]) == {"K80 (2017-07)"}
    november = mm[mm["system"].str.endswith("(2017-11)") & mm["time_relative"].notna()]
    assert set(november["relative_to"]) == {"K80 (2017-11)"}
    # One row per system, workload and settings: the base joined its measurement's row.
    assert not mm.duplicated(["system", "workload", "settings"]).any()
