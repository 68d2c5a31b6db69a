"""Bill of materials and cost of a fabric, from its graph or from counts.

The model (``docs/cost.md``): cost = Σ switches × switch price (by radix and speed) + Σ cables
× cable price (by class and speed), with the classes

- ``endpoint``: a NIC-to-switch cable;
- ``electrical``: a switch-to-switch cable inside a rack (only Dragonfly local links, and only
  with ``[layout] electrical_within_group = true``: a group is one rack, Kim et al. 2008 §4);
- ``optical``: every other switch-to-switch cable (between racks, with transceivers).

Power (W) is summed the same way when the price book gives ``watts`` for every item used.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from topo.cost.prices import PriceBook, load_prices
from topo.errors import SpecError
from topo.fabric import SWITCH_KINDS, summarize
from topo.units import Bps_to_gbps


@dataclass(frozen=True)
class BomLine:
    """One line of a bill of materials.

    Attributes
    ----------
    item : str
        E.g. ``switch 64x400G``, ``optical cable 400G``.
    kind : str
        ``switch`` or a cable class.
    quantity : int
    unit_usd, total_usd : float
        US dollars.
    watts : float or None
        Total power of the line, W (None when the price book gives none).
    source : str
        Where the unit price comes from.
    """

    item: str
    kind: str
    quantity: int
    unit_usd: float
    total_usd: float
    watts: float | None
    source: str


@dataclass(frozen=True)
class CostReport:
    """Bill of materials and totals of one fabric.

    Attributes
    ----------
    family, name : str
    endpoints, switches, links, endpoint_links : int
        As :func:`topo.fabric.summarize` counts them (``links``: switch-to-switch cables).
    lines : list of BomLine
    cost_usd, cost_per_endpoint_usd : float
        US dollars.
    watts : float or None
        Total power, W, when every line has one.
    prices : str
        The price book used.
    """

    family: str
    name: str
    endpoints: int
    switches: int
    links: int
    endpoint_links: int
    lines: list[BomLine]
    cost_usd: float
    cost_per_endpoint_usd: float
    watts: float | None
    prices: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``extra`` merged at the top level."""
        d = asdict(self)
        d.update(d.pop("extra"))
        return d


def _gbps(capacity_Bps: float, links: int) -> float:
    return round(Bps_to_gbps(capacity_Bps / links), 6)


def cable_class(G: nx.Graph, u: Any, v: Any, prices: PriceBook) -> str:
    """Class of the cables of edge ``u``-``v``: ``endpoint``, ``electrical`` or ``optical``.

    Electrical only for a Dragonfly local link (both routers ``g{i}/...`` of one group) when
    the price book's layout puts a group in one rack.
    """
    d = G.edges[u, v]
    if d["kind"] != "fabric":
        return "endpoint"
    if (
        prices.electrical_within_group
        and G.graph.get("family") == "dragonfly"
        and str(u).split("/")[0] == str(v).split("/")[0]
    ):
        return "electrical"
    return "optical"


def bill_of_materials(G: nx.Graph, prices: PriceBook | None = None) -> CostReport:
    """Price every switch and cable of fabric ``G``.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema of :mod:`topo.fabric`): built or imported.
    prices : PriceBook or None
        None reads the default price book.

    Returns
    -------
    CostReport
        One line per switch model (radix, speed) and per cable class and speed; totals in US
        dollars. Switch speed is the fastest cable at the switch (the edges' capacity per
        cable, as the solvers read them; the graph's ``link_gbps`` only for a switch without
        cables); cable speed is the edge's capacity per cable. An endpoint is a NIC port
        cabled to the fabric; where the fabric has GPUs, ``extra`` holds ``gpus`` and
        ``cost_per_gpu_usd`` (JSON keys of ``topo cost``), which differ from the endpoints'
        with multi-plane NICs or several NICs a GPU.

    Raises
    ------
    SpecError
        If the price book lacks a switch or cable the fabric uses, or the graph's
        ``link_gbps`` contradicts a switch's cables (``param="link_gbps"``).

    Examples
    --------
    >>> from topo.builders import build
    >>> r = bill_of_materials(build("ft2"))
    >>> r.switches, r.links, r.cost_usd        # 96 x 44,500 + 2,048 x (1,680 + 600)
    (96, 2048, 8941440.0)

    References
    ----------
    M. Besta and T. Hoefler, "Slim Fly", SC14, §V (cost model: switches by radix, cables by
    class); W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3.
    """
    prices = prices or load_prices()
    s = summarize(G)
    speed = G.graph.get("link_gbps")
    switches: Counter[tuple[int, float]] = Counter()
    for v, d in G.nodes(data=True):
        if d["kind"] not in SWITCH_KINDS:
            continue
        rates = [_gbps(e["capacity"], e["links"]) for _, _, e in G.edges(v, data=True)]
        if not rates:
            gbps = float(speed) if speed is not None else 0.0
        else:
            gbps = max(rates)
            if speed is not None and not math.isclose(gbps, float(speed), rel_tol=1e-6):
                raise SpecError(
                    f"graph attribute link_gbps {float(speed):g} contradicts the edges: the "
                    f"fastest cable at switch {v} is {gbps:g} Gb/s (capacity / links); the "
                    "bill prices the edges: make link_gbps agree, or leave it out",
                    param="link_gbps",
                    names=(),
                )
        ports = int(d.get("ports") or G.degree(v))
        switches[(ports, gbps)] += 1
    cables: Counter[tuple[str, float]] = Counter()
    for u, v, d in G.edges(data=True):
        if d["kind"] in ("fabric", "endpoint"):
            cables[(cable_class(G, u, v, prices), _gbps(d["capacity"], d["links"]))] += d["links"]
    bom = cost_from_counts(
        family=s.family,
        name=str(G.graph.get("name", s.family)),
        endpoints=s.endpoints,
        switches=dict(switches),
        cables=dict(cables),
        prices=prices,
    )
    if s.gpus:
        # an endpoint is a NIC port cabled to the fabric; with multi-plane NICs (or several
        # NICs a GPU) there are more of them than GPUs, so the cost per GPU is given beside it
        bom.extra.update(gpus=s.gpus, cost_per_gpu_usd=bom.cost_usd / s.gpus)
    return bom


