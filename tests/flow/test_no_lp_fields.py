"""A report that solved no exact LP says so: no "HiGHS 0.00 s", no ``lp_variables`` 0 (a
fresh-user trial: the Slim Fly's certified bounds read as if an LP of 0 variables had been
solved in 0.00 s)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.fabric import save
from topo.flow import alltoall_bandwidth
from topo.flow.result import LPStats

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
