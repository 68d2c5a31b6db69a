"""Why a measured collective falls short: candidate causes, re-predicted and scored.

For one measured nccl-tests test (:class:`topo.formats.nccl_tests_records.NcclTest`) on a fabric,
:func:`explain_test` predicts the test's sizes as designed (the expected curve of
:mod:`topo.collective.expected`), and again under each candidate cause: a change to the fabric
(a NIC down or slow on one server, every server's NICs reached through host memory) or to how
NCCL drives it (NVLS off, a forced algorithm or protocol). Each curve is scored against the
measured one by the root mean square of ``log(predicted time / measured time)`` over the rows
of :data:`MIN_SCORED_BYTES` (32 MiB) and more (every row when fewer than three are that
large): 0 is a perfect fit, ``log(1.15) = 0.14`` a curve 15% off throughout.

The design **agrees** when its own score is at most :data:`AGREE` (every row within about
15%): nothing is ranked, and that is said. A measurement faster than the design (median log
ratio above :data:`AGREE`) is not explained by a fault either: the model is pessimistic there,
and that is said. Otherwise the causes are ranked by score, best first; a cause **fits** when
its score is at most :data:`AGREE`.

The causes and their models (docs/explain.md):

- ``nic_down``: one, or half, of the NICs of one server in use not cabled (port down): the
  fabric without their cables; NCCL's channels and the LP rates follow from the NICs left.
- ``nic_slow``: one NIC of one server at half its rate (a 400G port trained at 200G, a NIC
  on a PCIe link trained at half width).
- ``no_gdr``: GPUDirect RDMA absent on every server: NCCL stages network data through host
  memory (``NCCL_NET_GDR_LEVEL``; NCCL docs, "GPU Direct RDMA"), so each byte crosses the PCIe
  link of the GPU-NIC pair twice, GPU to host and host to NIC: the NIC's rate is at most
  half of its PCIe side.
- ``as_built``: given a dump of the fabric as built, the design's servers with the dump's
  cables (missing, miswired, slower ones as found).
- ``nics_used:K``: every server drives only ``K`` of its NICs (``NCCL_IB_HCA`` listing a
  subset; an EP kernel driving one plane of two): the fabric without the other NICs' cables,
  on every server; ``K`` half of them, and 1.
- ``channels:K``: ``NCCL_MAX_NCHANNELS=K``, half and a quarter of the design's channels:
  every channel count the model uses capped at ``K``
  (:meth:`topo.collective.constants.NcclConstants.with_max_nchannels`).
- ``nvls_off``: ``NCCL_NVLS_ENABLE=0`` or no NVLink SHARP: the tuner without NVLS and
  NVLS-tree (only where the design's choice uses them).
- ``algo:NAME``, ``proto:NAME``: ``NCCL_ALGO`` / ``NCCL_PROTO`` forcing one algorithm or
  protocol the design's choice does not use at every size.
- ``pxn_off`` (alltoall across servers): ``NCCL_PXN_DISABLE=1``: every GPU sends from its own
  NIC, so bytes for another rail's NIC cross rails in the network instead of NVLink: the LP's
  all-to-all rate times the ratio of the evenly split routed pair rates with and without PXN
  (:func:`topo.flow.routed_flow`), and no NVLink forwarding in the model. On a fabric where
  rails or planes do not meet (rail-only, MPFT) there is no route without PXN: not scored.
- ``net_peer_channels:1`` (sendrecv across servers): ``NCCL_NCHANNELS_PER_NET_PEER=1``,
  one p2p channel, so one connection, per remote peer: a pair moves at most NCCL's per-channel
  network rate (``p2p_per_channel_net_GBps``, 14 GB/s)
  (:meth:`topo.collective.constants.NcclConstants.with_nchannels_per_net_peer`).
- ``ecmp`` (alltoall across servers): ECMP hash collisions as routed, one flow (queue pair)
  per GPU pair (``NCCL_IB_QPS_PER_CONNECTION=1``, NCCL's default): the LP's rate times the
  routing's collision loss (expected over sampled pair rate, seed :data:`ECMP_SEED`).
- ``cross_nic`` (ring ops across servers, 2 NICs or more per server): rings crossing rails
  (``NCCL_CROSS_NIC=1``, or 2 without NCCL's ring alternation): each server's ring byte leaves
  on NIC ``i`` and enters the next server on NIC ``i + 1``, pinned to those NICs and re-solved
  as a flow (:func:`topo.collective.fabric_rates.crossing_ring`; NCCL 2.30
  ``src/graph/search.cc``, ``src/graph/connect.cc``).
- ``qp_limit`` (ring ops across servers): each channel's network connection (one QP,
  ``NCCL_IB_QPS_PER_CONNECTION=1``) capped at the rate that explains the measurement
  (:data:`QP_SOURCES`: no public single-QP rate caps a NIC carrying NCCL's channels), a server
  at ``channels x`` that rate; offered only when no other cause fits, its evidence saying the
  rate is inferred.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import networkx as nx
import numpy as np

from topo.builders.gdr import without_gdr
from topo.collective.channels import coll_channels
from topo.collective.choice import TunerRestriction, tuner_restriction
from topo.collective.constants import NcclConstants
from topo.collective.fabric_rates import (
    FabricRates,
    PatternRate,
    crossing_ring,
    fabric_rates,
    select_subcluster,
)
from topo.collective.model import OPS
from topo.collective.predict import fabric_constants, predict_rows
from topo.errors import TopoError
from topo.fabric import servers
from topo.flow import routed_flow
from topo.formats.nccl_tests_records import NcclTest, NcclTestRow
from topo.traffic import uniform_alltoall
from topo.wording import binary_bytes

MIN_SCORED_BYTES = 32 << 20
"""Rows of this size (B) and more are scored: there the expected curve is held to 15% on the
shared logs and its held-out error is smallest (docs/collective.md, "The expected curve");
smaller rows are scored only when fewer than three are larger."""

AGREE = math.log(1.15)
"""A curve agrees with a measurement when its score (RMS of the log time ratio) is at most
this: about 15% off on every row."""

MIN_GAIN = 0.01
"""A cause is listed only when its score is lower than the design's by more than this (1%):
a change that leaves the curve where it was explains nothing."""

NCCL_ALGO_NAMES = {
    "ring": "Ring",
    "tree": "Tree",
    "nvls": "NVLS",
    "nvls_tree": "NVLSTree",
    "pat": "PAT",
    "collnet_direct": "CollNetDirect",
    "collnet_chain": "CollNetChain",
}
"""topo's algorithm names as NCCL_ALGO spells them (NCCL 2.29 ``ncclAlgoStr``)."""

