"""``topo export`` and its library door (topo.export.export): each format from the command
line; bad input is one line, a non-zero exit, and no file.

What an export must not do silently: invent NCCL device names, accept device-name patterns NCCL
would misread, trace back on an empty fabric, pass off rule-assigned ports of an imported fabric
as its cabling or as its dump, or ignore an option. An imported fabric's file keeps which
devices are cabled, not the dump's port numbers or GUIDs, so a dump or cabling plan written from
it numbers the ports by rule (the CA names are the dump's): refused without ``--assign-ports``,
written with a warning with it."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

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
from topo.formats.netfile import write_ibnetdiscover


@pytest.fixture(scope="module")
def fabrics(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fabrics")
    paths = {}
    for name, G in {
        "mpft": build("mpft", switch_ports=8),
        "slimfly": build("slimfly", q=5, gpus_per_node=1, nics_per_node=1),
    }.items():
        paths[name] = folder / f"{name}.json"
        save(G, paths[name])
    return paths


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    "args, first_line",
    [
        (["slurm"], "SwitchName=mpft-256 Switches=leaf[0-7]"),
        (["slurm", "--format", "block"], "BlockName=leaf0 Nodes=node[0-3]"),
        (["slurm", "--format", "yaml"], "---"),
        (["nccl", "--node", "1"], "# node1"),
        (["cabling"], "A-Node Name,A-Type,A-Port,Z-Node Name,Z-Type,Z-Port,Cable,Length"),
    ],
)
def test_each_format_writes_its_file(fabrics, tmp_path, args, first_line):
    out = tmp_path / "out.txt"
    fmt, *opts = args
    r = run("export", fmt, fabrics["mpft"], "-o", out, *opts)
    assert r.exit_code == 0, r.output
    lines = [ln for ln in out.read_text().splitlines() if not ln.startswith("# mpft")]
    assert lines[0] == first_line


def test_hosts_pattern_and_stdout(fabrics):
    r = run("export", "slurm", fabrics["mpft"], "--hosts", "gpu{node:02d}")
    assert r.exit_code == 0
    assert "SwitchName=leaf7 Nodes=gpu[28-31]" in r.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["bogus", "mpft"],
            "topo: error: format must be one of slurm, nccl, cabling, ibnetdiscover, topograph, "
            "got 'bogus'",
        ),
        (["slurm", "mpft", "--hosts", "gpu"], "topo: error: --hosts 'gpu': the host name 'gpu'"),
        (["slurm", "mpft", "--hosts", "a b{node}"], "invalid host name 'a b0'"),
        (["slurm", "mpft", "--format", "ring"], "topo: error: --format must be one of tree"),
        (["slurm", "slimfly"], "Slurm's tree cannot express this slimfly fabric"),
        (["nccl", "mpft", "--node", "32"], "--node must be a server position from 0 to 31"),
    ],
)
def test_bad_input_one_line_no_file(fabrics, tmp_path, args, message):
    out = tmp_path / "out.txt"
    fmt, fabric, *opts = args
    r = run("export", fmt, fabrics[fabric], "-o", out, *opts)
    assert r.exit_code == 1
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr
    assert "Traceback" not in r.output
    assert not out.exists()


def test_ibnetdiscover_export_imports_back_to_the_same_all_to_all(fabrics, tmp_path):
    # The 256-GPU MPFT of 8-port switches: 8 planes, 32 servers of 8 GPUs. Exported, then
    # imported with 8 GPUs per host and the design's NVLink (200 GB/s) and PCIe (64 GB/s), it
    # is the same fabric: the same exact all-to-all (50 GB/s per NIC: busbw 50 x 255 / 248
    # GB/s, NIC-bound).
    net = tmp_path / "mpft.net"
    assert run("export", "ibnetdiscover", fabrics["mpft"], "-o", net).exit_code == 0
    records = [ln.split()[0] for ln in net.read_text().splitlines() if ln[:1].isalpha()]
    assert records.count("Switch") == 8 * (8 + 4)  # 8 leaves and 4 spines per plane
    assert records.count("Ca") == 256  # a CA per NIC
    back = tmp_path / "back.json"
    r = run(
        "import",
        "ibnetdiscover",
        net,
        "--gpus-per-host",
        8,
        "--nvlink-GBps",
        450,
        "--pcie-GBps",
        64,
        "-o",
        back,
    )
    assert r.exit_code == 0, r.output
    designed = json.loads(run("bandwidth", fabrics["mpft"], "--json").stdout)
    imported = json.loads(run("bandwidth", back, "--json").stdout)
    assert imported["gpus"] == designed["gpus"] == 256
    assert imported["alltoall_busbw_GBps"] == pytest.approx(designed["alltoall_busbw_GBps"])
    assert designed["alltoall_busbw_GBps"] == pytest.approx(50 * 255 / 248)


def test_the_help_names_every_format():
    # The command lists the formats without importing the writers at start-up.
    from topo import export as library
    from topo.commands import export as command

    assert command.FORMATS == tuple(library.FORMATS)
    assert command.SLURM_FORMATS == tuple(library.SLURM_FORMATS)


def test_a_fabric_with_integer_ids_exports_as_a_dump(tmp_path):
    # The schema allows integer vertex ids; the dump describes each NIC by its host and
    # device as for string ids (the device names were looked up by the id's text: KeyError).
    import networkx as nx

    G = build("ft2", switch_ports=8)
    ids = {v: i for i, v in enumerate(G)}
    path = tmp_path / "ints.json"
    save(nx.relabel_nodes(G, ids), path)
    out = tmp_path / "ints.net"
    r = run("export", "ibnetdiscover", path, "-o", out)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert '# "node0 mlx5_0"' in text and '# "node3 mlx5_7"' in text
    assert f'# "{ids["leaf0"]}"' in text  # a switch keeps its (integer) name


# -- what an export must not do silently ---------------------------------------------------

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
IBSIM_2PORT = ("ibnetdiscover", "ibsim_net.2sw2path4hca2port")




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


# 2b. name patterns read whole before any name is built (--hosts, --hca-format)


@pytest.mark.parametrize(
    "fmt, option, pattern, parts",
    [
        ("slurm", "--hosts", "{node:>4000000000}", ["width 4000000000", "at most 64 characters"]),
        ("slurm", "--hosts", "{node:>30000000}", ["width 30000000", "at most 64 characters"]),
        ("slurm", "--hosts", "{node.__class__}", ["'{node.__class__}'", "attribute or item"]),
        ("slurm", "--hosts", "{node[0]}", ["'{node[0]}'", "attribute or item"]),
        ("slurm", "--hosts", "gpu{rack}", ["one field {node}", "'{rack}'"]),
        ("nccl", "--hca-format", "mlx5_{index:>4000000000}", ["width 4000000000", "at most 63"]),
        ("nccl", "--hca-format", "mlx5_{index:>30000000}", ["width 30000000", "at most 63"]),
        ("nccl", "--hca-format", "mlx5_{index.__class__}", ["attribute or item of {index}"]),
        ("nccl", "--hca-format", "mlx5_{index[0]}", ["'{index[0]}'", "attribute or item"]),
        ("nccl", "--hca-format", "mlx5_{idx}", ["one field {index}", "'{idx}'"]),
    ],
)
def test_name_pattern_refused_in_one_short_line_without_building_names(
    mpft, tmp_path, fmt, option, pattern, parts
):
    # The pattern is refused as read: no padded name is built (a 4e9 width was a MemoryError,
    # a 3e7 one a 30 MB line), so the run allocates what a valid export does (~8 MB traced
    # for this fabric), not a name's width, and the line quotes the pattern, not a name.
    out = tmp_path / "out.txt"
    tracemalloc.start()
    try:
        r = run("export", fmt, mpft, option, pattern, "-o", out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = one_line_error(r, f"topo: error: {option} {pattern!r}: ", *parts)
    assert len(line) < 300
    assert peak < 64_000_000
    assert not out.exists()


@pytest.mark.parametrize(
    "fmt, option, pattern",
    [("slurm", "--hosts", "x" * 100_000 + "{node}"), ("nccl", "--hca-format", "x" * 100_000)],
)
def test_long_pattern_quoted_as_an_excerpt(mpft, fmt, option, pattern):
    line = one_line_error(run("export", fmt, mpft, option, pattern), option, "'" + "x" * 60)
    assert "(a string of 100,0" in line and len(line) < 300


def test_host_pattern_at_the_width_limit_exports(mpft):
    # {node:0>64}: 64 characters, the longest host name; server 31 is 62 zeros and 31
    r = run("export", "slurm", mpft, "--hosts", "{node:0>64}")
    assert r.exit_code == 0, r.output
    assert "0" * 62 + "31" in r.stdout


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


# -- an imported fabric as an ibnetdiscover dump: its ports are assigned by rule -----------

DUMP = ("ibnetdiscover", "loginoff_fdr10_sx6036.topo")  # 8 SX6036 switches, 144 CAs




def host_ports(text: str) -> dict[tuple[str, str], tuple[int, str]]:
    """(switch description, host) -> (the switch's port, the CA's description), read from the
    Switch records of an ibnetdiscover file (each host here has one CA)."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    switch = None
    for line in text.splitlines():
        m = re.match(r'^Switch\s+\d+\s+"S-[0-9a-f]+"\s+#\s+"([^"]*)"', line)
        if m:
            switch = m[1]
            continue
        if not line.strip():
            switch = None
            continue
        m = re.match(r'^\[(\d+)\]\s+"H-[0-9a-f]+"\[\d+\]\S*\s+#\s+"([^"]*)"', line)
        if switch is not None and m:
            found[switch, m[2].split()[0]] = (int(m[1]), m[2])
    return found


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    dump = real_file(*DUMP)
    G = read_ibnetdiscover(dump)
    path = tmp_path_factory.mktemp("imported") / "f.json"
    save(G, path)
    return dump, G, path


