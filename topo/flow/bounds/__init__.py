"""Certified bounds on the all-to-all rate when the exact LP is out of reach.

:func:`bounds_report` (:mod:`~topo.flow.bounds.certified`) pairs the tightest cut (an upper
bound) with the best of several feasible routings (lower bounds); for direct networks (Slim
Fly, Dragonfly) :mod:`~topo.flow.bounds.direct` adds router-level LPs
(:mod:`~topo.flow.bounds.router_lp`), loaded only when needed (scipy's graph routines and igraph
take 0.25 s to import), so this face does not import them.
"""

from topo.flow.bounds.certified import (
    bounds_report,
    cut_upper_bound,
    plane_lower_bound,
    routing_lower_bound,
    split_lower_bound,
    tree_lower_bound,
)

__all__ = [
    "bounds_report",
    "cut_upper_bound",
    "plane_lower_bound",
    "routing_lower_bound",
    "split_lower_bound",
    "tree_lower_bound",
]