CHECKS = {
    "nic_down": (
        "`ibstat` on each server: every port 'State: Active', 'Physical state: LinkUp'; "
        "NCCL_DEBUG=INFO's 'NET/IB : Using' line lists every NIC; NCCL_IB_HCA not a subset"
    ),
    "nic_slow": (
        "`ibstat`: 'Rate' of every port at the design's (e.g. 400, not 200); "
        "`lspci -vv` of each NIC: 'LnkSta' speed and width as 'LnkCap'"
    ),
    "no_gdr": (
        "NCCL_DEBUG=INFO: 'GPU Direct RDMA Enabled' for each NIC; `lsmod | grep peermem` "
        "(nvidia_peermem) or DMA-BUF; `nvidia-smi topo -m`: GPU-NIC PIX or PXB "
        "(NCCL_NET_GDR_LEVEL)"
    ),
    "nvls_off": (
        "NCCL_NVLS_ENABLE unset or 1; the fabric manager running (`nvidia-smi -q`: Fabric "
        "State Completed); NCCL_DEBUG=INFO prints 'NVLS multicast support is available'"
    ),
    "as_built": (
        "`topo validate DESIGN DUMP` lists each missing or miswired cable with its ports; "
        "`iblinkinfo` on the switches named"
    ),
    "nics_used": (
        "NCCL_IB_HCA in the job's environment (every NIC listed, or unset); NCCL_DEBUG=INFO's "
        "'NET/IB : Using' line on each server lists every NIC; an EP kernel's own NIC or plane "
        "selection (DeepEP: one plane of a dual-plane ConnectX-8)"
    ),
    "channels": (
        "NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS, NCCL_MAX_CTAS in the job's environment and "
        "/etc/nccl.conf; NCCL_DEBUG=INFO prints 'N coll channels'"
    ),
    "pxn_off": (
        "NCCL_PXN_DISABLE unset (or 0) in the job's environment and /etc/nccl.conf; "
        "NCCL_DEBUG=INFO prints 'via NET/IB/<n>/GDRDMA/Shared' (PXN) for cross-rail peers; "
        "NCCL_P2P_PXN_LEVEL"
    ),
    "ecmp": (
        "the switches' per-port counters during the run (`perfquery -x` on each port, or the "
        "switch's telemetry): uneven uplink loads; adaptive routing on the fabric (IB: AR "
        "enabled in the SM; RoCE: adaptive routing or packet spraying); "
        "NCCL_IB_QPS_PER_CONNECTION above 1 spreads a connection over more paths"
    ),
    "net_peer_channels": (
        "NCCL_NCHANNELS_PER_NET_PEER (unset: NCCL gives each remote peer a channel per NIC, "
        "more for fast NICs) and NCCL_MAX_P2P_NCHANNELS in the job's environment and "
        "/etc/nccl.conf; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV lists the variables NCCL read"
    ),
    "cross_nic": (
        "NCCL_CROSS_NIC in the job's environment and /etc/nccl.conf (0 keeps rings on their "
        "rail; 1 lets them cross; 2, the default, crosses when the same-NIC search fails; "
        "`topo export nccl DESIGN` gives the design's value); "
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH prints 'Pattern 4, crossNic 1' and each ring's "
        "'NET/<n> ... NET/<m>' with n != m; NCCL_GRAPH_DUMP_FILE: crossnic=\"1\""
    ),
    "qp_limit": (
        "NCCL_IB_QPS_PER_CONNECTION (default 1) and NCCL_IB_SPLIT_DATA_ON_QPS in the job's "
        "environment; `ib_write_bw -q 1` against `ib_write_bw -q 4` between two servers on one "
        "NIC (a gap: one QP cannot fill the NIC or its path); rerun with "
        "NCCL_IB_QPS_PER_CONNECTION=4"
    ),
    "algo": "NCCL_ALGO in the job's environment, /etc/nccl.conf and ~/.nccl.conf",
    "proto": "NCCL_PROTO in the job's environment, /etc/nccl.conf and ~/.nccl.conf",
}
"""What to check on the cluster for each kind of cause."""


