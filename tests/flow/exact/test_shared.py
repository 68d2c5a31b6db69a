"""shared_flow: several demands at once, some scaled and some fixed, against hand-worked cuts and
the door's single-demand LP."""

from __future__ import annotations

import pytest

from tests._ibdump import ib_dump
from topo.builders import build
from topo.errors import InfeasibleError, TopoError
from topo.flow import concurrent_flow, shared_flow
from topo.flow.solve.lp import Commodity, max_concurrent_flow
from topo.formats import import_ibnetdiscover
from topo.traffic import Demand, permutation

NIC_Bps = 50e9  # one 400G cable: 400e9 / 8 B/s per direction


@pytest.fixture(scope="module")
def ft2():
    """Non-blocking FT2 of 4-port switches: 4 leaves of 2 servers, 1 GPU and 1 NIC each."""
    return build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)


def one_pair(a, b):
    return Demand("server", (a, b), {(a, b): 1.0})


def test_fixed_demand_takes_its_share_of_a_nic_first(ft2):
    # both demands leave node0 through its one NIC: theta = 50 - 20 GB/s
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(0, 2)], [None, 20e9])
    assert r.theta == pytest.approx(NIC_Bps - 20e9, rel=1e-6)
    assert r.rates == pytest.approx((30e9, 20e9), rel=1e-6)


def test_two_scaled_demands_on_one_nic_get_half_each(ft2):
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(0, 3)], [None, None])
    assert r.theta == pytest.approx(NIC_Bps / 2, rel=1e-6)


def test_link_loads_are_per_demand(ft2):
    # demand 0 -> 1 stays in leaf0; demand 2 -> 3 in leaf1: disjoint cables, each at 50 GB/s
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(2, 3)], [None, None])
    assert r.theta == pytest.approx(NIC_Bps, rel=1e-6)
    assert r.link_load[0] == pytest.approx(
        {("node0/nic0", "leaf0"): NIC_Bps, ("leaf0", "node1/nic0"): NIC_Bps}, rel=1e-6
    )
    assert r.link_load[1] == pytest.approx(
        {("node2/nic0", "leaf1"): NIC_Bps, ("leaf1", "node3/nic0"): NIC_Bps}, rel=1e-6
    )


def test_one_demand_matches_the_door():
    # a 2:1 oversubscribed FT2 and a permutation of its 24 servers: the door's LP is the reference
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    d = permutation(G, {i: (7 * i + 5) % 24 for i in range(24)}, level="server")
    assert shared_flow(G, [d], [None]).theta == pytest.approx(concurrent_flow(G, d).theta, rel=1e-6)


def test_planes_are_folded_exactly():
    # MPFT, 2 planes: a server's 2 NICs (one per plane) carry 2 x 50 GB/s to its peer
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    r = shared_flow(G, [one_pair(0, 1), one_pair(2, 3)], [None, 60e9])
    assert r.theta == pytest.approx(2 * NIC_Bps, rel=1e-6)
    loads = r.link_load[1]
    assert loads[("node2/nic0", "p0/leaf1")] == pytest.approx(30e9, rel=1e-6)


def test_fixed_rates_too_high_are_infeasible(ft2):
    with pytest.raises(InfeasibleError, match="fixed rates cannot be carried"):
        shared_flow(ft2, [one_pair(0, 1), one_pair(0, 2), one_pair(4, 5)], [60e9, None, None])


@pytest.mark.parametrize(
    ("rates", "match"),
    [
        ([1e9, 1e9], "no demand to scale"),
        ([None], "one per demand"),
        ([None, -1.0], "finite and >= 0"),
        ([None, float("nan")], "finite and >= 0"),
    ],
)
def test_bad_rates_are_refused(ft2, rates, match):
    with pytest.raises(TopoError, match=match):
        shared_flow(ft2, [one_pair(0, 1), one_pair(2, 3)], rates)


def test_unknown_server_is_refused(ft2):
    with pytest.raises(TopoError, match="99.*not a server of the fabric"):
        shared_flow(ft2, [one_pair(0, 99)], [None])


