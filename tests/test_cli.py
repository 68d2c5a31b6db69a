"""Tests of the ``topo`` command line (typer's CliRunner, assertions on the output).

The commands run on small fabrics (8-port switches) except for one full-size DeepSeek-V3 MPFT
(16,384 GPUs). Expected counts come from the closed forms of folded Clos networks and expected
rates from hand-worked bottlenecks; the real GB200 dump is counted from the file itself. The
second half feeds the CLI bad input: each case must give one line on stderr, a non-zero exit, no
traceback, and must neither leave nor clobber an output file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from topo.cli import app

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
IBNET = REAL / "ibnetdiscover"

NIC_GBps = 50.0  # one 400 Gb/s NIC or cable: 400e9 / 8 B/s = 50 GB/s per direction

BUILD_KEYS = {
    "family",
    "gpus",
    "nodes",
    "endpoints",
    "switches",
    "switches_by_tier",
    "links",
    "endpoint_links",
    "cables",
    "planes",
    "max_gpus",
    "alltoall_busbw_GBps",
    "alltoall_server_GBps",
    "alltoall_method",
}
BANDWIDTH_KEYS = {
    "gpus",
    "pair_rate_GBps",
    "alltoall_busbw_GBps",
    "bottleneck_links",
    "solve_seconds",
}
IMPORT_KEYS = {
    "switches",
    "endpoints",
    "aggregation_nodes",
    "links",
    "endpoint_links",
    "cables",
    "link_speeds",
}

runner = CliRunner()


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def ok(*args: Any) -> Result:
    """Run a command that must succeed."""
    r = run(*args)
    assert r.exit_code == 0 and r.exception is None, r.output
    return r


def ok_json(*args: Any) -> dict[str, Any]:
    return json.loads(ok(*args, "--json").stdout)


def no_traceback(r: Result) -> None:
    # CliRunner catches what escapes the command: only a SystemExit (typer.Exit) is clean.
    assert isinstance(r.exception, SystemExit), f"{r.exception!r} escaped:\n{r.output}"
    assert "Traceback" not in r.output


def user_error(r: Result, *fragments: str) -> str:
    """A TopoError: exit 1, nothing on stdout, one line 'topo: error: ...' naming the fragments."""
    no_traceback(r)
    assert r.exit_code == 1, r.output
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("topo: error: "), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def usage_error(r: Result, *fragments: str) -> None:
    """Refused by the option parser (typer): exit 2, the message names the option or file."""
    no_traceback(r)
    assert r.exit_code == 2, r.output
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", r.stderr).split())  # unwrap rich's error panel
    for f in fragments:
        assert f in text, (f, text)


def clos2(k: int, r: int = 1) -> dict[str, int]:
    """Closed form of a full two-layer fat tree of k-port switches at oversubscription r.

    A leaf keeps u = k/(r+1) ports up and d = k - u down; the spines' k ports reach k leaves,
    and the k*u uplinks need u spines. Endpoints k*d, cables k*u (k^2/2 each when r = 1).
    """
    u = k // (r + 1)
    d = k - u
    return {"leaves": k, "spines": u, "endpoints": k * d, "links": k * u}


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a few fabrics written by 'topo build -o'."""
    folder = tmp_path_factory.mktemp("fabrics")
    ok("build", "ft2", "--switch-ports", 8, "-o", folder / "ft2.json")
    ok("build", "mpft", "--switch-ports", 8, "-o", folder / "mpft8.json")
    # Four one-GPU servers on one 4-port leaf: the smallest fabric with an all-to-all.
    ok(
        "build", "ft2", "--switch-ports", 4, "--gpus", 4, "--gpus-per-node", 1,
        "--nics-per-node", 1, "-o", folder / "tiny.json",
    )  # fmt: skip
    return folder


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty folder, so that file names in messages are short."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def real_dump(name: str) -> Path:
    path = IBNET / name
    if not path.is_file():
        pytest.skip(f"real data not available: {path}")
    return path


# ------------------------------------------------------------------------------ build


@pytest.mark.parametrize("r", [1, 3])
def test_build_ft2_counts_match_the_closed_form(r: int) -> None:
    s = ok_json("build", "ft2", "--switch-ports", 8, "--oversubscription", r)
    assert set(s) == BUILD_KEYS
    c = clos2(8, r)  # r=1: 8 leaves, 4 spines, 32 endpoints, 32 links; r=3: 8, 2, 48, 16
    assert s["family"] == "ft2"
    assert s["switches_by_tier"] == {"leaf": c["leaves"], "spine": c["spines"]}
    assert s["switches"] == c["leaves"] + c["spines"]
    assert s["endpoints"] == s["endpoint_links"] == s["gpus"] == s["max_gpus"] == c["endpoints"]
    assert s["nodes"] == c["endpoints"] // 8
    assert s["links"] == c["links"]
    assert s["planes"] == 1


def test_build_mrft_1024_gpus() -> None:
    s = ok_json("build", "mrft", "--switch-ports", 64, "--gpus", 1024)
    # 128 servers; rail j holds NIC j of each: 128 endpoints on 128/32 = 4 leaves, 8 rails ->
    # 32 leaves of 32 uplinks; spines: the smallest divisor S of 32 with 64*S >= 32*32, S = 16.
    assert s["nodes"] == 128 and s["endpoints"] == s["endpoint_links"] == 1024
    assert s["switches_by_tier"] == {"leaf": 32, "spine": 16}
    assert s["links"] == 32 * 32
    # The spines reach 64 leaves, 8 per rail, of 32 servers each: 256 servers, 2048 GPUs.
    assert s["max_gpus"] == 2048 and s["planes"] == 1


