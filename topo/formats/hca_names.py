"""The device names of a host's HCAs, one rule for every file topo writes.

Linux names a host's ConnectX HCAs ``mlx5_<n>`` in the order it probes them; a real
``ibnetdiscover`` dump carries those names in each CA's node description, ``"<host> <device>"``
(rdma-core's ``rdma-ndd`` writes ``<hostname> <device>`` there). The exporters
(``NCCL_IB_HCA`` and its topology file in :mod:`topo.export.nccl`, the dump written by
:func:`topo.formats.write_ibnetdiscover`) name a host's HCAs by :func:`host_devices`:

- an **imported** CA keeps the device name its dump gives (the second word of its
  description, ``mlx5_4`` or a site's own ``HCA-5``), its ports one device;
- a **built** NIC, or an imported CA whose description names no device, is numbered within
  its **host** by position, ``mlx5_0`` .. ``mlx5_<m-1>`` (:data:`DEFAULT_HCA_FORMAT`). On a
  fabric whose servers are NVLink domains of several hosts (the compute trays of a GB200 NVL72
  rack), that is within each tray, not across the rack.

A real GB200 compute tray is numbered otherwise: its four ConnectX-7 compute-fabric (OSFP)
ports are ``mlx5_0``, ``mlx5_1``, ``mlx5_4``, ``mlx5_5``, the BlueField-3 ports between them
taking ``mlx5_2``, ``mlx5_3`` and ``mlx5_6`` on (NVIDIA Mission Control, "North-South Network
GB200 deploy guide" 2.3.0, table "GB200 Compute Tray" network interface names), as the trays of
NVIDIA topograph's GB200 dump name them. A build cannot know that numbering; an import keeps
it. See docs/export.md.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from topo.fabric import host_of_vertex, natural_key

DEFAULT_HCA_FORMAT = "mlx5_{index}"
"""Device names of a built host: ``mlx5_0``, ``mlx5_1``, ... (Linux's names for ConnectX
HCAs, in PCI order)."""

LINUX_DEVICE = re.compile(r"[A-Za-z]\w*_\d+")
"""A Linux RDMA device name as ibnetdiscover's node descriptions give it: a driver prefix,
``_``, a number (``mlx5_4``; rdma-ndd's default description is ``<host> <device>``)."""

HcaDevice = tuple[str, int, str | None, int]
"""(NIC vertex, device index in its host, the dump's Linux device name or None, HCA port)."""


def dump_device_name(description: Any) -> str | None:
    """The device an imported CA's node description names: ``"<host> <device>"``.

    Parameters
    ----------
    description : str or None
        The CA's node description as its dump printed it.

    Returns
    -------
    str or None
        The second of exactly two words (``"a08-p1-dgx-04-c01 mlx5_4"`` -> ``"mlx5_4"``,
        ``"a06-p1-dgx-02-c18 HCA-6"`` -> ``"HCA-6"``); None for a default description
        (``"MT4129 ConnectX7   Mellanox Technologies"``) or a single word.

    Examples
    --------
    >>> dump_device_name("a08-p1-dgx-04-c01 mlx5_4"), dump_device_name("MT4129 ConnectX7 x y")
    ('mlx5_4', None)
    """
    words = str(description or "").split()
    return words[1] if len(words) == 2 else None


def host_devices(G: nx.Graph, host: str, nics: Sequence[str]) -> tuple[list[HcaDevice], list[str]]:
    """The HCAs of one host, in device then port order.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    host : str
        The host's name (a description ``"<host> <word>"`` names a device of this host).
    nics : sequence of str
        The host's NIC vertices.

    Returns
    -------
    (list, list)
        ``(nic, device index, Linux name or None, port)`` per NIC, and the dump's device names
        of this host that are not Linux names (``HCA-5``), in natural order. A built NIC is one
        single-port device (port 1), numbered by its ``index`` order within ``nics``. An
        imported NIC is a CA port: the ports of one CA (its GUID, else its vertex name without
        ``/p<port>``) are one device, named by its description where that is a Linux name
        (:data:`LINUX_DEVICE`); devices in natural order of their names (else CA ids).
    """
    if G.graph.get("family") != "ibnetdiscover":
        ordered = sorted(nics, key=lambda v: natural_key(G.nodes[v]["index"]))
        return [(v, i, None, 1) for i, v in enumerate(ordered)], []
    info = []
    foreign: list[str] = []
    for v in nics:
        d = G.nodes[v]
        word = dump_device_name(d.get("description"))
        name = word if word is not None and LINUX_DEVICE.fullmatch(word) else None
        if name is None and word is not None and str(d["description"]).split()[0] == host:
            foreign.append(word)
        ca = d.get("guid") or str(v).rsplit("/p", 1)[0]
        info.append((name, str(ca), int(d["index"]), v))
    info.sort(key=lambda t: (natural_key(t[0] or t[1]), t[2]))
    cas = list(dict.fromkeys(t[1] for t in info))
    devices = [(v, cas.index(ca), name, port) for name, ca, port, v in info]
    return devices, sorted(set(foreign), key=natural_key)


def hca_names(G: nx.Graph) -> dict[str, str]:
    """The device name of every NIC, as the written dump gives it.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (built, or imported; NVLink domains of several hosts or not).

    Returns
    -------
    dict of str to str
        NIC vertex -> device name. Per host (:func:`topo.fabric.host_of_vertex`): an imported
        host whose dump names every CA keeps those names (:func:`dump_device_name`); any other
        host is numbered within itself by :func:`host_devices`' device index,
        ``mlx5_<index>``, over all its NICs (one whose cable is gone keeps its number free).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=4,
    ...           gpus_per_host=4)
    >>> n = hca_names(G); n["node0/nic1"], n["node0/nic2"], n["node0/nic3"]
    ('mlx5_1', 'mlx5_0', 'mlx5_1')
    """
    by: dict[Hashable, list[str]] = defaultdict(list)
    for v, d in G.nodes(data=True):
        if d["kind"] == "nic":
            by[host_of_vertex(d)].append(v)
    imported = G.graph.get("family") == "ibnetdiscover"
    out: dict[str, str] = {}
    for host, nics in by.items():
        dumped = [dump_device_name(G.nodes[v].get("description")) for v in nics]
        if imported and None not in dumped:
            out.update(zip(nics, [str(w) for w in dumped], strict=True))
            continue
        devices, _ = host_devices(G, str(host), nics)
        out.update((v, DEFAULT_HCA_FORMAT.format(index=i)) for v, i, _, _ in devices)
    return out
