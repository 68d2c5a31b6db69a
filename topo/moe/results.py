"""What an MoE report holds: one phase, one scenario (with and without node-limited routing),
and the report of a model on a fabric, each a frozen dataclass whose ``to_dict()`` is what
``topo moe --json`` prints (times in µs there, seconds inside).

Computed by :func:`topo.moe.timing.moe_report` and :func:`topo.moe.timing.time_phase`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topo.moe.config import MoEConfig
from topo.moe.traffic import EPLayout
from topo.units import s_to_us

__all__ = ["MoEReport", "PhaseResult", "ScenarioResult"]


@dataclass(frozen=True)
class PhaseResult:
    """One phase (dispatch or combine of one micro-batch) on the fabric.

    Attributes
    ----------
    phase : str
        ``dispatch`` or ``combine``.
    bytes_per_copy : int
        Bytes of one token's activation in this phase (B).
    nvlink_bytes_sent, ib_bytes_sent : float
        Mean bytes a GPU of the EP group sends over NVLink hops and over the network (B).
    nvlink_bytes_max, ib_bytes_max : float
        The busiest GPU's larger of sent and received bytes (B).
    nvlink_s, ib_s, time_s : float
        NVLink time, network time, and the phase time ``max(ib_s, nvlink_s)`` (s).
    bottleneck : str
        ``NIC``, ``spine link``, ``core link``, ... or ``NVLink``.
    ib_bottleneck_tiers : dict of str to int
        Binding link directions per tier from the flow solver (or ``{"own NIC": 1}``).
    ib_method : str
        How the network time was solved (cut fabric at the hose bound, whole fabric, own NIC).
    nvlink_busiest_gpu : str or None
        The GPU whose NVLink binds.
    ib_matrix, nvlink_matrix : numpy.ndarray, shape (ep, ep)
        Bytes from rank ``i`` to rank ``j`` over network and NVLink hops (not in the JSON).
    """

    phase: str
    bytes_per_copy: int
    nvlink_bytes_sent: float
    nvlink_bytes_max: float
    ib_bytes_sent: float
    ib_bytes_max: float
    nvlink_s: float
    ib_s: float
    time_s: float
    bottleneck: str
    ib_bottleneck_tiers: dict[str, int]
    ib_method: str
    nvlink_busiest_gpu: str | None
    ib_matrix: np.ndarray = field(repr=False, compare=False)
    nvlink_matrix: np.ndarray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (times in µs; the matrices left out)."""
        return {
            "phase": self.phase,
            "bytes_per_copy": self.bytes_per_copy,
            "nvlink_bytes_per_gpu": self.nvlink_bytes_sent,
            "nvlink_bytes_max": self.nvlink_bytes_max,
            "ib_bytes_per_gpu": self.ib_bytes_sent,
            "ib_bytes_max": self.ib_bytes_max,
            "nvlink_us": s_to_us(self.nvlink_s),
            "ib_us": s_to_us(self.ib_s),
            "time_us": s_to_us(self.time_s),
            "bottleneck": self.bottleneck,
            "ib_bottleneck_tiers": self.ib_bottleneck_tiers,
            "ib_method": self.ib_method,
            "nvlink_busiest_gpu": self.nvlink_busiest_gpu,
        }


