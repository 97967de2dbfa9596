"""benchmarks/bench_position.py: the configurations it writes, its schedule
of workflow calls, and its position and copy effects on made-up runs."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import REPO, load_benchmark  # noqa: E402

from embryo_bench.errors import EmbryoBenchError  # noqa: E402
from embryo_bench.planning.schedule import williams_rows  # noqa: E402
from embryo_bench.vocabulary.config import load_config  # noqa: E402

NAMES = ["t-a", "t-b", "t-c"]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_position")


@pytest.fixture(scope="module")
def offline():
    return yaml.safe_load((REPO / "config" / "offline.yaml").read_text())


def test_config_has_identical_copies_of_one_host_target(bench, offline, tmp_path):
    config = bench.position_config(offline, "host-1cpu", 3, 10, "shuffle", tmp_path / "shuffle")
    names = [t["name"] for t in config["targets"]]
    assert names == ["host-1cpu-a", "host-1cpu-b", "host-1cpu-c"]
    settings = [{k: v for k, v in t.items() if k != "name"} for t in config["targets"]]
    assert settings[0] == settings[1] == settings[2]
    original = next(t for t in offline["targets"] if t["name"] == "host-1cpu")
    assert {k: v for k, v in settings[0].items() if k != "description"} == {
        k: v for k, v in original.items() if k not in ("name", "description")
    }
    assert "sweeps" not in config and "workloads" not in config and "merge" not in config
    assert config["train"]["repeats"] == 10
    assert config["compare"] == {"base": "host-1cpu-a", "order": "shuffle"}
    assert config["cost"]["base_target"] == "host-1cpu-a"  # offline.yaml's host-1cpu is gone
    assert config["outdir"] == str(tmp_path / "shuffle")
    full = load_config(yaml.safe_load(yaml.safe_dump(config)))  # as written, it validates
    assert full["sweeps"] == [] and [w["name"] for w in full["workloads"]] == ["paper"]
    assert offline["train"]["repeats"] == 1 and len(offline["targets"]) == 4  # base untouched


@pytest.mark.parametrize(
    "target, copies, rounds, order, why",
    [
        ("docker-1cpu", 3, 10, "shuffle", "'docker-1cpu' is a docker target"),
        ("nope", 3, 10, "shuffle", "no target 'nope' in the configuration"),
        ("host-1cpu", 1, 10, "shuffle", "--copies: expected 2 to 26 copies, got 1"),
        ("host-1cpu", 3, 0, "shuffle", "--rounds: expected at least 1 round, got 0"),
        ("host-1cpu", 3, 10, "random", "--orders: expected alternate, shuffle, balanced"),
    ],
)
def test_config_refuses(bench, offline, tmp_path, target, copies, rounds, order, why):
    with pytest.raises(EmbryoBenchError, match=why) as info:
        bench.position_config(offline, target, copies, rounds, order, tmp_path)
    assert "\n" not in str(info.value)


def test_schedule_runs_round_k_of_every_order_before_round_k_plus_1(bench):
    assert bench.schedule(["x", "y", "z"], 3) == [
        (1, "x"), (1, "y"), (1, "z"),
        (2, "y"), (2, "z"), (2, "x"),
        (3, "z"), (3, "x"), (3, "y"),
    ]  # fmt: skip


def made_up_runs(rounds: int, effect: dict[int, float], seed: int, noise=0.005, drift=0.0):
    """Runs of NAMES in the rows of a Williams square (every copy in every position), round
    k's speed drifting by ``drift`` per round, the run at position p faster by
    ``effect[p]`` (log), log-normal noise of sd ``noise``; listed in no particular order."""
    rng = np.random.default_rng(seed)
    rows = williams_rows(len(NAMES))
    runs = []
    for k in range(1, rounds + 1):
        for p, i in enumerate(rows[(k - 1) % len(rows)], start=1):
            log = math.log(100.0) + drift * k + effect.get(p, 0.0) + rng.normal(0, noise)
            runs.append(
                {"copy": NAMES[i], "repeat": k, "images_per_s": math.exp(log),
                 "started_unix_s": 1000.0 * k + 10 * p, "ended_unix_s": None}
            )  # fmt: skip
    return runs[::-1]


def test_a_position_effect_is_found_and_is_not_a_copy_effect(bench):
    runs = made_up_runs(12, {2: math.log(1.03)}, seed=1, drift=0.05)
    result = bench.effects(runs, NAMES)
    assert result["rounds"] == 12
    middle = result["position"][1]
    assert middle["n"] == 12 and not middle["covers_0"] and middle["low"] > 0
    assert 2.0 < middle["mean_pct"] < 3.0  # +3 % against a round mean that holds it
    assert all(c["covers_0"] for c in result["copy"])
    assert result["no_position_effect"] is False


def test_no_effect_no_position_effect(bench):
    result = bench.effects(made_up_runs(12, {}, seed=2, drift=0.05), NAMES)
    assert [p["covers_0"] for p in result["position"]] == [True, True, True]
    assert result["no_position_effect"] is True


def test_positions_by_start_time_and_incomplete_rounds_left_out(bench):
    runs = [
        {"copy": "t-a", "repeat": 1, "images_per_s": 100.0, "started_unix_s": 30.0},
        {"copy": "t-b", "repeat": 1, "images_per_s": 200.0, "started_unix_s": 10.0},
        {"copy": "t-c", "repeat": 1, "images_per_s": 400.0, "started_unix_s": 20.0},
        {"copy": "t-a", "repeat": 2, "images_per_s": 100.0, "started_unix_s": 40.0},
    ]
    devs = bench.deviations(runs, NAMES)
    assert [(d["copy"], d["position"]) for d in devs] == [("t-b", 1), ("t-c", 2), ("t-a", 3)]
    assert [round(d["deviation"] / math.log(2), 9) for d in devs] == [0.0, 1.0, -1.0]
    result = bench.effects(runs, NAMES)
    assert result["rounds"] == 1 and result["no_position_effect"] is None  # one round
    assert result["position"][0]["low"] is None


def metrics(path: Path, name: str, repeat: int, images_per_s: float, started: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {"format": 1, "target": name, "repeat": repeat, "mean_images_per_s": images_per_s,
             "wall_clock": {"started_unix_s": started, "ended_unix_s": started + 5}}
        )
    )  # fmt: skip


def test_measure_writes_configs_and_the_record_after_every_call(bench, tmp_path, monkeypatch):
    """The workflow calls replaced by one that writes the round's metrics.json files (the
    middle copy 3 % faster): the calls follow the schedule, each order's configuration is
    written and valid, and the record holds every run after each call."""
    calls, records = [], []

    def fake_call(cmd, log):
        config = Path(cmd[cmd.index("--configfile") + 1])
        files = [Path(c) for c in cmd if c.endswith("metrics.json")]
        assert cmd.index("--configfile") > cmd.index(str(files[-1]))
        order = yaml.safe_load(config.read_text())["compare"]["order"]
        repeat = int(files[0].parent.name.split("-")[1])
        calls.append((repeat, order))
        if calls[1:]:  # the record of the call before is on disk
            records.append(json.loads((tmp_path / "out" / "position.json").read_text()))
        for p, f in enumerate(sorted(files), start=1):
            speed = 103.0 if p == 2 else 100.0 + repeat * 0.1 * (p - 2)
            metrics(f, f.parent.parent.name, repeat, speed, 100.0 * len(calls) + p)
        return 0, 0.5

    monkeypatch.setattr(bench, "call", fake_call)
    argv = ["--out", str(tmp_path / "out"), "--rounds", "3", "--orders", "alternate", "shuffle"]
    assert bench.main(argv) == 0
    assert calls == [(1, "alternate"), (1, "shuffle"), (2, "shuffle"), (2, "alternate"),
                     (3, "alternate"), (3, "shuffle")]  # fmt: skip
    for order in ("alternate", "shuffle"):
        config = yaml.safe_load((tmp_path / "out" / f"{order}.yaml").read_text())
        load_config(config)
        assert config["outdir"] == str(tmp_path / "out" / order)
    assert [len(r["calls"]) for r in records] == [1, 2, 3, 4, 5]
    final = json.loads((tmp_path / "out" / "position.json").read_text())
    assert [len(e["runs"]) for e in final["orders"].values()] == [9, 9]
    assert final["orders"]["alternate"]["position"][1]["mean_pct"] > 1.5
    assert {"cpu_model", "avx512f", "amx", "load_average_before", "load_average_after"} <= set(
        final["machine"]
    )


def test_report_reads_the_runs_under_out(bench, tmp_path, capsys):
    out = tmp_path / "out"
    for k in (1, 2):
        for p, name in enumerate(["host-1cpu-a", "host-1cpu-b"], start=1):
            path = out / "balanced" / "train" / name / f"repeat-{k}" / "metrics.json"
            metrics(path, name, k, 100.0 + p + k, 10.0 * k + p)
    argv = ["--out", str(out), "--copies", "2", "--orders", "balanced", "--report"]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "balanced: 2 complete round(s), 4 run(s)" in printed
    rows = [line.split() for line in printed.splitlines()]
    assert ["host-1cpu-b", "2", "+0.49", "[+0.46,", "+0.52]", "NO"] in rows
    assert ["1", "2", "-0.48", "[-0.51,", "-0.45]", "NO"] in rows  # a ran first each round
    assert not (out / "position.json").exists()  # --report writes nothing


def test_a_bad_option_is_one_line(bench, tmp_path, capsys):
    assert bench.main(["--out", str(tmp_path), "--orders", "shuffle", "shuffle"]) == 2
    assert capsys.readouterr().err == (
        "bench_position: error: --orders: an order given twice in ['shuffle', 'shuffle']\n"
    )
    assert not list(tmp_path.iterdir())


def test_the_orders_pool_and_skipped_rounds_leave_every_table(bench, tmp_path, capsys):
    """The pooled position table holds every order's complete rounds; --skip-rounds 1 leaves
    round 1 (here the only round where position 1 is slow) out of all of them."""
    out = tmp_path / "out"
    for order in ("alternate", "shuffle"):
        for k in (1, 2, 3):
            for p, name in enumerate(["host-1cpu-a", "host-1cpu-b"], start=1):
                slow = 0.5 if (k == 1 and p == 1) else 1.0
                path = out / order / "train" / name / f"repeat-{k}" / "metrics.json"
                metrics(path, name, k, slow * (100.0 + p + k), 10.0 * k + p)
    argv = ["--out", str(out), "--copies", "2", "--orders", "alternate", "shuffle", "--report"]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "every order pooled: 6 complete round(s), position effect" in printed
    rows = [line.split() for line in printed.split("every order pooled")[1].splitlines()]
    assert any(r[:2] == ["1", "6"] for r in rows)
    assert bench.main([*argv, "--skip-rounds", "1"]) == 0
    printed = capsys.readouterr().out
    assert "alternate: 2 complete round(s)" in printed
    assert "every order pooled: 4 complete round(s)" in printed
    pooled = [line.split() for line in printed.split("every order pooled")[1].splitlines()]
    first = next(r for r in pooled if r[:2] == ["1", "4"])
    assert float(first[2]) > -1.0  # without round 1's halved run, position 1 is ~-0.5 %
    assert bench.main([*argv, "--skip-rounds", "-1"]) == 2