def test_build_table_and_output_file(in_tmp: Path) -> None:
    r = ok("build", "ft2", "--switch-ports", 8, "-o", "ft2.json")
    assert "switches by tier" in r.stdout and "leaf 8, spine 4" in r.stdout
    assert r.stderr.strip() == "wrote ft2.json"
    data = json.loads((in_tmp / "ft2.json").read_text())
    assert {"nodes", "edges", "graph"} <= set(data)
    assert data["graph"]["family"] == "ft2" and data["graph"]["switch_ports"] == 8
    # 32 GPUs + 4 NVSwitches + 32 NICs + 12 switches
    assert len(data["nodes"]) == 32 + 4 + 32 + 12
    assert sum(e["links"] for e in data["edges"] if e["kind"] == "fabric") == 32


@pytest.mark.parametrize(
    "args",
    [
        ["ft2", "--switch-ports", 8, "--oversubscription", 3],
        ["ft3", "--switch-ports", 8, "--gpus", 64],
        ["mrft", "--switch-ports", 8, "--tiers", 3, "--gpus-per-node", 2, "--nics-per-node", 2],
        ["mpft", "--switch-ports", 8, "--tiers", 3, "--gpus", 128],
        ["mpft", "--switch-ports", 8, "--nic-ports", 2],
        ["dragonfly", "--switch-ports", 8, "--gpus-per-node", 1, "--nics-per-node", 1],
        ["slimfly", "--switch-ports", 12, "--gpus-per-node", 1, "--nics-per-node", 1],
        ["rail-only", "--switch-ports", 8, "--gpus", 64],
        ["hpn", "--switch-ports", 32, "--gpus", 256],
    ],
)
def test_build_json_without_output_prints_the_built_graphs_counts(
    in_tmp: Path, args: list[Any]
) -> None:
    # Without -o the counts come in closed form (no graph); with -o from the graph written:
    # the same keys in the same order, the same values (what script users read).
    counted = ok("build", *args, "--json").stdout
    built = ok("build", *args, "--json", "-o", "fabric.json").stdout
    assert counted == built
    assert set(json.loads(counted)) == BUILD_KEYS


def test_build_table_without_output_is_titled_like_the_graph(in_tmp: Path) -> None:
    counted = ok("build", "ft2", "--switch-ports", 8, "--gpus", 16).stdout
    built = ok("build", "ft2", "--switch-ports", 8, "--gpus", 16, "-o", "ft2.json").stdout
    assert counted == built and counted.startswith("ft2-16")


# ------------------------------------------------------------------------------ bandwidth


def test_bandwidth_ft2_is_the_nic_rate(files: Path) -> None:
    # Non-blocking fabric, one 50 GB/s NIC per GPU: each GPU sends lambda to the n - g GPUs of
    # the other servers through its NIC, so lambda (n - g) <= 50 GB/s (NVLink carries the
    # g - 1 intra-server flows). busbw = lambda (n - 1) (nccl-tests). Every server's cut is
    # met, so its cables are full both ways in every optimal flow; and a leaf of these 8-port
    # switches holds 4 NICs of a single server and 4 uplinks, so the cut of that leaf with its
    # server (4 uplinks + the server's 4 other cables) is met too: its uplinks are full.
    n, g = 32, 8
    pair = NIC_GBps / (n - g)
    busbw = NIC_GBps * (n - 1) / (n - g)  # 64.583 GB/s
    rep = ok_json("bandwidth", files / "ft2.json")
    assert BANDWIDTH_KEYS <= set(rep)
    assert rep["gpus"] == n
    assert rep["pair_rate_GBps"] == pytest.approx(pair, rel=1e-6)
    assert rep["alltoall_busbw_GBps"] == pytest.approx(busbw, rel=1e-6)
    assert {b["tier"] for b in rep["bottleneck_links"]} == {
        "nic->leaf",
        "leaf->nic",
        "leaf->spine",
        "spine->leaf",
    }
    assert len(rep["bottleneck_links"]) == 2 * (32 + 8 * 4)  # 32 NIC cables, 8 leaves x 4 uplinks
    assert rep["solve_seconds"] >= 0
    table = ok("bandwidth", files / "ft2.json").stdout
    assert f"{busbw:.2f} GB/s" in table and "bottleneck links" in table


@pytest.mark.slow
def test_mpft_full_size_build_and_bandwidth(in_tmp: Path) -> None:
    """DeepSeek-V3's fabric: 64-port switches, 8 planes (ISCA 2025, Table 3)."""
    s = ok_json("build", "mpft", "--switch-ports", 64, "--link-gbps", 400, "-o", "mpft.json")
    # Per plane a full two-layer fat tree: 64 leaves, 32 spines, 2048 endpoints, 2048 cables.
    c = clos2(64)
    assert s["planes"] == 8
    assert s["gpus"] == s["endpoints"] == 8 * c["endpoints"] == 16384
    assert s["nodes"] == 2048
    assert s["switches_by_tier"] == {"leaf": 8 * c["leaves"], "spine": 8 * c["spines"]}
    assert s["switches"] == 768 and s["links"] == 8 * c["links"] == 16384
    rep = ok_json("bandwidth", "mpft.json")
    n, g = 16384, 8  # as for ft2: busbw = NIC rate * (n - 1) / (n - g)
    assert rep["gpus"] == n
    assert rep["alltoall_busbw_GBps"] == pytest.approx(NIC_GBps * (n - 1) / (n - g), rel=1e-6)