def test_gpu_level_demands_are_summed_per_server_pair(ft2):
    # node0/gpu0 -> node1/gpu0 is server 0 -> server 1: the NIC's 50 GB/s
    d = Demand("gpu", ("node0/gpu0", "node1/gpu0"), {("node0/gpu0", "node1/gpu0"): 1.0})
    assert shared_flow(ft2, [d], [None]).theta == pytest.approx(NIC_Bps, rel=1e-6)
    bad = Demand("gpu", ("node0/gpu0", "ghost"), {("node0/gpu0", "ghost"): 1.0})
    with pytest.raises(TopoError, match="'ghost', which is not a GPU of the fabric"):
        shared_flow(ft2, [bad], [None])


def test_a_demand_inside_one_server_is_refused():
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    inside = Demand("gpu", ("node0/gpu0", "node0/gpu1"), {("node0/gpu0", "node0/gpu1"): 1.0})
    with pytest.raises(TopoError, match="demand 0 .* no bytes between distinct servers"):
        shared_flow(G, [inside], [None])


def read(storage, readers):
    """Each reader takes 1 B, spread evenly over the storage servers."""
    entries = {(s, r): 1.0 / len(storage) for s in storage for r in readers}
    return Demand("server", tuple(sorted({*storage, *readers})), entries)


def test_twin_storage_servers_split_their_readers_evenly(ft2):
    # storage 6, 7 (both on leaf3, one 50 GB/s NIC each) serve readers 0..3: each sends
    # 4 x theta / 2 <= 50, theta = 25 GB/s; each NIC carries 50 GB/s, full
    r = shared_flow(ft2, [read((6, 7), (0, 1, 2, 3))], [None])
    assert r.theta == pytest.approx(25e9, rel=1e-6)
    load = r.link_load[0]
    assert load[("node6/nic0", "leaf3")] == pytest.approx(NIC_Bps, rel=1e-6)
    assert load[("node7/nic0", "leaf3")] == pytest.approx(NIC_Bps, rel=1e-6)


def test_servers_a_demand_tells_apart_are_not_twins(ft2):
    # as above, and 6 also sends 40 GB/s to 4 (fixed): 6's NIC carries 2 theta + 40 <= 50,
    # theta = 5 GB/s (6 and 7 pooled as one vertex would give 4 theta + 40 <= 100, 15 GB/s)
    r = shared_flow(ft2, [read((6, 7), (0, 1, 2, 3)), one_pair(6, 4)], [None, 40e9])
    assert r.theta == pytest.approx(5e9, rel=1e-6)


# -- storage hosts without GPUs (an import's non-compute hosts) ---------------------------------

# Two GPU leaves and a storage leaf under two spines, imported with 2 GPUs per compute host:
# leaf1: gpu01, gpu02 (2 NDR CAs each, 50 GB/s); up: spine1, spine2 (NDR)
# leaf2: gpu03 (2 NDR CAs), stor01 (1 NDR CA); up: spine1 (NDR), spine2 (HDR, 25 GB/s)
# leaf3: stor02 (2 HDR CAs, 25 GB/s each); up: spine1 (NDR)
STORAGE_FABRIC = [
    ("leaf1", 1, "gpu01 HCA-1", 1, "4xNDR"),
    ("leaf1", 2, "gpu01 HCA-2", 1, "4xNDR"),
    ("leaf1", 3, "gpu02 HCA-1", 1, "4xNDR"),
    ("leaf1", 4, "gpu02 HCA-2", 1, "4xNDR"),
    ("leaf1", 5, "spine1", 1, "4xNDR"),
    ("leaf1", 6, "spine2", 1, "4xNDR"),
    ("leaf2", 1, "gpu03 HCA-1", 1, "4xNDR"),
    ("leaf2", 2, "gpu03 HCA-2", 1, "4xNDR"),
    ("leaf2", 3, "stor01 HCA-1", 1, "4xNDR"),
    ("leaf2", 5, "spine1", 2, "4xNDR"),
    ("leaf2", 6, "spine2", 2, "4xHDR"),
    ("leaf3", 1, "stor02 HCA-1", 1, "4xHDR"),
    ("leaf3", 2, "stor02 HCA-2", 1, "4xHDR"),
    ("leaf3", 5, "spine1", 3, "4xNDR"),
]


