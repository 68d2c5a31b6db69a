"""How many channels NCCL runs across servers, from how its graph search sets them up.

NCCL 2.29 (NVIDIA/nccl v2.29.2-1) settles ``comm->nChannels``, the collective channel count, in
three steps, and derives the peer-to-peer channels from it:

1. ``ncclTopoCompute`` (``src/graph/search.cc``) searches a ring graph at the fastest entry of
   the arch's inter-node speed array that the path to the NIC carries, and keeps as many
   channels as the NICs fit at that speed: a 400G NIC (50 GB/s, ``src/graph/topo.cc``) carries
   one 48 GB/s channel, so G GPUs with a NIC each give G channels;
2. ``ncclTopoDupChannels`` doubles them (halving their bandwidth) when it is at least 25 GB/s,
   except from compute capability 8.0 on when it is under 50 GB/s with more than 4 channels;
3. ``ncclTopoPostset`` (``src/graph/connect.cc``) sets every ring channel up twice, and from
   compute capability 9.0 on across servers doubles them again while the graph's bandwidth is
   over 45 GB/s and there are fewer than 16.

On 400G NICs with Hopper GPUs that gives 4, 8, 16 and 16 channels at 1, 2, 4 and 8 GPUs per
server. ``p2pnChannels`` is that count rounded up to a power of two
(``ncclTopoComputeP2pChannels``, ``src/graph/paths.cc``).

Assumptions: the GPUs' own NICs (one or more per GPU, as the fabric cables them) are what the
search uses, and no PCIe or NVLink path is slower than the chosen speed (NCCL's ``maxBw``).
"""

from __future__ import annotations

from topo.collective.constants import NcclConstants, pow2_up
from topo.collective.fabric_rates import FabricRates

_FROM_SM80 = ("hopper", "blackwell")  # ccMin > 80 (compute capability 9.0 and 10.0)
_FROM_SM90 = ("hopper", "blackwell")  # minCompCap >= 90


def search_speed_GBps(nic_GBps: float, c: NcclConstants) -> float:
    """The speed NCCL's ring search settles at on a NIC of ``nic_GBps``: the first entry of the
    arch's inter-node speed array that fits it (the last entry if none does).

    Parameters
    ----------
    nic_GBps : float
        The bandwidth of one NIC as NCCL reads it (GB/s; Mb/s / 8000).
    c : NcclConstants
        The constants (``search.speed_inter`` of the arch).

    Returns
    -------
    float
        GB/s per channel.

    References
    ----------
    NVIDIA/nccl v2.29.2-1 ``src/graph/search.cc`` (``ncclTopoCompute``: ``speedArray``,
    ``maxBw``).
    """
    speeds = [float(s) for s in c.data["search"]["speed_inter"][c.arch]]
    for s in speeds:
        if s <= nic_GBps * (1 + 1e-9):
            return s
    return speeds[-1]


def search_channels(r: FabricRates, c: NcclConstants) -> int:
    """The channels of NCCL's ring graph across servers (``graph->nChannels``), which its
    tuner multiplies its per-channel caps by (on one server: ``model.channels``).

    Steps 1 and 2 of the module docstring: the search's channels, duplicated by
    ``ncclTopoDupChannels``; ``ncclTopoPostset`` then sets up the communicator's channels
    (:func:`coll_channels`) without changing the graph's count.

    Parameters
    ----------
    r : FabricRates
        The sub-cluster (its NICs in use per server and the NIC rate).
    c : NcclConstants
        The constants (``[search]``).

    Returns
    -------
    int
        Channels of the graph (dimensionless).

    References
    ----------
    NVIDIA/nccl v2.29.2-1 ``src/graph/search.cc`` (``ncclTopoCompute``,
    ``ncclTopoDupChannels``), ``src/graph/tuning.cc`` (``busBw = graphs[a]->nChannels * bw``).

    Examples
    --------
    8x H100 with eight 400G NICs: 8 search channels at 48 GB/s, not duplicated (more than 4,
    under 50 GB/s).
    """
    return _search(r, c)[0]


def _search(r: FabricRates, c: NcclConstants) -> tuple[int, float]:
    """(graph channels, GB/s each) after the search and ncclTopoDupChannels."""
    if r.nodes == 1:
        return c.channels, 0.0
    s = c.data["search"]
    nic_GBps = r.nic_Bps / 1e9
    bw = search_speed_GBps(nic_GBps, c)
    n = min(int(s["ring_max_channels"]), max(1, r.nics_per_node) * max(1, int(nic_GBps // bw)))
    skip = c.arch in _FROM_SM80 and bw < s["dup_skip_below_GBps"]
    if bw >= s["dup_min_GBps"] and not (skip and n > s["dup_skip_above_channels"]):
        dup = min(2 * n, int(s["ring_max_channels"]))
        bw /= -(-dup // n)
        n = dup
    return c.cap_channels(n), bw


def coll_channels(r: FabricRates, c: NcclConstants) -> int:
    """NCCL's ``comm->nChannels`` across servers (on one server: ``model.channels``).

    Parameters
    ----------
    r : FabricRates
        The sub-cluster (its NICs in use per server and the NIC rate).
    c : NcclConstants
        The constants (``[search]``).

    Returns
    -------
    int
        Collective channels (dimensionless).

    References
    ----------
    NVIDIA/nccl v2.29.2-1 ``src/graph/search.cc`` (``ncclTopoCompute``,
    ``ncclTopoDupChannels``), ``src/graph/connect.cc`` (``ncclTopoPostset``), ``src/init.cc``
    (``ringGraph->maxChannels``). See the module docstring.

    Examples
    --------
    8x H100 with eight 400G NICs: 8 search channels at 48 GB/s, not duplicated (more than 4,
    under 50 GB/s), set up twice: 16, as the public p5 log of the constants file prints.
    """
    if r.nodes == 1:
        return c.channels
    s = c.data["search"]
    n, bw = _search(r, c)
    n = min(int(s["max_channels"]), 2 * n)
    if c.arch in _FROM_SM90 and bw > s["quad_min_GBps"] and n < s["quad_below_channels"]:
        n = min(int(s["max_channels"]), 2 * n)
    return c.cap_channels(n)


def p2p_channels(r: FabricRates, c: NcclConstants) -> int:
    """NCCL's ``p2pnChannels``: ``pow2Up(comm->nChannels)`` across servers (unless the constants
    file's ``model.p2p_channels.multi_node`` sets it); on one server ``one_node``.

    Parameters
    ----------
    r : FabricRates
        The sub-cluster.
    c : NcclConstants
        The constants.

    Returns
    -------
    int
        A power of two (dimensionless).

    References
    ----------
    NVIDIA/nccl v2.29.2-1 ``src/graph/paths.cc`` (``ncclTopoComputeP2pChannels``).
    """
    if r.nodes == 1:
        return c.p2p_channels(1)
    return c.p2p_channels(r.nodes) or pow2_up(coll_channels(r, c))
