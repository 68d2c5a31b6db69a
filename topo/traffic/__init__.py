"""Traffic: the :class:`Demand` every solver takes, and its constructors.

A demand is a traffic matrix over the fabric's terminals: servers (``level="server"``, keyed by
the GPUs' ``node`` id) or GPUs (``level="gpu"``, keyed by vertex name), in bytes per ordered
pair. The uniform all-to-all is kept implicit (every ordered pair of distinct terminals carries
``bytes_per_pair``), since at 16,384 GPUs it has 2.7e8 entries.
"""

from topo.traffic.demand import Demand, uniform_alltoall

__all__ = ["Demand", "uniform_alltoall"]
