"""A 3FS-shaped read on a storage fabric of its own: the aggregate read rate is the storage
servers' NICs, and the report names them.

DeepSeek's 3FS README ("Performance: 1. Peak throughput", github.com/deepseek-ai/3FS): 180
storage nodes with 2 x 200 Gb/s InfiniBand NICs each, 500+ client nodes with 1 x 200 Gb/s
NIC each; about 6.6 TiB/s of aggregate reads, with training jobs' traffic in the background.
"""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import fail
from topo.place import Job, place

pytestmark = pytest.mark.slow

STORAGE, CLIENTS = 180, 500
NIC = 200e9 / 8  # 200 Gb/s: 25 GB/s per direction


def test_a_3fs_read_is_bound_by_the_storage_servers_nics():
    # A two-layer fat tree of 64-port 200G switches for 680 servers of 2 NICs (2 GPUs each):
    # servers 0..179 are the storage, 180..679 the clients, each client's second NIC left
    # uncabled (1 x 200G). The storage NICs send at most 180 x 2 x 25 = 9,000 GB/s; the clients
    # receive at most 500 x 25 = 12,500 GB/s; the leaves have as many uplinks as servers'
    # cables, so the storage NICs bind: 9,000 GB/s = 9e12 / 2^40 = 8.19 TiB/s aggregate, 9 GB/s
    # per client GPU (1,000 of them). 3FS's measured 6.6 TiB/s is 81% of it.
    G = build("ft2", switch_ports=64, link_gbps=200, gpus=1360, gpus_per_node=2, nics_per_node=2)
    uncable = []
    for c in range(STORAGE, STORAGE + CLIENTS):
        nic = f"node{c}/nic1"
        leaf = next(s for s in G.adj[nic] if G.nodes[s]["kind"] == "leaf")
        uncable.append(f"{nic}--{leaf}")
    H, _ = fail(G, named=uncable)
    clients = tuple(range(STORAGE, STORAGE + CLIENTS))
    job = Job("read", "storage_read", servers=clients, storage=tuple(range(STORAGE)))
    r = place(H, [job]).jobs[0]
    aggregate = STORAGE * 2 * NIC
    assert r.gpus == 2 * CLIENTS
    assert r.shared_aggregate_Bps == pytest.approx(aggregate, rel=1e-6)
    assert r.shared_busbw_Bps == pytest.approx(aggregate / (2 * CLIENTS), rel=1e-6)
    assert r.alone_busbw_Bps == pytest.approx(r.shared_busbw_Bps, rel=1e-6)
    assert aggregate / 2**40 == pytest.approx(8.185, abs=1e-3)
    assert r.bottleneck == "storage NICs"
    assert r.bottleneck_servers == tuple(range(STORAGE))
