"""Why a measured expert-parallel kernel falls short: DeepEP's test output against the design.

:func:`explain_ep` predicts what DeepEP's test would print on the fabric as designed (the
kernel models of :mod:`topo.collective`'s sibling :mod:`topo.moe.kernels`: ``deepep-normal``
for ``test_internode.py``/``test_intranode.py``, ``deepep-ll`` for ``test_low_latency.py``),
then again under the kernel's own causes (:func:`ep_variants`: NVSHMEM giving several GPUs one
NIC, the kernel driving one plane of a multi-plane NIC) and each fabric cause of
:func:`topo.collective.explain.fabric_variants` (a NIC down or at half rate on one server,
every server driving half of its NICs or one, GPUDirect RDMA absent), and scores each against
the measurement as ``topo explain`` scores a collective: the root mean square of
``log(predicted / measured bandwidth)`` over the phases the test printed (dispatch FP8 and
BF16, combine), in the bandwidth the test prints (DeepEP's RDMA "bottleneck bandwidth" across
servers, NVL in one). The design agrees when its score is at most
:data:`topo.collective.explain.AGREE` (about 15%).

The test's routing is DeepSeek-V3's shape (256 experts, top-8, hidden 7168, at most
``num_topk_groups`` nodes per token, as DeepEP's tests draw it), with the ``[config]`` line's
tokens per rank (4096 when not printed) and the SMs of the best configuration. The tokens are
gated once, on the design; a cause changes the NICs, not the routing.

Where a cause shows: DeepEP's normal kernels on two servers are bound by their SMs' forwarding
(24 SMs, :data:`topo.moe.kernels.FORWARD_DISPATCH_Bps`), and the test prints about twice the
bytes a NIC carries (its (token, node) pairs count the own node), so a NIC must fall under
about half its rate before the printed figure moves; from four servers on the NIC binds
(DeepEP's README EP32 row) and any loss of NIC rate shows in full.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from topo.builders.planes_used import drive_planes, plane_count
from topo.collective.explain import (
    AGREE,
    CHECKS,
    FabricVariant,
    fabric_variants,
    percent_off,
    rank_causes,
)
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.errors import TopoError
from topo.fabric import servers
from topo.formats.deepep_log import DeepEPPhase, DeepEPTest
from topo.moe import default_config
from topo.moe.kernels import kernel_times
from topo.moe.timing import copy_bytes, moe_report
from topo.moe.traffic import ep_layout

DEFAULT_TOKENS = 4096
"""Tokens per rank of DeepEP's test_internode.py (``--num-tokens`` default)."""

LL_TOKENS = 128
"""Tokens per rank of DeepEP's test_low_latency.py (``--num-tokens`` default)."""

TIE = 0.005
"""Causes whose score (RMS of the log ratio) is within this of the best one's are named with
it in the verdict: a DeepEP test prints one figure per phase for the whole job, so one slow
NIC and every NIC shared by two GPUs, which set the same slowest rank, print the same."""


@dataclass(frozen=True)
class EPCurve:
    """Predicted bandwidth (GB/s) per measured phase, in the measurement's order, and the
    score (RMS of the log ratio, dimensionless)."""

    GBps: list[float]
    score: float


@dataclass(frozen=True)
class EPCause:
    """One candidate cause re-predicted: ``name``, ``description``, ``score``, ``fits``,
    ``predicted`` (:class:`EPCurve`) and what to ``check``."""

    name: str
    description: str
    score: float
    fits: bool
    predicted: EPCurve
    check: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "name": self.name,
            "description": self.description,
            "score": self.score,
            "fits": self.fits,
            "predicted_GBps": self.predicted.GBps,
            "check": self.check,
        }


@dataclass(frozen=True)
class EPExplanation:
    """A DeepEP test against the design and the causes, best first (empty when it agrees).

    ``phases`` name each measured figure (``dispatch fp8 RDMA``, ...); ``measured_GBps`` and
    the curves' ``GBps`` follow that order."""

    kernel: str
    gpus: int
    gpus_per_node: int
    phases: list[str]
    measured_GBps: list[float]
    design: EPCurve
    agrees: bool
    faster: bool
    verdict: str
    causes: list[EPCause] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kernel": self.kernel,
            "gpus": self.gpus,
            "gpus_per_node": self.gpus_per_node,
            "phases": self.phases,
            "measured_GBps": self.measured_GBps,
            "design_GBps": self.design.GBps,
            "score": self.design.score,
            "agrees": self.agrees,
            "faster": self.faster,
            "verdict": self.verdict,
            "causes": [c.to_dict() for c in self.causes],
        }


def _measured(p: DeepEPPhase, nodes: int) -> float:
    x = p.rdma_GBps if nodes > 1 else p.nvl_GBps
    if x is None:
        x = p.nvl_GBps if p.rdma_GBps is None else p.rdma_GBps
    assert x is not None
    return x


@dataclass(frozen=True)
class _Routing:
    """The test's tokens gated once on the design: the report (its layout, tokens per rank,
    model) and each token's routed experts, shape (ep x tokens, top-k)."""

    report: Any
    experts: np.ndarray


