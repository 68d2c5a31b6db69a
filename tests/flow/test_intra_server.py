"""An island of one server: intra-server traffic over NVLink and through the leaf (issue 13)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.flow.failures.damage import island_sizes
from topo.flow.failures.resilience import damaged_bandwidth

SPINES = ["--fail", "spine0", "--fail", "spine1", "--fail", "spine2", "--fail", "spine3"]


def test_every_spine_failed_leaves_four_equal_islands():
    # ft2 of 8-port switches: 4 servers of 8 GPUs, each server's 8 NICs on 2 leaves of its
    # own; without the 4 spines every server is an island of 8 GPUs.
    G = build("ft2", switch_ports=8)
    r = damaged_bandwidth(G, named=["spine0", "spine1", "spine2", "spine3"])
    assert r.failures.islands == (8, 8, 8, 8)
    assert r.failures.to_dict()["islands"] == [8, 8, 8, 8]
    assert island_sizes(G) == (32,)


def test_cli_intra_server_splits_nvlink_and_leaf_by_hand(tmp_path):
    # Each of the island's 8 GPUs sends 7 lambda to the others: out of a GPU go 200 GB/s of
    # NVLink and its NIC's 50 GB/s cable to the leaf (PCIe 64), so 7 lambda = 250 GB/s:
    # NVLink carries at most its 200, so at least 50 go through NIC, leaf, NIC (here exactly:
    # both are full at the optimum). Labelled NVLink it read 250 on 200 GB/s.
    path = tmp_path / "ft2s.json"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["build", "ft2", "--switch-ports", "8", "-o", str(path)]).exit_code == 0
    )
    d = json.loads(runner.invoke(app, ["bandwidth", str(path), *SPINES, "--json"]).output)
    assert d["intranode_per_gpu_GBps"] == pytest.approx(250.0, rel=1e-6)
    text = runner.invoke(app, ["bandwidth", str(path), *SPINES], terminal_width=200).output
    assert "intra-node (NVLink)" not in text
    row = next(s for s in text.splitlines() if "intra-server per GPU" in s)
    assert "250.00 GB/s (at most 200.00 over NVLink" in row
    assert "at least 50.00 through NIC, leaf, NIC" in row
    assert "4 islands, 4 of them the largest with 8 GPUs each" in text
    assert "(servers 0)" in text