# ------------------------------------------------------------------------------ import


def _count_dump(path: Path) -> dict[str, Any]:
    """Count the records of an ibnetdiscover dump by hand (independent of topo's reader).

    Every cable appears twice, once under each end's record.
    """
    switches: dict[str, str] = {}
    cas: dict[str, str] = {}
    ports: dict[str, list[str]] = {}
    record = None
    for line in path.read_text().splitlines():
        m = re.match(r'^(Switch|Ca)\s+\d+\s+"([^"]+)"\s*#\s*"([^"]*)"', line)
        if m:
            record = m.group(2)
            (switches if m.group(1) == "Switch" else cas)[record] = m.group(3)
            ports[record] = []
            continue
        m = re.match(r'^\[\d+\]\S*\s*"([^"]+)"', line)
        if m and record:
            ports[record].append(m.group(1))
    hosts = {c for c, d in cas.items() if "Aggregation Node" not in d}
    leaves = {}
    for s in switches:
        d = sum(r in hosts for r in ports[s])
        if d:
            leaves[switches[s]] = (d, sum(r in switches for r in ports[s]))
    return {
        "switches": switches,
        "hosts": hosts,
        "aggregation_nodes": len(cas) - len(hosts),
        "switch_cables": sum(r in switches for s in switches for r in ports[s]) // 2,
        "leaves": leaves,  # description -> (hosts, uplink cables)
    }


@pytest.fixture(scope="module")
def gb200(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Result]:
    dump = real_dump("topograph_dgx_gb200_ndr_superpod.out")
    out = tmp_path_factory.mktemp("gb200") / "gb200.json"
    r = ok("import", "ibnetdiscover", dump, "--json", "-o", out)
    return out, _count_dump(dump), r


def test_import_gb200(gb200: tuple[Path, dict[str, Any], Result]) -> None:
    out, c, r = gb200
    s = json.loads(r.stdout)
    assert IMPORT_KEYS <= set(s)
    assert out.is_file() and r.stderr.strip() == f"wrote {out}"
    # 40 switches: 31 IBLEAF and 9 IBSPINE (PROVENANCE.md); 582 CAs of which 40 are SHARP
    # aggregation nodes, leaving 542 host ports; every cable is 4xNDR.
    descriptions = list(c["switches"].values())
    assert s["switches"] == len(descriptions) == 40
    assert (
        s["switches_by_tier"]
        == {
            "leaf": sum("IBLEAF" in d for d in descriptions),
            "spine": sum("IBSPINE" in d for d in descriptions),
        }
        == {"leaf": 31, "spine": 9}
    )
    assert s["endpoints"] == s["endpoint_links"] == len(c["hosts"]) == 542
    assert s["aggregation_nodes"] == c["aggregation_nodes"] == 40
    assert s["links"] == c["switch_cables"] == 532
    assert s["link_speeds"] == {"4xNDR": 532 + 542}
    assert s["gpus"] == 0 and s["max_gpus"] is None


def test_bandwidth_gb200(gb200: tuple[Path, dict[str, Any], Result]) -> None:
    out, c, _ = gb200
    # The cut around a leaf with d hosts and u uplinks carries d (n - d) lambda <= 50 u GB/s.
    # The worst leaf, IBLEAF-02-03, has 18 hosts and only 15 uplinks (cables are missing), and
    # that cut binds: lambda = 50 * 15 / (18 * 524) GB/s, busbw = lambda (n - 1) = 43.02 GB/s.
    n = len(c["hosts"])
    pair, worst = min((NIC_GBps * u / (d * (n - d)), name) for name, (d, u) in c["leaves"].items())
    assert "IBLEAF-02-03" in worst and c["leaves"][worst] == (18, 15)
    rep = ok_json("bandwidth", out)
    assert BANDWIDTH_KEYS <= set(rep)
    assert rep["gpus"] == n == 542 and rep["terminal"] == "endpoint"
    assert rep["pair_rate_GBps"] == pytest.approx(pair, rel=1e-6)
    assert rep["alltoall_busbw_GBps"] == pytest.approx(pair * (n - 1), rel=1e-6)
    # (the leaf's cut is met: its uplinks are full both ways in every optimal flow)
    assert all(
        "IBLEAF-02-03" in b["target"] or "IBLEAF-02-03" in b["source"]
        for b in rep["bottleneck_links"]
    )
    assert {b["tier"] for b in rep["bottleneck_links"]} == {"leaf->spine", "spine->leaf"}


# ------------------------------------------------------------------------------ plot


def test_plot_writes_html(files: Path, in_tmp: Path) -> None:
    r = ok("plot", files / "mpft8.json", "-o", "mpft.html")
    assert r.stderr.strip() == "wrote mpft.html" and r.stdout == ""
    html = (in_tmp / "mpft.html").read_text(encoding="utf-8")
    assert html.lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "mpft-256" in html and "Plotly.newPlot" in html
    assert [p.name for p in in_tmp.iterdir()] == ["mpft.html"]  # no temporary file left


