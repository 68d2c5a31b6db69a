"""The Table 3 comparison (topo.cost.compare) and bills of materials (topo.cost.bom).

The report's cells are written out here from the DeepSeek-V3 hardware report (Zhao et al.,
ISCA 2025, Table 3); the counts must match exactly and every cost cell within 2% with the
default price book. Closed-form counts are held against the builders at small radices.
"""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.cost import bill_of_materials, compare, family_counts, load_prices
from topo.cost.prices import PriceBook
from topo.errors import SpecError
from topo.fabric import summarize
from topo.spec import SwitchSpec

# family: endpoints, switches, links, cost (M$), cost per endpoint (k$)  -- ISCA 2025, Table 3
PAPER = {
    "ft2": (2048, 96, 2048, 9, 4.39),
    "mpft": (16384, 768, 16384, 72, 4.39),
    "ft3": (65536, 5120, 131072, 491, 7.5),
    "slimfly": (32928, 1568, 32928, 146, 4.4),
    "dragonfly": (261632, 16352, 384272, 1522, 5.8),
}


def test_table3_reproduced_within_two_percent():
    rows = compare(["ft2", "mpft", "ft3", "slimfly", "dragonfly"], SwitchSpec(64))
    for r in rows:
        endpoints, switches, links, musd, kusd = PAPER[r.family]
        assert (r.endpoints, r.switches, r.links) == (endpoints, switches, links), r.family
        assert r.cost_usd / 1e6 == pytest.approx(musd, rel=0.02), r.family
        assert r.cost_per_endpoint_usd / 1e3 == pytest.approx(kusd, rel=0.02), r.family


SWITCH, LINK, ENDPOINT = 44_500, 1_680, 600  # the default book's prices


def test_cost_is_switches_links_and_endpoint_cables_at_the_default_prices():
    (r,) = compare(["ft2"])
    assert r.cost_usd == 96 * SWITCH + 2048 * LINK + 2048 * ENDPOINT
    (r,) = compare(["dragonfly"])
    assert r.cost_usd == 16352 * SWITCH + 384272 * LINK + 261632 * ENDPOINT


def test_flags():
    rows = {r.family: r for r in compare()}
    assert rows["slimfly"].formula_only and "q = 28 is not a prime power" in rows["slimfly"].note
    assert "q = 27" in rows["slimfly"].note
    assert "511 groups" in rows["dragonfly"].note and "513" in rows["dragonfly"].note
    assert rows["dragonfly"].formula_only  # 261,632 endpoints: counted, not built
    assert not compare(["dragonfly"], SwitchSpec(32))[0].formula_only  # 16,256: buildable
    assert not rows["ft2"].formula_only


@pytest.mark.parametrize("family", ["ft2", "mpft", "ft3"])
def test_clos_formulas_match_the_builders(family):
    c = family_counts(family, SwitchSpec(8))
    s = summarize(build(family, switch_ports=8))
    assert (c["endpoints"], c["switches"], c["links"]) == (s.endpoints, s.switches, s.links)


def test_slimfly_and_dragonfly_formulas_match_the_builders():
    # 12 ports: q = 5 (7 + 4 <= 12) is a prime power, so the formula row can be built.
    c = family_counts("slimfly", SwitchSpec(12))
    s = summarize(build("slimfly", switch_ports=12, gpus_per_node=1, nics_per_node=1))
    assert not c["formula_only"]
    assert (c["endpoints"], c["switches"], c["links"]) == (s.endpoints, s.switches, s.links)
    # 8 ports: a = 4, p = h = 2, Table 3's a*h - 1 = 7 groups.
    c = family_counts("dragonfly", SwitchSpec(8))
    s = summarize(build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1, groups=7))
    assert (c["endpoints"], c["switches"], c["links"]) == (s.endpoints, s.switches, s.links)


def test_bill_of_materials_of_a_built_fabric():
    r = bill_of_materials(build("ft2"))
    assert [(x.kind, x.quantity) for x in r.lines] == [
        ("switch", 96),
        ("optical", 2048),
        ("endpoint", 2048),
    ]
    assert r.cost_usd == 96 * SWITCH + 2048 * LINK + 2048 * ENDPOINT
    assert r.cost_per_endpoint_usd == r.cost_usd / 2048
    assert r.watts is None  # the default book gives no power


def test_electrical_layout_prices_dragonfly_local_links():
    book = load_prices()
    cables = tuple(
        c if c.kind != "electrical" else type(c)(c.kind, c.gbps, 100.0) for c in book.cables
    )
    rack = PriceBook("test", book.switches, cables, electrical_within_group=True)
    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    r = bill_of_materials(G, rack)
    got = {x.kind: x.quantity for x in r.lines}
    # 9 groups of 4 routers: 9*6 local links (electrical), 9*4*2/2 = 36 global (optical).
    assert got == {"switch": 36, "optical": 36, "electrical": 54, "endpoint": 72}
    assert r.cost_usd == 36 * (SWITCH * 8 / 64) + 36 * LINK + 54 * 100 + 72 * ENDPOINT


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"switch": 63}, "even number from 4"),
        ({"nics_per_node": 0}, "nics_per_node must be at least 1"),
        ({"dragonfly_groups": 0}, "groups must be from 1 to a\\*h \\+ 1 = 513"),
        ({"dragonfly_groups": 514}, "groups must be from 1 to a\\*h \\+ 1 = 513"),
    ],
)
def test_compare_refusals(kwargs, message):
    with pytest.raises(SpecError, match=message):
        if "switch" in kwargs:
            kwargs = {"switch": SwitchSpec(kwargs["switch"])}
        compare(["mpft", "dragonfly"], **kwargs)


def test_the_dragonfly_note_states_the_groups_used():
    # Issue 11: at 128 ports the note read as if Table 3's 511 groups were used. Balanced
    # a = 2p = 2h with 4p - 1 <= 128: p = 32, a = 64, h = 32; a*h - 1 = 2,047 groups.
    c = family_counts("dragonfly", SwitchSpec(128))
    assert c["config"]["groups"] == 2047
    assert c["note"].startswith("2,047 groups: a*h - 1, Table 3's rule (511 groups at 64 ports)")
    assert family_counts("dragonfly", SwitchSpec(64))["note"].startswith("511 groups: a*h - 1")
