"""NCCL-style collective costs on a fabric, in nccl-tests' columns (``topo collective``).

- :mod:`topo.collective.constants`: NCCL's latencies, protocol factors and caps, per release;
- :mod:`topo.collective.fabric_rates`: NVLink, NIC and network rates of a sub-cluster, from
  the graph and the flow solver (the ring, tree and all-to-all demands from
  :mod:`topo.traffic.collective`);
- :mod:`topo.collective.model`: the alpha-beta cost of every (algorithm, protocol) and the
  tuner's choice;
- :mod:`topo.collective.choice`: the tuner's ranking of the candidates, and its restriction by
  NCCL_ALGO and NCCL_PROTO;
- :mod:`topo.collective.predict`: the model's nccl-tests row for one size;
- :mod:`topo.collective.report`: the size sweep and its busbw plot;
- :mod:`topo.collective.compare`: the comparison with a real log, the fit.

The model and its sources: ``docs/collective.md``.
"""

from topo.collective.choice import TunerRestriction, ranked_candidates, tuner_restriction
from topo.collective.compare import Comparison, Fit, compare_log, fit_alpha_beta
from topo.collective.constants import NcclConstants, load_constants
from topo.collective.fabric_rates import FabricRates, SwitchGraph, fabric_rates, switch_graph
from topo.collective.model import OPS, Candidate, busbw_factor, candidates, choose
from topo.collective.report import CollectiveReport, collective_table, plot_busbw

__all__ = [
    "OPS",
    "Candidate",
    "CollectiveReport",
    "Comparison",
    "FabricRates",
    "SwitchGraph",
    "Fit",
    "NcclConstants",
    "TunerRestriction",
    "busbw_factor",
    "candidates",
    "choose",
    "collective_table",
    "compare_log",
    "fabric_rates",
    "switch_graph",
    "fit_alpha_beta",
    "load_constants",
    "plot_busbw",
    "ranked_candidates",
    "tuner_restriction",
]
