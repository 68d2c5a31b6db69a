"""Traffic: the :class:`Demand` every solver takes, and its constructors.

A demand is a traffic matrix over the fabric's terminals: servers (``level="server"``, keyed by
the GPUs' ``node`` id) or GPUs (``level="gpu"``, keyed by vertex name), in bytes per ordered
pair. The uniform all-to-all is kept implicit (every ordered pair of distinct terminals carries
``bytes_per_pair``), since at 16,384 GPUs it has 2.7e8 entries.

- :mod:`topo.traffic.demand`: the type, the fabric's terminals, the uniform all-to-all;
- :mod:`topo.traffic.patterns`: synthetic patterns (permutation);
- :mod:`topo.traffic.collective`: NCCL's ring and double-binary-tree steps, a sub-cluster's
  all-to-all;
- :mod:`topo.traffic.moe`: an EP layer's dispatch and combine.
"""

from topo.traffic.collective import (
    btree_parent,
    double_binary_tree,
    double_binary_tree_step,
    ring_step,
    subcluster_alltoall,
)
from topo.traffic.demand import Demand, Level, fabric_terminals, hose_bound, uniform_alltoall
from topo.traffic.moe import combine, dispatch, ep_server_demand, server_matrix
from topo.traffic.patterns import permutation

__all__ = [
    "Demand",
    "Level",
    "btree_parent",
    "combine",
    "dispatch",
    "double_binary_tree",
    "double_binary_tree_step",
    "ep_server_demand",
    "fabric_terminals",
    "hose_bound",
    "permutation",
    "ring_step",
    "server_matrix",
    "subcluster_alltoall",
    "uniform_alltoall",
]
