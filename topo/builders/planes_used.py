"""The fabric the software drives: ``K`` of a fabric's ``P`` planes or rails.

Software often drives fewer planes than the hardware has: ``NCCL_IB_HCA`` may list a subset of
the NICs (NCCL ``docs``: ``NCCL_IB_HCA``, "list of IB HCAs to use"), and DeepEP V1 drove one
plane of a dual-plane ConnectX-8 (deepseek-ai/DeepEP PR #650 adds the second), halving its RDMA
bandwidth where the NIC binds. :func:`drive_planes` turns a fabric into the one such software
sees, so that every solver (all-to-all, collectives, MoE dispatch and combine) gives the exact
number for it with no special case: a plane or rail not driven is a set of cables that carry
nothing.
"""

from __future__ import annotations

from numbers import Integral

import networkx as nx

from topo.errors import SpecError, TopoError
from topo.fabric import SWITCH_KINDS, require_fabric

__all__ = ["drive_planes", "plane_count"]


def _lanes(G: nx.Graph) -> tuple[str, int]:
    """How the fabric's NICs split: ``("plane", P)`` when its switch graph has ``P > 1``
    planes, ``("rail", R)`` for one plane of ``R > 1`` rails (an MRFT), else ``("", 1)``."""
    planes = {int(d["plane"]) for _, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS}
    if len(planes) > 1:
        return "plane", max(planes) + 1
    rails = {
        int(d["rail"])
        for _, d in G.nodes(data=True)
        if d["kind"] in SWITCH_KINDS and int(d.get("rail", -1)) >= 0
    }
    if len(rails) > 1:
        return "rail", max(rails) + 1
    return "", 1


def plane_count(G: nx.Graph) -> int:
    """The planes (or, in a single-plane fabric, the rails) a fabric's NICs are spread over.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).

    Returns
    -------
    int
        ``P``: one more than the largest switch ``plane`` when there are several planes
        (MPFT, rail-only, HPN, multi-port NICs), else one more than the largest leaf ``rail``
        (MRFT), else 1.

    Examples
    --------
    >>> from topo.builders import build
    >>> plane_count(build("mpft", gpus=64)), plane_count(build("hpn", gpus=64))
    (8, 2)
    """
    return _lanes(G)[1]


def drive_planes(G: nx.Graph, k: int) -> nx.Graph:
    """The fabric as software that drives only planes (or rails) ``0 .. k-1`` sees it.

    Contract: with ``P`` = :func:`plane_count` planes, the result is a copy of ``G`` without
    the switches of planes ``>= k`` (and so without their NIC cables and switch links); in a
    single-plane fabric of ``P`` rails (MRFT) it is ``G`` without the rail leaves of rails
    ``>= k`` (the spines, shared by the rails, stay). GPUs, NVSwitches, NICs, NVLink and PCIe
    are kept: a NIC (or NIC port) of an undriven plane is left with its PCIe link and no cable,
    so its server reaches the fabric through the NICs that are driven, over NVLink (PXN) as
    NCCL and DeepEP do. ``G.graph`` is copied, with ``planes`` set to ``k`` when the planes
    were cut. ``k = P`` returns an unchanged copy. ``G`` is not modified.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with several planes or rails (:mod:`topo.fabric`).
    k : int
        Planes or rails driven, ``1 <= k <= P``: the first ``k`` (``NCCL_IB_HCA`` listing the
        NICs of planes ``0 .. k-1``; DeepEP V1 on a dual-plane ConnectX-8: ``k = 1``).

    Returns
    -------
    networkx.Graph
        The driven fabric, in the schema of :mod:`topo.fabric`; capacities in B/s per
        direction, as in ``G``.

    Raises
    ------
    SpecError
        (``.param`` ``planes_used``) ``k`` not a whole number, below 1 or above ``P``.
    TopoError
        ``G`` not a fabric, or a fabric of one plane and no rails (nothing to leave undriven).

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.fabric import summarize
    >>> summarize(drive_planes(build("mpft", gpus=64), 2)).switches
    2

    References
    ----------
    NCCL environment variables, ``NCCL_IB_HCA`` (NCCL 2.30 documentation);
    deepseek-ai/DeepEP pull request #650 (multi-plane ConnectX-8: V1 used one plane).
    """
    require_fabric(G)
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise SpecError(f"planes_used must be a whole number, got {k!r}", param="planes_used")
    lane, count = _lanes(G)
    if not lane:
        raise TopoError(
            f"planes_used: {G.graph.get('name', 'the fabric')} has one plane and no rails; "
            "there is nothing for the software to leave undriven",
            param="planes_used",
        )
    if not 1 <= k <= count:
        raise SpecError(
            f"planes_used must be from 1 to {count} (the {lane}s of this fabric), got {k}",
            param="planes_used",
        )
    if lane == "plane":
        drop = [v for v, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS and d["plane"] >= k]
    else:
        drop = [
            v for v, d in G.nodes(data=True) if d["kind"] == "leaf" and int(d.get("rail", -1)) >= k
        ]
    H = G.copy()
    H.remove_nodes_from(drop)
    if lane == "plane":
        H.graph["planes"] = k
    return H
