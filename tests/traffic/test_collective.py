"""Collective traffic: NCCL's trees and the ring, tree and all-to-all steps, worked by hand."""

from __future__ import annotations

import pytest

from topo.errors import TopoError
from topo.traffic import (
    btree_parent,
    double_binary_tree,
    double_binary_tree_step,
    ring_step,
    subcluster_alltoall,
)


@pytest.mark.parametrize("nranks", [2, 3, 4, 5, 7, 8, 10, 16, 33, 64])
def test_double_binary_tree_is_two_spanning_trees(nranks):
    t0, t1 = double_binary_tree(nranks)
    for tree in (t0, t1):
        assert len(tree) == nranks - 1
        children: dict[int, int] = {}
        for child, parent in tree:
            assert 0 <= parent < nranks and child != parent
            children[parent] = children.get(parent, 0) + 1
        assert max(children.values()) <= 2
        # every rank reaches the root by parents: a spanning tree
        parent_of = dict(tree)
        for rank in range(nranks):
            seen = set()
            while rank in parent_of:
                assert rank not in seen
                seen.add(rank)
                rank = parent_of[rank]
    if nranks % 2 == 0 and nranks > 2:
        inner0 = {p for _, p in t0}
        inner1 = {p for _, p in t1}
        # mirrored trees: odd ranks are leaves of tree 0 and inner ranks of tree 1 only
        assert all(r % 2 == 0 for r in inner0)
        assert all(r % 2 == 1 for r in inner1)


def test_btree_parent_matches_hand_worked_tree():
    # 8 ranks: 0 <- 4 <- {2, 6}; 2 <- {1, 3}; 6 <- {5, 7}
    assert [btree_parent(r, 8) for r in range(8)] == [-1, 2, 4, 2, 0, 6, 4, 6]


def test_double_binary_tree_of_8_ranks_from_nccls_definition():
    # ncclGetBtree: clear the lowest set bit and set the next one up (or only clear it).
    # Tree 0: 4 -> 0; 2, 6 -> 4; 1, 3 -> 2; 5, 7 -> 6. Tree 1 (8 is even: mirrored, r -> 7 - r):
    # 3 -> 7; 5, 1 -> 3; 6, 4 -> 5; 2, 0 -> 1.
    t0, t1 = double_binary_tree(8)
    assert sorted(t0) == [(1, 2), (2, 4), (3, 2), (4, 0), (5, 6), (6, 4), (7, 6)]
    assert sorted(t1) == [(0, 1), (1, 3), (2, 1), (3, 7), (4, 5), (5, 3), (6, 5)]


def test_tree_step_of_8_servers():
    # Each tree carries half of a 2-byte buffer up and down: 1 B per edge and direction. The
    # pairs {1, 2} and {5, 6} are edges of both trees: 2 B each way. Inner ranks of one tree
    # (1..6) have three neighbours there and one in the other: 4 B out = twice the buffer; the
    # roots' partners 0 and 7 have one neighbour in each tree: 2 B.
    servers = [f"n{i}" for i in range(8)]
    d = double_binary_tree_step(servers, 2.0)
    assert d.level == "server" and d.name == "tree step"
    assert d.total_bytes == 2 * 7 * 2 * 1.0
    assert d.entries[("n1", "n2")] == d.entries[("n6", "n5")] == 2.0
    assert d.entries[("n4", "n0")] == d.entries[("n3", "n7")] == 1.0
    assert [d.out_bytes(s) for s in servers] == [2.0, 4, 4, 4, 4, 4, 4, 2]
    assert d.out_bytes("n3") == d.in_bytes("n3") and d.peak_bytes == 4.0


def test_ring_on_4_servers():
    d = ring_step([3, 1, 0, 2], 6.0)  # the ring order is the order given
    assert dict(d.entries) == {(3, 1): 6.0, (1, 0): 6.0, (0, 2): 6.0, (2, 3): 6.0}
    assert d.terminals == (0, 1, 2, 3) and d.name == "ring step"
    assert [d.load(s) for s in d.terminals] == [6.0] * 4
    # every server sends and receives 6 B; over 2 B/s each (server 2 at 3 B/s): 3 s
    assert d.hose_time({0: 2.0, 1: 2.0, 2: 3.0, 3: 2.0}) == pytest.approx(3.0)
    assert ring_step(["a", "b"]).total_bytes == 2.0  # two servers exchange both ways


def test_subcluster_alltoall():
    # 3 servers of 2 GPUs: each GPU sends 1 B to each of the 4 GPUs elsewhere; a server pair
    # carries 2 x 2 = 4 B, and each server sends 8 B.
    d = subcluster_alltoall([0, 1, 2], 2, 1.0)
    assert d.uniform and d.bytes_per_pair == 4.0 and sum(1 for _ in d.pairs()) == 6
    assert d.out_bytes(0) == d.in_bytes(2) == d.peak_bytes == 8.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ring_step([0]), "at least two servers"),
        (lambda: ring_step([0, 1, 0]), "repeat"),
        (lambda: ring_step([0, 1], 0.0), "finite and > 0"),
        (lambda: double_binary_tree_step([0]), "at least two servers"),
        (lambda: subcluster_alltoall([0, 1], 0), "gpus per node"),
    ],
)
def test_bad_collective_steps_are_refused(call, match):
    with pytest.raises(TopoError, match=match):
        call()
