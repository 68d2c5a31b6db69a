"""The defects of a fabric as built, cable by cable, and the fabric each one leaves.

With the devices matched (:func:`topo.validate.match.match_fabric`), the dump's cables are
named as the design names their ends, and the two cable lists are compared:

- a design cable short of cables in the dump is ``missing`` (a bundle member when others of
  the bundle are there); a dump cable the design does not have is ``extra``; a missing cable
  and an extra one that share an end (a NIC on the wrong leaf, rail or plane; a leaf cabled to
  the wrong spine) are one ``miswired`` cable;
- a cable whose rate per cable (capacity over cables) is below the design's is ``speed``
  (a width or a lane rate trained lower);
- a design switch with no counterpart is ``missing_switch``, a design server none of whose
  NICs is in the dump ``missing_host``: their cables are not listed again.

:func:`as_built_fabric` is the design with its servers as designed and its cables as found;
:func:`with_defects` the design with some defects only (one, to cost it alone).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from topo.fabric import SWITCH_KINDS, natural_key, servers
from topo.units import Bps_to_GBps, Bps_to_gbps
from topo.validate.match import Match, host_label

DEFECT_KINDS = ("missing", "extra", "miswired", "speed", "missing_switch", "missing_host")
"""The kinds of defect, as ``topo validate`` names them."""

Key = tuple[str, str]
Cables = dict[Key, tuple[int, float]]  # (u, v) in natural order -> (cables, capacity B/s)


@dataclass(frozen=True)
class Defect:
    """One difference between the design and the fabric as built.

    Attributes
    ----------
    kind : str
        One of :data:`DEFECT_KINDS`.
    design_ends : tuple of str
        The cable's two ends as the design names them (one name for ``missing_switch`` and
        ``missing_host``; for ``extra``, the design names of the dump's ends where they have
        one).
    as_built_ends : tuple of str
        The same cable's ends as the dump names them (a ``miswired`` cable's ends where it
        is actually plugged; empty when a device is not in the dump).
    links : int
        Cables concerned.
    design_rate_Bps, as_built_rate_Bps : float
        Rate per cable, B/s per direction, in the design and as built (0: absent).
    alone_busbw_Bps : float or None
        The all-to-all bus bandwidth per GPU (B/s) of the design with this defect alone;
        None until costed.
    """

    kind: str
    design_ends: tuple[str, ...]
    as_built_ends: tuple[str, ...]
    links: int = 1
    design_rate_Bps: float = 0.0
    as_built_rate_Bps: float = 0.0
    alone_busbw_Bps: float | None = None
    design_key: Key | None = field(default=None, repr=False, compare=False)
    built_key: Key | None = field(default=None, repr=False, compare=False)

    def to_dict(self, design_busbw_Bps: float | None = None) -> dict[str, Any]:
        """JSON-ready: ``kind``, ``design_ends``, ``as_built_ends``, ``links``,
        ``design_Gbps`` and ``as_built_Gbps`` (per cable), ``alone_busbw_GBps`` and, given the
        design's bus bandwidth (B/s), ``cost_GBps`` (design minus alone)."""
        d: dict[str, Any] = {
            "kind": self.kind,
            "design_ends": list(self.design_ends),
            "as_built_ends": list(self.as_built_ends),
            "links": self.links,
            "design_Gbps": Bps_to_gbps(self.design_rate_Bps),
            "as_built_Gbps": Bps_to_gbps(self.as_built_rate_Bps),
            "alone_busbw_GBps": None
            if self.alone_busbw_Bps is None
            else Bps_to_GBps(self.alone_busbw_Bps),
        }
        if design_busbw_Bps is not None and self.alone_busbw_Bps is not None:
            d["cost_GBps"] = Bps_to_GBps(cost_Bps(design_busbw_Bps, self.alone_busbw_Bps))
        return d


def cost_Bps(design_Bps: float, damaged_Bps: float) -> float:
    """What a defect costs the all-to-all, B/s: ``design - damaged``, 0 within the LP's
    round-off (a relative 1e-9 of the design's rate)."""
    cost = design_Bps - damaged_Bps
    return 0.0 if abs(cost) <= 1e-9 * abs(design_Bps) else cost


def _key(u: str, v: str) -> Key:
    return (u, v) if natural_key(u) <= natural_key(v) else (v, u)


