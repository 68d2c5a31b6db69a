"""The general LP (one commodity per terminal): valid flows, no transit through servers, and
every reduction held against it."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.exact.general import general_lp
from topo.flow.solve.lp import Commodity

from .._validate import validate_flows

NIC = 50.0  # GB/s: a 400 Gb/s NIC, 400e9 / 8 / 1e9


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=22)),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=24)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=2, gpus=32)),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, pcie_GBps=10)),
    ],
)
def test_reductions_match_the_general_lp(family, kw):
    G = build(family, **kw)
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(general.pair_rate_Bps / 1e9, rel=1e-6)
    assert auto.gpus == general.gpus


def test_general_lp_flows_are_valid_and_never_transit_a_server():
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    terms, arcs, cap, sol = general_lp(G, "gpu", 10**7, keep_flows=True)
    assert len(terms) == 16
    coms = [Commodity(source=t, demands={t2: 1.0 for t2 in terms if t2 != t}) for t in terms]
    validate_flows(arcs, cap, coms, sol)
    kind = dict(G.nodes(data="kind"))
    for t, flows in zip(terms, sol.commodity_flow, strict=True):
        server = G.nodes[t]["node"]
        for a, x in flows.items():
            u, v = arcs[a]
            if x > 1e-9 and kind[u] == "nic" and kind[v] in ("leaf", "spine"):
                assert G.nodes[u]["node"] == server, "flow leaves a server it does not start in"


def test_one_server():
    # 8 GPUs in one server: each sends 7 lambda. In an MPFT every NIC is alone on its plane,
    # so all of it crosses the GPU's 200 GB/s NVLink: busbw = 7 lambda = 200 GB/s. In an FT2
    # the 8 NICs share a leaf, so a GPU can also loop traffic through its NIC and the leaf,
    # min(PCIe 64, cable 50) = 50 GB/s more: busbw = 250 GB/s.
    assert alltoall_bandwidth(build("mpft", gpus=8)).alltoall_busbw_Bps / 1e9 == pytest.approx(200)
    assert alltoall_bandwidth(build("ft2", gpus=8)).alltoall_busbw_Bps / 1e9 == pytest.approx(250)
