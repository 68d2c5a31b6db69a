"""What ``topo export`` must not do silently (a new user's trial): invent NCCL device names,
accept device-name patterns NCCL would misread, trace back on an empty fabric, pass off
rule-assigned ports of an imported fabric as its cabling, or ignore an option."""

from __future__ import annotations

import re

import networkx as nx
import pytest
from typer.testing import CliRunner

from tests.export._expand import expand
from tests.export.test_nccl import parse_ib_hca
from tests.formats._real import real_file
from topo.builders import build
from topo.cli import app
from topo.errors import SpecError, TopoError
from topo.export import (
    ExportOptions,
    cabling_plan,
    export,
    fabric_hosts,
    nccl_env,
    slurm_blocks,
    slurm_tree,
    write_cabling_csv,
)
from topo.fabric import SWITCH_KINDS, save
from topo.formats import read_ibnetdiscover

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
IBSIM_2PORT = ("ibnetdiscover", "ibsim_net.2sw2path4hca2port")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(r, *parts):
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def gb200(tmp_path_factory):
    path = tmp_path_factory.mktemp("gb200") / "f.json"
    G = read_ibnetdiscover(real_file(*GB200))
    save(G, path)
    return G, path


@pytest.fixture(scope="module")
def mpft(tmp_path_factory):
    path = tmp_path_factory.mktemp("mpft") / "mpft.json"
    save(build("mpft", switch_ports=8), path)
    return path


# 1. NCCL device names an imported dump does not give


def foreign_trays(text: str) -> tuple[set[str], set[str]]:
    """Hosts whose CAs the dump describes '<host> HCA-<n>', and those names (read here from
    the dump's Ca records, not by the importer)."""
    pairs = re.findall(r'^Ca\s.*#\s*"(\S+) (HCA-\d+)"', text, flags=re.M)
    return {h for h, _ in pairs}, {n for _, n in pairs}


def test_foreign_device_names_are_refused_naming_the_trays(gb200):
    G, _ = gb200
    trays, names = foreign_trays(real_file(*GB200).read_text())
    assert names == {"HCA-1", "HCA-2", "HCA-5", "HCA-6"}
    assert len(trays) > 90  # most trays of the dump
    with pytest.raises(SpecError) as exc:
        export(G, "nccl")
    assert exc.value.param == "hca_format"
    hostlist, rest = str(exc.value).split(": ", 1)
    assert set(expand(hostlist)) == trays
    assert "HCA-1,HCA-2,HCA-5,HCA-6" in rest
    # one such tray alone, by position, is refused too
    with pytest.raises(SpecError, match="HCA-"):
        export(G, "nccl", ExportOptions(node=fabric_hosts(G).index(sorted(trays)[0])))


def test_foreign_names_by_position_only_when_asked(gb200):
    G, _ = gb200
    dump = real_file(*GB200).read_text()
    trays, _ = foreign_trays(dump)
    host = sorted(trays)[0]
    cas = len(re.findall(rf'^Ca\s.*"{host} HCA-\d+"', dump, flags=re.M))
    assert cas == 3  # a05-p1-dgx-01-c01: HCA-1, HCA-2, HCA-6 in the dump
    node = fabric_hosts(G).index(host)
    text = export(G, "nccl", ExportOptions(node=node, hca_format="mlx5_{index}")).text
    value = text.splitlines()[-2].split("=", 1)[1]
    assert [h for h, *_ in parse_ib_hca(value)[1]] == [f"mlx5_{i}" for i in range(cas)]


def test_cli_refuses_foreign_names_and_writes_nothing(gb200, tmp_path):
    _, path = gb200
    out = tmp_path / "env.sh"
    r = run("export", "nccl", path, "-o", out)
    one_line_error(r, "HCA-5", "--hca-format", "a07-p1-dgx-03-c[01-18]")
    assert not out.exists()


def test_unnamed_devices_are_assumed_aloud():
    """ibsim's descriptions ("Hca1") name no device: the default names stay, with a warning
    naming the hosts (the dump's Hca records) in the file and on the Export."""
    path = real_file(*IBSIM_2PORT)
    hosts = re.findall(r'^Hca\s+\d+\s+"(\w+)"', path.read_text(), flags=re.M)
    assert hosts == ["Hca1", "Hca2"]
    G = read_ibnetdiscover(path)
    out = export(G, "nccl")
    assert len(out.warnings) == 1
    named, note = out.warnings[0].split(": ", 1)
    assert sorted(expand(named)) == sorted(hosts)
    assert "mlx5_{index}" in note
    assert out.text.splitlines()[0] == f"# warning: {out.warnings[0]}"
    assert export(G, "nccl", ExportOptions(hca_format="ib{index}")).warnings == ()


def test_linux_named_dump_and_built_fabrics_warn_of_nothing(gb200):
    G, _ = gb200
    node = fabric_hosts(G).index("a08-p1-dgx-04-c17")  # '<host> mlx5_N' in the dump
    assert export(G, "nccl", ExportOptions(node=node)).warnings == ()
    out = export(build("mpft", switch_ports=8), "nccl")
    assert out.warnings == () and not out.text.startswith("# warning")


# 2. --hca-format NCCL would misread


