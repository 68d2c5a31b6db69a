"""EP kernels (topo.moe.kernels): the legs of a hand-routed example worked by hand, DeepEP's
bandwidth definitions, and ``topo moe --kernel`` on the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import TopoError
from topo.fabric import save
from topo.moe import default_config, moe_report
from topo.moe.kernels import kernel_report, kernel_times
from topo.moe.traffic import ep_layout

# 2 nodes x 2 GPUs, expert r on rank r, one token per rank, two experts each
ROUTING = np.array([[1, 2], [2, 3], [0, 3], [2, 0]])
B = 7168.0


@pytest.fixture(scope="module")
def layout():
    G = build("ft2", switch_ports=8, gpus=4, gpus_per_node=2, nics_per_node=2, nvlink_GBps=200)
    return ep_layout(G, 4, 4)


def test_deepep_normal_by_hand(layout):
    """Token 0 (rank 0) -> ranks 1, 2: RDMA 0 -> 2 (node 1's GPU of local index 0), NVLink 0 -> 1.
    Token 1 (rank 1) -> 2, 3: RDMA 1 -> 3, which forwards to 2 over NVLink. Token 2 (rank 2) ->
    0, 3: RDMA 2 -> 0 (its target: no forwarding), NVLink 2 -> 3. Token 3 (rank 3) -> 2, 0:
    RDMA 3 -> 1, forwarded to 0; NVLink 3 -> 2. Each NIC sends and receives 1 copy; NVLink at
    most 2 (rank 3 sends 2, rank 2 receives 2): RDMA-bound, 1 x B / 50 GB/s against
    2 x B / 160 GB/s. Logical: (token, node) pairs 2 + 1 + 2 + 2 = 7 over 4 ranks."""
    k = kernel_times(layout, ROUTING, 1, B, 2 * B, "deepep-normal")
    assert k.dispatch_us == pytest.approx(B / 50e9 * 1e6)
    assert k.combine_us == pytest.approx(2 * B / 50e9 * 1e6)
    assert k.dispatch_GBps == pytest.approx(7 / 4 * 50)
    assert k.combine_GBps == pytest.approx(7 / 4 * 50)
    assert (k.bandwidth_kind, k.dispatch_bottleneck) == ("rdma", "rdma")


def test_deepep_low_latency_by_hand(layout):
    """One RDMA message per (token, expert) not on the sender: rank 2 receives 3 (tokens 0, 1,
    3): 3 x (B + 16) at 40 GB/s (small messages, ISCA'25 §4.1); logical 8 selections over 4."""
    k = kernel_times(layout, ROUTING, 1, B, 2 * B, "deepep-ll")
    assert k.dispatch_us == pytest.approx(3 * (B + 16) / 40e9 * 1e6)
    assert k.dispatch_GBps == pytest.approx(2 * 40 / 3)
    assert k.combine_us == pytest.approx(3 * 2 * B / 40e9 * 1e6)


def test_nccl_alltoall_by_hand(layout):
    """(token, GPU) copies across nodes: rank 1 sends 2 (to 2 and 3), ranks 0 and 2 receive 2:
    2 x B at NCCL's 48 GB/s per NIC."""
    k = kernel_times(layout, ROUTING, 1, B, 2 * B, "nccl")
    assert k.dispatch_us == pytest.approx(2 * B / 48e9 * 1e6)
    assert k.dispatch_GBps == pytest.approx(7 / 4 * 24)


def test_one_node_is_nvlink(layout):
    """EP2 on node 0 (experts 0, 1 on ranks 0, 1), every token to both: each GPU sends 1 copy
    over NVLink at 160 GB/s; logical (token, GPU) pairs received, self included: 2 per rank."""
    G = build("ft2", switch_ports=8, gpus=4, gpus_per_node=2, nics_per_node=2, nvlink_GBps=200)
    lay = ep_layout(G, 2, 2)
    k = kernel_times(lay, np.array([[0, 1], [1, 0]]), 1, B, B, "deepep-normal")
    assert k.bandwidth_kind == "nvlink" and k.dispatch_bottleneck == "nvlink"
    assert k.dispatch_us == pytest.approx(B / 160e9 * 1e6)
    assert k.dispatch_GBps == pytest.approx(2 * 160)


def test_bad_kernel_and_routing(layout):
    with pytest.raises(TopoError, match="--kernel must be one of"):
        kernel_times(layout, ROUTING, 1, B, B, "mpi")
    with pytest.raises(TopoError, match="ep x tokens_per_gpu"):
        kernel_times(layout, ROUTING, 2, B, B, "nccl")


def test_report_and_cli(tmp_path):
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=200)
    r = moe_report(G, default_config(), ep=16, tokens_per_gpu=64, shared="local")
    k = kernel_report(r, "deepep-normal")
    assert k.dispatch_us > 0 and k.bandwidth_kind == "rdma"
    path = tmp_path / "f.json"
    save(G, path)
    res = CliRunner().invoke(
        app,
        [
            "moe",
            str(path),
            "--ep",
            "16",
            "--tokens-per-gpu",
            "64",
            "--shared",
            "local",
            "--kernel",
            "deepep-normal",
            "--json",
        ],  # fmt: skip
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)["kernel"]
    assert set(d) >= {"dispatch_us", "combine_us", "dispatch_GBps", "combine_GBps"}
    assert d["bandwidth_kind"] == "rdma" and d["dispatch_us"] == pytest.approx(k.dispatch_us)


DEEPEP = {8: (153, 158), 16: (43, 43), 32: (58, 57), 64: (51, 50)}
"""DeepEP README (normal kernels, H800 + CX7 400G, 4096 tokens, hidden 7168, top-4 groups,
top-8 experts, FP8 dispatch, BF16 combine): dispatch / combine GB/s (NVLink at EP8, RDMA)."""


def _deepep(ep: int):
    G = build("ft2", switch_ports=64, gpus=ep, gpus_per_node=8, nics_per_node=8, nvlink_GBps=200)
    r = moe_report(G, default_config(), ep=ep, tokens_per_gpu=4096, shared="local",
                   node_limit=4, micro_batches=1, schemes=("deepep",))  # fmt: skip
    return kernel_report(r, "deepep-normal")


def test_deepep_table_ep32_dispatch():
    """EP32 dispatch is within 15% of DeepEP's 58 GB/s (RDMA-bound, 0.8 x 200 GB/s NVLink
    and 50 GB/s RDMA from DeepEP's README)."""
    k = _deepep(32)
    assert k.bandwidth_kind == "rdma" and k.dispatch_bottleneck == "rdma"
    assert 0.85 <= k.dispatch_GBps / 58 <= 1.15


@pytest.mark.slow
def test_deepep_table_ep64():
    k = _deepep(64)
    assert 0.85 <= k.dispatch_GBps / 51 <= 1.15 and 0.85 <= k.combine_GBps / 50 <= 1.15


LOW_LATENCY = {8: (46, 46), 16: (43, 44), 32: (41, 41), 64: (40, 41)}
"""DeepEP README, low-latency kernels (128 tokens, hidden 7168, top-8, FP8 dispatch, BF16
combine): RDMA GB/s of dispatch / combine."""


@pytest.mark.parametrize("ep", [8, 16, 32])
def test_low_latency_table(ep):
    G = build("ft2", switch_ports=64, gpus=max(ep, 16), gpus_per_node=8, nics_per_node=8,
              nvlink_GBps=200)  # fmt: skip
    r = moe_report(G, default_config(), ep=ep, tokens_per_gpu=128, shared="local",
                   node_limit=4, micro_batches=1, schemes=("deepep",))  # fmt: skip
    k = kernel_report(r, "deepep-ll")
    d, c = LOW_LATENCY[ep]
    assert 0.85 <= k.dispatch_GBps / d <= 1.15 and 0.85 <= k.combine_GBps / c <= 1.15


@pytest.mark.xfail(strict=True, reason="issue 12: EP8 (1.19x) and EP16 (1.29x) miss; docs/moe.md")
@pytest.mark.parametrize("ep", [8, 16])
def test_deepep_table_within_15_percent(ep):
    k = _deepep(ep)
    d, c = DEEPEP[ep]
    assert 0.85 <= k.dispatch_GBps / d <= 1.15 and 0.85 <= k.combine_GBps / c <= 1.15