@dataclass(frozen=True)
class Curve:
    """A predicted curve at the measurement's sizes: sizes (B), times (µs), busbw (GB/s),
    the (algorithm, protocol) chosen per size, and its score against the measurement."""

    sizes: list[int]
    time_us: list[float]
    busbw_GBps: list[float]
    choice: list[str]
    score: float


@dataclass(frozen=True)
class Cause:
    """One candidate cause, re-predicted.

    Attributes
    ----------
    name : str
        ``as_built``, ``nic_down``, ``nic_slow``, ``nics_used:K``, ``no_gdr``, ``channels:K``,
        ``net_peer_channels:1``, ``pxn_off``, ``ecmp``, ``cross_nic``, ``qp_limit``,
        ``nvls_off``, ``algo:NAME``, ``proto:NAME``.
    description : str
        The change, in the field's words.
    score : float
        RMS of log(predicted / measured time) over the scored rows (dimensionless).
    fits : bool
        ``score <= AGREE``.
    curve : Curve
        The prediction under the cause.
    evidence : str
        The scores and the largest row's busbw, measured, under the cause and as designed.
    check : str
        What to look at on the cluster.
    """

    name: str
    description: str
    score: float
    fits: bool
    curve: Curve
    evidence: str
    check: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, description, score, fits, evidence, check, and ``predicted``
        rows (size_bytes, time_us, busbw_GBps, algorithm/protocol)."""
        return {
            "name": self.name,
            "description": self.description,
            "score": self.score,
            "fits": self.fits,
            "evidence": self.evidence,
            "check": self.check,
            "predicted": _rows(self.curve),
        }


@dataclass(frozen=True)
class Explanation:
    """The design's curve against one measured test, and the causes ranked best first.

    ``agrees``: the design's score is at most :data:`AGREE` (``causes`` is then empty);
    ``faster``: the measurement is faster than the design (nothing ranked either);
    ``verdict``: one sentence saying which; ``line``: the 1-based line of the log where the
    test starts (0: not known).
    """

    op: str
    gpus: int
    nodes: int
    gpus_per_node: int
    sizes: list[int]
    measured_time_us: list[float]
    measured_busbw_GBps: list[float]
    scored_rows: int
    design: Curve
    agrees: bool
    faster: bool
    verdict: str
    causes: list[Cause] = field(default_factory=list)
    line: int = 0

    @property
    def largest(self) -> int:
        """The index of the row that stands for the largest size (:func:`largest_row`)."""
        return largest_row(self.sizes, self.measured_time_us)

    @property
    def slower_than_larger(self) -> list[dict[str, Any]]:
        """The sizes whose median run (:func:`median_runs`) took more than 1.25x the time of
        a larger size's (:func:`topo.collective.compare.slower_sizes`): one slow run or a
        tuner choice slower than the larger size's, not the fabric; per size its
        ``size_bytes`` and ``time_us``, and the larger size's ``larger_size_bytes`` and
        ``larger_time_us`` (µs). The scores take these rows as they are."""
        from topo.collective.compare import slower_sizes

        rows = median_runs(self.sizes, self.measured_time_us)
        sizes = [self.sizes[i] for i in rows]
        times = [self.measured_time_us[i] for i in rows]
        return [
            {
                "size_bytes": sizes[i],
                "time_us": times[i],
                "larger_size_bytes": sizes[j],
                "larger_time_us": times[j],
            }
            for i, j in slower_sizes(sizes, times)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``causes`` best first, empty when the measurement agrees."""
        return {
            "op": self.op,
            "line": self.line,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "scored_rows": self.scored_rows,
            "score": self.design.score,
            "agrees": self.agrees,
            "faster": self.faster,
            "verdict": self.verdict,
            "measured": [
                {"size_bytes": s, "time_us": t, "busbw_GBps": b}
                for s, t, b in zip(
                    self.sizes, self.measured_time_us, self.measured_busbw_GBps, strict=True
                )
            ],
            "design": _rows(self.design),
            "causes": [c.to_dict() for c in self.causes],
            "slower_than_larger": self.slower_than_larger,
        }


def _rows(curve: Curve) -> list[dict[str, Any]]:
    return [
        {"size_bytes": s, "time_us": t, "busbw_GBps": b, "choice": k}
        for s, t, b, k in zip(
            curve.sizes, curve.time_us, curve.busbw_GBps, curve.choice, strict=True
        )
    ]


@dataclass(frozen=True)
class _Variant:
    name: str
    description: str
    kind: str
    graph: Callable[[nx.Graph, FabricRates], nx.Graph] | None = None
    restriction: TunerRestriction | None = None
    constants: Callable[[NcclConstants], NcclConstants] | None = None
    rates: Callable[[nx.Graph, FabricRates], FabricRates] | None = None


