"""The busbw note beside a row (topo.collective.report.busbw_note): where the printed busbw is
above the link rate that bounds it (NVLink on one server, NVLS's in-switch reduction), a note
says why it is not a fault, with its two rates printed so that they read differently.
Expected values are worked by hand from NCCL's tuning.cc (cited) and the fabric's rates."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
import pytest
from typer.testing import CliRunner, Result

from collective._ceiling import ceiling_constants, ceiling_file
from topo.builders import build
from topo.cli import app
from topo.collective import collective_table, fabric_rates
from topo.collective.report import busbw_note
from topo.fabric import save

runner = CliRunner()

# 8 GPUs of 200 GB/s NVLink and 8 x 400G NICs per server: the ring's bound across servers is
# min(8 x 50, 200 x 8/7) = 228.571 GB/s (topo.collective.report.link_rate_Bps).
LINK_GBps = 200 * 8 / 7


def run(*args: Any) -> Result:
    return runner.invoke(app, ["collective", *map(str, args)])


@pytest.fixture(scope="module")
def server() -> nx.Graph:
    """Two H100-like servers: 8 GPUs, NVLink 450 GB/s, 8 x 400G NICs each."""
    return build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


@pytest.fixture(scope="module")
def fabric_file(tmp_path_factory, server) -> str:
    path = tmp_path_factory.mktemp("fab") / "small.json"
    save(server, path)
    return str(path)


def _rates():
    G = build("ft2", gpus=128)
    return fabric_rates(G, gpus=64, gpus_per_node=8)


def test_busbw_above_nvlink_is_explained(server, fabric_file, tmp_path):
    """NVLS all_reduce on one server: algbw = 450 x 0.824 x 0.85 x 8/9 = 280.1 GB/s, busbw =
    x 2 x 7/8 = 490 GB/s > NVLink's 450 (the ceiling); where the printed busbw is that (the
    expected curve's message costs at zero) a note says why; a ring all_gather has none."""
    rep = collective_table(server, "all_reduce", gpus=8, min_bytes=1 << 30, max_bytes=1 << 30)
    assert rep.rows[0].algorithm == "nvls"
    # the ceiling's time has NVLS's 25 us latency: busbw = 1.75 x 1 GiB / (25 us + 1 GiB / 280.1)
    algbw = 450 * 0.824 * 0.85 * 8 / 9 * 1e9
    ceiling = 1.75 * (1 << 30) / (25e-6 + (1 << 30) / algbw) / 1e9
    assert rep.rows[0].ceiling_busbw_GBps == pytest.approx(ceiling, rel=1e-6)
    c = ceiling_constants(tmp_path)
    rep = collective_table(
        server, "all_reduce", gpus=8, min_bytes=1 << 30, max_bytes=1 << 30, constants=c
    )
    (row,) = rep.rows
    assert row.algorithm == "nvls" and row.busbw_GBps > 450
    assert "exceeds the NVLink rate 450 GB/s" in row.busbw_note and "NVLS" in row.busbw_note
    ag = collective_table(
        server, "all_gather", gpus=8, min_bytes=1 << 30, max_bytes=1 << 30, constants=c
    )
    assert ag.rows[0].busbw_note == ""
    args = ["--gpus", 8, "--min-bytes", "1G", "--max-bytes", "1G"]
    args += ["--constants", ceiling_file(tmp_path)]
    r = run(fabric_file, *args, "--json")
    assert "not a fault" in json.loads(r.stdout)["rows"][0]["busbw_note"]
    table = run(fabric_file, *args).stdout
    assert "note" in table and "not a" in table


def test_the_note_reads_two_different_rates_just_above_the_link_rate() -> None:
    """64 GPUs of an ft2 of 8-GPU servers: an nvls_tree row whose ceiling is just above the
    link rate (228.57 GB/s, which rounds to 229) must not read "busbw 229 GB/s exceeds the
    link rate 229 GB/s"."""
    rep = collective_table(
        build("ft2", gpus=128), "all_reduce", gpus=64, min_bytes=1 << 28, max_bytes=1 << 30,
        step_factor=4,
    )
    small, large = rep.rows
    # the smaller row: its ceiling is just above the link rate
    assert small.algorithm == "nvls_tree" and LINK_GBps < small.ceiling_busbw_GBps < 229.5
    # the note speaks of the busbw printed, the expected one: under the link rate, no note
    assert small.busbw_GBps < LINK_GBps and small.busbw_note == ""
    # above it, the note names the printed busbw and the rate with digits that differ
    assert large.busbw_GBps > LINK_GBps + 1
    assert large.busbw_note.startswith(
        f"busbw {large.busbw_GBps:.0f} GB/s exceeds the link rate 229 GB/s and is not a fault"
    )


def test_decimals_as_few_as_tell_them_apart() -> None:
    r = _rates()
    note = busbw_note((LINK_GBps + 5) * 1e9, "nvls_tree", r)
    assert note.startswith("busbw 234 GB/s exceeds the link rate 229 GB/s")
    note = busbw_note((LINK_GBps + 0.01) * 1e9, "nvls_tree", r)
    assert note.startswith("busbw 228.58 GB/s exceeds the link rate 228.57 GB/s")
    # above the rate by less than the table's 2 decimals show: no note
    assert busbw_note((LINK_GBps + 1e-4) * 1e9, "nvls_tree", r) == ""
