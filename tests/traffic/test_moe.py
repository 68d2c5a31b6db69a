"""EP dispatch and combine demands of a 2-node toy layout, worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from topo.errors import TopoError
from topo.traffic import combine, dispatch, ep_server_demand, server_matrix

# Two servers "A" (ranks 0, 1) and "B" (ranks 2, 3). Network copies of one dispatch:
# 0 -> 2: 2, 1 -> 3: 1, 2 -> 0: 1, 3 -> 1: 3, and 0 -> 1: 5 (inside A: not fabric traffic).
COPIES = np.zeros((4, 4), dtype=int)
for (i, j), c in {(0, 2): 2, (1, 3): 1, (2, 0): 1, (3, 1): 3, (0, 1): 5}.items():
    COPIES[i, j] = c


def test_dispatch_sums_the_ranks_of_each_server():
    d = dispatch(COPIES, 100, ["A", "B"], 2)
    # A -> B: (2 + 1) copies x 100 B; B -> A: (1 + 3) x 100 B
    assert dict(d.entries) == {("A", "B"): 300.0, ("B", "A"): 400.0}
    assert d.level == "server" and d.name == "dispatch" and d.terminals == ("A", "B")


def test_combine_returns_along_the_same_hops():
    c = combine(COPIES, 200, ["A", "B"], 2)
    # the 4 copies B sent to A come back A -> B, the 3 from A go back B -> A, 200 B each
    assert dict(c.entries) == {("A", "B"): 800.0, ("B", "A"): 600.0}
    assert c.name == "combine"


def test_no_traffic_between_servers_is_none():
    inside = np.zeros((4, 4))
    inside[0, 1] = inside[3, 2] = 7.0
    assert ep_server_demand(inside, [0, 1], 2) is None


def test_server_matrix():
    assert server_matrix(COPIES, 2).tolist() == [[5, 3], [4, 0]]


def test_bad_matrices_are_refused():
    with pytest.raises(TopoError, match="is 4 x 4"):
        ep_server_demand(np.zeros((3, 3)), [0, 1], 2)
    bad = np.zeros((4, 4))
    bad[0, 2] = -1.0
    with pytest.raises(TopoError, match="finite and >= 0"):
        ep_server_demand(bad, [0, 1], 2)
