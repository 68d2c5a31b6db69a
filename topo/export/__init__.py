"""Hand a design to the cluster's software: Slurm's topology, NCCL's environment, a cabling plan,
topograph's simulation model.

:func:`export` turns a fabric into the text of one format of :data:`FORMATS` (each entry a
function ``(G, ExportOptions) -> Export``); ``topo export FORMAT FABRIC -o FILE`` writes it.
Adding a format is one entry in :data:`FORMATS`. The models behind each format (the grouping
Slurm sees, NCCL's rail and plane ids, the port plan) are in docs/export.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

import networkx as nx

from topo.errors import SpecError
from topo.export.cabling import CABLING_COLUMNS, Cable, cabling_plan, write_cabling_csv
from topo.export.hostlist import HOST_NAME, host_names, hostlist_ranged
from topo.export.nccl import (
    NcclNic,
    check_hca_format,
    nccl_env,
    nccl_naming_notes,
    nccl_nics,
    write_nccl_env,
    write_topo_xml,
)
from topo.export.slurm import (
    SlurmBlocks,
    SlurmSwitch,
    block_sizes,
    slurm_blocks,
    slurm_tree,
    write_block_conf,
    write_topology_conf,
    write_topology_yaml,
)
from topo.export.topograph import domain_names, write_topograph_model
from topo.export.trays import compute_view, domain_blocks, domain_hosts, host_view
from topo.fabric import SWITCH_KINDS, servers
from topo.formats.netfile import write_ibnetdiscover

__all__ = [
    "CABLING_COLUMNS",
    "FORMATS",
    "HOST_NAME",
    "OPTION_FORMATS",
    "SLURM_FORMATS",
    "Cable",
    "Export",
    "ExportOptions",
    "NcclNic",
    "SlurmBlocks",
    "SlurmSwitch",
    "block_sizes",
    "cabling_plan",
    "check_fabric",
    "check_format",
    "check_hca_format",
    "check_options",
    "compute_view",
    "domain_blocks",
    "domain_hosts",
    "export",
    "fabric_hosts",
    "host_names",
    "host_view",
    "hostlist_ranged",
    "nccl_env",
    "nccl_naming_notes",
    "nccl_nics",
    "slurm_blocks",
    "slurm_tree",
    "write_block_conf",
    "write_cabling_csv",
    "write_nccl_env",
    "write_topo_xml",
    "write_topology_conf",
    "write_topograph_model",
    "write_topology_yaml",
]

SLURM_FORMATS = ("tree", "block", "yaml")
"""``topo export slurm --format``: topology.conf for the tree or block plugin, topology.yaml."""


@dataclass(frozen=True)
class ExportOptions:
    """What the formats may be asked (each reads the options it knows).

    Attributes
    ----------
    hosts : str, optional
        Host names: a pattern with ``{node}`` or a file of names (:func:`host_names`); None:
        an imported fabric's host names, else ``node{node}``.
    slurm_format : str
        ``tree``, ``block`` or ``yaml`` (:data:`SLURM_FORMATS`).
    node : int, optional
        The server (0-based position) for ``nccl``; None: every server.
    hca_format : str, optional
        NCCL device names, field ``{index}``; None: an imported fabric's device names where
        its dump gives them (refused where it names them otherwise than Linux, ``HCA-5``),
        else ``mlx5_{index}`` (with a warning for an imported server).
    topo_xml : str, optional
        ``nccl``: also write the ``NCCL_TOPO_FILE`` skeleton here (of ``node``, or the first
        server) and point ``NCCL_TOPO_FILE`` at it.
    assign_ports : bool
        ``cabling`` or ``ibnetdiscover`` of an imported fabric: write it with ports assigned
        by rule (the fabric file does not keep the dump's port numbers); without it such an
        export is refused.

    Each option applies to the formats :data:`OPTION_FORMATS` lists; :func:`export` refuses
    one set (away from its default) for another format.
    """

    hosts: str | None = None
    slurm_format: str = "tree"
    node: int | None = None
    hca_format: str | None = None
    topo_xml: str | None = None
    assign_ports: bool = False


OPTION_FORMATS: dict[str, tuple[str, ...]] = {
    "hosts": ("slurm", "nccl", "cabling", "topograph"),
    "slurm_format": ("slurm",),
    "node": ("nccl",),
    "hca_format": ("nccl",),
    "topo_xml": ("nccl",),
    "assign_ports": ("ibnetdiscover", "cabling"),
}
"""Each :class:`ExportOptions` field -> the formats that read it (the others would ignore it)."""


@dataclass(frozen=True)
class Export:
    """An export's text, any further files (path -> text) it comes with, and warnings (one
    line each, for stderr: what the export had to assume)."""

    text: str
    files: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def fabric_hosts(G: nx.Graph, hosts: str | None = None) -> list[str]:
    """One host name per server of ``G``, in ``topo.fabric.servers`` order.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    hosts : str, optional
        A pattern with ``{node}`` or a file of names, as :func:`host_names` reads it; None: an
        imported fabric keeps the dump's host names, and so do the hosts of a built fabric
        whose servers are NVLink domains of hosts (``node<n>-<h>``); a built one gets
        ``node{node}``.

    Returns
    -------
    list of str
        The names, checked (valid, none repeated).

    Raises
    ------
    SpecError
        As :func:`host_names`.
    """
    ids = list(servers(G))
    # an imported fabric's hosts, and a built one's trays (host_view: ``node<n>-<h>``, the
    # names its written dump gives them too), keep their names; built servers get node{node}
    named = G.graph.get("family") == "ibnetdiscover" or G.graph.get("hosts_named", False)
    default = [str(n) for n in ids] if named else None
    return host_names(ids, hosts, default)


def _header(G: nx.Graph, what: str) -> str:
    return f"{G.graph.get('name', 'fabric')}: {what}, written by topo export"


def _slurm(G: nx.Graph, opts: ExportOptions) -> Export:
    if opts.slurm_format not in SLURM_FORMATS:
        raise SpecError(
            f"slurm_format must be one of {', '.join(SLURM_FORMATS)}, got {opts.slurm_format!r}",
            param="slurm_format",
        )
    G = compute_view(G)  # hosts without GPUs (--compute-host-regex) are no Slurm nodes
    domains = domain_hosts(G)  # NVLink domains of several hosts: a block each
    G = host_view(G)  # Slurm's nodes are the hosts
    hosts = fabric_hosts(G, opts.hosts)
    if opts.slurm_format == "tree":
        header = _header(G, "TopologyPlugin=topology/tree")
        if G.graph.get("family") == "dragonfly":
            header += "\nwith TopologyParam=dragonfly"
        return Export(write_topology_conf(slurm_tree(G, hosts), header))
    notes: tuple[str, ...] = ()
    if domains:
        blocks = domain_blocks(domains, dict(zip(servers(G), hosts, strict=True)))
        alone = len(hosts) - sum(len(b) for _, b in blocks.blocks)
        if alone:
            notes = (f"{alone} hosts outside every NVLink domain are in no block",)
    else:
        blocks = slurm_blocks(G, hosts)
    if opts.slurm_format == "block":
        text = write_block_conf(blocks, _header(G, "TopologyPlugin=topology/block"))
        return Export(text, warnings=notes)
    try:
        tree: tuple[SlurmSwitch, ...] | None = slurm_tree(G, hosts)
    except SpecError:
        tree = None  # no tree (a Slim Fly): the block entry alone, as the default
    name = str(G.graph.get("name", "fabric"))
    text = write_topology_yaml(name, tree, blocks, _header(G, "topology.yaml"))
    return Export(text, warnings=notes)


def _nccl(G: nx.Graph, opts: ExportOptions) -> Export:
    G = host_view(compute_view(G))  # NCCL_IB_HCA and the topology file are per GPU host
    hosts = fabric_hosts(G, opts.hosts)
    text = write_nccl_env(G, hosts, opts.node, opts.hca_format, opts.topo_xml)
    files = {}
    if opts.topo_xml is not None:
        node = opts.node or 0
        files[opts.topo_xml] = write_topo_xml(nccl_nics(G, node, opts.hca_format), hosts[node])
    notes = nccl_naming_notes(G, hosts, opts.node, opts.hca_format)
    return Export(text, files, notes)


ASSIGNED_PORTS_NOTE = (
    "the ports are assigned by rule (docs/export.md), not the dump's: the fabric file keeps "
    "which devices are cabled, not their port numbers, so this plan will not match the "
    "installed cabling port for port"
)


def _cabling(G: nx.Graph, opts: ExportOptions) -> Export:
    imported = G.graph.get("family") == "ibnetdiscover"
    if imported and not opts.assign_ports:
        raise SpecError(
            f"an imported fabric's cabling plan: {ASSIGNED_PORTS_NOTE}; give assign_ports to "
            "write it anyway",
            param="assign_ports",
        )
    G = host_view(G)
    text = write_cabling_csv(cabling_plan(G, fabric_hosts(G, opts.hosts)))
    return Export(text, warnings=(ASSIGNED_PORTS_NOTE,) if imported else ())


ASSIGNED_DUMP_NOTE = (
    "its port numbers, GUIDs and LIDs are assigned by rule (docs/export.md), not the dump's "
    "(its CA names are the dump's): the fabric file keeps which devices are cabled, not how "
    "the dump numbered them, so this file will not match the installed fabric port for port"
)


def _ibnetdiscover(G: nx.Graph, opts: ExportOptions) -> Export:
    G = host_view(G)  # a CA's description names its host
    if G.graph.get("family") != "ibnetdiscover":
        return Export(write_ibnetdiscover(G))
    if not opts.assign_ports:
        raise SpecError(
            f"an imported fabric as an ibnetdiscover dump: {ASSIGNED_DUMP_NOTE}; give "
            "assign_ports to write it anyway",
            param="assign_ports",
        )
    return Export(write_ibnetdiscover(G), warnings=(f"the dump written: {ASSIGNED_DUMP_NOTE}",))


def _topograph(G: nx.Graph, opts: ExportOptions) -> Export:
    G = compute_view(G)
    domains = domain_hosts(G)  # NVLink domains of several hosts: their capacity blocks
    G = host_view(G)
    hosts = fabric_hosts(G, opts.hosts)
    names = dict(zip(servers(G), hosts, strict=True))
    gpu = G.graph.get("gpu_model") or next(
        (d.get("model") for _, d in G.nodes(data=True) if d.get("kind") == "gpu"), None
    )
    text = write_topograph_model(
        slurm_tree(G, hosts),
        str(gpu) if gpu else "GPU",
        domain_names(domains, names),
        _header(G, "topograph simulation model (its test provider's model YAML)"),
    )
    return Export(text)


FORMATS: dict[str, Callable[[nx.Graph, ExportOptions], Export]] = {
    "slurm": _slurm,
    "nccl": _nccl,
    "cabling": _cabling,
    "ibnetdiscover": _ibnetdiscover,
    "topograph": _topograph,
}
"""Format name -> exporter. A writer ``f(G) -> str`` joins as
``"name": lambda G, opts: Export(f(G))``."""


def check_format(fmt: str) -> None:
    """Check a format name before any work is done.

    Parameters
    ----------
    fmt : str
        A format name.

    Raises
    ------
    SpecError
        Unless ``fmt`` is one of :data:`FORMATS` (``.param`` ``format``).
    """
    if fmt not in FORMATS:
        raise SpecError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}", param="format")


def check_options(fmt: str, given: Iterable[str]) -> None:
    """Check that every option given applies to the format (:data:`OPTION_FORMATS`).

    Parameters
    ----------
    fmt : str
        A format name.
    given : iterable of str
        The :class:`ExportOptions` fields set (by the caller's own account).

    Raises
    ------
    SpecError
        For the first option ``fmt`` would ignore (``.param`` that option), naming the
        formats it applies to.
    """
    for name in given:
        formats = OPTION_FORMATS[name]
        if fmt not in formats:
            raise SpecError(f"{name} applies to {', '.join(formats)} only, not {fmt}", param=name)


def check_fabric(G: nx.Graph, fmt: str) -> None:
    """Check that a fabric has what a format describes: servers, and switches between them.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    fmt : str
        A format name (``ibnetdiscover`` writes any fabric; the others need both).

    Raises
    ------
    SpecError
        If ``G`` has no server, or no switch, and ``fmt`` is ``slurm``, ``nccl`` or
        ``cabling``.
    """
    if fmt == "ibnetdiscover":
        return
    if not servers(G):
        raise SpecError(f"the fabric has no servers: nothing for {fmt} to describe")
    if not any(kind in SWITCH_KINDS for _, kind in G.nodes(data="kind")):
        raise SpecError(f"the fabric has no switches: no network for {fmt} to describe")


def export(G: nx.Graph, fmt: str, options: ExportOptions | None = None) -> Export:
    """A fabric in one of the :data:`FORMATS`.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (built, or imported from a dump).
    fmt : str
        ``slurm``, ``nccl``, ``cabling`` (the keys of :data:`FORMATS`).
    options : ExportOptions, optional
        Host names, Slurm form, NCCL server and device names.

    Returns
    -------
    Export
        The text (and, for ``nccl`` with ``topo_xml``, the XML file's text).

    Raises
    ------
    SpecError
        If ``fmt`` is unknown, an option is set that ``fmt`` does not read
        (:func:`check_options`), the fabric has no servers or no switches
        (:func:`check_fabric`), a host pattern gives invalid or repeated names, the
        ``hca_format`` is not one NCCL can read (:func:`check_hca_format`), an imported
        server's HCAs are named otherwise than Linux names them (``nccl`` without
        ``hca_format``), an imported fabric's plan or dump is asked without
        ``assign_ports``, or the
        format cannot express the fabric (Slurm's tree of a Slim Fly).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> print(export(G, "slurm").text.splitlines()[1])
    SwitchName=ft2-32 Switches=leaf[0-7]
    """
    check_format(fmt)
    opts = options or ExportOptions()
    default = ExportOptions()
    check_options(
        fmt, [f.name for f in fields(opts) if getattr(opts, f.name) != getattr(default, f.name)]
    )
    if opts.hca_format is not None:
        check_hca_format(opts.hca_format)
    check_fabric(G, fmt)
    return FORMATS[fmt](G, opts)