def _routing(G: nx.Graph, test: DeepEPTest, gpus: int) -> _Routing:
    """DeepEP's test routing on the design (DeepSeek-V3's shape, the test's tokens and node
    limit), gated once for the design and every cause: a cause changes NICs, not routing."""
    tokens = test.num_tokens or (LL_TOKENS if test.kernel == "low_latency" else DEFAULT_TOKENS)
    report = moe_report(
        G,
        default_config(),
        ep=gpus,
        tokens_per_gpu=tokens,
        node_limit=test.num_topk_groups,
        micro_batches=1,
    )
    return _Routing(report, report.routings[report.headline.node_limit])


def _predict(
    G: nx.Graph, routing: _Routing, test: DeepEPTest, gpus: int, phases: list[DeepEPPhase]
) -> list[float]:
    """DeepEP's printed bandwidth per phase (GB/s), predicted on ``G`` (the design or a cause's
    change of it) with the design's routing."""
    rep = routing.report
    kernel = "deepep-ll" if test.kernel == "low_latency" else "deepep-normal"
    sms = next((p.sms for p in phases if p.sms), None) if kernel == "deepep-normal" else None
    layout = ep_layout(G, rep.model.n_routed_experts, gpus)
    combine_bytes = copy_bytes(rep.model.hidden_size, rep.combine_dtype)
    out: dict[str, Any] = {}
    for dtype in sorted({p.dtype for p in phases}):
        out[dtype] = kernel_times(
            layout,
            routing.experts,
            rep.tokens_per_gpu,
            copy_bytes(rep.model.hidden_size, dtype),
            combine_bytes,
            kernel,
            sms,
        )
    return [
        out[p.dtype].dispatch_GBps if p.phase == "dispatch" else out[sorted(out)[0]].combine_GBps
        for p in phases
    ]


def _score(pred: list[float], meas: list[float]) -> float:
    logs = [math.log(a / b) for a, b in zip(pred, meas, strict=True) if a > 0]
    if len(logs) < len(meas):
        return math.inf
    return float(math.sqrt(np.mean(np.square(logs))))


EP_CHECKS = {
    "nvshmem_nics": (
        "NVSHMEM_DEBUG=INFO: the NIC each PE selected (one per GPU, none shared); "
        "NVSHMEM_ENABLE_NIC_PE_MAPPING, NVSHMEM_HCA_PE_MAPPING, NVSHMEM_HCA_LIST in the job's "
        "environment (NVSHMEM_HCA_LIST in GPU order, one NIC each: DeepEP PR #466); "
        "`nvidia-smi topo -m`: GPU pairs on one PCIe switch (PIX/PXB to two NICs); while the "
        "test runs, every NIC's port_xmit_data counter moves (/sys/class/infiniband/*/ports/"
        "*/counters)"
    ),
    "planes_used": (
        "the port counters of every NIC port (plane) while the test runs: both move, or only "
        "the first; NVSHMEM_IBGDA_ENABLE_MULTI_PORT=1 and a DeepEP whose kernels use the QPs "
        "of every port (DeepEP PR #650)"
    ),
}
"""What to check on the cluster for the causes of an EP kernel alone."""


def _gpus_of(G: nx.Graph, members: list[Any]) -> list[Any]:
    """A server's GPUs in index order."""
    gpus = [v for v in members if G.nodes[v]["kind"] == "gpu"]
    return sorted(gpus, key=lambda v: int(G.nodes[v]["index"]))


def _own_nics(G: nx.Graph, gpu: Any) -> list[Any]:
    """The NICs (or NIC ports) a GPU reaches over PCIe that are cabled to the fabric."""
    return [
        w
        for w, e in G[gpu].items()
        if e["kind"] == "pcie" and any(f["kind"] == "endpoint" for f in G[w].values())
    ]


