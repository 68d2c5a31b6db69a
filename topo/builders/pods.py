"""Three switch tiers for the rail-optimised families: pods of leaves and spines, then cores.

The shape is that of NVIDIA's DGX SuperPOD reference architectures past eight scalable units
(DGX B200 SuperPOD, "DGX SuperPOD Architecture", table of 2 to 64 SUs: 16 SUs = 4,096 GPUs on
128 leaves, 128 spines and 64 cores of 64 ports): the leaves of one rail (MRFT) or of one plane
(MPFT) are cut into pods of at most ``k/2`` leaves; each pod has its own spines, which use
``k/2`` ports down and ``k/2`` up; spine ``i`` of every pod is joined to the cores of group ``i``.

Sizing, for ``L`` leaves of ``u`` up ports on one rail or plane (``k`` ports per switch):

- leaves per pod ``m = min(L, k/2)``, pods ``ceil(L/m)`` (the last one may hold fewer leaves);
- spines per pod ``s``: the smallest divisor of ``u`` with ``s*(k/2) >= m*u``; every leaf of the
  pod is joined to every spine of it by ``u/s`` cables;
- with ``P`` pods in all (over every rail of an MRFT; per plane in an MPFT) and ``P > 1``: ``s``
  core groups of ``c`` cores, ``c`` the smallest divisor of ``k/2`` with ``c*k >= P*k/2``; spine
  ``i`` of every pod is joined to each core of group ``i`` by ``(k/2)/c`` cables. ``P <= k``.

Full size with ``r = 1`` (``u = d = k/2``): ``k`` pods of ``k/2`` leaves and ``k/2`` spines,
``(k/2)^2`` cores: ``k^3/4`` endpoints and ``5k^2/4`` switches per plane, as the k-ary fat tree
(Al-Fares et al., SIGCOMM 2008).
"""

from __future__ import annotations

import networkx as nx

from topo.builders._common import add_switches, join, smallest_divisor
from topo.spec import FabricSpec

__all__ = ["add_pods", "max_pod_leaves", "pod_counts", "pod_sizes"]


def pod_sizes(leaves: int, spec: FabricSpec) -> tuple[int, int, int, int]:
    """Leaves per pod, pods, spines per pod and cables per leaf-spine pair for ``leaves`` leaves
    of one rail or plane.

    Parameters
    ----------
    leaves : int
        Leaves of the rail or plane (at least 1).
    spec : FabricSpec
        The switch (``k`` ports) and the leaf's up ports ``u``.

    Returns
    -------
    tuple of int
        ``(m, pods, s, u/s)`` as in the module docstring.
    """
    half = spec.switch.ports // 2
    per_pod = min(leaves, half)
    u = spec.up_ports
    spines = smallest_divisor(u, -(-per_pod * u // half))
    return per_pod, -(-leaves // per_pod), spines, u // spines


def pod_counts(endpoints: int, groups: int, spec: FabricSpec) -> tuple[int, int, int, int]:
    """Leaves, spines, cores and switch-to-switch cables of :func:`add_pods`, counted.

    Parameters
    ----------
    endpoints : int
        Endpoints per rail or plane.
    groups : int
        Rails sharing one core layer (MRFT: ``nics_per_node``; one MPFT plane: 1).
    spec : FabricSpec
        The switch and the leaf split.

    Returns
    -------
    tuple of int
        ``(leaves, spines, cores, cables)``: every leaf's ``u`` uplinks and, with more than one
        pod, every spine's ``k/2`` uplinks are cabled.
    """
    n_leaves = -(-endpoints // spec.down_ports)
    _, pods, n_spines, _ = pod_sizes(n_leaves, spec)
    all_pods = groups * pods
    leaves, spines = groups * n_leaves, all_pods * n_spines
    cables = leaves * spec.up_ports
    if all_pods == 1:
        return leaves, spines, 0, cables
    half = spec.switch.ports // 2
    group = smallest_divisor(half, -(-all_pods * half // spec.switch.ports))
    return leaves, spines, n_spines * group, cables + spines * half


def max_pod_leaves(spec: FabricSpec) -> int:
    """Leaves of the largest three-layer fabric of ``spec``'s switch: ``k`` pods of ``k/2``."""
    return spec.switch.ports * (spec.switch.ports // 2)


def add_pods(
    G: nx.Graph,
    groups: list[tuple[str, int]],
    endpoints: int,
    spec: FabricSpec,
    *,
    core_prefix: str = "",
    plane: int = 0,
) -> list[list[str]]:
    """Add the leaves, pod spines and cores of a three-layer rail or plane fabric.

    Parameters
    ----------
    G : networkx.Graph
        The fabric being built.
    groups : list of (str, int)
        One ``(prefix, rail)`` per rail (MRFT) or the one plane (MPFT): its leaves are
        ``{prefix}pod{q}/leaf{j}`` (``j`` counted over the whole rail, so endpoint ``e`` of the
        rail sits on leaf ``e // d``) and its spines ``{prefix}pod{q}/spine{i}``; ``rail`` is the
        leaves' ``rail`` attribute (-1 for a plane).
    endpoints : int
        Endpoints per rail or plane (servers: one NIC each).
    spec : FabricSpec
        The switch, the leaf split (``u``, ``d``).
    core_prefix : str
        Prefix of the core names ``{core_prefix}core{j}``.
    plane : int
        The ``plane`` attribute of every switch added.

    Returns
    -------
    list of list of str
        The leaves of each group, in order.
    """
    n_leaves = -(-endpoints // spec.down_ports)
    per_pod, pods, n_spines, cables = pod_sizes(n_leaves, spec)
    all_spines: list[list[str]] = []
    out: list[list[str]] = []
    for prefix, rail in groups:
        leaves: list[str] = []
        for q in range(pods):
            pod_leaves = [
                f"{prefix}pod{q}/leaf{j}"
                for j in range(q * per_pod, min(n_leaves, (q + 1) * per_pod))
            ]
            spines = [f"{prefix}pod{q}/spine{i}" for i in range(n_spines)]
            add_switches(G, pod_leaves, "leaf", spec, plane=plane, rail=rail)
            add_switches(G, spines, "spine", spec, plane=plane)
            join(G, pod_leaves, spines, cables, spec)
            leaves += pod_leaves
            all_spines.append(spines)
        out.append(leaves)
    if len(all_spines) > 1:
        half = spec.switch.ports // 2
        group = smallest_divisor(half, -(-len(all_spines) * half // spec.switch.ports))
        for i in range(n_spines):
            cores = [f"{core_prefix}core{i * group + m}" for m in range(group)]
            add_switches(G, cores, "core", spec, plane=plane)
            join(G, [spines[i] for spines in all_spines], cores, half // group, spec)
    return out
