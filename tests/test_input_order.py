"""The order in which the memory input mode reads its samples (training.backend's
``_shuffled_passes``): every pass a permutation of all samples, a new one each pass, the same
passes for the same seed, and the batch count Keras needs to see an epoch's end."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tf():
    import tensorflow  # a dependency of the package: no skip

    return tensorflow


def _passes(tf, n, batch_size, seed, *, endless=False, take=0, passes=1):
    from embryo_bench.training.backend import _shuffled_passes

    dataset = _shuffled_passes(n, batch_size, seed, endless=endless, take=take)
    if endless:
        steps = (min(take, n) if take else n) // batch_size
        batches = [b.numpy() for b in dataset.take(steps * passes)]
        return dataset, [
            np.concatenate(batches[i * steps : (i + 1) * steps]) for i in range(passes)
        ]
    return dataset, [np.concatenate([b.numpy() for b in dataset]) for _ in range(passes)]


def test_each_epoch_reads_every_sample_once_in_a_new_order(tf):
    dataset, (first, second) = _passes(tf, 103, 10, seed=7, passes=2)
    assert sorted(first) == sorted(second) == list(range(103))
    assert not np.array_equal(first, second)
    assert int(dataset.cardinality()) == 11  # ceil(103 / 10): the last batch holds 3


def test_the_same_seed_gives_the_same_epochs_and_another_seed_others(tf):
    _, again = _passes(tf, 50, 8, seed=3, passes=2)
    _, same = _passes(tf, 50, 8, seed=3, passes=2)
    _, other = _passes(tf, 50, 8, seed=4, passes=2)
    assert all(np.array_equal(a, b) for a, b in zip(again, same, strict=True))
    assert not np.array_equal(again[0], other[0])


def test_endless_passes_drop_each_pass_leftover_and_never_end(tf):
    dataset, (first, second) = _passes(tf, 23, 5, seed=1, endless=True, passes=2)
    assert int(dataset.cardinality()) == tf.data.INFINITE_CARDINALITY
    # 4 full batches a pass: 20 distinct samples, the 3 left over dropped, then a new pass
    assert len(first) == len(set(first)) == 20 and len(set(second)) == 20
    assert not np.array_equal(first, second)


def test_take_reads_a_random_subset_of_that_size_each_time(tf):
    dataset, (first, second) = _passes(tf, 40, 6, seed=2, take=15, passes=2)
    assert int(dataset.cardinality()) == 3
    assert len(first) == len(set(first)) == 15 and set(first) <= set(range(40))
    assert not np.array_equal(first, second)
    _, (everything,) = _passes(tf, 10, 4, seed=2, take=25)
    assert sorted(everything) == list(range(10))  # more than there are: all of them
