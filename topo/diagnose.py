"""Why a measured expert-parallel kernel falls short: DeepEP's test output against the design.

:func:`explain_ep` predicts what DeepEP's test would print on the fabric as designed (the
kernel models of :mod:`topo.collective`'s sibling :mod:`topo.moe.kernels`: ``deepep-normal``
for ``test_internode.py``/``test_intranode.py``, ``deepep-ll`` for ``test_low_latency.py``),
then again under each fabric cause of :func:`topo.collective.explain.fabric_variants` (a NIC
down or at half rate on one server, every server driving half of its NICs or one, GPUDirect
RDMA absent), and scores each against the measurement as ``topo explain`` scores a collective:
the root mean square of ``log(predicted / measured bandwidth)`` over the phases the test
printed (dispatch FP8 and BF16, combine), in the bandwidth the test prints (DeepEP's RDMA
"bottleneck bandwidth" across servers, NVL in one). The design agrees when its score is at
most :data:`topo.collective.explain.AGREE` (about 15%).

The test's routing is DeepSeek-V3's shape (256 experts, top-8, hidden 7168, at most
``num_topk_groups`` nodes per token, as DeepEP's tests draw it), with the ``[config]`` line's
tokens per rank (4096 when not printed) and the SMs of the best configuration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.explain import AGREE, CHECKS, fabric_variants, percent_off, rank_causes
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.errors import TopoError
from topo.formats.deepep_log import DeepEPPhase, DeepEPTest
from topo.moe import default_config
from topo.moe.kernels import kernel_report
from topo.moe.timing import moe_report

DEFAULT_TOKENS = 4096
"""Tokens per rank of DeepEP's test_internode.py (``--num-tokens`` default)."""

LL_TOKENS = 128
"""Tokens per rank of DeepEP's test_low_latency.py (``--num-tokens`` default)."""


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


def _predict(G: nx.Graph, test: DeepEPTest, gpus: int, phases: list[DeepEPPhase]) -> list[float]:
    """DeepEP's printed bandwidth per phase, predicted on ``G``."""
    config = default_config()
    tokens = test.num_tokens or (LL_TOKENS if test.kernel == "low_latency" else DEFAULT_TOKENS)
    kernel = "deepep-ll" if test.kernel == "low_latency" else "deepep-normal"
    out: dict[str, Any] = {}
    for dtype in sorted({p.dtype for p in phases}):
        report = moe_report(
            G,
            config,
            ep=gpus,
            tokens_per_gpu=tokens,
            dispatch_dtype=dtype,
            node_limit=test.num_topk_groups,
            micro_batches=1,
        )
        sms = next((p.sms for p in phases if p.sms), None) if kernel == "deepep-normal" else None
        out[dtype] = kernel_report(report, kernel, sms)
    return [
        out[p.dtype].dispatch_GBps if p.phase == "dispatch" else out[sorted(out)[0]].combine_GBps
        for p in phases
    ]


def _score(pred: list[float], meas: list[float]) -> float:
    logs = [math.log(a / b) for a, b in zip(pred, meas, strict=True) if a > 0]
    if len(logs) < len(meas):
        return math.inf
    return float(math.sqrt(np.mean(np.square(logs))))


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
    design = EPCurve(d := _predict(G, test, gpus, phases), _score(d, meas))
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
        for v in fabric_variants(rates):
            try:
                curve = _predict(v.change(G, rates), test, gpus, phases)
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
                    CHECKS[v.kind],
                )
            )
        causes, verdict = rank_causes(design.score, causes)
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
