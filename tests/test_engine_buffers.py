"""The trace buffer pool never hands out memory that a live array or view still uses."""

import gc

import numpy as np

from attnviz.engine.buffers import BufferPool


def test_buffer_returns_only_after_every_view_is_gone():
    pool = BufferPool()
    t = pool.empty(512, 1024)
    arr = pool.to_numpy(t)
    arr[:] = 1.0
    view = arr[3]
    del arr
    gc.collect()
    assert pool.free_bytes == 0  # the view keeps the buffer alive
    again = pool.empty(512, 1024)
    assert again.data_ptr() != t.data_ptr()
    assert (view == 1.0).all()
    del view
    gc.collect()
    assert pool.free_bytes == 512 * 1024 * 4
    reused = pool.empty(512, 1024)
    assert reused.data_ptr() == t.data_ptr() and pool.free_bytes == 0


def test_traces_do_not_overwrite_each_other(model):
    a = model.trace("I saw a saw " * 40)
    keep = a.weights[2, 3].copy()
    del a
    b = model.trace("the cat sat on the mat " * 30)
    c = model.trace("I saw a saw " * 40)
    np.testing.assert_array_equal(c.weights[2, 3], keep)
    assert b.weights.shape != c.weights.shape or not np.array_equal(b.weights, c.weights)


def test_pool_is_bounded():
    pool = BufferPool(max_free_bytes=4 << 20)
    arrays = [pool.to_numpy(pool.empty(1024, 1024)) for _ in range(3)]  # 4 MB each
    del arrays
    gc.collect()
    assert pool.free_bytes <= 4 << 20
