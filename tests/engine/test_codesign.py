"""``topo codesign``: its design rebuilt by ``topo build``, priced by ``topo cost`` and timed by
``topo moe`` gives its numbers; the cheapest fabric wins; the same on two workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.engine import Engine, SerialEngine
from topo.engine.codesign import (
    build_args,
    candidate_fabrics,
    codesign,
    ep_sizes,
    plan_codesign,
    run_codesign,
)
from topo.errors import InfeasibleError, TopoError
from topo.moe import default_config, load_config

runner = CliRunner()
REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "moe_configs"
MODEL = REAL / "deepseek-r1_hf_config.json"

# 32 GPUs (4 servers of 8) on 8-port switches: an MPFT is one leaf per plane (8 switches, no
# switch-to-switch cable), an FT2 adds spines: the MPFT is the cheaper for the same TPOT.
SEARCH = ["--gpus", "32", "--switch-ports", "8", "--families", "ft2,mpft"]
SEARCH += ["--oversubscription", "1", "--ep", "16,32", "--node-limit", "0,2"]


def cli(*args: Any) -> Any:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_the_design_reproduces_with_build_cost_and_moe(
    tmp_path: Path, local_engine: Engine
) -> None:
    if not MODEL.exists():
        pytest.skip(f"{MODEL} is not here")
    r = cli(
        "codesign",
        *SEARCH,
        "--tpot-ms",
        100,
        "--model",
        MODEL,
        "--json",
        "--scheduler",
        local_engine.address,
    )
    result = json.loads(r.stdout)
    assert "in this process" not in r.stderr  # a running scheduler gets every point
    d = result["design"]
    assert d["family"] == "mpft" and (d["switches"], d["links"]) == (8, 0)
    # 2 fabrics; EP 16 (2 servers: M=2 cannot bind, skipped) and EP 32 with M = 0, 2
    assert (result["fabrics"], result["evaluated"]) == (2, 6)
    fabric = tmp_path / "design.json"
    cli("build", *d["build_args"], "-o", fabric)
    cost = json.loads(cli("cost", fabric, "--json").stdout)
    moe = json.loads(cli("moe", fabric, *d["moe_args"], "--json").stdout)
    assert cost["cost_usd"] == d["cost_usd"]
    assert (moe["ep"], moe["node_limit"], moe["tpot_ms"]) == (
        d["ep"],
        d["node_limit"],
        d["tpot_ms"],
    )
    assert d["moe_args"][d["moe_args"].index("--model") + 1] == str(MODEL)
    # the runner-up is the FT2, dearer; its own best design meets the target too
    (up,) = result["runners_up"]
    assert up["family"] == "ft2" and up["cost_usd"] > d["cost_usd"] and up["tpot_ms"] <= 100


def test_serial_and_two_workers_agree(local_engine: Engine) -> None:
    config = default_config()
    kw: dict[str, Any] = dict(
        families=["ft2", "mpft"],
        grid={"switch_ports": [8], "oversubscription": [1.0]},
        eps=[16, 32],
        node_limits=[0, 2],
    )
    a = codesign(config, 32, 100.0, SerialEngine(), **kw)
    b = codesign(config, 32, 100.0, local_engine, **kw)
    assert a == b
    # a target at the design's own TPOT keeps it (at most), and fewer designs meet it
    tight = codesign(config, 32, a.design.tpot_ms, SerialEngine(), **kw)
    assert tight.design.tpot_ms <= a.design.tpot_ms and tight.feasible <= a.feasible


def _six_points() -> tuple[Any, Any, Any]:
    """The 6 points of SEARCH's space (test_plan_lays_out_the_points_codesign_times): the
    config, the plan and its result timed serially."""
    config = default_config()
    plan = plan_codesign(
        config, 32, 100.0, families=["ft2", "mpft"],
        grid={"switch_ports": [8], "oversubscription": [1.0]}, eps=[16, 32], node_limits=[0, 2],
    )  # fmt: skip
    return config, plan, run_codesign(plan, config, SerialEngine())


def test_points_run_here_within_the_budget_and_the_rest_on_the_engine(
    local_engine: Engine,
) -> None:
    # the 6 points of SEARCH's space (test_plan_lays_out_the_points_codesign_times)
    config, plan, alone = _six_points()
    started: list[int] = []

    def start() -> Engine:
        started.append(1)
        return local_engine

    # a budget no point reaches: all 6 here, no engine started
    seen: list[int] = []
    assert run_codesign(plan, config, start, in_process_s=1e9, progress=seen.append) == alone
    assert started == [] and seen == [1, 2, 3, 4, 5, 6]
    # no budget: the first point here (the budget is read after each point), 5 on the workers
    seen = []
    assert run_codesign(plan, config, start, in_process_s=0.0, progress=seen.append) == alone
    assert started == [1] and seen == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(("budget", "here"), [(4.0, 6), (2.0, 2)])
def test_points_left_that_would_take_less_than_the_budget_stay_here(
    monkeypatch: pytest.MonkeyPatch, budget: float, here: int
) -> None:
    # a CPU clock that reads 0 before the points and k after the k-th: each point "takes"
    # 1 s. Budget 4 s: after 4 points 4 s are spent, and the 2 left would take 2 s (the mean
    # 1 s each), under 4: all 6 stay here. Budget 2 s: after 2 points the 4 left would take
    # 4 s, not under 2: they go to the engine.
    import topo.engine.codesign as codesign_mod

    config, plan, alone = _six_points()
    ticks = iter(range(100))
    monkeypatch.setattr(codesign_mod.time, "process_time", lambda: float(next(ticks)))
    sent: list[int] = []

    class Counting(SerialEngine):
        def map(self, fn, tasks, *shared, progress=None):  # type: ignore[no-untyped-def]
            sent.append(len(tasks))
            return super().map(fn, tasks, *shared, progress=progress)

    assert run_codesign(plan, config, Counting, in_process_s=budget) == alone
    assert sent == ([6 - here] if here < 6 else [])


def test_a_fabric_without_a_price_is_refused_before_any_point_is_timed() -> None:
    # the default price book lists 400G switches only: an 800G fabric has no price; before,
    # the search timed every point, then failed
    config = default_config()
    plan = plan_codesign(
        config, 32, 100.0, families=["mpft"], grid={"switch_ports": [8], "link_gbps": [800.0]},
        eps=[32], node_limits=[0],
    )  # fmt: skip
    seen: list[int] = []

    def start() -> Engine:
        raise AssertionError("an engine was started")

    with pytest.raises(TopoError, match="has no switch of 800 Gb/s ports"):
        run_codesign(plan, config, start, in_process_s=1e9, progress=seen.append)
    assert seen == []


def test_a_small_search_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # without --scheduler or --cluster, the 6 points (well under IN_PROCESS_S) run here
    _no_engine(monkeypatch)
    r = cli("codesign", *SEARCH, "--tpot-ms", 100, "--json")
    assert json.loads(r.stdout)["evaluated"] == 6
    assert r.stderr.startswith("engine: the 6 points ran in this process (")


def test_no_design_meets_an_impossible_target() -> None:
    with pytest.raises(InfeasibleError, match=r"no design meets tpot_ms 0.001: the fastest is"):
        codesign(
            default_config(),
            32,
            0.001,
            SerialEngine(),
            families=["mpft"],
            grid={"switch_ports": [8]},
            eps=[32],
            node_limits=[0],
        )
    with pytest.raises(TopoError, match="tpot_ms must be > 0"):
        codesign(default_config(), 32, 0.0, SerialEngine())


def test_search_space_by_hand() -> None:
    # DeepSeek-V3: 256 routed experts; whole 8-GPU servers dividing 256, up to 64 GPUs
    assert ep_sizes(default_config(), 64, 8) == [8, 16, 32, 64]
    assert build_args("ft2", {"switch_ports": 64, "oversubscription": 3.0, "gpus": None}) == [
        "ft2",
        "--switch-ports",
        "64",
        "--oversubscription",
        "3",
    ]
    if MODEL.exists():  # DeepSeek-R1's config: the same 256 routed experts
        assert ep_sizes(load_config(MODEL), 32, 8) == [8, 16, 32]


def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import topo.commands.codesign as codesign_cmd

    def no_engine(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Dask cluster was started")

    monkeypatch.setattr(codesign_cmd, "open_engine", no_engine)


@pytest.mark.parametrize(
    "extra, says",
    [
        # 12 GPUs is a server and a half of 8: no EP group of whole servers
        (["--ep", "12"], "--ep 12 does not span whole servers of 8 GPUs"),
        # more ranks than the 32 GPUs
        (["--ep", "64"], "--ep must be from 1 to the fabric's 32 GPUs, got 64"),
        (["--node-limit", "0,-1"], "--node-limit must be 0 (unlimited) or more, got -1"),
        (["--tpot-ms", "0"], "--tpot-ms must be > 0"),
        (["--families", "ft9"], "no family of ft9 builds 32 GPUs"),
        (["--ep", "1x"], "--ep: expected comma-separated numbers"),
        # EP 16 spans 2 servers, EP 32 spans 4: a node limit of 4 binds neither
        (["--ep", "16,32", "--node-limit", "4"], "no point to time: every --node-limit"),
    ],
)
def test_bad_options_are_refused_before_a_cluster_starts(
    extra: list[str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh-user trial: a bad --ep started a Dask cluster, then failed every task.
    _no_engine(monkeypatch)
    args = ["codesign", "--gpus", "32", "--switch-ports", "8", "--tpot-ms", "10", *extra]
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith(f"topo: error: {says}") and len(r.stderr.splitlines()) == 1


def test_plan_lays_out_the_points_codesign_times() -> None:
    # 2 fabrics x EP {16, 32} x M {0, 2}: EP 16 spans 2 servers, so M = 2 cannot bind there
    # and is skipped; EP 32 spans 4: 2 + 2 + ... = 3 points per fabric, 6 in all.
    from topo.engine.codesign import plan_codesign

    plan = plan_codesign(
        default_config(),
        32,
        10.0,
        families=["ft2", "mpft"],
        grid={"switch_ports": [8], "link_gbps": [400.0], "oversubscription": [1.0]},
        eps=[16, 32],
        node_limits=[0, 2],
    )
    assert [f for f, _ in plan.fabrics] == ["ft2", "mpft"] and len(plan.graphs) == 2
    points = {(t.fabric, t.ep, t.node_limit) for t in plan.tasks}
    assert points == {(i, 16, 0) for i in (0, 1)} | {(i, 32, m) for i in (0, 1) for m in (0, 2)}


def test_a_kernel_times_the_designs_as_topo_moe_kernel_does(tmp_path: Path) -> None:
    # the same search timed with DeepEP's normal kernels on 20 SMs: the design's TPOT is the
    # kernel's, as `topo moe --kernel deepep-normal --kernel-sms 20` prints it under "kernel"
    r = cli("codesign", *SEARCH, "--tpot-ms", 1000, "--kernel", "deepep-normal", "--sms", 20,
            "--json")  # fmt: skip
    d = json.loads(r.stdout)["design"]
    assert d["moe_args"][-4:] == ["--kernel", "deepep-normal", "--kernel-sms", "20"]
    fabric = tmp_path / "design.json"
    cli("build", *d["build_args"], "-o", fabric)
    moe = json.loads(cli("moe", fabric, *d["moe_args"], "--json").stdout)
    assert (moe["kernel"]["tpot_ms"], moe["kernel"]["sms"]) == (d["tpot_ms"], 20)
    assert moe["kernel"]["tpot_ms"] != moe["tpot_ms"]  # the kernel's, not the report's


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--kernel-sms", "20"], "--kernel-sms needs --kernel"),
        (["--kernel", "deepep-ll", "--sms", "20"], "the model of deepep-ll has no SM budget"),
        (["--kernel", "deepep-normal", "--sms", "7"], "must be an even number from 2 to 132"),
    ],
)
def test_a_kernel_option_the_model_cannot_take_is_refused(extra: list[str], message: str) -> None:
    r = runner.invoke(app, ["codesign", *SEARCH, "--tpot-ms", "10", *extra])
    assert r.exit_code == 1 and message in r.stderr, r.output


def test_a_family_too_small_for_the_gpus_is_refused_not_fatal() -> None:
    # a two-layer fat tree of 64-port switches holds 64 x 32 = 2,048 endpoints (k^2/2), 3:1
    # at the leaf 64 x 48 = 3,072; the MPFT's planes hold 8 x 2,048 = 16,384
    grid = {"switch_ports": [64], "oversubscription": [1.0, 3.0]}
    ok, refused = candidate_fabrics(4096, ["ft2", "mpft"], grid)
    assert [f for f, _ in ok] == ["mpft", "mpft"]
    assert len(refused) == 2 and all(r.startswith("ft2 ") for r in refused)
    assert "holds at most 2048 endpoints" in refused[0]
    assert "holds at most 3072 endpoints" in refused[1]
    with pytest.raises(
        TopoError, match=r"no family of ft2, mpft builds 100,000 GPUs: ft2 .*; mpft "
    ):
        plan_codesign(default_config(), 100_000, 30.0, families=["ft2", "mpft"], grid=grid)


def test_several_kernels_are_searched_as_each_alone() -> None:
    # --kernel a,b,c is the three searches in one: each kernel's best design is the design of
    # the search with that kernel alone (the same fabric, EP, M, cost and TPOT), and the
    # design is the cheapest of them, ties to the lower TPOT
    kernels = ["deepep-normal", "deepep-ll", "nccl"]
    both = json.loads(cli("codesign", *SEARCH, "--tpot-ms", 1000, "--kernel", ",".join(kernels),
                          "--json").stdout)  # fmt: skip
    alone = {
        k: json.loads(cli("codesign", *SEARCH, "--tpot-ms", 1000, "--kernel", k, "--json").stdout)
        for k in kernels
    }
    assert both["evaluated"] == sum(a["evaluated"] for a in alone.values())
    assert {d["kernel"]: d for d in both["by_kernel"]} == {k: a["design"] for k, a in alone.items()}
    best = min(alone.values(), key=lambda a: (a["design"]["cost_usd"], a["design"]["tpot_ms"]))
    assert both["design"] == best["design"] and both["not_met"] == []


def test_a_kernels_limits_leave_its_points_untimed_and_say_why() -> None:
    # NCCL EP takes at most 64 GPUs: at EP 128 only DeepEP V2 is timed; at EP 32 both are
    args = ["codesign", "--gpus", 128, "--switch-ports", 16, "--families", "mpft",
            "--oversubscription", 1, "--ep", "32,128", "--node-limit", 0, "--tpot-ms", 1000,
            "--kernel", "deepep-v2,nccl-ep-ll", "--json"]  # fmt: skip
    r = json.loads(cli(*args).stdout)
    assert r["evaluated"] == 3
    assert r["not_timed"] == [
        "nccl-ep-ll at EP 128: NCCL EP 0.1.0 supports at most 64 GPUs (8 nodes x 8 GPUs, "
        "contrib/nccl_ep/RELEASE.md)"
    ]
    assert {(d["kernel"], d["ep"]) for d in r["by_kernel"]} <= {
        ("deepep-v2", 32), ("deepep-v2", 128), ("nccl-ep-ll", 32)}  # fmt: skip
    # a target only one kernel meets: the other is named with its fastest TPOT
    fastest = {d["kernel"]: d["tpot_ms"] for d in r["by_kernel"]}
    target = (fastest["deepep-v2"] + fastest["nccl-ep-ll"]) / 2
    assert fastest["deepep-v2"] < target < fastest["nccl-ep-ll"]
    r = json.loads(cli(*args[:-5], "--tpot-ms", target, *args[-3:]).stdout)
    assert [d["kernel"] for d in r["by_kernel"]] == ["deepep-v2"]
    assert r["not_met"] == [f"nccl-ep-ll: the fastest is {fastest['nccl-ep-ll']:.3f} ms"]
    # refused at two EP sizes: one line naming both
    wide = ["codesign", "--gpus", 256, "--switch-ports", 32, "--families", "mpft",
            "--oversubscription", 1, "--ep", "32,128,256", "--node-limit", 0, "--tpot-ms", 1000,
            "--kernel", "deepep-v2,nccl-ep-ll", "--json"]  # fmt: skip
    r = json.loads(cli(*wide).stdout)
    assert r["evaluated"] == 4 and len(r["not_timed"]) == 1
    assert r["not_timed"][0].startswith("nccl-ep-ll at EP 128, 256: NCCL EP 0.1.0 supports at most")


def test_an_sm_count_goes_to_the_kernels_that_take_one(tmp_path: Path) -> None:
    # --sms 20 with deepep-normal and deepep-ll searched: the normal kernels' designs carry it
    # (and topo moe reproduces their TPOT with it), the low-latency ones do not
    r = json.loads(cli("codesign", *SEARCH, "--tpot-ms", 1000, "--kernel",
                       "deepep-normal,deepep-ll", "--sms", 20, "--json").stdout)  # fmt: skip
    d = {x["kernel"]: x for x in r["by_kernel"]}
    assert d["deepep-normal"]["moe_args"][-4:] == ["--kernel", "deepep-normal", "--kernel-sms",
                                                   "20"]  # fmt: skip
    assert d["deepep-ll"]["moe_args"][-2:] == ["--kernel", "deepep-ll"]
    fabric = tmp_path / "design.json"
    cli("build", *d["deepep-normal"]["build_args"], "-o", fabric)
    moe = json.loads(cli("moe", fabric, *d["deepep-normal"]["moe_args"], "--json").stdout)
    assert (moe["kernel"]["tpot_ms"], moe["kernel"]["sms"]) == (d["deepep-normal"]["tpot_ms"], 20)


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("deepep", "--kernel: 'deepep'; give one or a comma list of deepep-normal"),
        (",", "--kernel: nothing given; give one or a comma list"),
        ("deepep-ll,nccl --sms 20", "--kernel-sms: none of deepep-ll, nccl takes an SM count"),
        ("all --sms 7", "must be an even number from 2 to 132"),
    ],
)
def test_a_kernel_list_the_search_cannot_take_is_refused(kernel: str, message: str) -> None:
    first, *rest = kernel.split(" ")
    r = runner.invoke(app, ["codesign", *SEARCH, "--tpot-ms", "10", "--kernel", first, *rest])
    assert r.exit_code == 1 and message in r.stderr and "Traceback" not in r.output, r.output
