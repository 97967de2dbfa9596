"""minimaxir's numbers (Woolf 2017, study 002) read from his own per-epoch logs.

Max Woolf's two 2017 posts drew every chart from the Keras logs his scripts wrote, one CSV per
script and machine (``epoch,elapsed,...``, ``elapsed`` in seconds), public in his
repositories and copied unchanged into this study's ``sources/`` (its README names the
commits and the MIT licence). This module turns them into the rows of the study's
``numbers.csv`` (the format of :mod:`embryo_bench.published.studies`), so no number of the
logs is typed:

- ``epoch_seconds``: the median ``elapsed`` of the epochs after the first (the first holds
  graph building and warm-up; our runs report the median steady epoch the same way).
- ``training_seconds``: the sum of ``elapsed`` over the log, his "total training time".
- ``test_accuracy``: the last epoch's ``val_acc`` (his scripts validate on the test set),
  where the script logged one.
- ``relative_time``, ``relative_cost``: training time and cost over the post's base system's
  (``sum(elapsed)`` x the system's ``hourly_usd``), as his R notebooks compute them
  (``v2/analysis/gpu_benchmark_v2.Rmd``, ``analysis/deeplearning_cpu_gpu_benchmarks.Rmd``),
  only for the workloads whose chart the post shows (:data:`FIGURES`).

The systems' prices, vCPUs and GPUs come from the posts' text: they are typed once into
``numbers.csv`` itself (rows whose source is a post: :data:`SEED`, the post, the section),
and :func:`rows` keeps those rows as they are and uses their ``hourly_usd`` for the costs. Run
``python -m embryo_bench.studies.minimaxir.logs`` to rewrite the file after changing a log
or a typed row; ``--check`` exits 1 when the file differs from what the logs give.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

from ...errors import DataError
from ...published.studies import COLUMNS, load_numbers
from ...workloads.catalog import catalog
from ..registry import NUMBERS as NUMBERS_FILE

#: The study's folder.
HERE = Path(__file__).parent
#: The copied logs.
LOGS = HERE / "sources"
#: The numbers file this module writes.
NUMBERS = HERE / NUMBERS_FILE
#: The study's short name (docs/studies/README.md), which the typed rows' sources begin with.
SEED = "Woolf 2017 (minimaxir)"

NOVEMBER = "2017-11 post (Benchmarking Modern GPUs for Maximum Cloud Cost Efficiency)"
JULY = "2017-07 post (Benchmarking TensorFlow on Cloud CPUs)"
#: Each copied repository -> its name on GitHub (the ``source`` cells name it).
REPOSITORIES = {
    "keras-cntk-benchmark": "minimaxir/keras-cntk-benchmark",
    "deep-learning-cpu-gpu-benchmark": "minimaxir/deep-learning-cpu-gpu-benchmark",
}
#: The post's system -> (post, its log folder under :data:`LOGS`). TensorFlow runs only.
SYSTEMS = {
    "K80 (2017-11)": (NOVEMBER, "keras-cntk-benchmark/v2/logs/k80"),
    "P100 (2017-11)": (NOVEMBER, "keras-cntk-benchmark/v2/logs/p100"),
    "GCE 32 vCPU (2017-11)": (NOVEMBER, "keras-cntk-benchmark/v2/logs/cpu32"),
    "GCE 16 vCPU (2017-11)": (NOVEMBER, "keras-cntk-benchmark/v2/logs/cpu16"),
    "K80 (2017-07)": (JULY, "deep-learning-cpu-gpu-benchmark/logs/gpu"),
    **{
        f"GCE {n} vCPU {build} (2017-07)": (
            JULY,
            f"deep-learning-cpu-gpu-benchmark/logs/cpu-{build}/cpu{n}",
        )
        for n in (64, 32, 16, 8)
        for build in ("pip", "compiled")
    },
}
#: Each post's base system (time and cost relative to it; the November one is the study's).
BASES = {NOVEMBER: "K80 (2017-11)", JULY: "K80 (2017-07)"}
#: His script's file name -> the catalog workload (the study's ``catalog.yaml``).
SCRIPTS = {
    "mnist_mlp": "mnist-mlp",
    "mnist_cnn": "mnist-cnn",
    "cifar10_cnn": "cifar10-cnn",
    "imdb_fasttext": "imdb-fasttext",
    "imdb_bidirectional_lstm": "imdb-bilstm",
    "lstm_text_generation": "lstm-text-generation",
    "text_generator_keras": "text-generator",
}
#: The charts each post shows: workload -> (time figure, cost figure), the file names
#: ``dl-cpu-gpu-<n>.png`` of the post and of its notebook. The November post leaves out the
#: fastText charts its notebook draws; neither post charts the text generator.
FIGURES = {
    NOVEMBER: {
        "imdb-bilstm": (1, 2),
        "mnist-mlp": (5, 6),
        "mnist-cnn": (7, 8),
        "cifar10-cnn": (9, 10),
        "lstm-text-generation": (11, 12),
    },
    JULY: {
        "imdb-bilstm": (1, 2),
        "imdb-fasttext": (3, 4),
        "mnist-mlp": (5, 6),
        "mnist-cnn": (7, 8),
        "cifar10-cnn": (9, 10),
        "lstm-text-generation": (11, 12),
    },
}
#: Decimals kept: seconds to 0.1 ms, fractions and ratios to 1e-4 (the logs' clocks and his
#: charts' two decimals need no more).
DECIMALS = 4


def read_log(path: Path) -> pd.DataFrame:
    """One of his logs: a table with ``epoch`` (int), ``elapsed`` (float64, s) and, where
    logged, ``val_acc`` (float64, fraction; NaN where empty), one row per epoch in order.

    Raises:
        DataError: the file is missing, unreadable, lacks ``epoch``/``elapsed``, has no rows,
            epochs other than 0, 1, ... or an ``elapsed`` that is not a positive number.
    """
    try:
        table = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read the log: {exc}") from exc
    if not {"epoch", "elapsed"} <= set(table.columns) or table.empty:
        raise DataError(f"{path}: expected columns epoch, elapsed and one row per epoch")
    elapsed = pd.to_numeric(table["elapsed"], errors="coerce")
    if list(table["epoch"]) != list(range(len(table))) or not (elapsed > 0).all():
        raise DataError(f"{path}: expected epochs 0, 1, ... with positive elapsed seconds")
    out = pd.DataFrame({"epoch": table["epoch"].astype(int), "elapsed": elapsed.astype(float)})
    if "val_acc" in table.columns:
        out["val_acc"] = pd.to_numeric(table["val_acc"], errors="coerce")
    return out


def epoch_seconds(log: pd.DataFrame) -> float:
    """The steady epoch of a log (:func:`read_log`), s: the median ``elapsed`` of the epochs
    after the first (of the only one for a one-epoch log)."""
    steady = log["elapsed"].iloc[1:] if len(log) > 1 else log["elapsed"]
    return round(float(statistics.median(steady)), DECIMALS)


def logs() -> dict[tuple[str, str], tuple[Path, pd.DataFrame]]:
    """Every copied log: (system, workload) -> (its path, :func:`read_log` of it), in
    :data:`SYSTEMS` and :data:`SCRIPTS` order; a system without a script's log has no entry.

    Raises:
        DataError: a system's folder is missing, or a log is damaged (:func:`read_log`).
    """
    out = {}
    for system, (_, folder) in SYSTEMS.items():
        if not (LOGS / folder).is_dir():
            raise DataError(f"{LOGS / folder}: the logs of {system} are missing")
        for script, workload in SCRIPTS.items():
            path = LOGS / folder / f"{script}_tensorflow.csv"
            if path.exists():
                out[system, workload] = (path, read_log(path))
    return out


def source(path: Path) -> str:
    """A log's ``source`` cell: ``minimaxir/<repository>:<its path there>``."""
    repo, _, inner = path.relative_to(LOGS).as_posix().partition("/")
    return f"{REPOSITORIES[repo]}:{inner}"