def _without_cables(k_of: Callable[[int], int]) -> Callable[[nx.Graph, FabricRates], nx.Graph]:
    """The fabric with the cables of the last ``k_of(nics)`` NICs of the first server removed."""

    def change(G: nx.Graph, r: FabricRates) -> nx.Graph:
        H = G.copy()
        nics = _cabled_nics(H, r.servers[:1])
        _uncable(H, nics[len(nics) - k_of(len(nics)) :])
        return H

    return change


def _one_cable_slow(factor: float) -> Callable[[nx.Graph, FabricRates], nx.Graph]:
    """The fabric with the cable of the last NIC of the first server used at ``factor`` of its
    capacity."""

    def change(G: nx.Graph, r: FabricRates) -> nx.Graph:
        H = G.copy()
        for nic in _cabled_nics(H, r.servers[:1])[-1:]:
            for e in H[nic].values():
                if e["kind"] == "endpoint":
                    e["capacity"] = e["capacity"] * factor
        return H

    return change


def _nics_used(k: int) -> Callable[[nx.Graph, FabricRates], nx.Graph]:
    """The fabric with only the first ``k`` cabled NICs of every server in use (the rest's
    cables removed): what NCCL_IB_HCA listing ``k`` of them, or a kernel driving ``k`` planes
    or rails, leaves."""

    def change(G: nx.Graph, r: FabricRates) -> nx.Graph:
        H = G.copy()
        _uncable(H, _cabled_nics(H, r.servers, skip=k))
        return H

    return change


def _channel_cap(k: int) -> Callable[[NcclConstants], NcclConstants]:
    """The constants with ``NCCL_MAX_NCHANNELS=k``."""

    def change(c: NcclConstants) -> NcclConstants:
        return c.with_max_nchannels(k)

    return change


ECMP_SEED = 0
"""The seed of the ECMP hashing the ``ecmp`` cause routes with (one fixed draw, so that a
measurement is explained the same way every time)."""


def _alltoall_scaled(r: FabricRates, factor: float, note: str, **changes: Any) -> FabricRates:
    """``r`` with its all-to-all pattern ``factor`` times slower (and ``changes`` to ``r``)."""
    a = r.alltoall
    if a is None or a.seconds_per_byte <= 0:
        raise TopoError("no all-to-all rate across servers to re-route")
    slower = replace(a, seconds_per_byte=a.seconds_per_byte * factor, method=f"{a.method}; {note}")
    return replace(r, alltoall=slower, **changes)


def _ecmp_routed(G: nx.Graph, r: FabricRates) -> FabricRates:
    """The all-to-all as ECMP routes it, one flow (queue pair) per GPU pair: the LP's rate times
    the routing's collision loss, the expected (evenly split) pair rate over the sampled one
    (:func:`topo.flow.routed_flow`, seed :data:`ECMP_SEED`)."""
    sub = select_subcluster(G, r.gpus, r.gpus_per_node)[0]
    res = routed_flow(sub, uniform_alltoall(sub), "ecmp", seed=ECMP_SEED)
    assert res.routing is not None
    loss = res.routing.expected_pair_rate_Bps / res.pair_rate_Bps
    return _alltoall_scaled(r, max(1.0, loss), f"ECMP collisions x{loss:.3f}")


def _pxn_off(G: nx.Graph, r: FabricRates) -> FabricRates:
    """``NCCL_PXN_DISABLE=1``: every GPU's bytes leave by its own NIC (none cross NVLink to
    another rail's NIC first): the LP's all-to-all rate times the ratio of the evenly split
    routed pair rates with and without PXN (:func:`topo.flow.routed_flow`, ``pxn``), and no
    NVLink forwarding in the model."""
    sub = select_subcluster(G, r.gpus, r.gpus_per_node)[0]
    demand = uniform_alltoall(sub)
    on = routed_flow(sub, demand, "ecmp", expected=True).pair_rate_Bps
    off = routed_flow(sub, demand, "ecmp", pxn=False, expected=True).pair_rate_Bps
    return _alltoall_scaled(r, on / off, f"PXN off x{on / off:.3f}", pxn=False)


def _crossing_rails(G: nx.Graph, r: FabricRates) -> FabricRates:
    """Rings crossing rails: the ring pattern with each server's bytes leaving on NIC ``i``
    and entering the next server on NIC ``i + 1`` (:func:`crossing_ring`), re-solved as a flow
    on the fabric; the tree and all-to-all as designed."""
    return replace(r, ring=crossing_ring(G, r.gpus, r.gpus_per_node))


def _patterns_capped(r: FabricRates, server_Bps: float, note: str) -> FabricRates:
    """``r`` with every pattern across servers at most as fast as its busiest server moving
    its bytes at ``server_Bps`` (B/s; a hose cap on each server's network rate)."""

    def cap(p: PatternRate | None) -> PatternRate | None:
        if p is None:
            return None
        if p.seconds_per_byte <= 0:
            raise TopoError("no network rate across servers to cap")
        spb = max(p.seconds_per_byte, p.node_bytes / server_Bps)
        return replace(p, seconds_per_byte=spb, method=f"{p.method}; {note}")

    return replace(r, ring=cap(r.ring), tree=cap(r.tree), alltoall=cap(r.alltoall))


