"""Token gating: which experts each token picks, as DeepSeek-V3 routes them.

DeepSeek-V3's gate (``noaux_tc``) scores every routed expert, ranks the expert *groups* by the
sum of the highest ``K/M`` scores inside each group, keeps the top ``M`` groups
(``topk_group``), and picks the top ``K`` experts (``num_experts_per_tok``) within them. When
one group is the experts of one node, this is *node-limited routing*: a token reaches at most
``M`` nodes (DeepSeek-V3: ``K = 8``, ``M = 4``, the top 2 scores of each node ranked).

Scores here are synthetic, since no real activations are at hand: ``log p_e + g`` with ``g``
standard Gumbel noise drawn once per (token, expert), ``p`` the experts' load distribution
(uniform by default; Zipf or a given load vector for skewed routing). Without a group limit the
top ``K`` of these scores is a draw of ``K`` distinct experts without replacement with
probabilities proportional to ``p`` (the Gumbel-top-k trick), so uniform routing makes every
expert equally likely and skewed routing loads the experts in proportion to ``p``. The group
limit is applied to the same scores, so the limited and unlimited routings of a token differ
only by the limit.

The gate weights (each token's shares of its experts' outputs) are the softmax of the chosen
experts' scores: positive and summing to one per token, as DeepSeek-V3's normalised weights
(``norm_topk_prob``). They do not change the traffic.

References
----------
DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437, §2.1.2 (node-limited routing,
``M = 4``). W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, §4.3 ("the sum of the
highest K/M affinity scores" of each node). DeepSeek-V3 ``modeling_deepseek.py``
(``MoEGate``: group score = top-2 sum, top ``topk_group`` groups, top-k within). W. Kool,
H. van Hoof and M. Welling, "Stochastic Beams and Where to Find Them: The Gumbel-Top-k Trick",
ICML 2019.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from topo.errors import FormatError, TopoError
from topo.files import long_number, read_text, too_deep

__all__ = [
    "GateResult",
    "expert_probabilities",
    "expected_nodes_uniform",
    "gate",
    "load_expert_loads",
    "route_tokens",
]

CHUNK_TOKENS = 8192
"""Tokens gated at once (bounds the score matrix to CHUNK_TOKENS x experts floats)."""


@dataclass(frozen=True)
class GateResult:
    """The experts each token picks.

    Attributes
    ----------
    experts : numpy.ndarray of int, shape (tokens, k)
        Chosen routed experts of each token, distinct within a row.
    weights : numpy.ndarray of float, shape (tokens, k)
        Gate weights (shares) of those experts, positive, each row summing to one.
    """

    experts: np.ndarray
    weights: np.ndarray


def expert_probabilities(
    n_experts: int,
    *,
    zipf: float | None = None,
    load: Sequence[float] | np.ndarray | None = None,
    seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Each expert's share of the routing: uniform, Zipf, or proportional to a load vector.

    Parameters
    ----------
    n_experts : int
        Routed experts.
    zipf : float, optional
        Zipf exponent ``s > 0``: the expert of popularity rank ``r`` (1-based) gets a share
        proportional to ``r**-s``; ranks are a random permutation of the experts (seeded), so
        hot experts fall on random nodes.
    load : sequence of float, optional
        Relative load of each expert (``n_experts`` numbers >= 0, not all 0), e.g. token counts
        measured per expert.
    seed : int, numpy.random.Generator or None
        Randomness for the Zipf ranks.

    Returns
    -------
    numpy.ndarray, shape (n_experts,)
        Probabilities summing to one.

    Raises
    ------
    TopoError
        Both ``zipf`` and ``load`` given; ``zipf`` not positive and finite; ``load`` of the
        wrong length, negative, not finite, or all zero.

    References
    ----------
    G. K. Zipf, "Human Behavior and the Principle of Least Effort", 1949 (the rank-frequency
    law used as the skewed expert load).
    """
    if zipf is not None and load is not None:
        raise TopoError("give either a Zipf exponent or an expert-load vector, not both")
    if load is not None:
        p = np.asarray(load, dtype=float)
        if p.shape != (n_experts,):
            raise TopoError(
                f"the expert-load vector has {p.size} entries; the model has {n_experts} "
                "routed experts"
            )
        if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise TopoError("expert loads must be finite numbers >= 0, not all 0")
        return p / p.sum()
    if zipf is not None:
        if not (np.isfinite(zipf) and zipf > 0):
            raise TopoError(f"the Zipf exponent must be a positive number, got {zipf}")
        rank = np.random.default_rng(seed).permutation(n_experts) + 1
        p = rank.astype(float) ** -float(zipf)
        return p / p.sum()
    return np.full(n_experts, 1.0 / n_experts)


