"""Rates alone and shared (max-min fair), against hand-worked NIC and leaf-uplink cuts.

Units: one 400G cable carries 50 GB/s per direction. Every fabric here has 1 GPU and 1 NIC per
server, so a server's NIC sends and receives at most 50 GB/s.
"""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.place import FAIRNESS, Job, place

NIC = 50e9


def test_jobs_on_disjoint_leaves_of_a_nonblocking_ft2_get_their_solo_rate():
    # k = 4 FT2: leaf i holds servers 2i, 2i + 1 and has 2 uplinks (100 GB/s).
    # Job a on leaves 0-1, job b on leaves 2-3: no cable in common.
    # Alone, an all-to-all of n = 4 GPUs: each NIC sends 3 pair rates <= 50 GB/s, so the pair
    # rate is 50/3 and busbw = 3 x 50/3 = 50 GB/s; the cross-leaf traffic 2 x 2 x 50/3 = 66.7
    # GB/s fits the 100 GB/s of a leaf's uplinks. Shared: the same, exactly.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    r = place(G, [Job("a", "alltoall", count=4), Job("b", "alltoall", count=4)])
    assert [j.servers for j in r.jobs] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    for j in r.jobs:
        assert j.alone_busbw_Bps == pytest.approx(NIC, rel=1e-6)
        assert j.shared_busbw_Bps == pytest.approx(NIC, rel=1e-6)
        assert j.slowdown == pytest.approx(1.0, rel=1e-6)
    assert r.contended_links == ()
    assert r.fairness == FAIRNESS == "max-min fair"


def test_alternating_alltoall_jobs_on_an_oversubscribed_ft2_share_the_uplink_cut():
    # 2:1 FT2 of 6-port switches: each leaf has 4 servers and 2 uplinks (2 x 50 = 100 GB/s).
    # Job a takes servers 0, 2 (leaf0) and 4, 6 (leaf1); job b takes 1, 3 and 5, 7.
    # A job's all-to-all (n = 4) at pair rate p sends 2 x 2 x p from leaf0 to leaf1.
    # Alone: NIC 3p <= 50, cut 4p <= 100: p = 50/3, busbw 3p = 50 GB/s.
    # Shared: 4 p_a + 4 p_b <= 100 across leaf0's uplinks; max-min fair p_a = p_b = 12.5,
    # busbw 3 x 12.5 = 37.5 GB/s (NICs at 37.5 < 50); slowdown 50 / 37.5 = 4/3.
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    r = place(
        G, [Job("a", "alltoall", servers=(0, 2, 4, 6)), Job("b", "alltoall", servers=(1, 3, 5, 7))]
    )
    for j in r.jobs:
        assert j.alone_busbw_Bps == pytest.approx(NIC, rel=1e-6)
        assert j.shared_busbw_Bps == pytest.approx(37.5e9, rel=1e-6)
        assert j.slowdown == pytest.approx(4 / 3, rel=1e-6)
    # the cut is full: leaf0's two uplinks carry 100 GB/s between them, both jobs on them
    up = [c for c in r.contended_links if c.tail == "leaf0"]
    assert {c.head for c in up} == {"spine0", "spine1"}
    assert sum(c.load_Bps for c in up) == pytest.approx(100e9, rel=1e-6)
    assert all(c.jobs == ("a", "b") for c in r.contended_links)
    assert all(c.full for c in up)
    # no NIC cable is shared: each server belongs to one job
    assert not [c for c in r.contended_links if "nic" in c.tail or "nic" in c.head]


