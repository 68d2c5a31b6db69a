"""The as-routed report: the rate over every link kind, JSON, the busiest links."""

from __future__ import annotations

import json

import pytest

from topo.builders import build
from topo.flow.routing import routed_alltoall


def test_pcie_and_nvlink_bind_as_routed_too():
    # 800G NICs behind 64 GB/s PCIe: each GPU's n - g inter-server pair-units cross its PCIe
    # link, so lambda = 64e9 / (n - g), as the optimum (docs/bandwidth.md).
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)
    r = routed_alltoall(G, "dmodk")
    n, g = 32, 2
    assert r.pair_rate_Bps == pytest.approx(64e9 / (n - g))
    assert set(r.bottleneck_tiers) == {"gpu->nic", "nic->gpu"}


def test_report_is_json_ready_and_names_the_busiest_links():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=5)
    r = routed_alltoall(G, "dmodk")
    d = json.loads(json.dumps(r.to_dict()))
    assert "link_load" not in d
    for key in (
        "routing",
        "seed",
        "flows_per_pair",
        "pxn",
        "gpus",
        "nodes",
        "pair_rate_GBps",
        "alltoall_busbw_GBps",
        "expected_pair_rate_GBps",
        "max_link_utilization",
        "tiers",
        "most_loaded_links",
    ):
        assert key in d
    assert d["gpus"] == 5 and d["nodes"] == 5 and d["routing"] == "dmodk"
    full = json.loads(json.dumps(r.to_dict(link_load=True)))
    assert len(full["link_load"]) == 2 * G.number_of_edges()
    top = r.routing.loaded_links[0]
    assert top.utilization == pytest.approx(1.0)
    assert top.load_Bps == pytest.approx(50e9)
    tiers = {t.tier: t for t in r.routing.tiers}
    assert tiers["spine->leaf"].max_Bps == pytest.approx(4 * 12.5e9)
    assert tiers["spine->leaf"].max_utilization == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(3))
def test_most_loaded_links_are_the_head_of_a_stable_sort(seed):
    # Only the arcs at or above the 20th largest utilisation are sorted: the same links, in
    # the same order (ties by arc), as the first 20 of a stable sort of all of them.
    import numpy as np

    from topo.flow.routing.arrays import fabric_arcs
    from topo.flow.routing.report import TOP_LINKS, _most_loaded_links

    G = build("ft2", switch_ports=8)
    arcs = fabric_arcs(G)
    rng = np.random.default_rng(seed)
    util = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=len(arcs.u), p=[0.5, 0.2, 0.2, 0.05, 0.05])
    names, code = arcs.tier_classes()
    got = _most_loaded_links(arcs, names, code, util, util, util)
    want = [a for a in np.argsort(-util, kind="stable")[:TOP_LINKS] if util[a] > 0]
    assert [(x.source, x.target, x.utilization) for x in got] == [
        (arcs.nodes[arcs.u[a]], arcs.nodes[arcs.v[a]], util[a]) for a in want
    ]
    assert [x.tier for x in got] == [
        f"{arcs.labels[arcs.label[arcs.u[a]]]}->{arcs.labels[arcs.label[arcs.v[a]]]}" for a in want
    ]
