"""One --seed, independent streams: the failures, ECMP's hashing and each resilience trial
draw from their own children of numpy.random.SeedSequence(seed) (topo.flow.seeds)."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.flow.failures.damage import cables, fail
from topo.flow.failures.resilience import damaged_bandwidth, resilience
from topo.flow.routing import routed_alltoall


def child(seed: int, k: int) -> np.random.Generator:
    """numpy's own spelling of child k of SeedSequence(seed)."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(k + 1)[k])


def test_failures_draw_from_child_0_and_hashing_from_child_1():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    edges = cables(G)
    assert all(G.edges[e].get("links", 1) == 1 for e in edges)  # one cable per edge
    # Cable draws by hand: 5 of the sorted cables, without replacement, from child 0.
    picks = child(3, 0).choice(len(edges), size=5, replace=False)
    assert sorted(fail(G, links=5, seed=3)[1].links) == sorted(edges[i] for i in picks)
    # The hashing of seed 3 is child 1's, and not the failures' stream (child 0) nor
    # default_rng(3), which both purposes drew from before.
    a = routed_alltoall(G, "ecmp", seed=3).link_load
    assert routed_alltoall(G, "ecmp", seed=child(3, 1)).link_load == a
    assert routed_alltoall(G, "ecmp", seed=child(3, 0)).link_load != a
    assert routed_alltoall(G, "ecmp", seed=np.random.default_rng(3)).link_load != a


def trial_seed(seed: int, i: int) -> int:
    """Trial i's seed by hand: child (2, i) of SeedSequence(seed), first 64-bit word, low 53."""
    words = np.random.SeedSequence(seed).spawn(3)[2].spawn(i + 1)[i].generate_state(1, np.uint64)
    return int(words[0]) % 2**53


def test_resilience_trials_are_seeded_by_children_and_runs_of_other_seeds_share_none():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    one = resilience(G, trials=10, links=3, seed=1)
    two = resilience(G, trials=10, links=3, seed=2)
    assert one.trial_seeds == [trial_seed(1, i) for i in range(10)]
    assert two.trial_seeds == [trial_seed(2, i) for i in range(10)]
    assert not set(one.trial_seeds) & set(two.trial_seeds)  # seed + i shared 9 of 10
    assert one.to_dict()["trial_seeds"] == one.trial_seeds
    # Reproducible: the same seed gives the same trials, and trial i alone is
    # damaged_bandwidth with its seed.
    again = resilience(G, trials=10, links=3, seed=1)
    assert again.busbw_GBps == one.busbw_GBps and again.trial_seeds == one.trial_seeds
    for i in (0, 7):
        r = damaged_bandwidth(G, links=3, seed=one.trial_seeds[i])
        assert r.report.alltoall_busbw_Bps / 1e9 == pytest.approx(one.busbw_GBps[i], rel=1e-12)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_seed_is_refused_by_name(bad):
    G = build("ft2", switch_ports=4)
    with pytest.raises(TopoError, match="seed must be a whole number >= 0"):
        fail(G, links=1, seed=bad)