def test_the_file_would_renumber_the_dump(imported) -> None:
    """Why the refusal: the same cables and CA names, other port numbers than the dump's."""
    dump, G, _ = imported
    theirs = host_ports(dump.read_text())
    ours = host_ports(write_ibnetdiscover(G))
    assert len(theirs) == 144 and set(ours) == set(theirs)
    moved = [k for k in theirs if ours[k][0] != theirs[k][0]]
    renamed = [k for k in theirs if ours[k][1] != theirs[k][1]]
    # the CA names are the dump's (they were renamed mlx5_<CA port>, mlx5_1 for every CA)
    assert moved and not renamed
    # the dump's ib5 has "stage114 mlx4_0" on port 1; the rule puts it on port 18, same name
    key = ("MF0;ib5:SX6036/U1", "stage114")
    assert theirs[key] == (1, "stage114 mlx4_0") and ours[key] == (18, "stage114 mlx4_0")


def test_cli_refuses_it_without_assign_ports_and_writes_nothing(imported, tmp_path) -> None:
    _, _, path = imported
    out = tmp_path / "f.net"
    r = run("export", "ibnetdiscover", path, "-o", out)
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("topo: error: an imported fabric as an ibnetdiscover dump: ")
    assert "port numbers" in lines[0] and "give --assign-ports to write it anyway" in lines[0]
    assert not out.exists()


def test_with_assign_ports_it_is_written_with_a_warning(imported, tmp_path) -> None:
    _, G, path = imported
    out = tmp_path / "f.net"
    r = run("export", "ibnetdiscover", path, "-o", out, "--assign-ports")
    assert r.exit_code == 0, r.output
    assert out.read_text() == write_ibnetdiscover(G)
    assert "topo: warning: the dump written: its port numbers" in r.stderr
    assert "assigned by rule" in r.stderr


def test_library_refuses_it_without_assign_ports(imported) -> None:
    _, G, _ = imported
    with pytest.raises(SpecError) as exc:
        export(G, "ibnetdiscover")
    assert exc.value.param == "assign_ports"
    done = export(G, "ibnetdiscover", ExportOptions(assign_ports=True))
    assert done.text == write_ibnetdiscover(G) and len(done.warnings) == 1


def test_a_built_fabric_needs_no_assign_ports(tmp_path: Path) -> None:
    G = build("mpft", switch_ports=8)
    done = export(G, "ibnetdiscover")
    assert done.text == write_ibnetdiscover(G) and done.warnings == ()
