"""NCCL's choice, shown: every candidate of a row (``candidates``), ``--why``, and the tuner
restricted as NCCL_ALGO / NCCL_PROTO restrict it (``--algo``, ``--proto``).

The fabric is the ten-node H100 example (examples/h100-10node.toml), of which the first two
servers run the collective (16 GPUs, 2 nodes x 8). Expected times are worked here from the
formulas of docs/collective.md ("The model") and the constants of topo/data/nccl-2.29.toml
(NCCL 2.29 ``src/graph/tuning.cc``), independently of topo.collective.model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from formats._real import real_file
from typer.testing import CliRunner, Result

from topo.builders import build
from topo.cli import app
from topo.collective import (
    candidates,
    choose,
    collective_table,
    fabric_rates,
    load_constants,
    ranked_candidates,
    tuner_restriction,
)
from topo.errors import TopoError
from topo.fabric import save
from topo.spec import load_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "h100-10node.toml"
MIB, GIB = 1 << 20, 1 << 30
N_RANKS = 16  # 2 servers x 8 GPUs
AR_FACTOR = 2 * (N_RANKS - 1) / N_RANKS  # nccl-tests' all_reduce busbw factor

runner = CliRunner()


@pytest.fixture(scope="module")
def G():
    return build(load_spec(EXAMPLE).replace(name=None))


@pytest.fixture(scope="module")
def fabric(G, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fab") / "h100.json"
    H = G.copy()
    H.graph["gpu_model"] = "NVIDIA H100 80GB HBM3"  # (as topo build --node h100 records it)
    save(H, path)
    return path


def table(G, op: str = "all_reduce", lo: int = 8, hi: int = GIB, **kw: Any) -> Any:
    return collective_table(
        G, op, gpus=N_RANKS, gpus_per_node=8, min_bytes=lo, max_bytes=hi, step_factor=8, **kw
    )


def run(fabric: Path, *args: Any) -> Result:
    return runner.invoke(
        app, ["collective", str(fabric), "--gpus", "16", *map(str, args)], terminal_width=250
    )


def ok(fabric: Path, *args: Any) -> Result:
    r = run(fabric, *args)
    assert r.exit_code == 0 and r.exception is None, r.output
    return r


def refused(r: Result, *fragments: str) -> str:
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    assert "Traceback" not in r.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


# ------------------------------------------------------------------ hand-worked times (µs)


def ring_simple_all_reduce_us(size: int) -> float:
    """ring/Simple all_reduce on 2 servers of 8 H100 (8 x 400G NICs, NVLink 450 GB/s)."""
    # Bus rate: the least of the ring's network rate (8 NICs x 50 GB/s x nic 0.96 = 384 GB/s
    # per server on a non-blocking fabric), NVLink 450 x 0.824 x 8/7 = 423.8 GB/s, and the
    # channels: 16 x one NVLink (20.6 GB/s, bandwidth.nvlink_link_GBps.hopper) = 329.6 GB/s.
    bus = min(8 * 50e9 * 0.96, 450e9 * 0.824 * 8 / 7, 16 * 20.6e9)
    assert bus == pytest.approx(329.6e9)
    steps, inter = 2 * (N_RANKS - 1), 2 * (2 - 1)  # 30 ring steps, 2 of them across servers
    algbw = bus * N_RANKS / steps
    # base.ring Simple 8.4; per NVLink step max(nvlink.ring Simple 3.4, 3 x net overhead 1.0);
    # per network step net.ring Simple 14.0; x1.4 ring plateau (S / (16 x 16) >= 64 B).
    latency = 8.4 + (steps - inter) * max(3.4, 3 * 1.0) + inter * 14.0
    assert latency == pytest.approx(131.6)
    return latency * 1.4 + size / algbw * 1e6


def ring_ll_all_reduce_us(size: int) -> float:
    """ring/LL all_reduce, same sub-cluster: LL runs at half the bus rate under llMaxBws."""
    bus = min(0.5 * 329.6e9, 39e9)  # ll_max.intel [1 node, 2 nodes, ...]: 39 GB/s at 2 nodes
    algbw = bus * N_RANKS / 30
    # base.ring LL 6.6; per NVLink step max(nvlink.ring LL 0.6, net overhead 1.0); net.ring LL 2.7
    latency = 6.6 + 28 * max(0.6, 1.0) + 2 * 2.7
    return latency + size / algbw * 1e6


# base.nvls_tree Simple 0 + nvlink.nvls_tree Simple 25 + 2 log2(2) x net.nvls_tree Simple 20.9
NVLS_TREE_LATENCY_US = 0 + 25 + 2 * 1 * 20.9
# base.tree LL 6.8 + 2 ((G-1) x nvlink.tree LL 0.6 + log2(N) x net.tree LL 5.0)
TREE_LL_LATENCY_US = 6.8 + 2 * (7 * 0.6 + 1 * 5.0)


# ------------------------------------------------------------------ the candidates key


def test_every_row_lists_every_candidate_fastest_first_and_marks_the_least(G):
    rep = table(G)
    # Across servers with NVSwitch on Hopper, all_reduce has ring and tree in the three
    # protocols and NVLS-tree in Simple (docs/collective.md, "The model").
    expected = {(a, p) for a in ("ring", "tree") for p in ("LL", "LL128", "Simple")}
    expected.add(("nvls_tree", "Simple"))
    assert [r.size_bytes for r in rep.rows] == [8 << (3 * k) for k in range(10)]
    for row in rep.rows:
        cands = row.candidates
        assert {(k["algorithm"], k["protocol"]) for k in cands} == expected
        assert len(cands) == len(expected)
        # ranked by the time NCCL's tuner gives each (its rates, without the model's limit of
        # one NVLink per channel); each also shows its ceiling and expected times
        times = [k["tuner_time_us"] for k in cands]
        assert times == sorted(times)
        assert [k["chosen"] for k in cands] == [True] + [False] * (len(cands) - 1)
        first = cands[0]
        assert (first["algorithm"], first["protocol"]) == (row.algorithm, row.protocol)
        assert first["time_us"] == row.ceiling_time_us
        assert first["busbw_GBps"] == row.ceiling_busbw_GBps
        assert first["expected_time_us"] == row.time_us
        assert first["expected_busbw_GBps"] == pytest.approx(row.busbw_GBps, rel=1e-12)
        for k in cands:
            # nccl-tests' columns had NCCL chosen it: algbw = size / time, busbw x 2(n-1)/n
            assert k["algbw_GBps"] == pytest.approx(row.size_bytes / k["time_us"] / 1e3)
            assert k["busbw_GBps"] == pytest.approx(k["algbw_GBps"] * AR_FACTOR)
            assert k["time_us"] >= k["latency_us"]
            # fewer limits, not more; but for the tree NCCL's tuner also takes x0.85 for
            # Hopper's tree pattern (the fixture is Hopper), which the ceiling does not
            # (tuning.cc maxTreePattern)
            slack = 0.85 if k["algorithm"] == "tree" else 1.0
            bytes_us = k["time_us"] - k["latency_us"]
            assert k["tuner_time_us"] <= (k["latency_us"] + bytes_us / slack) * (1 + 1e-12)
            assert k["expected_time_us"] >= k["time_us"] * (1 - 1e-12)  # a ceiling is a bound
            assert set(k) >= {"bandwidth_GBps", "bound"}


def test_the_ranking_s_first_is_the_tuner_s_choice(G):
    rates, c = fabric_rates(G, N_RANKS, 8), load_constants()
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv"):
        for size in (8, 64 << 10, 4 * MIB, GIB):
            ranked = ranked_candidates(op, size, rates, c)
            assert ranked[0] == choose(op, size, rates, c)
            assert sorted(map(repr, ranked)) == sorted(map(repr, candidates(op, size, rates, c)))


def test_all_gather_across_servers_has_only_the_ring(G):
    # NVLS all_gather runs on one server, PAT at one GPU per server: 2 x 8 leaves the ring.
    rep = table(G, "all_gather", lo=MIB, hi=MIB)
    pairs = [(k["algorithm"], k["protocol"]) for k in rep.rows[0].candidates]
    assert sorted(pairs) == [("ring", "LL"), ("ring", "LL128"), ("ring", "Simple")]


def test_one_candidate_by_hand(G):
    # ring/Simple at 1 GiB, forced: 131.6 us x 1.4 + 1 GiB / (329.6 GB/s x 16/30)
    rep = table(G, lo=GIB, hi=GIB, algo="Ring", proto="Simple")
    row = rep.rows[0]
    assert (row.algorithm, row.protocol) == ("ring", "Simple")
    assert row.ceiling_time_us == pytest.approx(ring_simple_all_reduce_us(GIB), rel=1e-9)
    assert row.ceiling_time_us == pytest.approx(6292.45, abs=0.01)
    assert row.ceiling_busbw_GBps == pytest.approx(
        GIB / row.ceiling_time_us / 1e3 * AR_FACTOR, rel=1e-9
    )
    assert row.busbw_GBps == pytest.approx(GIB / row.time_us / 1e3 * AR_FACTOR, rel=1e-9)
    # the same candidate, unforced, in the chosen row's list
    free = table(G, lo=GIB, hi=GIB).rows[0].candidates
    mine = next(k for k in free if (k["algorithm"], k["protocol"]) == ("ring", "Simple"))
    assert mine["time_us"] == pytest.approx(ring_simple_all_reduce_us(GIB), rel=1e-9)
    assert mine["latency_us"] == pytest.approx(131.6 * 1.4, rel=1e-9)
    assert mine["chosen"] is False
    assert mine["bandwidth_GBps"] == pytest.approx(329.6 * 16 / 30, rel=1e-9)
    assert mine["bound"] == "16 channels"


# ------------------------------------------------------------------ --algo / --proto


def test_algo_ring_forces_ring_where_tree_was_chosen(G):
    free = table(G, lo=MIB, hi=MIB).rows[0]
    assert (free.algorithm, free.protocol) == ("tree", "LL128")
    forced = table(G, lo=MIB, hi=MIB, algo="ring").rows[0]
    assert forced.algorithm == "ring"
    assert {k["algorithm"] for k in forced.candidates} == {"ring"}
    # at 8 B the free choice is tree/LL (6.8 + 2(7 x 0.6 + 5.0) = 25.2 us); forced: ring/LL
    small = table(G, lo=8, hi=8)
    assert (small.rows[0].algorithm, small.rows[0].protocol) == ("tree", "LL")
    assert small.rows[0].ceiling_time_us == pytest.approx(TREE_LL_LATENCY_US, abs=0.01)
    ring = table(G, lo=8, hi=8, algo="RING").rows[0]
    assert (ring.algorithm, ring.protocol) == ("ring", "LL")
    assert ring.ceiling_time_us == pytest.approx(ring_ll_all_reduce_us(8), rel=1e-9)
    assert ring.ceiling_time_us == pytest.approx(40.0, abs=1e-3)


def test_proto_simple_leaves_only_simple_and_takes_the_fastest(G):
    rep = table(G, proto="simple")
    for row in rep.rows:
        assert {k["protocol"] for k in row.candidates} == {"Simple"}
        assert row.protocol == "Simple"
        assert row.ceiling_time_us == min(k["time_us"] for k in row.candidates if k["chosen"])
        assert min(k["tuner_time_us"] for k in row.candidates) == next(
            k["tuner_time_us"] for k in row.candidates if k["chosen"]
        )
    # at 8 B: nvls_tree/Simple (66.8 us) beats tree/Simple (92.4) and ring/Simple (131.6)
    first = rep.rows[0]
    assert first.algorithm == "nvls_tree"
    assert first.ceiling_time_us == pytest.approx(NVLS_TREE_LATENCY_US, abs=1e-3)
    assert rep.proto == "simple" and rep.algo is None


def test_a_caret_excludes(G):
    rep = table(G, algo="^tree")
    for row in rep.rows:
        assert "tree" not in {k["algorithm"] for k in row.candidates}
        assert {k["algorithm"] for k in row.candidates} == {"ring", "nvls_tree"}
    assert (rep.rows[0].algorithm, rep.rows[0].protocol) == ("ring", "LL")  # 40.0 < 66.8 us
    both = table(G, lo=MIB, hi=MIB, algo="^Tree,NVLSTree", proto="^LL128")
    assert {(k["algorithm"], k["protocol"]) for k in both.rows[0].candidates} == {
        ("ring", "LL"),
        ("ring", "Simple"),
    }


def test_per_function_lists_as_nccl_2_24_reads_them():
    r = tuner_restriction("ring;allreduce:tree,nvlstree")
    assert r.algorithms["all_reduce"] == {"tree", "nvls_tree"}
    assert r.algorithms["all_gather"] == {"ring"} and r.algorithms["broadcast"] == {"ring"}
    # NCCL's own example of env.rst: all but tree for allreduce, the rest untouched
    only = tuner_restriction("allreduce:^tree")
    assert "tree" not in only.algorithms["all_reduce"] and "ring" in only.algorithms["all_reduce"]
    assert "tree" in only.algorithms["all_gather"]
    p = tuner_restriction(proto="LL,Simple;allreduce:^LL")
    assert p.protocols["all_reduce"] == {"LL128", "Simple"}
    assert p.protocols["reduce_scatter"] == {"LL", "Simple"}


@pytest.mark.parametrize(
    "algo, proto, message",
    [
        ("", None, "algo is empty"),
        ("ringg", None, "'ringg' is not one of NCCL_ALGO's algorithms"),
        ("pairwise", None, "alltoall and sendrecv run as send/recv"),
        (None, "LL64", "'LL64' is not one of NCCL_PROTO's protocols"),
        ("ring;tree", None, "every entry but the first must name a function"),
        ("alltoall:ring", None, "'alltoall' is not one of NCCL_ALGO's functions"),
        ("allreduce:ring:tree", None, "has more than one ':'"),
    ],
)
def test_lists_nccl_would_refuse_are_refused(algo, proto, message):
    with pytest.raises(TopoError, match=message) as e:
        tuner_restriction(algo, proto)
    assert e.value.names == (("algo",) if algo is not None else ("proto",))


def test_send_recv_ops_are_not_governed(G):
    # NCCL_ALGO and NCCL_PROTO reach the five collectives only (NCCL's send/recv picks LL or
    # Simple by NCCL_P2P_LL_THRESHOLD): alltoall keeps its rows, the report records nothing.
    free = table(G, "alltoall", lo=MIB, hi=MIB)
    forced = table(G, "alltoall", lo=MIB, hi=MIB, algo="tree", proto="LL128")
    assert forced.rows == free.rows
    assert forced.algo is None and forced.proto is None


# ------------------------------------------------------------------ the command line


def test_json_rows_carry_candidates_and_the_restriction(fabric):
    rep = json.loads(ok(fabric, "--min-bytes", "1M", "--max-bytes", "1M", "--json").stdout)
    assert rep["algo"] is None and rep["proto"] is None
    cands = rep["rows"][0]["candidates"]
    assert len(cands) == 7 and cands[0]["chosen"] is True
    assert {"algorithm", "protocol", "time_us", "latency_us", "algbw_GBps", "busbw_GBps"} <= set(
        cands[0]
    )
    assert {"bound", "chosen"} <= set(cands[0])
    forced = json.loads(
        ok(fabric, "--min-bytes", "1M", "--max-bytes", "1M", "--algo", "Ring", "--json").stdout
    )
    assert forced["algo"] == "Ring" and forced["rows"][0]["algorithm"] == "ring"
    assert all(k["algorithm"] == "ring" for k in forced["rows"][0]["candidates"])


def why_lines(stdout: str) -> list[str]:
    """The lines of the --why table, from its column headers on."""
    why = stdout.split("why: every (algorithm, protocol)", 1)[1].splitlines()
    return why[next(i for i, x in enumerate(why) if "size (B)" in x) - 1 :]


def test_why_table_marks_the_choice(fabric):
    lines = why_lines(ok(fabric, "--min-bytes", 8, "--max-bytes", 8, "--why").stdout)
    algorithms, protocols = lines[0].split(), lines[1].split()
    assert algorithms == ["ring"] * 3 + ["tree"] * 3 + ["nvls_tree"]
    assert protocols == ["size", "(B)"] + ["LL", "LL128", "Simple"] * 2 + ["Simple"]
    times = next(x for x in lines if x.strip().startswith("8 ")).split()
    busbw = lines[lines.index(next(x for x in lines if x.strip().startswith("8 "))) + 1].split()
    # tree/LL at 8 B: 6.8 + 2 (7 x 0.6 + 5.0) = 25.2 us, chosen; ring/LL 40.0; nvls_tree 66.8
    assert times[1:] == ["40.00", "75.20", "131.60", "*25.20", "48.50", "92.40", "66.80"]
    assert busbw == ["0.00"] * 7  # 8 B in 25-132 us: under 0.005 GB/s
    assert float(times[1]) == pytest.approx(ring_ll_all_reduce_us(8), abs=0.005)
    # ring/Simple at 8 B is its latency, 131.6 us, without the x1.4 plateau (8 / 256 < 64 B)


def test_why_with_compare_puts_the_measured_run_first(fabric):
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    r = runner.invoke(
        app, ["collective", str(fabric), "--compare", str(log), "--op", "all_reduce", "--why"]
    )
    assert r.exit_code == 0, r.output
    lines = why_lines(r.stdout)
    assert lines[1].split()[:3] == ["size", "(B)", "measured"]
    # the log's 16 GiB row: 105854.0 us, busbw 320.54 GB/s (nccl_N10_G8.log, all_reduce_perf),
    # printed as nccl-tests prints them (7 and 6 characters)
    i = next(i for i, x in enumerate(lines) if x.strip().startswith("17179869184"))
    assert lines[i].split()[1] == "105854" and lines[i + 1].split()[0] == "320.54"
    assert lines[i].count("*") == 1
    data = json.loads(
        runner.invoke(
            app,
            ["collective", str(fabric), "--compare", str(log), "--op", "all_reduce", "--json"]
            + ["--algo", "ring"],
        ).stdout
    )[0]
    assert data["algo"] == "ring" and data["proto"] is None
    assert all(row["algorithm"] == "ring" for row in data["rows"])
    assert all(k["algorithm"] == "ring" for row in data["rows"] for k in row["candidates"])


def test_nccl_tests_number_format():
    from topo.commands.collective import nccl_tests_number

    # nccl-tests src/util.cu getFloatStr: 2 decimals if they fit the width, then 1, then 0
    assert nccl_tests_number(25.2, 7) == "25.20"
    assert nccl_tests_number(12586.1, 7) == "12586.1"
    assert nccl_tests_number(1663442.3, 7) == "1663442"
    assert nccl_tests_number(320.544, 6) == "320.54" and nccl_tests_number(1234.56, 6) == "1234.6"


def test_refused_restrictions_are_one_line(fabric):
    line = refused(run(fabric, "--algo", "nvls"), "--algo 'nvls' leaves no", "for all_reduce")
    assert "available: ring/LL, ring/LL128, ring/Simple, tree/LL" in line
    assert "nvls_tree/Simple" in line and "NVLSTree" in line
    refused(
        run(fabric, "--op", "all_gather", "--algo", "Tree"),
        "--algo 'Tree' leaves no algorithm/protocol for all_gather",
        "available: ring/LL, ring/LL128, ring/Simple",
    )
    refused(
        run(fabric, "--algo", "nvlstree", "--proto", "LL"),
        "--algo 'nvlstree' with --proto 'LL' leave no",
    )
    refused(run(fabric, "--proto", "^LL,LL128,Simple"), "--proto '^LL,LL128,Simple' leaves no")
    refused(run(fabric, "--algo", "CollNetDirect"), "topo does not model CollNet")
    refused(run(fabric, "--algo", "bogus"), "--algo 'bogus': 'bogus' is not one of NCCL_ALGO")
    refused(run(fabric, "--why", "--json"), "--why prints a table")


def test_nvls_on_a_generation_without_nvlink_sharp_is_refused(fabric):
    # A100 (ampere): nvlsEfficiency 0 (tuning.cc), so one server has no NVLS to force
    r = runner.invoke(
        app,
        ["collective", str(fabric), "--gpus", "8", "--arch", "ampere", "--algo", "NVLS"],
    )
    refused(r, "--algo 'NVLS' leaves no", "on 8 GPUs (1 node x 8)", "ring/Simple, tree/LL")


def test_alltoall_notes_that_nccl_ignores_the_lists(fabric):
    free = json.loads(ok(fabric, "--op", "alltoall", "--max-bytes", "1M", "--json").stdout)
    r = ok(fabric, "--op", "alltoall", "--max-bytes", "1M", "--algo", "ring", "--json")
    assert r.stderr.strip() == (
        "topo: warning: --algo does not govern alltoall: NCCL runs it as send/recv, whose "
        "protocol NCCL_ALGO and NCCL_PROTO leave alone (LL up to NCCL_P2P_LL_THRESHOLD per "
        "channel, else Simple); its rows are NCCL's own choice"
    )
    forced = json.loads(r.stdout)
    assert forced["rows"] == free["rows"] and forced["algo"] is None


def test_calibrate_refuses_the_choice_options(fabric):
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    r = runner.invoke(app, ["collective", "--calibrate", str(log), "--algo", "ring", "--why"])
    refused(r, "--why, --algo apply to a predicted table or --compare")


def test_a_per_function_list_restricts_one_test_of_a_log(fabric):
    # NCCL_ALGO=tree fails NCCL's all_gather (ring only there); allreduce:tree leaves it free.
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    r = runner.invoke(app, ["collective", str(fabric), "--compare", str(log), "--algo", "tree"])
    refused(r, "--algo 'tree' leaves no", "for all_gather", "(e.g. allreduce:tree)")
    r = runner.invoke(
        app,
        ["collective", str(fabric), "--compare", str(log), "--algo", "allreduce:tree", "--json"],
    )
    assert r.exit_code == 0, r.output
    by_op = {d["op"]: d for d in json.loads(r.stdout)}
    assert {row["algorithm"] for row in by_op["all_reduce"]["rows"]} == {"tree"}
    assert by_op["all_reduce"]["algo"] == by_op["all_gather"]["algo"] == "allreduce:tree"
    assert {row["algorithm"] for row in by_op["all_gather"]["rows"]} == {"ring"}
    assert by_op["alltoall"]["algo"] is None  # send/recv: not governed
    assert "--algo does not govern alltoall and sendrecv" in r.stderr


@pytest.mark.parametrize(
    "size, factor",
    [
        (16 * MIB, 0.7),  # log2(2^24 / 64) = 18: treeCorrectionFactor[Simple][18]
        (512 * MIB, 0.9),  # 23: the entry the tree does not read (logSize < 23) but NVLS-tree does
        (GIB, 1.0),  # 24: none (logSize < 24)
    ],
)
def test_nvls_tree_tuner_rate_on_blackwell_x86_hosts_takes_the_tree_correction(size, factor):
    # NCCL 2.29 ncclTopoGetAlgoTime scales NVLS-tree all_reduce's bandwidth by
    # treeCorrectionFactor[protocol][log2(size / 64)] under 1 GiB when minCompCap >= 100 and the
    # host is x86: 2 x 8 B200 recorded as such (x86) against the same servers on arm hosts
    # (GB200's Grace): the tuner's NVLS-tree algbw differs by the factor, its ceiling not
    # at all; on Hopper nothing changes
    from topo.collective.predict import fabric_constants

    G = build("ft2", switch_ports=16, gpus=16, gpus_per_node=8, nics_per_node=8,
              link_gbps=400, nvlink_GBps=900)  # fmt: skip
    G.graph["gpu_model"] = "NVIDIA B200"
    x86 = fabric_constants(G)
    assert (x86.arch, x86.cpu_arch) == ("blackwell", "x86")
    r = fabric_rates(G, 16, 8)

    def nvls_tree(c):
        (k,) = [k for k in candidates("all_reduce", size, r, c) if k.algorithm == "nvls_tree"]
        return k

    on_x86, on_arm = nvls_tree(x86), nvls_tree(x86.with_cpu_arch("arm"))
    assert on_x86.tuner_algbw_Bps == pytest.approx(factor * on_arm.tuner_algbw_Bps)
    assert on_x86.algbw_Bps == on_arm.algbw_Bps
    hopper = x86.with_arch("hopper")
    on_arm = nvls_tree(hopper.with_cpu_arch("arm"))
    assert nvls_tree(hopper).tuner_algbw_Bps == on_arm.tuner_algbw_Bps


def test_a_grace_superchip_fabric_is_modelled_on_arm_hosts():
    from topo.collective.predict import fabric_constants

    G = build("ft2", switch_ports=16, gpus=16, gpus_per_node=8, nics_per_node=8)
    G.graph["gpu_model"] = "NVIDIA GB200 NVL72 rack (18 compute trays of 2 Grace + 4 B200)"
    assert (fabric_constants(G).arch, fabric_constants(G).cpu_arch) == ("blackwell", "arm")
    G.graph["gpu_model"] = "NVIDIA H100 80GB HBM3"
    assert fabric_constants(G).cpu_arch == "x86"
