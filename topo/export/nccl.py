"""NCCL's view of a server: ``NCCL_IB_HCA`` with rail and plane ids, ``NCCL_CROSS_NIC``, and a
topology XML skeleton for ``NCCL_TOPO_FILE``.

NCCL does not detect the network's topology. From 2.30, ``NCCL_IB_HCA`` entries take the form
``<hca>[:<port>[:<rail>[:<plane>]]]`` (NCCL's ``docs/userguide/source/env.rst``; parsed by
``parseStringList`` in ``src/misc/utils.cc``), and each ``<net>`` of a topology XML may carry
``rail`` and ``plane`` attributes (``ncclTopoAddNet`` in ``src/graph/topo.cc``). NCCL never
pairs NICs of different planes, and with ``NCCL_CROSS_NIC=0`` keeps each ring or tree on NICs
of one rail (``ncclTopoSearchCheckNet`` in ``src/graph/search.cc``).

What the design gives each NIC (docs/export.md):

- **plane**: the switch component (plane) its leaf is in, 0 with one plane;
- **rail**: the leaf's rail in a multi-rail fat tree; in a multi-plane fabric the plane (NIC
  ``i`` of every server is on plane ``i``, one rail per plane); otherwise none (the field
  left empty, -1 to NCCL);
- **port**: 1 for a built NIC (one port per HCA), the CA port number for an imported one.

``NCCL_CROSS_NIC``: 0 where NICs of different rails or planes should not pair (several
planes, or rails), 1 where every NIC of a server sits on the same switches as any other (a
fat tree, Dragonfly, Slim Fly, an imported fabric whose hosts each hang off one leaf), 2
(NCCL's default, "same NIC if it can") for an imported fabric whose hosts span leaves.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

import networkx as nx

from topo.errors import SpecError
from topo.export.hostlist import hostlist_ranged
from topo.fabric import SWITCH_KINDS, natural_key, servers, switch_components

__all__ = [
    "DEFAULT_HCA_FORMAT",
    "NcclNic",
    "cross_nic",
    "nccl_env",
    "nccl_nics",
    "write_nccl_env",
    "write_topo_xml",
]


DEFAULT_HCA_FORMAT = "mlx5_{index}"
"""Device names of a built server: ``mlx5_0``, ``mlx5_1``, ... (Linux's names for ConnectX
HCAs, in PCI order)."""


@dataclass(frozen=True)
class NcclNic:
    """One HCA port of a server as NCCL should see it.

    Attributes
    ----------
    hca : str
        The device name (``mlx5_0``).
    port : int
        The HCA port (1-based).
    rail, plane : int or None
        NCCL 2.30's rail and plane ids (None: unassigned, -1 to NCCL).
    speed_Mbps : int
        The port's rate in Mb/s (NCCL's ``speed`` attribute unit).
    """

    hca: str
    port: int
    rail: int | None
    plane: int | None
    speed_Mbps: int

    def ib_hca(self) -> str:
        """This NIC's ``NCCL_IB_HCA`` entry, ``hca:port:rail:plane`` (empty for unassigned)."""
        rail = "" if self.rail is None else str(self.rail)
        plane = "" if self.plane is None else str(self.plane)
        return f"{self.hca}:{self.port}:{rail}:{plane}".rstrip(":")


@dataclass(frozen=True)
class _Context:
    servers: list[tuple[Hashable, list[str]]]
    plane_of: dict[str, int]
    cross_nic: int


def _context(G: nx.Graph) -> _Context:
    return _Context(
        list(servers(G).items()),
        {s: p for p, comp in enumerate(switch_components(G)) for s in comp},
        cross_nic(G),
    )


def _server(ctx: _Context, node: int | None) -> tuple[Hashable, list[str]]:
    srv = ctx.servers
    if node is None:
        return srv[0]
    if not 0 <= node < len(srv):
        raise SpecError(
            f"node must be a server position from 0 to {len(srv) - 1}, got {node}", param="node"
        )
    return srv[node]


