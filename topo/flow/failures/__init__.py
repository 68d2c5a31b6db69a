"""Failures: a damaged fabric, and the all-to-all over it, once or over many random trials.

:func:`fail` (:mod:`~topo.flow.failures.damage`) removes cables and switches, at random (seeded)
or by name; :func:`damaged_bandwidth` (:mod:`~topo.flow.failures.resilience`) sets aside the
servers the damage cuts off and measures the all-to-all among the others, optimally (through
:mod:`topo.flow.door`) or as routed; :func:`resilience` repeats it over random failure sets,
each trial's damaged fabric derived from the intact one, read once
(:class:`~topo.flow.failures.trials.TrialFabric`).
"""

from topo.flow.failures.damage import (
    LINK_SEPARATOR,
    FailureSet,
    cables,
    disconnected_terminals,
    fail,
    island_sizes,
    without_servers,
)
from topo.flow.failures.resilience import (
    MAX_TRIALS,
    P5_MIN_TRIALS,
    ROUTINGS,
    SMALL_STUDY_S,
    STATISTICS,
    TRIAL_MAX_VARIABLES,
    TRIAL_TIME_LIMIT_S,
    DamagedBandwidth,
    ResilienceReport,
    TrialMap,
    check_trials,
    damaged_bandwidth,
    intact_busbw,
    resilience,
    resilience_trial,
    serial_trials,
    statistics,
    summarised_trial,
    trial_summary,
)
from topo.flow.failures.trials import TrialFabric

__all__ = [
    "LINK_SEPARATOR",
    "MAX_TRIALS",
    "P5_MIN_TRIALS",
    "ROUTINGS",
    "SMALL_STUDY_S",
    "STATISTICS",
    "TRIAL_MAX_VARIABLES",
    "TRIAL_TIME_LIMIT_S",
    "DamagedBandwidth",
    "FailureSet",
    "ResilienceReport",
    "TrialFabric",
    "TrialMap",
    "cables",
    "check_trials",
    "damaged_bandwidth",
    "disconnected_terminals",
    "fail",
    "intact_busbw",
    "island_sizes",
    "resilience",
    "resilience_trial",
    "serial_trials",
    "statistics",
    "summarised_trial",
    "trial_summary",
    "without_servers",
]