def load_expert_loads(path: str | Path, n_experts: int | None = None) -> np.ndarray:
    """Read an expert-load vector: a JSON list of numbers, or numbers separated by white space
    or commas.

    Parameters
    ----------
    path : str or Path
        The file.
    n_experts : int, optional
        Routed experts of the model; when given, the loads are checked as
        :func:`expert_probabilities` checks them, and a violation names the file.

    Returns
    -------
    numpy.ndarray, shape (loads,)
        The relative loads as read (not normalised).

    Raises
    ------
    FormatError
        The file is missing, holds something other than numbers or a run of more than
        :data:`topo.files.MAX_NUMBER_DIGITS` digits, or (with ``n_experts``) has
        the wrong number of loads, a negative or non-finite one, or only zeros.
    """
    text = read_text(path)
    too_long = long_number(path, text)
    if too_long is not None:
        raise too_long
    try:
        data = json.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except json.JSONDecodeError:
        data = text.replace(",", " ").split()
    if not isinstance(data, list):
        raise FormatError(path, "expected a list of expert loads (numbers)")
    try:
        loads = np.array([float(x) for x in data])
    except (TypeError, ValueError):
        raise FormatError(path, "expected numbers only (one load per routed expert)") from None
    if n_experts is not None:
        try:
            expert_probabilities(n_experts, load=loads)
        except TopoError as exc:
            raise FormatError(path, str(exc)) from None
    return loads


