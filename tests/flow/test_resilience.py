"""Resilience statistics: a bound is never a trial's value; a statistic of trials known only
within bounds is a certified range, and the exact run's statistics lie in it."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.flow.failures.resilience import STATISTICS, resilience, statistics


def test_statistics_by_hand():
    # Trials 1 and 2 known; trial 3 only within [3, 5].
    values, ranges = statistics([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])
    assert values["min"] == 1.0 and values["median"] == 2.0
    assert values["max"] is None and ranges["max"] == [3.0, 5.0]
    assert values["mean"] is None and ranges["mean"] == pytest.approx([2.0, 8.0 / 3.0])
    # 3 trials: none lies at the 5th percentile (P5_MIN_TRIALS), so no p5.
    assert values["p5"] is None and "p5" not in ranges
    # 20 trials 1..20: p5 interpolates between the two smallest, 1 + 0.05 x 19 x (2 - 1).
    v = [float(i) for i in range(1, 21)]
    values, ranges = statistics(v, v)
    assert values["p5"] == pytest.approx(1.95) and ranges["p5"] == pytest.approx([1.95, 1.95])


def test_all_known_gives_numpy_statistics():
    v = [4.0, 1.0, 3.0, 2.0] * 5
    values, _ = statistics(v, v)
    assert [values[k] for k in STATISTICS] == pytest.approx(
        [1.0, float(np.percentile(v, 5)), 2.5, 2.5, 4.0]
    )


def test_bounded_trials_are_unknown_and_bracket_the_exact_run():
    # With an LP limit of 10 variables no trial's LP is solved: each has certified bounds.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    exact = resilience(G, trials=4, links=3, seed=1)
    bounded = resilience(G, trials=4, links=3, seed=1, max_variables=10)
    assert exact.exact_trials == 4 and None not in exact.busbw_GBps
    assert bounded.exact_trials < 4
    for v, lo, hi, b in zip(
        exact.busbw_GBps,
        bounded.lower_bound_busbw_GBps,
        bounded.upper_bound_busbw_GBps,
        bounded.busbw_GBps,
        strict=True,
    ):
        assert lo <= v * (1 + 1e-6) and v <= hi * (1 + 1e-6)
        assert b is None or b == pytest.approx(v, rel=1e-6)
    assert None in bounded.busbw_GBps
    assert exact.p5_GBps is None and "p5" not in bounded.range_GBps  # 4 trials: no p5
    for k in (s for s in STATISTICS if s != "p5"):
        known = getattr(exact, f"{k}_GBps")
        lo, hi = bounded.range_GBps[k]
        assert lo <= known * (1 + 1e-6) and known <= hi * (1 + 1e-6)
        got = getattr(bounded, f"{k}_GBps")
        assert got is None or got == pytest.approx(known, rel=1e-6)
    assert (
        bounded.median_GBps is None
        or bounded.range_GBps["median"][1] - bounded.range_GBps["median"][0]
        <= 1e-9 * bounded.range_GBps["median"][1]
    )


def test_a_trial_that_cuts_nothing_is_no_faster_than_the_intact_fabric():
    # 3:1 oversubscribed FT2 of 16-port switches, LP limit 100 variables: the trials have
    # bounds only, and the cut bound of a damaged fabric (its servers' cables) can exceed the
    # intact rate. Failing cables takes capacity away and keeps every terminal, so the intact
    # fabric's rate (known exactly, by the symmetric reduction) caps each such trial.
    G = build("ft2", switch_ports=16, gpus=96, oversubscription=3.0)
    exact = resilience(G, trials=4, links=3, seed=0)
    bounded = resilience(G, trials=4, links=3, seed=0, max_variables=100)
    assert exact.intact_busbw_GBps is not None
    assert bounded.intact_busbw_GBps == pytest.approx(exact.intact_busbw_GBps, rel=1e-9)
    assert bounded.trials_with_disconnected == 0
    for v, lo, hi in zip(
        exact.busbw_GBps,
        bounded.lower_bound_busbw_GBps,
        bounded.upper_bound_busbw_GBps,
        strict=True,
    ):
        assert lo <= v * (1 + 1e-6) and v <= hi * (1 + 1e-6)
        assert hi <= exact.intact_busbw_GBps * (1 + 1e-9)
    assert bounded.range_GBps["max"][1] <= exact.intact_busbw_GBps * (1 + 1e-9)


def test_a_trial_with_every_gpu_cut_off_is_known_to_be_zero():
    # 12 of the 16 switches of an 8-port MRFT failed: no two GPUs keep a path, so each
    # trial's busbw is 0 exactly (not a bound), and the statistics are 0.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    r = resilience(G, trials=2, switches=12, seed=0)
    assert r.busbw_GBps == [0.0, 0.0] and r.exact_trials == 2
    assert r.min_GBps == 0.0 and r.max_GBps == 0.0


def test_p5_needs_20_trials():
    """With n trials the smallest is the 1/n quantile: below 20 none lies at the 5th
    percentile, so p5 is None (min stays); with 20, p5 is numpy's linear one of the trials,
    worked out from the trial values: x[0] + 0.05 * 19 * (x[1] - x[0])."""
    G = build("ft2", switch_ports=4)
    few = resilience(G, trials=3, links=1, seed=0)
    assert few.p5_GBps is None and "p5" not in few.range_GBps
    assert few.min_GBps == min(v for v in few.busbw_GBps if v is not None)
    many = resilience(G, trials=20, links=1, seed=0)
    x = sorted(v for v in many.busbw_GBps if v is not None)
    assert len(x) == 20
    assert many.p5_GBps == pytest.approx(x[0] + 0.95 * (x[1] - x[0]), rel=1e-12)
