"""The hardware catalog (topo.catalog, topo/data/catalog.toml) and ``topo catalog``,
``topo build --switch/--node``.

Expected values are the vendors' own figures, restated here from the documents the catalog
cites (QM9700: 64 x 400G in 32 OSFP, 51.2 Tb/s; Q3400: 144 x 800G; SN5600: 64 x 800G or
128 x 400G, 51.2 Tb/s; DGX H100: 900 GB/s NVLink per GPU bidirectional, 8 x 400G; DGX B200 and
GB200 NVL72: 1.8 TB/s per GPU; NVL72: 72 GPUs), and the closed forms of two- and three-layer
fat trees for the builds (k^2/2 endpoints and 3k/2 switches; k^3/4 endpoints).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.catalog import CATALOG_KINDS, load_catalog
from topo.cli import app
from topo.errors import FormatError, SpecError
from topo.spec import ServerSpec, SwitchSpec

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_every_entry_names_its_source_and_no_price_is_made_up():
    cat = load_catalog()
    assert {e.kind for e in cat.entries} == set(CATALOG_KINDS)
    for e in cat.entries:
        assert len(e.source) > 20, e.name
        # No public list price exists for any of these parts: none is carried.
        assert e.get("price_usd") is None, e.name


@pytest.mark.parametrize(
    "name, ports, gbps",
    [
        ("qm9700", 64, 400),
        ("q3400", 144, 800),
        ("sn5600", 64, 800),
        ("sn5600-400g", 128, 400),
        ("tomahawk5", 64, 800),
        ("tomahawk5-400g", 128, 400),
    ],
)
def test_switches_as_their_datasheets_state(name, ports, gbps):
    cat = load_catalog()
    assert cat.switch(name) == SwitchSpec(ports, gbps)
    # ports x rate is the stated aggregate (51.2 or 115.2 Tb/s; Quantum-2's counts both ways)
    e = cat.get("switch", name)
    both = 2 if e.get("aggregate_bidirectional") else 1
    assert both * ports * gbps / 1000 == pytest.approx(e.get("aggregate_tbps"))


@pytest.mark.parametrize(
    "name, gpus, nvlink_bidir_GBps, nic_gbps, arch",
    [
        ("a100", 8, 600, 200, "ampere"),
        ("h800", 8, 400, 400, "hopper"),
        ("h100", 8, 900, 400, "hopper"),
        ("h200", 8, 900, 400, "hopper"),
        ("h20", 8, 900, 400, "hopper"),
        ("b200", 8, 1800, 400, "blackwell"),
        ("b300", 8, 1800, 800, "blackwell"),
        ("gb200-nvl72", 72, 1800, 400, "blackwell"),
        ("gb300-nvl72", 72, 1800, 800, "blackwell"),
        ("hpn-host", 8, 720, 400, "hopper"),
    ],
)
def test_servers_as_their_vendors_state(name, gpus, nvlink_bidir_GBps, nic_gbps, arch):
    cat = load_catalog()
    server = cat.node(name)
    # one NIC per GPU in every one of these systems
    assert server == ServerSpec(gpus, gpus, nvlink_bidir_GBps / 2, server.pcie_GBps)
    assert cat.nic_gbps(name) == nic_gbps
    assert cat.get("node", name).get("arch") == arch


def test_unknown_names_list_the_known_ones():
    cat = load_catalog()
    with pytest.raises(SpecError, match="qm9700, q3400") as e:
        cat.switch("qm9701")
    assert e.value.param == "switch"
    with pytest.raises(SpecError, match="gb200-nvl72"):
        cat.node("h900")
    assert cat.switch("Q3400") == SwitchSpec(144, 800)  # names are case-insensitive


def test_bad_catalog_files(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text('[switch.x]\nmodel = "x"\nports = 64\n')
    with pytest.raises(FormatError, match="switch.x: missing gbps, source"):
        load_catalog(bad)
    bad.write_text('[router.x]\nmodel = "x"\n')
    with pytest.raises(FormatError, match="unknown section 'router'"):
        load_catalog(bad)
    bad.write_text(
        '[node.y]\nmodel = "y"\narch = "hopper"\ngpus = 8\nnics = 8\nnic = "cx9"\n'
        'nvlink_GBps = 1\npcie_GBps = 1\nsource = "s"\n'
    )
    with pytest.raises(FormatError, match="nic 'cx9' is not in"):
        load_catalog(bad)


def test_topo_catalog_json_and_table():
    r = run("catalog", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [s["name"] for s in doc["switch"]][:2] == ["qm9700", "q3400"]
    assert all("source" in e for k in CATALOG_KINDS for e in doc[k])
    r = run("catalog", "node")
    assert r.exit_code == 0 and "gb200-nvl72" in r.output
    r = run("catalog", "router")
    assert r.exit_code == 1 and "unknown kind 'router'" in r.output


def build_json(*args: str) -> dict:
    r = run("build", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_build_gb300_nvl72_on_q3400_is_a_full_two_layer_fat_tree():
    # k = 144: k^2/2 = 10,368 endpoints (144 racks of 72), k + k/2 = 216 switches
    d = build_json("ft2", "--switch", "q3400", "--node", "gb300-nvl72")
    assert d["gpus"] == d["endpoints"] == 144**2 // 2 == 144 * 72
    assert d["switches_by_tier"] == {"leaf": 144, "spine": 72}


@pytest.mark.slow
def test_build_gb200_nvl72_on_qm9700_three_layers():
    # k = 64: k^3/4 = 65,536 endpoints; whole racks of 72: 910 racks, 65,520 GPUs
    d = build_json("ft3", "--switch", "qm9700", "--node", "gb200-nvl72")
    assert d["gpus"] == 65536 // 72 * 72 == 65520
    assert d["switches"] == 5 * 64 * 64 // 4


def test_explicit_options_win_over_the_catalog():
    d = build_json("ft2", "--switch", "q3400", "--switch-ports", "128")
    assert d["switches_by_tier"] == {"leaf": 128, "spine": 64}  # k = 128, not 144
    d = build_json("mpft", "--node", "b200", "--nics-per-node", "4", "--gpus", "64")
    assert d["planes"] == 4


def test_a_400g_nic_sets_the_link_rate_on_an_800g_switch(tmp_path):
    out = tmp_path / "f.json"
    r = run("build", "mrft", "--switch", "q3400", "--node", "b200", "--gpus", "576", "-o", str(out))
    assert r.exit_code == 0, r.output
    graph = json.loads(out.read_text())["graph"]
    assert graph["link_gbps"] == 400 and graph["switch_ports"] == 144
    assert graph["nvlink_GBps"] == 900


def test_unknown_model_and_too_many_nics_refused_with_the_numbers():
    r = run("build", "ft2", "--switch", "qm9701")
    assert r.exit_code == 1 and "qm9700, q3400, sn5600" in r.output
    r = run("build", "ft2", "--node", "h900")
    assert r.exit_code == 1 and "a100, h800, h100, h200, h20, b200" in r.output
    # 72 rails (one NIC per GPU of an NVL72 rack) on 64-port switches
    r = run("build", "mrft", "--switch", "qm9700", "--node", "gb200-nvl72")
    assert r.exit_code == 1
    assert "64 leaves, fewer than its 72 rails" in r.output


def test_collective_takes_the_arch_of_a_catalog_server(tmp_path):
    # topo collective --node NAME selects NCCL's per-arch rows by the server's GPU generation:
    # the effective NVLink rate is the link rate times efficiency.nvlink[arch] of the
    # constants file (read here from the file itself).
    from topo.collective.constants import default_constants_path
    from topo.spec import tomllib

    eff = tomllib.loads(default_constants_path().read_text())["efficiency"]["nvlink"]
    fabric = tmp_path / "b200.json"
    r = run(
        "build", "ft2", "--switch", "qm9700", "--node", "b200", "--gpus", "64", "-o", str(fabric)
    )
    assert r.exit_code == 0, r.output
    for node, arch in (("b200", "blackwell"), ("h100", "hopper")):
        r = run(
            "collective", str(fabric), "--op", "all_reduce", "--gpus", "64", "--node", node,
            "--min-bytes", "1G", "--max-bytes", "1G", "--json",
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output)
        rates = (doc[0] if isinstance(doc, list) else doc)["rates"]
        assert rates["nvlink_effective_GBps"] == pytest.approx(900 * eff[arch])
    r = run("collective", str(fabric), "--op", "all_reduce", "--node", "h900")
    assert r.exit_code == 1 and "b200" in r.output


def test_topo_cost_uses_a_catalog_price(tmp_path):
    from topo.cost import load_prices
    from topo.cost.catalog_prices import with_catalog

    # The shipped catalog has no price: the book is unchanged.
    book = load_prices()
    assert with_catalog(book, load_catalog()) is book
    # A catalog with a quoted price for the 144-port 800G switch prices an 800G fabric:
    # ft2 of 144 ports, 8 x 800G-NIC servers, 576 GPUs = 576 endpoints on 8 leaves of 72 down
    # ports; spines: the smallest divisor of 72 with 144 S >= 8 * 72, S = 4 (18 cables per
    # pair): 12 switches, 576 switch-switch cables. Cables at 800G are not in the default
    # book, so give them too (a user's book).
    cat = tmp_path / "c.toml"
    cat.write_text(
        '[switch.q3400]\nmodel = "q"\nports = 144\ngbps = 800\nprice_usd = 100000\n'
        'source = "a quote"\n'
    )
    prices = tmp_path / "p.toml"
    prices.write_text(
        '[[switch]]\nports = 64\ngbps = 400\nprice_usd = 1\nsource = "x"\n'
        '[[cable]]\nclass = "optical"\ngbps = 800\nprice_usd = 2000\nsource = "x"\n'
        '[[cable]]\nclass = "endpoint"\ngbps = 800\nprice_usd = 900\nsource = "x"\n'
    )
    fabric = tmp_path / "f.json"
    r = run(
        "build", "ft2", "--switch", "q3400", "--node", "b300", "--gpus", "576", "-o", str(fabric)
    )
    assert r.exit_code == 0, r.output
    r = run("cost", str(fabric), "--prices", str(prices), "--catalog", str(cat), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert (d["switches"], d["links"]) == (12, 576)
    assert d["cost_usd"] == 12 * 100_000 + 576 * 2_000 + 576 * 900
    # without the catalog's price there is no 800G switch to price
    r = run("cost", str(fabric), "--prices", str(prices))
    assert r.exit_code == 1 and "no switch of 800 Gb/s" in r.output


def test_plan_with_named_parts():
    # q3400 ports with b200's 400G NICs: 144-port switches at 400G. mpft3 of 20,000 GPUs:
    # 2,500 endpoints per plane on 144-port switches: ceil(2500/72) = 35 leaves, one pod of
    # 35 leaves, spines: smallest divisor of 72 with 72 s >= 35 * 72 -> 36 (2 cables per
    # pair); one pod, no core: 71 switches and 35 * 72 cables per plane.
    r = run(
        "plan", "--gpus", "20000", "--switch", "q3400", "--node", "b200",
        "--families", "mpft3", "--json", "--no-check",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert (row["switches"], row["links"]) == (8 * 71, 8 * 35 * 72)
    assert row["design"]["switch_ports"] == 144 and row["design"]["link_gbps"] == 400
    r = run("plan", "--gpus", "64", "--switch", "q3400", "--switch-ports", "64", "--json")
    assert r.exit_code == 1 and "800 Gb/s" in r.output  # the explicit radix wins, 800G stays
