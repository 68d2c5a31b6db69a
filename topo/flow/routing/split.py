"""Exact uniform multinomial splits of whole flows over ports, compiled (numba).

ECMP sends each flow to one of the ``k`` eligible ports uniformly at random, independently, so
the ``m`` flows of one (switch, destination) split as ``Multinomial(m; 1/k, ..., 1/k)``. This
module draws that law exactly, hundreds of millions of times per command on a 65,536-GPU fabric,
without going flow by flow:

- the ``k`` ports are halved recursively; the flows going to the first ``a`` of ``s`` ports are
  ``Binomial(m, a/s)``, and the halves are split again (the chain rule of the multinomial);
- ``Binomial(m, a/s)`` is the count of ``m`` Bernoulli trials ``U < a/s`` with ``U`` uniform on
  [0, 1), decided 64 trials at a time by comparing random words bit by bit with the binary
  expansion of ``a/s`` (bit-sliced, exact for every rational ``a/s``); for ``a/s = 1/2`` it is
  the popcount of ``m`` random bits, one bit per flow. When ``k`` is a power of two, as on
  fat trees of 2^n-port switches, every split is a halving: the segments are halved level by
  level, and the bits of a word that one segment leaves unused decide the next segment's
  flows (a reservoir), so a draw uses one random bit per flow and level, none wasted, and
  about a third of the loop overhead of the recursion (1,024 flows over 32 ports: about
  225 ns, against 380 ns one segment and word at a time, measured 2026-12-02). Above 3,072
  flows (p = 1/2) or 320 (``_BITS_HALF``, ``_BITS_OTHER``), where it is cheaper, one binomial
  draw of numba's port of numpy's legacy sampler is taken instead, whose cost does not grow
  with ``m``.

The random bits come from xoshiro256** (Blackman and Vigna), seeded per call from the caller's
:class:`numpy.random.Generator` through splitmix64 (which seeds numba's generator too), so a
seeded command is reproducible and the draws depend on the generator's state only.

References
----------
D. Blackman and S. Vigna, "Scrambled Linear Pseudorandom Number Generators", ACM TOMS 47(4),
2021 (xoshiro256**, splitmix64 seeding). D. E. Knuth, TAOCP vol. 2, 3.4.1 (a Bernoulli trial by
comparing a uniform's bits with ``p``'s binary expansion); the chain rule of the multinomial.
V. Kachitvichyanukul and B. W. Schmeiser, "Binomial random variate generation", CACM 31(2),
1988 (BTPE, numpy's and numba's binomial).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np
from numba import njit

# The compiled helpers take and return numpy uint64 scalars (typed Any here) and pass the
# generator's four state words by value, so that they stay in registers.


def _jit(**options: Any) -> Any:
    """numba's ``njit`` with its on-disk cache (``__pycache__``, else the user's cache folder),
    or without it where numba finds no folder it may write (a read-only install and home):
    the functions are then compiled in each process, with nothing printed."""

    def decorate(func: Any) -> Any:
        try:
            return njit(cache=True, **options)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return njit(cache=False, **options)(func)

    return decorate


def _wrapping(func: Any) -> Any:
    """An entry point that also runs quietly as Python (``NUMBA_DISABLE_JIT=1``, numba's debug
    switch): xoshiro256**, splitmix64 and the popcount multiply numpy uint64 scalars modulo
    2**64 on purpose, which numpy reports as overflow RuntimeWarnings. The same wrap-around as
    the compiled code, whose uint64 arithmetic wraps silently, so the draws are the same;
    compiled, the dispatcher is returned as is (nothing added to its calls)."""
    if not numba.config.DISABLE_JIT:  # type: ignore[attr-defined]
        return func

    @functools.wraps(func)
    def interpreted(*args: Any) -> Any:
        with np.errstate(over="ignore"):
            return func(*args)

    return interpreted


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)
# Above these many trials a bit-sliced draw costs more than one draw of numba's binomial (its
# port of numpy's legacy sampler: inversion, or BTPE, Kachitvichyanukul and Schmeiser 1988),
# whose cost does not grow with the trials. Measured on the development machine (2026-12-01,
# numba 0.68): p = 1/2 costs about 1 ns per 64 trials, other p about 15 ns per 64, one binomial
# 50-70 ns; the crossovers are near 3,000 and 300 trials.
_BITS_HALF = 3072
_BITS_OTHER = 320


@_jit(inline="always")
def _rotl(x: Any, k: int) -> Any:
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@_jit(inline="always")
def _next(s0: Any, s1: Any, s2: Any, s3: Any) -> tuple[Any, ...]:
    """xoshiro256**: the next 64 random bits and the next state (kept in registers)."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@_jit(inline="always")
