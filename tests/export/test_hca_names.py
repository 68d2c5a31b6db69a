"""One rule for a host's HCA device names in every export (``topo.formats.hca_names``).

References: the real GB200 dump's own node descriptions, read here with a regular expression on
its text (not topo's reader): its trays described by Linux names list ``mlx5_0, mlx5_1,
mlx5_4, mlx5_5``, the others ``HCA-1/2/5/6``; a built tray's NICs counted by hand (NIC ``j``
of a 72-NIC rack is NIC ``j mod 4`` of tray ``j // 4``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.builders import build
from topo.cli import app
from topo.export import ExportOptions, export, host_view
from topo.fabric import servers
from topo.formats import import_ibnetdiscover, write_ibnetdiscover
from topo.formats.hca_names import dump_device_name, hca_names

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"
_CA = re.compile(r'^Ca\s+\d+\s+"H-[0-9a-fA-F]+"\s+#\s+"([^"]*)"', re.M)


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_built_tray_is_numbered_within_itself_in_every_export():
    G = build("ft2", switch_ports=64, gpus=144, gpus_per_node=72, nics_per_node=72, gpus_per_host=4)
    names = hca_names(G)
    # NIC j of rack n is on tray j // 4 as its (j mod 4)-th HCA
    assert all(names[f"node{n}/nic{j}"] == f"mlx5_{j % 4}" for n in (0, 1) for j in range(72))
    dump = write_ibnetdiscover(G)
    cas = Counter(_CA.findall(dump))
    assert cas == Counter(
        f"node{n}-{t} mlx5_{k}" for n in (0, 1) for t in range(18) for k in range(4)
    )
    env = export(G, "nccl", ExportOptions(node=19)).text  # tray 1 of rack 1
    assert env.splitlines()[0] == "# node1-1"
    assert "NCCL_IB_HCA==mlx5_0:1::0,mlx5_1:1::0,mlx5_2:1::0,mlx5_3:1::0" in env


def test_a_middle_ca_lost_is_one_defect(tmp_path: Path):
    # tray node0-1's third HCA (design NIC 4 + 2 = 6) not in the dump: exactly that NIC missing
    # (its numbers ran across the rack before; matched in order, the later CAs shifted: 3 defects)
    gb, net, cut = tmp_path / "gb.json", tmp_path / "gb.net", tmp_path / "cut.net"
    r = run("build", "ft2", "--node", "gb200-nvl72", "--gpus", 144, "--gpus-per-host", 4, "-o", gb)
    assert r.exit_code == 0, r.output
    assert run("export", "ibnetdiscover", gb, "-o", net).exit_code == 0
    lines = net.read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Ca") and "node0-1 mlx5_2" in ln)
    guid = lines[head].split('"')[1]
    drop = {head + 1} | {i for i, ln in enumerate(lines) if ln.startswith("[") and guid in ln}
    cut.write_text("\n".join(ln for i, ln in enumerate(lines) if i not in drop) + "\n")
    r = run("validate", gb, cut, "--no-cost", "--json")
    assert r.exit_code == 3, r.output
    defects = json.loads(r.stdout)["defects"]
    assert [(d["kind"], sorted(d["design_ends"])) for d in defects] == [
        ("missing", ["leaf0", "node0/nic6"])
    ]


def _raw_descriptions(text: str) -> Counter[str]:
    """The two-word CA descriptions of a dump (no Aggregation Node, no default string)."""
    return Counter(d for d in _CA.findall(text) if len(d.split()) == 2)


def test_an_imported_dump_keeps_its_device_names(tmp_path: Path):
    path = real_file(*GB200)
    text = path.read_text()
    raw = _raw_descriptions(text)
    # the dump itself: trays with Linux names use mlx5_0/1/4/5, none mlx5_2 or mlx5_3
    trays = {d.split()[1] for d in raw if re.search(r"-dgx-\d+-c\d+ mlx5_", d)}
    assert trays == {"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"}
    G = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK)
    out = export(G, "ibnetdiscover", ExportOptions(assign_ports=True)).text
    written = _raw_descriptions(out)
    unnamed = Counter(d for d in written if d.startswith("H-"))
    # every named CA as its dump described it; the 69 with the default description (no
    # hostname: a host H-<guid> of one CA each) numbered within their host, mlx5_0
    assert written - unnamed == raw
    assert len(unnamed) == 69 == len(re.findall(r'^Ca\s.*"MT4129 ConnectX7', text, re.M))
    assert all(d.endswith(" mlx5_0") for d in unnamed)
    # NCCL_IB_HCA of a tray the dump names by Linux names: those names, not mlx5_0..3
    tray = "a08-p1-dgx-04-c01"
    env = export(G, "nccl", ExportOptions(node=list(servers(host_view(G))).index(tray))).text
    assert env.splitlines()[0] == f"# {tray}"
    hca = next(ln for ln in env.splitlines() if ln.startswith("export NCCL_IB_HCA="))
    assert [e.split(":")[0] for e in hca.split("==")[1].split(",")] == [
        "mlx5_0",
        "mlx5_1",
        "mlx5_4",
        "mlx5_5",
    ]


def test_dump_device_name():
    assert dump_device_name("a06-p1-dgx-02-c18 HCA-6") == "HCA-6"
    assert dump_device_name("MT4129 ConnectX7   Mellanox Technologies") is None
    assert dump_device_name(None) is None
