"""The cache of what MoE reports share: each entry computed once under its own key, a key that
differs computed anew, and reports through it the same as without it."""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np
import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.moe import default_config, moe_report
from topo.moe.cache import MoECache
from topo.moe.timing import network_time
from topo.traffic import Demand


class Counter:
    """``make`` callables that count their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def make(self, value: str) -> Callable[[], str]:
        def f() -> str:
            self.calls.append(value)
            return value

        return f


def test_per_fabric_computes_once_per_graph_and_key():
    cache, c = MoECache(), Counter()
    G, H = build("ft2", switch_ports=8), build("ft2", switch_ports=8)  # alike, not the same
    assert cache.per_fabric(G, ("a", 1), c.make("G a1")) == "G a1"
    assert cache.per_fabric(G, ("a", 1), c.make("again")) == "G a1"  # kept: not called
    assert cache.per_fabric(G, ("a", 2), c.make("G a2")) == "G a2"  # another key
    assert cache.per_fabric(H, ("a", 1), c.make("H a1")) == "H a1"  # another graph
    assert c.calls == ["G a1", "G a2", "H a1"]
    assert (cache.hits, cache.misses, len(cache)) == (1, 3, 3)


def test_per_fabric_entries_go_with_their_graph():
    cache = MoECache()
    G = build("ft2", switch_ports=8)
    cache.per_fabric(G, "k", lambda: 1)
    assert len(cache) == 1
    del G
    gc.collect()
    assert len(cache) == 0


def test_an_error_is_not_kept():
    cache, c = MoECache(), Counter()
    G = build("ft2", switch_ports=8)

    def fails() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        cache.per_fabric(G, "k", fails)
    with pytest.raises(ValueError, match="no"):
        cache.by_value("k", fails)
    assert cache.per_fabric(G, "k", c.make("G")) == "G"
    assert cache.by_value("k", c.make("v")) == "v"
    assert c.calls == ["G", "v"]


def test_by_value_drops_the_least_recently_used():
    cache, c = MoECache(value_entries=2), Counter()
    cache.by_value("a", c.make("a"))
    cache.by_value("b", c.make("b"))
    cache.by_value("a", c.make("a again"))  # a used last: b is now the oldest
    cache.by_value("c", c.make("c"))  # over 2: b dropped
    cache.by_value("a", c.make("a 3"))
    cache.by_value("b", c.make("b again"))
    assert c.calls == ["a", "b", "c", "b again"]
    with pytest.raises(TopoError, match="value_entries must be >= 1, got 0"):
        MoECache(value_entries=0)


def report(G, cache=None, **kw):
    return moe_report(
        G, default_config(), schemes=("deepep",), compare_unlimited=False, smallest_lp=True,
        cache=cache, **kw,
    ).to_dict()  # fmt: skip


# 64 GPUs in 8 servers; DeepSeek-V3's 256 experts: EP 32 (4 servers), 64 (8 servers)
FABRICS = [
    ("mpft", dict(switch_ports=16, gpus=64)),
    ("ft2", dict(switch_ports=16, gpus=64, oversubscription=3)),
    ("ft2", dict(switch_ports=16, gpus=64, link_gbps=200)),  # the same layout, half the rate
]
POINTS = [dict(ep=64, node_limit=4), dict(ep=64, node_limit=2), dict(ep=32, node_limit=0),
          dict(ep=64, node_limit=4), dict(ep=64, node_limit=4, seed=1)]  # fmt: skip


def test_reports_through_one_cache_are_those_without():
    # every point of every fabric through one cache, against each computed alone: the same
    # report, float for float (points repeat: the same key; the seed, EP, limit or fabric
    # differ: a key that differs)
    graphs = [build(f, **o) for f, o in FABRICS]
    cache = MoECache()
    for G in graphs:
        for point in POINTS:
            assert report(G, cache, **point) == report(G, **point)
    # one routing per (EP, M, seed) for all fabrics: (64, 4, 0), (64, 2, 0), (32, 0, 0),
    # (64, 4, 1); per fabric one layout per EP, one cut per set of servers (EP 32: the first
    # 4 servers; EP 64: all 8)
    routings = sorted((k[1], k[7], k[8]) for k in cache.keys())
    assert routings == [(32 * 32, (0,), 0), (64 * 32, (2,), 0), (64 * 32, (4,), 0),
                        (64 * 32, (4,), 1)]  # fmt: skip
    for G in graphs:
        keys = cache.keys(G)
        assert sorted(k[2] for k in keys if k[0] == "ep_layout") == [32, 64]
        assert sorted(len(k[1]) for k in keys if k[0] == "cut") == [4, 8]


def test_a_fabrics_entries_go_with_it_after_reports():
    # nothing kept for a fabric holds the fabric itself (a subgraph view would): once the
    # graph is gone only its routing is left
    cache = MoECache()
    G = build("mpft", switch_ports=16, gpus=64)
    report(G, cache, ep=64, node_limit=4)
    assert len(cache.keys(G)) >= 3 and len(cache.keys()) == 1
    del G
    gc.collect()
    assert len(cache) == 1


def test_a_cached_report_is_the_fabrics_own():
    # the same servers, layout and routing on a fabric of half the link rate: its network
    # time is its own (every cable at half the rate: twice the time), not the first fabric's
    fast, slow = (build("ft2", switch_ports=16, gpus=64, link_gbps=g) for g in (400, 200))
    cache = MoECache()
    kw = dict(schemes=("deepep",), compare_unlimited=False, smallest_lp=True, ep=64)
    a = moe_report(fast, default_config(), cache=cache, node_limit=0, **kw).headline
    b = moe_report(slow, default_config(), cache=cache, node_limit=0, **kw).headline
    alone = moe_report(slow, default_config(), node_limit=0, **kw).headline
    assert (b.dispatch.ib_s, b.combine.ib_s) == (alone.dispatch.ib_s, alone.combine.ib_s)
    assert b.dispatch.ib_s == pytest.approx(2 * a.dispatch.ib_s, rel=1e-6)


def test_cached_routings_and_layouts_are_read_only():
    cache = MoECache()
    G = build("mpft", switch_ports=16, gpus=64)
    r = moe_report(G, default_config(), ep=64, node_limit=4, compare_unlimited=False,
                   schemes=("deepep",), smallest_lp=True, cache=cache)  # fmt: skip
    with pytest.raises(ValueError, match="read-only"):
        r.routings[4][0, 0] = 0
    with pytest.raises(ValueError, match="read-only"):
        r.layout.expert_rank[0] = 1


def test_a_seed_that_is_not_an_int_is_not_kept():
    # None draws afresh each time: nothing to key it by
    cache = MoECache()
    G = build("mpft", switch_ports=16, gpus=64)
    report(G, cache, ep=64, node_limit=4, seed=None)
    report(G, cache, ep=64, node_limit=4, seed=None)
    assert cache.keys() == []


def test_network_time_through_the_cache():
    # two demands among the same 4 servers (other bytes) share the cut fabric; a third among
    # other servers gets its own. Each time as without the cache; on the FT2 of 8-port
    # switches, 4 NICs of 50 GB/s a server, non-blocking: the busiest server's bytes over
    # 200 GB/s.
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=4, nics_per_node=4)
    cache = MoECache()
    for servers, scale in (((0, 1, 2, 3), 1.0), ((0, 1, 2, 3), 3.0), ((4, 5, 6, 7), 1.0)):
        entries = {
            (a, b): scale * 1e9 * (1 + i + 2 * j)
            for i, a in enumerate(servers)
            for j, b in enumerate(servers)
            if a != b
        }
        demand = Demand(level="server", terminals=tuple(servers), entries=entries)
        got, how = network_time(G, demand, smallest_lp=True, cache=cache)
        want, how_alone = network_time(G, demand, smallest_lp=True)
        assert (got.time_s, how) == (want.time_s, how_alone)
        busiest = max(
            max(sum(x for (a, _), x in entries.items() if a == s),
                sum(x for (_, b), x in entries.items() if b == s))
            for s in servers
        )  # fmt: skip
        assert got.time_s == pytest.approx(busiest / (4 * 50e9), rel=1e-6)
    cuts = [k for k in cache.keys(G) if k[0] == "cut"]
    assert sorted(sorted(k[1]) for k in cuts) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert np.isfinite(got.time_s)