def cables_from_counts(
    links: int, local_links: int, endpoints: int, gbps: float, prices: PriceBook
) -> dict[tuple[str, float], int]:
    """Cables by ``(class, Gb/s)`` of a fabric counted, not built, as :func:`cable_class` would
    class them: ``links`` switch-to-switch cables, of which the ``local_links`` (Dragonfly links
    inside a group) are electrical when the price book's layout says so, the rest optical;
    one endpoint cable per endpoint. Classes with no cable are left out (endpoint stays)."""
    electrical = local_links if prices.electrical_within_group else 0
    cables: dict[tuple[str, float], int] = {}
    if links - electrical:
        cables[("optical", gbps)] = links - electrical
    if electrical:
        cables[("electrical", gbps)] = electrical
    cables[("endpoint", gbps)] = endpoints
    return cables


def cost_from_counts(
    *,
    family: str,
    name: str,
    endpoints: int,
    switches: dict[tuple[int, float], int],
    cables: dict[tuple[str, float], int],
    prices: PriceBook | None = None,
    extra: dict[str, Any] | None = None,
) -> CostReport:
    """Bill of materials from counts: ``switches[(ports, gbps)]``, ``cables[(class, gbps)]``.

    Parameters
    ----------
    family, name : str
        Labels of the report.
    endpoints : int
        Endpoints the cost is spread over.
    switches : dict
        Switch count by ``(ports, Gb/s)``.
    cables : dict
        Cable count by ``(class, Gb/s)`` (:func:`cables_from_counts` makes one).
    prices : PriceBook or None
        None reads the default price book.
    extra : dict or None
        Keys merged into :meth:`CostReport.to_dict`.

    Returns
    -------
    CostReport
        Totals in US dollars, power in W.

    Raises
    ------
    SpecError
        If the price book lacks an item, or the fabric has no endpoint (cost per endpoint).
    """
    prices = prices or load_prices()
    lines = []
    for (ports, gbps), n in sorted(switches.items()):
        it = prices.switch(ports, gbps)
        lines.append(
            _line(f"switch {ports}x{gbps:g}G", "switch", n, it.price_usd, it.watts, it.source)
        )
    order = {c: i for i, c in enumerate(("optical", "electrical", "endpoint"))}
    for (kind, gbps), n in sorted(cables.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        it = prices.cable(kind, gbps)
        lines.append(_line(f"{kind} cable {gbps:g}G", kind, n, it.price_usd, it.watts, it.source))
    total = sum(x.total_usd for x in lines)
    if endpoints < 1:
        raise SpecError(f"{name}: no endpoint to spread the cost over")
    watts = None if any(x.watts is None for x in lines) else sum(x.watts or 0.0 for x in lines)
    return CostReport(
        family=family,
        name=name,
        endpoints=endpoints,
        switches=sum(switches.values()),
        links=sum(n for (k, _), n in cables.items() if k != "endpoint"),
        endpoint_links=sum(n for (k, _), n in cables.items() if k == "endpoint"),
        lines=lines,
        cost_usd=total,
        cost_per_endpoint_usd=total / endpoints,
        watts=watts,
        prices=prices.path,
        extra=dict(extra or {}),
    )


def _line(item: str, kind: str, n: int, unit: float, watts: float | None, source: str) -> BomLine:
    return BomLine(
        item=item,
        kind=kind,
        quantity=int(n),
        unit_usd=unit,
        total_usd=unit * n,
        watts=None if watts is None else watts * n,
        source=source,
    )
