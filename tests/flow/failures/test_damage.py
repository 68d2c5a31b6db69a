"""Failures: reproducible by seed, named ones refused when unknown, disconnected servers
reported, and the exact reductions on damaged fabrics held against the general LP."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.failures.damage import (
    cables,
    copy_fabric,
    disconnected_terminals,
    fail,
    without_servers,
)

NIC = 50.0  # GB/s per 400G NIC


def small(family: str, **kw):
    base = dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)
    if family in ("ft2", "ft3"):
        base = dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)
    base.update(kw)
    return build(family, **base)


def test_same_seed_same_failures_and_the_input_is_untouched() -> None:
    G = small("mpft")
    n_edges = G.number_of_edges()
    a = fail(G, links=5, switches=2, seed=7)[1]
    b = fail(G, links=5, switches=2, seed=7)[1]
    c = fail(G, links=5, switches=2, seed=8)[1]
    assert a == b
    assert a != c
    assert G.number_of_edges() == n_edges
    assert len(a.links) == 5 and len(a.switches) == 2


def test_a_bundle_loses_one_cable_at_a_time() -> None:
    # 4-port FT2 with 2 GPUs/NICs per node and 3:1? Use a hand-made bundle instead: double
    # one leaf-spine edge (2 cables, 100 GB/s) and fail every cable of the fabric but that one.
    G = small("ft2")
    G.edges["leaf0", "spine0"].update(links=2, capacity=2 * NIC * 1e9)
    n_cables = sum(int(G.edges[e].get("links", 1)) for e in cables(G))
    H, fs = fail(G, links=n_cables - 1, seed=0)
    left = [e for e in cables(H)]
    assert len(left) == 1
    d = H.edges[left[0]]
    assert int(d.get("links", 1)) == 1
    if set(left[0]) == {"leaf0", "spine0"}:
        assert d["capacity"] == pytest.approx(NIC * 1e9)
    assert fs.capacity_lost_Bps == pytest.approx((n_cables * NIC - NIC) * 1e9)


def test_named_failures_and_their_errors() -> None:
    G = small("ft2")
    H, fs = fail(G, named=["spine0", "leaf1--spine2"])
    assert "spine0" not in H and not H.has_edge("leaf1", "spine2")
    assert fs.switches == ("spine0",) and fs.links == (("leaf1", "spine2"),)
    H, _ = fail(G, named=["spine2--leaf1"])  # either order
    assert not H.has_edge("leaf1", "spine2")
    with pytest.raises(TopoError, match="neither a switch nor a link"):
        fail(G, named=["spine99"])
    # NVLink, PCIe and the vertices inside a server do not fail here; the error says so (it
    # said "neither a switch nor a link of the fabric" of an edge in the fabric's JSON).
    # (the library names its parameter, named; topo bandwidth spells it --fail)
    only = "only cables to switches fail (NIC cables and switch-to-switch links) and switches"
    with pytest.raises(TopoError) as e:
        fail(G, named=["node0/gpu0--node0/nvswitch"])
    assert _on_the_command_line(e.value) == (
        f"--fail 'node0/gpu0--node0/nvswitch' is a link inside a server (nvlink): {only}"
    )
    with pytest.raises(TopoError) as e:
        fail(G, named=["node0/nic0--node0/gpu0"])
    assert _on_the_command_line(e.value) == (
        f"--fail 'node0/nic0--node0/gpu0' is a link inside a server (pcie): {only}"
    )
    with pytest.raises(TopoError) as e:
        fail(G, named=["node0/gpu0"])
    assert _on_the_command_line(e.value) == (
        "--fail 'node0/gpu0' is a gpu, not a switch, and has no cable to a switch: only cables "
        "to switches (NIC cables and switch-to-switch links) and switches fail"
    )
    nic_leaf = next(s for s in G.adj["node0/nic0"] if s.startswith("leaf"))
    with pytest.raises(TopoError) as e:
        fail(G, named=["node0/nic0"])
    assert _on_the_command_line(e.value) == (
        f"--fail 'node0/nic0' is a nic, not a switch: name one of its cables instead, e.g. "
        f"node0/nic0--{nic_leaf}"
    )
    fail(G, named=[f"node0/nic0--{nic_leaf}"])  # (the cable the error names does fail)
    with pytest.raises(TopoError, match="named twice"):
        fail(G, named=["spine0", "spine0"])
    with pytest.raises(TopoError, match="already failed"):
        fail(G, named=["leaf1--spine2", "spine2--leaf1"])
    with pytest.raises(TopoError, match="already failed"):
        fail(G, named=["spine2", "leaf1--spine2"])
    # 8-port FT2: 8 leaves (4 down, 4 up) and 4 spines.
    with pytest.raises(TopoError, match="has 12 switches"):
        fail(G, switches=13)
    with pytest.raises(TopoError, match=">= 0"):
        fail(G, links=-1)


def test_a_server_without_cables_is_reported_disconnected() -> None:
    G = small("ft2")
    mine = [v for v, d in G.nodes(data=True) if d["kind"] == "nic" and d["node"] == 3]
    H, _ = fail(
        G, named=[f"{nic}--{next(iter(s for s in G.adj[nic] if 'leaf' in s))}" for nic in mine]
    )
    kept, cut = disconnected_terminals(H)
    assert cut == [3]
    assert 3 not in kept and len(kept) == 15
    r = alltoall_bandwidth(without_servers(H, cut))
    # 15 servers of 2 GPUs on a non-blocking fabric: NIC-bound, 2 NICs for 2 x 28 peers.
    assert r.pair_rate_Bps / 1e9 == pytest.approx(2 * NIC / (2 * 28), rel=1e-6)


def test_one_dead_nic_cable_in_mpft_binds_its_server() -> None:
    # MPFT of 8-port switches, 4 planes: 32 servers x 4 GPUs = 128 GPUs. Intact, each server
    # sends 4 x 124 lambda over 4 x 50 GB/s; with one NIC cable dead, over 3 x 50 GB/s.
    G = small("mpft")
    nic = "node0/nic1"
    leaf = next(s for s in G.adj[nic] if G.nodes[s]["kind"] == "leaf")
    intact = alltoall_bandwidth(G).pair_rate_Bps / 1e9
    r = alltoall_bandwidth(fail(G, named=[f"{nic}--{leaf}"])[0])
    assert intact == pytest.approx(4 * NIC / (4 * 124), rel=1e-6)
    assert r.pair_rate_Bps / 1e9 == pytest.approx(3 * NIC / (4 * 124), rel=1e-6)
    assert any("plane merging" in line for line in r.reductions)


@pytest.mark.parametrize(
    "family,seed,kw",
    [
        ("mpft", 0, {"gpus": 48}),
        ("mpft", 1, {"gpus": 64}),
        ("mpft", 2, {"gpus": 48, "gpus_per_node": 2, "nics_per_node": 2}),
        ("mrft", 0, {}),
        ("mrft", 1, {"gpus": 24}),
        ("ft2", 0, {}),
        ("ft2", 1, {"oversubscription": 3}),
        ("ft3", 0, {"gpus": 32}),
        ("ft3", 1, {"gpus": 40}),
    ],
)
def test_damaged_fabrics_reduced_equals_general(family: str, seed: int, kw: dict) -> None:
    G, _ = fail(small(family, **kw), links=2, switches=seed % 2, seed=seed)
    kept, cut = disconnected_terminals(G)
    if cut:
        G = without_servers(G, cut)
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(general.pair_rate_Bps / 1e9, rel=1e-6)
    assert auto.lp.variables < general.lp.variables


def test_failures_in_two_planes_keep_a_consistent_leaf_shift() -> None:
    # Damage under leaf 0 of plane 1 and leaf 3 of plane 2: the leaves of every plane whose
    # servers sit under either damaged leaf must stay in place (in all planes at once); the
    # other leaves still shift, and the result is the general LP's.
    G = small("mpft", gpus=64)
    H, _ = fail(G, named=["p1/leaf0--p1/spine0", "p2/leaf3--p2/spine1"])
    auto = alltoall_bandwidth(H)
    assert any("class symmetry" in line for line in auto.reductions)
    general = alltoall_bandwidth(H, method="general")
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(general.pair_rate_Bps / 1e9, rel=1e-6)


def test_names_holding_the_separator_or_integer_ids_are_resolved_or_refused() -> None:
    import networkx as nx

    # switches "a--b", "a", "b--c", "c": 'a--b--c' is the cable a--b / c or a / b--c
    G = build("ft2", switch_ports=4)
    spines = sorted(v for v, k in G.nodes(data="kind") if k == "spine")
    leaves = sorted(v for v, k in G.nodes(data="kind") if k == "leaf")
    H = nx.relabel_nodes(G, {leaves[0]: "a--b", spines[0]: "c", leaves[1]: "a", spines[1]: "b--c"})
    if not H.has_edge("a--b", "c") or not H.has_edge("a", "b--c"):
        pytest.skip("the 4-port ft2 joins every leaf to every spine")
    with pytest.raises(TopoError, match=r"^named 'a--b--c' names 'a'-'b--c' and 'a--b'-'c'"):
        fail(H, named=["a--b--c"])
    _, f = fail(H, named=["a--c"])  # (one reading only)
    assert f.links == (("a", "c"),) or f.links == (("c", "a"),)
    # integer ids are named by their digits; an integer and a string of the same digits clash
    ints = nx.relabel_nodes(G, {v: i for i, v in enumerate(G)})
    s0 = next(i for i, v in enumerate(G) if v == spines[0])
    _, f = fail(ints, named=[str(s0)])
    assert f.switches == (s0,)
    both = nx.relabel_nodes(ints, {s0 + 1: str(s0)})  # the next vertex, renamed '<s0>'
    with pytest.raises(TopoError, match="ambiguous"):
        fail(both, named=[str(s0)])


def _on_the_command_line(exc: TopoError) -> str:
    """The error as ``topo bandwidth --fail`` prints it."""
    from topo.cli_common import error_line
    from topo.commands.bandwidth import bandwidth

    return error_line(exc, bandwidth)


def _as_lists(G):
    return (
        dict(G.graph),
        [(n, list(d.items())) for n, d in G._node.items()],
        [(u, [(v, list(d.items())) for v, d in nbrs.items()]) for u, nbrs in G._adj.items()],
    )


def test_copy_fabric_is_networkx_copy_in_every_order() -> None:
    # Against networkx's own copy: the same vertices, neighbours and attributes in the same
    # order, on a built fabric and on one whose adjacency order failures reshuffled (an edge
    # removed and a bundle reduced); one dict per edge, shared by its two directions, and
    # changing the copy leaves the fabric as it was.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    H, _ = fail(G, links=5, seed=3)
    H.add_edge("p0/leaf0", "node3/nic1", capacity=1.0, links=1)  # (a new neighbour order)
    for F in (G, H):
        C = copy_fabric(F)
        assert _as_lists(C) == _as_lists(F.copy())
        u, v = next(iter(C.edges()))
        assert C._adj[u][v] is C._adj[v][u] and C._adj[u][v] is not F._adj[u][v]
        C.edges[u, v]["capacity"] = -1.0
        C.nodes[u]["kind"] = "changed"
        assert F.edges[u, v]["capacity"] > 0 and F.nodes[u]["kind"] != "changed"
