"""Multi-plane Ethernet: a NIC's planes exposed as ports (ConnectX-8 on Spectrum-X).

A ConnectX-8 SuperNIC of 800 Gb/s runs as one port, as 2 x 400GbE or as 4 planes of 200G
(NVIDIA, ConnectX-8 firmware release notes v40.44.0208: "2 x 400GbE link speeds", a
"planarized topology"; NVIDIA Network Operator, Spectrum-X profile: ``--number-of-planes``
up to 4); each plane is its own fabric, with RoCE and adaptive routing inside it. The switch
ports are split the same way (Spectrum-4 SN5600: 64 x 800G, 128 x 400G or 256 x 200G by
breakout), so a plane of 4-plane NICs is built of switches of 4 times the radix at a quarter of
the rate: a "flat" two-tier plane of ``(Pk)^2/2`` endpoints.

:func:`split_planes` turns a spec with ``planes_per_nic = P`` into the spec of that fabric:
switches of ``P*k`` ports of ``link_gbps/P``, NICs of ``P`` ports (``nic_ports``, each on its
own port plane, :mod:`topo.builders.ports`). The builders then build it as any other.
"""

from __future__ import annotations

import dataclasses

from topo.spec import FabricSpec, SwitchSpec

__all__ = ["split_planes"]


def split_planes(spec: FabricSpec) -> FabricSpec:
    """The spec of ``spec``'s fabric with its multi-plane NICs exposed as ports.

    Parameters
    ----------
    spec : FabricSpec
        A checked spec; ``planes_per_nic`` ``P`` (None or 1: nothing to split).

    Returns
    -------
    FabricSpec
        ``spec`` itself when ``P`` is None or 1; else the same spec with the switch
        ``SwitchSpec(P*k, link_gbps/P)``, ``nic_ports = P`` and ``planes_per_nic`` None.

    Examples
    --------
    >>> from topo.spec import FabricSpec, SwitchSpec
    >>> s = split_planes(FabricSpec("ft2", SwitchSpec(64, 800), planes_per_nic=4))
    >>> s.switch.ports, s.switch.link_gbps, s.nic_ports
    (256, 200.0, 4)

    References
    ----------
    NVIDIA ConnectX-8 SuperNIC firmware release notes v40.44.0208; NVIDIA Spectrum-4 SN5000
    hardware user manual (SN5600 breakout to 128 x 400GbE or 256 x 200GbE).
    """
    p = spec.planes_per_nic
    if p is None or p == 1:
        return spec
    switch = SwitchSpec(spec.switch.ports * p, spec.switch.link_gbps / p)
    return dataclasses.replace(spec, switch=switch, nic_ports=p, planes_per_nic=None)