QP_SOURCES = (
    "one QP reaches 392 Gb/s on a 400G RoCE NIC in ib_write_bw at NCCL's 128 KiB step and "
    "284 Gb/s at 1 MiB (0.73 of 8 QPs' 392; NVIDIA/nccl#2409), and drives one port of a "
    "bonded NIC (NVIDIA/nccl#1015): with NCCL's 2 or more channels per NIC neither caps it"
)
"""What the public threads measured of one queue pair. The one single-QP rate under a
single-port NIC's line rate (284.4 Gb/s at 1 MiB messages, ``ib_write_bw -q 1``, host memory,
400G RoCE, NVIDIA/nccl#2409) would cap a NIC only if it carried a single channel; NCCL gives
each NIC two or more (:mod:`topo.collective.channels`), so the ``qp_limit`` cause's rate is
inferred from the measurement."""


def _qp_limited(
    r: FabricRates, c: NcclConstants, last: NcclTestRow, channels: int
) -> tuple[FabricRates, str]:
    """The ``qp_limit`` cause: each of a server's ``channels`` network connections (one QP
    each) capped at ``q``, so a server moves at most ``channels x q`` across the network
    (``channels / nics_per_node`` connections per NIC). ``q`` is inferred: the rate at which
    the largest size's measured busbw (``last``, the row :func:`largest_row` picks) is the
    servers' network rate (busbw / NCCL's NIC efficiency, spread over the channels: what a
    ring op's busbw is). Returns the changed rates and ``q``, in words."""
    server_Bps = last.busbw_GBps * 1e9 / c.nic_efficiency
    if not server_Bps > 0 or channels < 1:
        raise TopoError("no measured rate to infer a connection cap from")
    q_Bps = server_Bps / channels
    per_nic = channels / max(1, r.nics_per_node)
    note = f"one connection (QP) at {q_Bps * 8 / 1e9:.0f} Gb/s"
    words = (
        f"{note} x {channels} channels ({per_nic:g} per NIC: {q_Bps * per_nic / r.nic_Bps:.2f} "
        f"of a NIC); the QP rate is inferred from this plateau, not sourced: {QP_SOURCES}"
    )
    return _patterns_capped(r, server_Bps, note), words


def _cabled_nics(G: nx.Graph, chosen: list[Any], skip: int = 0) -> list[Any]:
    """The NICs cabled to a switch of each ``chosen`` server after its first ``skip``, in
    order (one pass over the fabric's servers, whatever their number)."""
    by_server = servers(G)
    out: list[Any] = []
    for s in chosen:
        nics = [
            v
            for v in by_server[s]
            if G.nodes[v]["kind"] == "nic" and any(G[v][w]["kind"] == "endpoint" for w in G[v])
        ]
        out += nics[skip:]
    return out


def _uncable(H: nx.Graph, nics: list[Any]) -> None:
    """Remove the cables (``endpoint`` edges) of ``nics`` from ``H`` in place."""
    for nic in nics:
        H.remove_edges_from([(nic, v) for v in list(H[nic]) if H[nic][v]["kind"] == "endpoint"])


@dataclass(frozen=True)
class FabricVariant:
    """A candidate cause that changes the fabric: the servers' NICs and their links.

    Attributes
    ----------
    name, description, kind : str
        As :class:`Cause`'s (``kind`` keys :data:`CHECKS`).
    change : callable
        ``change(G, rates) -> networkx.Graph``: a changed copy of the fabric ``G`` for the
        sub-cluster of ``rates`` (:func:`topo.collective.fabric_rates.fabric_rates`).
    """

    name: str
    description: str
    kind: str
    change: Callable[[nx.Graph, FabricRates], nx.Graph]


