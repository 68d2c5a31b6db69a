"""NVLink domains larger than a host: the trays of a GB200 NVL72 rack joined by one NVLink fabric.

A GB200 NVL72 rack is 18 compute trays of 4 GPUs and 4 ConnectX-7 NICs each; the rack's
NVLink switch trays join all 72 GPUs into one NVLink domain (900 GB/s per GPU per direction,
``../shared/REFERENCES.md``; NVIDIA's GB200 NVL72 page). Each tray is a host of its own
(its CAs' node descriptions name it, Slurm and nccl-tests count it as a node), but traffic
between two trays of one rack rides NVLink, not InfiniBand.

:func:`nvlink_domains` groups hosts into domains by a regular expression on the host name
(``-dgx-(\\d+)-c\\d+`` takes the rack ``RR`` of ``a05-p1-dgx-RR-cTT``); :func:`add_domain_servers`
gives each domain one NVSwitch joining the GPUs of all its hosts. In the fabric graph
(:mod:`topo.fabric`) a GPU's and a NIC's ``node`` is then the NVLink domain (what the solvers
contract into one server, what NCCL with MNNVL treats as one node) and their ``host``
attribute the tray they sit in. A host the expression does not match is a domain of its own,
with ``node`` equal to its ``host``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import networkx as nx

from topo.errors import SpecError
from topo.fabric import natural_key
from topo.formats.patterns import UserPattern, compile_pattern

DOMAIN_GRAPH_KEYS = frozenset({"nvlink_domain_regex", "hosts_outside_nvlink_domains"})
"""The graph attributes an import with NVLink domains adds (beside those of hosts)."""


def domain_of(host: str, pattern: str | re.Pattern[str] | UserPattern) -> str | None:
    """The NVLink domain of a host, by a regular expression searched in its name.

    Parameters
    ----------
    host : str
        The host name (``"a05-p1-dgx-01-c03"``).
    pattern : str, re.Pattern or UserPattern
        Searched in ``host`` (a str as :func:`compile_domain_regex` compiles it); the domain
        is the group named ``domain`` if there is one, else group 1, else the whole match.

    Returns
    -------
    str or None
        The domain id, or None when the expression does not match (or its group is empty).

    Examples
    --------
    >>> domain_of("a05-p1-dgx-01-c03", r"-dgx-(\\d+)-c\\d+$")
    '01'
    >>> domain_of("ubuntu", r"-dgx-(\\d+)-c\\d+$") is None
    True
    """
    rx = compile_domain_regex(pattern) if isinstance(pattern, str) else pattern
    m = rx.search(host)
    if m is None:
        return None
    if "domain" in rx.groupindex:
        found = m["domain"]
    else:
        found = m[1] if rx.groups else m[0]
    return found or None


def compile_domain_regex(regex: str) -> UserPattern:
    """``nvlink_domain_regex`` compiled, its searches within
    :data:`topo.formats.patterns.TIME_LIMIT_S` together.

    Raises
    ------
    SpecError
        If it is not a regular expression, or (when searched) takes more than its time
        limit (``.param`` ``nvlink_domain_regex``).
    """
    return compile_pattern(regex, "nvlink_domain_regex")


def nvlink_domains(hosts: Sequence[str], regex: str) -> dict[str, list[str]]:
    """Hosts grouped into NVLink domains.

    Parameters
    ----------
    hosts : sequence of str
        Host names.
    regex : str
        ``--nvlink-domain-regex`` (see :func:`domain_of`).

    Returns
    -------
    dict
        Domain id -> its hosts in natural order; domains in natural order of their ids. A host
        the expression does not match is a domain of its own, named after the host.

    Raises
    ------
    SpecError
        If ``regex`` is not a regular expression, matches no host, or gives a domain the id of
        a host it does not match (the two would merge).

    Examples
    --------
    >>> nvlink_domains(["r1-c2", "r1-c1", "r2-c1", "login"], r"^(r\\d+)-c")
    {'login': ['login'], 'r1': ['r1-c1', 'r1-c2'], 'r2': ['r2-c1']}
    """
    pattern = compile_domain_regex(regex)
    by: dict[str, list[str]] = {}
    alone = []
    for h in hosts:
        d = domain_of(h, pattern)
        if d is None:
            alone.append(h)
        else:
            by.setdefault(d, []).append(h)
    if not by:
        raise SpecError(
            f"nvlink_domain_regex {regex!r} matches none of the {len(hosts):,} hosts "
            f"(e.g. {sorted(hosts, key=natural_key)[0]!r})"
            if hosts
            else f"nvlink_domain_regex {regex!r}: the fabric has no hosts",
            param="nvlink_domain_regex",
        )
    clash = sorted(set(by) & set(alone), key=natural_key)
    if clash:
        raise SpecError(
            f"nvlink_domain_regex {regex!r} names a domain {clash[0]!r}, which is also a "
            "host it does not match: the two would be one server",
            param="nvlink_domain_regex",
        )
    by.update({h: [h] for h in alone})
    return {d: sorted(by[d], key=natural_key) for d in sorted(by, key=natural_key)}


def add_domain_servers(
    H: nx.Graph,
    domain: str,
    hosts: dict[str, list[str]],
    gpus_per_host: int,
    nvlink_Bps: float,
    pcie_Bps: float,
    *,
    record_hosts: bool = True,
) -> None:
    """GPUs, NVSwitch, NVLink and PCIe of one NVLink domain, added to ``H`` in place.

    Parameters
    ----------
    H : networkx.Graph
        The fabric, its NICs already in it.
    domain : str
        The domain id: the ``node`` of its GPUs, NICs and NVSwitch.
    hosts : dict
        Host name -> its NICs in natural order (hosts in natural order).
    gpus_per_host : int
        GPUs per host.
    nvlink_Bps, pcie_Bps : float
        NVLink per GPU and PCIe per GPU-NIC link, B/s per direction.
    record_hosts : bool
        Give each GPU and NIC its ``host``; False for a server that is one host and nothing
        more (:func:`topo.formats.add_hosts` without domains), whose ``node`` says it all.

    Notes
    -----
    Host ``h`` gets GPUs ``h/gpu{j}`` (``j`` = 0 .. ``gpus_per_host`` - 1), each with ``node``
    ``domain``, ``host`` ``h`` and ``index`` its position in the domain (hosts in order, so
    GPU ``j`` of the ``k``-th host has index ``k * gpus_per_host + j``); GPU ``j`` reaches NIC
    ``j * m // gpus_per_host`` of the host's ``m`` NICs over PCIe, as a built server's GPUs do.
    One NVSwitch ``domain/nvswitch`` joins every GPU of the domain by an ``nvlink`` edge. The
    NICs get ``node`` ``domain`` and ``host`` ``h``.

    Raises
    ------
    SpecError
        If one of the new vertex names is already a vertex of the fabric.
    """
    nvswitch = f"{domain}/nvswitch"
    names = [nvswitch, *(f"{h}/gpu{j}" for h in hosts for j in range(gpus_per_host))]
    taken = [n for n in names if n in H]
    if taken:
        what = "NVLink domain" if record_hosts else "host"
        raise SpecError(
            f"{what} {domain!r}: its server's vertex {taken[0]!r} is already a vertex of the "
            "fabric",
            param="nvlink_domain_regex" if record_hosts else "host_regex",
        )
    H.add_node(nvswitch, kind="nvswitch", node=domain)
    for k, (host, nics) in enumerate(hosts.items()):
        m = len(nics)
        where = {"node": domain, "host": host} if record_hosts else {"node": domain}
        for nic in nics:
            H.nodes[nic].update(where)
        for j in range(gpus_per_host):
            gpu = f"{host}/gpu{j}"
            H.add_node(gpu, kind="gpu", index=k * gpus_per_host + j, **where)
            H.add_edge(gpu, nvswitch, kind="nvlink", capacity=nvlink_Bps, links=1, speed="nvlink")
            nic = nics[j * m // gpus_per_host]
            H.add_edge(gpu, nic, kind="pcie", capacity=pcie_Bps, links=1, speed="pcie")
