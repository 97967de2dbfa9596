"""Keras 3's Adam with TensorFlow's fused update kernel, for speed.

On the TensorFlow backend Keras 3's ``Adam.update_step`` runs as a dozen small ops per
variable (two ``assign_add``, a ``sqrt``, a divide, an ``assign_sub``...); TensorFlow 1's
``tf.train.AdamOptimizer`` and Keras 2 ran one ``ResourceApplyAdam`` kernel per variable
instead. On Wu et al.'s deep MNIST network (3.3 M parameters, batch 50) the small ops took
15.5 ms per update against 4.5 ms for the kernel, which put embryo-bench's trainer at 0.76x
the study's own script (docs/results.md, bench_studies). :class:`FusedAdam` is Keras's
``Adam`` (same arguments, variables, config and state; clipping, weight decay, loss scale,
gradient accumulation and EMA stay the base class's) whose per-variable update is that
kernel. Both compute, with t = iterations + 1 and every scalar in the variable's dtype::

    alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
    m += (g - m) * (1 - beta_1)
    v += (g * g - v) * (1 - beta_2)
    w -= m * alpha / (sqrt(v) + epsilon)     # epsilon outside the root ("epsilon hat")

The update falls back to Keras's own (identical results, the slow ops) where the kernel
does not apply: ``amsgrad=True`` (``ResourceApplyAdam`` has no maximum of past velocities),
sparse gradients (``tf.IndexedSlices``, from embeddings) and any backend other than
TensorFlow. Imports TensorFlow: :func:`embryo_bench.workloads.build.make_adam` imports this
module only on that backend.

The class is registered with Keras (``embryo_bench>FusedAdam``), so a compiled model saves
and loads with it; loading such a ``model.keras`` with ``compile=True`` needs this module
imported first (``keras.models.load_model(path, compile=False)`` never does).
"""

from __future__ import annotations

import keras
import tensorflow as tf


def _handle(variable):
    """The TensorFlow resource handle of a Keras or TensorFlow variable (in a distribution
    strategy's ``update`` call, the handle of the replica being updated)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle


@keras.saving.register_keras_serializable(package="embryo_bench")
class FusedAdam(keras.optimizers.Adam):
    """``keras.optimizers.Adam`` (same arguments and defaults) whose update of a dense
    float variable is one ``tf.raw_ops.ResourceApplyAdam``; see the module docstring for
    the formula and the cases that fall back to Keras's update."""

    def update_step(self, gradient, variable, learning_rate):
        """Update ``variable`` (any shape, float16/bfloat16/float32/float64) and its two
        moments from ``gradient`` (same shape) at ``learning_rate`` (a scalar, the
        schedule's value at this step)."""
        if (
            self.amsgrad
            or isinstance(gradient, tf.IndexedSlices)
            or keras.backend.backend() != "tensorflow"
        ):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        return tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable),
            m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]),
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
            use_locking=False,
            use_nesterov=False,
        )
