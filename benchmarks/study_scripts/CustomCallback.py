"""minimaxir's per-epoch logger (keras-cntk-benchmark, v2/test_files/CustomCallback.py,
commit 5b95f46, MIT licence, (c) 2017 Max Woolf), written again for Keras 3.

It writes ``logs/<script>_<backend>.csv`` with one row per epoch: epoch, elapsed (s, from the
epoch's start to its end, the test scoring included), loss, accuracy, val_loss, val_accuracy.

Changed for Keras 3: the backend's name is ``keras.backend.backend()`` (``keras.backend`` is
no longer the backend module); Keras 3 logs accuracy as ``accuracy``/``val_accuracy`` (Keras
2.0 wrote ``acc``/``val_acc``); the ``logs/`` folder is made here (his driver script,
keras_cntk_benchmark.py, made it before running each script). The benchmark does not read
this file: it times each epoch's training with its own callback (bench_studies.py).
"""

import csv
import os
import sys
import time

import keras


class EpochStatsLogger(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        name = os.path.basename(sys.argv[0])[:-3]
        os.makedirs("logs", exist_ok=True)
        self.f = open(f"logs/{name}_{keras.backend.backend()}.csv", "w")  # noqa: SIM115 (closed on_train_end)
        self.log_writer = csv.writer(self.f)
        self.log_writer.writerow(["epoch", "elapsed", "loss", "acc", "val_loss", "val_acc"])

    def on_train_end(self, logs=None):
        self.f.close()

    def on_epoch_begin(self, epoch, logs=None):
        self.start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.log_writer.writerow(
            [
                epoch,
                time.time() - self.start_time,
                logs.get("loss"),
                logs.get("accuracy"),
                logs.get("val_loss"),
                logs.get("val_accuracy"),
            ]
        )
