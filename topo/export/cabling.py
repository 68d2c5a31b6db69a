"""A cabling plan: one row per cable, with the ports each end uses.

Columns as NVIDIA's UFM Cable Validation Tool reads a point-to-point (P2P) plan: ``A-Node
Name, A-Type, A-Port, Z-Node Name, Z-Type, Z-Port`` (types ``Host`` and ``Switch``; a host
port ``n`` is its HCA ``n-1``, the tool's default mapping ``1 -> mlx5_0``), plus ``Cable`` and
``Length``. The A end is the lower one (a host, or the lower-tier switch).

Port assignment (docs/builders.md: a leaf's down ports, then its up ports):

- on a switch, cables to hosts and lower tiers take the low ports from 1, in natural order of
  the far end; cables to higher tiers take the high ports, ending at the switch's radix;
  cables between switches of one tier (Dragonfly, Slim Fly) follow the down ports, local
  (same group) before global;
- on a host, NIC ``i`` (in server order) is port ``i + 1``.

``Cable`` is the price book's class (``endpoint`` for a NIC-to-switch cable, ``optical`` for
switch-to-switch, topo/data/prices.toml). ``Length`` is a class, not metres: ``short``
(host to leaf), ``medium`` (leaf to spine; a Dragonfly group's local links), ``long`` (spine
to core; Dragonfly global links; every Slim Fly link).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from topo.errors import SpecError
from topo.fabric import SWITCH_KINDS, natural_key, servers

__all__ = ["CABLING_COLUMNS", "Cable", "cabling_plan", "write_cabling_csv"]

CABLING_COLUMNS = (
    "A-Node Name",
    "A-Type",
    "A-Port",
    "Z-Node Name",
    "Z-Type",
    "Z-Port",
    "Cable",
    "Length",
)
"""The CSV header: UFM Cable Validation's P2P columns, then cable class and length class."""


@dataclass(frozen=True)
class Cable:
    """One cable of the plan (a row of the CSV; ports 1-based)."""

    a_name: str
    a_type: str
    a_port: int
    z_name: str
    z_type: str
    z_port: int
    cable: str
    length: str

    def row(self) -> tuple[str | int, ...]:
        """The CSV row, in :data:`CABLING_COLUMNS` order."""
        return (
            self.a_name,
            self.a_type,
            self.a_port,
            self.z_name,
            self.z_type,
            self.z_port,
            self.cable,
            self.length,
        )


def _group(v: str) -> str:
    return str(v).split("/")[0] if "/" in str(v) else ""


def _length(G: nx.Graph, lo: str, hi: str) -> str:
    if G.nodes[lo]["kind"] == "nic":
        return "short"
    family = G.graph.get("family")
    t_lo, t_hi = int(G.nodes[lo]["tier"]), int(G.nodes[hi]["tier"])
    if family == "slimfly":
        return "long"
    if t_lo == t_hi:
        return "medium" if family == "dragonfly" and _group(lo) == _group(hi) else "long"
    return "medium" if t_lo == 1 else "long"


def _ends(G: nx.Graph, u: str, v: str) -> tuple[str, str]:
    """(lower end, upper end) of a cable."""

    def rank(x: str) -> tuple[int, tuple[object, ...]]:
        d = G.nodes[x]
        return (int(d["tier"]) if d["kind"] in SWITCH_KINDS else 0, natural_key(x))

    return (u, v) if rank(u) <= rank(v) else (v, u)


def _switch_ports(G: nx.Graph) -> dict[tuple[str, str], list[int]]:
    """(switch, far end) -> the switch ports of the cables between them."""
    ports: dict[tuple[str, str], list[int]] = {}
    for s, d in G.nodes(data=True):
        if d["kind"] not in SWITCH_KINDS:
            continue
        tier, radix = int(d["tier"]), int(d["ports"])
        down: list[tuple[tuple[int, tuple[object, ...]], str, int]] = []
        up: list[tuple[tuple[int, tuple[object, ...]], str, int]] = []
        for w, e in G.adj[s].items():
            wd = G.nodes[w]
            wt = int(wd["tier"]) if wd["kind"] in SWITCH_KINDS else 0
            rank = 0 if wt < tier else (1 if _group(w) == _group(s) else 2)  # hosts, local, global
            (up if wt > tier else down).append(((rank, natural_key(w)), w, int(e["links"])))
        used = sum(n for *_, n in down) + sum(n for *_, n in up)
        if used > radix:
            raise SpecError(f"switch {s} has {used} cables on {radix} ports: no plan fits it")
        port = 1
        for _, w, n in sorted(down, key=lambda t: t[0]):
            ports[(s, w)] = list(range(port, port + n))
            port += n
        port = radix - sum(n for *_, n in up) + 1
        for _, w, n in sorted(up, key=lambda t: t[0]):
            ports[(s, w)] = list(range(port, port + n))
            port += n
    return ports


def cabling_plan(G: nx.Graph, hosts: Sequence[str]) -> list[Cable]:
    """Every cable of a fabric with its two ends' ports (the rules of the module).

    Parameters
    ----------
    G : networkx.Graph
        A fabric; NVLink and PCIe edges inside a server are not cables of the plan.
    hosts : sequence of str
        One host name per server, in the order of ``topo.fabric.servers(G)``.

    Returns
    -------
    list of Cable
        Host cables first (by host, then NIC), then switch-to-switch cables (by lower end,
        then upper end); a multi-cable edge gives one row per cable. No switch port appears
        twice, and none above the switch's ``ports``.

    Raises
    ------
    SpecError
        If a switch has more cables than ports.
    """
    ports = _switch_ports(G)
    host_of: dict[str, tuple[str, int, int]] = {}
    for pos, ((_, members), name) in enumerate(zip(servers(G).items(), hosts, strict=True)):
        nics = [v for v in members if G.nodes[v]["kind"] == "nic"]
        for i, nic in enumerate(sorted(nics, key=lambda v: natural_key(G.nodes[v]["index"]))):
            host_of[nic] = (name, i + 1, pos)
    rows: list[tuple[tuple[object, ...], Cable]] = []
    for u, v, e in G.edges(data=True):
        if e["kind"] not in ("endpoint", "fabric"):
            continue
        lo, hi = _ends(G, u, v)
        z_ports = ports[(hi, lo)]
        length = _length(G, lo, hi)
        for k, z_port in enumerate(z_ports):
            if G.nodes[lo]["kind"] == "nic":
                name, a_port, pos = host_of[lo]
                a = (name, "Host", a_port)
                key: tuple[object, ...] = (0, pos, a_port, k)
                cable = "endpoint"
            else:
                a = (str(lo), "Switch", ports[(lo, hi)][k])
                key = (1, natural_key(lo), natural_key(hi), k)
                cable = "optical"
            rows.append((key, Cable(*a, str(hi), "Switch", z_port, cable, length)))
    rows.sort(key=lambda r: r[0])
    return [c for _, c in rows]


def write_cabling_csv(cables: Sequence[Cable]) -> str:
    """The plan as CSV text.

    Parameters
    ----------
    cables : sequence of Cable
        From :func:`cabling_plan`.

    Returns
    -------
    str
        The :data:`CABLING_COLUMNS` header, then one row per cable (``\\n`` line ends).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CABLING_COLUMNS)
    w.writerows(c.row() for c in cables)
    return buf.getvalue()
