"""Counts without graphs (topo.builders.counts.fabric_counts).

Two kinds of expected values: the counts of the graph the builder makes (``summarize(build())``,
the old path of ``topo build --json``), for several parameter sets of every family, at the
smallest, a middle and the largest size; and closed forms worked by hand (the k-ary fat tree,
k^3/4 endpoints, 5k^2/4 switches and k^3/2 switch-switch cables per plane, Al-Fares et al.,
SIGCOMM 2008; DeepSeek-V3 report Table 3; Kim et al.'s Dragonfly; Besta and Hoefler's Slim Fly).
"""

from __future__ import annotations

from typing import Any

import pytest

from topo.builders import build, fabric_counts, max_gpus
from topo.builders.dragonfly import global_link_count, global_links
from topo.errors import SpecError
from topo.fabric import summarize

SERVERS = ({"gpus_per_node": 8, "nics_per_node": 8}, {"gpus_per_node": 4, "nics_per_node": 2})
DIRECT_SERVER = {"gpus_per_node": 1, "nics_per_node": 1}

CASES: list[tuple[str, dict[str, Any]]] = [
    *[
        (fam, {"switch_ports": k, "oversubscription": r, **srv})
        for fam in ("ft2", "mrft", "mpft", "rail-only")
        for k in (8, 12)
        for r in (1, 3)
        for srv in SERVERS
    ],
    *[
        (fam, {"tiers": 3, "switch_ports": k, "oversubscription": r, **srv})
        for fam in ("mrft", "mpft")
        for k in (8, 12)
        for r in (1, 3)
        for srv in SERVERS
    ],
    ("mrft", {"switch_ports": 8, "gpus_per_node": 2, "nics_per_node": 1}),  # one rail
    *[("ft3", {"switch_ports": k, **srv}) for k in (4, 8) for srv in SERVERS],
    *[("dragonfly", {"switch_ports": k, **DIRECT_SERVER}) for k in (8, 12)],
    ("dragonfly", {"switch_ports": 16, "groups": 5, "arrangement": "palmtree", **SERVERS[1]}),
    *[
        # a = 3, h = 1: a*h odd, so one global port per group stays free when g is odd
        ("dragonfly", {"switch_ports": 8, "routers_per_group": 3, "global_ports": 1,
                       "endpoints_per_router": 1, "groups": g, **DIRECT_SERVER})
        for g in (2, 3, 4)
    ],
    *[("slimfly", {"switch_ports": k, **DIRECT_SERVER}) for k in (8, 12)],
    ("slimfly", {"switch_ports": 12, "q": 4, **SERVERS[1]}),
    *[("hpn", {"switch_ports": 32, **srv}) for srv in SERVERS],
    ("ft2", {"switch_ports": 8, "nic_ports": 2}),
    ("mpft", {"switch_ports": 8, "tiers": 3, "nic_ports": 2}),
    ("ft2", {"switch_ports": 8, "planes_per_nic": 2}),
    ("ft2", {"switch_ports": 8, "gpus_per_host": 4}),
]


