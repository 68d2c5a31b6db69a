"""The fabric comparison of the DeepSeek-V3 hardware report (Table 3), for any radix.

Each family at its full size for ``k``-port switches, counted by the closed forms:

- ``ft2``: ``k²/2`` endpoints, ``k + k/2`` switches, ``k²/2`` links (two-layer folded Clos);
- ``mpft``: ``nics_per_node`` planes of ``ft2``;
- ``ft3``: ``k³/4`` endpoints, ``5k²/4`` switches, ``k³/2`` links (Al-Fares et al. 2008);
- ``slimfly``: the largest ``q`` (prime power or not) with ``k' + ceil(k'/2) <= k``:
  ``2q²`` routers, ``2q²·ceil(k'/2)`` endpoints, ``q²·k'`` links (Besta and Hoefler 2014);
  ``q = 28`` for 64 ports, not a prime power (no MMS graph: formula only, flagged);
- ``dragonfly``: balanced ``a = 2p = 2h``, ``4p - 1 <= k``; ``a·h - 1`` groups as in Table 3
  (511 for 64 ports; the maximum is ``a·h + 1``), or ``dragonfly_groups``;
- ``rail-only``: ``nics_per_node`` rails, each a two-layer Clos of ``k²/2`` domains and no
  spine between rails (Wang, Ghobadi et al., HotI 2024): cable for cable an MPFT;
- ``hpn``: one Alibaba HPN pod (Qian et al., SIGCOMM 2024; :func:`topo.builders.hpn.hpn_counts`):
  ``(k - k/16) // nics_per_node`` segments of ``k`` hosts, endpoints are the NICs (each with
  two cables of ``link_gbps/2``, one per ToR); ``k`` a multiple of 32.

Links are switch-to-switch cables. Costs: :mod:`topo.cost.bom` with the price book.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from topo.builders.dragonfly import balanced, dragonfly_sizes
from topo.builders.hpn import HPN_PORTS, hpn_counts, hpn_sizes
from topo.builders.slimfly import slimfly_q, slimfly_sizes
from topo.cost.bom import CostReport, cables_from_counts, cost_from_counts
from topo.cost.prices import PriceBook, load_prices
from topo.errors import SpecError
from topo.spec import FabricSpec, ServerSpec, SwitchSpec, as_int

TABLE3_FAMILIES = ("ft2", "mpft", "ft3", "slimfly", "dragonfly")
"""Families of Table 3, in its order: what :func:`compare` compares when not told."""

COMPARE_FAMILIES = (*TABLE3_FAMILIES, "rail-only", "hpn")
"""Families :func:`compare` knows: Table 3's, then rail-only (``nics_per_node`` rails of a
two-layer Clos each, no spine between rails) and one HPN pod (dual-ToR, dual-plane)."""

BUILD_LIMIT = 100_000
"""Rows above this many endpoints are flagged as counted by the formulas only (too large to
build on a small machine, though topo's builders would make them)."""

TABLE3: dict[str, dict[str, float]] = {
    "ft2": {"endpoints": 2048, "switches": 96, "links": 2048, "cost_musd": 9, "per_ep_kusd": 4.39},
    "mpft": {
        "endpoints": 16384,
        "switches": 768,
        "links": 16384,
        "cost_musd": 72,
        "per_ep_kusd": 4.39,
    },
    "ft3": {
        "endpoints": 65536,
        "switches": 5120,
        "links": 131072,
        "cost_musd": 491,
        "per_ep_kusd": 7.5,
    },
    "slimfly": {
        "endpoints": 32928,
        "switches": 1568,
        "links": 32928,
        "cost_musd": 146,
        "per_ep_kusd": 4.4,
    },
    "dragonfly": {
        "endpoints": 261632,
        "switches": 16352,
        "links": 384272,
        "cost_musd": 1522,
        "per_ep_kusd": 5.8,
    },
}
"""W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3 (64-port 400G switches)."""


@dataclass(frozen=True)
class CompareRow:
    """One family of the comparison.

    Attributes
    ----------
    family : str
    endpoints, switches, links : int
        Closed-form counts (links: switch-to-switch cables).
    cost_usd, cost_per_endpoint_usd : float
        US dollars, with the price book.
    config : dict
        The family's parameters (planes, q, a, p, h, groups, ...).
    formula_only : bool
        True when the row cannot be built here: a Slim Fly of a ``q`` that is not a prime
        power (no MMS graph), or a fabric of more than :data:`BUILD_LIMIT` endpoints.
    note : str
        What the row assumes.
    report : dict or None
        Table 3's cells for this family (64-port switches only).
    bom : CostReport
    """

    family: str
    endpoints: int
    switches: int
    links: int
    cost_usd: float
    cost_per_endpoint_usd: float
    config: dict[str, Any]
    formula_only: bool
    note: str
    report: dict[str, float] | None
    bom: CostReport = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bom"] = self.bom.to_dict()
        return d


def family_counts(
    family: str,
    switch: SwitchSpec | None = None,
    *,
    nics_per_node: int = 8,
    dragonfly_groups: int | None = None,
) -> dict[str, Any]:
    """Closed-form counts of one family at full size (see the module docstring).

    Parameters
    ----------
    family : str
        From :data:`COMPARE_FAMILIES`.
    switch : SwitchSpec or None
        The switch (its radix counts); None: 64 ports.
    nics_per_node : int
        Planes of ``mpft``, rails of ``rail-only``, NICs of an HPN host.
    dragonfly_groups : int or None
        Dragonfly groups; None takes Table 3's ``a·h - 1``.

    Returns
    -------
    dict
        ``endpoints``, ``switches``, ``links``, ``local_links`` (Dragonfly links inside a group,
        else 0), ``config``, ``formula_only``, ``note``; ``hpn`` adds ``endpoint_cables``
        (two per NIC, of ``link_gbps/2``).

    Raises
    ------
    SpecError
        Unknown family; no Slim Fly fits the radix (below 8 ports); an HPN radix not a
        multiple of 32; ``nics_per_node`` below 1;
        Dragonfly groups out of range (1 to ``a·h + 1``).

    Examples
    --------
    >>> c = family_counts("slimfly")
    >>> c["config"]["q"], c["switches"], c["endpoints"], c["links"], c["formula_only"]
    (28, 1568, 32928, 32928, True)
    """
    k = (switch or SwitchSpec()).ports
    if as_int("nics_per_node", nics_per_node) < 1:
        raise SpecError(
            f"nics_per_node must be at least 1, got {nics_per_node}", param="nics_per_node"
        )
    if family in ("ft2", "mpft", "ft3", "rail-only"):
        return _clos_counts(family, k, nics_per_node)
    if family == "hpn":
        return _hpn_counts(switch or SwitchSpec(), nics_per_node)
    if family == "slimfly":
        return _slimfly_counts(k)
    if family == "dragonfly":
        try:
            return _dragonfly_counts(k, dragonfly_groups)
        except SpecError as exc:
            raise exc.renamed("groups", "dragonfly_groups") from None
    raise SpecError(
        f"unknown family {family!r} to compare; choose from {', '.join(COMPARE_FAMILIES)}",
        param="family",
        names=(),
    )


def _clos_counts(family: str, k: int, nics_per_node: int) -> dict[str, Any]:
    half = k // 2
    if family == "ft3":
        return dict(
            endpoints=k**3 // 4,
            switches=5 * k * k // 4,
            links=k**3 // 2,
            local_links=0,
            config={"planes": 1, "tiers": 3},
            formula_only=False,
            note="",
        )
    planes = nics_per_node if family in ("mpft", "rail-only") else 1
    return dict(
        endpoints=planes * k * half,
        switches=planes * (k + half),
        links=planes * k * half,
        local_links=0,
        config={"planes": planes, "tiers": 2},
        formula_only=False,
        note=""
        if planes == 1
        else f"{planes} rails of a two-layer Clos, no spine between rails"
        if family == "rail-only"
        else f"{planes} planes of a two-layer fat tree",
    )


def _hpn_counts(switch: SwitchSpec, nics_per_node: int) -> dict[str, Any]:
    spec = FabricSpec("hpn", switch, ServerSpec(gpus=nics_per_node, nics=nics_per_node))
    hosts, _, segments = hpn_sizes(spec)
    tors, aggs, links, ports = hpn_counts(hosts * segments, spec)
    return dict(
        endpoints=ports // HPN_PORTS,
        switches=tors + aggs,
        links=links,
        local_links=0,
        config={"planes": HPN_PORTS, "tiers": 2, "segments": segments},
        formula_only=False,
        note=f"one pod of {segments} segments; every NIC as 2 ports of half its rate, one per ToR",
        endpoint_cables=ports,
    )


def _slimfly_counts(k: int) -> dict[str, Any]:
    q = slimfly_q(k, constructible=False)
    s = slimfly_sizes(q)
    note = ""
    if not s.constructible:
        qc = slimfly_q(k)
        c = slimfly_sizes(qc)
        note = (
            f"q = {q} is not a prime power (no MMS graph): counts from the formulas; the "
            f"nearest constructible q = {qc} builds {c.routers:,} routers, "
            f"{c.endpoints:,} endpoints, {c.links:,} links"
        )
    return dict(
        endpoints=s.endpoints,
        switches=s.routers,
        links=s.links,
        local_links=0,
        config={
            "q": q,
            "network_radix": s.network_radix,
            "endpoints_per_router": s.endpoints_per_router,
        },
        formula_only=not s.constructible,
        note=note,
    )


def _dragonfly_counts(k: int, dragonfly_groups: int | None) -> dict[str, Any]:
    a, p, h = balanced(k)
    g = a * h - 1 if dragonfly_groups is None else dragonfly_groups
    d = dragonfly_sizes(a, p, h, g)
    note = (
        f"{g:,} groups: a*h - 1, Table 3's rule (511 groups at 64 ports); a maximal Dragonfly "
        f"has a*h + 1 = {a * h + 1:,}"
        if dragonfly_groups is None
        else f"{g:,} groups (at most a*h + 1 = {a * h + 1:,})"
    )
    too_large = d.endpoints > BUILD_LIMIT
    return dict(
        endpoints=d.endpoints,
        switches=d.routers,
        links=d.links,
        local_links=d.local_links,
        config={
            "routers_per_group": a,
            "endpoints_per_router": p,
            "global_ports": h,
            "groups": g,
        },
        formula_only=too_large,
        note=note + ("; counted by the formulas (too large to build here)" if too_large else ""),
    )


def compare(
    families: tuple[str, ...] | list[str] = TABLE3_FAMILIES,
    switch: SwitchSpec | None = None,
    *,
    nics_per_node: int = 8,
    prices: PriceBook | None = None,
    dragonfly_groups: int | None = None,
) -> list[CompareRow]:
    """Table 3 of the DeepSeek-V3 hardware report for ``switch_ports``-port switches.

    Parameters
    ----------
    families : sequence of str
        From :data:`COMPARE_FAMILIES` (default: Table 3's, :data:`TABLE3_FAMILIES`).
    switch : SwitchSpec or None
        Radix and port and cable speed (Gb/s; the price book must list it); None: 64 ports
        of 400 Gb/s.
    nics_per_node : int
        Planes of ``mpft``, rails of ``rail-only``, NICs of an HPN host.
    prices : PriceBook or None
        None reads the default price book.
    dragonfly_groups : int or None
        Dragonfly groups; None takes Table 3's ``a·h - 1``.

    Returns
    -------
    list of CompareRow
        In the order asked.

    Raises
    ------
    SpecError
        Unknown family; bad radix; a switch or cable the price book lacks.

    Examples
    --------
    >>> rows = compare()
    >>> [round(r.cost_usd / 1e6) for r in rows]          # Table 3: 9, 72, 491, 146, 1522
    [9, 72, 487, 145, 1530]

    References
    ----------
    W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3. M. Besta and T. Hoefler,
    "Slim Fly", SC14. J. Kim et al., "Technology-Driven, Highly-Scalable Dragonfly Topology",
    ISCA 2008. M. Al-Fares et al., SIGCOMM 2008.
    """
    prices = prices or load_prices()
    switch = switch or SwitchSpec()
    switch_ports, link_gbps = switch.ports, switch.link_gbps
    rows = []
    for family in families:
        c = family_counts(
            family,
            switch,
            nics_per_node=nics_per_node,
            dragonfly_groups=dragonfly_groups,
        )
        cables = cables_from_counts(c["links"], c["local_links"], c["endpoints"], link_gbps, prices)
        if "endpoint_cables" in c:  # HPN: two cables of half the rate per NIC
            del cables[("endpoint", link_gbps)]
            cables[("endpoint", link_gbps / HPN_PORTS)] = c.pop("endpoint_cables")
        bom = cost_from_counts(
            family=family,
            name=f"{family}-{c['endpoints']}",
            endpoints=c["endpoints"],
            switches={(switch_ports, link_gbps): c["switches"]},
            cables=cables,
            prices=prices,
        )
        # Table 3's column applies to its own configuration only.
        as_table3 = (
            switch_ports == 64
            and (family != "mpft" or nics_per_node == 8)
            and (family != "dragonfly" or dragonfly_groups in (None, 511))
        )
        rows.append(
            CompareRow(
                family=family,
                endpoints=c["endpoints"],
                switches=c["switches"],
                links=c["links"],
                cost_usd=bom.cost_usd,
                cost_per_endpoint_usd=bom.cost_per_endpoint_usd,
                config=c["config"],
                formula_only=c["formula_only"],
                note=c["note"],
                report=TABLE3.get(family) if as_table3 else None,
                bom=bom,
            )
        )
    return rows
