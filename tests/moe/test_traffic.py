"""Placement and copy matrices against hand counts on a small cluster."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.moe import copy_matrices, default_ep, destinations, ep_layout

# 2 nodes x 2 GPUs: ranks 0, 1 on node 0 and 2, 3 on node 1; expert e on rank e.
G4 = build("ft2", switch_ports=8, gpus=4, gpus_per_node=2, nics_per_node=2)
# One token per rank, two experts each.
ROUTING = np.array([[2, 3], [0, 3], [2, 0], [0, 1]])


def matrix(pairs, n=4):
    m = np.zeros((n, n), dtype=int)
    for (i, j), c in pairs.items():
        m[i, j] = c
    return m


def test_naive_hand_count():
    lay = ep_layout(G4, 4)
    src, dest = destinations(lay, ROUTING, 1, "local")
    m = copy_matrices(src, dest, 2, 4, "naive")
    # rank 0 -> 2, 3 (other node); rank 1 -> 0 (NVLink), 3; rank 2 -> 2 (itself: no copy), 0;
    # rank 3 -> 0, 1.
    np.testing.assert_array_equal(
        m.ib, matrix({(0, 2): 1, (0, 3): 1, (1, 3): 1, (2, 0): 1, (3, 0): 1, (3, 1): 1})
    )
    np.testing.assert_array_equal(m.nvlink, matrix({(1, 0): 1}))


def test_deepep_hand_count():
    lay = ep_layout(G4, 4)
    src, dest = destinations(lay, ROUTING, 1, "local")
    m = copy_matrices(src, dest, 2, 4, "deepep")
    # rank 0: one IB copy to node 1's GPU 0 (rank 2), which forwards to rank 3 over NVLink.
    # rank 1: NVLink to 0; IB to node 1's GPU 1 (rank 3), which is the expert's rank.
    # rank 2: IB to node 0's GPU 0 (rank 0), the expert's rank.
    # rank 3: IB to node 0's GPU 1 (rank 1), which keeps one and forwards one to rank 0.
    np.testing.assert_array_equal(m.ib, matrix({(0, 2): 1, (1, 3): 1, (2, 0): 1, (3, 1): 1}))
    np.testing.assert_array_equal(m.nvlink, matrix({(2, 3): 1, (1, 0): 2}))
    c = m.transposed()  # combine: the same hops back
    np.testing.assert_array_equal(c.ib, matrix({(2, 0): 1, (3, 1): 1, (0, 2): 1, (1, 3): 1}))
    np.testing.assert_array_equal(c.nvlink, matrix({(3, 2): 1, (0, 1): 2}))


def test_deepep_sends_one_copy_per_node_and_rank():
    # Two experts on the same rank and two ranks on the same remote node: naive sends 4 network
    # copies, DeepEP one, plus one NVLink forward.
    src, dest = np.array([0]), np.array([[2, 2, 3, 3]])
    naive = copy_matrices(src, dest, 2, 4, "naive")
    deep = copy_matrices(src, dest, 2, 4, "deepep")
    assert naive.ib.sum() == 4 and naive.nvlink.sum() == 0
    np.testing.assert_array_equal(deep.ib, matrix({(0, 2): 1}))
    np.testing.assert_array_equal(deep.nvlink, matrix({(2, 3): 1}))


def test_shared_expert_copies():
    lay = ep_layout(G4, 4)
    src, dest = destinations(lay, ROUTING, 1, "remote")
    # Two nodes: token 0 of rank r sends its shared copy to rank r + 2 (1 + 0 mod 1 nodes on).
    assert dest[:, -1].tolist() == [2, 3, 0, 1]
    # 3 nodes of 2 GPUs, 2 tokens per rank: token t goes 1 + t mod 2 nodes on, same GPU index.
    G6 = build("ft2", switch_ports=8, gpus=6, gpus_per_node=2, nics_per_node=2)
    _, d = destinations(ep_layout(G6, 6), np.zeros((12, 1), dtype=int), 2, "remote")
    assert d[:, -1].tolist() == [2, 4, 3, 5, 4, 0, 5, 1, 0, 2, 1, 3]
    assert np.bincount(d[:, -1]).tolist() == [2] * 6  # T = 2 shared copies per rank
    # Inside one server of 2 GPUs: the other GPU.
    one = ep_layout(G4, 2, ep=2)
    _, d1 = destinations(one, np.array([[0], [1]]), 1, "remote")
    assert d1[:, -1].tolist() == [1, 0]


def test_expert_free_ranks_host_the_shared_expert():
    # 8 ranks on 4 nodes, 4 experts: ranks 0-3 hold one each, free ranks 4-7 (nodes 2, 3) host
    # the shared copies; a token of GPU index l goes to a free rank of GPU index l, token t of
    # node n to the ((2 n + t) mod 2)-th: GPU 0 tokens -> 4, 6; GPU 1 tokens -> 5, 7.
    G = build("ft2", switch_ports=8, gpus=8, gpus_per_node=2, nics_per_node=2)
    lay = ep_layout(G, 4, ep=8)
    assert lay.expert_rank.tolist() == [0, 1, 2, 3]
    assert lay.free_ranks.tolist() == [4, 5, 6, 7]
    _, dest = destinations(lay, np.zeros((16, 1), dtype=int), 2, "remote")
    assert dest[:, -1].tolist() == [4, 6, 5, 7] * 4
    assert np.bincount(dest[:, -1]).tolist() == [0, 0, 0, 0, 4, 4, 4, 4]


def test_layout_blocks_and_nvlink():
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=4, nics_per_node=4)
    lay = ep_layout(G, 32, ep=8)
    assert lay.nodes == 2 and lay.gpus_per_node == 4
    assert lay.gpus[:5] == ["node0/gpu0", "node0/gpu1", "node0/gpu2", "node0/gpu3", "node1/gpu0"]
    assert lay.expert_rank.tolist() == [e // 4 for e in range(32)]  # 32 / 8 = 4 per rank
    assert lay.expert_node.tolist() == [e // 16 for e in range(32)]
    assert lay.nvlink_Bps.tolist() == [200e9] * 8  # the builder's default 200 GB/s
    assert default_ep(G, 32) == 16 and default_ep(G, 8) == 8 and default_ep(G, 6) == 3


@pytest.mark.parametrize(
    ("ep", "match"),
    [
        (0, "^ep must be from 1 to the fabric's 16 GPUs, got 0"),
        (32, "^ep must be from 1 to the fabric's 16 GPUs, got 32"),
        (6, "^ep 6 does not span whole servers of 4 GPUs"),
        (12, "^ep 12 does not divide the 32 routed experts"),
    ],
)
def test_layout_refusals(ep, match):
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=4, nics_per_node=4)
    with pytest.raises(TopoError, match=match):
        ep_layout(G, 32, ep=ep)


def test_fabric_without_gpus():
    import networkx as nx

    G = nx.Graph()
    G.add_node("sw", kind="switch", tier=1, plane=0, rail=-1, ports=8)
    with pytest.raises(TopoError, match="the fabric has no GPUs"):
        ep_layout(G, 8)