def test_max_min_fair_lets_an_unconstrained_job_keep_growing():
    # 2:1 FT2 of 6-port switches (4 servers and 100 GB/s of uplinks per leaf), rings of two
    # servers: a (0, 4), b (1, 5), d (3, 7) each cross from leaf0 to leaf1 and back at their
    # busbw; c (8, 9) stays inside leaf2. Alone every ring gets its NICs' 50 GB/s.
    # Shared: 3 lambda <= 100 GB/s on leaf0's uplinks freezes a, b, d at 100/3 GB/s; c shares
    # no link and grows on to 50 GB/s.
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    jobs = [
        Job("a", "ring", servers=(0, 4)),
        Job("b", "ring", servers=(1, 5)),
        Job("c", "ring", servers=(8, 9)),
        Job("d", "ring", servers=(3, 7)),
    ]
    r = place(G, jobs)
    assert [j.alone_busbw_Bps for j in r.jobs] == pytest.approx([NIC] * 4, rel=1e-6)
    want = [100e9 / 3, 100e9 / 3, NIC, 100e9 / 3]
    assert [j.shared_busbw_Bps for j in r.jobs] == pytest.approx(want, rel=1e-6)
    assert [j.slowdown for j in r.jobs] == pytest.approx([1.5, 1.5, 1.0, 1.5], rel=1e-6)
    assert all("c" not in c.jobs for c in r.contended_links)


def test_storage_read_is_bound_by_the_storage_nics():
    # k = 4 FT2: storage servers 6, 7 (leaf3) serve a job on 0..3. The storage NICs send at
    # most 2 x 50 GB/s to 4 GPUs: 25 GB/s per GPU (leaf3's 2 uplinks also carry 100 GB/s).
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    r = place(G, [Job("ckpt", "storage_read", count=4, storage=(6, 7))])
    assert r.jobs[0].alone_busbw_Bps == pytest.approx(25e9, rel=1e-6)
    assert r.jobs[0].shared_busbw_Bps == pytest.approx(25e9, rel=1e-6)
    assert r.jobs[0].shared_aggregate_Bps == pytest.approx(100e9, rel=1e-6)  # 4 GPUs x 25
    # at the NIC bound of storage servers 6 and 7 (leaf3's two uplinks are as tight)
    j = r.jobs[0]
    assert (j.bottleneck, j.bottleneck_servers, j.bottleneck_switch_links) == (
        "storage NICs",
        (6, 7),
        0,
    )


def test_a_job_bound_by_leaf_uplinks_alone_gets_the_cut_rate_not_its_nic_bound():
    # 2:1 FT2 of 6-port switches (4 servers and 2 x 50 = 100 GB/s of uplinks per leaf); an
    # all-to-all of n = 8 GPUs on leaves 0 and 1 at pair rate p. NICs: 7p <= 50 (busbw 50, its
    # NIC bound); leaf0's uplinks carry 4 x 4 p <= 100: p = 6.25, busbw 7 x 6.25 = 43.75 GB/s.
    from topo.place import job_demand, nic_bound, place_jobs

    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    job = Job("a", "alltoall", servers=tuple(range(8)))
    r = place(G, [job])
    assert r.jobs[0].alone_busbw_Bps == pytest.approx(43.75e9, rel=1e-6)
    assert r.jobs[0].shared_busbw_Bps == pytest.approx(43.75e9, rel=1e-6)
    d = job_demand(G, place_jobs(G, [job])[0])
    assert nic_bound(d, dict.fromkeys(range(24), NIC)) == pytest.approx(NIC, rel=1e-12)


def test_pipeline_stages_on_two_leaves_share_the_uplink_cut():
    # 2:1 FT2 of 6-port switches (4 servers, 2 x 50 = 100 GB/s of uplinks per leaf). A pipeline
    # of 2 stages: leaf0's servers 0..3, then leaf1's 4..7; server j sends to server j + 4
    # and back at r. NICs: r <= 50; leaf0's uplinks carry 4r <= 100: busbw r = 25 GB/s.
    # With 4 stages of 2 servers, (0, 1) (2, 3) on leaf0 and (4, 5) (6, 7) on leaf1: servers
    # 2, 3 send to 0, 1 and to 4, 5 (2r <= 50 at the NIC); leaf0 -> leaf1 carries only 2, 3's
    # r each: r = 25 GB/s, NIC-bound.
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    for stages in (2, 4):
        r = place(G, [Job("pp", "pipeline", servers=tuple(range(8)), stages=stages)])
        assert r.jobs[0].alone_busbw_Bps == pytest.approx(25e9, rel=1e-6)