# ------------------------------------------------------------------------------ bad input: build


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["mpft", "--gpus", 20000], ["16384 GPUs", "asked for 20000"]),
        (["mpft", "--switch-ports", 7], ["--switch-ports", "even", "from 4 to 1024", "got 7"]),
        (["mpft", "--switch-ports", 0], ["--switch-ports", "from 4 to 1024", "got 0"]),
        (["mpft", "--switch-ports", -4], ["--switch-ports", "from 4 to 1024", "got -4"]),
        (["ft2", "--switch-ports", 8, "--gpus", 12], ["multiple of --gpus-per-node (8)", "12"]),
        (["ft2", "--switch-ports", 8, "--gpus", 0], ["positive multiple", "got 0"]),
        (["ft2", "--nics-per-node", 16], ["--nics-per-node (16)", "--gpus-per-node (8)"]),
        (["ft2", "--gpus-per-node", 0], ["--gpus-per-node", "from 1 to 1024"]),
        (["ft2", "--link-gbps", 0], ["--link-gbps", "positive", "Gb/s"]),
        (["ft2", "--link-gbps", -1], ["--link-gbps", "positive"]),
        # typer parses 'nan' and 'inf' as floats: the builders must refuse them.
        (["ft2", "--link-gbps", "nan"], ["--link-gbps", "got nan"]),
        (["ft2", "--link-gbps", "inf"], ["--link-gbps", "got inf"]),
        (["ft2", "--link-gbps", "1e400"], ["--link-gbps", "got inf"]),
        (["mpft", "--nvlink-GBps", "nan"], ["--nvlink-GBps", "got nan"]),
        (["mrft", "--pcie-GBps", "-inf"], ["--pcie-GBps", "got -inf"]),
        (
            ["ft2", "--oversubscription", 2],
            ["oversubscription 2", "a leaf of 64 ports", "1, 3, 7, 15, 31, 63"],
        ),
        (["ft2", "--oversubscription", 0.5], ["oversubscription", "at least 1", "0.5"]),
        (["ft2", "--oversubscription", "nan"], ["oversubscription", "at least 1", "nan"]),
        (["ft2", "--oversubscription", "inf"], ["oversubscription", "at least 1", "inf"]),
        (["ft3", "--switch-ports", 8, "--oversubscription", 3], ["must be 1 for ft3"]),
        (["mrft", "--switch-ports", 4], ["8 rails", "not one node"]),
        (["ft2", "--switch-ports", 8, "-o", "nodir/ft2.json"], ["nodir", "does not exist"]),
    ],
)
def test_build_refuses(in_tmp: Path, args: list[Any], fragments: list[str]) -> None:
    user_error(run("build", *args), *fragments)
    user_error(run("build", *args, "--json"), *fragments)
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["build", "ft2", "--switch-ports", 8, "--gpus", 12],
        ["build", "ft2", "--link-gbps", "nan"],
        ["import", "ibnetdiscover", "bad.topo"],
        ["plot", "bad.json"],
    ],
)
def test_failing_command_keeps_the_old_output(in_tmp: Path, command: list[Any]) -> None:
    (in_tmp / "bad.topo").write_text("this is not ibnetdiscover\n")
    (in_tmp / "bad.json").write_text('{"nodes": [{"id": "x", "kind": "router"}], "edges": []}')
    (in_tmp / "old.out").write_text("precious\n")
    user_error(run(*command, "-o", "old.out"))
    assert (in_tmp / "old.out").read_text() == "precious\n"
    assert sorted(p.name for p in in_tmp.iterdir()) == ["bad.json", "bad.topo", "old.out"]


@pytest.mark.parametrize(
    "command",
    [
        ["build", "ft2", "--switch-ports", 8],
        ["import", "ibnetdiscover", "x.topo"],
        ["plot", "tiny.json"],
    ],
)
@pytest.mark.parametrize("target", ["sub", ".", ""])
def test_output_onto_a_folder_is_refused(
    files: Path, in_tmp: Path, command: list[Any], target: str
) -> None:
    # Fixed in topo/cli.py (dir_okay=False on -o): this was an IsADirectoryError traceback
    # from topo.files.write_atomic, after the whole computation. '' is the folder '.'.
    (in_tmp / "sub").mkdir()
    (in_tmp / "x.topo").write_text("refused before it is read\n")
    (in_tmp / "tiny.json").write_text((files / "tiny.json").read_text())
    usage_error(run(*command, "-o", target), "--output", "is a directory")
    assert list((in_tmp / "sub").iterdir()) == []


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["build", "ft9"], ["family", "ft9"]),
        (["build", "ft2", "--switch-ports", "abc"], ["--switch-ports", "integer"]),
        (["build", "ft2", "--gpus", "nan"], ["--gpus", "integer"]),
        (["build", "ft2", "--gpus", "8.5"], ["--gpus", "integer"]),
        (["bandwidth", "tiny.json", "--method", "fast"], ["--method", "fast"]),
        (["bandwidth", "tiny.json", "--show", -1], ["--show"]),
        (["plot", "tiny.json"], ["--output"]),
        (["plot", "tiny.json", "-o", "x.html", "--max-devices", 0], ["--max-devices"]),
    ],
)
def test_unparseable_options(
    files: Path, in_tmp: Path, args: list[Any], fragments: list[str]
) -> None:
    (in_tmp / "tiny.json").write_text((files / "tiny.json").read_text())
    usage_error(run(*args), *fragments)
    assert sorted(p.name for p in in_tmp.iterdir()) == ["tiny.json"]


# ------------------------------------------------------------------------------ bad input: files


def _tiny(files: Path) -> dict[str, Any]:
    return json.loads((files / "tiny.json").read_text())