def _popcount(x: Any) -> int:
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> np.uint64(56))


@_jit()
def _state(seed: np.ndarray) -> np.ndarray:
    """xoshiro256** state from four seed words, each through splitmix64 (never all zero)."""
    s = np.empty(4, dtype=np.uint64)
    for i in range(4):
        z = seed[i] + np.uint64(0x9E3779B97F4A7C15) * np.uint64(i + 1)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        s[i] = z ^ (z >> np.uint64(31))
    if s[0] == _ZERO and s[1] == _ZERO and s[2] == _ZERO and s[3] == _ZERO:
        s[0] = _ONE
    np.random.seed(int(s[0] >> np.uint64(33)))  # numba's own generator, for large draws
    return s


@_jit(inline="always")
def _binomial(m: int, a: int, k: int, s0: Any, s1: Any, s2: Any, s3: Any) -> tuple[Any, ...]:
    """Exactly ``Binomial(m, a / k)`` for integers ``0 <= a <= k``, ``k >= 1``, and the next
    random state."""
    if m <= 0 or a <= 0:
        return 0, s0, s1, s2, s3
    if a >= k:
        return m, s0, s1, s2, s3
    if m > (_BITS_HALF if 2 * a == k else _BITS_OTHER):  # many flows: one draw of numba's
        return np.random.binomial(m, a / k), s0, s1, s2, s3
    total = 0
    left = m
    while left > 0:
        lanes = _ALL if left >= 64 else (_ONE << np.uint64(left)) - _ONE
        left -= 64
        if 2 * a == k:
            u, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
            total += _popcount(u & lanes)
            continue
        undecided = lanes
        less = _ZERO
        r = a
        while undecided != _ZERO:
            r *= 2
            u, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
            if r >= k:  # this bit of a/k is 1: a trial whose bit is 0 is below a/k
                r -= k
                less |= undecided & ~u
                undecided &= u
            else:  # this bit is 0: a trial whose bit is 1 is above a/k
                undecided &= ~u
            if r == 0:  # a/k's expansion has ended: the undecided trials are >= a/k
                break
        total += _popcount(less)
    return total, s0, s1, s2, s3


@_jit(inline="always")
def _half(f: int, buf: Any, nb: int, s0: Any, s1: Any, s2: Any, s3: Any) -> tuple[Any, ...]:
    """Exactly ``Binomial(f, 1/2)`` for ``f >= 1``: the ones among ``f`` random bits, taken
    first from the reservoir ``buf`` (its ``nb`` low bits, unused so far; the rest zero), then
    from new words, whose unused bits become the reservoir. Returns the count, the reservoir
    and the next random state. Every bit decides one trial and is used once."""
    if f < nb:
        total = _popcount(buf & ((_ONE << np.uint64(f)) - _ONE))
        return total, buf >> np.uint64(f), nb - f, s0, s1, s2, s3
    total = _popcount(buf)
    f -= nb
    while f >= 64:
        u, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
        total += _popcount(u)
        f -= 64
    if f == 0:
        return total, _ZERO, 0, s0, s1, s2, s3
    u, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    total += _popcount(u & ((_ONE << np.uint64(f)) - _ONE))
    return total, u >> np.uint64(f), 64 - f, s0, s1, s2, s3


@_jit(inline="always")
def _halves(m: int, k: int, out: np.ndarray, s0: Any, s1: Any, s2: Any, s3: Any) -> tuple[Any, ...]:
    """``out[:k]`` = one draw of ``Multinomial(m; 1/k, ..., 1/k)`` for ``k`` a power of two:
    every segment halved, level by level, each half of its flows ``Binomial(f, 1/2)``
    (:func:`_half`, one random bit per flow, none wasted), or one draw of numba's binomial
    above ``_BITS_HALF`` flows. Returns the next random state."""
    out[0] = m
    buf, nb = _ZERO, 0
    w = k
    while w > 1:
        h = w // 2
        for start in range(0, k, w):
            f = out[start]
            x = 0
            if f > _BITS_HALF:
                x = np.random.binomial(f, 0.5)
            elif f > 0:
                x, buf, nb, s0, s1, s2, s3 = _half(f, buf, nb, s0, s1, s2, s3)
            out[start] = x
            out[start + h] = f - x
        w = h
    return s0, s1, s2, s3