def _row(system, workload, metric, value, unit, settings, src, note="") -> dict:
    return {
        "system": system,
        "workload": workload,
        "metric": metric,
        "value": repr(round(float(value), DECIMALS)),
        "unit": unit,
        "settings": settings,
        "source": src,
        "used": "true",
        "note": note,
    }


def derived_rows(prices: dict[str, float]) -> list[dict]:
    """The rows read from the logs, as strings in :data:`COLUMNS` order (see the module's
    docstring for each metric); the rows of a log that is a copy of another system's
    (:func:`copies`) have ``used`` false.

    Args:
        prices: system -> its used ``hourly_usd`` (USD/h), from the typed rows; a post's
            relative cost needs its base's price and the system's.

    Raises:
        DataError: a damaged log (:func:`logs`), or a log whose epochs differ from the
            catalog's for its workload.
    """
    read = logs()
    workloads = catalog()
    twins = copies(read)
    out = []
    for (system, workload), (path, log) in read.items():
        post = SYSTEMS[system][0]
        recipe = workloads[workload].recipe
        if len(log) != recipe.epochs:
            raise DataError(
                f"{path}: {len(log)} epochs; the catalog's {workload} has {recipe.epochs}"
            )
        settings = f"batch_size={recipe.batch_size};epochs={len(log)};framework=tensorflow"
        src = source(path)
        out.append(
            _row(
                system,
                workload,
                "epoch_seconds",
                epoch_seconds(log),
                "s",
                settings,
                src,
                "median elapsed of epochs 2.. (the first left out)",
            )
        )
        total = float(log["elapsed"].sum())
        out.append(_row(system, workload, "training_seconds", total, "s", settings, src))
        if "val_acc" in log.columns and not math.isnan(log["val_acc"].iloc[-1]):
            out.append(
                _row(
                    system,
                    workload,
                    "test_accuracy",
                    log["val_acc"].iloc[-1],
                    "fraction",
                    settings,
                    src,
                    "val_acc of the last epoch (validated on the test set)",
                )
            )
        base = BASES[post]
        if workload not in FIGURES[post] or (base, workload) not in read:
            continue
        base_path, base_log = read[base, workload]
        base_total = float(base_log["elapsed"].sum())
        time_fig, cost_fig = FIGURES[post][workload]
        how = f"sum of elapsed over {base}'s ({source(base_path)}), as his notebook computes"
        relative = f"{settings};base={base}" if settings else f"base={base}"
        out.append(
            _row(
                system,
                workload,
                "relative_time",
                total / base_total,
                "x base",
                relative,
                f"{src}; {post}, figure dl-cpu-gpu-{time_fig}",
                how,
            )
        )
        if system in prices and base in prices:
            out.append(
                _row(
                    system,
                    workload,
                    "relative_cost",
                    total * prices[system] / (base_total * prices[base]),
                    "x base",
                    relative,
                    f"{src}; {post}, figure dl-cpu-gpu-{cost_fig}",
                    f"{how}, times the hourly_usd rows",
                )
            )
    for row in out:
        if (row["system"], row["workload"]) in twins:
            row["used"] = "false"
            row["note"] = "; ".join(
                filter(None, [row["note"], twins[row["system"], row["workload"]]])
            )
    return out