def sizes(family: str, options: dict[str, Any]) -> list[int | None]:
    """The GPU counts tried: the family's default (None), one server, and a third and a half
    of the ceiling in whole servers."""
    top = max_gpus(family, **{k: v for k, v in options.items() if k != "gpus_per_host"})
    g = options.get("gpus_per_node", 8)
    servers = top // g
    return sorted({g, max(1, servers // 3) * g, max(1, servers // 2) * g}) + [None]


@pytest.mark.parametrize(("family", "options"), CASES)
def test_fabric_counts_equal_the_built_graphs_counts(family: str, options: dict[str, Any]) -> None:
    for gpus in sizes(family, options):
        kw = options if gpus is None else {**options, "gpus": gpus}
        assert fabric_counts(family, **kw) == summarize(build(family, **kw)), (family, kw)


def test_three_layer_mpft_of_64_port_switches_by_the_closed_form() -> None:
    # Per plane the k-ary fat tree of k = 64: k^3/4 = 65,536 endpoints, 5k^2/4 = 5,120
    # switches (2,048 leaves, 2,048 spines, 1,024 cores), k^3/2 = 131,072 cables; 8 planes.
    s = fabric_counts("mpft", tiers=3)
    assert s.gpus == s.endpoints == s.endpoint_links == s.max_gpus == 8 * 65_536
    assert s.nodes == 65_536 and s.planes == 8
    assert s.switches_by_tier == {"leaf": 8 * 2048, "spine": 8 * 2048, "core": 8 * 1024}
    assert s.switches == 8 * 5120
    assert s.links == 8 * 131_072
    assert s.cables == s.links + s.endpoint_links


def test_counts_past_the_largest_graph() -> None:
    # 1,048,576 endpoints, no graph: 16 planes of 65,536 (two-port NICs on 8 GPUs a server,
    # port p of NIC j on its own port plane): k^3/4 per plane, 5k^2/4 switches per plane.
    s = fabric_counts("mpft", tiers=3, nic_ports=2)
    assert s.endpoints == 16 * 65_536 and s.gpus == 524_288 and s.planes == 16
    assert s.switches == 16 * 5120 and s.links == 16 * 131_072
    # a three-layer fat tree of 160-port switches: k^3/4 = 1,024,000 endpoints, 5k^2/4 = 32,000
    # switches, k^3/2 = 2,048,000 cables; past the graph build holds, counted all the same
    ft3 = fabric_counts("ft3", switch_ports=160)
    assert (ft3.endpoints, ft3.switches, ft3.links) == (1_024_000, 32_000, 2_048_000)
    with pytest.raises(SpecError, match="at most 524,288 GPUs"):
        build("ft3", switch_ports=160)


def test_table3_counts_without_graphs() -> None:
    # DeepSeek-V3 report, Table 3 (64-port switches): FT2 2,048 endpoints, 96 switches, 2,048
    # links; MPFT 16,384, 768, 16,384; FT3 65,536, 5,120, 131,072; SF q = 27 (constructible):
    # 2 x 27^2 = 1,458 routers of k' = (3q - delta)/2 = (81 + 1)/2 = 41 network ports (27 = 4w - 1),
    # 1,458 x 41 / 2 = 29,889 links.
    assert (fabric_counts("ft2").endpoints, fabric_counts("ft2").switches) == (2048, 96)
    mpft = fabric_counts("mpft")
    assert (mpft.endpoints, mpft.switches, mpft.links) == (16_384, 768, 16_384)
    ft3 = fabric_counts("ft3")
    assert (ft3.endpoints, ft3.switches, ft3.links) == (65_536, 5120, 131_072)
    sf = fabric_counts("slimfly")
    assert (sf.switches, sf.links) == (1458, 29_889)


@pytest.mark.parametrize(("a", "h", "g"), [(4, 2, 9), (4, 2, 5), (4, 2, 2), (3, 1, 3), (3, 3, 4)])
def test_global_link_count_is_the_links_global_links_places(a: int, h: int, g: int) -> None:
    assert global_link_count(a, h, g) == len(global_links(a, h, g))


def test_global_link_count_by_hand() -> None:
    # g = a*h + 1: one link per pair of groups, g(g-1)/2; a = 3, h = 1, g = 3: three ports per
    # group, two peers, one link each (m = 1, r = 1 odd with g odd: a port stays free)
    assert global_link_count(4, 2, 9) == 36
    assert global_link_count(3, 1, 3) == 3
    assert global_link_count(4, 2, 1) == 0


@pytest.mark.parametrize(
    ("family", "options", "match"),
    [
        ("ft2", {"switch_ports": 8, "gpus": 40}, "at most 32 endpoints"),
        ("hpn", {"switch_ports": 32, "oversubscription": 3}, "oversubscription must be 1"),
        ("hpn", {"switch_ports": 48}, "multiple of 32"),
        ("slimfly", {"q": 6}, "q must be at least 3"),
        ("dragonfly", {"switch_ports": 8, "global_ports": 4}, "more than switch_ports"),
        ("mrft", {"switch_ports": 4, "nics_per_node": 8}, "fewer than its 8 rails"),
        ("ft3", {"oversubscription": 3}, "must be 1 for ft3"),
    ],
)
def test_fabric_counts_refuses_what_build_refuses(
    family: str, options: dict[str, Any], match: str
) -> None:
    with pytest.raises(SpecError, match=match) as counted:
        fabric_counts(family, **options)
    with pytest.raises(SpecError) as built:
        build(family, **options)
    assert str(counted.value) == str(built.value)
