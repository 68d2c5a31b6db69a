"""The plan's integer programs (topo.cost.plan) against a brute-force search and closed forms.

The brute force below enumerates every design the builders can make (leaf up ports, leaves,
spine counts dividing the up ports; pods and core groups; Slim Fly q; Dragonfly a, p, h, g) on
small radices and keeps the cheapest: the program must find the same cost. Ceilings are held
against the closed forms of folded Clos networks (two layers: k²/2 endpoints per plane; three
layers: k³/4) and of Dragonfly (a·p·(a·h + 1)).
"""

from __future__ import annotations

import math

import pulp
import pytest

from topo.cost import load_prices, max_gpus_plan, plan
from topo.cost.prices import Item, PriceBook
from topo.errors import SpecError
from topo.spec import ServerSpec, SwitchSpec

W, OPT = 82_000.0, 500.0  # a switch and a switch-switch cable (test book, endpoints free)
DEFAULT = (44_500.0, 1_680.0, 600.0)  # the default book: switch, optical cable, endpoint cable


def _book(ports: int) -> PriceBook:
    """Prices for ``ports``-port switches: W per switch, OPT per switch-switch cable."""
    return PriceBook(
        path="test",
        switches=(Item("switch", 400.0, W, ports=ports),),
        cables=(
            Item("optical", 400.0, OPT),
            Item("electrical", 400.0, OPT),
            Item("endpoint", 400.0, 0.0),
        ),
    )


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def brute_two_layer(E, k, R):
    best = W if E <= k else math.inf
    for u in range(1, k // 2 + 1):
        if k - u > R * u:
            continue
        for L in range(1, k + 1):
            if L * (k - u) < E:
                continue
            for S in _divisors(u):
                if S * k >= L * u:
                    best = min(best, W * (L + S) + OPT * L * u)
    return best


def brute_three_layer(E, k):
    half = k // 2
    best = W if E <= k else math.inf
    for P in range(1, k + 1):
        if P * half * half < E:
            continue
        if P == 1:
            best = min(best, W * k + OPT * half * half)
        for c in _divisors(half):
            if P > 1 and c * k >= P * half:
                best = min(best, W * (k * P + half * c) + OPT * 2 * P * half * half)
    return best


def _prime_power(q):
    p = next(d for d in range(2, q + 1) if q % d == 0)
    while q % p == 0:
        q //= p
    return q == 1


def brute_slimfly(E, k, R):
    best = math.inf
    for q in range(3, k + 1):
        if q % 4 == 2 or not _prime_power(q):
            continue
        delta = {0: 0, 1: 1, 3: -1}[q % 4]
        kp = (3 * q - delta) // 2
        pmax = min(k - kp, math.floor(R * math.ceil(kp / 2)))
        if pmax >= 1 and 2 * q * q * pmax >= E:
            best = min(best, 2 * q * q * W + q * q * kp * OPT)
    return best


def brute_dragonfly(E, k, R):
    best = math.inf
    for h in range(1, k):
        a = 2 * h
        for p in range(1, math.floor(R * h) + 1):
            if p + a - 1 + h > k:
                continue
            for g in range(2, a * h + 2):
                if a * p * g >= E:
                    best = min(best, g * (a * W + a * (a - 1) // 2 * OPT + a * h // 2 * OPT))
                    break
    return best


CASES = [(4, 1.0), (6, 1.0), (8, 1.0), (8, 3.0)]


@pytest.mark.parametrize(("k", "R"), CASES)
def test_plan_matches_brute_force_on_small_radices(k, R):
    book = _book(k)
    for n in sorted(
        {1, 2, k - 1, k, k + 1, k * k // 4, k * k // 2, k * k // 2 + 1, k**3 // 4, 3 * k}
    ):
        rows = plan(
            n, SwitchSpec(k), ServerSpec(1, 1), max_oversubscription=R,
            families=("ft2", "ft3", "slimfly", "dragonfly"), prices=book, check=False,
        )  # fmt: skip
        got = {r.family: (r.cost_usd if r.feasible else math.inf) for r in rows}
        want = {
            "ft2": brute_two_layer(n, k, R),
            "ft3": brute_three_layer(n, k),
            "slimfly": brute_slimfly(n, k, R),
            "dragonfly": brute_dragonfly(n, k, R),
        }
        for family, cost in want.items():
            assert got[family] == pytest.approx(cost), (k, R, n, family)


def test_mpft_is_planes_times_a_plane():
    # 2 GPUs and 2 NICs per server: 2 planes, each with one endpoint per server.
    book = _book(8)
    for servers in (3, 8, 9, 32):
        (row,) = plan(2 * servers, SwitchSpec(8), ServerSpec(2, 2),
                      families=("mpft",), prices=book, check=False)  # fmt: skip
        assert row.cost_usd == pytest.approx(2 * brute_two_layer(servers, 8, 1.0))
        assert row.planes == 2


@pytest.mark.parametrize("k", [4, 8, 16, 64])
def test_ceilings_are_the_closed_forms(k):
    got = {c.family: c for c in max_gpus_plan(SwitchSpec(k), ServerSpec(1, 1), prices=_book(k))}
    assert got["ft2"].max_gpus == k * k // 2
    assert got["mpft"].max_gpus == k * k // 2  # one NIC: one plane
    assert got["ft3"].max_gpus == k**3 // 4
    for c in got.values():
        assert c.max_gpus == c.closed_form  # the builders' max_gpus for the same design


def test_ceilings_64_ports_eight_planes():
    got = {c.family: c.max_gpus for c in max_gpus_plan(families=("ft2", "mpft", "ft3"))}
    assert got == {"ft2": 2048, "mpft": 8 * 2048, "ft3": 64**3 // 4}


def test_dragonfly_and_slimfly_ceilings_by_brute_force():
    for k in (8, 12, 16):
        got = {c.family: c.endpoints for c in max_gpus_plan(
            SwitchSpec(k), ServerSpec(1, 1), prices=_book(k),
            families=("slimfly", "dragonfly"))}  # fmt: skip
        sf = max(
            2 * q * q * min(k - (3 * q - d) // 2, math.ceil((3 * q - d) / 4))
            for q, d in ((3, -1), (4, 0), (5, 1), (7, -1), (8, 0), (9, 1))
            if (3 * q - d) // 2 + 1 <= k
        )
        df = max(
            2 * h * p * (2 * h * h + 1)
            for h in range(1, k)
            for p in range(1, h + 1)
            if p + 3 * h - 1 <= k
        )
        assert got == {"slimfly": sf, "dragonfly": df}, k


def test_16385_gpus_need_a_third_tier_or_more_planes():
    rows = {r.family: r for r in plan(16385, families=("mpft", "ft3"), check=False)}
    mpft = rows["mpft"]
    assert not mpft.feasible and mpft.status == "infeasible"
    assert "2,048 endpoints" in mpft.binding and "16,384 GPUs" in mpft.binding
    assert "third tier or more planes" in mpft.binding
    assert rows["ft3"].feasible and rows["ft3"].tiers == 3


def test_16384_gpus_mpft_is_table3():
    (row,) = plan(16384, families=("mpft",), check=False)
    # 8 planes of 64 leaves + 32 spines, 2,048 leaf-spine cables each (Table 3's MPFT column).
    assert (row.switches, row.links, row.planes, row.tiers) == (768, 16384, 8, 2)
    switch, link, endpoint = DEFAULT
    assert row.cost_usd == 768 * switch + 16384 * link + 16384 * endpoint
    assert "leaf down ports" in row.binding


def test_designs_build_count_and_price_the_same():
    # 50 endpoints of 8-port switches: an FT2 holds 32; FT3 (4 pods of 16), Slim Fly (q = 3,
    # 18 routers of 3) and Dragonfly (a = 4, p = h = 2: 8 per group, 7 groups) hold them.
    rows = plan(50, SwitchSpec(8), ServerSpec(1, 1), prices=_book(8))
    assert {r.family for r in rows if r.feasible} == {"ft3", "slimfly", "dragonfly"}
    assert all(r.checked for r in rows if r.feasible)


def test_ranked_by_cost():
    rows = plan(4096, check=False)
    costs = [r.cost_usd for r in rows if r.feasible]
    assert costs == sorted(costs)
    assert [r.feasible for r in rows] == sorted((r.feasible for r in rows), reverse=True)


def test_oversubscription_makes_two_layers_reach_further():
    # R = 3: leaves of 16 up and 48 down ports; 64 leaves hold 3,072 endpoints.
    (row,) = plan(3072, families=("ft2",), max_oversubscription=3, check=False)
    assert row.feasible and row.design["oversubscription"] == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpus": 0}, "at least 1"),
        ({"gpus": 8, "families": ("torus",)}, "unknown family"),
        ({"gpus": 8, "max_oversubscription": 0.5}, "at least 1"),
        ({"gpus": 8, "switch": {"ports": 7}}, "even number"),
        ({"gpus": 8, "switch": {"link_gbps": 800}}, "no switch of 800 Gb/s"),
    ],
)
def test_refusals(kwargs, message):
    with pytest.raises(SpecError, match=message):
        if "switch" in kwargs:
            kwargs = {**kwargs, "switch": SwitchSpec(**kwargs["switch"])}
        plan(**kwargs)


def test_default_prices_are_used():
    assert load_prices().switch(64, 400).price_usd == DEFAULT[0]


def test_time_limit_is_reported(monkeypatch):
    import importlib

    plan_mod = importlib.import_module("topo.cost.plan")  # the module, not topo.cost.plan()
    monkeypatch.setattr(plan_mod, "solve_program", lambda m, t: "time limit")
    (row,) = plan(64, families=("ft2",), time_limit_s=0.5, check=False)
    assert not row.feasible and row.status == "time limit"
    assert "time limit (0.5 s)" in row.binding


def test_plan_three_tier_mpft_counts_by_hand():
    # 100,000 GPUs, 8 planes of 12,500 endpoints on 64-port switches: 391 leaves of 32 down
    # ports, 13 pods of <= 32 leaves with 32 spines each, 13 pods -> 32 core groups of c = 8
    # (the smallest divisor of 32 with 64c >= 13*32): 391 + 416 + 256 = 1,063 switches per
    # plane; cables 32 per leaf + 32 per spine = 25,824 per plane.
    (row,) = plan(100_000, families=("mpft3",), check=False)
    assert row.feasible and row.tiers == 3 and row.planes == 8
    assert row.switches == 8 * 1063
    assert row.links == 8 * 25_824
    assert row.cost_usd == pytest.approx(8 * 1063 * 44_500 + 8 * 25_824 * 1_680 + 100_000 * 600)
    assert row.design == {
        "family": "mpft",
        "switch_ports": 64,
        "link_gbps": 400.0,
        "gpus_per_node": 8,
        "nics_per_node": 8,
        "gpus": 100_000,
        "tiers": 3,
    }


def test_plan_three_tier_mrft_is_the_dgx_b200_superpod_and_is_built():
    # DGX B200 SuperPOD, 16 SUs: 128 leaves, 128 spines, 64 cores; 4,096 cables per tier.
    (row,) = plan(4096, families=("mrft3",))
    assert row.switches == 128 + 128 + 64
    assert row.links == 2 * 4096
    assert row.checked is True


def test_three_tier_ceilings_are_the_closed_forms():
    got = {c.family: c.max_gpus for c in max_gpus_plan(families=("mpft3", "mrft3"))}
    assert got == {"mpft3": 8 * 64**3 // 4, "mrft3": 64**3 // 4}
    (row,) = plan(524_289, families=("mpft3",), check=False)
    assert not row.feasible and "524,288 GPUs" in row.binding


# -- issue 11: an absurd oversubscription ends; "not solved" is not called a time limit ------


def test_a_huge_oversubscription_plans_as_the_radix_allows():
    # Past R = k - 1 (one up port, k - 1 down) no design changes: 1e9 plans as 63 does, and
    # ends (the Dragonfly's candidates were enumerated up to R * h before).
    huge = plan(4096, families=("dragonfly", "ft2"), max_oversubscription=1e9, check=False)
    same = plan(4096, families=("dragonfly", "ft2"), max_oversubscription=63, check=False)
    assert [(r.family, r.cost_usd, r.design) for r in huge] == [
        (r.family, r.cost_usd, r.design) for r in same
    ]


def test_not_solved_before_the_time_limit_is_not_a_time_limit(monkeypatch):
    # HiGHS ends at once without an optimum (pulp's "Not Solved"), 60 s before its limit.
    def not_solved(self, solver=None, **kwargs):
        self.status, self.sol_status = pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound
        return self.status

    monkeypatch.setattr(pulp.LpProblem, "solve", not_solved)
    (row,) = plan(64, families=("ft2",), time_limit_s=60, check=False)
    assert not row.feasible and row.status == "not solved"
    assert "time limit (" not in row.binding
    assert row.binding == (
        "HiGHS stopped without a proven optimum (status Not Solved), before any time limit"
    )


# -- a three-tier family below one pod has no core layer: the row says so -------------------


def test_three_tier_families_below_one_pod_say_they_are_degenerate():
    # 64-port switches: one pod is k/2 = 32 leaves of 32 down ports, 32 * 32 = 1,024
    # endpoints (a plane of mpft3); past it a core layer joins the pods.
    fams = ("ft2", "ft3", "mpft3", "mrft3")
    rows = {r.family: r for r in plan(1, families=fams, check=False)}  # 1 GPU: one server
    ft3 = rows["ft3"]
    # 8 endpoints fit one 64-port switch: ft3's cheapest design is ft2's
    assert (ft3.tiers, ft3.switches, ft3.links) == (1, 1, 0) == (
        rows["ft2"].tiers,
        rows["ft2"].switches,
        rows["ft2"].links,
    )
    assert ft3.degenerate.startswith("no core layer at 8 GPUs: one switch (1 tier)")
    assert "past a pod's 1,024 endpoints" in ft3.degenerate
    # mpft3: a plane of one server is 1 leaf and 1 spine, no core: 8 x 2 switches, 2 tiers
    mpft3 = rows["mpft3"]
    assert (mpft3.tiers, mpft3.switches) == (2, 16)
    assert "one pod of leaves and spines (2 tiers)" in mpft3.degenerate
    assert "1,024 endpoints a plane" in mpft3.degenerate
    # mrft3: 8 rails of one pod each share a core layer, three tiers from one server on
    assert rows["mrft3"].tiers == 3 and rows["mrft3"].degenerate is None
    assert rows["ft2"].degenerate is None


@pytest.mark.parametrize(
    ("family", "one_pod", "two_pods"),
    [
        ("ft3", 1024, 1032),  # 1,024 endpoints; 129 servers of 8 need a second pod
        ("mpft3", 8192, 8200),  # 8 planes of 1,024 endpoints; 1,025 a plane need two
    ],
)
def test_the_core_layer_starts_past_one_pod(family, one_pod, two_pods):
    (row,) = plan(one_pod, families=(family,), check=False)
    assert row.tiers == 2 and row.degenerate is not None
    (row,) = plan(two_pods, families=(family,), check=False)
    assert row.tiers == 3 and row.degenerate is None