@_jit(inline="always")
def _split(
    m: int,
    k: int,
    out: np.ndarray,
    lo: np.ndarray,
    n: np.ndarray,
    s0: Any,
    s1: Any,
    s2: Any,
    s3: Any,
) -> tuple[Any, ...]:
    """``out[:k]`` = one draw of ``Multinomial(m; 1/k, ..., 1/k)``, by recursive halving, and
    the next random state. ``lo`` and ``n`` are scratch (at least ``2k``) for the segments
    still to split."""
    if k & (k - 1) == 0:
        return _halves(m, k, out, s0, s1, s2, s3)
    out[0] = m
    top = 0
    lo[0] = 0
    n[0] = k
    while top >= 0:
        start, size = lo[top], n[top]
        top -= 1
        if size <= 1:
            continue
        flows = out[start]
        a = size // 2
        first, s0, s1, s2, s3 = _binomial(flows, a, size, s0, s1, s2, s3)
        out[start] = first
        out[start + a] = flows - first
        top += 1
        lo[top], n[top] = start, a
        top += 1
        lo[top], n[top] = start + a, size - a
    return s0, s1, s2, s3


@_wrapping
@_jit()
def hop_full(
    rem: np.ndarray,
    share: np.ndarray,
    other: np.ndarray,
    pid: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    nxt: np.ndarray,
    nxt_e: np.ndarray,
    seed: np.ndarray,
) -> None:
    """Split every (switch ``v``, destination ``j``) over all ``P`` ports of ``v``.

    Parameters
    ----------
    rem : (n, J) int64
        Whole flows at each switch per destination column.
    share : (n, J) float64
        The expected pair-units on each port (the even split), added alongside.
    other, pid : (n, P) int64
        The switch each port reaches and the port's index in ``port``.
    port, port_exp : (n_ports,) float64
        Port loads, sampled and expected; added to.
    nxt, nxt_e : (n_next * J,) float64
        Flows (sampled, expected) arriving at the next switches, row-major (switch, column);
        added to.
    seed : (4,) uint64
        Seed words for this call's random bits.
    """
    n, J = rem.shape
    P = other.shape[1]
    s = _state(seed)
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    out = np.empty(P, dtype=np.int64)
    lo = np.empty(2 * P + 2, dtype=np.int64)
    sz = np.empty(2 * P + 2, dtype=np.int64)
    C = np.zeros((P, J), dtype=np.int64)  # one switch's draws, port by destination
    for v in range(n):
        e = 0.0
        for j in range(J):
            m = rem[v, j]
            e += share[v, j]
            if m > 0:
                s0, s1, s2, s3 = _split(m, P, out, lo, sz, s0, s1, s2, s3)
                for q in range(P):
                    C[q, j] = out[q]
            else:
                for q in range(P):
                    C[q, j] = 0
        for q in range(P):
            p, base = pid[v, q], other[v, q] * J
            t = 0
            for j in range(J):
                c = C[q, j]
                t += c
                nxt[base + j] += c
                nxt_e[base + j] += share[v, j]
            port[p] += t
            port_exp[p] += e


