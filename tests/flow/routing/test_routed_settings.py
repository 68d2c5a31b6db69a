"""The as-routed API says when a setting does nothing: a seed with D-mod-k is noted unused, a
pxn that is not a bool is refused; a numpy integer seed is a seed (recorded as the int)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.flow.failures.resilience import damaged_bandwidth
from topo.flow.routing import routed_alltoall, routed_flow
from topo.traffic import uniform_alltoall


@pytest.fixture(scope="module")
def G():
    return build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)


@pytest.mark.parametrize("seed", [3, np.int64(3), np.random.default_rng(3)])
def test_a_seed_with_dmodk_is_said_unused(G, seed):
    # D-mod-k draws nothing: the same loads as without a seed, and a note names the seed
    plain = routed_alltoall(G, "dmodk")
    for r in (
        routed_alltoall(G, "dmodk", seed=seed),
        routed_flow(G, uniform_alltoall(G), "dmodk", seed=seed),
    ):
        assert r.link_load == plain.link_load and r.routing.seed is None
        unused = [n for n in r.reductions if n.startswith("seed ")]
        assert unused == [
            f"seed {seed!r} unused: D-mod-k is deterministic (the seed seeds only ECMP's hashing)"
        ]
    assert not any(n.startswith("seed ") for n in plain.reductions)


def test_dmodk_takes_the_default_seed_and_none(G):
    # contention-free FT2 of 8-port switches (32 GPUs, 2 per server): 50 GB/s x 31 / 30
    for seed in (0, None, np.int64(0)):
        r = routed_alltoall(G, "dmodk", seed=seed)
        assert r.routing.seed is None and not any(n.startswith("seed ") for n in r.reductions)
        assert r.alltoall_busbw_Bps / 1e9 == pytest.approx(50 * 31 / 30, rel=1e-12)


def test_damaged_dmodk_keeps_its_seed_for_the_failures(G):
    # the seed picks the failed cables (its failures' stream); D-mod-k itself draws nothing
    a = damaged_bandwidth(G, links=2, seed=5, routing="dmodk")
    b = damaged_bandwidth(G, links=2, seed=5, routing="optimal")
    assert a.failures.links == b.failures.links and a.report.routing.seed is None


@pytest.mark.parametrize("pxn", [None, 0, 1, "yes"])
def test_pxn_must_be_a_bool(G, pxn):
    with pytest.raises(TopoError, match=rf"^pxn must be True or False, got {pxn!r}$"):
        routed_alltoall(G, "ecmp", pxn=pxn)
    with pytest.raises(TopoError, match="^expected must be True or False"):
        routed_flow(G, uniform_alltoall(G), "ecmp", expected=pxn)


def test_numpy_bools_are_bools(G):
    r = routed_alltoall(G, "dmodk", pxn=np.bool_(False))
    assert r.routing.pxn is False and r.to_dict()["pxn"] is False


def test_a_numpy_integer_seed_is_recorded_as_the_int(G):
    r = routed_alltoall(G, "ecmp", seed=np.int64(3))
    d = r.to_dict()
    assert r.routing.seed == 3 and type(r.routing.seed) is int and d["seed"] == 3
    assert json.loads(json.dumps(d["seed"])) == 3
    assert r.link_load == routed_alltoall(G, "ecmp", seed=3).link_load  # the same seed
    assert routed_alltoall(G, "ecmp", seed=np.random.default_rng(3)).routing.seed is None