@pytest.fixture(scope="module")
def with_storage(tmp_path_factory):
    path = tmp_path_factory.mktemp("storage") / "storage.topo"
    sizes = dict.fromkeys(("leaf1", "leaf2", "leaf3", "spine1", "spine2"), 8)
    path.write_text(ib_dump(sizes, STORAGE_FABRIC))
    return import_ibnetdiscover(path, gpus_per_host=2, compute_host_regex="^gpu")


def general_storage_lp(G, reads, writes):
    """The LP as defined on the whole graph, no contraction: each storage host a source and
    sink vertex joined to its NICs (arcs of its cables' capacity), each GPU a terminal, one
    commodity per source, no commodity leaving a server (NIC to switch) other than its own.
    ``reads``: storage -> {GPU: bytes}; ``writes``: GPU -> {storage: bytes}."""
    arcs, cap = [], []
    for u, v, e in G.edges(data=True):
        arcs += [(u, v), (v, u)]
        cap += [float(e["capacity"])] * 2
    storage = {s for s in reads} | {s for d in writes.values() for s in d}
    for s in sorted(storage):
        for nic in (v for v, d in G.nodes(data=True) if d.get("node") == s):
            c = sum(float(e["capacity"]) for e in G.adj[nic].values())
            arcs += [(("host", s), nic), (nic, ("host", s))]
            cap += [c, c]
    kind = dict(G.nodes(data="kind"))

    def server(v):
        return v[1] if isinstance(v, tuple) else G.nodes[v].get("node")

    def allowed(source_server):
        return [
            a
            for a, (u, v) in enumerate(arcs)
            if not (kind.get(u) == "nic" and kind.get(v) == "switch")
            or server(u) == source_server
        ]

    coms, use = [], []
    for s, d in reads.items():
        coms.append(Commodity(("host", s), dict(d)))
        use.append(allowed(s))
    for g, d in writes.items():
        coms.append(Commodity(g, {("host", s): x for s, x in d.items()}))
        use.append(allowed(G.nodes[g]["node"]))
    return max_concurrent_flow(arcs, cap, coms, commodity_arcs=use).theta


def test_storage_hosts_without_gpus_are_terminals_of_their_cables(with_storage):
    # read: each of the 6 GPUs of gpu01..gpu03 reads 1 B, half from each storage host;
    # write: each GPU of gpu03 writes 1 B to stor02; both scaled by theta.
    G = with_storage
    readers = ("gpu01", "gpu02", "gpu03")
    read_d = read(("stor01", "stor02"), readers)  # 1 B per server: scale to its 2 GPUs
    read_d = Demand("server", read_d.terminals, {k: 2 * x for k, x in read_d.entries.items()})
    write_d = Demand("server", ("gpu03", "stor02"), {("gpu03", "stor02"): 2.0})
    r = shared_flow(G, [read_d, write_d], [None, None])
    gpus = [f"{h}/gpu{i}" for h in readers for i in range(2)]
    reads = {s: dict.fromkeys(gpus, 0.5) for s in ("stor01", "stor02")}
    writes = {"gpu03/gpu0": {"stor02": 1.0}, "gpu03/gpu1": {"stor02": 1.0}}
    assert r.theta == pytest.approx(general_storage_lp(G, reads, writes), rel=1e-6)
    # by hand: stor02 sends 6 x 0.5 = 3 B per unit theta through its two 25 GB/s HDR cables
    # (50 GB/s; its leaf's one NDR uplink is 50 GB/s too): theta = 50 / 3 GB/s. stor01 also
    # sends 3 theta = 50 GB/s through its one NDR cable; nothing else is full.
    assert r.theta == pytest.approx(50e9 / 3, rel=1e-6)
    load = r.link_load[0]
    assert load[("stor02/HCA-1/p1", "leaf3")] == pytest.approx(25e9, rel=1e-6)
    assert load[("stor02/HCA-2/p1", "leaf3")] == pytest.approx(25e9, rel=1e-6)


def test_storage_hosts_no_demand_names_change_nothing(with_storage):
    # gpu01 -> gpu02 on one leaf, 2 NICs each: 100 GB/s, stor01 and stor02 idle
    d = Demand("server", ("gpu01", "gpu02"), {("gpu01", "gpu02"): 1.0})
    assert shared_flow(with_storage, [d], [None]).theta == pytest.approx(100e9, rel=1e-6)
