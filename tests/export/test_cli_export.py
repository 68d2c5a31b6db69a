"""``topo export``: each format from the command line; bad input is one line, a non-zero exit,
and no file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.fabric import save


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