@_wrapping
@_jit()
def split_rows(counts: np.ndarray, mask: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Each row's whole flows split uniformly over the row's eligible slots.

    Parameters
    ----------
    counts : (N,) int64
        Flows of each row (non-negative).
    mask : (N, P) bool
        The eligible slots of each row; a row with flows has at least one.
    seed : (4,) uint64
        Seed words for this call's random bits.

    Returns
    -------
    (N, P) int64
        One draw of ``Multinomial(counts[i]; uniform over mask[i])`` per row, zero off the mask.
    """
    N, P = mask.shape
    s = _state(seed)
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    X = np.zeros((N, P), dtype=np.int64)
    out = np.empty(P, dtype=np.int64)
    lo = np.empty(2 * P + 2, dtype=np.int64)
    sz = np.empty(2 * P + 2, dtype=np.int64)
    slots = np.empty(P, dtype=np.int64)
    for i in range(N):
        m = counts[i]
        if m <= 0:
            continue
        k = 0
        for q in range(P):
            if mask[i, q]:
                slots[k] = q
                k += 1
        s0, s1, s2, s3 = _split(m, k, out, lo, sz, s0, s1, s2, s3)
        for r in range(k):
            X[i, slots[r]] = out[r]
    return X


# ECMP's turn (topo.flow.routing.ecmp._turn): its bookkeeping around the draw, compiled.
# Each loop runs in the order of the numpy code it replaced (row-major candidates, then
# bincount's order over the masked rows), so every float sum is the same to the bit.


@_wrapping
@_jit()
def turn_candidates(
    U: np.ndarray,
    Ue: np.ndarray,
    upfull: np.ndarray,
    gid: np.ndarray,
    gconv: np.ndarray,
    gw: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The (switch, destination) entries that turn, where they turn to, and what stays.

    Parameters
    ----------
    U, Ue : (n, J) float64
        Whole flows and pair-units at the tier's switches per destination column.
    upfull : (n, J) bool
        Every valid up port of the switch is minimal toward the destination.
    gid : (n,) int64
        The switch's parent group.
    gconv, gw : (groups, J) bool, int64
        Per group and destination: every parent turns down by one port into one and the
        same tier switch, and which.

    Returns
    -------
    v, j, w : (candidates,) int64
        The candidates ``upfull & (U > 0 | Ue > 0) & gconv[gid]`` in row-major order, and the
        switch each turns into.
    rest, rest_e : (n, J) float64
        ``U`` and ``Ue`` with the candidates set to 0.
    moved, moved_e : (n * J,) float64
        ``U`` and ``Ue`` of the candidates summed at ``(w, j)``, row-major.
    """
    n, J = U.shape
    vs = np.empty(n * J, dtype=np.int64)  # (room for every entry; the candidates' head kept)
    js = np.empty(n * J, dtype=np.int64)
    ws = np.empty(n * J, dtype=np.int64)
    rest = U.copy()
    rest_e = Ue.copy()
    moved = np.zeros(n * J)
    moved_e = np.zeros(n * J)
    c = 0
    for v in range(n):
        g = gid[v]
        for j in range(J):
            if upfull[v, j] and (U[v, j] > 0 or Ue[v, j] > 0) and gconv[g, j]:
                w = gw[g, j]
                vs[c], js[c], ws[c] = v, j, w
                c += 1
                moved[w * J + j] += U[v, j]
                moved_e[w * J + j] += Ue[v, j]
                rest[v, j] = 0.0
                rest_e[v, j] = 0.0
    return vs[:c], js[:c], ws[:c], rest, rest_e, moved, moved_e


@_wrapping
@_jit()
def turn_sums(
    inv: np.ndarray, U: np.ndarray, Ue: np.ndarray, vs: np.ndarray, js: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per merged state: the sums of ``U`` and ``Ue`` over its candidates, in candidate
    order, and its last candidate.

    Parameters
    ----------
    inv : (candidates,) int64
        The merged state of each candidate, 0 .. K-1.
    U, Ue : (n, J) float64
        Whole flows and pair-units, as given to :func:`turn_candidates`.
    vs, js : (candidates,) int64
        The candidates' switch and destination column.
    K : int
        Merged states.

    Returns
    -------
    M, Me : (K,) float64
        Flows and pair-units of each state.
    rep : (K,) int64
        The last candidate of each state.
    """
    M = np.zeros(K)
    Me = np.zeros(K)
    rep = np.zeros(K, dtype=np.int64)
    for c in range(inv.size):
        q = inv[c]
        M[q] += U[vs[c], js[c]]
        Me[q] += Ue[vs[c], js[c]]
        rep[q] = c
    return M, Me, rep


@_wrapping
@_jit()
def turn_ports(
    X: np.ndarray,
    mask: np.ndarray,
    share: np.ndarray,
    up: np.ndarray,
    dn: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
) -> None:
    """Add each state's drawn flows and even share to the ports it loads, up then down.

    Parameters
    ----------
    X : (K, P) int64
        Whole flows drawn onto each slot (:func:`split_rows`).
    mask : (K, P) bool
        The valid slots.
    share : (K,) float64
        Pair-units per valid slot (the even split).
    up, dn : (K, P) int64
        The port of each slot going up, and the single port down after it.
    port, port_exp : (n_ports,) float64
        Port loads, sampled and expected (pair-units); added to.
    """
    K, P = X.shape
    for ports in (up, dn):
        tmp = np.zeros(port.size)
        tmp_e = np.zeros(port.size)
        for r in range(K):
            for q in range(P):
                if mask[r, q]:
                    tmp[ports[r, q]] += X[r, q]
                    tmp_e[ports[r, q]] += share[r]
        for p in range(port.size):
            port[p] += tmp[p]
            port_exp[p] += tmp_e[p]


def seed_words(rng: np.random.Generator) -> np.ndarray:
    """(4,) uint64: the next four words of ``rng``'s bit generator, to seed one call."""
    words: np.ndarray = rng.bit_generator.random_raw(4).astype(np.uint64)
    return words


__all__ = ["hop_full", "seed_words", "split_rows", "turn_candidates", "turn_ports", "turn_sums"]
