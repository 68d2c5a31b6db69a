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
- on a host, the port follows the HCA's device name (:func:`topo.formats.hca_names`: an
  imported CA keeps its dump's name, a built NIC is ``mlx5_<i>`` in NIC order): HCA
  ``mlx5_N`` is port ``N + 1``, the tool's default mapping, so a GB200 compute tray's
  ``mlx5_0, mlx5_1, mlx5_4, mlx5_5`` are ports 1, 2, 5, 6. Where the names do not give one
  port per NIC (a multi-port CA, whose ports share its name, or names such as ``HCA-2`` that
  are not Linux device names) the host's NICs are numbered 1, 2, ... in natural order of
  their names, then their ports.

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
from topo.formats.hca_names import LINUX_DEVICE, hca_names

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


def _host_ports(G: nx.Graph, nics: list[str], devices: dict[str, str]) -> dict[str, int]:
    """A host's NIC -> its port (1-based): ``mlx5_N`` is ``N + 1`` when every NIC has a Linux
    device name of its own; else 1, 2, ... in natural order of the names, then the ports."""
    names = [devices[v] for v in nics]
    if len(set(names)) == len(names) and all(LINUX_DEVICE.fullmatch(n) for n in names):
        return {v: int(n.rsplit("_", 1)[1]) + 1 for v, n in zip(nics, names, strict=True)}
    order = sorted(nics, key=lambda v: (natural_key(devices[v]), natural_key(G.nodes[v]["index"])))
    return {v: i + 1 for i, v in enumerate(order)}


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
    devices = hca_names(G)
    host_of: dict[str, tuple[str, int, int]] = {}
    for pos, ((_, members), name) in enumerate(zip(servers(G).items(), hosts, strict=True)):
        nics = [v for v in members if G.nodes[v]["kind"] == "nic"]
        for nic, port in _host_ports(G, nics, devices).items():
            host_of[nic] = (name, port, pos)
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