def nccl_nics(
    G: nx.Graph,
    node: int | None = None,
    hca_format: str | None = None,
    context: _Context | None = None,
) -> list[NcclNic]:
    """The NICs of one server with their NCCL rail and plane ids (the rules of the module).

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    node : int, optional
        The server's position in ``topo.fabric.servers(G)`` (0-based); None: the first.
    hca_format : str, optional
        Device names, with the field ``{index}`` (the device's position in the server,
        0-based). None: an imported fabric's device names where its dump gives them
        (``<host> mlx5_4``), else :data:`DEFAULT_HCA_FORMAT`.
    context : optional
        Whole-fabric facts computed once (internal; None: computed here).

    Returns
    -------
    list of NcclNic
        In the server's NIC order; NICs not cabled to a switch are left out.

    Raises
    ------
    SpecError
        If ``node`` is out of range or ``hca_format`` has other fields.
    """
    ctx = context if context is not None else _context(G)
    _, members = _server(ctx, node)
    plane_of = ctx.plane_of
    multi_plane = len(set(plane_of.values())) > 1
    devices = _devices(G, [v for v in members if G.nodes[v]["kind"] == "nic"])
    keep = hca_format is None and all(name is not None for _, _, name, _ in devices)
    out = []
    for nic, index, name, port in devices:
        ups = [(w, d) for w, d in G.adj[nic].items() if G.nodes[w]["kind"] in SWITCH_KINDS]
        if not ups:
            continue
        leaf, edge = ups[0]
        plane = plane_of[leaf]
        rail_attr = int(G.nodes[leaf].get("rail", -1))
        rail = rail_attr if rail_attr >= 0 else (plane if multi_plane else None)
        hca = str(name) if keep else _hca(hca_format or DEFAULT_HCA_FORMAT, index)
        speed = round(float(edge["capacity"]) / int(edge["links"]) * 8 / 1e6)
        out.append(NcclNic(hca, port, rail, plane, speed))
    return out


_DEVICE = re.compile(r"^\S+\s+([A-Za-z]\w*_\d+)$")  # ibnetdiscover's "<host> mlx5_4"


def _devices(G: nx.Graph, nics: list[str]) -> list[tuple[str, int, str | None, int]]:
    """(NIC, device index, device name or None, port) in device, then port order.

    A built NIC is one single-port device (port 1). An imported NIC is a CA port: the ports
    of one CA (its GUID, else its vertex name without ``/p<port>``) are one device, named as
    the dump's node description names it (``<host> mlx5_4``) where it does.
    """
    if G.graph.get("family") != "ibnetdiscover":
        ordered = sorted(nics, key=lambda v: natural_key(G.nodes[v]["index"]))
        return [(v, i, None, 1) for i, v in enumerate(ordered)]
    info = []
    for v in nics:
        d = G.nodes[v]
        m = _DEVICE.match(str(d.get("description") or ""))
        ca = d.get("guid") or str(v).rsplit("/p", 1)[0]
        info.append((m.group(1) if m else None, str(ca), int(d["index"]), v))
    info.sort(key=lambda t: (natural_key(t[0] or t[1]), t[2]))
    cas = list(dict.fromkeys(t[1] for t in info))
    return [(v, cas.index(ca), name, port) for name, ca, port, v in info]


def _hca(hca_format: str, index: int) -> str:
    try:
        return hca_format.format(index=index)
    except (KeyError, IndexError, ValueError) as exc:
        raise SpecError(
            f"hca_format {hca_format!r}: not a pattern with the one field {{index}} ({exc})",
            param="hca_format",
        ) from None


def cross_nic(G: nx.Graph) -> int:
    """``NCCL_CROSS_NIC`` as the design implies it (NCCL's env.rst for the values).

    Parameters
    ----------
    G : networkx.Graph
        A fabric.

    Returns
    -------
    int
        0 with several planes or with rails (keep each ring or tree on its rail or plane); 2
        for an imported fabric whose hosts span leaves (NCCL's default, as the dump does not
        say which leaves are rails); else 1 (every NIC of a server reaches the same switches).
    """
    if len(switch_components(G)) > 1 or any(
        int(d.get("rail", -1)) >= 0 for _, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS
    ):
        return 0
    if G.graph.get("family") == "ibnetdiscover":
        for _, members in servers(G).items():
            leaves = {w for v in members for w in G.adj[v] if G.nodes[w]["kind"] in SWITCH_KINDS}
            if len(leaves) > 1:
                return 2
    return 1