def test_reads_and_writes_of_one_storage_server_do_not_contend():
    # k = 4 FT2: a reads from storage 6 on servers 0, 1; b writes to 6 from servers 2, 3.
    # Storage 6's NIC sends 2 r_a <= 50 and receives 2 r_b <= 50: full duplex, 25 GB/s each,
    # alone and shared.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    jobs = [
        Job("a", "storage_read", servers=(0, 1), storage=(6,)),
        Job("b", "checkpoint_write", servers=(2, 3), storage=(6,)),
    ]
    r = place(G, jobs)
    for j in r.jobs:
        assert j.alone_busbw_Bps == pytest.approx(25e9, rel=1e-6)
        assert j.shared_busbw_Bps == pytest.approx(25e9, rel=1e-6)


def test_weighted_jobs_share_a_storage_nic_by_their_weights():
    # k = 4 FT2: a (weight 3) and b (weight 1) each read on one server from storage 7's one
    # 50 GB/s NIC: r_a + r_b <= 50 with r_a = 3 r_b: 37.5 and 12.5 GB/s. A third job c
    # (weight 3) reading from 6 alone keeps its 50 GB/s: its weight buys nothing it lacks.
    from topo.place import WEIGHTED_FAIRNESS

    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    jobs = [
        Job("a", "storage_read", servers=(0,), storage=(7,), weight=3.0),
        Job("b", "storage_read", servers=(1,), storage=(7,)),
        Job("c", "storage_read", servers=(2,), storage=(6,), weight=3.0),
    ]
    r = place(G, jobs)
    assert r.fairness == WEIGHTED_FAIRNESS == "weighted max-min fair"
    assert [j.shared_busbw_Bps for j in r.jobs] == pytest.approx([37.5e9, 12.5e9, NIC], rel=1e-6)
    assert [j.alone_busbw_Bps for j in r.jobs] == pytest.approx([NIC] * 3, rel=1e-6)
    assert [j.weight for j in r.jobs] == [3.0, 1.0, 3.0]
    assert r.to_dict()["jobs"][0]["weight"] == 3.0


def test_no_jobs_is_refused():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    with pytest.raises(TopoError, match="no jobs to place"):
        place(G, [])


