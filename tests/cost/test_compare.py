"""The Table 3 comparison (topo.cost.compare) and bills of materials (topo.cost.bom).

The report's cells are written out here from the DeepSeek-V3 hardware report (Zhao et al.,
ISCA 2025, Table 3); the counts must match exactly and every cost cell within 2% with the
default price book. Closed-form counts are held against the builders at small radices.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.cost import bill_of_materials, compare, family_counts, load_prices
from topo.cost.prices import PriceBook
from topo.errors import SpecError
from topo.fabric import save, summarize
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


def _book_with_800g() -> PriceBook:
    """The default book, and a 64-port 800G switch at twice the 400G one's price."""
    book = load_prices()
    fast = type(book.switches[0])("switch", 800.0, 2 * SWITCH, ports=64, source="test")
    return PriceBook("test", (*book.switches, fast), book.cables)


def test_a_link_gbps_that_contradicts_the_cables_is_refused(tmp_path):
    """A fresh-user trial: an ft2 whose graph said link_gbps 800 over 400G cables was billed
    800G switches and 400G cables, the switches' speed taken from the graph, not the edges."""
    G = build("ft2", switch_ports=8)
    G.graph["link_gbps"] = 800.0
    with pytest.raises(
        SpecError,
        match=r"^graph attribute link_gbps 800 contradicts the edges: "
        r"the fastest cable at switch \S+ is 400 Gb/s",
    ):
        bill_of_materials(G, _book_with_800g())
    path = tmp_path / "f.json"
    save(G, path)
    r = CliRunner().invoke(app, ["cost", str(path)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith(f"topo: error: {path}: graph attribute link_gbps 800 ")
    assert r.stderr.count("\n") == 1


def test_switches_are_priced_at_their_cables_speed():
    """Cables at 800G with no link_gbps: switches of 800G ports (8-port: a quarter of the
    64-port price, per port)."""
    G = build("ft2", switch_ports=8)
    del G.graph["link_gbps"]
    for _, _, d in G.edges(data=True):
        d["capacity"] *= 2
    book = _book_with_800g()
    book = PriceBook(
        book.path,
        book.switches,
        (*book.cables, *(type(c)(c.kind, 800.0, c.price_usd, source="test") for c in book.cables)),
    )
    r = bill_of_materials(G, book)
    (switch,) = [x for x in r.lines if x.kind == "switch"]
    # ft2 of 8-port switches: 8 leaves, 4 spines
    want = ("switch 8x800G", 12, 2 * SWITCH / 8)
    assert (switch.item, switch.quantity, switch.unit_usd) == want
