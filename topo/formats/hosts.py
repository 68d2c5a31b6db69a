"""Servers on an imported fabric: CAs grouped into hosts, each given GPUs, NVLink and PCIe.

An ``ibnetdiscover`` dump knows no servers: a CA is a device with a node description, which
real hosts set to ``"<hostname> <CA name>"`` (``"gpu-node017 mlx5_3"``; rdma-core writes the
hostname there, ``/sys/class/infiniband/<dev>/node_desc``). :func:`add_hosts` groups the NICs
of an imported fabric into servers by that host part (or by a regular expression), and gives
each server the GPUs, NVSwitch, NVLink and PCIe of a built server (the same shape
:mod:`topo.builders` gives: GPU ``i`` of ``G`` reaches NIC ``i * m // G`` of the host's ``m``
NICs in natural order). A multi-plane fabric, one plane per NIC of a server, then becomes one
fabric, as the design is. :func:`merge_dumps` joins the fabrics of several dumps (one per
plane) into one before that.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import networkx as nx

from topo.errors import FormatError, SpecError
from topo.fabric import SWITCH_KINDS, natural_key
from topo.formats.ibnetdiscover import read_ibnetdiscover_dumps
from topo.formats.nvlink_domains import (
    add_domain_servers,
    compile_domain_regex,
    domain_of,
    nvlink_domains,
)
from topo.formats.patterns import UserPattern, compile_pattern
from topo.units import GBps_to_Bps

HOST_GRAPH_KEYS = frozenset({"gpus_per_node", "nvlink_GBps", "pcie_GBps", "host_regex"})
"""The graph attributes :func:`add_hosts` adds to an imported fabric."""

COMPUTE_GRAPH_KEYS = frozenset({"compute_host_regex", "non_compute_hosts"})
"""The graph attributes :func:`add_hosts` adds with ``compute_host_regex``."""


def host_of(description: str, host_regex: str | re.Pattern[str] | UserPattern) -> str | None:
    """The host part of a CA's node description, by ``host_regex``.

    Parameters
    ----------
    description : str
        The CA's node description (``"gpu-node017 mlx5_3"``).
    host_regex : str, re.Pattern or UserPattern
        Searched in the description (a str as :func:`topo.formats.patterns.compile_pattern`
        compiles it: within its time limit); the host is the group named ``host`` if there is one,
        else group 1, else the whole match.

    Returns
    -------
    str or None
        The host, or None when the expression does not match.

    Examples
    --------
    >>> host_of("gpu-node017 mlx5_3", r"^(\\S+)\\s")
    'gpu-node017'
    >>> host_of("rack2-n4-hca1", r"(?P<host>rack\\d+-n\\d+)")
    'rack2-n4'
    """
    pattern = _compile(host_regex) if isinstance(host_regex, str) else host_regex
    m = pattern.search(description)
    if m is None:
        return None
    if "host" in pattern.groupindex:
        return m["host"]
    return m[1] if pattern.groups else m[0]


def add_hosts(
    G: nx.Graph,
    gpus_per_host: int,
    *,
    nvlink_GBps: float,
    pcie_GBps: float,
    host_regex: str | None = None,
    nvlink_domain_regex: str | None = None,
    compute_host_regex: str | None = None,
) -> nx.Graph:
    """An imported fabric with its NICs grouped into servers of ``gpus_per_host`` GPUs each.

    Parameters
    ----------
    G : networkx.Graph
        A fabric read by :func:`topo.formats.read_ibnetdiscover` (or :func:`merge_dumps`),
        without GPUs.
    gpus_per_host : int
        GPUs per server, 1 to 1024.
    nvlink_GBps, pcie_GBps : float
        NVLink rate of each GPU and PCIe rate of each GPU-NIC link, GB/s per direction.
    host_regex : str, optional
        Takes the host from each NIC's ``description`` (see :func:`host_of`); default: the
        NIC's ``node``, the host part the reader found (``"<host> <CA>"``; ``H-<guid>`` when
        the description has none, which makes that CA a server of its own).
    nvlink_domain_regex : str, optional
        Groups hosts into NVLink domains larger than a host (the 18 trays of a GB200 NVL72
        rack) by their names (:func:`topo.formats.nvlink_domains.nvlink_domains`): one NVSwitch
        joins the GPUs of every host of a domain, and the domain is the ``node`` of its GPUs and
        NICs, each keeping its host in a ``host`` attribute
        (:func:`topo.formats.nvlink_domains.add_domain_servers`). A host it does not match is a
        domain of its own.
    compute_host_regex : str, optional
        Only the hosts whose name it matches (``re.search``) get GPUs; the others (a UFM
        host, ``localhost``, CAs with no hostname) stay in the fabric as they were imported:
        NICs of a server without GPUs, cabled endpoints that carry no GPU traffic (the
        solvers' terminals are the GPUs; :func:`topo.fabric.check_wiring` accepts a server
        of NICs alone). Default: every host gets GPUs.

    Returns
    -------
    networkx.Graph
        A copy of ``G`` with, per host ``h`` (its NICs ``m`` in natural order): GPUs
        ``h/gpu{i}`` (``kind`` ``gpu``, ``node`` ``h``, ``index`` ``i``), one NVSwitch
        ``h/nvswitch``, ``nvlink`` edges GPU-NVSwitch of ``nvlink_GBps`` and ``pcie`` edges
        GPU ``i`` - NIC ``i * m // gpus_per_host`` of ``pcie_GBps``, each with ``links`` 1 and
        ``speed`` ``"nvlink"`` or ``"pcie"``. The NICs' ``node`` becomes the host.
        ``G.graph`` adds ``gpus_per_node``, ``nvlink_GBps``, ``pcie_GBps`` and
        ``host_regex`` (:data:`HOST_GRAPH_KEYS`). With ``nvlink_domain_regex``, the servers are
        the domains as above, and ``G.graph`` adds ``nvlink_domain_regex`` and
        ``hosts_outside_nvlink_domains`` (the hosts it did not match;
        :data:`topo.formats.nvlink_domains.DOMAIN_GRAPH_KEYS`). With ``compute_host_regex``,
        ``G.graph`` adds it and ``non_compute_hosts`` (the hosts left without GPUs;
        :data:`COMPUTE_GRAPH_KEYS`).

    Raises
    ------
    SpecError
        If ``gpus_per_host`` is not 1 to 1024, a host has more NICs than ``gpus_per_host``
        (naming the first such host and its NIC count), a host's NICs do not divide its GPUs
        (:func:`check_nics_per_host`), ``compute_host_regex`` is not a valid expression or
        matches no host, a rate is not positive, the fabric
        already has GPUs, or ``host_regex`` is not a valid expression or names a host
        already used as a vertex name; or ``nvlink_domain_regex`` is not a valid
        expression, matches no host, or names a domain after a host it does not match.
    FormatError
        If ``host_regex`` does not match a NIC's description (naming the NIC).
    """
    _check_host_args(G, gpus_per_host, nvlink_GBps, pcie_GBps)
    if nvlink_domain_regex is not None:
        compile_domain_regex(nvlink_domain_regex)
    if compute_host_regex is not None:
        _compile(compute_host_regex, "compute_host_regex")
    H = G.copy()
    hosts: dict[str, list[str]] = defaultdict(list)
    for v, host in _nic_hosts(G, host_regex).items():
        hosts[host].append(v)
        H.nodes[v]["node"] = host
    if compute_host_regex is not None:
        hosts = _compute_hosts(H, hosts, compute_host_regex)
    check_nics_per_host(hosts, gpus_per_host, str(G.graph.get("source", "<fabric>")))
    rates = (GBps_to_Bps(nvlink_GBps), GBps_to_Bps(pcie_GBps))
    if nvlink_domain_regex is not None:
        _add_domains(H, hosts, gpus_per_host, rates, nvlink_domain_regex)
    else:
        for host in sorted(hosts, key=natural_key):
            nics = {host: sorted(hosts[host], key=natural_key)}
            add_domain_servers(H, host, nics, gpus_per_host, *rates, record_hosts=False)
    H.graph.update(
        gpus_per_node=gpus_per_host,
        nvlink_GBps=float(nvlink_GBps),
        pcie_GBps=float(pcie_GBps),
        host_regex=host_regex,
    )
    return H


def group_into_domains(
    G: nx.Graph, nvlink_domain_regex: str, host_regex: str | None = None
) -> nx.Graph:
    """A dump's fabric, without GPUs, whose NICs' servers are their hosts' NVLink domains.

    What ``topo validate --nvlink-domain-regex`` compares with a design whose servers are
    NVLink domains (a GB200 NVL72 rack built with or without ``gpus_per_host``): the dump's
    trays grouped into racks as :func:`add_hosts` groups them, and nothing added.

    Parameters
    ----------
    G : networkx.Graph
        A fabric read by :func:`topo.formats.read_ibnetdiscover` (or :func:`merge_dumps`),
        without GPUs.
    nvlink_domain_regex : str
        Groups hosts into domains (:func:`topo.formats.nvlink_domains.nvlink_domains`); a host
        it does not match is a domain of its own.
    host_regex : str, optional
        The host of a NIC from its description (:func:`host_of`); default its ``node``.

    Returns
    -------
    networkx.Graph
        A copy of ``G`` with each NIC's ``node`` its domain (its vertex name still begins with
        the host the dump's description names).

    Raises
    ------
    SpecError
        If an expression does not compile, or as
        :func:`topo.formats.nvlink_domains.nvlink_domains` raises.
    FormatError
        If ``host_regex`` does not match a NIC's description (naming the NIC).
    """
    if any(k == "gpu" for _, k in G.nodes(data="kind")):
        raise SpecError("the fabric already has GPUs: group a dump's CAs", param="gpus_per_host")
    host = _nic_hosts(G, host_regex)
    domain = {
        h: d
        for d, hs in nvlink_domains(sorted(set(host.values())), nvlink_domain_regex).items()
        for h in hs
    }
    H = G.copy()
    for v, h in host.items():
        H.nodes[v]["node"] = domain[h]
    return H


def _nic_hosts(G: nx.Graph, host_regex: str | None) -> dict[str, str]:
    """NIC -> its host: its ``node``, or what ``host_regex`` takes from its description."""
    pattern = _compile(host_regex) if host_regex is not None else None
    out: dict[str, str] = {}
    for v, d in G.nodes(data=True):
        if d["kind"] != "nic":
            continue
        host = str(d["node"]) if pattern is None else host_of(str(d["description"]), pattern)
        if host is None:
            raise FormatError(
                str(G.graph.get("source", "<fabric>")),
                f"NIC {v!r}: host_regex {host_regex!r} does not match its description "
                f"{d['description']!r}",
                names=("host_regex",),
            )
        out[v] = host
    return out


def _add_domains(
    H: nx.Graph,
    hosts: dict[str, list[str]],
    gpus: int,
    rates: tuple[float, float],
    regex: str,
) -> None:
    """The servers of :func:`add_hosts` as NVLink domains of hosts (``nvlink_domain_regex``)."""
    domains = nvlink_domains(list(hosts), regex)
    pattern = compile_domain_regex(regex)
    for domain, members in domains.items():
        nics = {h: sorted(hosts[h], key=natural_key) for h in members}
        add_domain_servers(H, domain, nics, gpus, *rates)
    H.graph.update(
        nvlink_domain_regex=regex,
        hosts_outside_nvlink_domains=sum(1 for h in hosts if domain_of(h, pattern) is None),
    )


def check_nics_per_host(hosts: dict[str, list[str]], gpus: int, source: str = "<fabric>") -> None:
    """Refuse hosts whose NICs cannot serve ``gpus`` GPUs as a built server's do.

    ``topo build`` requires a server's NICs to be at most its GPUs and to divide them, so that
    every NIC serves the same number of GPUs (:class:`topo.spec.ServerSpec`); the same rule
    holds here for every host with the fabric's most common NIC count or more. A host with
    fewer NICs than that (a tray whose rail leaf is absent: 3 of its 4 HCAs cabled) is the
    installed fabric's defect, kept: its GPUs share the NICs it has (GPU ``i`` on NIC
    ``i * m // gpus``), and a host with more NICs than ``gpus`` is refused whatever its count
    (a NIC no GPU reaches carries nothing; the solvers see a cabled port of capacity 0).

    Parameters
    ----------
    hosts : dict
        Host name -> its NIC vertices.
    gpus : int
        ``--gpus-per-host``.
    source : str
        The dump, named in the message.

    Raises
    ------
    SpecError
        (``.param`` ``gpus_per_host``) in one line naming the option, the first host at
        fault, its NIC count and a count that would do.
    """
    if not hosts:
        return
    order = sorted(hosts, key=natural_key)
    over = [h for h in order if len(hosts[h]) > gpus]
    if over:
        most = max(len(hosts[h]) for h in over)
        h = over[0]
        raise SpecError(
            f"gpus_per_host {gpus}: host {h!r} of {source} has "
            f"{len(hosts[h])} NICs, more than its {gpus} GPUs ({len(over):,} hosts do); each NIC "
            f"needs a GPU behind it: give gpus_per_host {most} or more",
            param="gpus_per_host",
            names=("gpus_per_host", "gpus_per_host"),
        )
    counts = Counter(len(n) for n in hosts.values())
    usual = max(counts, key=lambda m: (counts[m], m))
    odd = [h for h in order if len(hosts[h]) >= usual and gpus % len(hosts[h])]
    if odd:
        h, m = odd[0], len(hosts[odd[0]])
        raise SpecError(
            f"gpus_per_host {gpus}: host {h!r} of {source} has {m} NICs, which do not "
            f"divide its {gpus} GPUs ({len(odd):,} hosts so); every NIC serves the same number "
            f"of GPUs, as topo build requires: give a multiple of {m}",
            param="gpus_per_host",
        )


def _check_host_args(G: nx.Graph, gpus: int, nvlink_GBps: float, pcie_GBps: float) -> None:
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 1024:
        raise SpecError(
            f"gpus_per_host must be a whole number from 1 to 1024, got {gpus!r}",
            param="gpus_per_host",
        )
    for name, value in (("nvlink_GBps", nvlink_GBps), ("pcie_GBps", pcie_GBps)):
        if not (isinstance(value, (int, float)) and 1e-3 <= value <= 1e6):
            raise SpecError(
                f"{name} must be a number of GB/s from 0.001 to "
                f"1e6, got {value!r}",
                param=name,
            )
    if any(k == "gpu" for _, k in G.nodes(data="kind")):
        raise SpecError("the fabric already has GPUs: hosts are added once", param="gpus_per_host")


def _compile(regex: str, param: str = "host_regex") -> UserPattern:
    return compile_pattern(regex, param)


def _compute_hosts(H: nx.Graph, hosts: dict[str, list[str]], regex: str) -> dict[str, list[str]]:
    """The hosts ``regex`` matches (they get GPUs); the others' NICs stay a server of NICs
    alone. Records ``compute_host_regex`` and ``non_compute_hosts`` in ``H.graph``."""
    pattern = _compile(regex, "compute_host_regex")
    compute = {h: nics for h, nics in hosts.items() if pattern.search(h)}
    if not compute:
        first = min(hosts, key=natural_key) if hosts else None
        raise SpecError(
            f"compute_host_regex {regex!r} matches none of the {len(hosts):,} hosts "
            f"(e.g. {first!r}): no host would get GPUs",
            param="compute_host_regex",
        )
    H.graph.update(compute_host_regex=regex, non_compute_hosts=len(hosts) - len(compute))
    return compute


_SUMMED = (
    "aggregation_nodes",
    "loopback_cables",
    "unconnected_cas",
    "ca_to_ca_cables",
    "routers",
    "mismatched_cables",
    "unreachable_switches",
    "skipped_lines",
)


def merge_dumps(graphs: Sequence[nx.Graph]) -> nx.Graph:
    """One fabric from the fabrics of several dumps (one ``ibnetdiscover`` run per plane).

    Parameters
    ----------
    graphs : sequence of networkx.Graph
        Fabrics read by :func:`topo.formats.read_ibnetdiscover`, one per dump.

    Returns
    -------
    networkx.Graph
        Their union. A switch whose name another dump also uses is renamed
        ``<dump stem>/<name>``: only ibsim net files (switches named by ids without GUIDs,
        ``Switch1`` in each) or graphs read one by one, since dumps read together by
        :func:`topo.formats.ibnetdiscover.read_ibnetdiscover_dumps` (as
        :func:`import_ibnetdiscover` reads them) name a switch whose description another
        dump's switch shares by its id ``S-<guid>``. ``G.graph`` is the first
        dump's, with ``planes``, ``link_speeds`` and the counts of what was left out summed and
        ``source`` the sources joined by ``", "``.

    Raises
    ------
    FormatError
        If a device (a switch or CA GUID, or a host port name) appears in two dumps: the same
        plane discovered twice.
    """
    if len(graphs) == 1:
        return graphs[0]
    names = Counter(v for g in graphs for v, k in g.nodes(data="kind") if k in SWITCH_KINDS)
    merged = nx.Graph()
    merged.graph.update(graphs[0].graph)
    seen: dict[str, tuple[int, str]] = {}  # guid or NIC name -> (dump index, its source)
    speeds: Counter[str] = Counter()
    for i, g in enumerate(graphs):
        _check_disjoint(g, (i, str(g.graph.get("source", g.graph.get("name")))), seen)
        rename = {
            v: f"{g.graph['name']}/{v}"
            for v, k in g.nodes(data="kind")
            if k in SWITCH_KINDS and names[v] > 1
        }
        merged.update(nx.relabel_nodes(g, rename) if rename else g)
        speeds.update(g.graph.get("link_speeds", {}))
    merged.graph.update(
        planes=sum(int(g.graph.get("planes", 1)) for g in graphs),
        link_speeds=dict(sorted(speeds.items())),
        source=", ".join(str(g.graph.get("source")) for g in graphs),
        **{k: sum(int(g.graph.get(k, 0)) for g in graphs) for k in _SUMMED},
    )
    return merged


def _check_disjoint(g: nx.Graph, dump: tuple[int, str], seen: dict[str, tuple[int, str]]) -> None:
    for v, d in g.nodes(data=True):
        keys = [f"guid {d['guid']}"] if d.get("guid") else []
        if d["kind"] == "nic":
            keys.append(f"host port {v}")
        for key in keys:
            if key in seen and seen[key][0] != dump[0]:
                raise FormatError(
                    dump[1],
                    f"{key} is also in {seen[key][1]}: each dump must be a different plane "
                    "(the same subnet discovered twice?)",
                )
            seen[key] = dump


def import_ibnetdiscover(
    paths: str | Path | Sequence[str | Path],
    *,
    name_map: str | Path | None = None,
    gpus_per_host: int | None = None,
    host_regex: str | None = None,
    nvlink_GBps: float = 200.0,
    pcie_GBps: float = 64.0,
    nvlink_domain_regex: str | None = None,
    compute_host_regex: str | None = None,
) -> nx.Graph:
    """Read one or more ``ibnetdiscover`` dumps into one fabric, with servers if asked.

    Parameters
    ----------
    paths : path or sequence of paths
        The dumps: one file (all planes concatenated, or a single subnet) or one per plane.
    name_map : path, optional
        GUID -> name map, as :func:`topo.formats.read_ibnetdiscover` takes it.
    gpus_per_host : int, optional
        Group the NICs into servers of this many GPUs (:func:`add_hosts`); None keeps every
        NIC a terminal of its own.
    host_regex : str, optional
        The host part of a CA's description (:func:`host_of`); only with ``gpus_per_host``.
    nvlink_domain_regex : str, optional
        Hosts into NVLink domains by their names (:func:`add_hosts`); only with
        ``gpus_per_host``.
    compute_host_regex : str, optional
        Only the hosts it matches get GPUs (:func:`add_hosts`); only with ``gpus_per_host``.
    nvlink_GBps, pcie_GBps : float
        NVLink per GPU and PCIe per GPU-NIC link, GB/s per direction; the defaults are those
        of :class:`topo.spec.ServerSpec` (H800-class server, see there).

    Returns
    -------
    networkx.Graph
        :func:`merge_dumps` of the dumps read together
        (:func:`topo.formats.ibnetdiscover.read_ibnetdiscover_dumps`: a switch keeps its
        description only where no switch of any dump shares it, else it is ``S-<guid>``),
        then :func:`add_hosts` when ``gpus_per_host`` is given.

    Raises
    ------
    FormatError
        As :func:`topo.formats.read_ibnetdiscover` and :func:`merge_dumps` do.
    SpecError
        If ``host_regex``, ``nvlink_domain_regex`` or ``compute_host_regex`` is given without
        ``gpus_per_host``,
        ``nvlink_domain_regex`` is not a regular expression, or as :func:`add_hosts` raises.
    """
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not files:
        raise SpecError("no dump given: expected one ibnetdiscover file or more", param="dumps")
    if host_regex is not None and gpus_per_host is None:
        raise SpecError(
            "host_regex groups CAs into servers: give gpus_per_host too",
            param="host_regex",
            names=("host_regex", "gpus_per_host"),
        )
    if nvlink_domain_regex is not None:
        if gpus_per_host is None:
            raise SpecError(
                "nvlink_domain_regex groups hosts into NVLink domains: give gpus_per_host too",
                param="nvlink_domain_regex",
                names=("nvlink_domain_regex", "gpus_per_host"),
            )
        compile_domain_regex(nvlink_domain_regex)
    if compute_host_regex is not None:
        if gpus_per_host is None:
            raise SpecError(
                "compute_host_regex chooses the hosts that get GPUs: give gpus_per_host too",
                param="compute_host_regex",
                names=("compute_host_regex", "gpus_per_host"),
            )
        _compile(compute_host_regex, "compute_host_regex")
    G = merge_dumps(read_ibnetdiscover_dumps(files, name_map=name_map))
    if gpus_per_host is None:
        return G
    return add_hosts(
        G,
        gpus_per_host,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
        host_regex=host_regex,
        nvlink_domain_regex=nvlink_domain_regex,
        compute_host_regex=compute_host_regex,
    )
