"""Per-task seeds that do not depend on the engine.

Task ``i`` of a run seeded ``seed`` gets the ``i``-th child of
``numpy.random.SeedSequence(seed)`` (:meth:`numpy.random.SeedSequence.spawn`): statistically
independent streams, the same whichever worker runs the task and in whatever order, so one
worker, two workers and an external cluster give the same numbers.
"""

from __future__ import annotations

import numpy as np

from topo.errors import TopoError


def task_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent integer seeds derived from ``seed``, one per task.

    Parameters
    ----------
    seed : int
        The run's seed, >= 0.
    n : int
        Number of tasks, >= 0.

    Returns
    -------
    list of int
        Seed ``i`` is the first 32-bit word of the state of child ``i`` of
        ``SeedSequence(seed).spawn(n)``; each lies in ``[0, 2**32)``.

    Raises
    ------
    TopoError
        A negative seed or count.

    References
    ----------
    NumPy, "Parallel random number generation" (``SeedSequence.spawn``).

    Examples
    --------
    >>> task_seeds(0, 3) == task_seeds(0, 5)[:3]
    True
    """
    if seed < 0 or n < 0:
        raise TopoError(f"seed and task count must be >= 0, got seed={seed}, n={n}")
    children = np.random.SeedSequence(seed).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]
