"""The hardware catalog: named switches, GPU servers, NICs and optics, each with its source.

The catalog ships as ``topo/data/catalog.toml`` (its header states the rules: a figure only
where a public document states it, the document named beside it; no invented price or
power). :func:`load_catalog` reads it into a :class:`Catalog`; :meth:`Catalog.switch` and
:meth:`Catalog.node` turn a name (``qm9700``, ``q3400``, ``sn5600``, ``h800``, ``b200``,
``gb200-nvl72``, ...) into the :class:`~topo.spec.SwitchSpec` or :class:`~topo.spec.ServerSpec`
the builders take. An unknown name is a :class:`~topo.errors.SpecError` that lists the known
ones.

Units as everywhere in topo's inputs: link rates in Gb/s as vendors state them, NVLink and PCIe
in GB/s per direction, power in W, reach in m.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from topo.errors import FormatError, SpecError
from topo.files import read_text, toml_error
from topo.spec import ServerSpec, SwitchSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "CATALOG_KINDS",
    "Catalog",
    "Entry",
    "default_catalog_path",
    "load_catalog",
    "named_options",
]

CATALOG_KINDS = ("switch", "node", "nic", "optic")
"""The sections of a catalog file, in the order ``topo catalog`` lists them."""

_REQUIRED: dict[str, tuple[str, ...]] = {
    "switch": ("model", "ports", "gbps", "source"),
    "node": ("model", "arch", "gpus", "nics", "nic", "nvlink_GBps", "pcie_GBps", "source"),
    "nic": ("model", "gbps", "ports", "source"),
    "optic": ("model", "kind", "gbps", "source"),
}


@dataclass(frozen=True)
class Entry:
    """One catalog entry: a switch, a server (node), a NIC or an optic.

    Parameters
    ----------
    kind : str
        One of :data:`CATALOG_KINDS`.
    name : str
        Its lower-case name (``qm9700``, ``gb200-nvl72``).
    figures : dict
        Every key of the entry but ``source``: ``model``, ``ports``, ``gbps`` (Gb/s),
        ``nvlink_GBps`` and ``pcie_GBps`` (GB/s per direction), ``watts`` (W), ``reach_m`` (m),
        ``price_usd`` (US dollars), ... as the file gives them; absent figures are absent.
    source : str
        The public document(s) the figures come from.
    """

    kind: str
    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def get(self, key: str, default: Any = None) -> Any:
        """A figure by key, or ``default`` if the catalog gives none."""
        return self.figures.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``kind``, ``name``, the figures, ``source``."""
        return {"kind": self.kind, "name": self.name, **self.figures, "source": self.source}


@dataclass(frozen=True)
class Catalog:
    """The named hardware of one catalog file.

    Parameters
    ----------
    entries : tuple of Entry
        In file order, by kind.
    path : str
        The file read.
    """

    entries: tuple[Entry, ...]
    path: str = ""

    def names(self, kind: str) -> list[str]:
        """The names of the entries of ``kind``, in file order."""
        return [e.name for e in self.entries if e.kind == kind]

    def get(self, kind: str, name: str) -> Entry:
        """The entry of ``kind`` called ``name`` (case-insensitive).

        Raises
        ------
        SpecError
            Unknown name; the message lists the known names of that kind (``param`` is
            ``switch`` or ``node``, as the command line's ``--switch`` and ``--node``).
        """
        key = str(name).strip().lower()
        for e in self.entries:
            if e.kind == kind and e.name == key:
                return e
        raise SpecError(
            f"unknown {kind} {name!r}; the catalog knows {', '.join(self.names(kind))}",
            param=kind,
        )

    def switch(self, name: str) -> SwitchSpec:
        """The :class:`~topo.spec.SwitchSpec` of switch ``name`` (its ports and Gb/s per port).

        Raises
        ------
        SpecError
            Unknown name (the known ones listed).
        """
        e = self.get("switch", name)
        return SwitchSpec(ports=e.get("ports"), link_gbps=e.get("gbps"))

    def node(self, name: str) -> ServerSpec:
        """The :class:`~topo.spec.ServerSpec` of server ``name``: GPUs, NICs, NVLink and PCIe
        (GB/s per direction).

        Raises
        ------
        SpecError
            Unknown name (the known ones listed).
        """
        e = self.get("node", name)
        return ServerSpec(
            gpus=e.get("gpus"),
            nics=e.get("nics"),
            nvlink_GBps=e.get("nvlink_GBps"),
            pcie_GBps=e.get("pcie_GBps"),
        )

    def nic_gbps(self, node: str) -> float:
        """The port rate (Gb/s) of the NICs of server ``node``."""
        return float(self.get("nic", self.get("node", node).get("nic")).get("gbps"))


