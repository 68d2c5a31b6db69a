"""The three-tier routing's products: the sparse product of the last hop (plane_routing.
_times_sparse) against numpy's dense product, at every density, its dense fallback included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.flow.exact.plane_routing import _times_sparse


@settings(max_examples=200, deadline=None)
@given(
    n_rows=st.integers(1, 12),
    n_k=st.integers(1, 40),
    n_q=st.integers(1, 9),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_sparse_product_is_the_dense_product(n_rows, n_k, n_q, density, seed):
    rng = np.random.default_rng(seed)
    TWt = rng.random((n_rows + 3, n_k))
    R = rng.random((n_k, n_q)) * (rng.random((n_k, n_q)) < density)
    rows = rng.permutation(n_rows + 3)[:n_rows]
    got = _times_sparse(TWt, rows, R)
    assert got.shape == (n_rows, n_q)
    np.testing.assert_allclose(got, TWt[rows] @ R, rtol=1e-13, atol=0)


def test_one_nonzero_per_row_as_in_a_full_ft3():
    # FT3's shape: aggregation switch k reaches the destination pod only at its own position
    # k mod 4 (a quarter of R's cells: the sparse way); column q sums rows q, q + 4, ...
    TWt = np.arange(1.0, 1 + 2 * 16).reshape(2, 16) / 7
    R = np.zeros((16, 4))
    R[np.arange(16), np.arange(16) % 4] = 0.25
    got = _times_sparse(TWt, np.array([1, 0]), R)
    for q in range(4):
        for b, row in enumerate((1, 0)):
            hand = 0.25 * sum(row * 16 + k + 1 for k in range(q, 16, 4)) / 7
            assert got[b, q] == pytest.approx(hand, rel=1e-15)
