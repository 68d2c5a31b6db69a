"""Independent random streams from one seed: the failures, ECMP's hashing and the trials.

One ``--seed`` seeds several draws: the random failures (:func:`topo.flow.failures.damage.fail`),
ECMP's hashing (:func:`topo.flow.routing.routed_flow`) and, in ``topo resilience``, the seed of
every trial. Generators seeded with the same integer would give them the same stream (the
cables failed and the ports hashed would be drawn from the same numbers), so each purpose draws
from its own child of ``numpy.random.SeedSequence(seed)``: child :data:`FAILURES`, child
:data:`ROUTING`, and, for trial ``i`` of a resilience run, child ``(TRIALS, i)`` (the spawn
keys of :meth:`numpy.random.SeedSequence.spawn`). Children with different spawn keys, or of
different seeds, are statistically independent streams, and the same seed gives the same
streams on every run.

References
----------
NumPy, "Parallel random number generation" (``SeedSequence``, ``spawn``); M. E. O'Neill,
"PCG: A Family of Simple Fast Space-Efficient Statistically Good Algorithms for Random Number
Generation", HMC-CS-2014-0905 (the default bit generator, PCG64).
"""

from __future__ import annotations

import numpy as np

from topo.errors import TopoError

FAILURES = 0
"""Spawn key of the random failures' stream (cables and switches)."""

ROUTING = 1
"""Spawn key of ECMP's hashing stream."""

TRIALS = 2
"""Spawn key under which a resilience run's trial seeds are drawn (child ``(TRIALS, i)``)."""

TRIAL_SEED_BITS = 53
"""Bits of a trial's seed: every integer below ``2**53`` is exact as a JSON number read into an
IEEE double (JavaScript, jq 1.6), so the seed printed by ``--json`` reproduces the trial; two
runs of 10,000 trials share a trial seed with probability about ``10**8 / 2**53 = 1e-8``
(birthday bound)."""


def stream(
    seed: int | np.integer | np.random.Generator | None, purpose: int
) -> np.random.Generator:
    """The generator of one purpose of ``seed``: PCG64 on child ``purpose`` of
    ``SeedSequence(seed)``.

    Parameters
    ----------
    seed : int, numpy.random.Generator or None
        The run's seed, >= 0 (None: fresh entropy from the operating system, not
        reproducible); a Generator is returned as is (the caller chose the stream).
    purpose : int
        :data:`FAILURES` or :data:`ROUTING`.

    Returns
    -------
    numpy.random.Generator
        ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(purpose + 1)[purpose])``
        (``seed`` itself when it is a Generator).

    Raises
    ------
    TopoError
        A negative or non-integer seed.

    Examples
    --------
    >>> a, b = stream(1, FAILURES).random(), stream(1, ROUTING).random()
    >>> a != b and a == stream(1, FAILURES).random()
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(np.random.SeedSequence(_entropy(seed), spawn_key=(purpose,)))


def trial_seeds(seed: int | np.integer, n: int) -> list[int]:
    """The seeds of ``n`` resilience trials: each trial's own integer seed, which seeds that
    trial's failures and hashing as ``--seed`` seeds one run (so ``topo bandwidth --seed S``
    with trial ``i``'s seed ``S`` and the same failure counts reproduces trial ``i``).

    Parameters
    ----------
    seed : int
        The run's seed, >= 0.
    n : int
        Number of trials, >= 0.

    Returns
    -------
    list of int
        Seed ``i`` is the first 64-bit word of child ``(TRIALS, i)`` of ``SeedSequence(seed)``,
        its low :data:`TRIAL_SEED_BITS` bits; each lies in ``[0, 2**53)``. Trial ``i``'s seed
        does not depend on ``n``; runs of different seeds share no trial (but with probability
        about ``n**2 / 2**53``).

    Raises
    ------
    TopoError
        A negative or non-integer seed, or a negative ``n``.

    Examples
    --------
    >>> trial_seeds(0, 3) == trial_seeds(0, 5)[:3]
    True
    """
    entropy = _entropy(seed)
    if n < 0:
        raise TopoError(f"trial count must be >= 0, got {n}")
    mask = (1 << TRIAL_SEED_BITS) - 1
    out = []
    for i in range(n):
        child = np.random.SeedSequence(entropy, spawn_key=(TRIALS, i))
        out.append(int(child.generate_state(1, dtype=np.uint64)[0]) & mask)
    return out


def _entropy(seed: object) -> int | None:
    """``seed`` as a Python int (None stays None); TopoError unless a whole number >= 0."""
    if seed is None:
        return None
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if seed >= 0:
            return int(seed)
    raise TopoError(f"seed must be a whole number >= 0, got {seed!r}")


__all__ = ["FAILURES", "ROUTING", "TRIALS", "TRIAL_SEED_BITS", "stream", "trial_seeds"]
