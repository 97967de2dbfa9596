"""benchmarks/bench_sessions.py, the real A/A across workflow invocations: its rows are
compare's (in rounds, across plain, across relative to the control) and it counts a
faster or slower verdict as a false call."""

from __future__ import annotations

from test_compare_command import OTHER_NOISE, result_folder
from workflow_helpers import load_benchmark

from embryo_bench.reporting import crossfolder

bench = load_benchmark("bench_sessions")


def test_its_rows_are_compares_and_a_slower_session_is_a_false_call_only_in_the_plain_rows(
    tmp_path,
):
    a = result_folder(tmp_path / "session-1", 100.0, workload=False)
    b = result_folder(tmp_path / "session-2", 90.0, OTHER_NOISE, workload=False)
    result = crossfolder.compare_folders([str(a), str(b)], 0.05, control="host-1cpu")
    rows = {(r["kind"], r["session"], r["copy"]): r for r in bench.rows_of(result)}
    assert set(rows) == {
        ("in rounds", str(a), "host-2cpu"),
        ("in rounds", str(b), "host-2cpu"),
        ("across, plain", str(b), "host-1cpu"),
        ("across, plain", str(b), "host-2cpu"),
        ("across, relative to the control", str(b), "host-2cpu"),
    }
    # host-2cpu is 1.6x host-1cpu in both sessions: "faster" in rounds (no A/A there); the
    # second session is 10 % slower throughout: called in the plain rows, divided out of
    # the controlled one.
    assert rows["in rounds", str(a), "host-2cpu"]["called"]
    assert rows["across, plain", str(b), "host-1cpu"]["called"]
    assert rows["across, plain", str(b), "host-1cpu"]["verdict"] == "at least 5 % slower"
    assert not rows["across, relative to the control", str(b), "host-2cpu"]["called"]


def test_fewer_than_two_sessions_is_one_line(tmp_path, capsys):
    assert bench.main(["--sessions", "1", "--out", str(tmp_path)]) == 2
    assert "--sessions: expected 2 or more, got 1" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_neighbour_runs_beside_each_session_and_is_stopped_whatever_it_returns(
    tmp_path, monkeypatch
):
    started, stopped = [], []

    class Neighbour:
        def __init__(self, args):
            started.append(args)

        def terminate(self):
            stopped.append(True)

        def wait(self, timeout=None):
            return 0

    def failing_session(cmd, log):
        assert len(started) == len(stopped) + 1  # the neighbour runs while the session does
        return 1, 0.0

    monkeypatch.setattr(bench.subprocess, "Popen", Neighbour)
    monkeypatch.setattr(bench, "call", failing_session)
    assert bench.main(["--out", str(tmp_path), "--neighbour", "0"]) == 1
    (args,) = started
    assert args[1].endswith("noisy_neighbour.py") and args[2:] == ["--cpus", "0", "--seed", "1"]
    assert stopped == [True]