def default_catalog_path() -> Path:
    """The catalog shipped with topo: ``topo/data/catalog.toml``."""
    return Path(str(resources.files("topo") / "data" / "catalog.toml"))


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read a catalog file (default: :func:`default_catalog_path`).

    Parameters
    ----------
    path : str or Path or None
        A TOML file of ``[switch.NAME]``, ``[node.NAME]``, ``[nic.NAME]`` and ``[optic.NAME]``
        tables (the shipped file documents the keys).

    Returns
    -------
    Catalog
        Its entries, in file order.

    Raises
    ------
    FormatError
        Unreadable file, bad TOML, an unknown section, an entry without a required key
        (every entry needs ``model`` and ``source``), a node whose ``nic`` is not in the file.
    """
    p = Path(path) if path is not None else default_catalog_path()
    try:
        data = tomllib.loads(read_text(p))
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(p, exc) from None
    entries: list[Entry] = []
    for kind, table in data.items():
        if kind not in CATALOG_KINDS or not isinstance(table, dict):
            raise FormatError(p, f"unknown section {kind!r}; expected {', '.join(CATALOG_KINDS)}")
        for name, item in table.items():
            missing = [k for k in _REQUIRED[kind] if k not in item]
            if missing:
                raise FormatError(p, f"{kind}.{name}: missing {', '.join(missing)}")
            figures = {k: v for k, v in item.items() if k != "source"}
            entries.append(Entry(kind, name.lower(), figures, str(item["source"])))
    nics = {e.name for e in entries if e.kind == "nic"}
    for e in entries:
        if e.kind == "node" and e.get("nic") not in nics:
            raise FormatError(p, f"node.{e.name}: nic {e.get('nic')!r} is not in [nic]")
    order = {k: i for i, k in enumerate(CATALOG_KINDS)}
    entries.sort(key=lambda e: order[e.kind])
    return Catalog(tuple(entries), str(p))


def named_options(
    switch: str | None, node: str | None, link_gbps: float, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The build options (flat keywords of :func:`topo.builders.build`) of a named switch and
    server.

    Parameters
    ----------
    switch, node : str or None
        Catalog names (``q3400``, ``b200``); None leaves those options out.
    link_gbps : float
        The link rate without a named switch, Gb/s.
    catalog : Catalog or None
        None reads the shipped catalog.

    Returns
    -------
    dict
        ``switch_ports`` and ``link_gbps`` of the switch; ``gpus_per_node``,
        ``nics_per_node``, ``nvlink_GBps``, ``pcie_GBps`` of the server. A server's NICs set
        ``link_gbps`` when slower than the switch's ports (a 400G ConnectX-7 on an 800G port
        runs at 400G; topo has one rate for every cable of a fabric).

    Raises
    ------
    SpecError
        An unknown name (the known ones listed).
    """
    if switch is None and node is None:
        return {}
    cat = catalog or load_catalog()
    named: dict[str, Any] = {}
    gbps = link_gbps
    if switch is not None:
        sw = cat.switch(switch)
        named.update(switch_ports=sw.ports, link_gbps=sw.link_gbps)
        gbps = sw.link_gbps
    if node is not None:
        server = cat.node(node)
        named.update(
            gpus_per_node=server.gpus,
            nics_per_node=server.nics,
            nvlink_GBps=server.nvlink_GBps,
            pcie_GBps=server.pcie_GBps,
            link_gbps=min(gbps, cat.nic_gbps(node)),
        )
    return named
