"""BandwidthResult: rates in B/s inside, GB/s in to_dict, bounds and failures as typed fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.fabric import save
from topo.flow import alltoall_bandwidth, damaged_bandwidth
from topo.flow.result import (
    BandwidthResult,
    BottleneckLink,
    Bounds,
    FailureSet,
    LPStats,
    link_dicts,
)


def result(**kw) -> BandwidthResult:
    base = dict(
        fabric="f",
        family="ft2",
        terminal="gpu",
        demand="alltoall",
        uniform=True,
        gpus=4,
        nodes=2,
        theta=2e9,
        total_bytes=12.0,
        pair_rate_Bps=2e9,
        internode_per_gpu_Bps=4e9,
        internode_per_nic_Bps=25e9,
        nic_line_rate_Bps=50e9,
        intranode_per_gpu_Bps=2e9,
        bottleneck_links=(BottleneckLink("a", "b", "nic->leaf", 50e9, 50e9),),
        method="reduced",
        exact=True,
        reductions=("x",),
        planes=1,
        lp=LPStats(3, 2, 0.0, 0.0),
        solve_seconds=0.0,
    )
    base.update(kw)
    return BandwidthResult(**base)


def test_link_dicts_are_each_links_to_dict() -> None:
    links = [
        BottleneckLink("leaf0", "node0/nic0", "leaf->nic", 50e9, 12.5e9, 1),
        BottleneckLink("leaf1", "spine0", "leaf->spine", 100e9, 100e9, 2),
    ]
    assert link_dicts(links) == [
        {"source": "leaf0", "target": "node0/nic0", "tier": "leaf->nic",
         "capacity_GBps": 50.0, "load_GBps": 12.5, "cables": 1},
        {"source": "leaf1", "target": "spine0", "tier": "leaf->spine",
         "capacity_GBps": 100.0, "load_GBps": 100.0, "cables": 2},
    ]  # fmt: skip
    assert link_dicts(links) == [b.to_dict() for b in links]
    assert link_dicts([]) == []


def test_derived_rates_and_gb_per_s_at_the_edge() -> None:
    # n = 4 terminals at lambda = 2 GB/s: algbw 4 lambda = 8, busbw 3 lambda = 6 GB/s.
    r = result()
    assert r.alltoall_algbw_Bps == 8e9 and r.alltoall_busbw_Bps == 6e9
    assert r.nic_utilization == 0.5 and r.time_s == 0.5e-9
    d = r.to_dict()
    assert d["pair_rate_GBps"] == 2.0 and d["alltoall_busbw_GBps"] == 6.0
    assert d["bottleneck_tiers"] == {"nic->leaf": 1}
    assert d["bottleneck_links"][0]["capacity_GBps"] == 50.0
    assert d["routing"] == "optimal" and "lower_bound_busbw_GBps" not in d


def test_bounds_and_failures_are_serialised_in_gb_per_s() -> None:
    r = result(
        bounds=Bounds(lower_Bps=1e9, upper_Bps=4e9, lower_from="lo", upper_from="hi"),
        failures=FailureSet(
            links=(("a", "b"),), capacity_lost_Bps=50e9, disconnected=(3,), disconnected_gpus=2
        ),
    )
    d = r.to_dict()
    assert d["lower_bound_busbw_GBps"] == 3.0 and d["upper_bound_busbw_GBps"] == 12.0
    assert d["gap"] == pytest.approx(0.75)
    assert d["failed_links"] == ["a--b"] and d["capacity_lost_GBps"] == 50.0
    assert d["disconnected"] == ["3"] and d["disconnected_gpus"] == 2
    assert list(d)[-1] == "routing"


def test_intact_bandwidth_does_not_copy_the_fabric() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    r = damaged_bandwidth(G)
    assert r.graph is G and r.failures.empty and r.report.failures == FailureSet()
    assert r.to_dict() == {
        **alltoall_bandwidth(G).to_dict(),
        **FailureSet().to_dict(),
        "routing": "optimal",
        "solve_seconds": r.to_dict()["solve_seconds"],
        "lp_build_seconds": r.to_dict()["lp_build_seconds"],
        "lp_solve_seconds": r.to_dict()["lp_solve_seconds"],
    }


def test_a_rate_known_only_by_bounds_is_null_in_json() -> None:
    # exact false with bounds 1..4 GB/s per pair: every key that derives from the rate is null
    # (a bound is never put where a value goes); the bounds carry the numbers.
    r = result(
        exact=False,
        method="bounds",
        bounds=Bounds(lower_Bps=1e9, upper_Bps=4e9, lower_from="lo", upper_from="hi"),
    )
    d = r.to_dict()
    for k in ("pair_rate_GBps", "alltoall_algbw_GBps", "alltoall_busbw_GBps", "nic_utilization"):
        assert d[k] is None, k
    assert d["internode_per_nic_all_ports_GBps"] is None  # a rate, so unknown too
    assert d["lower_bound_busbw_GBps"] == 3.0 and d["upper_bound_busbw_GBps"] == 12.0
    # bounds that meet (certified): the value is known and stays
    met = result(
        exact=True,
        method="certified",
        bounds=Bounds(lower_Bps=2e9, upper_Bps=2e9, lower_from="lo", upper_from="hi"),
    )
    assert met.to_dict()["alltoall_busbw_GBps"] == 6.0


# -------------------------------------------------------------------------------------------------
# A report that solved no exact LP says so: no "HiGHS 0.00 s", no ``lp_variables`` 0 (a fresh-user
# trial: the Slim Fly's certified bounds read as if an LP of 0 variables had been solved in 0.00 s).


LP_KEYS = ("lp_variables", "lp_constraints", "lp_build_seconds", "lp_solve_seconds")


def test_bounds_leave_the_lp_fields_empty(tmp_path: Path) -> None:
    G = build("slimfly", q=5)  # 50 routers, 25 distinct server attachments: 10,050 variables
    r = alltoall_bandwidth(G, max_variables=1000)
    assert r.method == "bounds" and not r.lp.solved
    d = r.to_dict()
    assert all(k in d and d[k] is None for k in LP_KEYS)
    assert d["lower_bound_busbw_GBps"] <= d["upper_bound_busbw_GBps"]
    path = tmp_path / "sf.json"
    save(G, path)
    out = CliRunner().invoke(app, ["bandwidth", str(path), "--max-variables", "1000"]).stdout
    (line,) = [x for x in out.splitlines() if "solve time" in x]
    assert "(no exact LP solved)" in line and "HiGHS" not in line


def test_an_exact_lp_keeps_its_size() -> None:
    r = alltoall_bandwidth(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    assert r.method == "reduced" and r.lp.solved
    d = r.to_dict()
    assert d["lp_variables"] == r.lp.variables > 0 and d["lp_solve_seconds"] >= 0.0
    assert LPStats().to_dict() == dict.fromkeys(LP_KEYS)
