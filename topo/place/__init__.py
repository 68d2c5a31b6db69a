"""Place: several jobs on one fabric, each its own commodity; their rates alone and shared.

- :mod:`topo.place.jobs`: a :class:`Job` (its traffic; its servers or a count and a placement
  policy), :func:`place_jobs` and each job's :class:`topo.traffic.Demand`;
- :mod:`topo.place.share`: :func:`place`, the rates alone and max-min fair shared
  (:func:`topo.flow.shared_flow` by progressive filling), the links the jobs contend on;
- :mod:`topo.place.read`: a jobs TOML file;
- :mod:`topo.place.advise`: :func:`slurm_advice`, the ``BlockSizes`` that keep each job in the
  fewest leaf switches and the cost of fragmentation.

Nothing in :mod:`topo.flow` knows about jobs: a job is a demand.
"""

from topo.place.advise import JobAdvice, SlurmAdvice, slurm_advice
from topo.place.jobs import (
    MAX_WEIGHT,
    POLICIES,
    STORAGE_TRAFFIC,
    TRAFFIC,
    Job,
    JobError,
    PlacedJob,
    job_demand,
    place_jobs,
    server_blocks,
    server_gpus,
)
from topo.place.read import JOB_KEYS, MAX_JOBS, read_jobs
from topo.place.share import (
    FAIRNESS,
    GROW_TOL,
    WEIGHTED_FAIRNESS,
    ContendedLink,
    JobRate,
    PlaceReport,
    max_min_rates,
    nic_bound,
    place,
)

__all__ = [
    "FAIRNESS",
    "GROW_TOL",
    "JOB_KEYS",
    "MAX_JOBS",
    "MAX_WEIGHT",
    "POLICIES",
    "STORAGE_TRAFFIC",
    "TRAFFIC",
    "WEIGHTED_FAIRNESS",
    "ContendedLink",
    "Job",
    "JobError",
    "JobAdvice",
    "JobRate",
    "PlaceReport",
    "PlacedJob",
    "SlurmAdvice",
    "job_demand",
    "max_min_rates",
    "nic_bound",
    "place",
    "place_jobs",
    "read_jobs",
    "server_blocks",
    "server_gpus",
    "slurm_advice",
]