def nccl_env(
    G: nx.Graph,
    node: int | None = None,
    hca_format: str | None = None,
    topo_file: str | None = None,
    context: _Context | None = None,
) -> dict[str, str]:
    """The NCCL environment of one server.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    node : int, optional
        The server's position (0-based); None: the first.
    hca_format : str, optional
        Device names, field ``{index}`` (None: as :func:`nccl_nics`).
    topo_file : str, optional
        A path for ``NCCL_TOPO_FILE`` (the skeleton of :func:`write_topo_xml`).
    context : optional
        Whole-fabric facts computed once (internal; None: computed here).

    Returns
    -------
    dict of str to str
        ``NCCL_IB_HCA`` (``=`` prefix: exact device names, as NCCL's docs advise),
        ``NCCL_CROSS_NIC`` and, with ``topo_file``, ``NCCL_TOPO_FILE``.
    """
    ctx = context if context is not None else _context(G)
    nics = nccl_nics(G, node, hca_format, ctx)
    if not nics:
        raise SpecError("the server has no NIC cabled to a switch: no NCCL_IB_HCA to write")
    env = {
        "NCCL_IB_HCA": "=" + ",".join(n.ib_hca() for n in nics),
        "NCCL_CROSS_NIC": str(ctx.cross_nic),
    }
    if topo_file is not None:
        env["NCCL_TOPO_FILE"] = topo_file
    return env


def write_nccl_env(
    G: nx.Graph,
    hosts: Sequence[str],
    node: int | None = None,
    hca_format: str | None = None,
    topo_file: str | None = None,
) -> str:
    """An environment file (``export NAME=value`` lines) for one server, or for all.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    hosts : sequence of str
        One host name per server (comments naming who each block is for).
    node : int, optional
        One server's position (0-based); None: every server, those with the same environment
        sharing one block headed by their hostlist.
    hca_format : str, optional
        Device names, field ``{index}`` (None: as :func:`nccl_nics`).
    topo_file : str, optional
        A path for ``NCCL_TOPO_FILE``.

    Returns
    -------
    str
        The file's text (``# <hostlist>`` then ``export NCCL_...=...`` lines per block).
    """
    ctx = _context(G)
    positions = range(len(hosts)) if node is None else [node]
    blocks: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for i in positions:
        env = nccl_env(G, i, hca_format, topo_file, ctx)
        blocks.setdefault(tuple(env.items()), []).append(hosts[i])
    lines = []
    for env_items, names in blocks.items():
        lines.append(f"# {hostlist_ranged(names)}")
        lines += [f"export {k}={v}" for k, v in env_items]
    return "\n".join(lines) + "\n"


def write_topo_xml(nics: Sequence[NcclNic], host: str) -> str:
    """A topology XML skeleton for ``NCCL_TOPO_FILE`` with each ``<net>``'s rail and plane.

    NCCL looks each ``<net>`` up by ``name`` wherever it is in the file and keeps the
    attributes it finds (``ncclTopoFillNet``, ``xmlInitAttrInt``), so the ``rail`` and
    ``plane`` written here survive its detection. The ``<nic>`` elements sit under one
    ``<cpu>`` as NCCL places NICs without a PCI path; to keep GPU-NIC affinity, move each into
    the ``<pci busid=...>`` of that HCA in the server's ``NCCL_TOPO_DUMP_FILE``.

    Parameters
    ----------
    nics : sequence of NcclNic
        The server's NICs (:func:`nccl_nics`).
    host : str
        The server's host name (a comment).

    Returns
    -------
    str
        The XML document.
    """
    lines = [
        '<system version="1">',
        f"  <!-- {host}: rail and plane ids from the design (topo export nccl) -->",
        '  <cpu numaid="0">',
    ]
    for dev, n in enumerate(nics):
        attrs = {"name": n.hca, "dev": dev, "speed": n.speed_Mbps, "port": n.port}
        if n.rail is not None:
            attrs["rail"] = n.rail
        if n.plane is not None:
            attrs["plane"] = n.plane
        text = " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items())
        lines += ["    <nic>", f"      <net {text}/>", "    </nic>"]
    lines += ["  </cpu>", "</system>"]
    return "\n".join(lines) + "\n"