def network_cables(G: nx.Graph, rename: dict[str, str] | None = None) -> Cables:
    """The ``endpoint`` and ``fabric`` edges of ``G``, ends renamed by ``rename`` where it has
    them: ``(u, v)`` (natural order) -> (cables, capacity B/s)."""
    rename = rename or {}
    out: Cables = {}
    for u, v, d in G.edges(data=True):
        if d["kind"] in ("endpoint", "fabric"):
            key = _key(rename.get(u, u), rename.get(v, v))
            links, cap = out.get(key, (0, 0.0))
            out[key] = (links + int(d["links"]), cap + float(d["capacity"]))
    return out


def find_defects(design: nx.Graph, dump: nx.Graph, match: Match) -> list[Defect]:
    """Every defect of ``dump`` against ``design`` under ``match`` (module docstring).

    Parameters
    ----------
    design, dump : networkx.Graph
        The designed fabric and the fabric as imported.
    match : Match
        From :func:`topo.validate.match.match_fabric`.

    Returns
    -------
    list of Defect
        Missing switches and hosts first, then cable defects in natural order of their ends;
        not yet costed.
    """
    ours, theirs = network_cables(design), network_cables(dump, match.to_design)
    gone_switches = [
        v for v, k in design.nodes(data="kind") if k in SWITCH_KINDS and v not in match.to_dump
    ]
    gone_hosts = _missing_hosts(design, match)
    out = [
        Defect("missing_switch", (s,), (), links=0) for s in sorted(gone_switches, key=natural_key)
    ]
    out += [Defect("missing_host", (host_label(n),), (), links=0) for n in gone_hosts]
    covered = set(gone_switches) | {
        v for n in gone_hosts for v in servers(design)[n] if design.nodes[v]["kind"] == "nic"
    }
    missing, extra = [], []
    for key in sorted(
        set(ours) | set(theirs), key=lambda k: (natural_key(k[0]), natural_key(k[1]))
    ):
        (ld, cd), (lb, cb) = ours.get(key, (0, 0.0)), theirs.get(key, (0, 0.0))
        if covered & set(key) and lb == 0:
            continue
        if lb < ld:
            missing += [(key, cd / ld)] * (ld - lb)
        elif lb > ld:
            extra += [(key, cb / lb)] * (lb - ld)
        if ld and lb and cb / lb < (cd / ld) * (1 - 1e-9):
            out.append(_defect(match, "speed", key, key, min(ld, lb), cd / ld, cb / lb))
    nics = {v for v, k in design.nodes(data="kind") if k == "nic"}
    nics |= {match.to_design.get(v, v) for v, k in dump.nodes(data="kind") if k == "nic"}
    out += _pair(match, missing, extra, nics)
    return out


def _missing_hosts(design: nx.Graph, match: Match) -> list[Hashable]:
    gone = []
    for n, vs in servers(design).items():
        nics = [v for v in vs if design.nodes[v]["kind"] == "nic"]
        if nics and not any(v in match.to_dump for v in nics):
            gone.append(n)
    return gone


def _defect(
    match: Match,
    kind: str,
    design_key: Key | None,
    built_key: Key | None,
    links: int,
    design_rate: float,
    built_rate: float,
) -> Defect:
    def dump_name(v: str) -> str:
        return match.to_dump.get(v, v if v in match.to_design else "")

    ends = design_key or built_key or ("", "")
    built = tuple(dump_name(v) for v in (built_key or ends))
    return Defect(
        kind,
        tuple(ends),
        built if all(built) else tuple(b for b in built if b),
        links,
        design_rate,
        built_rate,
        design_key=design_key,
        built_key=built_key,
    )


def _pair(
    match: Match,
    missing: list[tuple[Key, float]],
    extra: list[tuple[Key, float]],
    nics: set[str],
) -> list[Defect]:
    """Missing and extra cables; a missing and an extra one sharing an end are one miswired
    cable: a NIC cable with a NIC cable sharing the NIC (NIC cables first), a switch cable
    with a switch cable sharing a switch."""

    def shared(a: Key, b: Key) -> bool:
        a_nic, b_nic = set(a) & nics, set(b) & nics
        if a_nic or b_nic:
            return bool(a_nic & b_nic)
        return bool(set(a) & set(b))

    out = []
    free = list(extra)
    for key, rate in sorted(missing, key=lambda m: not set(m[0]) & nics):
        partner = next((e for e in free if e[0] != key and shared(e[0], key)), None)
        if partner is None:
            out.append(_defect(match, "missing", key, None, 1, rate, 0.0))
            continue
        free.remove(partner)
        out.append(_defect(match, "miswired", key, partner[0], 1, rate, partner[1]))
    out += [_defect(match, "extra", None, key, 1, 0.0, rate) for key, rate in free]
    return _merge_bundles(out)