def fabric_variants(r: FabricRates) -> list[FabricVariant]:
    """The causes that change the fabric of a sub-cluster of more than one server: one NIC
    of one server down; half of them (3 NICs or more); one NIC at half rate; every server
    driving half its NICs, or one; GPUDirect RDMA absent (the models in the module docstring).
    Empty on one server or with no NIC."""
    out: list[FabricVariant] = []
    if r.nodes > 1 and r.nics_per_node >= 1:
        k = r.nics_per_node
        if k > 1:
            out.append(
                FabricVariant(
                    "nic_down",
                    "one NIC of one server down (its port not active)",
                    "nic_down",
                    _without_cables(lambda n: 1),
                )
            )
        if k > 2:
            out.append(
                FabricVariant(
                    "nic_down",
                    f"{k // 2} of the {k} NICs of one server down or left out (NCCL_IB_HCA)",
                    "nic_down",
                    _without_cables(lambda n: n // 2),
                )
            )
        out.append(
            FabricVariant(
                "nic_slow",
                "one NIC of one server at half rate (port trained at half speed, PCIe at half "
                "width)",
                "nic_slow",
                _one_cable_slow(0.5),
            )
        )
        for used in sorted({k // 2, 1} - {0, k}, reverse=True):
            out.append(
                FabricVariant(
                    f"nics_used:{used}",
                    f"every server driving {used} of its {k} NICs (NCCL_IB_HCA listing "
                    f"{used}, or a kernel driving {used} of the planes or rails)",
                    "nics_used",
                    _nics_used(used),
                )
            )
        out.append(
            FabricVariant(
                "no_gdr",
                "GPUDirect RDMA absent: network data staged through host memory on every server",
                "no_gdr",
                lambda G, r: without_gdr(G),
            )
        )
    return out


RING_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
"""The ops NCCL runs on rings (the ``cross_nic`` cause changes the ring pattern)."""


def _variants(r: FabricRates, design: Curve, op: str, channels: int) -> list[_Variant]:
    out: list[_Variant] = [
        _Variant(f.name, f.description, f.kind, graph=f.change) for f in fabric_variants(r)
    ]
    if channels > 1:
        for cap in sorted({channels // 2, channels // 4} - {0}, reverse=True):
            out.append(
                _Variant(
                    f"channels:{cap}",
                    f"NCCL_MAX_NCHANNELS={cap} (the design runs {channels} channels)",
                    "channels",
                    constants=_channel_cap(cap),
                )
            )
    if op == "sendrecv" and r.nodes > 1:
        out.append(
            _Variant(
                "net_peer_channels:1",
                "NCCL_NCHANNELS_PER_NET_PEER=1: one p2p channel (one connection) per peer "
                "across servers",
                "net_peer_channels",
                constants=lambda c: c.with_nchannels_per_net_peer(1),
            )
        )
    if op == "alltoall" and r.nodes > 1:
        out.append(
            _Variant(
                "pxn_off",
                "PXN off (NCCL_PXN_DISABLE=1): every GPU sends from its own NIC, across rails",
                "pxn_off",
                rates=_pxn_off,
            )
        )
        out.append(
            _Variant(
                "ecmp",
                "ECMP hash collisions as routed (one queue pair per GPU pair, "
                "NCCL_IB_QPS_PER_CONNECTION=1)",
                "ecmp",
                rates=_ecmp_routed,
            )
        )
    if op in RING_OPS and r.nodes > 1 and r.nics_per_node > 1:
        out.append(
            _Variant(
                "cross_nic",
                "rings crossing rails (NCCL_CROSS_NIC=1, or 2 without NCCL's ring alternation): "
                "each server's channel leaves on NIC i and enters the next server on NIC i+1",
                "cross_nic",
                rates=_crossing_rails,
            )
        )
    chosen = {k.split("/")[0] for k in design.choice}
    if op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"):
        if chosen & {"nvls", "nvls_tree"}:
            out.append(
                _Variant(
                    "nvls_off",
                    "NVLS and NVLS-tree unavailable (NCCL_NVLS_ENABLE=0, or no NVLink SHARP)",
                    "nvls_off",
                    restriction=tuner_restriction("^NVLS,NVLSTree"),
                )
            )
        for a in ("ring", "tree", "nvls", "nvls_tree", "pat"):
            if chosen != {a}:
                out.append(
                    _Variant(
                        f"algo:{NCCL_ALGO_NAMES[a]}",
                        f"NCCL_ALGO={NCCL_ALGO_NAMES[a]} forced",
                        "algo",
                        restriction=tuner_restriction(NCCL_ALGO_NAMES[a]),
                    )
                )
        protos = {k.split("/")[1] for k in design.choice}
        for p in ("LL", "LL128", "Simple"):
            if protos != {p}:
                out.append(
                    _Variant(
                        f"proto:{p}",
                        f"NCCL_PROTO={p} forced",
                        "proto",
                        restriction=tuner_restriction(None, p),
                    )
                )
    return out


def _curve(
    op: str,
    rows: list[NcclTestRow],
    scored: list[bool],
    rates: FabricRates,
    c: NcclConstants,
    restriction: TunerRestriction | None,
) -> Curve:
    """The predicted rows at the measured rows' sizes, scored over the ``scored`` ones."""
    preds = predict_rows(op, rows, rates, c, restriction)
    logs = _log_ratios([p.time_us for p in preds], rows, scored)
    return Curve(
        sizes=[m.size_bytes for m in rows],
        time_us=[p.time_us for p in preds],
        busbw_GBps=[p.busbw_GBps for p in preds],
        choice=[f"{p.algorithm}/{p.protocol}" for p in preds],
        score=float(math.sqrt(np.mean(np.square(logs)))),
    )


def _log_ratios(times_us: list[float], rows: list[NcclTestRow], scored: list[bool]) -> list[float]:
    """log(predicted / measured time) of the scored rows (dimensionless)."""
    return [math.log(t / m.time_us) for t, m, k in zip(times_us, rows, scored, strict=True) if k]


def explain_test(
    G: nx.Graph,
    test: NcclTest,
    *,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    constants: NcclConstants | None = None,
    as_built: tuple[nx.Graph, str] | None = None,
) -> Explanation:
    """Score the design and each candidate cause against one measured test.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the test ran on (schema in :mod:`topo.fabric`).
    test : NcclTest
        One test of a measured log (nccl-tests text or JSON, NCCL Inspector).
    gpus, gpus_per_node : int, optional
        Default: the ranks and ranks per host the log lists.
    constants : NcclConstants, optional
        Default: :func:`topo.collective.predict.fabric_constants` of ``G``.
    as_built : (networkx.Graph, str), optional
        The fabric as a dump found it (the design's servers with the dump's cables:
        :func:`topo.validate.as_built_fabric`) and a phrase naming its defects: scored as the
        cause ``as_built``.

    Returns
    -------
    Explanation
        Times in µs, busbw in GB/s; scores dimensionless (RMS of the log time ratio over the
        scored rows); ``causes`` best first, empty when the design agrees or the measurement
        is faster.

    Raises
    ------
    TopoError
        The test's op is not one topo models; no ranks (give ``gpus``); no row of more than
        0 bytes; the sizes do not fit the fabric (see :func:`fabric_rates`).
    """
    if test.op not in OPS:
        raise TopoError(f"the log's test {test.op}_perf is not one of {', '.join(OPS)}")
    n = gpus if gpus is not None else test.ranks
    g = gpus_per_node if gpus_per_node is not None else test.gpus_per_node
    if n is None:
        raise TopoError(f"the log lists no ranks for {test.op}_perf", param="gpus")
    c = constants or fabric_constants(G)
    rates = fabric_rates(G, n, g)
    rows = [m for m in test.rows if m.size_bytes > 0 and m.time_us > 0]
    if not rows:
        raise TopoError(f"the log's test {test.op}_perf has no row of more than 0 bytes")
    large = [m.size_bytes >= MIN_SCORED_BYTES for m in rows]
    top = largest_row([m.size_bytes for m in rows], [m.time_us for m in rows])
    scored = large if sum(large) >= 3 else [True] * len(rows)
    design = _curve(test.op, rows, scored, rates, c, None)
    median = float(np.median(_log_ratios(design.time_us, rows, scored)))
    agrees = design.score <= AGREE
    faster = not agrees and median > AGREE
    causes: list[Cause] = []
    if agrees:
        verdict = (
            f"agrees with the design: RMS {percent_off(design.score)} over {sum(scored)} rows; "
            "no cause to rank"
        )
    elif faster:
        verdict = (
            f"faster than the design (the measured times a median {-math.expm1(-median):.0%} "
            "under the design's): "
            "no fault explains a faster run; the model is pessimistic here"
        )
    else:
        variants = _variants(rates, design, test.op, coll_channels(rates, c))
        if as_built is not None:
            built, defects = as_built
            variants.insert(
                0,
                _Variant(
                    "as_built",
                    f"the fabric as the dump found it ({defects})",
                    "as_built",
                    graph=lambda _G, _r: built,
                ),
            )
        for v in variants:
            try:
                H = v.graph(G, rates) if v.graph is not None else G
                r = fabric_rates(H, n, g) if v.graph is not None else rates
                r = v.rates(G, r) if v.rates is not None else r
                cv = v.constants(c) if v.constants is not None else c
                curve = _curve(test.op, rows, scored, r, cv, v.restriction)
            except TopoError:
                continue  # a cause this fabric or op cannot take (e.g. no NVLS here)
            causes.append(
                Cause(
                    name=v.name,
                    description=v.description,
                    score=curve.score,
                    fits=curve.score <= AGREE,
                    curve=curve,
                    evidence=_evidence(curve, design, rows[top], top, sum(scored)),
                    check=CHECKS[v.kind],
                )
            )
        if rates.nodes > 1 and test.op in RING_OPS and not any(k.fits for k in causes):
            qp = _qp_cause(test.op, rows, top, scored, rates, c, design)
            causes += [qp] if qp is not None else []
        causes, verdict = rank_causes(design.score, causes)
    return Explanation(
        op=test.op,
        gpus=rates.gpus,
        nodes=rates.nodes,
        gpus_per_node=rates.gpus_per_node,
        sizes=design.sizes,
        measured_time_us=[m.time_us for m in rows],
        measured_busbw_GBps=[m.busbw_GBps for m in rows],
        scored_rows=sum(scored),
        design=design,
        agrees=agrees,
        faster=faster,
        verdict=verdict,
        causes=causes,
        line=test.line,
    )


def _qp_cause(
    op: str,
    rows: list[NcclTestRow],
    top: int,
    scored: list[bool],
    rates: FabricRates,
    c: NcclConstants,
    design: Curve,
) -> Cause | None:
    """The ``qp_limit`` cause at the per-connection rate the measurement implies (offered
    only when no other cause fits: its rate is inferred, not sourced) from ``rows[top]``, the
    row that stands for the largest size (:func:`largest_row`); None when the measurement
    gives no cap to infer."""
    try:
        r, words = _qp_limited(rates, c, rows[top], coll_channels(rates, c))
        curve = _curve(op, rows, scored, r, c, None)
    except TopoError:
        return None
    return Cause(
        name="qp_limit",
        description="each channel's network connection capped (one QP per connection: "
        "NCCL_IB_QPS_PER_CONNECTION=1)",
        score=curve.score,
        fits=curve.score <= AGREE,
        curve=curve,
        evidence=f"{_evidence(curve, design, rows[top], top, sum(scored))}; {words}",
        check=CHECKS["qp_limit"],
    )


class Scored(Protocol):
    """What :func:`rank_causes` reads of a cause: its description, score and whether it fits."""

    @property
    def description(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def fits(self) -> bool: ...


CauseT = TypeVar("CauseT", bound=Scored)


def rank_causes(design_score: float, causes: Sequence[CauseT]) -> tuple[list[CauseT], str]:
    """The causes that beat the design's score by more than :data:`MIN_GAIN`, best (lowest
    RMS of the log ratio, dimensionless) first, and the verdict of a measurement slower than
    the design: the best cause when it fits (RMS at most :data:`AGREE`), else the closest, else
    that none comes closer. Used for collectives (:func:`explain_test`) and EP kernels
    (:func:`topo.diagnose.explain_ep`) alike."""
    ranked = sorted((k for k in causes if k.score < design_score - MIN_GAIN), key=lambda k: k.score)
    slower = f"slower than the design (RMS {percent_off(design_score)})"
    if not ranked:
        return ranked, f"{slower}; none of the causes topo models comes closer"
    best = ranked[0]
    if best.fits:
        return ranked, f"{slower}; best fit: {best.description} (RMS {percent_off(best.score)})"
    return ranked, (
        f"{slower}; no single cause fits within 15%; closest: {best.description} "
        f"(RMS {percent_off(best.score)})"
    )


def percent_off(log_ratio: float) -> str:
    """A log ratio (dimensionless) as the percentage off it stands for, either way:
    ``exp(|x|) - 1`` (0.14 -> '15%')."""
    return f"{(math.exp(abs(log_ratio)) - 1) * 100:.0f}%"


def median_runs(sizes: Sequence[int], times_us: Sequence[float]) -> list[int]:
    """For each size of a log, in increasing size, the index of the row that stands for it:
    of its rows (several where a log repeats it: nccl-tests ``-N``, ``-d all``, runs appended),
    the one of median time, the faster of the middle two of an even number.

    Parameters
    ----------
    sizes : sequence of int
        The rows' sizes (B).
    times_us : sequence of float
        Their measured times (µs), as many.

    Returns
    -------
    list of int
        Indices into ``sizes``, one per distinct size.

    Examples
    --------
    >>> median_runs([8, 64, 64, 64, 8], [1.0, 9.0, 3.0, 4.0, 2.0])
    [0, 3]
    """
    at: dict[int, list[tuple[float, int]]] = {}
    for i, (s, t) in enumerate(zip(sizes, times_us, strict=True)):
        at.setdefault(s, []).append((t, i))
    return [sorted(runs)[(len(runs) - 1) // 2][1] for _, runs in sorted(at.items())]


def largest_row(sizes: Sequence[int], times_us: Sequence[float]) -> int:
    """The index of the row that stands for the largest size (:func:`median_runs`): not the
    file's last row, which is the last run's, or not of the largest size at all.

    Examples
    --------
    >>> largest_row([8, 64, 64, 64, 8], [1.0, 9.0, 3.0, 4.0, 2.0])
    3
    """
    return median_runs(sizes, times_us)[-1]


def _evidence(curve: Curve, design: Curve, last: NcclTestRow, i: int, scored: int) -> str:
    """The cause's and the design's RMS over ``scored`` rows, and busbw (GB/s) at ``last``,
    the row that stands for the largest size (:func:`largest_row`), index ``i`` of the curves."""
    return (
        f"RMS {percent_off(curve.score)} over {scored} rows (design: "
        f"{percent_off(design.score)}); at {binary_bytes(last.size_bytes)}: measured "
        f"{last.busbw_GBps:.1f} GB/s, this cause {curve.busbw_GBps[i]:.1f} GB/s, design "
        f"{design.busbw_GBps[i]:.1f} GB/s"
    )


def plot_explanations(explanations: list[Explanation], top: int = 3) -> Any:
    """busbw (GB/s) against size (B, log x): measured, the design's curve and the ``top``
    best causes of each explanation.

    Parameters
    ----------
    explanations : list of Explanation
        From :func:`explain_test`.
    top : int
        Causes drawn per explanation, best first.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for e in explanations:
        # each size once, in increasing size, at its median run: a log repeating sizes (-N,
        # -d all) draws no line back to the smallest
        keep = median_runs(e.sizes, e.measured_time_us)
        x = [e.sizes[i] for i in keep]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[e.measured_busbw_GBps[i] for i in keep],
                name=f"{e.op}: measured",
                mode="markers+lines",
                line={"dash": "dot"},
            )
        )
        design = [e.design.busbw_GBps[i] for i in keep]
        fig.add_trace(go.Scatter(x=x, y=design, name=f"{e.op}: design", mode="lines"))
        for k in e.causes[:top]:
            y = [k.curve.busbw_GBps[i] for i in keep]
            fig.add_trace(go.Scatter(x=x, y=y, name=f"{e.op}: {k.description}", mode="lines"))
    fig.update_layout(
        title="measured busbw against the design and the best-fitting causes",
        xaxis={"title": "size (B)", "type": "log"},
        yaxis={"title": "busbw (GB/s)", "rangemode": "tozero"},
        template="plotly_white",
    )
    return fig


__all__ = [
    "AGREE",
    "Cause",
    "Curve",
    "Explanation",
    "explain_test",
    "largest_row",
    "median_runs",
    "percent_off",
    "plot_explanations",
]
