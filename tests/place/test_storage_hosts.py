"""Storage hosts without GPUs: an imported fabric's non-compute hosts (``topo import
--compute-host-regex``) as a job's storage servers, end to end from an ibnetdiscover dump,
with the NIC-bound rate worked by hand; and the one-line refusals.

References: a hand-written dump in ibnetdiscover's layout (``tests/_ibdump.py``), and the real
``ibnetdiscover`` run on an ibsim fabric (skipped where ibsim-utils is not installed). Link
rates: 4xNDR = 400 Gb/s = 50 GB/s, 4xHDR = 200 Gb/s = 25 GB/s per direction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests._ibdump import ib_dump
from tests.formats._ibsim import need_tools, simulator
from topo.builders import build
from topo.cli import app
from topo.errors import TopoError
from topo.formats import import_ibnetdiscover, write_ibnetdiscover
from topo.place import Job, place, place_jobs

runner = CliRunner()

# One leaf: gpu01 and gpu02 (one 4xNDR CA each, 50 GB/s; 1 GPU each), stor01 (two 4xHDR CAs,
# 25 GB/s each, no GPUs: the compute regex ^gpu does not match it).
ONE_LEAF = [
    ("leaf1", 1, "gpu01 HCA-1", 1, "4xNDR"),
    ("leaf1", 2, "gpu02 HCA-1", 1, "4xNDR"),
    ("leaf1", 3, "stor01 HCA-1", 1, "4xHDR"),
    ("leaf1", 4, "stor01 HCA-2", 1, "4xHDR"),
]


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(r: Result, *fragments: str) -> None:
    assert r.exit_code == 1 and r.stdout == "", r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def jobs_file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``topo import ibnetdiscover`` of the one-leaf dump, stor01 left without GPUs."""
    folder = tmp_path_factory.mktemp("storage-hosts")
    dump = folder / "one-leaf.topo"
    dump.write_text(ib_dump({"leaf1": 8}, ONE_LEAF))
    out = folder / "one-leaf.json"
    r = run(
        "import", "ibnetdiscover", dump, "--gpus-per-host", 1,
        "--compute-host-regex", "^gpu", "-o", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


def test_storage_read_from_a_host_without_gpus_is_its_nic_bound(imported: Path) -> None:
    # each of the 2 GPUs reads theta B/s from stor01: stor01 sends 2 theta through its two
    # 25 GB/s cables, 2 theta <= 50 GB/s, theta = 25 GB/s per GPU, 50 GB/s aggregate; each
    # reader's 50 GB/s NIC (behind PCIe 64 GB/s) takes 25, not full. Alone = shared.
    jobs = jobs_file(
        imported.parent,
        "read.toml",
        '[[jobs]]\nname = "read"\ntraffic = "storage_read"\n'
        'servers = ["gpu01", "gpu02"]\nstorage = ["stor01"]\n',
    )
    r = run("place", imported, "--jobs", jobs, "--json")
    assert r.exit_code == 0, r.output
    (job,) = json.loads(r.stdout)["jobs"]
    assert job["gpus"] == 2
    assert job["alone_busbw_GBps"] == pytest.approx(25.0, rel=1e-6)
    assert job["shared_busbw_GBps"] == pytest.approx(25.0, rel=1e-6)
    assert job["shared_aggregate_GBps"] == pytest.approx(50.0, rel=1e-6)
    assert job["slowdown"] == pytest.approx(1.0, rel=1e-6)
    assert job["bottleneck"] == "storage NICs" and job["bottleneck_servers"] == ["stor01"]
    table = run("place", imported, "--jobs", jobs)
    assert table.exit_code == 0 and "storage NICs of 1 server" in table.stdout, table.output


def test_a_checkpoint_write_to_it_is_the_read_reversed(imported: Path) -> None:
    jobs = jobs_file(
        imported.parent,
        "write.toml",
        '[[jobs]]\nname = "ckpt"\ntraffic = "checkpoint_write"\n'
        'servers = ["gpu01", "gpu02"]\nstorage = ["stor01"]\n',
    )
    r = run("place", imported, "--jobs", jobs, "--json")
    assert r.exit_code == 0, r.output
    (job,) = json.loads(r.stdout)["jobs"]
    assert job["shared_busbw_GBps"] == pytest.approx(25.0, rel=1e-6)
    assert job["bottleneck_servers"] == ["stor01"]


@pytest.mark.parametrize(
    ("toml", "fragments"),
    [
        (
            'servers = ["gpu01", "gpu02"]\ntraffic = "storage_read"\nstorage = ["stor99"]\n',
            ("storage server 'stor99' is not a server of the fabric", "without GPUs: 'stor01'"),
        ),
        (
            'servers = ["gpu01", "stor01"]\ntraffic = "alltoall"\n',
            ("server 'stor01' has no GPUs", "name it in a job's storage"),
        ),
        ('count = 3\ntraffic = "alltoall"\n', ("asks for 3 servers; only 2 are free",)),
    ],
)
def test_storage_hosts_misused_are_refused_in_one_line(
    imported: Path, toml: str, fragments: tuple[str, ...]
) -> None:
    jobs = jobs_file(imported.parent, "bad.toml", f'[[jobs]]\nname = "j"\n{toml}')
    one_line_error(run("place", imported, "--jobs", jobs), *fragments)


def test_jobs_by_count_never_land_on_hosts_without_gpus(tmp_path: Path) -> None:
    path = tmp_path / "one-leaf.topo"
    path.write_text(ib_dump({"leaf1": 8}, ONE_LEAF))
    G = import_ibnetdiscover(path, gpus_per_host=1, compute_host_regex="^gpu")
    for policy in ("packed", "fragmented", "slurm-tree", "slurm-block"):
        (p,) = place_jobs(G, [Job("a", "alltoall", count=2, policy=policy)])
        assert p.servers == ("gpu01", "gpu02")
    with pytest.raises(TopoError, match="'stor01' has no GPUs"):
        place(G, [Job("a", "ring", servers=("stor01", "gpu01"))])


def test_discovered_storage_hosts_serve_a_read(tmp_path: Path) -> None:
    # A non-blocking FT2 of 8-port 400G switches, 12 servers of 2 NICs on 6 leaves (2 per
    # leaf), written as an ibsim net file; the two servers of the last leaf renamed stor10 and
    # stor11, discovered by the real ibnetdiscover and imported with --compute-host-regex
    # ^node: they keep their 2 NICs each and get no GPUs. node0..node3 (8 GPUs, leaves 0 and
    # 1) read evenly from both: the storage hosts send 8 theta through 4 x 50 GB/s cables,
    # theta = 25 GB/s per GPU (their leaf's 4 uplinks are 200 GB/s too; the readers' NICs
    # take 2 x 25 of 100 GB/s per server).
    need_tools()
    design = build("ft2", switch_ports=8, gpus=24, gpus_per_node=2, nics_per_node=2)
    text = write_ibnetdiscover(design)
    for i in (10, 11):
        text = text.replace(f'"node{i} ', f'"stor{i} ')
    net = tmp_path / "ft2.net"
    net.write_text(text)
    with simulator(net) as sim:
        dump = tmp_path / "ft2.topo"
        dump.write_text(sim.ibnetdiscover())
    G = import_ibnetdiscover(dump, gpus_per_host=2, compute_host_regex="^node")
    assert G.graph["non_compute_hosts"] == 2
    readers = ("node0", "node1", "node2", "node3")
    job = Job("read", "storage_read", servers=readers, storage=("stor10", "stor11"))
    (r,) = place(G, [job]).jobs
    assert r.gpus == 8
    assert r.shared_busbw_Bps == pytest.approx(25e9, rel=1e-6)
    assert r.shared_aggregate_Bps == pytest.approx(200e9, rel=1e-6)
    assert r.bottleneck_servers == ("stor10", "stor11")
