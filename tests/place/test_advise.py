"""Slurm advice: BlockSizes from leaf groups and job sizes, and the cost of fragmentation,
against hand-worked block counts and cuts. One GPU and one 50 GB/s NIC per server."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.place import Job, place_jobs, slurm_advice


@pytest.fixture(scope="module")
def os24():
    """2:1 FT2 of 6-port switches: 6 leaves of 4 servers, 2 x 50 GB/s of uplinks each."""
    return build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)


def test_block_sizes_are_the_base_block_and_each_jobs_smallest_aligned_block(os24):
    # B = 4 (a leaf); 6 leaves under one top: aligned sizes 4, 8, 16 (2^j <= 6 leaves).
    # Jobs of 3, 4, 6 and 9 servers fit blocks of 4, 4, 8 and 16 nodes and need at least
    # ceil(n / 4) = 1, 1, 2, 3 leaf switches.
    jobs = [Job(n, "ring", count=c) for n, c in (("a", 3), ("b", 4), ("c", 6), ("d", 9))]
    a = slurm_advice(os24, jobs)
    assert a.base_block == 4
    assert a.aligned_sizes == (4, 8, 16)
    assert a.block_sizes == (4, 8, 16)
    assert [j.block_size for j in a.jobs] == [4, 4, 8, 16]
    assert [j.leaf_switches for j in a.jobs] == [1, 1, 2, 3]
    # packed in file order: a 0-2 (leaf0), b 3-6 (leaves 0, 1), c 7-12 (leaves 1, 2, 3),
    # d 13-21 (leaves 3, 4, 5): c spans one leaf more than it needs
    assert [j.packed_blocks for j in a.jobs] == [1, 2, 3, 3]
    conf = a.topology_conf.splitlines()
    assert conf[1] == "BlockName=leaf0 Nodes=node[0-3]"
    assert conf[-1] == "BlockSizes=4,8,16"
    assert sum(ln.startswith("BlockName=") for ln in conf) == 6


def test_a_job_larger_than_every_aligned_block_has_none(os24):
    # 20 servers: more than 16, the largest aligned block; 5 leaf switches at least
    a = slurm_advice(os24, [Job("big", "ring", count=20)])
    assert a.jobs[0].block_size is None
    assert a.jobs[0].leaf_switches == 5
    assert a.block_sizes == (4,)


def test_fragmentation_costs_alternating_jobs_the_uplink_cut():
    # 2:1 FT2 cut to 8 servers (leaf0: 0-3, leaf1: 4-7, 100 GB/s of uplinks each). Packed,
    # two 4-server all-to-all jobs own a leaf each: NIC-bound, busbw 3p = 50 GB/s. Fragmented
    # (seed 0) a gets 2, 3 | 4, 6 and b 0, 1 | 5, 7: each sends 2 x 2 p across,
    # 4 p_a + 4 p_b <= 100, p = 12.5, busbw 37.5 GB/s: a cost of 50 / 37.5 = 4/3 each.
    G = build("ft2", switch_ports=6, gpus=8, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    jobs = [Job("a", "alltoall", count=4), Job("b", "alltoall", count=4)]
    frag = [Job(j.name, j.traffic, count=4, policy="fragmented") for j in jobs]
    assert [p.servers for p in place_jobs(G, frag, seed=0)] == [(2, 3, 4, 6), (0, 1, 5, 7)]
    a = slurm_advice(G, jobs, seed=0)
    for j in a.jobs:
        assert j.packed_busbw_Bps == pytest.approx(50e9, rel=1e-6)
        assert j.fragmented_busbw_Bps == pytest.approx(37.5e9, rel=1e-6)
        assert j.fragmentation_cost == pytest.approx(4 / 3, rel=1e-6)
        assert (j.packed_blocks, j.fragmented_blocks) == (1, 2)
    assert a.to_dict()["jobs"][0]["fragmented_busbw_GBps"] == pytest.approx(37.5, rel=1e-6)


def test_no_jobs_is_refused(os24):
    with pytest.raises(TopoError, match="no jobs to advise on"):
        slurm_advice(os24, [])


def test_fewest_leaf_switches_count_the_largest_leaves_first():
    # FT2 of 8-port switches cut to 10 servers: leaves of 4, 4 and 2. Slurm's base block is
    # the smallest, B = 2; 3 blocks align 2 and 4 nodes (2^j <= 3 blocks). A 4-server job
    # fits one leaf (not ceil(4 / 2) = 2); a 5-server job needs 4 + 4 (two leaves) and is
    # larger than every aligned block.
    G = build("ft2", switch_ports=8, gpus=10, gpus_per_node=1, nics_per_node=1)
    a = slurm_advice(G, [Job("a", "ring", count=4), Job("b", "ring", count=5)])
    assert (a.base_block, a.aligned_sizes, a.block_sizes) == (2, (2, 4), (2, 4))
    assert [j.leaf_switches for j in a.jobs] == [1, 2]
    assert [j.block_size for j in a.jobs] == [4, None]
