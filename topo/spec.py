"""Specifications of a switch, a server and a fabric; fabric specs in TOML files.

:class:`SwitchSpec`, :class:`ServerSpec` and :class:`FabricSpec` are frozen and check
themselves when made: an instance is a valid input of the builders (:mod:`topo.builders`),
:func:`topo.builders.max_gpus` and :func:`topo.cost.plan`. Their errors are
:class:`topo.errors.SpecError` naming the parameter at fault as :func:`topo.builders.build` and
spec files spell it (``switch_ports``, ``gpus_per_node``, ...).

A spec file (``examples/*.toml``) holds the arguments of :func:`topo.builders.build` under
their Python names, with the same units as the command line::

    family = "mpft"          # ft2, ft3, mrft, mpft
    switch_ports = 64        # radix
    link_gbps = 400          # Gb/s per port
    gpus = 2048              # optional: default is the family's maximum
    gpus_per_node = 8
    nics_per_node = 8
    nvlink_GBps = 200        # GB/s per GPU per direction
    pcie_GBps = 64           # GB/s per direction
    oversubscription = 1

``nic_ports`` (ports per NIC, each on its own plane) and ``planes_per_nic`` (a multi-plane
NIC's 1, 2 or 4 planes, its rate and every switch port split over them) apply to the fat trees
and ``rail-only``. Dragonfly and Slim Fly take their own keys (``routers_per_group``,
``endpoints_per_router``, ``global_ports``, ``groups``, ``arrangement``; ``q``,
``endpoints_per_router``). Only ``family`` is required; the rest default as in
:func:`topo.builders.build`. :func:`load_spec` reads a file into a :class:`FabricSpec`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from topo.errors import FormatError, SpecError, TopoError
from topo.files import long_number, read_text, toml_error
from topo.units import gbps_to_Bps
from topo.wording import shown

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ARRANGEMENTS",
    "BUILD_KEYS",
    "FAMILIES",
    "FAMILY_OPTIONS",
    "FabricSpec",
    "MAX_GPUS_PER_NODE",
    "MAX_NIC_PORTS",
    "PLANES_PER_NIC",
    "PORT_PLANE_FAMILIES",
    "MAX_SWITCH_PORTS",
    "RATE_RANGE",
    "TIERS_RANGE",
    "SPEC_KEYS",
    "ServerSpec",
    "SwitchSpec",
    "as_int",
    "leaf_split",
    "load_spec",
    "positive_rate",
    "whole_ratios",
]

FAMILIES: tuple[str, ...] = (
    "ft2",
    "ft3",
    "mrft",
    "mpft",
    "dragonfly",
    "slimfly",
    "rail-only",
    "hpn",
)
"""The fabric families :func:`topo.builders.build` knows."""

FAMILY_OPTIONS: dict[str, frozenset[str]] = {
    "dragonfly": frozenset(
        {"routers_per_group", "endpoints_per_router", "global_ports", "groups", "arrangement"}
    ),
    "slimfly": frozenset({"q", "endpoints_per_router"}),
    "mrft": frozenset({"tiers"}),
    "mpft": frozenset({"tiers"}),
}
"""The family-specific fields of :class:`FabricSpec` (keyword arguments of ``build``)."""

NONBLOCKING_ONLY = frozenset({"ft3", "dragonfly", "slimfly"})
"""Families built non-blocking only (``oversubscription`` must be 1)."""

TIERS_RANGE = (2, 3)
"""Switch tiers an MRFT or MPFT may be built with (``tiers``): two (leaf, spine) or three (leaf,
pod spine, core; NVIDIA's rail-optimised DGX SuperPOD beyond 8 scalable units)."""

ARRANGEMENTS = ("consecutive", "palmtree")
"""Named global-link arrangements of a Dragonfly (:func:`topo.builders.dragonfly.dragonfly`)."""

RATE_RANGE = (1e-3, 1e6)
"""Accepted link, NVLink and PCIe rates (in their own units, Gb/s or GB/s): 1 Mb/s to
1 Pb/s. Outside that a number is a typo, and the flow LP could not resolve it next to
ordinary links."""

MAX_GPUS_PER_NODE = 1024
"""Largest server accepted, in GPUs."""

MAX_NIC_PORTS = 16
"""Most ports per NIC accepted: a fabric of ``P``-port NICs is ``P`` copies of its plane fabric,
so the bound keeps graphs sane; today's NICs have 1 or 2 (ConnectX-7, ConnectX-8)."""

MAX_SWITCH_PORTS = 1024
"""Largest radix accepted (today's largest switches have 256 or 512 logical ports); bigger
values are typos that would make the size formulas and the plan's program explode."""


def as_int(name: str, value: Any) -> int:
    """``value`` as an int, or SpecError (``param`` ``name``) if it is not a whole number
    (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise SpecError(f"{name} must be a whole number, got {shown(value)}", param=name)
    return int(value)


def positive_rate(name: str, value: Any, unit: str) -> float:
    """``value`` as a float in :data:`RATE_RANGE` (``unit`` for the message: Gb/s, GB/s), or
    SpecError naming ``name``."""
    x = float(value) if isinstance(value, Real) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(x) and x > 0):
        raise SpecError(
            f"{name} must be a positive number of {unit}, got {shown(value)}", param=name
        )
    lo, hi = RATE_RANGE
    if not lo <= x <= hi:
        raise SpecError(
            f"{name} must be between {lo:g} and {hi:g} {unit}, got {shown(value)}", param=name
        )
    return x


def whole_ratios(k: int) -> list[int]:
    """The whole-number oversubscription ratios of a ``k``-port leaf: ``k/u - 1`` for ``u | k``,
    ``u <= k/2`` (for 64 ports: 1, 3, 7, 15, 31, 63)."""
    return sorted(k // u - 1 for u in range(1, k // 2 + 1) if k % u == 0)


def leaf_split(k: int, oversubscription: Any) -> tuple[int, int]:
    """A leaf's (up, down) ports for oversubscription ``r``: ``up = k/(r+1)`` must be whole, >= 1.

    Raises
    ------
    SpecError
        If ``r`` < 1, is not a finite number, or does not give a whole number of up ports.
    """
    ok = isinstance(oversubscription, Real) and not isinstance(oversubscription, bool)
    r = float(oversubscription) if ok else math.nan
    if not (math.isfinite(r) and r >= 1):
        raise SpecError(
            "oversubscription must be a number of at least 1 (1 = non-blocking), "
            f"got {shown(oversubscription)}",
            param="oversubscription",
        )
    up_exact = k / (r + 1)
    up = round(up_exact)
    if up < 1 or abs(up_exact - up) > 1e-9 * k:
        ratios = ", ".join(str(x) for x in whole_ratios(k))
        # (as many digits as show that it is not whole: 21.33, 3.9999998)
        quotient = next(
            (t for t in (f"{up_exact:.{d}g}" for d in (4, 7, 10, 15)) if t != str(up)),
            f"{up_exact!r}",
        )
        raise SpecError(
            f"oversubscription {r:.15g} does not give a whole number of up ports on a leaf "
            f"of {k} ports ({k}/({r:.15g}+1) = {quotient}); the whole-number ratios "
            f"for {k} ports are {ratios} (in general (k-u)/u for u = 1..{k // 2} up ports)",
            param="oversubscription",
            names=(),
        )
    return up, k - up


def _set(obj: object, **values: Any) -> None:
    """Store checked values on a frozen dataclass while it initialises."""
    for key, value in values.items():
        object.__setattr__(obj, key, value)


@dataclass(frozen=True)
class SwitchSpec:
    """A switch model: its radix and port rate.

    Parameters
    ----------
    ports : int
        Radix ``k`` (ports per switch); even, from 4 to :data:`MAX_SWITCH_PORTS`. Errors name
        it ``switch_ports``.
    link_gbps : float
        Rate of one port and of its cable (NIC-switch and switch-switch), Gb/s.

    Raises
    ------
    SpecError
        Radix odd, below 4 or above 1024 or not a whole number; a rate outside
        :data:`RATE_RANGE`.

    Examples
    --------
    >>> SwitchSpec(64, 400).line_Bps
    50000000000.0
    """

    ports: int = 64
    link_gbps: float = 400.0

    def __post_init__(self) -> None:
        k = as_int("switch_ports", self.ports)
        if k < 4 or k % 2 or k > MAX_SWITCH_PORTS:
            raise SpecError(
                f"switch_ports must be an even number from 4 to {MAX_SWITCH_PORTS}, got {shown(k)}",
                param="switch_ports",
            )
        _set(self, ports=k, link_gbps=positive_rate("link_gbps", self.link_gbps, "Gb/s"))

    @property
    def line_Bps(self) -> float:
        """Rate of one cable, B/s per direction."""
        return gbps_to_Bps(self.link_gbps)


@dataclass(frozen=True)
class ServerSpec:
    """A GPU server ("node"): GPUs joined by NVLink, NICs reached over PCIe.

    Parameters
    ----------
    gpus : int
        GPUs per server, 1 to :data:`MAX_GPUS_PER_NODE` (errors name it ``gpus_per_node``).
    nics : int
        NICs (fabric endpoints) per server; divides ``gpus`` (``nics_per_node``). Rails in
        MRFT, planes in MPFT.
    nvlink_GBps : float
        NVLink rate from each GPU to the server's NVSwitch, GB/s per direction.
    pcie_GBps : float
        PCIe rate between a GPU and its NIC, GB/s per direction.
    gpus_per_host : int, optional
        GPUs of each host (``gpus_per_host``) when the server is an NVLink domain of several
        hosts: a GB200 NVL72 rack is one server of 72 GPUs joined by NVLink and 18 compute
        trays of 4, the nodes Slurm and nccl-tests count. None (default): the server is one
        host. Must divide ``gpus``, and the hosts must divide ``nics`` (each host its own
        NICs: GPU ``i`` is on host ``i // gpus_per_host`` and NIC ``i * nics // gpus``).

    Raises
    ------
    SpecError
        A count out of range or not whole; more NICs than GPUs, or NICs not dividing GPUs; a
        rate outside :data:`RATE_RANGE`; ``gpus_per_host`` not dividing the GPUs, or its hosts
        not dividing the NICs.

    Examples
    --------
    >>> ServerSpec(8, 4).gpus_per_nic
    2
    """

    gpus: int = 8
    nics: int = 8
    nvlink_GBps: float = 200.0
    pcie_GBps: float = 64.0
    gpus_per_host: int | None = None

    def __post_init__(self) -> None:
        gpn = as_int("gpus_per_node", self.gpus)
        nics = as_int("nics_per_node", self.nics)
        names = ("nics_per_node", "gpus_per_node")
        if not 1 <= gpn <= MAX_GPUS_PER_NODE:
            raise SpecError(
                f"gpus_per_node must be from 1 to {MAX_GPUS_PER_NODE}, got {shown(gpn)}",
                param="gpus_per_node",
            )
        if nics < 1:
            raise SpecError(f"nics_per_node must be at least 1, got {shown(nics)}", param=names[0])
        if nics > gpn:
            raise SpecError(
                f"nics_per_node ({nics}) must not exceed gpus_per_node ({gpn}): "
                "each GPU reaches the fabric through one NIC",
                param=names[0],
                names=names,
            )
        if gpn % nics:
            raise SpecError(
                f"nics_per_node ({nics}) must divide gpus_per_node ({gpn}) so every NIC "
                "serves the same number of GPUs",
                param=names[0],
                names=names,
            )
        _set(
            self,
            gpus=gpn,
            nics=nics,
            nvlink_GBps=positive_rate("nvlink_GBps", self.nvlink_GBps, "GB/s"),
            pcie_GBps=positive_rate("pcie_GBps", self.pcie_GBps, "GB/s"),
        )
        if self.gpus_per_host is not None:
            _set(self, gpus_per_host=_check_hosts(self.gpus_per_host, gpn, nics))

    @property
    def gpus_per_nic(self) -> int:
        """GPUs that share one NIC."""
        return self.gpus // self.nics

    @property
    def hosts(self) -> int:
        """Hosts in the server: ``gpus / gpus_per_host``, 1 when it is one host."""
        return 1 if self.gpus_per_host is None else self.gpus // self.gpus_per_host


def _check_hosts(gph: Any, gpus: int, nics: int) -> int:
    """``gpus_per_host`` checked against the server's GPUs and NICs (:class:`ServerSpec`)."""
    g = as_int("gpus_per_host", gph)
    if not 1 <= g <= gpus or gpus % g:
        raise SpecError(
            f"gpus_per_host ({g}) must divide gpus_per_node ({gpus}): every host of the "
            "NVLink domain holds the same number of GPUs",
            param="gpus_per_host",
            names=("gpus_per_host", "gpus_per_node"),
        )
    if nics % (gpus // g):
        raise SpecError(
            f"gpus_per_host ({g}) makes {gpus // g} hosts, which do not divide the "
            f"nics_per_node ({nics}): each host needs the same number of its own NICs",
            param="gpus_per_host",
            names=("gpus_per_host", "nics_per_node"),
        )
    return g


@dataclass(frozen=True)
class FabricSpec:
    """A fabric to build: its family, switch, server, size and family parameters.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    switch : SwitchSpec
        The switch of every tier (default: 64 ports of 400 Gb/s).
    server : ServerSpec
        The server (default: 8 GPUs, 8 NICs, 200 GB/s NVLink, 64 GB/s PCIe).
    gpus : int or None
        GPUs to connect, a positive multiple of the server's GPUs; None builds the family's
        maximum (the builder checks the ceiling).
    oversubscription : float
        Leaf down-port over up-port bandwidth ``r`` (1 = non-blocking); ``k/(r+1)`` must be a
        whole number; 1 for ``ft3``, ``dragonfly`` and ``slimfly``.
    routers_per_group, endpoints_per_router, global_ports, groups : int or None
        Dragonfly ``a``, ``p``, ``h``, ``g`` (``endpoints_per_router`` is Slim Fly's ``p``
        too); None takes the family's default.
    arrangement : str or None
        Dragonfly global-link arrangement (:data:`ARRANGEMENTS`); None: ``consecutive``.
    q : int or None
        Slim Fly MMS parameter, a prime power; None: the largest that fits.
    tiers : int or None
        MRFT and MPFT: switch tiers, 2 or 3 (:data:`TIERS_RANGE`); None: 2.
    nic_ports : int or None
        Fat trees (``ft2``, ``ft3``, ``mrft``, ``mpft``) and ``rail-only``: ports per NIC, 1 to
        :data:`MAX_NIC_PORTS`; port ``p`` of every NIC is cabled into port plane ``p``, a copy
        of the family's fabric (``link_gbps`` is the rate of one port). None: 1.
    planes_per_nic : int or None
        Multi-plane NICs (ConnectX-8 SuperNIC on Spectrum-X: 1, 2 or 4 planes): a NIC of
        ``link_gbps`` exposes ``P`` ports of ``link_gbps/P``, each on its own plane, and every
        switch port is split the same way (``P*k`` ports of ``link_gbps/P``; SN5600: 64 x 800G,
        128 x 400G, 256 x 200G); :func:`topo.builders.multiplane.split_planes`. Fat trees
        and rail-only; not with ``nic_ports``. None: 1.
    name, description : str or None
        A name for the graph (default ``<family>-<gpus>``) and a note, from spec files.

    Raises
    ------
    SpecError
        Unknown family; a family parameter given to a family that takes none; a bad
        oversubscription; ``gpus`` not a positive multiple of the server's GPUs; a family
        parameter not a whole number or below 1; an unknown arrangement.

    Examples
    --------
    >>> s = FabricSpec("mpft", SwitchSpec(ports=16))
    >>> s.planes, s.rails, s.up_ports, s.down_ports
    (8, 1, 8, 8)
    >>> FabricSpec.from_options("ft2", switch_ports=8, gpus=64).to_options()["gpus"]
    64
    """

    family: str
    switch: SwitchSpec = field(default_factory=SwitchSpec)
    server: ServerSpec = field(default_factory=ServerSpec)
    gpus: int | None = None
    oversubscription: float = 1.0
    routers_per_group: int | None = None
    endpoints_per_router: int | None = None
    global_ports: int | None = None
    groups: int | None = None
    arrangement: str | None = None
    q: int | None = None
    tiers: int | None = None
    nic_ports: int | None = None
    planes_per_nic: int | None = None
    name: str | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        _check_family(self.family, self.options)
        if self.family in NONBLOCKING_ONLY and (
            isinstance(self.oversubscription, bool)
            or not isinstance(self.oversubscription, Real)
            or self.oversubscription != 1
        ):
            raise SpecError(
                f"oversubscription must be 1 for {self.family} (this builder makes "
                f"non-blocking fabrics only), got {shown(self.oversubscription)}",
                param="oversubscription",
            )
        leaf_split(self.switch.ports, self.oversubscription)
        _set(self, oversubscription=float(self.oversubscription))
        if self.gpus is not None:
            n, gpn = as_int("gpus", self.gpus), self.server.gpus
            if n < 1 or n % gpn:
                raise SpecError(
                    f"gpus must be a positive multiple of gpus_per_node ({gpn}), got {shown(n)}",
                    param="gpus",
                    names=("gpus", "gpus_per_node"),
                )
            _set(self, gpus=n)
        for key in ("routers_per_group", "endpoints_per_router", "global_ports"):
            value = getattr(self, key)
            if value is not None and as_int(key, value) < 1:
                raise SpecError(f"{key} must be at least 1, got {shown(value)}", param=key)
        for key in ("groups", "q"):
            if getattr(self, key) is not None:
                _set(self, **{key: as_int(key, getattr(self, key))})
        if self.nic_ports is not None:
            _check_nic_ports(self.family, as_int("nic_ports", self.nic_ports))
        if self.planes_per_nic is not None:
            _check_planes_per_nic(self, as_int("planes_per_nic", self.planes_per_nic))
        if self.tiers is not None and as_int("tiers", self.tiers) not in TIERS_RANGE:
            raise SpecError(
                f"tiers must be 2 or 3 for {self.family}, got {shown(self.tiers)}", param="tiers"
            )
        if self.arrangement is not None and self.arrangement not in ARRANGEMENTS:
            raise SpecError(
                f"unknown arrangement {self.arrangement!r}; choose one of "
                f"{', '.join(ARRANGEMENTS)}",
                param="arrangement",
                names=(),
            )

    @classmethod
    def from_options(cls, family: Any, **options: Any) -> FabricSpec:
        """The spec of ``build(family, **options)``: flat keyword arguments of
        :func:`topo.builders.build` (:data:`BUILD_KEYS`, plus ``name``, ``description``);
        family parameters left at None take the family's default.

        ``family`` may be an Enum member whose value is the name (the command line's).

        Raises
        ------
        SpecError
            As :class:`FabricSpec`, and for a keyword no family takes.
        """
        name = str(getattr(family, "value", family))
        given = {k: v for k, v in options.items() if v is not None}
        _check_family(name, {k: v for k, v in given.items() if k not in _COMMON_KEYS})
        switch = SwitchSpec(
            **{
                f: given[k]
                for k, f in (("switch_ports", "ports"), ("link_gbps", "link_gbps"))
                if k in given
            }
        )
        server = ServerSpec(**{f: given[k] for k, f in _SERVER_KEYS if k in given})
        rest = {k: v for k, v in given.items() if k in _FABRIC_FIELDS}
        return cls(name, switch, server, **rest)

    @property
    def options(self) -> dict[str, Any]:
        """The family parameters that are set (Dragonfly, Slim Fly), by keyword."""
        return {k: getattr(self, k) for k in sorted(_FAMILY_KEYS) if getattr(self, k) is not None}

    @functools.cached_property
    def up_ports(self) -> int:
        """A leaf's up ports (to spines): ``u = k/(r+1)``."""
        return leaf_split(self.switch.ports, self.oversubscription)[0]

    @functools.cached_property
    def down_ports(self) -> int:
        """A leaf's down ports (to NICs): ``d = k - u``."""
        return self.switch.ports - self.up_ports

    @property
    def planes(self) -> int:
        """Independent fabrics: the server's NICs for ``mpft`` and ``rail-only`` (each rail its
        own plane), 2 for ``hpn`` (one per NIC port), else 1."""
        if self.family == "hpn":
            return 2
        return self.server.nics if self.family in ("mpft", "rail-only") else 1

    @property
    def rails(self) -> int:
        """Rails that share one spine layer: the server's NICs for ``mrft``, else 1."""
        return self.server.nics if self.family == "mrft" else 1

    def replace(self, **options: Any) -> FabricSpec:
        """A copy with flat options (as :meth:`from_options`) changed; None leaves a family
        parameter to its default."""
        merged = {**self.to_options(), **options}
        return FabricSpec.from_options(merged.pop("family"), **merged)

    def to_options(self) -> dict[str, Any]:
        """The flat keyword arguments of :func:`topo.builders.build` for this spec, with
        ``family`` (the inverse of :meth:`from_options`; unset fields left out)."""
        d: dict[str, Any] = dict(
            family=self.family,
            switch_ports=self.switch.ports,
            link_gbps=self.switch.link_gbps,
            gpus_per_node=self.server.gpus,
            nics_per_node=self.server.nics,
            nvlink_GBps=self.server.nvlink_GBps,
            pcie_GBps=self.server.pcie_GBps,
            oversubscription=self.oversubscription,
        )
        if self.server.gpus_per_host is not None:
            d["gpus_per_host"] = self.server.gpus_per_host
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if (
                f.name not in ("family", "switch", "server", "oversubscription")
                and value is not None
            ):
                d[f.name] = value
        return d


_SERVER_KEYS = (
    ("gpus_per_node", "gpus"),
    ("nics_per_node", "nics"),
    ("nvlink_GBps", "nvlink_GBps"),
    ("pcie_GBps", "pcie_GBps"),
    ("gpus_per_host", "gpus_per_host"),
)
_FAMILY_KEYS = frozenset(k for keys in FAMILY_OPTIONS.values() for k in keys)
_COMMON_KEYS = frozenset(
    {
        "switch_ports",
        "link_gbps",
        "gpus",
        "oversubscription",
        "name",
        "description",
        "nic_ports",
        "planes_per_nic",
    }
    | {k for k, _ in _SERVER_KEYS}
)
_FABRIC_FIELDS = frozenset(
    {"gpus", "oversubscription", "name", "description", "nic_ports", "planes_per_nic"}
    | _FAMILY_KEYS
)


PORT_PLANE_FAMILIES = ("ft2", "ft3", "mrft", "mpft", "rail-only")
"""Families whose NICs may have ports on port planes (``nic_ports``, ``planes_per_nic``)."""

PLANES_PER_NIC = (1, 2, 4)
"""Planes a multi-plane NIC exposes (ConnectX-8 SuperNIC: 800G as 1, 2 x 400G or 4 x 200G)."""


def _check_nic_ports(family: str, ports: int) -> None:
    """SpecError for a port count out of range or given to a family without NICs on planes."""
    if family not in PORT_PLANE_FAMILIES:
        raise SpecError(
            f"nic_ports applies to the fat trees (ft2, ft3, mrft, mpft) and rail-only, not "
            f"{family}",
            param="nic_ports",
        )
    if not 1 <= ports <= MAX_NIC_PORTS:
        raise SpecError(
            f"nic_ports must be from 1 to {MAX_NIC_PORTS}, got {shown(ports)}", param="nic_ports"
        )


def _check_planes_per_nic(spec: FabricSpec, planes: int) -> None:
    """SpecError for a plane count a multi-plane NIC does not have, a family without port
    planes, ``nic_ports`` beside it, or a split switch past :data:`MAX_SWITCH_PORTS`."""
    if spec.family not in PORT_PLANE_FAMILIES:
        raise SpecError(
            f"planes_per_nic applies to the fat trees (ft2, ft3, mrft, mpft) and rail-only, not "
            f"{spec.family}",
            param="planes_per_nic",
        )
    if planes not in PLANES_PER_NIC:
        raise SpecError(
            f"planes_per_nic must be 1, 2 or 4 (a ConnectX-8's 800G as 1, 2 x 400G or "
            f"4 x 200G), got {shown(planes)}",
            param="planes_per_nic",
        )
    if spec.nic_ports is not None:
        raise SpecError(
            "give nic_ports or planes_per_nic, not both: planes_per_nic splits the NIC's "
            "link_gbps over its planes, nic_ports gives every port link_gbps",
            param="planes_per_nic",
            names=("planes_per_nic", "nic_ports"),
        )
    if spec.switch.ports * planes > MAX_SWITCH_PORTS:
        raise SpecError(
            f"planes_per_nic {planes} splits the {spec.switch.ports} switch ports into "
            f"{spec.switch.ports * planes}, above {MAX_SWITCH_PORTS}",
            param="planes_per_nic",
            names=("planes_per_nic", "switch_ports"),
        )


def _check_family(family: Any, options: dict[str, Any]) -> None:
    """SpecError for an unknown family or a parameter it does not take."""
    if family not in FAMILIES:
        raise SpecError(
            f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}",
            param="family",
            names=(),
        )
    given = {k for k, v in options.items() if v is not None}
    extra = given - FAMILY_OPTIONS.get(family, frozenset())
    if extra:
        raise SpecError(
            f"{family} takes no option {', '.join(sorted(extra))}",
            param=sorted(extra)[0],
            names=(),
        )


SPEC_KEYS: dict[str, tuple[type, ...]] = {
    "family": (str,),
    "name": (str,),
    "description": (str,),
    "switch_ports": (int,),
    "link_gbps": (int, float),
    "gpus": (int,),
    "gpus_per_node": (int,),
    "nics_per_node": (int,),
    "gpus_per_host": (int,),
    "nvlink_GBps": (int, float),
    "pcie_GBps": (int, float),
    "oversubscription": (int, float),
    "routers_per_group": (int,),
    "endpoints_per_router": (int,),
    "global_ports": (int,),
    "groups": (int,),
    "arrangement": (str,),
    "q": (int,),
    "tiers": (int,),
    "nic_ports": (int,),
    "planes_per_nic": (int,),
}
"""Keys a spec file may hold, with the TOML types each accepts."""

BUILD_KEYS = frozenset(SPEC_KEYS) - {"family", "name", "description"}
"""The keys of a spec file that are arguments of :func:`topo.builders.build`."""


def load_spec(path: str | Path, **overrides: Any) -> FabricSpec:
    """Read a fabric spec from a TOML file.

    Parameters
    ----------
    path : str or Path
        The TOML file.
    **overrides
        Flat build arguments (:data:`BUILD_KEYS`) that win over the file's (the options a
        user gave on the command line); None values are ignored.

    Returns
    -------
    FabricSpec
        The file's ``family`` and build arguments, ``name`` and ``description``.

    Raises
    ------
    FormatError
        Missing or unreadable file, TOML syntax error (with its line), an unknown key, a value
        of the wrong type, or no ``family``.
    SpecError
        A value the spec refuses (:class:`FabricSpec`): one of the file's, the message
        starting with the file and naming its keys as the file spells them (``names`` holds
        only the overrides it mentions); one of ``overrides``, as :class:`FabricSpec` says.

    Examples
    --------
    >>> spec = load_spec("examples/deepseek-v3-2048-mpft.toml")  # doctest: +SKIP
    >>> spec.family, spec.gpus, spec.switch.ports                # doctest: +SKIP
    ('mpft', 2048, 64)
    """
    path = Path(path)
    data = _read_table(path)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return FabricSpec.from_options(data.pop("family"), **data)
    except SpecError as exc:
        given = [k for k, v in overrides.items() if v is not None]
        raise spec_file_error(exc, path, given) from None


def spec_file_error(exc: TopoError, path: str | Path, given: Iterable[str]) -> TopoError:
    """The error to report for ``exc``, raised by a spec read from ``path``.

    Parameters
    ----------
    exc : TopoError
        The error of the spec (or of building it).
    path : str or Path
        The spec file.
    given : iterable of str
        The parameters the caller gave beside the file (overrides, e.g. command-line options).

    Returns
    -------
    TopoError
        ``exc`` itself when one of ``given`` is at fault; else ``exc`` with the file before
        its message and only the names of ``given`` parameters left to respell (the file's
        keys are named as the file spells them: ``switch_ports``, not ``--switch-ports``).
    """
    given = set(given)
    if exc.param in given:  # the caller's own argument is at fault, not the file
        return exc
    err = exc.prefixed(f"{path}: ")
    err.names = tuple(n for n in exc.names if n in given)
    return err


def parse_toml(path: str | Path, text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, its errors as :class:`FormatError` naming ``path`` and line.

    Parameters
    ----------
    path : str or Path
        The file ``text`` came from.
    text : str
        Its content.

    Returns
    -------
    dict
        The TOML document.

    Raises
    ------
    FormatError
        If ``text`` is not TOML, or holds a run of more than
        :data:`topo.files.MAX_NUMBER_DIGITS` digits (Python cannot convert integers of over
        4,300 digits; ``tomllib`` raises a plain ``ValueError``).
    """
    error = long_number(path, text)
    if error is not None:
        raise error
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc) from None


def _read_table(path: Path) -> dict[str, Any]:
    """The TOML table of a spec file, its keys and value types checked."""
    data = parse_toml(path, read_text(path))
    for key, value in data.items():
        if key not in SPEC_KEYS:
            raise FormatError(path, f"unknown key {key!r}; expected one of {', '.join(SPEC_KEYS)}")
        types = SPEC_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join(
                "an integer" if t is int else "a number" if t is float else "a string"
                for t in types
            )
            raise FormatError(path, f"{key} must be {want}, got {shown(value)}")
    if "family" not in data:
        raise FormatError(path, f"missing key 'family' (one of {', '.join(FAMILIES)})")
    return data
