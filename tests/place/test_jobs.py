"""Jobs: validation, the placement policies and each traffic's demand, worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.place import Job, job_demand, place_jobs, server_blocks


@pytest.fixture(scope="module")
def ft2():
    """Non-blocking FT2 of 4-port switches: leaf i holds servers 2i and 2i + 1 (1 GPU each)."""
    return build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)


@pytest.fixture(scope="module")
def ft2_g2():
    """As ``ft2`` with 2 GPUs and 2 NICs per server: leaf i holds server i (4 leaves)."""
    return build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2)


def test_server_blocks_are_the_leaves(ft2):
    assert server_blocks(ft2) == {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3}


def test_packed_fills_leaves_in_order(ft2):
    # server 0 taken: packed takes leaf0's last server, then leaf1's
    got = place_jobs(ft2, [Job("x", "ring", servers=(0,)), Job("a", "ring", count=3)])
    assert got[1].servers == (1, 2, 3)


def test_slurm_tree_takes_the_emptiest_leaf_that_fits(ft2):
    # leaf0 has 1 free server, leaves 1..3 two each: a 1-server job best-fits leaf0,
    # a 2-server job the first whole free leaf
    jobs = [Job("x", "ring", servers=(0,)), Job("a", "ring", count=1, policy="slurm-tree")]
    assert place_jobs(ft2, jobs)[1].servers == (1,)
    jobs = [Job("x", "ring", servers=(0,)), Job("a", "ring", count=2, policy="slurm-tree")]
    assert place_jobs(ft2, jobs)[1].servers == (2, 3)


def test_slurm_tree_spans_the_fullest_leaves_first(ft2):
    # no leaf fits 3: leaf1 (2 free) then leaf2, not leaf0 (1 free) as packed does
    jobs = [Job("x", "ring", servers=(0,)), Job("a", "ring", count=3, policy="slurm-tree")]
    assert place_jobs(ft2, jobs)[1].servers == (2, 3, 4)


def test_slurm_block_takes_the_smallest_aligned_block_that_fits(ft2):
    # Slurm's blocks: base blocks of one leaf (2 servers), aligned sizes 2, 4, 8; the
    # 4-server aggregates are leaves 0-1 and 2-3. Server 0 taken: a 3-server job needs a
    # 4-block; leaves 0-1 have 3 free (1, 2, 3), leaves 2-3 four: best fit takes 1, 2, 3
    # (slurm-tree's fullest leaves first, 2, 3, 4, straddles two aggregates).
    jobs = [Job("x", "ring", servers=(0,)), Job("a", "ring", count=3, policy="slurm-block")]
    assert place_jobs(ft2, jobs)[1].servers == (1, 2, 3)
    # server 2 taken: leaves 0-1 still have 3 free, 0, 1, 3
    jobs = [Job("x", "ring", servers=(2,)), Job("a", "ring", count=3, policy="slurm-block")]
    assert place_jobs(ft2, jobs)[1].servers == (0, 1, 3)
    # a 2-server job fits one leaf: the first whole free one
    jobs = [Job("x", "ring", servers=(0,)), Job("a", "ring", count=2, policy="slurm-block")]
    assert place_jobs(ft2, jobs)[1].servers == (2, 3)


def test_slurm_block_spans_the_fullest_largest_blocks_when_none_fits():
    # FT2 of 8-port switches cut to 10 servers: leaves of 4, 4, 2; B = 2 and aligned sizes
    # 2, 4 (two blocks). A 5-server job fits no block: the largest aggregates are blocks
    # (leaf0, leaf1) with 8 free and (leaf2) with 2; the fuller first: 0..4.
    G = build("ft2", switch_ports=8, gpus=10, gpus_per_node=1, nics_per_node=1)
    got = place_jobs(G, [Job("a", "ring", count=5, policy="slurm-block")])
    assert got[0].servers == (0, 1, 2, 3, 4)


def test_fragmented_is_seeded_and_takes_free_servers(ft2):
    jobs = [Job("x", "ring", servers=(0, 1)), Job("a", "ring", count=4, policy="fragmented")]
    first = place_jobs(ft2, jobs, seed=5)[1].servers
    assert first == place_jobs(ft2, jobs, seed=5)[1].servers
    assert len(set(first)) == 4 and not set(first) & {0, 1}
    draws = {place_jobs(ft2, jobs, seed=s)[1].servers for s in range(20)}
    assert len(draws) > 1  # 15 ways to pick 4 of 6: 20 seeds do not all agree


def test_gpus_are_counted(ft2_g2):
    assert place_jobs(ft2_g2, [Job("a", "alltoall", count=3)])[0].gpus == 6


def test_alltoall_demand_is_normalised_to_busbw(ft2_g2):
    # 3 servers x 2 GPUs: n = 6; each server pair carries 2 x 2 GPU pairs of 1 / (6 - 1) B
    d = job_demand(ft2_g2, place_jobs(ft2_g2, [Job("a", "alltoall", servers=(0, 1, 2))])[0])
    assert dict(d.entries) == pytest.approx(
        {(a, b): 0.8 for a in range(3) for b in range(3) if a != b}
    )


def test_ring_demand_is_one_byte_per_server_to_its_successor(ft2):
    d = job_demand(ft2, place_jobs(ft2, [Job("a", "ring", servers=(4, 0, 2))])[0])
    assert dict(d.entries) == {(4, 0): 1.0, (0, 2): 1.0, (2, 4): 1.0}


def test_storage_read_spreads_each_gpu_over_the_storage(ft2_g2):
    # 2 GPUs per server, 2 storage servers: each sends 2 / 2 = 1 B to each job server
    job = Job("ckpt", "storage_read", servers=(0, 1), storage=(2, 3))
    d = job_demand(ft2_g2, place_jobs(ft2_g2, [job])[0])
    assert dict(d.entries) == {(2, 0): 1.0, (2, 1): 1.0, (3, 0): 1.0, (3, 1): 1.0}


def test_checkpoint_write_is_the_read_reversed(ft2_g2):
    # 2 GPUs per server, 2 storage servers: each job server sends 2 / 2 = 1 B to each
    job = Job("ckpt", "checkpoint_write", servers=(0, 1), storage=(2, 3))
    d = job_demand(ft2_g2, place_jobs(ft2_g2, [job])[0])
    assert dict(d.entries) == {(0, 2): 1.0, (1, 2): 1.0, (0, 3): 1.0, (1, 3): 1.0}


def test_pipeline_pairs_server_j_of_each_stage_both_ways(ft2, ft2_g2):
    # 6 servers, 3 stages: (0, 1) (2, 3) (4, 5); server j of stage i with server j of i + 1
    job = Job("pp", "pipeline", servers=(0, 1, 2, 3, 4, 5), stages=3)
    d = job_demand(ft2, place_jobs(ft2, [job])[0])
    pairs = [(0, 2), (1, 3), (2, 4), (3, 5)]
    assert dict(d.entries) == {**dict.fromkeys(pairs, 1.0), **{(b, a): 1.0 for a, b in pairs}}
    # 2 GPUs per server: each GPU sends 1 B to its peer of the same local rank, 2 B a server
    job = Job("pp", "pipeline", servers=(3, 1), stages=2)
    d = job_demand(ft2_g2, place_jobs(ft2_g2, [job])[0])
    assert dict(d.entries) == {(3, 1): 2.0, (1, 3): 2.0}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (
            {"traffic": "bcast", "count": 2},
            "traffic must be one of alltoall, ring, pipeline, storage_read, checkpoint_write",
        ),
        ({"traffic": "ring", "count": 2, "policy": "block"}, "policy must be one of"),
        ({"traffic": "ring"}, "exactly one of servers and count"),
        ({"traffic": "ring", "count": 2, "servers": (0, 1)}, "exactly one of servers and count"),
        ({"traffic": "ring", "count": 0}, "count must be >= 1, got 0"),
        ({"traffic": "ring", "servers": (0, 0)}, "its servers repeat"),
        ({"traffic": "storage_read", "count": 2}, "storage_read needs storage servers"),
        ({"traffic": "checkpoint_write", "count": 2}, "checkpoint_write needs storage servers"),
        ({"traffic": "storage_read", "count": 2, "storage": (8, 8)}, "storage servers repeat"),
        ({"traffic": "ring", "count": 2, "storage": (5,)}, "for storage_read and checkpoint_write"),
        ({"traffic": "pipeline", "count": 4}, "a pipeline needs stages >= 2 \\(none given\\)"),
        ({"traffic": "pipeline", "count": 4, "stages": 1}, r"needs stages >= 2 \(got 1\)"),
        ({"traffic": "pipeline", "count": 4, "stages": 3}, "3 stages must divide its 4 servers"),
        (
            {"traffic": "pipeline", "servers": (0, 1, 2), "stages": 2},
            "2 stages must divide its 3 servers",
        ),
        ({"traffic": "ring", "count": 2, "stages": 2}, "stages are for pipeline jobs only"),
        ({"traffic": "ring", "count": 2, "weight": 0.0}, r"weight must lie in \[1e-06, 1e\+06\]"),
        ({"traffic": "ring", "count": 2, "weight": 2e6}, "weight must lie in"),
    ],
)
def test_bad_jobs_are_refused(kw, match):
    with pytest.raises(TopoError, match=match):
        Job("j", **kw)


@pytest.mark.parametrize(
    ("jobs", "match"),
    [
        ([Job("a", "ring", count=2), Job("a", "ring", count=2)], "'a' repeats"),
        ([Job("a", "ring", servers=(0, 99))], "server 99 is not a server of the fabric"),
        (
            [Job("a", "ring", servers=(0, 1)), Job("b", "ring", servers=(1, 2))],
            "server 1 is already taken by an earlier job",
        ),
        ([Job("a", "ring", count=9)], "asks for 9 servers; only 8 are free"),
        (
            [Job("s", "storage_read", servers=(0,), storage=(6, 7)), Job("a", "ring", count=6)],
            "asks for 6 servers; only 5 are free",
        ),
        (
            [Job("a", "storage_read", servers=(0,), storage=(99,))],
            "storage server 99 is not a server",
        ),
        (
            [Job("a", "storage_read", servers=(0, 1), storage=(1,))],
            "server 1 is a storage server",
        ),
    ],
)
def test_bad_placements_are_refused(ft2, jobs, match):
    with pytest.raises(TopoError, match=match):
        place_jobs(ft2, jobs)


def test_one_server_collectives_are_refused(ft2):
    with pytest.raises(TopoError, match="no traffic on the fabric"):
        job_demand(ft2, place_jobs(ft2, [Job("a", "alltoall", servers=(0,))])[0])


def test_a_one_leaf_fabric_is_one_block():
    # 4 one-GPU servers on one 4-port leaf, no spine: the leaf is the only block
    G = build("ft2", switch_ports=4, gpus=4, gpus_per_node=1, nics_per_node=1)
    assert server_blocks(G) == {0: 0, 1: 0, 2: 0, 3: 0}
    assert place_jobs(G, [Job("a", "ring", count=3, policy="slurm-tree")])[0].servers == (0, 1, 2)


REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "real"


@pytest.mark.skipif(not (REAL / "ibnetdiscover").is_dir(), reason="../shared absent")
def test_a_fabric_without_gpus_is_refused():
    from topo.formats import import_ibnetdiscover

    G = import_ibnetdiscover([REAL / "ibnetdiscover" / "ibtopotool_1.topo"])
    with pytest.raises(TopoError, match="jobs are placed on a fabric with GPUs"):
        place_jobs(G, [Job("a", "alltoall", count=2)])
