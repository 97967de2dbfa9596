"""The rules a run's evidence is judged by, apart from the code that measures it: what makes
a loss diverged (:func:`divergence`) and a telemetry sample stalled (:data:`IDLE_PERCENT`,
:data:`GAP_INTERVALS`). The trainer (:mod:`embryo_bench.training.train`) and the sampler
(:mod:`embryo_bench.recording.telemetry`) record by them and the figures
(:mod:`embryo_bench.reporting.stability`)
judge by them; kept here, without sampling or training code, so an edit to the sampler or
the trainer does not rerun the figures (their code hash follows their imports,
:mod:`embryo_bench.vocabulary.codehash`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: A sample with the run below this CPU % (and its GPUs below this utilisation) is idle; a
#: run of idle samples in the middle of training is a stall.
IDLE_PERCENT = 5.0
#: Samples further apart than this many sampling intervals leave a gap: time in which the
#: sampler itself did not run. A host run's sampler is a thread of the trainer, so a frozen
#: trainer (``kill -STOP``, a suspended VM, a process swapped out) stops it too, and the
#: frozen time shows only as a gap (a 6 s SIGSTOP left a 6.2 s gap and
#: ``longest_stall_s`` 1.0). A gap's time beyond one interval counts as stalled.
GAP_INTERVALS = 1.5


#: The training loss of a guess: cross-entropy of equal odds on the 4 classes (1-4 cells),
#: ln 4 = 1.39. A healthy run starts near it (Keras' initialisation: 1.37-1.39 measured at
#: 16 and 64 px) or a few times above (the original variant's: 7.6 at 16 px, 9.8 at 64 px).
GUESS_LOSS = math.log(4)
#: A mean training loss above this many times a guess's is weights that exploded (a
#: learning rate of 10 gave 2.5e11 in its first epoch). The factor 1000 is a
#: judgement, not a measurement: far above the highest healthy start seen (9.8, 7 x a
#: guess's) and far below that explosion.
EXPLODED_LOSS = 1000 * GUESS_LOSS
#: Or a training loss that grew more than this many times its smallest earlier epoch's, to
#: worse than a guess: the run unlearned what it had learned. The factor 100 is a
#: judgement, not a measurement (the case is made by hand in tests/test_diverged.py).
LOSS_GROWTH = 100.0


def divergence(history: pd.DataFrame) -> str | None:
    """Why a run diverged, from its history (``history.csv``: epoch, train_loss, test_loss),
    or None when it did not.

    A run diverged at the first epoch where a loss is not a number or infinite ("train loss
    NaN at epoch 3"), its training loss is above :data:`EXPLODED_LOSS` ("train loss 2.5e+11
    at epoch 1, over 1000 x a guess's 1.39"), or its training loss is above a guess's
    (:data:`GUESS_LOSS`) and :data:`LOSS_GROWTH` times its smallest earlier epoch's ("train
    loss grew from 0.0123 at epoch 2 to 2.5 at epoch 5 (203 x)"). Test loss is only checked
    for NaN and infinity, not for size: it may rise on its own (overfitting) without the
    training diverging; and only where a test set was scored, i.e. where the column holds a
    number at some epoch (a workload without a test set, as minimaxir's text generators,
    leaves it empty at every epoch: not a divergence).

    Returns:
        one sentence naming the loss, its value and the epoch; None for a run that did not
        diverge (or a history with no loss columns).

    Raises:
        KeyError: a history with rows but no ``epoch`` column.
    """
    lowest = math.inf
    at_lowest = None
    # The test loss only where a test set was scored; the training loss always (NaN at
    # every epoch is a run that diverged at once).
    tested = (
        "test_loss" in history
        and pd.to_numeric(history["test_loss"], errors="coerce").notna().any()
    )
    scored = ("train_loss", "test_loss") if tested else ("train_loss",)
    for _, row in history.iterrows():
        epoch = int(row["epoch"])
        for name in scored:
            value = float(row.get(name, 0.0))
            if not np.isfinite(value):
                what = "NaN" if np.isnan(value) else "infinite"
                return f"{name.replace('_', ' ')} {what} at epoch {epoch}"
        loss = float(row.get("train_loss", 0.0))
        if loss > EXPLODED_LOSS:
            return (
                f"train loss {loss:.3g} at epoch {epoch}, over {EXPLODED_LOSS / GUESS_LOSS:.0f} "
                f"x a guess's {GUESS_LOSS:.2f}"
            )
        if loss > GUESS_LOSS and loss > LOSS_GROWTH * lowest:
            times = f" ({loss / lowest:.3g} x)" if lowest > 0 else ""
            return (
                f"train loss grew from {lowest:.3g} at epoch {at_lowest} to {loss:.3g} at "
                f"epoch {epoch}{times}"
            )
        if loss < lowest:
            lowest, at_lowest = loss, epoch
    return None
