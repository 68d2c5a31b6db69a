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


def test_no_jobs_is_refused():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    with pytest.raises(TopoError, match="no jobs to place"):
        place(G, [])
