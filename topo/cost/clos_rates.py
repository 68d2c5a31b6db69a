"""The all-to-all of a non-blocking fat tree in closed form: its servers' NIC bound.

A fat tree whose every switch has as much capacity up as down (the builders' ``ft2``, ``ft3``,
``mrft`` and ``mpft`` at oversubscription 1, any number of planes and NIC ports) is
rearrangeably non-blocking: it carries every traffic matrix that no server's NICs refuse (the
hose model; Al-Fares et al., SIGCOMM 2008, for the k-ary fat tree; V. E. Beneš, 1965, for the
three-stage Clos network, of which each pod and plane is an instance). The all-to-all's
maximum concurrent flow is then the bound of the cut around one server: with ``N`` GPUs, ``G``
to a server, and ``R`` (B/s) the most a server moves through its NICs in each direction, every
GPU sends ``lambda = R / (G (N - G))`` to each GPU of another server, and the intra-server
share moves over NVLink, where it binds only if ``nvlink x (N - G) < R / G x (G - 1)`` (then
no closed form is given). busbw = ``lambda (N - 1)`` (nccl-tests' all-to-all, :mod:`topo.flow`).

``R`` is the server's NIC side as :mod:`topo.builders` wires it: ``K`` NICs of ``P`` ports of
``L`` B/s each, every port's PCIe share ``m x pcie / P`` for the ``m = G / K`` GPUs its NIC
serves (:mod:`topo.builders.ports`), so ``R = K P min(L, m pcie / P)``. The tests hold it to the
LP on the built graph family by family; it is what ``topo bandwidth`` finds on those fabrics,
with no graph built (a 524,288-GPU, 1,048,576-endpoint design counts in a second).
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.builders.multiplane import split_planes
from topo.spec import FabricSpec
from topo.units import Bps_to_GBps, GBps_to_Bps, gbps_to_Bps

__all__ = ["CLOS_FAMILIES", "ClosAlltoall", "clos_alltoall"]

CLOS_FAMILIES = ("ft2", "ft3", "mrft", "mpft")
"""Families whose designs at oversubscription 1 are non-blocking fat trees."""


@dataclass(frozen=True)
class ClosAlltoall:
    """The all-to-all of a non-blocking fat tree, or why it has no closed form here.

    Attributes
    ----------
    busbw_GBps : float or None
        nccl-tests' all-to-all busbw per GPU, GB/s; None when ``note`` says why not.
    server_GBps : float
        ``R``: a server's NIC side, GB/s each way.
    method : str
        How the value follows (one line), or why there is none.
    """

    busbw_GBps: float | None
    server_GBps: float
    method: str

    def to_dict(self) -> dict[str, float | str | None]:
        """``alltoall_busbw_GBps``, ``alltoall_server_GBps`` and ``alltoall_method``."""
        return {
            "alltoall_busbw_GBps": self.busbw_GBps,
            "alltoall_server_GBps": self.server_GBps,
            "alltoall_method": self.method,
        }


def clos_alltoall(spec: FabricSpec, gpus: int) -> ClosAlltoall:
    """The all-to-all per GPU of the design ``spec`` with ``gpus`` GPUs, in closed form.

    Parameters
    ----------
    spec : FabricSpec
        A checked design (any family; ``planes_per_nic`` is split as the builder splits it).
    gpus : int
        ``N``: the design's GPUs, whole servers (:func:`topo.builders.fabric_counts`).

    Returns
    -------
    ClosAlltoall
        ``busbw_GBps = R (N - 1) / (G (N - G))`` GB/s (module docstring) for a family of
        :data:`CLOS_FAMILIES` at oversubscription 1 with more than one server and NVLink
        that does not bind; else None with the reason in ``method`` (an oversubscribed or
        other family: ``topo bandwidth`` on the built fabric solves it). Raises nothing for a
        checked spec and ``gpus`` from its counts.

    Examples
    --------
    >>> from topo.spec import FabricSpec
    >>> a = clos_alltoall(FabricSpec("mpft"), 16384)  # 8 x 400G a server: 50 x 16383 / 16376
    >>> round(a.busbw_GBps, 4), a.server_GBps
    (50.0214, 400.0)
    """
    s = split_planes(spec)
    srv = s.server
    g, k = srv.gpus, srv.nics
    p = s.nic_ports or 1
    m = g // k
    port = min(gbps_to_Bps(s.switch.link_gbps), m * GBps_to_Bps(srv.pcie_GBps) / p)
    r = k * p * port  # B/s
    server_GBps = Bps_to_GBps(r)
    if s.family not in CLOS_FAMILIES:
        why = f"{s.family} is not a fat tree: topo bandwidth on the built fabric solves it"
        return ClosAlltoall(None, server_GBps, why)
    if s.oversubscription != 1:
        why = (
            f"oversubscribed {s.oversubscription:g}:1, not non-blocking: topo bandwidth on the "
            "built fabric solves it"
        )
        return ClosAlltoall(None, server_GBps, why)
    if gpus <= g:
        return ClosAlltoall(None, server_GBps, "one server: the all-to-all stays on NVLink")
    if GBps_to_Bps(srv.nvlink_GBps) * (gpus - g) < r / g * (g - 1):
        why = "NVLink may bind the servers' own share: topo bandwidth on the built fabric solves it"
        return ClosAlltoall(None, server_GBps, why)
    busbw = Bps_to_GBps(r * (gpus - 1) / (g * (gpus - g)))
    method = (
        "closed form: a non-blocking fat tree carries what its servers' NICs send (hose "
        f"model), R (N-1)/(G (N-G)) with R = {server_GBps:g} GB/s a server"
    )
    return ClosAlltoall(busbw, server_GBps, method)
