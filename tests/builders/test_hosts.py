"""Built servers that are NVLink domains of several hosts (``gpus_per_host``; GB200 NVL72:
18 compute trays of 4 GPUs and 4 NICs in one 72-GPU NVLink domain)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.collective import collective_table
from topo.errors import SpecError
from topo.fabric import hosts, save, servers
from topo.flow import alltoall_bandwidth
from topo.spec import FabricSpec, ServerSpec

runner = CliRunner()


def test_the_spec_counts_hosts_and_refuses_uneven_ones():
    assert ServerSpec(72, 72, 900.0, 64.0, gpus_per_host=4).hosts == 18
    assert ServerSpec(8, 8).hosts == 1
    with pytest.raises(SpecError, match=r"gpus_per_host \(5\) must divide gpus_per_node \(72\)"):
        ServerSpec(72, 72, gpus_per_host=5)
    # 4 hosts of 2 GPUs cannot share 2 NICs evenly
    with pytest.raises(SpecError, match=r"4 hosts, which do not divide the nics_per_node \(2\)"):
        ServerSpec(8, 2, gpus_per_host=2)
    spec = FabricSpec.from_options("ft2", gpus_per_node=72, nics_per_node=72, gpus_per_host=4)
    assert spec.to_options()["gpus_per_host"] == 4
    assert spec.replace(gpus=576).server.gpus_per_host == 4
    assert "gpus_per_host" not in FabricSpec.from_options("ft2").to_options()


@pytest.fixture(scope="module")
def racks():
    """8 GB200-like racks: 72 GPUs, 72 NICs, 18 trays of 4 each."""
    opts = dict(gpus=576, gpus_per_node=72, nics_per_node=72, nvlink_GBps=900.0)
    return build("ft2", **opts, gpus_per_host=4), build("ft2", **opts)


def test_every_gpu_and_its_nic_name_one_tray(racks):
    G, _ = racks
    trays = hosts(G)
    assert len(servers(G)) == 8 and len(trays) == 8 * 18
    assert set(trays) == {f"node{n}-{t}" for n in range(8) for t in range(18)}
    for v, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            assert d["host"] == f"node{d['node']}-{d['index'] // 4}"
            (nic,) = [w for w in G.neighbors(v) if G.nodes[w]["kind"] == "nic"]
            assert G.nodes[nic]["host"] == d["host"]
    assert all(len(members) == 8 for members in trays.values())  # 4 GPUs + 4 NICs


def test_trays_change_no_rate():
    # The NVLink domain is the server the solver sees, with or without trays (two racks show
    # it as well as eight: the trays' rates are the same at any count of racks).
    opts = dict(gpus=144, gpus_per_node=72, nics_per_node=72, nvlink_GBps=900.0)
    with_trays, without = (
        alltoall_bandwidth(build("ft2", **opts, **kw)) for kw in ({"gpus_per_host": 4}, {})
    )
    assert with_trays.pair_rate_Bps == pytest.approx(without.pair_rate_Bps, rel=1e-12)


def test_slurm_sees_trays_and_a_block_per_rack(racks, tmp_path: Path):
    G, _ = racks
    path = tmp_path / "gb.json"
    save(G, path)
    r = runner.invoke(app, ["export", "slurm", str(path), "--format", "block"])
    assert r.exit_code == 0, r.output
    blocks = [ln for ln in r.stdout.splitlines() if ln.startswith("BlockName=")]
    # by hand: rack n holds its 18 trays node<n>-0 .. node<n>-17
    assert blocks == [f"BlockName=block{n} Nodes=node{n}-[0-17]" for n in range(8)]


def test_build_refuses_uneven_hosts_in_one_line(tmp_path: Path):
    r = runner.invoke(
        app, ["build", "ft2", "--node", "gb200-nvl72", "--gpus", "576", "--gpus-per-host", "5"]
    )
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--gpus-per-host" in lines[0] and "72" in lines[0]


def test_collective_ranks_per_host_fill_whole_racks(racks):
    # nccl-tests at 4 ranks per tray on 36 trays = 2 racks: NCCL's MNNVL nodes are the racks,
    # 72 ranks each, the same run as 144 ranks on two 72-GPU servers without trays.
    G, plain = racks
    a = collective_table(G, "all_reduce", gpus=144, gpus_per_node=4, min_bytes=1 << 30)
    b = collective_table(plain, "all_reduce", gpus=144, min_bytes=1 << 30)
    assert (a.nodes, a.gpus_per_node) == (2, 72) == (b.nodes, b.gpus_per_node)
    assert a.rows[0].busbw_GBps == pytest.approx(b.rows[0].busbw_GBps, rel=1e-12)


def _cli_ok(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_every_export_names_a_tray_alike_and_validate_matches_its_dump(tmp_path: Path):
    # 2 racks of 18 trays: Slurm, NCCL and the written dump all call rack 0's second tray
    # node0-1 (Slurm called it node1, the dump node0-1); the dump validates with 0 defects
    # (it gave 276 defects and 5.52 GB/s as built).
    gb, net = tmp_path / "gb.json", tmp_path / "gb.net"
    _cli_ok("build", "ft2", "--node", "gb200-nvl72", "--gpus", 144, "--gpus-per-host", 4, "-o", gb)
    block = _cli_ok("export", "slurm", gb, "--format", "block").stdout
    assert "BlockName=block0 Nodes=node0-[0-17]" in block
    assert "BlockName=block1 Nodes=node1-[0-17]" in block
    nccl = _cli_ok("export", "nccl", gb, "--node", 1).stdout
    assert nccl.startswith("# node0-1")
    # a tray's 4 HCAs are mlx5_0..3 in NCCL_IB_HCA and in the written dump alike (the dump
    # numbered them across the rack: node0-1 had mlx5_4..7)
    assert "NCCL_IB_HCA==mlx5_0:1::0,mlx5_1:1::0,mlx5_2:1::0,mlx5_3:1::0" in nccl
    _cli_ok("export", "ibnetdiscover", gb, "-o", net)
    cas = re.findall(r'^Ca 1 "H-[0-9a-f]+" # "(node0-1 \S+)"', net.read_text(), re.M)
    assert cas == [f"node0-1 mlx5_{j}" for j in range(4)]
    r = runner.invoke(app, ["validate", str(gb), str(net), "--no-cost", "--json"])
    assert r.exit_code == 0, r.output
    # one cable gone: exactly that defect
    lines = net.read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Ca") and "node1-17 mlx5_3" in ln)
    guid = lines[head].split('"')[1]
    # the cable from both ends: the CA's port line and the switch's line naming the CA
    drop = {head + 1} | {i for i, ln in enumerate(lines) if ln.startswith("[") and guid in ln}
    kept = [ln for i, ln in enumerate(lines) if i not in drop]
    (tmp_path / "cut.net").write_text("\n".join(kept) + "\n")
    r = runner.invoke(app, ["validate", str(gb), str(tmp_path / "cut.net"), "--no-cost"])
    assert r.exit_code == 3 and "1 defect(s)" in r.stdout, r.output


def test_a_build_from_a_named_server_records_its_gpu(tmp_path: Path):
    # topo collective takes NCCL's per-arch tables from it: a GB200 build read as Hopper.
    from topo.fabric import load
    from topo.fabric.gpus import gpu_arch

    gb = tmp_path / "gb.json"
    _cli_ok("build", "ft2", "--node", "gb200-nvl72", "--gpus", 144, "-o", gb)
    assert gpu_arch(load(gb)) == "blackwell"
    h = tmp_path / "h.json"
    _cli_ok("build", "ft2", "--gpus", 64, "--switch-ports", 16, "-o", h)
    assert gpu_arch(load(h)) is None
