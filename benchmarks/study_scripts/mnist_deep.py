"""TensorFlow's "Deep MNIST for Experts" (study 003: Wu et al.'s TensorFlow default MNIST
network): tensorflow/examples/tutorials/mnist/mnist_deep.py (TensorFlow 1.x, Apache 2.0),
written with the tutorial's own TensorFlow 1 ops through ``tf.compat.v1`` (a graph, a
session, placeholders fed per step), not with Keras.

What differs from the tutorial, and why:
* TensorFlow 2 runs TensorFlow 1 graphs only through ``tf.compat.v1`` with eager execution
  off: ``placeholder``, ``truncated_normal``, ``train.AdamOptimizer``, ``Session``,
  ``global_variables_initializer`` and ``nn.dropout(x, keep_prob)`` are ``tf.compat.v1``'s;
  ``tf.app.run`` and its ``--data_dir`` flag are a plain ``main()``.
* data: ``tensorflow.examples.tutorials.mnist.input_data`` is gone from TensorFlow 2;
  ``_study.read_data_sets(one_hot=True)`` gives the benchmark's arrays in its form (float32
  (N, 784) images in [0, 1], one-hot labels, ``next_batch`` starting each epoch on a new
  permutation).
* ``range(20000)`` iterations: ``_study.setting("iterations", 20000)``.
* the graph written for TensorBoard (``tf.summary.FileWriter`` into a new temporary
  folder) is left out: it is not training, and it left a folder behind on every run.
"""

import _study
import tensorflow as tf

v1 = tf.compat.v1


def deepnn(x):
    """The network on (N, 784) images: (N, 10) logits and the dropout's keep_prob
    placeholder."""
    with tf.name_scope("reshape"):
        x_image = tf.reshape(x, [-1, 28, 28, 1])

    with tf.name_scope("conv1"):
        W_conv1 = weight_variable([5, 5, 1, 32])
        b_conv1 = bias_variable([32])
        h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)

    with tf.name_scope("pool1"):
        h_pool1 = max_pool_2x2(h_conv1)

    with tf.name_scope("conv2"):
        W_conv2 = weight_variable([5, 5, 32, 64])
        b_conv2 = bias_variable([64])
        h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)

    with tf.name_scope("pool2"):
        h_pool2 = max_pool_2x2(h_conv2)

    with tf.name_scope("fc1"):
        W_fc1 = weight_variable([7 * 7 * 64, 1024])
        b_fc1 = bias_variable([1024])
        h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 64])
        h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)

    with tf.name_scope("dropout"):
        keep_prob = v1.placeholder(tf.float32)
        h_fc1_drop = v1.nn.dropout(h_fc1, keep_prob)

    with tf.name_scope("fc2"):
        W_fc2 = weight_variable([1024, 10])
        b_fc2 = bias_variable([10])
        y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    return y_conv, keep_prob


def conv2d(x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def weight_variable(shape):
    return tf.Variable(v1.truncated_normal(shape, stddev=0.1))


def bias_variable(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def main():
    mnist = _study.read_data_sets(one_hot=True)

    x = v1.placeholder(tf.float32, [None, 784])
    y_ = v1.placeholder(tf.float32, [None, 10])

    y_conv, keep_prob = deepnn(x)

    with tf.name_scope("loss"):
        cross_entropy = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv)
    cross_entropy = tf.reduce_mean(cross_entropy)

    with tf.name_scope("adam_optimizer"):
        train_step = v1.train.AdamOptimizer(1e-4).minimize(cross_entropy)

    with tf.name_scope("accuracy"):
        correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
        correct_prediction = tf.cast(correct_prediction, tf.float32)
    accuracy = tf.reduce_mean(correct_prediction)

    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for i in range(_study.setting("iterations", 20000)):
            batch = mnist.train.next_batch(50)
            if i % 100 == 0:
                train_accuracy = accuracy.eval(
                    feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0}
                )
                print(f"step {i}, training accuracy {train_accuracy:g}")
            train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})

        test = {x: mnist.test.images, y_: mnist.test.labels, keep_prob: 1.0}
        print(f"test accuracy {accuracy.eval(feed_dict=test):g}")


if __name__ == "__main__":
    v1.disable_eager_execution()
    main()