def _merge_bundles(defects: list[Defect]) -> list[Defect]:
    """Defects of the same kind on the same cable ends (members of one bundle) as one."""
    merged: dict[tuple[Any, ...], Defect] = {}
    for d in defects:
        k = (d.kind, d.design_key, d.built_key)
        if k in merged:
            m = merged[k]
            merged[k] = Defect(
                m.kind,
                m.design_ends,
                m.as_built_ends,
                m.links + d.links,
                m.design_rate_Bps,
                m.as_built_rate_Bps,
                design_key=m.design_key,
                built_key=m.built_key,
            )
        else:
            merged[k] = d
    return list(merged.values())


def as_built_fabric(design: nx.Graph, dump: nx.Graph, match: Match) -> nx.Graph:
    """The design's servers with the dump's cables (ends named as the design names them).

    Returns
    -------
    networkx.Graph
        A copy of ``design`` without its missing switches and with every NIC and switch cable
        replaced by the dump's; dump devices the design lacks keep their dump names and
        attributes.
    """
    gone = [v for v, k in design.nodes(data="kind") if k in SWITCH_KINDS and v not in match.to_dump]
    extra = {
        v: d
        for v, d in dump.nodes(data=True)
        if v not in match.to_design and d["kind"] in ("nic", *SWITCH_KINDS)
    }
    return _recable(design, network_cables(dump, match.to_design), gone, extra)


def with_defects(design: nx.Graph, defects: Iterable[Defect], dump: nx.Graph) -> nx.Graph:
    """The design with only ``defects`` applied (one, to cost it alone).

    Parameters
    ----------
    design : networkx.Graph
        The designed fabric.
    defects : iterable of Defect
        From :func:`find_defects`.
    dump : networkx.Graph
        The dump, for the attributes of devices the design lacks (an extra cable's far end).
    """
    cables = network_cables(design)
    gone: list[str] = []
    for d in defects:
        if d.kind == "missing_switch":
            gone.append(d.design_ends[0])
        elif d.kind == "missing_host":
            nics = {
                v
                for v in design
                if design.nodes[v]["kind"] == "nic"
                and host_label(design.nodes[v]["node"]) == d.design_ends[0]
            }
            cables = {k: c for k, c in cables.items() if not nics & set(k)}
        else:
            _apply_cable_defect(cables, d)
    extra = {v: dump.nodes[v] for k in cables for v in k if v not in design and v in dump}
    return _recable(design, cables, gone, extra)


def _apply_cable_defect(cables: Cables, d: Defect) -> None:
    if d.kind in ("missing", "miswired") and d.design_key in cables:
        links, cap = cables[d.design_key]
        if links <= d.links:
            del cables[d.design_key]
        else:
            cables[d.design_key] = (links - d.links, cap - d.links * d.design_rate_Bps)
    if d.kind in ("extra", "miswired") and d.built_key is not None:
        links, cap = cables.get(d.built_key, (0, 0.0))
        cables[d.built_key] = (links + d.links, cap + d.links * d.as_built_rate_Bps)
    if d.kind == "speed" and d.design_key in cables:
        links, cap = cables[d.design_key]
        cables[d.design_key] = (links, cap - d.links * (d.design_rate_Bps - d.as_built_rate_Bps))


def _recable(
    design: nx.Graph, cables: Cables, gone: list[str], extra: dict[str, dict[str, Any]]
) -> nx.Graph:
    H = design.copy()
    H.remove_edges_from(
        [(u, v) for u, v, k in design.edges(data="kind") if k in ("endpoint", "fabric")]
    )
    H.remove_nodes_from(gone)
    H.add_nodes_from((v, dict(d)) for v, d in extra.items() if v not in H)
    for (u, v), (links, cap) in cables.items():
        if u not in H or v not in H or links <= 0:
            continue
        nic = "nic" in (H.nodes[u]["kind"], H.nodes[v]["kind"])
        H.add_edge(u, v, capacity=cap, links=links, kind="endpoint" if nic else "fabric")
    return H
