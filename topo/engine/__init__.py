"""Many points on a distributed engine: Dask behind one seam, sweeps, the co-design search.

- :mod:`topo.engine.cluster`: :class:`Engine` (a Dask client on an embedded ``LocalCluster``,
  a running scheduler, or ``dask-jobqueue``'s ``SLURMCluster``) and :class:`SerialEngine`
  (the same interface in this process); nothing else imports Dask.
- :mod:`topo.engine.seeds`: per-task seeds from ``numpy.random.SeedSequence.spawn``, so the
  numbers do not depend on the engine.
- :mod:`topo.engine.resilience`: ``topo resilience`` trials on the engine.

The model and its assumptions are in ``docs/sweep.md``.
"""

from topo.engine.cluster import (
    CLUSTERS,
    Engine,
    SerialEngine,
    TaskOutcome,
    make_engine,
    slurm_arguments,
)
from topo.engine.resilience import run_trial, trial_map
from topo.engine.seeds import task_seeds

__all__ = [
    "CLUSTERS",
    "Engine",
    "SerialEngine",
    "TaskOutcome",
    "make_engine",
    "run_trial",
    "slurm_arguments",
    "task_seeds",
    "trial_map",
]