def copies(read: dict[tuple[str, str], tuple[Path, pd.DataFrame]]) -> dict[tuple[str, str], str]:
    """The logs that are byte for byte another system's log of the same script (one was
    copied over the other, so neither machine's time is known): (system, workload) -> a note
    naming the others. Their rows are kept with ``used`` false."""
    by_content: dict[tuple[str, bytes], list[tuple[str, str]]] = {}
    for key, (path, _) in read.items():
        by_content.setdefault((key[1], path.read_bytes()), []).append(key)
    out = {}
    for keys in by_content.values():
        for key in keys if len(keys) > 1 else []:
            others = ", ".join(s for s, _ in keys if s != key[0])
            out[key] = (
                f"not used: the log is byte-identical to {others}'s "
                "(which machine ran it is unknown)"
            )
    return out


def typed_rows(path: Path = NUMBERS) -> pd.DataFrame:
    """The rows of ``numbers.csv`` typed from the posts' text (their source names no log
    file), as :func:`embryo_bench.published.studies.load_numbers` reads them.

    Raises:
        DataError: as ``load_numbers``.
    """
    table = load_numbers("minimaxir", path)
    return table[~table["source"].str.contains("_tensorflow.csv", regex=False)]


def rows(path: Path = NUMBERS) -> list[dict]:
    """The whole numbers file as it should be: the typed rows of ``path`` unchanged, then
    :func:`derived_rows` with the typed rows' used ``hourly_usd``."""
    typed = typed_rows(path)
    priced = typed[(typed["metric"] == "hourly_usd") & typed["used"]]
    prices = dict(zip(priced["system"], priced["value"], strict=True))
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    kept = raw.loc[typed.index].to_dict("records")
    return kept + derived_rows(prices)


def render(records: list[dict]) -> str:
    """``records`` as the numbers file's CSV text (:data:`COLUMNS`, ``\\n`` line ends)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Rewrite the study's ``numbers.csv`` from the logs and its typed rows (``--check``: only say
    whether it differs; exit status 1 when it does)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    parser.add_argument("--path", type=Path, default=NUMBERS, help="the numbers file")
    args = parser.parse_args(argv)
    text = render(rows(args.path))
    if args.check:
        same = args.path.read_text() == text
        print(f"{args.path}: {'as the logs give' if same else 'differs from the logs; rerun'}")
        return 0 if same else 1
    args.path.write_text(text)
    print(f"{args.path}: {text.count(chr(10)) - 1} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
