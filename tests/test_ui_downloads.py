"""Downloads are made on click; what a session keeps for them must not pin whole traces."""

import io

import numpy as np

from attnviz.ui.downloads import _unpinned, csv_text, npz_bytes


def test_small_slices_are_copied_big_arrays_kept():
    big = np.zeros((6, 12, 64, 64), dtype=np.float32)  # a trace field
    head = big[2, 3]
    kept = _unpinned(head)
    assert kept.base is None and np.shares_memory(head, big) and not np.shares_memory(kept, big)
    np.testing.assert_array_equal(kept, head)
    assert _unpinned(big) is big  # not a view: nothing to unpin
    assert _unpinned(big[0], max_copy=1).base is not None  # too big to copy: kept as is
    assert _unpinned(["a", "b"]) == ["a", "b"]


def test_npz_bytes_round_trip():
    data = npz_bytes({"tokens": ["[CLS]", "saw", "saw"], "weights": np.eye(3, dtype=np.float32)})
    with np.load(io.BytesIO(data)) as z:
        assert list(z["tokens"]) == ["[CLS]", "saw", "saw"]
        np.testing.assert_array_equal(z["weights"], np.eye(3, dtype=np.float32))


def test_csv_text_has_a_header_and_one_row_per_entry():
    text = csv_text({"length": np.array([256, 512]), "method": np.array(["full", "windowed"]),
                     "seconds": np.array([0.0012345678, 2.5])})
    assert text == "length,method,seconds\n256,full,0.00123457\n512,windowed,2.5\n"
