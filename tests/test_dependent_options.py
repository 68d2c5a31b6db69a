"""Options whose effect depends on another option (a fresh user's trial): given without it, they
changed nothing and the command said nothing. Each is now refused in one line naming the
option and what it needs; with what it needs it keeps working."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.fabric import save


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(r, *parts: str) -> str:
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("topo: error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ft2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ft2") / "ft2.json"
    save(build("ft2", switch_ports=8), path)  # 32 GPUs, 8 leaves, 4 spines
    return path


# 1. topo bandwidth --seed, --flows-per-pair


def test_the_seed_changes_nothing_without_random_failures_or_ecmp(ft2: Path) -> None:
    """Why the refusal is right: the library, given two seeds, gives the same report."""
    from topo.fabric import load
    from topo.flow.failures.resilience import damaged_bandwidth

    G = load(ft2)
    for routing in ("optimal", "dmodk"):
        a = damaged_bandwidth(G, seed=0, routing=routing).to_dict()
        b = damaged_bandwidth(G, seed=5, routing=routing).to_dict()
        timings = {k for k in a if k.endswith("_seconds")}
        assert "solve_seconds" in timings
        assert {k: v for k, v in a.items() if k not in timings} == {
            k: v for k, v in b.items() if k not in timings
        }


@pytest.mark.parametrize(
    "args",
    [
        ["--seed", "5"],
        ["--seed", "0"],  # the default, given: still nothing to seed
        ["--routing", "dmodk", "--seed", "3"],
        ["--fail", "leaf0--spine0", "--seed", "3"],  # a named failure is not drawn
    ],
)
def test_bandwidth_refuses_a_seed_with_nothing_to_seed(ft2: Path, args: list[str]) -> None:
    line = one_line_error(run("bandwidth", ft2, *args, "--json"), "--seed", "no effect")
    for needed in ("--fail-links", "--fail-switches", "--routing ecmp"):
        assert needed in line


def test_bandwidth_keeps_the_seed_where_it_draws(ft2: Path) -> None:
    for args in (["--fail-links", "1"], ["--fail-switches", "1"], ["--routing", "ecmp"]):
        r = run("bandwidth", ft2, *args, "--seed", "3", "--json")
        assert r.exit_code == 0, (args, r.output)
    # and with ECMP the seed does draw: two seeds, two hashings of 4 flows per pair, two rates
    rates = [
        json.loads(
            run(
                "bandwidth", ft2, "--routing", "ecmp", "--flows-per-pair", 4, "--seed", s, "--json"
            ).stdout
        )["pair_rate_GBps"]
        for s in (1, 2)
    ]
    assert rates[0] != rates[1]


@pytest.mark.parametrize("routing", ["optimal", "lft"])
def test_flows_per_pair_needs_a_hashing_router(ft2: Path, routing: str) -> None:
    args = ["bandwidth", ft2, "--flows-per-pair", "4"]
    if routing == "lft":
        args += ["--routing", "lft"]
    one_line_error(run(*args), "--flows-per-pair", "ecmp or dmodk", f"not {routing}")


def test_resilience_refuses_flows_per_pair_with_the_optimum(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1, "--flows-per-pair", 2]
    one_line_error(run(*args), "--flows-per-pair", "not optimal")
    r = run(*args, "--routing", "ecmp", "--json")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "routing, args, named",
    [
        ("ecmp", ["--time-limit", "5"], "--time-limit applies"),
        ("dmodk", ["--method", "general", "--max-variables", "10"], "--method, --max-variables"),
        ("lft", ["--max-variables", "10"], "--max-variables applies"),
    ],
)
def test_the_lp_options_need_the_optimum(ft2: Path, routing: str, args, named: str) -> None:
    line = one_line_error(run("bandwidth", ft2, "--routing", routing, *args), named)
    assert "--routing optimal (the LP)" in line and f"--routing {routing} rates" in line


def test_as_routed_rates_solve_no_lp(ft2: Path) -> None:
    """Why: the as-routed report is the same under any LP limit (the library ignores them)."""
    from topo.fabric import load
    from topo.flow.failures.resilience import damaged_bandwidth

    G = load(ft2)
    a = damaged_bandwidth(G, routing="dmodk").to_dict()
    b = damaged_bandwidth(G, routing="dmodk", max_variables=1, time_limit_s=0.1).to_dict()
    a.pop("solve_seconds"), b.pop("solve_seconds")
    assert a == b
    # with the optimum the same limit binds: the full LP has more than one variable
    from topo.errors import LPTooLarge

    with pytest.raises(LPTooLarge):
        damaged_bandwidth(G, method="general", max_variables=1)


def test_resilience_refuses_the_lp_options_as_routed(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1, "--routing", "ecmp"]
    one_line_error(run(*args, "--max-variables", 100), "--max-variables applies")
    assert run(*args).exit_code == 0


def test_show_applies_to_the_table(ft2: Path) -> None:
    one_line_error(run("bandwidth", ft2, "--json", "--show", 3), "--show applies to the table")
    table = run("bandwidth", ft2, "--show", 3).stdout
    assert "bottleneck links (first 3 of" in table


# 2. topo cost FABRIC with the --compare options


@pytest.fixture(scope="module")
def dragonfly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("df") / "df.json"
    save(build("dragonfly", switch_ports=8), path)
    return path


@pytest.mark.parametrize(
    "args, named",
    [
        (["--switch-ports", "32"], "--switch-ports applies"),
        (["--switch-ports", "64"], "--switch-ports applies"),  # the default, given
        (["--link-gbps", "800", "--switch-ports", "32"], "--switch-ports, --link-gbps apply"),
        (["--nics-per-node", "4"], "--nics-per-node applies"),
        (["--dragonfly-groups", "5"], "--dragonfly-groups applies"),
    ],
)
def test_cost_of_a_fabric_refuses_the_compare_options(
    dragonfly: Path, args: list[str], named: str
) -> None:
    r = run("cost", dragonfly, *args, "--json")
    one_line_error(r, named, "to --compare", f"{dragonfly} counts that fabric's own switches")
    assert r.stdout == ""


def test_the_fabric_cost_does_not_depend_on_the_compare_options(dragonfly: Path) -> None:
    """Why: a fabric's bill of materials is the same whatever --switch-ports says (the
    library takes no switch). a = 4, p = h = 2, 9 groups: 36 routers of 8 ports."""
    from topo.cost import bill_of_materials, load_prices
    from topo.fabric import load

    report = bill_of_materials(load(dragonfly), load_prices())
    d = run("cost", dragonfly, "--json")
    assert d.exit_code == 0 and json.loads(d.stdout) == report.to_dict()
    assert (report.switches, report.links) == (36, 90)


def test_compare_refuses_options_no_family_asked_reads() -> None:
    one_line_error(
        run("cost", "--compare", "ft2,mpft", "--dragonfly-groups", 5),
        "--dragonfly-groups applies to the dragonfly family",
    )
    one_line_error(
        run("cost", "--compare", "ft2,ft3", "--nics-per-node", 4),
        "--nics-per-node applies to the mpft family",
    )
    # where a family reads them they work: 4 planes of a 64-port two-layer fat tree
    r = run("cost", "--compare", "ft2,mpft", "--nics-per-node", 4, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[1]["endpoints"] == 4 * 64 * 64 // 2
    r = run("cost", "--compare", "dragonfly", "--dragonfly-groups", 5, "--json")
    assert r.exit_code == 0, r.output


# 3. topo plan: a request no family asked can meet; --max-gpus with plan options


def test_plan_that_no_family_meets_is_one_line_naming_the_largest_ceiling() -> None:
    r = run("plan", "--gpus", 10_000_000_000, "--no-check")
    line = one_line_error(r, "--gpus 10,000,000,000", "no family of")
    assert r.stdout == ""
    # The largest ceiling of 64-port switches: the three-tier MPFT, 8 planes of a three-tier
    # fat tree of k^3/4 endpoints (Al-Fares et al., SIGCOMM 2008), one NIC per plane per
    # server of 8 GPUs.
    assert f"the largest is mpft3, at most {8 * 64**3 // 4:,} GPUs" in line
    assert "topo plan --max-gpus" in line


def test_plan_of_one_family_that_cannot_meet_it_names_its_ceiling() -> None:
    # a two-layer fat tree of 64-port switches holds k^2/2 = 2,048 endpoints, one NIC per GPU
    # (8 GPUs and 8 NICs per server)
    line = one_line_error(
        run("plan", "--gpus", 3000, "--families", "ft2", "--json"), "--gpus 3,000"
    )
    assert f"ft2 connects at most {64 * 64 // 2:,} GPUs" in line


def test_plan_with_some_family_feasible_still_lists_the_others() -> None:
    r = run("plan", "--gpus", 3000, "--families", "ft2,mpft", "--no-check", "--json")
    assert r.exit_code == 0, r.output
    rows = {x["family"]: x for x in json.loads(r.stdout)}
    assert rows["mpft"]["feasible"] and not rows["ft2"]["feasible"]


def test_max_gpus_refuses_the_options_of_a_plan() -> None:
    one_line_error(run("plan", "--max-gpus", "--gpus", 5), "--gpus N or --max-gpus, not both")
    one_line_error(run("plan", "--max-gpus", "--no-check"), "--check/--no-check applies to")
    assert run("plan", "--max-gpus", "--families", "ft2").exit_code == 0


# 4. topo plan --gpus N rounded up to whole servers, said


@pytest.mark.parametrize("gpus, per_node", [(16385, 8), (10, 4)])
def test_plan_says_it_rounded_up_to_whole_servers(gpus: int, per_node: int) -> None:
    servers = -(-gpus // per_node)
    args = ["plan", "--gpus", gpus, "--gpus-per-node", per_node, "--nics-per-node", per_node]
    args += ["--families", "ft3", "--no-check"]
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["gpus"] == servers * per_node and row["gpus_requested"] == gpus
    r = run(*args)
    assert r.exit_code == 0, r.output
    note = (
        f"note: --gpus {gpus:,} rounded up to {servers * per_node:,} GPUs: {servers:,} whole "
        f"servers of {per_node} GPUs"
    )
    assert note in r.stdout


def test_plan_of_whole_servers_has_no_note_and_keeps_its_keys() -> None:
    r = run("plan", "--gpus", 16384, "--families", "ft3,mpft", "--no-check")
    assert r.exit_code == 0 and "rounded up" not in r.stdout
    from topo.cost import plan

    rows = json.loads(run("plan", "--gpus", 16384, "--families", "ft3,mpft", "--json").stdout)
    for x, lib in zip(rows, plan(16384, families=("ft3", "mpft"), check=False), strict=True):
        keys = list(lib.to_dict())  # the library's keys, in order, and gpus_requested after gpus
        at = keys.index("gpus") + 1
        assert list(x) == [*keys[:at], "gpus_requested", *keys[at:]]
        assert x["gpus"] == x["gpus_requested"] == 16384


# 5. topo collective: a log's own sizes; --calibrate's whole log; --arch or --node

LOG = ("nccl_tests_logs", "xxrjun_cluster01_singlenode", "nccl_N1_G8_cnode3-002.log")


def log_sizes(text: str, op: str) -> list[int]:
    """The sizes (B) of one test of an nccl-tests log: the first column of its rows."""
    block = text.split(f"# Collective test starting: {op}_perf")[1].split("concluded")[0]
    return [int(m) for m in re.findall(r"^\s+(\d+)\s+\d+\s+\w+", block, re.M)]


def test_compare_predicts_the_logs_sizes_so_refuses_the_sweep_options() -> None:
    from tests.formats._real import real_file

    log = real_file(*LOG)
    r = run("collective", "--compare", log, "--op", "all_reduce", "--json")
    assert r.exit_code == 0, r.output
    sizes = log_sizes(log.read_text(), "all_reduce")
    assert sizes[0] == 32 << 20 and len(sizes) == 10  # 32 MiB to 16 GiB, double
    assert [x["size_bytes"] for x in json.loads(r.stdout)[0]["rows"]] == sizes
    line = one_line_error(
        run("collective", "--compare", log, "--min-bytes", "1G", "--datatype", "half"),
        "--min-bytes, --datatype apply to the predicted table",
    )
    assert "the log's own sizes and data type" in line


def test_calibrate_refuses_the_options_of_one_test(tmp_path: Path) -> None:
    from tests.formats._real import real_file

    log = real_file(*LOG)
    for args, named in (
        (["--op", "all_reduce"], "--op applies"),
        (["--gpus", "8", "--max-bytes", "1G"], "--gpus, --max-bytes apply"),
        (["--html", tmp_path / "x.html"], "--html applies"),
    ):
        line = one_line_error(run("collective", "--calibrate", log, *args), named)
        assert "--calibrate fits every test of its log" in line
    assert not (tmp_path / "x.html").exists()


def test_arch_and_node_are_one_choice(ft2: Path) -> None:
    one_line_error(
        run("collective", ft2, "--arch", "hopper", "--node", "b200"), "give --arch or --node"
    )
    # each alone chooses: b200 is a Blackwell, so its constants are --arch blackwell's
    by_node = json.loads(run("collective", ft2, "--node", "b200", "--json").stdout)
    by_arch = json.loads(run("collective", ft2, "--arch", "blackwell", "--json").stdout)
    by_hopper = json.loads(run("collective", ft2, "--arch", "hopper", "--json").stdout)
    assert by_node["rows"] == by_arch["rows"] != by_hopper["rows"]


# 6. the engine options (resilience, sweep, codesign): refused before any cluster starts

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "args, named, needs",
    [
        (["--slurm-queue", "gpu"], "--slurm-queue applies", "--cluster slurm"),
        (
            ["--cluster", "local", "--slurm-walltime", "00:10:00"],
            "--slurm-walltime",
            "--cluster slurm",
        ),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers applies", "own"),
        (["--scheduler", "tcp://127.0.0.1:1", "--memory-limit", "2GiB"], "--memory-limit", ""),
    ],
)
def test_sweep_and_codesign_refuse_engine_options_they_ignore(
    tmp_path: Path, args: list[str], named: str, needs: str
) -> None:
    spec = ROOT / "examples" / "sweep-fabrics.toml"
    sweep = ["sweep", spec, "-o", tmp_path / "out.csv", *args]
    codesign = ["codesign", "--gpus", 64, "--tpot-ms", 10, *args]
    for cmd in (sweep, codesign):
        r = run(*cmd)
        line = one_line_error(r, named)
        assert "engine:" not in r.stderr  # nothing started
        if needs == "own":
            assert "tcp://127.0.0.1:1 are already started" in line
        elif needs:
            assert f"applies to {needs}" in line
    assert not (tmp_path / "out.csv").exists()


def test_resilience_refuses_a_memory_limit_without_workers(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1]
    line = one_line_error(run(*args, "--memory-limit", "2GiB"), "--memory-limit applies")
    assert "the trials run in this process" in line
    one_line_error(run(*args, "--scheduler", "tcp://127.0.0.1:1", "--workers", 1), "--workers")


# 7. topo moe --shared without a shared expert, --fp8-scales without FP8


@pytest.fixture(scope="module")
def mpft64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mpft64") / "mpft64.json"
    save(build("mpft", switch_ports=16, gpus=64), path)
    return path


def test_shared_needs_a_model_with_a_shared_expert(mpft64: Path) -> None:
    from tests.formats._real import real_file

    mixtral = real_file("moe_configs", "mixtral-8x7b-v0.1_hf_config.json")
    assert "shared" not in mixtral.read_text()  # Mixtral 8x7B: 8 routed experts, no shared one
    line = one_line_error(run("moe", mpft64, "--model", mixtral, "--shared", "remote"), "--shared")
    assert "the model has none" in line
    r = run("moe", mpft64, "--model", mixtral, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["shared"] == "local"
    assert run("moe", mpft64, "--shared", "local", "--json").exit_code == 0  # DeepSeek-V3: 1


def test_fp8_scales_need_an_fp8_phase(mpft64: Path) -> None:
    from topo.moe.timing import copy_bytes

    # Why: a bf16 copy of DeepSeek-V3's 7,168 values is 2 B each, scales or not
    assert copy_bytes(7168, "bf16", fp8_scales=True) == copy_bytes(7168, "bf16", fp8_scales=False)
    assert copy_bytes(7168, "bf16") == 2 * 7168
    args = ["moe", mpft64, "--dispatch-dtype", "bf16", "--combine-dtype", "fp16"]
    line = one_line_error(run(*args, "--no-fp8-scales"), "--fp8-scales/--no-fp8-scales")
    assert "they are bf16 and fp16" in line
    r = run("moe", mpft64, "--no-fp8-scales", "--json")  # FP8 dispatch: 7,168 B, no scales
    assert r.exit_code == 0 and json.loads(r.stdout)["dispatch_bytes_per_copy"] == 7168


@pytest.mark.parametrize("kernel", ["nccl", "deepep-ll"])
def test_kernel_sms_applies_to_deepep_normal(mpft64: Path, kernel: str) -> None:
    from topo.fabric import load
    from topo.moe import default_config, moe_report
    from topo.moe.kernels import kernel_report

    # Why: the model of these kernels does not read the SM budget
    report = moe_report(load(mpft64), default_config())
    assert kernel_report(report, kernel, 2) == kernel_report(report, kernel, 24)
    assert kernel_report(report, "deepep-normal", 2) != kernel_report(report, "deepep-normal", 24)
    line = one_line_error(
        run("moe", mpft64, "--kernel", kernel, "--kernel-sms", 20), "--kernel-sms applies"
    )
    assert f"--kernel {kernel} has no SM budget" in line
    assert run("moe", mpft64, "--kernel", "deepep-normal", "--kernel-sms", 20).exit_code == 0
