"""The result of a bandwidth solve: rates, bottleneck links, how they were obtained."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class BottleneckLink:
    """One direction of a link whose capacity binds the all-to-all rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the binding flow.
    tier : str
        Where it sits, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``.
    capacity_GBps, load_GBps : float
        Capacity and load in that direction (GB/s, 1e9 B/s).
    """

    source: str
    target: str
    tier: str
    capacity_GBps: float
    load_GBps: float


@dataclass(frozen=True)
class BandwidthReport:
    """The all-to-all bandwidth of a fabric (see :func:`alltoall_bandwidth`).

    Rates are in GB/s (1e9 B/s). ``gpus`` counts the traffic terminals: GPUs, or host
    endpoints for imported fabrics without GPUs (``terminal`` says which).
    """

    fabric: str
    family: str
    terminal: str
    gpus: int
    nodes: int
    pair_rate_GBps: float
    alltoall_algbw_GBps: float
    alltoall_busbw_GBps: float
    internode_per_gpu_GBps: float
    internode_per_nic_GBps: float
    nic_line_rate_GBps: float
    nic_utilization: float
    intranode_per_gpu_GBps: float
    bottleneck_tiers: dict[str, int]
    bottleneck_links: list[BottleneckLink]
    method: str
    exact: bool
    reductions: list[str]
    lp_variables: int
    lp_constraints: int
    lp_build_seconds: float
    lp_solve_seconds: float
    solve_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    link_load: dict[tuple[str, str], float] | None = field(default=None, repr=False)
    """With ``link_loads=True``: load (B/s) of every NIC cable and switch link direction."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``extra`` merged in at the top level; ``link_load`` left out)."""
        d = asdict(replace(self, link_load=None))
        d.pop("link_load")
        d.update(d.pop("extra"))
        return d
