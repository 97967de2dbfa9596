"""How fast this machine is, measured beside each run: a calibration probe and the model's
FLOPs, so a run's throughput can be put beside the physical limit.

The probe is a fixed compute task, float32 matrix products through the loaded Keras
backend (``keras.ops.matmul``: Eigen/oneDNN for TensorFlow, XLA for JAX, ATen for PyTorch),
run on the run's own pinned cores and threads just before and just after training. If the
machine's speed changed during the run (another tenant, a frequency step), the two probes
differ. Its GFLOP/s is also the "peak" that a run's achieved GFLOP/s is divided by.
"""

from __future__ import annotations

import time

import numpy as np

#: Side of the probe's square float32 matrices: 2 * 1024^3 = 2.1 GFLOP per product.
PROBE_MATRIX = 1024
#: What the probe measures, as recorded with its results.
PROBE_METHOD = (
    f"float32 {PROBE_MATRIX}x{PROBE_MATRIX} matmul through keras.ops on the run's cores and "
    "threads, 2 n^3 FLOPs per product"
)


#: Probe pairs a machine baseline needs at a lag before it gives the change there: a
#: baseline of n back-to-back probes has n - k pairs k probes apart, so it needs at least
#: MIN_PAIRS + 1 probes to give any lag (:func:`machine_baseline`).
MIN_PAIRS = 10
#: Probes ``embryo-bench calibrate`` takes unless told (``--probes``): 100 give the change at
#: lags up to 90 probes apart from at least 10 pairs.
BASELINE_PROBES = 100
#: A run is judged against a baseline's lag only when the lag nearest its length is within
#: this factor of it: probes drift further apart the longer between them, so a run far
#: longer than any lag measured would be held to too tight a limit (and a far shorter one to
#: too loose a one); such a run is judged by ``stability.probe_change`` instead.
LAG_REACH = 2.0


#: Untimed products before a probe's clock starts (the first also compiles where the
#: backend compiles; the second finds caches and clocks warm).
WARMUP_PRODUCTS = 2


def matmul_probe(seconds: float, n: int = PROBE_MATRIX) -> dict:
    """Repeat an ``n`` x ``n`` float32 matrix product for at least ``seconds`` (after
    :data:`WARMUP_PRODUCTS` untimed ones) and return its speed.

    Each product counts 2 n^3 floating-point operations; each is followed by a sum reduced
    to the host, so asynchronous backends (JAX, GPUs) are timed to completion.

    Args:
        seconds: minimum time to measure (s); at least one product is timed.
        n: matrix side.

    Returns:
        dict: gflops (GFLOP/s), seconds (s measured), products, matrix (n), warmups,
        product_seconds (each timed product's time, s: the spread within the probe).

    Raises:
        ValueError: seconds < 0 or n < 1.
    """
    if seconds < 0 or n < 1:
        raise ValueError(f"matmul_probe: seconds must be >= 0 and n >= 1, got {seconds}, {n}")
    import keras

    rng = np.random.default_rng(0)
    a = keras.ops.convert_to_tensor(rng.standard_normal((n, n), dtype=np.float32))
    b = keras.ops.convert_to_tensor(rng.standard_normal((n, n), dtype=np.float32))

    def product() -> float:
        return float(keras.ops.convert_to_numpy(keras.ops.sum(keras.ops.matmul(a, b))))

    for _ in range(WARMUP_PRODUCTS):
        product()
    times, t0 = [], time.perf_counter()
    last = t0
    while True:
        product()
        now = time.perf_counter()
        times.append(now - last)
        last = now
        if now - t0 >= seconds:
            break
    elapsed = last - t0
    return {
        "gflops": 2.0 * n**3 * len(times) / elapsed / 1e9,
        "seconds": elapsed,
        "products": len(times),
        "matrix": n,
        "warmups": WARMUP_PRODUCTS,
        "product_seconds": [round(t, 6) for t in times],
    }


def machine_baseline(
    probes: list[dict], lags_s: tuple[float, ...] = (2, 10, 30, 60, 120, 300)
) -> dict:
    """A machine's own probe distribution, from back-to-back
    :func:`matmul_probe` results: how much two probes differ on this machine when nothing
    else changes, as a function of the time between them.

    Args:
        probes: probe results in the order taken, back to back (at least 3).
        lags_s: times between two probes (s) to give the change at, besides neighbouring
            probes; a lag is left out when fewer than :data:`MIN_PAIRS` pairs are that far
            apart.

    Returns:
        dict: probes (n), probe_seconds (mean length, s), gflops_mean, gflops_min,
        gflops_max, cv (standard deviation / mean, a fraction), changes: a list of
        {lag_s, pairs, median, p95, p99, share_over_10pct} where change = |b - a| /
        max(a, b) between probes ``lag_s`` apart (fractions; the measure of
        :func:`efficiency`'s probe_change).

    Raises:
        ValueError: fewer than 3 probes.
    """
    if len(probes) < 3:
        raise ValueError(f"a machine baseline needs at least 3 probes, got {len(probes)}")
    g = np.array([p["gflops"] for p in probes], dtype=float)
    length = float(np.mean([p["seconds"] for p in probes]))
    changes = []
    # Neighbours always, then each lag as a whole number of probes.
    for k in sorted({1, *(max(1, round(lag / length)) for lag in lags_s)}):
        if len(g) - k < MIN_PAIRS:
            continue
        a, b = g[:-k], g[k:]
        c = np.abs(b - a) / np.maximum(a, b)
        changes.append(
            {
                "lag_s": float(k * length),
                "pairs": int(len(c)),
                "median": float(np.median(c)),
                "p95": float(np.quantile(c, 0.95)),
                "p99": float(np.quantile(c, 0.99)),
                "share_over_10pct": float(np.mean(c > 0.10)),
            }
        )
    return {
        "probes": int(len(g)),
        "probe_seconds": length,
        "gflops_mean": float(g.mean()),
        "gflops_min": float(g.min()),
        "gflops_max": float(g.max()),
        "cv": float(g.std(ddof=1) / g.mean()),
        "changes": changes,
    }


