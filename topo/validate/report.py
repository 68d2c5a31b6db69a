"""``topo validate``: the defects of a fabric as built and what each costs.

:func:`validate` matches the dump to the design (:mod:`topo.validate.match`), lists the defects
(:mod:`topo.validate.defects`) and solves the exact all-to-all (the maximum concurrent flow of
:func:`topo.flow.alltoall_bandwidth`) of the design, of the fabric as built (the design's
servers, the dump's cables) and of the design with each defect alone. Servers a defect cuts off
(a missing host, a dead leaf) leave the all-to-all, which is then among the others; their names
are reported. See docs/validate.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import networkx as nx

from topo.errors import FormatError, TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.failures import disconnected_terminals, without_servers
from topo.units import Bps_to_GBps
from topo.validate.defects import (
    DEFECT_KINDS,
    Defect,
    as_built_fabric,
    cost_Bps,
    find_defects,
    network_cables,
    with_defects,
)
from topo.validate.match import match_fabric

MIN_MATCHED_FRACTION = 0.25
"""The share of cables a dump must have as the design has them, of the larger of the two
cable counts, for :func:`validate` to compare them. Below it the dump is of another fabric
(or of one barely begun): every cable would be a defect, each costed by its own LP (a
2,048-GPU ft2 against the 1,074 cables of the GB200 SuperPOD's dump: 1,335 defects and more
than 6 minutes of LPs, with 9% of the cables matching by chance). Unrelated dumps of the real
data match 2-15%; a fabric built as designed but for a few defects matches nearly all."""


@dataclass(frozen=True)
class ValidationReport:
    """The defects of a fabric as built against its design, and their cost.

    Attributes
    ----------
    design, dump : str
        Names of the design and of the dump(s).
    defects : tuple of Defect
        Every defect, each with the all-to-all of the design with it alone.
    design_busbw_Bps, as_built_busbw_Bps : float
        The exact all-to-all bus bandwidth per GPU (B/s) of the design and of the fabric as
        built.
    disconnected : tuple of str
        Servers cut off as built (out of ``as_built_busbw_Bps``).
    switches_by_name, switches_by_structure : int
        How the switches were matched.
    """

    design: str
    dump: str
    defects: tuple[Defect, ...]
    design_busbw_Bps: float
    as_built_busbw_Bps: float
    disconnected: tuple[str, ...] = ()
    switches_by_name: int = 0
    switches_by_structure: int = 0
    design_graph: nx.Graph | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the fabric is built as designed."""
        return not self.defects

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (GB/s, Gb/s per cable): ``design``, ``dump``, ``defects`` (each
        :meth:`Defect.to_dict` with ``cost_GBps``), ``defect_counts`` (by kind),
        ``design_busbw_GBps``, ``as_built_busbw_GBps``, ``cost_GBps``, ``disconnected``,
        ``switches_matched_by_name``, ``switches_matched_by_structure``."""
        counts = Counter(d.kind for d in self.defects)
        return {
            "design": self.design,
            "dump": self.dump,
            "defects": [d.to_dict(self.design_busbw_Bps) for d in self.defects],
            "defect_counts": {k: counts[k] for k in DEFECT_KINDS if counts[k]},
            "design_busbw_GBps": Bps_to_GBps(self.design_busbw_Bps),
            "as_built_busbw_GBps": Bps_to_GBps(self.as_built_busbw_Bps),
            "cost_GBps": Bps_to_GBps(cost_Bps(self.design_busbw_Bps, self.as_built_busbw_Bps)),
            "disconnected": list(self.disconnected),
            "switches_matched_by_name": self.switches_by_name,
            "switches_matched_by_structure": self.switches_by_structure,
        }


def connected_busbw(G: nx.Graph) -> tuple[float, tuple[str, ...]]:
    """The exact all-to-all bus bandwidth per GPU (B/s) among the servers still connected.

    Parameters
    ----------
    G : networkx.Graph
        A fabric, possibly damaged.

    Returns
    -------
    (float, tuple of str)
        ``alltoall_busbw_Bps`` of :func:`topo.flow.alltoall_bandwidth` on ``G`` without the
        servers cut off (0 when fewer than two GPUs remain connected), and those servers.
    """
    _, cut = disconnected_terminals(G)
    H = without_servers(G, cut) if cut else G
    gpus = sum(1 for _, k in H.nodes(data="kind") if k == "gpu")
    if gpus < 2:
        return 0.0, tuple(map(str, cut))
    return alltoall_bandwidth(H).alltoall_busbw_Bps, tuple(map(str, cut))


def check_design(design: nx.Graph, path: str | Path = "<design>") -> None:
    """Refuse a design that is an imported fabric (``family`` ``"ibnetdiscover"``).

    An imported fabric names its devices after the dump (``node0/mlx5_1/p1``, the switches'
    descriptions), not as :mod:`topo.builders` does, so nothing of it matches a dump by
    name or by server: every cable reads as a defect and the design's all-to-all as 0.

    Parameters
    ----------
    design : networkx.Graph
        The design.
    path : str or Path
        Its file, named in the message.

    Raises
    ------
    FormatError
        If ``design.graph["family"]`` is ``"ibnetdiscover"`` (written by ``topo import``).
    """
    if design.graph.get("family") == "ibnetdiscover":
        raise FormatError(
            path,
            f"an imported fabric (from {design.graph.get('source', 'a dump')}), not a design: "
            "topo validate compares dumps with the fabric 'topo build -o' wrote",
        )


def validate(
    design: nx.Graph,
    dump: nx.Graph,
    *,
    cost: bool = True,
    design_name: str | None = None,
    dump_name: str | None = None,
    min_matched: float = MIN_MATCHED_FRACTION,
) -> ValidationReport:
    """Compare a fabric as built (an imported dump) with its design.

    Parameters
    ----------
    design : networkx.Graph
        The designed fabric (built, with servers).
    dump : networkx.Graph
        The fabric as discovered (:func:`topo.formats.import_ibnetdiscover`).
    cost : bool
        Solve the all-to-all of the design with each defect alone (one LP per defect).
    design_name, dump_name : str, optional
        Names for the report (default: the graphs' ``name`` and ``source``).
    min_matched : float
        Refuse a dump with fewer of its cables as designed than this share of the larger
        cable count (:data:`MIN_MATCHED_FRACTION`; 0 compares any dump).

    Returns
    -------
    ValidationReport
        The defects and the all-to-all bus bandwidth of the design, as built and (``cost``)
        with each defect alone, in B/s.

    Raises
    ------
    FormatError
        If ``design`` is an imported fabric (:func:`check_design`).
    TopoError
        If the dump matches less than ``min_matched`` of the design (before any LP).
    InfeasibleError, LPTooLarge, SolverError
        As :func:`topo.flow.alltoall_bandwidth` raises them.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from topo.builders import build
    >>> from topo.formats import read_ibnetdiscover, write_ibnetdiscover
    >>> design = build("ft2", switch_ports=4, gpus=8, gpus_per_node=2, nics_per_node=2)
    >>> built = design.copy()
    >>> built.remove_edge("node1/nic0", "leaf1")            # a dead host cable
    >>> dump = pathlib.Path(tempfile.mkdtemp()) / "fabric.topo"
    >>> _ = dump.write_text(write_ibnetdiscover(built))
    >>> r = validate(design, read_ibnetdiscover(dump))
    >>> [(d.kind, d.design_ends) for d in r.defects]
    [('missing', ('leaf1', 'node1/nic0'))]

    Designed, 50 GB/s x (n - 1) / (n - g) = 50 x 7/6; as built, server 1's last NIC carries
    both its GPUs' traffic: half that.

    >>> round(r.design_busbw_Bps / 1e9, 2), round(r.as_built_busbw_Bps / 1e9, 2)
    (58.33, 29.17)

    References
    ----------
    docs/validate.md (the matching, the defects, the cost of a defect).
    """
    check_design(design, design_name or "<design>")
    match = match_fabric(design, dump)
    defects = find_defects(design, dump, match)
    name = dump_name or str(dump.graph.get("source", dump.graph.get("name", "dump")))
    _check_related(design, dump, defects, name, min_matched)
    design_bw, _ = connected_busbw(design)
    built_bw, cut = connected_busbw(as_built_fabric(design, dump, match))
    if cost:
        defects = [
            replace(d, alone_busbw_Bps=connected_busbw(with_defects(design, [d], dump))[0])
            for d in defects
        ]
    return ValidationReport(
        design=design_name or str(design.graph.get("name", "design")),
        dump=name,
        defects=tuple(defects),
        design_busbw_Bps=design_bw,
        as_built_busbw_Bps=built_bw,
        disconnected=cut,
        switches_by_name=match.by_name,
        switches_by_structure=match.by_structure,
        design_graph=design,
    )


def _check_related(
    design: nx.Graph, dump: nx.Graph, defects: list[Defect], name: str, min_matched: float
) -> None:
    """Refuse a dump whose cables are mostly not the design's (:data:`MIN_MATCHED_FRACTION`):
    the cables as designed are the dump's cables less the ``extra`` and ``miswired`` ones."""
    built = sum(links for links, _ in network_cables(dump).values())
    designed = sum(links for links, _ in network_cables(design).values())
    wrong = sum(d.links for d in defects if d.kind in ("extra", "miswired"))
    right, larger = max(0, built - wrong), max(built, designed)
    if larger and right < min_matched * larger:
        raise TopoError(
            f"{name}: not a dump of this design: {right:,} of its {built:,} cables are as "
            f"designed, {right / larger:.0%} of the larger cable count (the design has "
            f"{designed:,}); topo validate compares from {min_matched:.0%}: below it nearly "
            "every cable is a defect, each costed by its own LP"
        )
