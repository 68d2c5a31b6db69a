"""The compiled multinomial draws of ECMP, against the exact laws (scipy's pmfs, closed forms)."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from topo.flow.routing.split import hop_full, seed_words, split_rows

P_FLOOR = 1e-4  # a fixed seed makes each test deterministic; a sound sampler passes at this level


def _draws(m: int, k: int, n: int, seed: int, slots: int | None = None) -> np.ndarray:
    """``n`` draws of Multinomial(m; uniform over k slots), as (n, k)."""
    mask = np.ones((n, slots or k), dtype=bool)
    mask[:, k:] = False
    X = split_rows(np.full(n, m, dtype=np.int64), mask, seed_words(np.random.default_rng(seed)))
    return X[:, :k]


def _chi2_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """Pearson's chi-square p-value, cells with expectation below 5 pooled into one."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


@pytest.mark.parametrize(
    ("m", "k", "a"),
    [
        (1, 2, 1),
        (63, 2, 1),
        (64, 3, 1),
        (65, 5, 2),
        (150, 5, 3),
        (200, 7, 3),
        (1024, 32, 5),
        (1024, 32, 16),
        (1000, 36, 18),
        (1000, 36, 7),
        (1000, 3, 1),
        (5000, 2, 1),
        (100_003, 6, 3),
    ],
)
def test_the_first_a_slots_get_a_binomial(m: int, k: int, a: int) -> None:
    # Under Multinomial(m; 1/k each), the flows on any a of the k slots are Binomial(m, a/k).
    n = 20_000
    X = _draws(m, k, n, seed=m * 100 + k)
    got = X[:, :a].sum(1)
    support = np.arange(m + 1)
    observed = np.bincount(got, minlength=m + 1).astype(float)
    expected = n * stats.binom.pmf(support, m, a / k)
    assert _chi2_pvalue(observed, expected) > P_FLOOR


def test_every_outcome_of_a_small_multinomial_has_its_probability() -> None:
    # Multinomial(4; 1/3, 1/3, 1/3): 15 outcomes, each m! / (x1! x2! x3!) / 3^m.
    m, k, n = 4, 3, 30_000
    X = _draws(m, k, n, seed=11)
    outcomes = [x for x in itertools.product(range(m + 1), repeat=k) if sum(x) == m]
    pmf = np.array(
        [math.factorial(m) / math.prod(math.factorial(v) for v in x) / k**m for x in outcomes]
    )
    index = {x: i for i, x in enumerate(outcomes)}
    observed = np.bincount([index[tuple(r)] for r in X.tolist()], minlength=len(outcomes))
    assert math.isclose(pmf.sum(), 1.0)
    assert _chi2_pvalue(observed.astype(float), n * pmf) > P_FLOOR


@pytest.mark.parametrize(("m", "k"), [(1000, 6), (4096, 32), (100_003, 5)])
def test_means_and_covariances_are_the_multinomials(m: int, k: int) -> None:
    # E X_i = m/k, Var X_i = m (1/k)(1 - 1/k), Cov(X_i, X_j) = -m/k^2.
    n = 20_000
    X = _draws(m, k, n, seed=k).astype(float)
    assert (X.sum(1) == m).all()
    var = m / k * (1 - 1 / k)
    assert np.allclose(X.mean(0), m / k, atol=5 * math.sqrt(var / n))
    C = np.cov(X, rowvar=False)
    # the sampling sd of a covariance estimate is about var * sqrt(2 / n)
    tol = 6 * var * math.sqrt(2 / n)
    assert np.allclose(np.diag(C), var, atol=tol)
    off = C[~np.eye(k, dtype=bool)]
    assert np.allclose(off, -m / k**2, atol=tol)


def test_rows_keep_their_flows_on_their_eligible_slots_only() -> None:
    rng = np.random.default_rng(3)
    mask = rng.random((500, 9)) < 0.4
    mask[np.arange(500), rng.integers(0, 9, 500)] = True
    counts = rng.integers(0, 300, 500)
    X = split_rows(counts, mask, seed_words(rng))
    assert (X.sum(1) == counts).all()
    assert (X[~mask] == 0).all()
    assert (X >= 0).all()


def test_the_draws_depend_on_the_generator_state_only() -> None:
    counts, mask = np.full(50, 77), np.ones((50, 8), dtype=bool)
    a = split_rows(counts, mask, seed_words(np.random.default_rng(5)))
    b = split_rows(counts, mask, seed_words(np.random.default_rng(5)))
    c = split_rows(counts, mask, seed_words(np.random.default_rng(6)))
    assert (a == b).all()
    assert (a != c).any()


