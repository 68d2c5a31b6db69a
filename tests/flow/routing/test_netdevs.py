"""NCCL's net devices: multi-port NICs and GPUs whose own NIC cable is dead."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import InfeasibleError
from topo.flow import alltoall_bandwidth
from topo.flow.failures.resilience import damaged_bandwidth, resilience
from topo.flow.routing import endpoints, routed_alltoall

from ._helpers import NIC, counts, expected_counts, same_report, tier_of


def _two_port_mpft():
    # 32 servers of 2 GPUs, 2 NICs of 2 ports at 200 Gb/s (25 GB/s): 4 planes of 32 ports
    return build(
        "mpft", switch_ports=8, gpus=64, gpus_per_node=2, nics_per_node=2, nic_ports=2,
        link_gbps=200,
    )  # fmt: skip


@pytest.mark.parametrize("routing", ["dmodk", "ecmp"])
def test_two_port_mpft_is_port_bound(routing):
    # A server's 4 ports carry 4 x 25 = 100 GB/s (PCIe 2 x 64 = 128): each of its 2 GPUs sends
    # to 62 GPUs off the server, so 124 lambda = 100 GB/s. Port p of a GPU's NIC carries half of
    # its pairs on plane p; with PXN a flow crosses to the GPU of the destination's NIC index.
    G = _two_port_mpft()
    r = routed_alltoall(G, routing, seed=0)
    lam = 100e9 / 124
    assert r.routing.expected_pair_rate_Bps == pytest.approx(lam, rel=1e-12)
    if routing == "dmodk":  # non-oversubscribed: D-mod-k spreads the all-to-all exactly
        assert r.pair_rate_Bps == pytest.approx(lam, rel=1e-12)
    assert r.pair_rate_Bps <= alltoall_bandwidth(G).pair_rate_Bps * (1 + 1e-9)
    # one flow per pair on each of the 2 ports
    assert r.routing.flows == 64 * 62 * 2
    c = expected_counts(r)
    for s in (0, 17):
        for j in range(2):
            for p in range(2):
                port = f"node{s}/nic{j}/port{p}"
                # 2 source GPUs x 31 destinations behind NIC j elsewhere, half on each port
                assert c[(port, next(iter(_switch(G, port))))] == pytest.approx(31)
                assert c[(f"node{s}/gpu{j}", port)] == pytest.approx(31)
    assert any("multi-port NICs" in x for x in r.reductions)


def _switch(G, nic):
    return [v for v in G[nic] if G.nodes[v]["kind"] not in ("gpu",)]


@pytest.mark.parametrize("routing", ["dmodk", "ecmp"])
@pytest.mark.parametrize("pxn", [True, False])
def test_two_port_ft2_is_pcie_bound(routing, pxn):
    # ft2 of 8-port switches, 16 servers of 2 GPUs, 2 NICs of 2 x 400G ports: PCIe is 64 GB/s per
    # NIC, 32 GB/s per port. Each GPU has 30 peers off its server. With PXN the flows to the 15
    # GPUs behind NIC j leave by NIC j, half on each port: 2 GPUs x 15 / 2 = 15 per port; without
    # PXN a GPU's 30 peers split over its own 2 ports: 15. 15 lambda = 32 GB/s either way.
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2, nic_ports=2)
    r = routed_alltoall(G, routing, seed=1, pxn=pxn)
    assert r.pair_rate_Bps == pytest.approx(32e9 / 15, rel=1e-12)
    assert r.pair_rate_Bps <= alltoall_bandwidth(G).pair_rate_Bps * (1 + 1e-9)
    assert set(r.bottleneck_tiers) == {"gpu->nic", "nic->gpu"}
    c = counts(r)
    for j in range(2):
        for p in range(2):
            assert c[(f"node5/gpu{j}", f"node5/nic{j}/port{p}")] == pytest.approx(15)
            assert c[(f"node5/nic{j}/port{p}", f"node5/gpu{j}")] == pytest.approx(15)


def test_two_port_mpft_without_pxn_names_the_unroutable_pairs():
    # port p talks to port p, so only the NIC index must match: every GPU has 31 peers off its
    # server behind the other NIC index, on other planes: 64 x 31 ordered pairs.
    with pytest.raises(InfeasibleError, match=r"^1,984 ordered GPU pairs have no up/down route"):
        routed_alltoall(_two_port_mpft(), "dmodk", pxn=False)


@pytest.mark.parametrize(
    "family,kw",
    [
        ("mrft", dict(switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2, link_gbps=200)),
        ("ft2", dict(switch_ports=8, gpus=48, gpus_per_node=2, nics_per_node=1, link_gbps=200)),
        ("mpft", dict(switch_ports=4, gpus=16, gpus_per_node=2, nics_per_node=2, link_gbps=100)),
    ],
)
def test_multi_port_as_routed_never_beats_the_optimum(family, kw):
    for ports in (2, 3):
        G = build(family, nic_ports=ports, **kw)
        best = alltoall_bandwidth(G).pair_rate_Bps
        for routing, seed in (("dmodk", None), ("ecmp", 0), ("ecmp", 5)):
            r = routed_alltoall(G, routing, seed=seed)
            assert 0 < r.pair_rate_Bps <= best * (1 + 1e-9)
            assert r.routing.expected_pair_rate_Bps <= best * (1 + 1e-9)


def _cut(G, nic):
    sw = [v for v in G[nic] if G.nodes[v]["kind"] != "gpu"]
    G.remove_edge(nic, sw[0])
    return G


@pytest.mark.parametrize("family", ["ft2", "mrft"])
@pytest.mark.parametrize("routing", ["dmodk", "ecmp"])
def test_dead_nic_cable_uses_the_other_nic_of_the_server(family, routing):
    # 4 servers of 2 GPUs and 2 NICs, 4-port switches; node0/nic0's cable is dead. NCCL: that
    # port is no net device, gpu0 sends and receives through nic1 over NVLink, and the flows of
    # node0/gpu1 to the rail-0 GPUs elsewhere (whose local GPU gpu0 has no NIC) leave by nic1.
    # So nic1 carries all 2 x 6 pairs of the server each way: 12 lambda = 50 GB/s, and no
    # routing can do better (it is the server's only cable).
    G = _cut(build(family, switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8), "node0/nic0")
    r = routed_alltoall(G, routing, seed=0)
    assert r.pair_rate_Bps == pytest.approx(NIC / 12, rel=1e-12)
    assert r.pair_rate_Bps <= alltoall_bandwidth(G).pair_rate_Bps * (1 + 1e-9)
    c = counts(r)
    nvs = "node0/nvswitch"
    # PCIe of gpu1: its own 6 and gpu0's 6, both ways; gpu0's PCIe is idle
    assert c[("node0/gpu1", "node0/nic1")] == pytest.approx(12)
    assert c[("node0/nic1", "node0/gpu1")] == pytest.approx(12)
    assert c[("node0/gpu0", "node0/nic0")] == pytest.approx(0)
    # NVLink: 1 peer inside, plus 6 forwarded each way (gpu0 out through gpu1, and in)
    for a in ("node0/gpu0", "node0/gpu1"):
        assert c[(a, nvs)] == pytest.approx(7)
        assert c[(nvs, a)] == pytest.approx(7)
    # a healthy server forwards as before: 1 inside + 3 peers on the other rail
    assert c[("node2/gpu1", "node2/nvswitch")] == pytest.approx(4)
    up = sum(x for a, x in c.items() if tier_of(G, *a) == "nic->leaf")
    assert up == pytest.approx(8 * 6)  # every remote pair leaves once
    assert any("not cabled" in x for x in r.reductions)


def test_dead_nic_cable_in_an_mpft_cuts_the_server_from_that_plane():
    # MPFT: nic0 is the server's only NIC on plane 0. Its 2 GPUs reach the 3 rail-0 GPUs of the
    # other servers only by entering plane 1 and forwarding over the destination server's
    # NVLink, which NCCL's receiver never does: 2 x 3 pairs each way have no route (the LP
    # forwards and gets NIC/12, as on one plane). Without PXN gpu0 reaches no NIC at all.
    G = _cut(build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8), "node0/nic0")
    with pytest.raises(
        InfeasibleError, match=r"^12 ordered GPU pairs have no up/down route.*disjoint planes"
    ):
        routed_alltoall(G, "dmodk")
    # the refusal names the routing that does carry it (the LP's, asserted next)
    with pytest.raises(InfeasibleError, match=r"no route; routing optimal gives the all-to-all"):
        routed_alltoall(G, "ecmp")
    assert alltoall_bandwidth(G).pair_rate_Bps == pytest.approx(NIC / 12, rel=1e-9)
    with pytest.raises(InfeasibleError, match=r"^1 GPU has no NIC cabled.*without PXN"):
        routed_alltoall(G, "ecmp", pxn=False)


def test_dead_port_of_a_two_port_nic_in_one_plane():
    # ft2 with 2-port NICs (2 port planes joined by nothing), node0/nic0/port0 dead: NCCL puts
    # every channel of gpu0 on port1, but its peers send their port-0 half to it on plane 0
    # (the receiver's choice does not follow the sender's): those pairs cross port planes.
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2, nic_ports=2)
    _cut(G, "node0/nic0/port0")
    with pytest.raises(InfeasibleError, match="no up/down route"):
        routed_alltoall(G, "dmodk")


@pytest.mark.parametrize(
    "family,kw",
    [
        ("mrft", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)),
        ("ft2", dict(switch_ports=8, gpus_per_node=4, nics_per_node=2, gpus=32)),
        ("mpft", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)),
    ],
)
@pytest.mark.parametrize("pxn", [True, False])
def test_general_model_equals_the_one_nic_model(monkeypatch, family, kw, pxn):
    # The net-device model on a fabric of one cabled NIC per GPU is the one-NIC model.
    G = build(family, **kw)
    args = [("dmodk", None), ("ecmp", 3)]
    try:
        before = [routed_alltoall(G, r, seed=s, pxn=pxn) for r, s in args]
    except InfeasibleError as e:
        monkeypatch.setattr(endpoints, "needs_netdevs", lambda *a: True)
        with pytest.raises(InfeasibleError) as e2:
            routed_alltoall(G, "dmodk", pxn=pxn)
        assert str(e2.value) == str(e)
        return
    monkeypatch.setattr(endpoints, "needs_netdevs", lambda *a: True)
    after = [routed_alltoall(G, r, seed=s, pxn=pxn) for r, s in args]
    for a, b in zip(before, after, strict=True):
        same_report(a, b)


def test_resilience_trials_with_dead_nic_cables_are_routed():
    # ft2 of 4-port switches, 4 servers of 2 GPUs and 2 NICs: 8 NIC cables and 8 leaf-spine
    # cables, 2 cut at random per trial. A trial is unroutable as routed only where a server is
    # cut off or two leaves keep no common spine; the trials that cut one NIC cable of a
    # server are routed (refused before as "disconnected"), never above the optimum.
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    rep = resilience(G, trials=12, links=2, routing="ecmp", seed=0)
    nic_cut = unroutable = 0
    for i in range(12):
        opt = damaged_bandwidth(G, links=2, seed=rep.trial_seeds[i])
        try:
            r = damaged_bandwidth(G, links=2, seed=rep.trial_seeds[i], routing="ecmp")
        except InfeasibleError:
            unroutable += 1
            # a server cut off, or two leaves left without a common spine (no up/down route)
            fabric_only = all("nic" not in u + v for u, v in opt.failures.links)
            assert opt.failures.disconnected or fabric_only
            continue
        H = r.graph
        nic_cut += any(  # a server cut off is set aside: its NICs are not in H
            f"node{s}/nic{j}" in H
            and all(H.nodes[v]["kind"] == "gpu" for v in H[f"node{s}/nic{j}"])
            for s in range(4)
            for j in range(2)
        )
        assert r.report.alltoall_busbw_Bps <= opt.report.alltoall_busbw_Bps * (1 + 1e-9)
    assert nic_cut > 0  # routed trials with a dead NIC cable (refused before)
    assert rep.trials_unroutable == unroutable < 12 - nic_cut


def test_cli_dead_nic_cable_gives_a_rate_with_notes(tmp_path):
    # mrft of 8-port switches (64 GPUs, 8 per server), the 3 cables numpy.random.default_rng(1)
    # drew (before --seed's failures had their own stream): one is node3/nic5's. As routed it
    # was refused as "disconnected"; now D-mod-k carries gpu5 over its server's 7 other NICs
    # and reaches the optimum (the LP, from the same command).
    runner = CliRunner()
    out = tmp_path / "mrft.json"
    assert (
        runner.invoke(app, ["build", "mrft", "--switch-ports", "8", "-o", str(out)]).exit_code == 0
    )
    dead = ("node3/nic5--rail5/leaf0", "rail0/leaf0--spine0", "rail4/leaf0--spine0")
    cut = [x for c in dead for x in ("--fail", c)] + ["--json"]
    r = runner.invoke(app, ["bandwidth", str(out), "--routing", "dmodk", *cut])
    assert r.exit_code == 0, r.output
    routed = json.loads(r.output)
    assert any("node3/gpu5" in x and "not cabled" in x for x in routed["notes"])
    r = runner.invoke(app, ["bandwidth", str(out), *cut])
    assert r.exit_code == 0, r.output
    best = json.loads(r.output)["alltoall_busbw_GBps"]
    assert routed["alltoall_busbw_GBps"] == pytest.approx(best, rel=1e-9)
