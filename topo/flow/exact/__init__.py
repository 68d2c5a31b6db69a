"""Exact methods: the maximum concurrent flow solved exactly, with or without an LP.

:func:`exact_alltoall` (:mod:`~topo.flow.exact.alltoall`) solves the uniform all-to-all by the
reduced LP of :mod:`topo.flow.reduce`, or by the general LP (:mod:`~topo.flow.exact.general`,
one commodity per terminal); on large fabrics it first tries a routing that meets a cut bound
(:mod:`~topo.flow.exact.certify`, with :mod:`~topo.flow.exact.cuts`,
:mod:`~topo.flow.exact.plane_routing` and :mod:`~topo.flow.exact.switch_arcs`), exact with no LP.
:func:`matrix_flow` (:mod:`~topo.flow.exact.matrix`) solves an explicit server-level matrix;
:func:`shared_flow` (:mod:`~topo.flow.exact.shared`) several demands at once, some scaled, some
held at fixed rates.
:mod:`~topo.flow.exact.report` turns a rate into the all-to-all's result.
"""

from topo.flow.exact.alltoall import exact_alltoall
from topo.flow.exact.certify import CERTIFY_TOL, certified_alltoall, cut_bound, split_routing
from topo.flow.exact.cuts import MET_TOL, with_met_cuts
from topo.flow.exact.general import general_lp
from topo.flow.exact.matrix import matrix_flow
from topo.flow.exact.report import build_report
from topo.flow.exact.shared import SharedFlow, shared_flow

__all__ = [
    "CERTIFY_TOL",
    "MET_TOL",
    "SharedFlow",
    "build_report",
    "certified_alltoall",
    "cut_bound",
    "exact_alltoall",
    "general_lp",
    "shared_flow",
    "matrix_flow",
    "split_routing",
    "with_met_cuts",
]