def gate(
    scores: np.ndarray,
    groups: np.ndarray,
    k: int,
    limit: int = 0,
) -> GateResult:
    """Group-limited top-k gating of a batch of tokens (DeepSeek-V3's ``noaux_tc`` rule).

    Parameters
    ----------
    scores : numpy.ndarray, shape (tokens, experts)
        Affinity of each token for each routed expert; ``-inf`` marks an expert a token can
        never pick.
    groups : numpy.ndarray of int, shape (experts,)
        Group (node) of each expert, ``0 .. n_groups - 1``.
    k : int
        Experts per token.
    limit : int
        Groups a token may use, ``M``; 0 (or at least the number of groups) = no limit. Groups
        are ranked by the sum of their ``max(1, k // M)`` highest scores.

    Returns
    -------
    GateResult
        ``experts`` (tokens, k) distinct per row, within at most ``limit`` groups;
        ``weights`` softmax of the chosen scores, rows summing to one.

    Raises
    ------
    TopoError
        If ``k`` exceeds the experts, or a token cannot find ``k`` experts with a finite score
        within its ``limit`` groups (e.g. a load vector with too few non-zero experts).

    Examples
    --------
    >>> s = np.array([[0.9, 0.8, 0.1, 0.7]])         # experts 0, 1 in group 0; 2, 3 in group 1
    >>> gate(s, np.array([0, 0, 1, 1]), k=2, limit=1).experts.tolist()
    [[0, 1]]
    >>> sorted(gate(s, np.array([0, 0, 1, 1]), k=3, limit=0).experts[0].tolist())
    [0, 1, 3]

    References
    ----------
    DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437, §2.1.2; W. Zhao et al.,
    ISCA 2025, §4.3.
    """
    scores = np.asarray(scores, dtype=float)
    n_tok, n_exp = scores.shape
    if not 1 <= k <= n_exp:
        raise TopoError(f"{k} experts per token is outside 1..{n_exp} (the routed experts)")
    groups = np.asarray(groups)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    masked = scores
    if 0 < limit < n_groups:
        q = max(1, k // limit)
        padded = _group_view(scores, groups, n_groups)  # (tokens, groups, size)
        top = -np.sort(-padded, axis=-1)[..., :q]
        del padded  # (at most MOE_GATE_ARRAYS score-sized arrays alive at once)
        finite = np.isfinite(top)
        gscore = np.where(finite, top, 0.0).sum(axis=-1)
        gscore[~finite.any(axis=-1)] = -np.inf
        keep = np.argpartition(-gscore, limit - 1, axis=1)[:, :limit]
        allowed = np.zeros((n_tok, n_groups), dtype=bool)
        np.put_along_axis(allowed, keep, True, axis=1)
        masked = np.where(allowed[:, groups], scores, -np.inf)
    top_k = np.argpartition(-masked, k - 1, axis=1)[:, :k]
    chosen = np.take_along_axis(masked, top_k, axis=1)
    if not np.all(np.isfinite(chosen)):
        where = f" within {limit} groups" if 0 < limit < n_groups else ""
        raise TopoError(
            f"a token finds fewer than {k} experts with a non-zero load{where}; "
            "give more experts a load > 0 or raise node_limit",
            names=("node_limit",),
        )
    order = np.argsort(-chosen, axis=1, kind="stable")
    experts = np.take_along_axis(top_k, order, axis=1)
    chosen = np.take_along_axis(chosen, order, axis=1)
    w = np.exp(chosen - chosen[:, :1])
    return GateResult(experts=experts.astype(np.int64), weights=w / w.sum(axis=1, keepdims=True))


def route_tokens(
    n_tokens: int,
    probabilities: np.ndarray,
    groups: np.ndarray,
    k: int,
    limits: Sequence[int],
    *,
    seed: int | np.random.Generator | None = 0,
    chunk: int = CHUNK_TOKENS,
) -> dict[int, GateResult]:
    """Gate ``n_tokens`` tokens once per group limit, on the same random scores.

    Parameters
    ----------
    n_tokens : int
        Tokens to route.
    probabilities : numpy.ndarray, shape (experts,)
        Each expert's share (:func:`expert_probabilities`).
    groups : numpy.ndarray of int, shape (experts,)
        Group (node) of each expert.
    k : int
        Experts per token.
    limits : sequence of int
        Group limits to gate with (0 = none); each gets its own :class:`GateResult`.
    seed : int, numpy.random.Generator or None
        Randomness of the scores; the same seed gives the same routing.
    chunk : int
        Tokens scored at once (memory bound).

    Returns
    -------
    dict of int to GateResult
        One routing per limit, the tokens in the same order.

    Raises
    ------
    TopoError
        As :func:`gate`.
    """
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore"):
        logp = np.log(np.asarray(probabilities, dtype=float))
    parts: dict[int, list[GateResult]] = {m: [] for m in limits}
    for start in range(0, n_tokens, chunk):
        size = min(chunk, n_tokens - start)
        scores = logp + rng.gumbel(size=(size, logp.size))
        for m in parts:
            parts[m].append(gate(scores, groups, k, m))
    out: dict[int, GateResult] = {}
    for m, rs in parts.items():
        if rs:
            out[m] = GateResult(
                experts=np.concatenate([r.experts for r in rs]),
                weights=np.concatenate([r.weights for r in rs]),
            )
        else:
            out[m] = GateResult(np.zeros((0, k), np.int64), np.zeros((0, k)))
    return out


def expected_nodes_uniform(n_experts: int, n_nodes: int, k: int) -> float:
    """Expected distinct nodes a token reaches with uniform routing and no node limit.

    ``k`` distinct experts drawn uniformly from ``n_experts`` spread evenly over ``n_nodes``
    nodes: a node is missed with probability ``C(E - E/N, k) / C(E, k)``, so the expectation is
    ``N * (1 - C(E - E/N, k) / C(E, k))``.

    Parameters
    ----------
    n_experts, n_nodes, k : int
        Routed experts ``E`` (a multiple of ``N``), nodes ``N``, experts per token ``k``.

    Returns
    -------
    float
        Expected number of distinct nodes per token.

    Raises
    ------
    TopoError
        If ``n_experts`` is not a multiple of ``n_nodes``.

    Examples
    --------
    >>> round(expected_nodes_uniform(256, 8, 8), 3)      # DeepSeek-V3, EP over 8 nodes
    5.295

    References
    ----------
    Hypergeometric miss probability (sampling without replacement); W. Zhao et al., ISCA 2025,
    §4.3 (node-limited routing bounds this by M).
    """
    if n_experts % n_nodes:
        raise TopoError(f"{n_experts} experts do not spread evenly over {n_nodes} nodes")
    per = n_experts // n_nodes
    return n_nodes * (1.0 - comb(n_experts - per, k) / comb(n_experts, k))


def _group_view(scores: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Scores arranged (tokens, groups, largest group), padded with -inf."""
    members: list[Any] = [np.flatnonzero(groups == g) for g in range(n_groups)]
    size = max(len(m) for m in members)
    index = np.full((n_groups, size), scores.shape[1])  # the padding column
    for g, m in enumerate(members):
        index[g, : len(m)] = m
    padded = np.concatenate([scores, np.full((scores.shape[0], 1), -np.inf)], axis=1)
    return padded[:, index]
