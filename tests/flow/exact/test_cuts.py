"""The bottleneck links of an LP optimum include every cut the rate meets (topo.flow.exact.cuts).

An LP's dual prices one certificate among several when the optimum is degenerate: three
servers that each lost a cable bind alike, and the dual may name one. Every link the report
lists must be full in *every* optimal flow; that is checked here by an independent LP (scipy's
``linprog`` on the uncontracted fabric, one commodity per source GPU): the least load the link
can carry while every pair still gets the optimal rate is its capacity.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from topo.builders import build
from topo.flow import alltoall_bandwidth


def _damaged(G: nx.Graph, cables: list[tuple[str, str]]) -> nx.Graph:
    H = G.copy()
    H.remove_edges_from(cables)
    return H


class _Flow:
    """The all-to-all of the GPUs of ``G`` as an LP over every link direction: one commodity
    per source GPU, which sends ``lam`` to every other GPU; every vertex but a source and the
    GPUs conserves flow (so servers forward nothing but through their own GPUs and NICs, as
    the fabric's edges allow)."""

    def __init__(self, G: nx.Graph) -> None:
        self.arcs = [(u, v) for a, b in G.edges() for u, v in ((a, b), (b, a))]
        self.cap = np.array([G.edges[a]["capacity"] / 1e9 for a in self.arcs])  # GB/s
        self.gpus = [v for v, k in G.nodes(data="kind") if k == "gpu"]
        vid = {v: i for i, v in enumerate(G)}
        n_v, n_a, k = len(vid), len(self.arcs), len(self.gpus)
        self.n_x = k * n_a  # flow variables, then lam
        rows, cols, vals = [], [], []
        # conservation of commodity c at vertex w: out - in - demand(c, w) lam = 0
        for c in range(k):
            for a, (u, v) in enumerate(self.arcs):
                rows += [c * n_v + vid[u], c * n_v + vid[v]]
                cols += [c * n_a + a, c * n_a + a]
                vals += [1.0, -1.0]
            for j, g in enumerate(self.gpus):
                rows.append(c * n_v + vid[g])
                cols.append(self.n_x)
                vals.append(-(k - 1.0) if j == c else 1.0)
        self.A_eq = coo_matrix((vals, (rows, cols)), shape=(k * n_v, self.n_x + 1)).tocsr()
        # capacity of every arc: the sum over commodities
        r = [a for c in range(k) for a in range(n_a)]
        col = [c * n_a + a for c in range(k) for a in range(n_a)]
        self.A_ub = coo_matrix((np.ones(len(r)), (r, col)), shape=(n_a, self.n_x + 1)).tocsr()

    def _solve(self, obj: np.ndarray, bounds: object) -> object:
        res = linprog(
            obj,
            A_ub=self.A_ub,
            b_ub=self.cap,
            A_eq=self.A_eq,
            b_eq=np.zeros(self.A_eq.shape[0]),
            bounds=bounds,
            method="highs",
        )
        assert res.status == 0
        return res

    def best_rate(self) -> float:
        """The maximum concurrent pair rate (GB/s)."""
        obj = np.zeros(self.n_x + 1)
        obj[-1] = -1.0
        return float(self._solve(obj, (0, None)).x[-1])

    def least_load(self, arc: tuple[str, str], lam: float) -> float:
        """The least total load (GB/s) on ``arc`` over all flows at pair rate ``lam``."""
        a = self.arcs.index(arc)
        obj = np.zeros(self.n_x + 1)
        obj[a : self.n_x : len(self.arcs)] = 1.0
        return float(self._solve(obj, [(0, None)] * self.n_x + [(lam, lam)]).fun)


def test_every_listed_link_is_full_in_every_optimal_flow():
    # 4 planes, 8 servers of 4 GPUs; servers 0 and 5 each lose one NIC cable: both are bound
    # alike by their 3 cables left, lam = 3 x 50 / (4 (32 - 4)) GB/s.
    G = _damaged(
        build("mpft", switch_ports=4, gpus_per_node=4, nics_per_node=4),
        [("node0/nic1", "p1/leaf0"), ("node5/nic2", "p2/leaf2")],
    )
    r = alltoall_bandwidth(G)
    lam = r.pair_rate_Bps / 1e9
    assert lam == pytest.approx(3 * 50 / (4 * 28), rel=1e-7)
    flow = _Flow(G)
    assert flow.best_rate() == pytest.approx(lam, rel=1e-7)
    listed = {(b.source, b.target) for b in r.bottleneck_links}
    # Both directions of the 3 cables left to each of the two servers.
    for server, lost in (("node0", 1), ("node5", 2)):
        for i in set(range(4)) - {lost}:
            nic = f"{server}/nic{i}"
            leaf = next(u for u in G.adj[nic] if G.nodes[u]["kind"] == "leaf")
            assert {(nic, leaf), (leaf, nic)} <= listed
    for arc in sorted(listed):
        cap = G.edges[arc]["capacity"] / 1e9
        assert flow.least_load(arc, lam * (1 - 1e-9)) == pytest.approx(cap, rel=1e-6), arc
    # (the check can fail: an intact server's cable has room in some optimal flow)
    assert flow.least_load(("node1/nic0", "p0/leaf0"), lam) < 50 * 0.99


def test_three_damaged_servers_are_all_listed():
    # The trial's case: an MPFT of 16-port switches (8 planes, 128 servers) with one cable of
    # each of three servers dead. Each keeps 7 of its 8 cables and binds alike; every one of
    # those 21 cables is full both ways in every optimal flow (their cut is met), and nothing
    # else is: no leaf or pod cut is met (a leaf keeps 8 uplinks for at most 8 NIC cables).
    dead = [
        ("node13/nic6", "p6/leaf1"),
        ("node43/nic3", "p3/leaf5"),
        ("node70/nic7", "p7/leaf8"),
    ]
    G = _damaged(build("mpft", switch_ports=16), dead)
    r = alltoall_bandwidth(G)
    assert r.pair_rate_Bps / 1e9 == pytest.approx(7 * 50 / (8 * (1024 - 8)), rel=1e-7)
    expected = set()
    for nic, _ in dead:
        server = nic.split("/")[0]
        for i in range(8):
            v = f"{server}/nic{i}"
            for u in G.adj[v]:
                if G.nodes[u]["kind"] == "leaf":
                    expected |= {(v, u), (u, v)}
    assert len(expected) == 42
    assert {(b.source, b.target) for b in r.bottleneck_links} == expected
    assert any("3 cuts this rate meets" in s for s in r.reductions)
