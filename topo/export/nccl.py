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

An HPN host's NIC (family ``hpn``: two 200G ports, one on each of two non-stacked ToRs and
planes) is one HCA, not two: HPN bonds the two ports by LACP towards the two ToRs (Qian et al.,
SIGCOMM 2024, non-stacked dual-ToR: the ToRs run a modified LACP without a stacking link
between them), and a ConnectX in RoCE LAG mode (bond mode 1, 2 or 4 over its two ports) shows
one RDMA device for both ports, ``mlx5_bond_<n>``, port 1 (NVIDIA, "HowTo Configure RoCE over
LAG", and the kernel's ``net/mlx5: Implement RoCE LAG feature``: "during LAG, only one IB
device is present for both ports"). So NCCL sees one HCA per NIC (:data:`BOND_HCA_FORMAT`), at
the sum of its cabled ports' rates, on the NIC's rail and on no one plane (the bond spans
both).

``NCCL_CROSS_NIC``: 0 where NICs of different rails or planes should not pair (several
planes, or rails), 1 where every NIC of a server sits on the same switches as any other (a
fat tree, Dragonfly, Slim Fly, an imported fabric whose hosts each hang off one leaf), 2
(NCCL's default, "same NIC if it can") for an imported fabric whose hosts span leaves.
"""

from __future__ import annotations

import string
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

import networkx as nx

from topo.errors import SpecError
from topo.export.hostlist import hostlist_ranged
from topo.export.patterns import check_name_pattern
from topo.fabric import SWITCH_KINDS, named_servers, natural_key, servers, switch_components
from topo.formats.hca_names import DEFAULT_HCA_FORMAT, LINUX_DEVICE, host_devices
from topo.wording import shown

__all__ = [
    "BOND_HCA_FORMAT",
    "DEFAULT_HCA_FORMAT",
    "HCA_NAME_MAX",
    "HCA_RESERVED",
    "LINUX_DEVICE",
    "NcclNic",
    "check_hca_format",
    "cross_nic",
    "nccl_env",
    "nccl_naming_notes",
    "nccl_nics",
    "write_nccl_env",
    "write_topo_xml",
]


HCA_RESERVED = ",:=^"
"""Characters ``NCCL_IB_HCA``'s syntax reserves, which no device name may hold: ``,`` between
entries, ``:`` between an entry's fields, a leading ``^`` (exclude) or ``=`` (exact names)
(``parseStringList`` in NCCL's ``src/misc/utils.cc``, ``ncclIbInitDevices`` in
``src/transport/net_ib/init.cc``); whitespace is reserved too (the shell splits the
``export`` line on it)."""

HCA_NAME_MAX = 63
"""The longest device name NCCL keeps whole: ``struct netIf``'s ``prefix[64]`` with its NUL
(``src/include/utils.h``), as Linux's ``IBV_SYSFS_NAME_MAX`` (64)."""


BOND_HCA_FORMAT = "mlx5_bond_{index}"
"""The RDMA device of a ConnectX whose two ports are bonded (RoCE LAG): ``mlx5_bond_0``, ...
(NVIDIA, "HowTo Configure RoCE over LAG (ConnectX-4)": "only one IB device will be present for
both ports with 'bond' appended to its name (for example mlx5_bond_0)"); an HPN host's NICs."""

BONDED_FAMILIES = ("hpn",)
"""Families whose NIC ports (``node{n}/nic{j}/port{p}``) are one bonded HCA to NCCL."""


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
    if not srv:
        raise SpecError("the fabric has no servers: no NCCL environment to write")
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
        In the server's NIC order; NICs not cabled to a switch are left out. An HPN NIC
        (family ``hpn``) is one bonded HCA (module docstring): its ports' vertices
        ``node{n}/nic{j}/port{p}`` make one entry, named by ``hca_format`` (None:
        :data:`BOND_HCA_FORMAT`) with the NIC's position ``j``, port 1, the ToRs' rail, no
        plane, and the rate of its cabled ports summed (a NIC with one ToR lost: half).

    Raises
    ------
    SpecError
        If ``node`` is out of range, ``hca_format`` is not a pattern NCCL can read
        (:func:`check_hca_format`), or, without ``hca_format``, the dump names the server's
        HCAs otherwise than Linux does (``HCA-5``: their Linux names are unknown).
    """
    if hca_format is not None:
        check_hca_format(hca_format)
    ctx = context if context is not None else _context(G)
    server, members = _server(ctx, node)
    nics = [v for v in members if G.nodes[v]["kind"] == "nic"]
    if G.graph.get("family") in BONDED_FAMILIES:
        return _bonded_nics(G, nics, hca_format or BOND_HCA_FORMAT)
    devices, foreign = host_devices(G, str(server), nics)
    if foreign and hca_format is None:
        raise SpecError(_foreign_message(str(server), foreign), param="hca_format")
    keep = hca_format is None and all(name is not None for _, _, name, _ in devices)
    plane_of = ctx.plane_of
    multi_plane = len(set(plane_of.values())) > 1
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


def _bonded_nics(G: nx.Graph, ports: Sequence[str], hca_format: str) -> list[NcclNic]:
    """One HCA per NIC of a host whose NICs' ports are bonded (RoCE LAG), in NIC order."""
    by_nic: dict[str, list[str]] = {}
    for v in sorted(ports, key=lambda v: natural_key(G.nodes[v]["index"])):
        by_nic.setdefault(str(v).rsplit("/port", 1)[0], []).append(v)
    out = []
    for index, members in enumerate(by_nic.values()):
        ups = [
            (w, d)
            for v in members
            for w, d in G.adj[v].items()
            if G.nodes[w]["kind"] in SWITCH_KINDS
        ]
        if not ups:
            continue
        rails = {int(G.nodes[w].get("rail", -1)) for w, _ in ups}
        rail = rails.pop() if len(rails) == 1 else -1
        speed = round(sum(float(d["capacity"]) / int(d["links"]) for _, d in ups) * 8 / 1e6)
        out.append(NcclNic(_hca(hca_format, index), 1, rail if rail >= 0 else None, None, speed))
    return out


def _foreign_message(hosts: str, foreign: Sequence[str]) -> str:
    return (
        f"{hosts}: the dump names the HCAs {','.join(foreign)}, not Linux device names "
        "(mlx5_4) as NCCL_IB_HCA matches them, and their Linux names cannot be told from "
        "it; give hca_format (mlx5_{index} names them by position) or a node whose dump "
        "names them"
    )


def _hca(hca_format: str, index: int) -> str:
    try:
        name = hca_format.format(index=index)
    except (KeyError, IndexError, ValueError) as exc:
        raise SpecError(
            f"hca_format {shown(hca_format)}: not a pattern with the one field {{index}} ({exc})",
            param="hca_format",
        ) from None
    bad = sorted({c for c in name if c in HCA_RESERVED or c.isspace()})
    if not name or bad or len(name) > HCA_NAME_MAX:
        what = f"holds {' '.join(map(repr, bad))}" if bad else f"has {len(name)} characters"
        raise SpecError(
            f"hca_format {shown(hca_format)} gives the device name {shown(name)}, which "
            f"{what}: a name must be 1 to {HCA_NAME_MAX} characters without NCCL_IB_HCA's "
            "reserved ',' ':' '=' '^' or whitespace",
            param="hca_format",
        )
    return name


def check_hca_format(hca_format: str) -> None:
    """Check an ``hca_format`` before any work: names NCCL reads whole, one per device.

    Parameters
    ----------
    hca_format : str
        Device names with the field ``{index}`` (the device's position, 0-based).

    Raises
    ------
    SpecError
        (``.param`` ``hca_format``) if :func:`topo.export.patterns.check_name_pattern` refuses
        the pattern for names of :data:`HCA_NAME_MAX` characters (checked before any name is
        built: another field, an attribute or item of ``{index}``, a width past the limit),
        or unless the pattern has the field ``{index}`` and gives names of 1 to
        :data:`HCA_NAME_MAX` characters free of :data:`HCA_RESERVED` and whitespace, distinct
        for distinct indices (checked on indices 0 to 63). Messages quote at most 80
        characters of the pattern or a name.
    """
    check_name_pattern(
        hca_format, "index", max_chars=HCA_NAME_MAX, param="hca_format", noun="device name"
    )
    _hca(hca_format, 0)  # a pattern Python formats with {index} alone
    fields = [f for _, f, _, _ in string.Formatter().parse(hca_format) if f is not None]
    if "index" not in fields:
        raise SpecError(
            f"hca_format {shown(hca_format)} has no field {{index}}: every NIC of a server "
            "needs a distinct device name",
            param="hca_format",
        )
    names = [_hca(hca_format, i) for i in range(64)]
    if len(set(names)) < len(names):
        raise SpecError(
            f"hca_format {shown(hca_format)} gives one name to two devices: every NIC of a "
            "server needs a distinct device name",
            param="hca_format",
        )


def nccl_naming_notes(
    G: nx.Graph, hosts: Sequence[str], node: int | None = None, hca_format: str | None = None
) -> tuple[str, ...]:
    """What an export assumed of imported servers' device names (a warning each).

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    hosts : sequence of str
        One host name per server.
    node : int, optional
        One server's position (0-based); None: every server.
    hca_format : str, optional
        As :func:`nccl_nics`; given, nothing was assumed.

    Returns
    -------
    tuple of str
        Empty for a built fabric, with ``hca_format``, or where the dump names every device
        by its Linux name; else one line naming the servers (a hostlist) whose dump names no
        device, and the pattern assumed for them (:data:`DEFAULT_HCA_FORMAT`, by position).
    """
    if hca_format is not None or G.graph.get("family") != "ibnetdiscover":
        return ()
    ctx = _context(G)
    positions = range(len(hosts)) if node is None else [node]
    unnamed = []
    for i in positions:
        server, members = _server(ctx, i)
        nics = [v for v in members if G.nodes[v]["kind"] == "nic"]
        devices, _ = host_devices(G, str(server), nics)
        if any(name is None for _, _, name, _ in devices):
            unnamed.append(hosts[i])
    if not unnamed:
        return ()
    return (
        f"{hostlist_ranged(unnamed)}: the dump names no Linux device for their HCAs; "
        f"assumed {DEFAULT_HCA_FORMAT} by position (hca_format, --hca-format, to choose)",
    )


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
        ids = list(servers(G))
        at = 0 if node is None else node
        raise SpecError(
            f"{named_servers(G, ids[at : at + 1])} has no NIC cabled to a switch: no "
            "NCCL_IB_HCA to write"
        )
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
    if hca_format is None:
        _refuse_foreign(G, ctx, hosts, positions)
    blocks: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for i in positions:
        env = nccl_env(G, i, hca_format, topo_file, ctx)
        blocks.setdefault(tuple(env.items()), []).append(hosts[i])
    lines = [f"# warning: {n}" for n in nccl_naming_notes(G, hosts, node, hca_format)]
    for env_items, names in blocks.items():
        lines.append(f"# {hostlist_ranged(names)}")
        lines += [f"export {k}={v}" for k, v in env_items]
    return "\n".join(lines) + "\n"


def _refuse_foreign(
    G: nx.Graph, ctx: _Context, hosts: Sequence[str], positions: Sequence[int]
) -> None:
    """Raise for the servers whose dump names their HCAs otherwise than Linux, all at once."""
    names: list[str] = []
    foreign: set[str] = set()
    for i in positions:
        server, members = _server(ctx, i)
        nics = [v for v in members if G.nodes[v]["kind"] == "nic"]
        theirs = host_devices(G, str(server), nics)[1]
        if theirs:
            names.append(hosts[i])
            foreign.update(theirs)
    if names:
        message = _foreign_message(hostlist_ranged(names), sorted(foreign, key=natural_key))
        raise SpecError(message, param="hca_format")


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
