"""``topo plan``: each design's all-to-all bandwidth (topo.cost.plan_bandwidth) and
``--rank-by``.

24 single-GPU servers, 8-port 400G switches, up to 3:1 at the leaf. The cheapest FT2 has 4
leaves of 6 servers and 2 uplinks each: the leaf cut bounds every GPU pair by
2 x 50 / (6 x 18) GB/s (Leighton-Rao: cut capacity over the pairs it separates), so the
all-to-all busbw (pair rate x 23) is 100 x 23 / 108 = 21.30 GB/s. The FT3 is non-blocking: each
GPU's one 50 GB/s NIC binds, 50 / 23 per pair, busbw 50 GB/s.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.cost import plan
from topo.cost.plan_bandwidth import rank_plan, with_bandwidth
from topo.errors import TopoError
from topo.spec import ServerSpec, SwitchSpec

FT2_BUSBW = 2 * 50 * 23 / (6 * 18)
ARGS = ["plan", "--gpus", "24", "--switch-ports", "8", "--gpus-per-node", "1"]
ARGS += ["--nics-per-node", "1", "--max-oversubscription", "3", "--families", "ft2,ft3"]
runner = CliRunner()


@pytest.fixture(scope="module")
def rows() -> list[Any]:
    designs = plan(
        24, SwitchSpec(8), ServerSpec(1, 1), max_oversubscription=3, families=("ft2", "ft3")
    )
    return with_bandwidth(designs)


def test_each_design_gets_its_exact_busbw(rows: list[Any]) -> None:
    got = {r.family: r for r in rows}
    assert got["ft2"].alltoall_busbw_GBps == pytest.approx(FT2_BUSBW, rel=1e-6)
    assert got["ft3"].alltoall_busbw_GBps == pytest.approx(50.0, rel=1e-6)
    for r in rows:
        assert r.alltoall_method in ("reduced", "general", "certified")
        assert r.alltoall_lower_busbw_GBps is None and r.alltoall_upper_busbw_GBps is None
        assert r.cost_per_GBps_usd == pytest.approx(r.cost_usd / (24 * r.alltoall_busbw_GBps))


def test_rank_by_cost_bandwidth_and_cost_per_bandwidth(rows: list[Any]) -> None:
    assert [r.family for r in rank_plan(rows, "cost")] == ["ft2", "ft3"]  # the plan's order
    assert [r.family for r in rank_plan(rows, "bandwidth")] == ["ft3", "ft2"]
    ft2, ft3 = (next(r for r in rows if r.family == f) for f in ("ft2", "ft3"))
    cheaper = "ft2" if ft2.cost_per_GBps_usd < ft3.cost_per_GBps_usd else "ft3"
    assert rank_plan(rows, "cost-per-bandwidth")[0].family == cheaper
    with pytest.raises(TopoError, match="rank_by must be one of cost, bandwidth"):
        rank_plan(rows, "speed")


def test_a_bound_is_never_ranked_as_a_value(rows: list[Any]) -> None:
    # A design known only by its bounds (and one not solved) ranks after every exact one,
    # however high its upper bound.
    bounded = replace(
        rows[0],
        family="slimfly",
        alltoall_busbw_GBps=None,
        cost_per_GBps_usd=None,
        alltoall_method="bounds",
        alltoall_lower_busbw_GBps=1.0,
        alltoall_upper_busbw_GBps=1e6,
        deployed_busbw_GBps=None,
        deployed_cost_per_GBps_usd=None,
    )
    for rating in ("deployed", "ideal"):
        ranked = rank_plan([bounded, *rows], "bandwidth", rating)
        assert [r.family for r in ranked][-1] == "slimfly" and ranked[-1].rated_by is None
        ranked = rank_plan([bounded, *rows], "cost-per-bandwidth", rating)
        assert [r.family for r in ranked][-1] == "slimfly"
    assert [r.family for r in rank_plan([bounded, *rows], "bandwidth", "ideal")] == [
        "ft3",
        "ft2",
        "slimfly",
    ]


def test_each_fat_tree_is_also_rated_under_ecmp(rows: list[Any]) -> None:
    # hashing can only lose against the max concurrent flow, never gain
    for r in rows:
        assert r.deployed_routing == "ecmp" and set(r.routed_busbw_GBps) == {"ecmp"}
        assert 0 < r.deployed_busbw_GBps <= r.alltoall_busbw_GBps * (1 + 1e-9)
        assert r.deployed_cost_per_GBps_usd == pytest.approx(
            r.cost_usd / (24 * r.deployed_busbw_GBps)
        )
        assert r.alltoall_gpus == 24


def test_ecmp_on_one_switch_is_the_nic_rate() -> None:
    # 8 single-GPU servers on one 8-port switch: one path per pair, so hashing has no choice;
    # each 50 GB/s NIC binds: busbw 50 GB/s
    (row,) = with_bandwidth(plan(8, SwitchSpec(8), ServerSpec(1, 1), families=("ft2",)))
    assert row.routed_busbw_GBps["ecmp"] == pytest.approx(50.0)


def test_rank_uses_the_rating_it_names(rows: list[Any]) -> None:
    # a design best under the ideal rating but worst as deployed ranks by the rating asked
    ft2, ft3 = (next(r for r in rows if r.family == f) for f in ("ft2", "ft3"))
    slow = replace(ft3, family="slow", deployed_busbw_GBps=1.0, deployed_cost_per_GBps_usd=1e9)
    ideal = rank_plan([ft2, slow], "bandwidth", "ideal")
    deployed = rank_plan([ft2, slow], "bandwidth", "deployed")
    assert [r.family for r in ideal] == ["slow", "ft2"]
    assert [r.rated_by for r in ideal] == ["ideal", "ideal"]
    assert [r.family for r in deployed] == ["ft2", "slow"]
    assert [r.rated_by for r in deployed] == ["ecmp", "ecmp"]
    with pytest.raises(TopoError, match="rating must be one of deployed, ideal"):
        rank_plan(rows, "bandwidth", "best")


def test_slimfly_rated_in_closed_form_on_its_filled_design() -> None:
    # 100 single-GPU servers, 10-port switches: the Slim Fly of q = 5 (Hoffman-Singleton, 50
    # routers, k' = 7) with p = 2 a router, full. By hand: the NIC binds the ideal and minimal
    # routing (C/99 a pair against C/(2^2 x 13) on the busiest arc: 91 hops over 7 arcs), so
    # busbw 50 GB/s; Valiant loads an arc 2 x 49/50 x 13: busbw 50 x 99 / (4 x 25.48)
    rows = plan(100, SwitchSpec(10), ServerSpec(1, 1), families=("slimfly",))
    (row,) = with_bandwidth(rows)
    assert (row.design["q"], row.design["endpoints_per_router"]) == (5, 2)
    assert row.alltoall_method == "direct" and row.alltoall_gpus == 100
    assert row.alltoall_busbw_GBps == pytest.approx(50.0)
    assert row.routed_busbw_GBps["minimal"] == pytest.approx(50.0)
    assert row.routed_busbw_GBps["valiant"] == pytest.approx(50 * 99 / (4 * 13 * 2 * 49 / 50))
    assert row.deployed_routing == "ugal" and row.deployed_busbw_GBps == pytest.approx(50.0)


def test_cli_table_and_json() -> None:
    r = runner.invoke(app, [*ARGS, "--rank-by", "bandwidth"])
    assert r.exit_code == 0, r.output
    table = [line for line in r.stdout.splitlines() if line.startswith("│")]
    assert "ft3" in table[0] and "50.00" in table[0]
    assert "ft2" in table[1] and f"{FT2_BUSBW:.2f}" in table[1]
    assert "ranked by bandwidth under the deployed rating" in r.stdout
    assert "rated by" in r.stdout and "ecmp" in table[0]
    r = runner.invoke(app, [*ARGS, "--rank-by", "bandwidth", "--rate-with", "ideal"])
    table = [line for line in r.stdout.splitlines() if line.startswith("│")]
    assert table[0].rstrip("│ ").endswith("ideal")
    d = json.loads(runner.invoke(app, [*ARGS, "--json"]).stdout)
    assert [x["family"] for x in d] == ["ft2", "ft3"]  # by cost, as before
    assert d[0]["alltoall_busbw_GBps"] == pytest.approx(FT2_BUSBW, rel=1e-6)
    assert d[1]["alltoall_busbw_GBps"] == pytest.approx(50.0, rel=1e-6)


def test_no_check_solves_nothing_and_refuses_a_bandwidth_rank() -> None:
    d = json.loads(runner.invoke(app, [*ARGS, "--json", "--no-check"]).stdout)
    assert all(x["alltoall_busbw_GBps"] is None for x in d)
    assert all(x["alltoall_note"] == "not solved: --no-check builds no design" for x in d)
    for extra, says in [
        (["--no-check", "--rank-by", "bandwidth"], "--rank-by bandwidth needs each design built"),
        (["--no-check", "--bandwidth-time-limit", "5"], "--bandwidth-time-limit applies to"),
        (["--no-check", "--rate-with", "ideal"], "--rate-with applies to"),
    ]:
        r = runner.invoke(app, [*ARGS, *extra])
        assert r.exit_code == 1 and r.stderr.startswith(f"topo: error: {says}"), r.output
    r = runner.invoke(app, ["plan", "--max-gpus", "--rank-by", "cost-per-bandwidth"])
    assert r.exit_code == 1 and "--rank-by applies to a plan for --gpus N" in r.stderr
    r = runner.invoke(app, ["plan", "--max-gpus", "--rate-with", "ideal"])
    assert r.exit_code == 1 and "--rate-with applies to a plan for --gpus N" in r.stderr


def test_no_bandwidth_keeps_the_check_and_solves_nothing() -> None:
    # The solve is the slow part of a plan (31 s against 1.2 s for 2,048 GPUs): --no-bandwidth
    # builds and checks each design as before, with no all-to-all.
    d = json.loads(runner.invoke(app, [*ARGS, "--json", "--no-bandwidth"]).stdout)
    full = json.loads(runner.invoke(app, [*ARGS, "--json"]).stdout)
    assert [x["family"] for x in d] == [x["family"] for x in full]
    assert [x["checked"] for x in d] == [x["checked"] for x in full] == [True, True]
    assert [x["cost_usd"] for x in d] == [x["cost_usd"] for x in full]
    assert all(x["alltoall_busbw_GBps"] is None for x in d)
    assert all(x["alltoall_note"] == "not solved: --no-bandwidth" for x in d)
    for extra, says in [
        (["--rank-by", "cost-per-bandwidth"], "--rank-by cost-per-bandwidth needs each design's"),
        (["--bandwidth-time-limit", "5"], "--bandwidth-time-limit applies to the all-to-all"),
    ]:
        r = runner.invoke(app, [*ARGS, "--no-bandwidth", *extra])
        assert r.exit_code == 1 and r.stderr.startswith(f"topo: error: {says}"), r.output


# -- the routed column is filled for HPN, or says why it is empty -----------------------------


def test_hpn_is_rated_under_ecmp_and_an_unrated_design_says_why() -> None:
    # 1,024 GPUs of 8 on 64-port switches. HPN's ToR takes its segment's 64 hosts' 200G NIC
    # ports two to a 400G port plus 30 uplinks: 94 cables worth 62 ports. ECMP refused it
    # (one cable a port: 94 > 64) and the routed column was "-" without a word. Both ideal
    # and routed reach the NIC cut: each GPU's 50 GB/s NIC to the 1,016 GPUs of the other
    # servers, busbw 50 x 1,023 / 1,016; at that rate a ToR's uplinks carry 64 x 25 x 64/127
    # = 806 of their 1,500 GB/s (the hosts of the other segment: 64 of the 127 others).
    designs = plan(1024, families=("hpn", "slimfly"), check=True)
    rows = {r.family: r for r in with_bandwidth(designs)}
    nic_cut = 50 * 1023 / 1016
    hpn = rows["hpn"]
    assert hpn.alltoall_busbw_GBps == pytest.approx(nic_cut, rel=1e-9)
    assert hpn.routed_busbw_GBps["ecmp"] == pytest.approx(nic_cut, rel=1e-9)
    assert hpn.deployed_routing == "ecmp" and hpn.routed_note is None
    # Slim Fly: 7 endpoints a router is not whole 8-NIC servers, which the closed form of
    # minimal, Valiant and UGAL needs: no routed rating, and the row says why.
    sf = rows["slimfly"]
    assert sf.routed_busbw_GBps == {} and sf.deployed_busbw_GBps is None
    p = sf.design["endpoints_per_router"]
    assert p % 8 != 0
    assert sf.routed_note.startswith("minimal, Valiant and UGAL not rated: ")
    assert f"endpoints_per_router {p} is not a multiple of 8 NICs per server" in sf.routed_note


def test_cli_prints_why_a_routed_cell_is_empty() -> None:
    args = ["plan", "--gpus", "1024", "--families", "hpn,slimfly"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    hpn = next(ln for ln in r.stdout.splitlines() if "│ hpn " in ln)
    assert f"{50 * 1023 / 1016:.2f} ecmp" in hpn
    (note,) = [ln for ln in r.stdout.splitlines() if "routed busbw -:" in ln]
    assert note.startswith("  slimfly: routed busbw -: minimal, Valiant and UGAL not rated: ")
    d = {x["family"]: x for x in json.loads(runner.invoke(app, [*args, "--json"]).stdout)}
    assert d["hpn"]["routed_note"] is None and d["slimfly"]["routed_note"] in note
