"""Gating against its definition: k distinct experts, at most M groups (nodes), the top groups by
the sum of their top K/M scores, weights summing to one, seeded; routing shares from theory."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from topo.errors import TopoError
from topo.moe import expected_nodes_uniform, expert_probabilities, gate, route_tokens

E, N, K, M = 256, 8, 8, 4  # DeepSeek-V3: 256 experts on 8 nodes, 8 per token, 4 nodes
GROUPS = np.arange(E) // (E // N)


def brute_force_gate(row, groups, k, limit):
    """The rule written out for one token with plain Python."""
    n_groups = max(groups) + 1
    allowed = set(range(n_groups))
    if 0 < limit < n_groups:
        q = max(1, k // limit)
        score = {}
        for g in range(n_groups):
            vals = sorted((row[e] for e in range(len(row)) if groups[e] == g), reverse=True)
            score[g] = sum(vals[:q])
        allowed = set(sorted(score, key=lambda g: -score[g])[:limit])
    cands = [e for e in range(len(row)) if groups[e] in allowed]
    return set(sorted(cands, key=lambda e: -row[e])[:k])


def test_gate_matches_the_definition():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(200, E))
    for limit in (M, 0):
        r = gate(scores, GROUPS, K, limit)
        assert r.experts.shape == (200, K)
        for t in range(200):
            chosen = r.experts[t].tolist()
            assert len(set(chosen)) == K  # k distinct experts
            assert set(chosen) == brute_force_gate(scores[t], GROUPS.tolist(), K, limit)
            if limit:
                assert len({GROUPS[e] for e in chosen}) <= M  # at most M nodes
        assert np.all(r.weights > 0)
        np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=1e-12)  # shares sum to one


def test_weights_are_the_softmax_of_the_chosen_scores():
    s = np.array([[np.log(3.0), np.log(1.0), np.log(6.0), -50.0]])
    r = gate(s, np.array([0, 0, 1, 1]), k=3, limit=0)
    assert r.experts.tolist() == [[2, 0, 1]]
    np.testing.assert_allclose(r.weights[0], [0.6, 0.3, 0.1])


def test_group_score_is_the_sum_of_the_top_k_over_m():
    # k = 4, M = 2 -> q = 2: groups ranked by their top-2 sums: group 0: 10 + 0.5 = 10.5,
    # group 1: 6 + 5 = 11, group 2: 5.5 + 4.5 = 10. Groups 1 and 0 are kept, so expert 6 (5.5,
    # third best overall) is out and expert 2 (0.5) is in.
    s = np.array([[10, 0.3, 0.5, 6, 5, 0.2, 5.5, 4.5, 0.1]])
    groups = np.repeat([0, 1, 2], 3)
    r = gate(s, groups, k=4, limit=2)
    assert r.experts[0].tolist() == [0, 3, 4, 2]  # by score, highest first
    # M = 1: one group of 3 experts cannot give 4.
    with pytest.raises(TopoError, match="fewer than 4 experts"):
        gate(s, groups, k=4, limit=1)


def test_same_seed_same_routing():
    p = expert_probabilities(E)
    a = route_tokens(1000, p, GROUPS, K, [M, 0], seed=3)
    b = route_tokens(1000, p, GROUPS, K, [M, 0], seed=3)
    c = route_tokens(1000, p, GROUPS, K, [M, 0], seed=4)
    for m in (M, 0):
        np.testing.assert_array_equal(a[m].experts, b[m].experts)
        assert not np.array_equal(a[m].experts, c[m].experts)


def test_chunking_does_not_change_the_routing():
    p = expert_probabilities(E)
    a = route_tokens(1000, p, GROUPS, K, [M], seed=5, chunk=1000)
    b = route_tokens(1000, p, GROUPS, K, [M], seed=5, chunk=300)
    np.testing.assert_array_equal(a[M].experts, b[M].experts)


def test_expected_nodes_closed_form_by_hand():
    # 4 experts on 2 nodes, 2 per token: both on one node with probability 2 / C(4, 2) = 1/3.
    assert expected_nodes_uniform(4, 2, 2) == pytest.approx(2 * (1 - 1 / 6))
    # DeepSeek-V3 over 8 nodes: 8 (1 - C(224, 8) / C(256, 8)).
    assert expected_nodes_uniform(256, 8, 8) == pytest.approx(8 * (1 - comb(224, 8) / comb(256, 8)))


def test_uniform_routing_reaches_the_expected_nodes_and_loads_evenly():
    n = 20_000
    r = route_tokens(n, expert_probabilities(E), GROUPS, K, [M, 0], seed=1)
    nodes_free = np.array([len(set(row)) for row in GROUPS[r[0].experts]])
    nodes_lim = np.array([len(set(row)) for row in GROUPS[r[M].experts]])
    # Monte Carlo mean within 5 standard errors of the hypergeometric expectation (5.2947).
    se = nodes_free.std() / np.sqrt(n)
    assert abs(nodes_free.mean() - expected_nodes_uniform(E, N, K)) < 5 * se
    assert nodes_lim.max() <= M
    assert nodes_lim.mean() < nodes_free.mean()
    # Every expert equally likely: n K / E = 625 picks each, binomial sd ~ 25.
    counts = np.bincount(r[M].experts.ravel(), minlength=E)
    assert abs(counts - n * K / E).max() < 6 * np.sqrt(n * K / E)


def test_zipf_shares():
    # s = 1 over 4 experts: 1, 1/2, 1/3, 1/4 normalised by 25/12 -> 12/25, 6/25, 4/25, 3/25.
    p = expert_probabilities(4, zipf=1.0, seed=0)
    np.testing.assert_allclose(sorted(p, reverse=True), [12 / 25, 6 / 25, 4 / 25, 3 / 25])


def test_skewed_routing_follows_the_shares():
    # k = 1 without a limit: the Gumbel-max trick picks expert e with probability p_e.
    p = expert_probabilities(4, load=[1, 2, 3, 4])
    np.testing.assert_allclose(p, [0.1, 0.2, 0.3, 0.4])
    n = 100_000
    r = route_tokens(n, p, np.zeros(4, dtype=int), 1, [0], seed=2)
    freq = np.bincount(r[0].experts.ravel(), minlength=4) / n
    assert np.abs(freq - p).max() < 5 * np.sqrt(0.25 / n)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(zipf=1.0, load=[1] * 8), "either a Zipf exponent or an expert-load vector"),
        (dict(zipf=0.0), "Zipf exponent must be a positive number"),
        (dict(load=[1, 2]), "has 2 entries; the model has 8"),
        (dict(load=[1] * 7 + [-1]), "finite numbers >= 0"),
        (dict(load=[0] * 8), "not all 0"),
    ],
)
def test_probability_refusals(kw, match):
    with pytest.raises(TopoError, match=match):
        expert_probabilities(8, **kw)


def test_too_few_loaded_experts():
    p = expert_probabilities(8, load=[1, 1, 0, 0, 0, 0, 0, 0])
    with pytest.raises(TopoError, match="fewer than 4 experts with a non-zero load"):
        route_tokens(10, p, np.arange(8) // 2, 4, [0], seed=0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[1, 2, " + "3" * 4301 + "]", r"loads.json:1: a number of 4,301 digits"),
        ("[1, 2, NaN, 4]", r"loads.json: expert loads must be finite numbers >= 0"),
        ("[1, -2, 3, 4]", r"loads.json: expert loads must be finite numbers >= 0"),
    ],
)
def test_bad_expert_loads_are_refused_naming_the_file(tmp_path, text, match):
    # Issue 11: a 4,301-digit integer escaped as a bare ValueError from json.
    from topo.moe import load_expert_loads

    path = tmp_path / "loads.json"
    path.write_text(text)
    with pytest.raises(TopoError, match=match):
        load_expert_loads(path, n_experts=4)
