"""``topo resilience`` on the engine: the trials of :func:`topo.flow.failures.resilience.resilience`
run on Dask workers, the fabric shipped to each worker once
(:class:`~topo.flow.failures.trials.TrialFabric`: each worker reads it once for all its trials).

The trials and their seeds are the library's (:func:`topo.flow.seeds.trial_seeds`); the
engine only decides where each runs, so any number of workers gives the serial run's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx

from topo.engine.cluster import Engine, SerialEngine
from topo.errors import TopoError
from topo.flow.failures import DamagedBandwidth, TrialFabric, TrialMap, summarised_trial


def run_trial(fabric: TrialFabric, task: dict[str, Any]) -> DamagedBandwidth | None:
    """One resilience trial on a worker: :func:`topo.flow.failures.resilience.summarised_trial`
    (the damaged graph and the per-link detail stay on the worker; the report and failures
    travel back).

    Parameters
    ----------
    fabric : TrialFabric
        The intact fabric (scattered once; each worker reads it once for all its trials).
    task : dict
        Keyword arguments of :func:`~topo.flow.failures.resilience.damaged_bandwidth`.

    Returns
    -------
    DamagedBandwidth or None
        None when the trial cannot complete (fewer than two GPUs connected).
    """
    return summarised_trial(fabric, task)


def trial_map(engine: Engine | SerialEngine) -> TrialMap:
    """A :data:`topo.flow.failures.resilience.TrialMap` that runs the trials on ``engine``.

    Parameters
    ----------
    engine : Engine or SerialEngine

    Returns
    -------
    callable
        ``(G, tasks, progress)`` to the trials' results in task order; pass it as
        ``resilience(..., trial_map=...)``.

    Raises
    ------
    TopoError
        (when called) A trial whose workers died twice, or that raised: named with its seed,
        after every other trial has finished.
    """

    def run(
        G: nx.Graph, tasks: list[dict[str, Any]], progress: Callable[[int], None] | None = None
    ) -> list[DamagedBandwidth | None]:
        shared = engine.scatter(TrialFabric(G))
        results: list[DamagedBandwidth | None] = [None] * len(tasks)
        failed = []
        for outcome in engine.map(run_trial, tasks, shared, progress=progress):
            if outcome.ok:
                results[outcome.index] = outcome.value
            else:
                failed.append(f"trial {outcome.index} (seed {tasks[outcome.index]['seed']})")
                last = outcome.error
        if failed:
            raise TopoError(f"{', '.join(failed)} failed on the engine: {last}")
        return results

    return run
