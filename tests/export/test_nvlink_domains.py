"""Exports of a fabric whose NVLink domains span hosts: the cluster software sees the hosts.

References: the same dump imported with one server per host (whose exports the other tests
hold to slurmctld and the man pages), and NVIDIA topograph's block form (one block per NVLink
domain, ``tests/ci/expected.slinky-dra-block.conf``), with the trays of each rack counted by
hand from the dump.
"""

from __future__ import annotations

import re

import pytest

from tests.export._expand import expand
from tests.formats._real import real_file
from topo.export import ExportOptions, export
from topo.formats import import_ibnetdiscover

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"


@pytest.fixture(scope="module")
def both():
    path = real_file(*GB200)
    racks = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK)
    trays = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900)
    return racks, trays


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("slurm", ExportOptions()),
        ("cabling", ExportOptions(assign_ports=True)),
        ("nccl", ExportOptions(hca_format="mlx5_{index}")),
        ("ibnetdiscover", ExportOptions(assign_ports=True)),
    ],
)
def test_hosts_are_the_trays(both, fmt, options) -> None:
    racks, trays = both
    assert export(racks, fmt, options) == export(trays, fmt, options)


def test_block_form_has_one_block_per_rack(both) -> None:
    racks, _ = both
    out = export(racks, "slurm", ExportOptions(slurm_format="block"))
    assert out.warnings == ("72 hosts outside every NVLink domain are in no block",)
    lines = out.text.splitlines()
    blocks = [ln for ln in lines if ln.startswith("BlockName=")]
    # topograph's grammar: 'BlockName=<name> Nodes=<hostlist>' lines, then 'BlockSizes=...'.
    assert all(re.fullmatch(r"BlockName=\S+ Nodes=\S+", ln) for ln in blocks)
    trays = {"01": 10, "02": 11, "03": 18, "04": 17, "05": 18, "06": 15, "07": 16, "08": 14}
    got = {}
    for ln in blocks:
        name, nodes = re.fullmatch(r"BlockName=(\S+) Nodes=(\S+)", ln).groups()
        hosts = expand(nodes)
        assert all(re.search(rf"-dgx-{name}-c\d\d$", h) for h in hosts), name
        got[name] = len(hosts)
    assert got == trays
    # Base block B = the smallest rack (10 trays), then B x 2, 4, 8 up to the 8 racks.
    assert lines[-1] == "BlockSizes=10,20,40,80"