@pytest.mark.parametrize(
    "fmt, rule",
    [
        ("mlx5_{index}:1", "':'"),  # NCCL reads port 1, rail 1, plane 0
        ("ib {index}", "' '"),  # the shell splits the export line
        ("mlx5_{index},x", "','"),  # a second list entry
        ("={index}", "'='"),
        ("^mlx5_{index}", "'^'"),
        ("ib", "distinct"),  # one name eight times
        ("ib{index!s:.0}", "distinct"),  # formats every index away
        ("x" * 64 + "{index}", "63 characters"),  # past NCCL's prefix[64]
    ],
)
def test_bad_hca_format_is_refused(mpft, tmp_path, fmt, rule):
    out = tmp_path / "env.sh"
    r = run("export", "nccl", mpft, "--hca-format", fmt, "-o", out)
    one_line_error(r, "--hca-format", repr(fmt)[:40], rule)
    assert not out.exists()


def test_bad_hca_format_refused_by_the_library_too():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    for fmt in ("mlx5_{index}:1", "ib"):
        with pytest.raises(SpecError) as exc:
            export(G, "nccl", ExportOptions(hca_format=fmt))
        assert exc.value.param == "hca_format"
    with pytest.raises(SpecError, match="distinct"):
        nccl_env(G, hca_format="ib")  # the lower-level call checks as well


def test_good_hca_format_reads_back_as_distinct_devices(mpft):
    r = run("export", "nccl", mpft, "--node", 0, "--hca-format", "ibp{index:02d}s0")
    assert r.exit_code == 0, r.output
    value = r.stdout.splitlines()[1].split("=", 1)[1]
    exact, hcas = parse_ib_hca(value)
    assert exact and [h for h, *_ in hcas] == [f"ibp{i:02d}s0" for i in range(8)]
    assert [(p, rail, plane) for _, p, rail, plane in hcas] == [(1, i, i) for i in range(8)]


# 3. fabrics with nothing to describe


@pytest.mark.parametrize(
    "args",
    [
        ["slurm"],
        ["slurm", "--format", "block"],
        ["slurm", "--format", "yaml"],
        ["nccl"],
        ["cabling"],
    ],
)
def test_empty_fabric_is_one_line_naming_the_file(tmp_path, args):
    empty = tmp_path / "e.json"
    empty.write_text('{"nodes":[],"edges":[]}')
    out = tmp_path / "out.txt"
    r = run("export", args[0], empty, "-o", out, *args[1:])
    one_line_error(r, f"{empty}: ", "no servers")
    assert not out.exists()


def test_library_raises_topo_errors_for_empty_and_switchless_fabrics():
    for fmt in ("slurm", "nccl", "cabling"):
        with pytest.raises(TopoError, match="no servers"):
            export(nx.Graph(), fmt)
    for call in (slurm_tree, slurm_blocks):  # the lower-level calls too
        with pytest.raises(SpecError, match="no servers"):
            call(nx.Graph(), [])
    with pytest.raises(SpecError, match="no servers"):
        nccl_env(nx.Graph())
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    G.remove_nodes_from([v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS])
    for fmt in ("slurm", "nccl", "cabling"):
        with pytest.raises(SpecError, match="no switches"):
            export(G, fmt)


# 4. an imported fabric's cabling plan


def test_imported_cabling_needs_assign_ports(tmp_path):
    G = read_ibnetdiscover(real_file("ibnetdiscover", "loginoff_fdr10_sx6036.topo"))
    with pytest.raises(SpecError) as exc:
        export(G, "cabling")
    assert exc.value.param == "assign_ports"
    out = export(G, "cabling", ExportOptions(assign_ports=True))
    assert out.text == write_cabling_csv(cabling_plan(G, fabric_hosts(G)))
    assert len(out.warnings) == 1 and "assigned by rule" in out.warnings[0]
    path = tmp_path / "f.json"
    save(G, path)
    csv_path = tmp_path / "plan.csv"
    one_line_error(run("export", "cabling", path, "-o", csv_path), "--assign-ports")
    assert not csv_path.exists()
    r = run("export", "cabling", path, "-o", csv_path, "--assign-ports")
    assert r.exit_code == 0, r.output
    assert csv_path.read_text() == out.text
    assert "topo: warning: the ports are assigned by rule" in r.stderr


def test_built_cabling_has_no_warning():
    out = export(build("mpft", switch_ports=8), "cabling")
    assert out.warnings == ()


# 5. options the format does not read


@pytest.mark.parametrize(
    "args, option, formats",
    [
        (["slurm", "--topo-xml", "x.xml"], "--topo-xml", "nccl only"),
        (["cabling", "--node", "3"], "--node", "nccl only"),
        (["nccl", "--format", "block"], "--format", "slurm only"),
        (["cabling", "--format", "tree"], "--format", "slurm only"),  # the default, said
        (["slurm", "--hca-format", "ib{index}"], "--hca-format", "nccl only"),
        (["nccl", "--assign-ports"], "--assign-ports", "cabling only"),
        (
            ["ibnetdiscover", "--hosts", "n{node}"],
            "--hosts",
            "slurm, nccl, cabling, topograph only",
        ),
    ],
)
def test_option_the_format_ignores_is_refused(mpft, tmp_path, args, option, formats):
    out = tmp_path / "out.txt"
    r = run("export", args[0], mpft, "-o", out, *args[1:])
    one_line_error(r, option, formats, f"not {args[0]}")
    assert not out.exists() and not (tmp_path / "x.xml").exists()


def test_library_refuses_options_the_format_ignores():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    for fmt, opts, param in [
        ("cabling", ExportOptions(node=3), "node"),
        ("slurm", ExportOptions(topo_xml="x.xml"), "topo_xml"),
        ("nccl", ExportOptions(slurm_format="block"), "slurm_format"),
    ]:
        with pytest.raises(SpecError) as exc:
            export(G, fmt, opts)
        assert exc.value.param == param