def test_hop_full_sums_its_draws_into_ports_and_next_switches() -> None:
    # Two switches, three ports each, two destination columns; port p of switch v reaches
    # switch other[v, p] of the next tier. Every flow lands on one port and one next switch,
    # and the expected parts are the even split, added alongside.
    rem = np.array([[6, 0], [3, 9]], dtype=np.int64)
    share = np.array([[2.0, 0.5], [1.0, 3.0]])
    other = np.array([[0, 1, 2], [2, 1, 0]], dtype=np.int64)
    pid = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int64)
    port, port_exp = np.zeros(6), np.zeros(6)
    nxt, nxt_e = np.zeros(3 * 2), np.zeros(3 * 2)
    hop_full(
        rem, share, other, pid, port, port_exp, nxt, nxt_e, seed_words(np.random.default_rng(1))
    )
    assert port[:3].sum() == 6 and port[3:].sum() == 12
    assert np.allclose(port_exp, [2.5, 2.5, 2.5, 4.0, 4.0, 4.0])
    by_column = nxt.reshape(3, 2).sum(0)
    assert (by_column == [9, 9]).all()
    # next switch w, column j: share of every switch with a port to w
    assert np.allclose(nxt_e.reshape(3, 2), [[3.0, 3.5], [3.0, 3.5], [3.0, 3.5]])
    assert (port == np.round(port)).all() and (nxt >= 0).all()


def test_ecmp_runs_where_numba_may_write_no_cache(tmp_path: Path) -> None:
    # A read-only install and home: numba finds no cache folder ("no locator available") and
    # used to raise at import. Here numba is told to use only a locator that never applies
    # outside IPython, which is what it finds there; the draws are compiled without a cache.
    fabric = tmp_path / "ft2.json"
    env = {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "numba.core.caching.IPythonCacheLocator"}
    topo = [sys.executable, "-c", "from topo.cli import main; main()"]
    subprocess.run([*topo, "build", "ft2", "--switch-ports", "8", "-o", str(fabric)], check=True)
    args = [*topo, "bandwidth", str(fabric), "--routing", "ecmp", "--seed", "1", "--json"]
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    cached = subprocess.run(args, capture_output=True, text=True)
    assert (
        json.loads(r.stdout)["alltoall_busbw_GBps"]
        == json.loads(cached.stdout)["alltoall_busbw_GBps"]
    )


@pytest.mark.parametrize(("m", "k"), [(3, 4), (5, 8), (70, 2)])
def test_every_outcome_of_a_power_of_two_split_has_its_probability(m: int, k: int) -> None:
    # k a power of two: halvings drawn from a reservoir of random bits (split._halves). Small
    # m leaves partial words, so successive segments and draws share words; every outcome
    # must still have m! / (x1! ... xk!) / k^m. (m = 70 over 2: the popcount of 70 bits,
    # across a word boundary, against Binomial(70, 1/2).)
    n = 40_000
    X = _draws(m, k, n, seed=m + k)
    assert (X.sum(1) == m).all()
    if k == 2:
        observed = np.bincount(X[:, 0], minlength=m + 1).astype(float)
        expected = n * stats.binom.pmf(np.arange(m + 1), m, 0.5)
        assert _chi2_pvalue(observed, expected) > P_FLOOR
        return
    outcomes = [x for x in itertools.product(range(m + 1), repeat=k) if sum(x) == m]
    pmf = np.array(
        [math.factorial(m) / math.prod(math.factorial(v) for v in x) / k**m for x in outcomes]
    )
    index = {x: i for i, x in enumerate(outcomes)}
    observed = np.bincount([index[tuple(r)] for r in X.tolist()], minlength=len(outcomes))
    assert _chi2_pvalue(observed.astype(float), n * pmf) > P_FLOOR


def test_consecutive_draws_are_independent_across_the_reservoir() -> None:
    # Rows of 3 flows over 4 ports leave most of each word to the next row's draws; the first
    # port's flows of consecutive rows must be uncorrelated (a reused bit would correlate
    # them), and their pair counts follow the product of two Binomial(3, 1/4) laws.
    n = 60_000
    X = _draws(3, 4, n, seed=9)
    a, b = X[:-1:2, 0], X[1::2, 0]
    observed = np.bincount(a * 4 + b, minlength=16).astype(float)
    p = stats.binom.pmf(np.arange(4), 3, 0.25)
    assert _chi2_pvalue(observed, len(a) * np.outer(p, p).ravel()) > P_FLOOR