def drift_limit(baseline: dict, run_seconds: float | None) -> tuple[float, float] | None:
    """The probe change that a quiet run of ``run_seconds`` stays under on this machine:
    the baseline's 99th percentile at the lag nearest the run's length (see
    :func:`lag_reaches` for whether that lag is near enough).

    Returns:
        (limit as a fraction, the lag it was measured at, s), or None when the baseline
        has no lags or the run's length is unknown.
    """
    rows = baseline.get("changes") or []
    if not rows or run_seconds is None:
        return None
    row = min(rows, key=lambda r: abs(np.log(r["lag_s"]) - np.log(max(run_seconds, 1e-3))))
    return float(row["p99"]), float(row["lag_s"])


def lag_reaches(lag_s: float, run_seconds: float) -> bool:
    """Whether a baseline's lag of ``lag_s`` seconds may judge a run of ``run_seconds``: the
    two are within a factor :data:`LAG_REACH` of each other."""
    return max(lag_s, run_seconds) <= LAG_REACH * max(min(lag_s, run_seconds), 1e-3)


def judged_lengths(baseline: dict) -> list[tuple[float, float]]:
    """The run lengths a baseline judges: those whose nearest lag (:func:`drift_limit`) is
    near enough (:func:`lag_reaches`), which are those within :data:`LAG_REACH` x of any of
    its lags (the nearest on a log scale is then within it too), as (shortest, longest)
    intervals in s, ascending, merged where they overlap. Lags of 2, 10, 30 and 60 s judge
    runs of 1-4 s and 5-120 s: a 4.5 s run is more than 2 x from 2 s and from 10 s.

    Args:
        baseline: a machine baseline (its ``changes``' ``lag_s``, s).

    Returns:
        [(shortest, longest)] in s; [] for a baseline without lags.
    """
    out: list[tuple[float, float]] = []
    for lag in sorted(row["lag_s"] for row in baseline.get("changes") or []):
        low, high = lag / LAG_REACH, lag * LAG_REACH
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], high)
        else:
            out.append((low, high))
    return out


def training_flops_per_image(model) -> dict:
    """Floating-point operations to train ``model`` on one image, from its layer shapes.

    Forward: a Conv2D layer costs 2 * kh * kw * c_in * c_out * H_out * W_out (one multiply
    and one add per weight and output position), a Dense layer 2 * inputs * outputs.
    Training counts 3 x forward: the backward pass computes gradients for the layer inputs
    and for the weights, each about as costly as the forward product (the usual rule, e.g.
    Kaplan et al. 2020; OpenAI "AI and Compute"). Biases, ReLU, pooling, rescaling,
    dropout, the loss and Adam's update are element-wise and left out (under 1 % here).
    For the paper CNN at 64 px: conv1 6.6 M, conv2 104.9 M, fc1 33.6 M, logits 0.008 M,
    forward 145 MFLOP, training 0.435 GFLOP per image.

    Args:
        model: a built Keras model (its layers' ``kernel`` and ``output`` shapes are read).

    Returns:
        dict: forward_flops and training_flops (per image), per_layer (name -> forward
        FLOPs).
    """
    per_layer: dict[str, int] = {}
    for layer in model.layers:
        kind = type(layer).__name__
        if kind == "Conv2D":
            kh, kw, c_in, c_out = (int(d) for d in layer.kernel.shape)
            _, h, w, _ = layer.output.shape
            per_layer[layer.name] = 2 * kh * kw * c_in * c_out * int(h) * int(w)
        elif kind == "Dense":
            n_in, n_out = (int(d) for d in layer.kernel.shape)
            per_layer[layer.name] = 2 * n_in * n_out
    forward = sum(per_layer.values())
    return {"forward_flops": forward, "training_flops": 3 * forward, "per_layer": per_layer}


def efficiency(
    training_flops: int, images_per_s: float, before: dict | None, after: dict | None
) -> dict:
    """Achieved GFLOP/s of a run and its fraction of the probe's.

    Args:
        training_flops: per image (:func:`training_flops_per_image`).
        images_per_s: the run's steady-state training throughput.
        before, after: :func:`matmul_probe` results around the run (None: not probed).

    Returns:
        dict: achieved_gflops (training FLOPs x images/s), probe_gflops (mean of the probes),
        efficiency (achieved / probe, a fraction; None without a probe), probe_change (|after
        - before| / the larger, a fraction; None without both probes).
    """
    achieved = training_flops * images_per_s / 1e9
    probes = [p["gflops"] for p in (before, after) if p]
    peak = float(np.mean(probes)) if probes else None
    change = abs(probes[0] - probes[1]) / max(probes) if len(probes) == 2 else None
    return {
        "achieved_gflops": achieved,
        "probe_gflops": peak,
        "efficiency": achieved / peak if peak else None,
        "probe_change": change,
    }
