"""All-to-all bandwidth of a fabric: maximum concurrent flow with exact reductions.

The question: every GPU (for imported fabrics, every host endpoint) sends to every other at the
same rate ``lambda`` at once; what is the largest ``lambda``? That is the maximum concurrent
multicommodity flow of the uniform all-to-all demand (:mod:`topo.flow.lp`). Flows may take any
path, split freely, and use NVLink inside their source and destination servers (PXN), but never
pass *through* a third server: servers do not forward other servers' traffic, as in real
fabrics.

Solving that LP as written (one commodity per GPU, every arc) is out of reach at 16,384 GPUs, so
:func:`alltoall_bandwidth` reduces it first. Each reduction is exact under a condition that is
checked on the fabric at hand, never assumed (proofs in ``docs/bandwidth.md``):

1. **Server contraction.** A server (GPUs, NVSwitch, NICs) becomes one vertex joined to the
   switches its NICs reach. This relaxes the problem, so it gives an upper bound; it is exact
   when the server's inside (NVLink, PCIe) can carry the contracted solution's traffic with
   every GPU splitting its traffic over the switches in the same proportions. That is checked
   afterwards by a small LP per distinct server load; if it fails, the general LP is solved.
2. **Plane decomposition.** When the switch graph falls into components (planes) that are
   copies of one another, with every server attached identically to each, a solution for one
   plane carrying ``1/P`` of every pair's demand is optimal for all ``P`` (average any
   solution over the plane permutations). Checked: an explicit isomorphism between the planes.
3. **Twin classes.** Servers with identical attachments and GPU counts are merged into one
   source and one sink vertex whose cables carry the class's summed capacity. Exact for a
   uniform demand when servers are not transit vertices (split every aggregated path evenly
   among the class's members).
4. **Class symmetry.** When a cyclic shift of the leaves (within each plane and rail) is an
   automorphism of the reduced network and permutes the classes in one cycle, one commodity
   suffices and each capacity row bounds an orbit of arcs (average any solution over the
   group). Checked: the shift is verified arc by arc; orbits are computed, not assumed.

References
----------
F. Shahrokhi and D. W. Matula, "The maximum concurrent flow problem", J. ACM 37(2), 1990.
nccl-tests ``doc/PERFORMANCE.md`` (algbw, busbw for alltoall).
"""

from __future__ import annotations

import networkx as nx

from topo.errors import TopoError
from topo.fabric import require_fabric
from topo.flow.concurrent import METHODS, uniform_flow
from topo.flow.lp import DEFAULT_MAX_VARIABLES, check_solver_limits
from topo.flow.result import BandwidthResult, BottleneckLink

__all__ = ["BandwidthResult", "BottleneckLink", "alltoall_bandwidth"]


def alltoall_bandwidth(
    G: nx.Graph,
    *,
    method: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """All-to-all bandwidth per GPU: the maximum concurrent flow of the uniform all-to-all.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`). Terminals are its GPUs or, when it has none
        (imported fabrics), its host endpoints (NIC ports cabled to a switch).
    method : {"auto", "general"}
        ``auto`` applies the exact reductions of this module, each checked, and falls back to
        the general LP when a check fails; ``general`` solves the LP as defined, one commodity
        per terminal (small fabrics only; the reference the reductions are tested against).
    max_variables : int
        Refuse LPs with more flow variables than this (memory guard).
    link_loads : bool
        Also return the load of every NIC cable and switch link direction at the optimum
        found (``result.link_load``, B/s; one optimum among possibly many).
    time_limit_s : float, optional
        HiGHS time limit (s) for the reduced LP; when reached, certified bounds are reported
        as for an LP over ``max_variables``.

    Returns
    -------
    BandwidthResult
        ``pair_rate_Bps`` is ``lambda``, the rate every ordered pair sends at (B/s);
        ``alltoall_busbw_Bps`` = ``lambda (n - 1)`` and ``alltoall_algbw_Bps`` =
        ``lambda n``, as nccl-tests' alltoall would print them (its size column counts the
        rank's whole buffer, n chunks, and its busbw factor is (n - 1)/n);
        ``internode_per_nic_Bps`` is the inter-server traffic each NIC carries on average,
        ``nic_line_rate_Bps`` the median NIC cable rate and ``nic_utilization`` their ratio;
        ``bottleneck_links`` are the link directions whose capacity rows have a positive shadow
        price in the dual solution HiGHS returns: a certificate of the bound, one of possibly
        several when the dual is degenerate (docs/bandwidth.md).

    Raises
    ------
    TopoError
        An unknown ``method``; ``G`` not a fabric (:func:`topo.fabric.require_fabric`).
    SpecError
        An edge of ``G`` without a finite capacity within
        :data:`topo.fabric.CAPACITY_RANGE_Bps` (``.param`` ``G``, naming the edge), or
        ``max_variables`` or ``time_limit_s`` out of range
        (:func:`topo.flow.lp.check_solver_limits`).
    InfeasibleError
        Fewer than two terminals, or terminals with no cable to any switch.
    SolverError
        HiGHS fails, or (``method="general"``) the LP is too large. With ``method="auto"``
        an LP over ``max_variables`` gives certified bounds instead (``method == "bounds"``,
        ``exact`` False, ``bounds`` holding the lower and upper pair rate and the gap;
        :mod:`topo.flow.bounds`).

    Examples
    --------
    >>> from topo.builders import build
    >>> r = alltoall_bandwidth(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> round(r.alltoall_busbw_Bps / 1e9, 3)     # NIC-bound: 2 x 50 / (2 x 30) x 31 GB/s
    51.667

    References
    ----------
    F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990 (maximum concurrent flow); nccl-tests
    ``doc/PERFORMANCE.md`` (busbw of alltoall).
    """
    require_fabric(G)
    check_solver_limits(max_variables, time_limit_s)
    if method not in METHODS:
        raise TopoError(f"method must be auto or general, got {method!r}", param="method")
    # (the demand over all terminals, not listed: fewer than two, or a server without a NIC
    # cabled to a switch, are refused in the fabric's own terms by check_terminals)
    return uniform_flow(G, None, method, max_variables, link_loads, time_limit_s)