def _first(items: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(x for x in items if all(x.get(k) == v for k, v in match.items()))


def _edge(d: dict[str, Any]) -> dict[str, Any]:
    return _first(d["edges"], kind="endpoint")


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: _edge(d).__setitem__(key, value)


BAD_FABRICS = [
    pytest.param(_set("capacity", 0), ["'capacity' must be a number of B/s", "got 0"], id="cap0"),
    pytest.param(_set("capacity", -5), ["'capacity'", "got -5"], id="cap-negative"),
    pytest.param(_set("capacity", "50e9"), ["'capacity'", "'50e9'"], id="cap-string"),
    pytest.param(_set("capacity", None), ["'capacity'", "None"], id="cap-null"),
    pytest.param(_set("capacity", float("nan")), ["'capacity'", "nan"], id="cap-NaN"),
    pytest.param(_set("links", 0), ["'links' must be a positive integer"], id="links0"),
    pytest.param(_set("links", 1.5), ["'links'", "1.5"], id="links-float"),
    pytest.param(_set("kind", "wifi"), ["kind 'wifi'"], id="edge-kind"),
    pytest.param(
        lambda d: _first(d["nodes"], id="leaf0").update(kind="router"),
        ["node 'leaf0'", "kind 'router'"],
        id="node-kind",
    ),
    pytest.param(
        lambda d: _first(d["nodes"], id="leaf0").pop("tier"),
        ["switch 'leaf0'", "'tier'"],
        id="no-tier",
    ),
    pytest.param(
        lambda d: _first(d["nodes"], id="node0/gpu0").pop("node"),
        ["gpu 'node0/gpu0'", "'node' must be a string or an integer"],
        id="gpu-no-node",
    ),
    pytest.param(
        lambda d: d["edges"].append({**_edge(d), "source": "leaf0", "target": "ghost"}),
        ["'ghost'"],
        id="edge-to-unknown-node",
    ),
    pytest.param(lambda d: d.update(nodes=5), ["expected a topo fabric"], id="nodes-not-a-list"),
    # Found by probing (each once gave a traceback or a wrong number); fixed in topo.fabric.
    pytest.param(
        _set("capacity", float("inf")),
        ["'capacity'"],
        id="cap-Infinity",
    ),
    pytest.param(
        lambda d: _first(d["nodes"], id="node0/gpu0").update(node=[0, 1]),
        ["'node'"],
        id="node-unhashable",
    ),
    pytest.param(
        lambda d: d.update(graph=None),
        [],
        id="graph-null",
    ),
    pytest.param(
        lambda d: d["nodes"].append("x"),
        [],
        id="node-not-an-object",
    ),
    pytest.param(
        lambda d: d.update(directed=True),
        [],
        id="directed",
    ),
    pytest.param(
        lambda d: d.update(multigraph=True),
        [],
        id="multigraph",
    ),
    pytest.param(
        lambda d: d["graph"].update(planes="x"),
        [],
        id="graph-planes-string",
    ),
]


@pytest.mark.parametrize("mutate, fragments", BAD_FABRICS)
def test_bad_fabric_file(
    files: Path, in_tmp: Path, mutate: Callable[[dict[str, Any]], None], fragments: list[str]
) -> None:
    d = _tiny(files)
    mutate(d)
    (in_tmp / "bad.json").write_text(json.dumps(d))
    user_error(run("bandwidth", "bad.json"), "bad.json", *fragments)
    user_error(run("plot", "bad.json", "-o", "bad.html"), "bad.json", *fragments)
    assert not (in_tmp / "bad.html").exists()


@pytest.mark.parametrize(
    "content, fragments",
    [
        (b"", ["bad.json:1", "empty file"]),  # it said "not JSON: Expecting value"
        (b"hello\n", ["not JSON"]),
        (b'{"nodes": [', ["not JSON"]),
        (bytes(range(256)) * 4, ["bad.json:2", "not UTF-8 text", "a binary file?"]),
        (b"[1, 2]", ["expected a topo fabric"]),
        (b'{"family": "ft2"}', ["expected a topo fabric", "'nodes' and 'edges'"]),
    ],
    ids=["empty", "text", "truncated", "binary", "list", "no-nodes"],
)
def test_bandwidth_on_a_file_that_is_not_a_fabric(
    in_tmp: Path, content: bytes, fragments: list[str]
) -> None:
    (in_tmp / "bad.json").write_bytes(content)
    user_error(run("bandwidth", "bad.json"), "bad.json", *fragments)


def test_inputs_that_are_missing_or_folders(in_tmp: Path) -> None:
    (in_tmp / "sub").mkdir()
    for command in (["bandwidth"], ["plot", "-o", "x.html"], ["import", "ibnetdiscover"]):
        usage_error(run(*command, "missing.json"), "'missing.json' does not exist")
        usage_error(run(*command, "sub"), "'sub' is a directory")
    (in_tmp / "x.topo").write_text("never read\n")
    for name_map, message in (("missing.map", "does not exist"), ("sub", "is a directory")):
        usage_error(
            run("import", "ibnetdiscover", "x.topo", "--name-map", name_map), "--name-map", message
        )
    assert sorted(p.name for p in in_tmp.iterdir()) == ["sub", "x.topo"]


def test_bandwidth_of_a_fabric_without_a_path(files: Path, in_tmp: Path) -> None:
    d = _tiny(files)
    d["edges"] = [e for e in d["edges"] if e["source"] != "node3/nic0"]
    d["edges"] = [e for e in d["edges"] if e["target"] != "node3/nic0"]
    (in_tmp / "cut.json").write_text(json.dumps(d))
    user_error(run("bandwidth", "cut.json"), "no NIC cabled to a switch", "rate is 0")


@pytest.mark.parametrize(
    "capacity_Bps",
    [
        pytest.param(
            1e300,
        ),
        1e20,
    ],
)
def test_bandwidth_extreme_capacity_is_refused_or_right(
    files: Path, in_tmp: Path, capacity_Bps: float
) -> None:
    # Four one-GPU servers on one leaf: the three other NICs still bind, lambda * 3 <= 50 GB/s,
    # busbw = 3 lambda = 50 GB/s, however fast server 0's cable is.
    d = _tiny(files)
    _set("capacity", capacity_Bps)(d)
    (in_tmp / "big.json").write_text(json.dumps(d))
    r = run("bandwidth", "big.json", "--json")
    if r.exit_code == 0:
        assert json.loads(r.stdout)["alltoall_busbw_GBps"] == pytest.approx(NIC_GBps)
    else:
        user_error(r, "big.json", "capacity")


@pytest.mark.parametrize(
    "gbps, fragments",
    [
        pytest.param(
            1e300,
            ["--link-gbps"],
        ),
        pytest.param(
            1e-300,
            ["--link-gbps"],
        ),
    ],
)
def test_absurd_link_rate_is_refused(in_tmp: Path, gbps: float, fragments: list[str]) -> None:
    r = run("build", "ft2", "--switch-ports", 8, "--link-gbps", gbps, "-o", "f.json")
    if r.exit_code != 0:
        user_error(r, *fragments)
        return
    r = run("bandwidth", "f.json", "--json")
    if r.exit_code != 0:
        user_error(r, "f.json")
    else:  # else it must be right: the NIC bound of test_bandwidth_ft2_is_the_nic_rate
        busbw = json.loads(r.stdout)["alltoall_busbw_GBps"]
        assert busbw == pytest.approx(gbps / 8 * 31 / 24, rel=1e-6, abs=0)


@pytest.mark.parametrize(
    "args",
    [
        ["ft2", "--switch-ports", 8, "--gpus-per-node", 1_000_000_000, "--nics-per-node", 1],
        ["ft2", "--switch-ports", 100_000],
    ],
)
def test_build_refuses_absurd_sizes(in_tmp: Path, args: list[Any]) -> None:
    user_error(run("build", *args))


def _no_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if an LP is built or a solver started."""
    import highspy

    import topo.flow.solve.lp

    def no_lp(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an LP was built for a problem over the variable limit")

    monkeypatch.setattr(topo.flow.solve.lp, "flow_model", no_lp)
    monkeypatch.setattr(highspy, "Highs", no_lp)


@pytest.mark.slow
def test_general_lp_too_large_is_refused_at_once(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "At once": refused from its size, before any LP is built or a solver started; the
    # 16,384-GPU MPFT over the default limit.
    ok("build", "mpft", "-o", "mpft.json")
    _no_lp(monkeypatch)
    user_error(run("bandwidth", "mpft.json", "--method", "general"), "variables", "limit")


def test_general_lp_over_max_variables_is_refused_at_once(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same refusal at a small scale: the general LP of an ft2 of 8-port switches (32 GPUs
    # in 4 servers: 12 commodities, a variable for each on each of its ~100 arcs) is over 100.
    ok("build", "ft2", "--switch-ports", 8, "-o", "ft2.json")
    _no_lp(monkeypatch)
    line = user_error(
        run("bandwidth", "ft2.json", "--method", "general", "--max-variables", 100),
        "variables",
        "limit",
    )
    assert "(limit 100)" in line


# ------------------------------------------------------------------------------ bad input: import


@pytest.mark.parametrize(
    "name, fragments",
    [
        ("topograph_example-bad.out", ["no switches", "describes 1 CA and no switch"]),
        ("infiniband_exporter_ports_test.out", [":1:", "'ibnetdiscover -p' ports report"]),
        ("infiniband_exporter_ports_test3.out", ["'ibnetdiscover -p' ports report"]),
    ],
)
def test_import_refuses_real_files(in_tmp: Path, name: str, fragments: list[str]) -> None:
    dump = real_dump(name)
    (in_tmp / "out.json").write_text("old\n")
    user_error(run("import", "ibnetdiscover", dump, "-o", "out.json"), name, *fragments)
    assert (in_tmp / "out.json").read_text() == "old\n"


@pytest.mark.parametrize(
    "content, fragments",
    [
        (b"", ["empty file"]),
        (bytes(range(256)) * 4, ["binary file"]),
        (b'{"nodes": [], "edges": []}\n', [":1:", "unrecognised line"]),
        (b'Switch 8 "S-0000000000000001" # "sw"\n[1] "H-00"\n', ["x.topo:2:"]),
    ],
    ids=["empty", "binary", "json", "dangling-port"],
)
def test_import_refuses_bad_files(in_tmp: Path, content: bytes, fragments: list[str]) -> None:
    (in_tmp / "x.topo").write_bytes(content)
    user_error(run("import", "ibnetdiscover", "x.topo", "--json"), "x.topo", *fragments)
    assert [p.name for p in in_tmp.iterdir()] == ["x.topo"]


def test_import_bad_name_map_and_output_folder(in_tmp: Path) -> None:
    dump = real_dump("psmn_x5_qdr.topofile")
    # A list of spine GUIDs is not a name map: the message names the map and its line.
    user_error(
        run("import", "ibnetdiscover", dump, "--name-map", real_dump("psmn_x5.spine")),
        "psmn_x5.spine:",
        "'<guid> <name>'",
    )
    user_error(
        run("import", "ibnetdiscover", dump, "-o", "nodir/x.json"), "nodir", "does not exist"
    )
    assert list(in_tmp.iterdir()) == []


# ------------------------------------------------------------------------------ bad input: plot


def test_plot_into_a_missing_folder(files: Path, in_tmp: Path) -> None:
    user_error(
        run("plot", files / "tiny.json", "-o", "nodir/x.html"), "nodir/x.html", "does not exist"
    )
    assert list(in_tmp.iterdir()) == []


# ------------------------------------------------------------------------------ spec files

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_build_from_a_spec_file_and_options_that_override_it() -> None:
    # deepseek-v3-2048-mpft.toml: 2,048 GPUs, 8 planes of 8 leaves and 4 spines.
    d = ok_json("build", "--spec", EXAMPLES / "deepseek-v3-2048-mpft.toml")
    assert (d["family"], d["gpus"], d["switches"], d["planes"]) == ("mpft", 2048, 96, 8)
    # --gpus on the command line wins over the file: 1,024 GPUs = 128 servers, per plane
    # 4 leaves of 32 and 2 spines (32 uplinks each, 16 to each spine): 8 x 6 = 48 switches.
    d = ok_json("build", "--spec", EXAMPLES / "deepseek-v3-2048-mpft.toml", "--gpus", 1024)
    assert (d["gpus"], d["nodes"], d["switches"]) == (1024, 128, 48)


def test_spec_errors(in_tmp: Path) -> None:
    user_error(run("build"), "give a FAMILY")
    user_error(run("build", "ft2", "--spec", EXAMPLES / "mrft-2048.toml"), "family 'mrft' differs")
    (in_tmp / "bad.toml").write_text('family = "mpft"\nports = 64\n')
    user_error(run("build", "--spec", "bad.toml"), "bad.toml", "unknown key 'ports'")


def test_builder_errors_name_the_option(in_tmp: Path) -> None:
    user_error(run("build", "ft2", "--switch-ports", 7), "--switch-ports must be an even number")
    user_error(run("build", "ft2", "--link-gbps", 0), "--link-gbps must be a positive number")


def test_version() -> None:
    from topo import __version__

    assert ok("--version").stdout.strip() == f"topo {__version__}"


@pytest.mark.parametrize(
    ("text", "key", "option", "bad", "message"),
    [
        # Issue 11: a spec file's value was reported as the option (--switch-ports, and --q
        # for a q only the file gave, refused by the builder after the spec was read).
        ('family = "ft2"\nswitch_ports = 7\n', "switch_ports", "--switch-ports", 9,
         "must be an even number from 4 to 1024, got"),
        ('family = "slimfly"\nq = 6\n', "q", "--q", 10,
         "must be at least 3 with q mod 4 in 0, 1, 3"),
    ],
)  # fmt: skip
def test_spec_file_errors_name_the_files_keys(in_tmp, text, key, option, bad, message) -> None:
    (in_tmp / "bad.toml").write_text(text)
    r = run("build", "--spec", "bad.toml")
    user_error(r, f"bad.toml: {key} {message}")
    assert option not in r.stderr
    # An option given on the command line is the option at fault, named as such.
    r = run("build", "--spec", "bad.toml", option, bad)
    user_error(r, f"topo: error: {option} {message}")
    assert "bad.toml" not in r.stderr


# -- imports and bad files ---------------------------------------------------------------------


def test_truncated_fabric_error_names_line_and_column(in_tmp: Path) -> None:
    # Cut after the '[' that opens "nodes": 30 characters (counted by hand), so the parser
    # wants a value at column 31; on three lines, at the start of line 4.
    (in_tmp / "t.json").write_text('{"directed": false, "nodes": [')
    user_error(run("bandwidth", "t.json"), "topo: error: t.json:1:31: not JSON: Expecting value")
    (in_tmp / "t3.json").write_text('{\n "nodes": [],\n "edges": [\n')
    user_error(run("bandwidth", "t3.json"), "topo: error: t3.json:4:1: not JSON: Expecting value")


def test_a_huge_capacity_is_not_echoed_digit_by_digit(files: Path, in_tmp: Path) -> None:
    d = _tiny(files)
    _edge(d)["capacity"] = 10**400
    (in_tmp / "big.json").write_text(json.dumps(d))
    line = user_error(run("bandwidth", "big.json"), "got 1e+400 (an integer of 401 digits)")
    assert "0" * 30 not in line and len(line) < 200


def test_a_server_without_nic_is_named_with_its_file(files: Path, in_tmp: Path) -> None:
    # tiny.json: servers 0-3 of one GPU and one NIC each; server 3's NIC cable removed.
    d = _tiny(files)
    pcie = [e for e in d["edges"] if e["kind"] == "pcie" and "node3/nic0" in e.values()]
    d["edges"] = [e for e in d["edges"] if "node3/nic0" not in (e["source"], e["target"])]
    (in_tmp / "bare.json").write_text(json.dumps(d))  # no NIC at all: the GPU has none on PCIe
    user_error(
        run("bandwidth", "bare.json", "--routing", "ecmp"),
        "bare.json: GPU node3/gpu0 of server 3 has no NIC on PCIe",
    )
    d["edges"] += pcie  # the NIC is there, its cable is not
    (in_tmp / "cut.json").write_text(json.dumps(d))
    expected = "topo: error: cut.json: server 3 (node3/gpu0) has GPUs but no NIC cabled"
    user_error(run("bandwidth", "cut.json"), expected)
    user_error(run("resilience", "cut.json", "--fail-links", 1, "--trials", 2), expected)
    user_error(run("moe", "cut.json"), "cut.json: server 3 (node3/gpu0) in the demand has no NIC")
    user_error(
        run("bandwidth", "cut.json", "--routing", "ecmp"),
        "cut.json: 1 GPU has no NIC cabled to a switch (node3/gpu0 first, in server 3)",
    )
    user_error(
        run("collective", "cut.json"), "cut.json: server 3 (node3/gpu0) in use has no NIC cabled"
    )
    user_error(
        run("export", "slurm", "cut.json"), "cut.json: server 3 (node3/gpu0) has no NIC cabled"
    )
    user_error(
        run("export", "nccl", "cut.json", "--node", 3),
        "cut.json: server 3 (node3/gpu0) has no NIC cabled",
    )


def test_import_summary_says_cas(in_tmp: Path) -> None:
    # InfiniBand's channel adapter is a CA, plural CAs (IBA specification); the JSON key
    # unconnected_cas stays.
    r = ok("import", "ibnetdiscover", real_dump("psmn_x5_qdr.topofile"))
    assert re.search(r"unconnected CAs\s*│\s*0\b", r.stdout), r.stdout
    assert "unconnected cas" not in r.stdout
    summary = ok_json("import", "ibnetdiscover", real_dump("psmn_x5_qdr.topofile"))
    assert summary["unconnected_cas"] == 0


def test_build_summary_counts_every_cable_as_fail_links_does(tmp_path: Path) -> None:
    """FT2 of 4-port switches (by hand): 4 leaves of 2 down and 2 up ports, 2 spines of 4
    ports: 8 NIC cables, 4 x 2 = 8 leaf-spine cables, 16 cables in all; --fail-links 17 on it
    is refused naming the same 16."""
    r = run("build", "ft2", "--switch-ports", 4, "--json", "-o", tmp_path / "f.json")
    s = json.loads(r.stdout)
    assert (s["links"], s["endpoint_links"], s["cables"]) == (8, 8, 16)
    table = run("build", "ft2", "--switch-ports", 4).stdout
    assert "links (switch-to-switch cables)" in table
    assert "endpoint links (NIC-to-switch cables)" in table
    assert "cables (all; what --fail-links draws from)" in table
    bad = run("bandwidth", tmp_path / "f.json", "--fail-links", 17)
    assert bad.exit_code != 0 and "has 16 cables" in bad.output


def test_failure_line_counts_in_words(tmp_path: Path) -> None:
    """One failed cable and no switch read "1 cable, 0 switches", never "cable(s)"."""
    f = tmp_path / "f.json"
    run("build", "ft2", "--switch-ports", 4, "-o", f)
    r = run("bandwidth", f, "--fail", "leaf0--spine0")
    assert r.exit_code == 0, r.output
    assert "failed: 1 cable, 0 switches;" in r.stdout and "(s)" not in r.stdout


def test_ecmp_refusal_with_a_dead_nic_cable_says_what_to_do(tmp_path: Path) -> None:
    """Without PXN the GPU of a dead NIC cable has no way out: the refusal names the GPU and
    the two ways that route it (PXN, or the optimal routing), and the second one works."""
    f = tmp_path / "f.json"
    run("build", "ft2", "--switch-ports", 8, "--gpus", 16, "-o", f)
    dead = ("--fail", "node0/nic0--leaf0")
    r = run("bandwidth", f, "--routing", "ecmp", "--no-pxn", *dead)
    assert r.exit_code != 0
    assert "1 GPU has no NIC cabled to a switch (node0/gpu0 first, in server 0)" in r.output
    assert "--pxn" in r.output and "--routing optimal" in r.output
    assert run("bandwidth", f, *dead).exit_code == 0
    assert run("bandwidth", f, "--routing", "ecmp", *dead).exit_code == 0


def test_optimal_bottleneck_counts_the_cables_of_a_bundle(tmp_path: Path) -> None:
    """FT2 of 8-port switches, 16 GPUs at 3:1: 3 leaves of 6 down and 2 up ports, one spine of
    6 ports, so each leaf-spine link is a bundle of 2 cables of 50 GB/s (100 GB/s). A binding
    bundle counts as 1 link and 2 cables, in the row, the table and --json."""
    f = tmp_path / "f.json"
    run("build", "ft2", "--switch-ports", 8, "--gpus", 16, "--oversubscription", 3, "-o", f)
    d = json.loads(run("bandwidth", f, "--json").stdout)
    spine = [b for b in d["bottleneck_links"] if "spine" in b["tier"]]
    assert spine and all(b["cables"] == 2 and b["capacity_GBps"] == 100.0 for b in spine)
    assert all(b["cables"] == 1 for b in d["bottleneck_links"] if b["tier"] == "leaf->nic")
    table = run("bandwidth", f).stdout
    assert f"({len(spine)} link, 2 cables)" in table if len(spine) == 1 else "cables)" in table
    assert "┃ cables ┃" in table