def _nics_mapped(k: int) -> Callable[[nx.Graph, FabricRates], nx.Graph]:
    """The fabric with every server's GPUs re-attached to ``k`` of its NIC groups: GPU ``i``
    given the NICs of GPU ``(i // m) * m``, ``m = G / k``, in place of its own."""

    def change(G: nx.Graph, r: FabricRates) -> nx.Graph:
        H = G.copy()
        by_server = servers(H)
        for s in r.servers:
            gpus = _gpus_of(H, list(by_server[s]))
            m = len(gpus) // k
            owns = [_own_nics(H, g) for g in gpus]
            for i, g in enumerate(gpus):
                lead = (i // m) * m
                if i == lead or set(owns[i]) == set(owns[lead]):
                    continue
                H.remove_edges_from([(g, w) for w in owns[i]])
                for w in owns[lead]:
                    H.add_edge(g, w, **dict(H[gpus[lead]][w]))
        return H

    return change


def _planes(k: int) -> Callable[[nx.Graph, FabricRates], nx.Graph]:
    """The fabric the kernel drives when it uses planes ``0 .. k-1`` of every NIC."""

    def change(G: nx.Graph, r: FabricRates) -> nx.Graph:
        return drive_planes(G, k)

    return change


def ep_variants(G: nx.Graph, r: FabricRates) -> list[FabricVariant]:
    """The causes of an EP kernel alone, before :func:`fabric_variants`' (a tie keeps this order).

    - ``planes_used:K``: the kernel driving ``K`` of the ``P`` planes of a fabric whose NICs
      have a port on each plane (:func:`topo.builders.planes_used.drive_planes`): DeepEP V1
      before PR #650 uses only the first plane of a dual-plane ConnectX-8.
    - ``nvshmem_nics:K``: NVSHMEM gives every server's GPUs ``K`` of its NICs, ``G / K`` GPUs
      sharing each (each moving ``K / G`` of it, as the kernel models give ranks behind one
      NIC): GPU ``i`` takes the NICs of GPU ``(i // m) * m``. ``K`` half the NICs the GPUs
      own (deepseek-ai/DeepEP PR #466: two GPUs on one PCIe switch both given the first NIC by
      ``nvshmemi_get_devices_by_distance``, "4 of 8 NIC are enabled"), a quarter, and 1
      (deepseek-ai/DeepEP#336: every rank given the first NIC).

    Empty on one server. Only where each GPU keeps a NIC (a plane cut that leaves a GPU
    without one is a collective's ``nics_used``, not a kernel's choice).
    """
    out: list[FabricVariant] = []
    if r.nodes < 2:
        return out
    by_server = servers(G)
    gpus = _gpus_of(G, list(by_server[r.servers[0]]))[: r.gpus_per_node]
    groups = len({frozenset(_own_nics(G, g)) for g in gpus})
    n = len(gpus)
    P = plane_count(G)
    ports = {len(_own_nics(G, g)) for g in gpus}
    if P > 1 and min(ports) >= P:
        for k in sorted({P // 2, 1} - {0, P}, reverse=True):
            out.append(
                FabricVariant(
                    f"planes_used:{k}",
                    f"the kernel driving {k} of the {P} planes of every NIC (DeepEP V1 before "
                    "PR #650: the first plane of a dual-plane ConnectX-8)",
                    "planes_used",
                    _planes(k),
                )
            )
    for k in sorted({groups // 2, groups // 4, 1} - {0, groups}, reverse=True):
        if n % k == 0:
            out.append(
                FabricVariant(
                    f"nvshmem_nics:{k}",
                    f"NVSHMEM mapping the {n} GPUs of every server to {k} of its {groups} NICs "
                    f"({n // k} GPUs sharing each; DeepEP PR #466, #336)",
                    "nvshmem_nics",
                    _nics_mapped(k),
                )
            )
    return out


def explain_ep(G: nx.Graph, test: DeepEPTest, gpus: int, gpus_per_node: int) -> EPExplanation:
    """Score the design and each fabric cause against one DeepEP test.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the test ran on.
    test : DeepEPTest
        From :func:`topo.formats.deepep_log.read_deepep_log`.
    gpus, gpus_per_node : int
        EP ranks and ranks per server (DeepEP's tests print neither).

    Returns
    -------
    EPExplanation
        Bandwidths in GB/s as the test prints them; causes best first.

    Raises
    ------
    TopoError
        The fabric cannot hold ``gpus`` at ``gpus_per_node``; as
        :func:`topo.moe.timing.moe_report` and :func:`topo.moe.kernels.kernel_report`.
    """
    rates: FabricRates = fabric_rates(G, gpus, gpus_per_node)
    phases = test.phases
    nodes = rates.nodes
    meas = [_measured(p, nodes) for p in phases]
    names = [
        f"{p.phase} {p.dtype} {'RDMA' if nodes > 1 and p.rdma_GBps is not None else 'NVL'}"
        for p in phases
    ]
    routing = _routing(G, test, gpus)
    design = EPCurve(d := _predict(G, routing, test, gpus, phases), _score(d, meas))
    median = float(np.median([math.log(a / b) for a, b in zip(design.GBps, meas, strict=True)]))
    agrees = design.score <= AGREE
    faster = not agrees and median < -AGREE
    causes: list[EPCause] = []
    if agrees:
        verdict = f"agrees with the design: RMS {percent_off(design.score)}; no cause to rank"
    elif faster:
        verdict = (
            f"faster than the design (median {percent_off(median)} over the model): the model "
            "is pessimistic here; no fault explains a faster run"
        )
    else:
        for v in ep_variants(G, rates) + fabric_variants(rates):
            try:
                curve = _predict(v.change(G, rates), routing, test, gpus, phases)
            except TopoError:
                continue
            score = _score(curve, meas)
            causes.append(
                EPCause(
                    v.name,
                    v.description,
                    score,
                    score <= AGREE,
                    EPCurve(curve, score),
                    EP_CHECKS.get(v.kind) or CHECKS[v.kind],
                )
            )
        causes, verdict = rank_causes(design.score, causes)
        tied = [c.name for c in causes[1:] if c.score - causes[0].score <= TIE]
        if tied:
            verdict += f"; as close (the test's figures cannot tell them apart): {', '.join(tied)}"
    return EPExplanation(
        kernel=test.kernel,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        phases=names,
        measured_GBps=meas,
        design=design,
        agrees=agrees,
        faster=faster,
        verdict=verdict,
        causes=causes,
    )
