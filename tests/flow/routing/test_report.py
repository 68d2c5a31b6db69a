"""The as-routed report: the rate over every link kind, JSON, the busiest links."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
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


# -------------------------------------------------------------------------------------------------
# As-routed tables state bundles of parallel cables apart from the busiest cable (issue 13).


def test_tier_loads_count_bundles_and_cables_by_hand():
    # ft2 of 16-port switches, 32 GPUs (4 servers of 8): 4 leaves of 8 NICs (400G, 50 GB/s)
    # and 8 uplinks, 2 spines, so each leaf-spine link is a bundle of 4 cables (200 GB/s).
    # Every GPU sends to the 24 GPUs off its leaf: 32 x 24 pair-units over 8 up links,
    # mean 96 pair rates per bundle.
    G = build("ft2", switch_ports=16, gpus=32)
    r = routed_alltoall(G, "ecmp", seed=0)
    tiers = {t.tier: t for t in r.routing.tiers}
    up = tiers["leaf->spine"]
    assert (up.links, up.cables) == (8, 32)
    assert up.capacity_Bps == pytest.approx(200e9)
    assert up.mean_Bps == pytest.approx(96 * r.pair_rate_Bps, rel=1e-9)
    assert (tiers["nic->leaf"].links, tiers["nic->leaf"].cables) == (32, 32)
    assert up.to_dict()["cables"] == 32
    for b in r.routing.loaded_links:
        if "spine" in b.tier:
            assert b.cables == 4 and b.capacity_Bps == pytest.approx(200e9)
        # the busiest of a bundle's cables is at least as loaded as their mean
        assert b.utilization >= b.load_Bps / b.capacity_Bps * (1 - 1e-12)


def test_cli_loaded_links_table_has_cables_and_is_ordered_by_its_claim(tmp_path):
    path = tmp_path / "ft2.json"
    runner = CliRunner()
    args = ["build", "ft2", "--switch-ports", "16", "--gpus", "32", "-o", str(path)]
    assert runner.invoke(app, args).exit_code == 0
    text = runner.invoke(app, ["bandwidth", str(path), "--routing", "ecmp"], terminal_width=250)
    lines = text.output.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("most loaded links"))
    assert "by the busiest cable's utilisation" in lines[start]
    head = [c.strip() for c in lines[start + 2].strip("┃ ").split("┃")]
    assert head == [
        "from",
        "to",
        "tier",
        "cables",
        "capacity GB/s",
        "load GB/s",
        "bundle util.",
        "busiest cable util.",
    ]
    rows = [[c.strip() for c in s.strip("│ ").split("│")] for s in lines[start + 4 :] if "│" in s]
    busiest = [float(r[7].rstrip("%")) for r in rows]
    assert rows and busiest == sorted(busiest, reverse=True) and busiest[0] == 100.0
    for r in rows:
        cables, cap, load, bundle = int(r[3]), float(r[4]), float(r[5]), float(r[6][:-1])
        assert (cables, cap) == (4, 200.0)  # 4 cables of 50 GB/s per leaf-spine bundle
        assert bundle == pytest.approx(100 * load / cap, abs=0.06)
        assert bundle <= float(r[7][:-1]) + 0.05