@dataclass(frozen=True)
class ScenarioResult:
    """Dispatch and combine of one MoE layer for one routing and one delivery scheme.

    Attributes
    ----------
    scheme : str
        ``deepep`` (one network copy per destination node, NVLink fan-out) or ``naive`` (one
        copy per expert).
    node_limit : int
        Nodes a token may reach (0 = unlimited).
    nodes_per_token : float
        Mean distinct nodes of a token's routed experts (its own node included).
    ib_copies_per_token : float
        Mean network copies a token's dispatch makes (shared copy included).
    dispatch, combine : PhaseResult
    layer_s, tpot_s, tokens_per_s : float
        ``micro_batches * (dispatch + combine)``; times the MoE layers; ``1 / tpot_s``.
    ib_bytes_per_gpu, nvlink_bytes_per_gpu : float
        Mean bytes a GPU sends per MoE layer (all micro-batches, dispatch and combine).
    """

    scheme: str
    node_limit: int
    nodes_per_token: float
    ib_copies_per_token: float
    dispatch: PhaseResult
    combine: PhaseResult
    layer_s: float
    tpot_s: float
    tokens_per_s: float
    ib_bytes_per_gpu: float
    nvlink_bytes_per_gpu: float

    @property
    def label(self) -> str:
        """E.g. ``deepep, M=4`` or ``naive, unlimited``."""
        return f"{self.scheme}, " + (f"M={self.node_limit}" if self.node_limit else "unlimited")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times in µs (phases, layer) and ms (TPOT)."""
        return {
            "scheme": self.scheme,
            "node_limit": self.node_limit,
            "nodes_per_token": self.nodes_per_token,
            "ib_copies_per_token": self.ib_copies_per_token,
            "dispatch_us": s_to_us(self.dispatch.time_s),
            "combine_us": s_to_us(self.combine.time_s),
            "layer_us": s_to_us(self.layer_s),
            "tpot_ms": self.tpot_s * 1e3,
            "tokens_per_s": self.tokens_per_s,
            "ib_bytes_per_gpu": self.ib_bytes_per_gpu,
            "nvlink_bytes_per_gpu": self.nvlink_bytes_per_gpu,
            "dispatch": self.dispatch.to_dict(),
            "combine": self.combine.to_dict(),
        }


@dataclass(frozen=True)
class MoEReport:
    """Expert-parallel traffic of an MoE model on a fabric (:func:`topo.moe.timing.moe_report`).

    ``scenarios[0]`` is the headline: DeepEP-style delivery with the node limit asked for; the
    others drop the limit and/or deliver naively, on the same random scores. ``node_limit`` is
    the limit asked for; ``node_limit_binds`` is False when it cannot bind (no more EP nodes
    than ``M``, or a fixed routing), and then only unlimited scenarios are computed.
    """

    model: MoEConfig
    fabric: str
    ep: int
    nodes: int
    gpus_per_node: int
    tokens_per_gpu: int
    micro_batches: int
    moe_layers: int
    dispatch_dtype: str
    combine_dtype: str
    dispatch_bytes_per_copy: int
    combine_bytes_per_copy: int
    shared: str
    routing: str
    seed: int | None
    node_limit: int
    node_limit_binds: bool
    scenarios: list[ScenarioResult]
    layout: EPLayout = field(repr=False, compare=False)
    routings: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    """Each token's routed experts, per node limit computed (0 = unlimited)."""

    @property
    def headline(self) -> ScenarioResult:
        return self.scenarios[0]

    def scenario(self, scheme: str, limited: bool) -> ScenarioResult | None:
        """The scenario of a scheme with (``limited``) or without the node limit, if computed."""
        for s in self.scenarios:
            if s.scheme == scheme and (s.node_limit > 0) == limited:
                return s
        return None

    def node_limit_saving(self) -> dict[str, float] | None:
        """What the node limit saves with DeepEP-style delivery (None without a limit)."""
        on, off = self.scenario("deepep", True), self.scenario("deepep", False)
        if on is None or off is None:
            return None
        return {
            "nodes_per_token_unlimited": off.nodes_per_token,
            "nodes_per_token_limited": on.nodes_per_token,
            "ib_bytes_per_gpu_unlimited": off.ib_bytes_per_gpu,
            "ib_bytes_per_gpu_limited": on.ib_bytes_per_gpu,
            "ib_bytes_saved_fraction": 1 - on.ib_bytes_per_gpu / off.ib_bytes_per_gpu
            if off.ib_bytes_per_gpu
            else 0.0,
            "layer_us_unlimited": s_to_us(off.layer_s),
            "layer_us_limited": s_to_us(on.layer_s),
            "layer_time_saved_fraction": 1 - on.layer_s / off.layer_s if off.layer_s else 0.0,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the headline's figures at the top level, then every scenario."""
        h = self.headline.to_dict()
        return {
            "dispatch_us": h["dispatch_us"],
            "combine_us": h["combine_us"],
            "layer_us": h["layer_us"],
            "tpot_ms": h["tpot_ms"],
            "tokens_per_s": h["tokens_per_s"],
            "ib_bytes_per_gpu": h["ib_bytes_per_gpu"],
            "nvlink_bytes_per_gpu": h["nvlink_bytes_per_gpu"],
            "nodes_per_token": h["nodes_per_token"],
            "ib_copies_per_token": h["ib_copies_per_token"],
            "dispatch_bottleneck": h["dispatch"]["bottleneck"],
            "combine_bottleneck": h["combine"]["bottleneck"],
            "scheme": h["scheme"],
            "node_limit": self.node_limit,
            "node_limit_binds": self.node_limit_binds,
            "node_limit_saving": self.node_limit_saving(),
            "model": self.model.to_dict(),
            "fabric": self.fabric,
            "ep": self.ep,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "tokens_per_gpu": self.tokens_per_gpu,
            "micro_batches": self.micro_batches,
            "moe_layers": self.moe_layers,
            "dispatch_dtype": self.dispatch_dtype,
            "combine_dtype": self.combine_dtype,
            "dispatch_bytes_per_copy": self.dispatch_bytes_per_copy,
            "combine_bytes_per_copy": self.combine_bytes_per_copy,
            "shared": self.shared,
            "routing": self.routing,
            "seed": self.seed,
            "scenarios": [s.to_dict() for s in self.scenarios],
        }
