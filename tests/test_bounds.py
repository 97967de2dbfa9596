"""Sizes and resources bounded before work starts (issue 31, item 9): `embryo-bench
synthesize` refuses a database that cannot fit before writing, a full disk while generating
is one line and keeps nothing, and the PNG bytes it estimates are a lower bound."""

from __future__ import annotations

import pytest

from embryo_bench import cli, synthetic


@pytest.mark.parametrize("size", [96, 240])
def test_the_png_bytes_are_a_lower_bound_of_the_generator_s(size, tmp_path):
    info = synthetic.generate_db(tmp_path / "db", embryos=5, frames_per_embryo=9, frame_size=size)
    frames = sum(info["frames_per_class"].values())
    written = sum(p.stat().st_size for p in (tmp_path / "db").rglob("*.png"))
    estimate = synthetic.db_bytes(frames, size)
    assert estimate <= written < 1.25 * estimate  # a bound, and not a loose one


def test_synthesize_refuses_before_writing_what_cannot_fit(small_device, capsys):
    args = ["synthesize", "--out", str(small_device / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "480"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"embryo-bench: error: {small_device}/db: the synthetic database would take at least "
        "6.3 MiB (45 frames of 480x480 px"
    )
    assert list(small_device.iterdir()) == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_while_generating_is_one_line_and_keeps_nothing(
    small_device, capsys, monkeypatch, jobs
):
    """The free-space check passed (its estimate made 0 here), then the device fills up:
    one line (66 lines of traceback before, with --jobs 2), and no database folder left."""
    monkeypatch.setattr(synthetic, "PNG_BYTES_PER_PX", 0)
    args = ["synthesize", "--out", str(small_device / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "480", "--jobs", jobs]
    args += ["--info", str(small_device / "info.json")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"embryo-bench: error: {small_device}/db: the device filled up while writing 45 "
        "synthetic frames of 480x480 px (No space left on device;"
    )
    assert "with nothing of it kept" in err
    assert list(small_device.iterdir()) == []


def test_synthesize_writes_the_same_database_through_its_staging_folder(tmp_path):
    args = ["synthesize", "--out", str(tmp_path / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "16", "--trailing-separator"]
    assert cli.main(args) == 0
    synthetic.generate_db(
        tmp_path / "direct", embryos=5, frames_per_embryo=9, frame_size=16, trailing_separator=True
    )
    ours = sorted(p.relative_to(tmp_path / "db") for p in (tmp_path / "db").rglob("*"))
    direct = sorted(p.relative_to(tmp_path / "direct") for p in (tmp_path / "direct").rglob("*"))
    assert ours == direct
    for rel in direct:
        if (tmp_path / "direct" / rel).is_file():
            assert (tmp_path / "db" / rel).read_bytes() == (tmp_path / "direct" / rel).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "direct"]  # no staging left