def _full_graph_lp(G, demands, objective, lower):
    """An LP written apart from topo.flow, on the uncontracted fabric: every edge both ways at
    its capacity, one commodity per (job, sending server) from that server's GPU, a server's
    vertices usable only by its own and its sinks' commodities (servers do not forward). Job
    k flows at rate rho_k >= lower[k] (B/s per byte of demand); maximise rho_objective.
    One GPU per server. Returns the optimal rho, or None if infeasible."""
    import numpy as np
    from scipy.optimize import linprog

    arcs = [(u, v, float(d["capacity"])) for u, v, d in G.edges(data=True)]
    arcs += [(v, u, c) for u, v, c in arcs]
    owner = {
        v: d.get("node") for v, d in G.nodes(data=True) if d["kind"] in ("gpu", "nic", "nvswitch")
    }
    gpu = {d["node"]: v for v, d in G.nodes(data=True) if d["kind"] == "gpu"}
    vid = {v: i for i, v in enumerate(G.nodes)}
    comms = []
    for k, d in enumerate(demands):
        by_src = {}
        for (a, b), x in d.entries.items():
            by_src.setdefault(a, {})[b] = x
        comms += [(k, s, sinks) for s, sinks in by_src.items()]
    cols, a_eq_rows, a_eq_cols, a_eq_vals, a_ub = [], [], [], [], {}
    n_rho = len(demands)
    for c, (k, s, sinks) in enumerate(comms):
        allowed = {s, *sinks}
        for i, (u, v, _) in enumerate(arcs):
            if owner.get(u, s) in allowed and owner.get(v, s) in allowed:
                j = n_rho + len(cols)
                cols.append(i)
                a_eq_rows += [c * len(vid) + vid[u], c * len(vid) + vid[v]]
                a_eq_cols += [j, j]
                a_eq_vals += [1.0, -1.0]
                a_ub.setdefault(i, []).append(j)
        a_eq_rows.append(c * len(vid) + vid[gpu[s]])
        a_eq_cols.append(k)
        a_eq_vals.append(-sum(sinks.values()))
        for t, x in sinks.items():
            a_eq_rows.append(c * len(vid) + vid[gpu[t]])
            a_eq_cols.append(k)
            a_eq_vals.append(x)
    n = n_rho + len(cols)
    A_eq = np.zeros((len(comms) * len(vid), n))
    np.add.at(A_eq, (a_eq_rows, a_eq_cols), a_eq_vals)
    A_ub = np.zeros((len(arcs), n))
    for i, js in a_ub.items():
        A_ub[i, js] = 1.0
    scale = 1e9  # GB/s inside the LP
    c = np.zeros(n)
    c[objective] = -1.0
    bounds = [(lo / scale, None) for lo in lower] + [(0, None)] * len(cols)
    cap = np.array([x for _, _, x in arcs]) / scale
    res = linprog(c, A_ub=A_ub, b_ub=cap, A_eq=A_eq, b_eq=np.zeros(len(A_eq)), bounds=bounds)
    return None if res.status == 2 else res.x[:n_rho] * scale


def test_shared_rates_are_max_min_fair_by_an_lp_on_the_whole_graph():
    # Three jobs of different sizes and traffic on a 2:1 FT2 (6-port switches, 4 servers and
    # 100 GB/s of uplinks per leaf). The certificate of max-min fairness, checked by an LP
    # written apart from topo.flow on the uncontracted graph: the rates are feasible together,
    # and no job can be raised while every job at or below its rate keeps its rate (the
    # jobs above it may drop).
    from topo.place import job_demand, place_jobs

    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    jobs = [
        Job("a", "alltoall", servers=(0, 1, 4, 5)),
        Job("b", "alltoall", servers=(2, 3, 6, 7, 8, 9)),
        Job("c", "ring", servers=(10, 11, 12)),
    ]
    r = place(G, jobs)
    rates = [j.shared_busbw_Bps for j in r.jobs]
    demands = [job_demand(G, p) for p in place_jobs(G, jobs)]
    for j, rate in enumerate(rates):
        lower = [x * (1 - 1e-6) if x <= rate * (1 + 1e-9) else 0.0 for x in rates]
        lower[j] = 0.0
        best = _full_graph_lp(G, demands, j, lower)
        assert best is not None  # the rates (and so these lower bounds) are feasible
        assert best[j] == pytest.approx(rate, rel=1e-5)
    # By hand (busbw A, B, C): leaf0's 100 GB/s of uplinks carry a's 2 x 2 pair rates A/3 and
    # b's 2 x 4 pair rates B/5: 4A/3 + 8B/5 <= 100, so A = B = 1500/44 = 34.09 GB/s; leaf2's
    # carry b's 8B/5 = 54.55 and c's one ring hop C: C = 100 - 54.55 = 45.45 GB/s.
    a = 100e9 / (4 / 3 + 8 / 5)
    assert rates == pytest.approx([a, a, 100e9 - 8 / 5 * a], rel=1e-6)


def test_bad_weights_are_refused():
    from topo.place import max_min_rates
    from topo.traffic import Demand

    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    d = Demand("server", (0, 1), {(0, 1): 1.0})
    with pytest.raises(TopoError, match="weights must be one per demand, each > 0"):
        max_min_rates(G, [d, d], weights=[2.0, 0.0])
    with pytest.raises(TopoError, match="weights must be one per demand, each > 0"):
        max_min_rates(G, [d, d], weights=[2.0])
