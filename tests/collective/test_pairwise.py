"""topo.collective.pairwise, topo.formats.pair_summary and ``topo explain`` on pairwise runs:
a server whose every pair is slow is located, a slow pair between healthy servers is a path,
failed runs are counted per server.

Synthetic tables are written in the tests with the fault put in by hand; the shared cluster00
table (17 servers, 810 runs) is checked against the same statistics computed here directly
from its CSV with the standard library, and against its own failures.txt."""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.collective.pairwise import locate_slow, recurring_paths
from topo.errors import FormatError
from topo.fabric import save
from topo.formats.pair_summary import PairRun, read_pair_summary

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "real" / "nccl_tests_logs"
C00 = SHARED / "xxrjun_cluster00_pairwise"
needs_shared = pytest.mark.skipif(not C00.is_dir(), reason="../shared is absent")

HEADER = "file,test,N,G,nodes,minBytes,maxBytes,avg_bus_bw_GBs,peak_busbw_GBs\n"


def _table(tmp_path: Path, busbw: dict[tuple[int, int], float | None], g: int = 8) -> Path:
    """A summary of sendrecv runs on servers n01..nK; None: a failed run."""
    lines = [HEADER]
    for (a, b), x in busbw.items():
        nodes = f'"n[{a:02d},{b:02d}]"'
        cell = "" if x is None else f"{x}"
        lines.append(f"r{a}_{b}.log,sendrecv_perf,2,{g},{nodes},8,1073741824,{cell},{cell}\n")
    p = tmp_path / "summary.csv"
    p.write_text("".join(lines))
    return p


def _pairs(n: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(1, n + 1) for b in range(a + 1, n + 1)]


def test_a_server_in_every_slow_pair_is_located_and_its_partners_are_not(tmp_path: Path) -> None:
    # 8 servers at 40 GB/s a pair; server 3 at half rate: its 7 pairs at 20 GB/s
    busbw = {p: (20.0 if 3 in p else 40.0) for p in _pairs(8)}
    runs = read_pair_summary(_table(tmp_path, busbw))
    assert len(runs) == 28 and runs[0].servers == ("n01", "n02") and runs[0].op == "sendrecv"
    (group,) = locate_slow(runs)
    assert group.median_busbw_GBps == 40.0
    assert [s.server for s in group.servers] == ["n03"]
    s = group.servers[0]
    assert (s.slow_pairs, s.pairs, s.ratio, s.median_busbw_GBps) == (7, 7, 0.5, 20.0)
    assert group.slow_paths == []


def test_a_slow_pair_between_healthy_servers_is_a_path_and_recurs_across_tests(
    tmp_path: Path,
) -> None:
    busbw: dict[tuple[int, int], float | None] = {p: 40.0 for p in _pairs(6)}
    busbw[(2, 5)] = 30.0  # 25% under: slow; neither server's median pair is
    busbw[(1, 4)] = 36.0  # 10% under: within 15%, not slow
    runs = read_pair_summary(_table(tmp_path, busbw))
    again = [PairRun("alltoall", r.gpus_per_node, r.servers, r.busbw_GBps, None, "") for r in runs]
    groups = locate_slow(runs + again)
    assert [(g.op, g.servers, g.slow_paths) for g in groups] == [
        ("alltoall", [], [("n02", "n05", 30.0)]),
        ("sendrecv", [], [("n02", "n05", 30.0)]),
    ]
    assert recurring_paths(groups) == [("n02", "n05", ["alltoall/G8", "sendrecv/G8"])]


def test_failed_runs_are_counted_per_server(tmp_path: Path) -> None:
    busbw: dict[tuple[int, int], float | None] = {p: 40.0 for p in _pairs(8)}
    for b in (1, 2, 4, 5):
        busbw[(min(3, b), max(3, b))] = None  # server 3 fails with 4 partners
    busbw[(6, 7)] = None
    (group,) = locate_slow(read_pair_summary(_table(tmp_path, busbw)))
    assert group.pairs == 23 and len(group.failed) == 5
    # 5 failed pairs over 8 servers: 1.25 a server; server 3 in 4 of them
    assert group.failed_servers == [("n03", 4)]


def test_the_design_busbw_of_a_pair_is_held_against_the_median(tmp_path: Path) -> None:
    busbw = {p: 24.0 for p in _pairs(4)}
    (group,) = locate_slow(read_pair_summary(_table(tmp_path, busbw)), lambda op, g, size: 48.0)
    assert group.expected_busbw_GBps == 48.0
    assert "0.50x the design's 48.0 GB/s" in group.verdict


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("f,sendrecv_perf,2,0,n[1-2],8,8,1,1", "G '0' is not a positive number"),
        ("f,sendrecv_perf,4,8,n[1-2],8,8,1,1", "N '4': a pairwise run is on 2 servers"),
        ('f,sendrecv_perf,2,8,"n[1-3]",8,8,1,1', "names 3 servers, not 2"),
        ("f,sendrecv_perf,2,8,n[1-,8,8,1,1", "is not a hostlist"),
        ("f,sendrecv_perf,2,8,n[1-2],8,8,1,fast", "peak_busbw_GBs 'fast' is not a number"),
        ("f,sendrecv_perf,2,8,n[1-2],8,8,1,1e9", "is not from 0 to 1e+06 GB/s"),
    ],
)
def test_a_bad_row_is_refused_at_its_line(tmp_path: Path, row: str, message: str) -> None:
    p = tmp_path / "s.csv"
    p.write_text(HEADER + "f,sendrecv_perf,2,8,n[1-2],8,8,1,1\n" + row + "\n")
    with pytest.raises(FormatError) as e:
        read_pair_summary(p)
    assert str(e.value).startswith(f"{p}:3: ") and message in str(e.value)


def test_a_csv_without_the_columns_is_not_a_pair_summary(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(FormatError, match=r"s\.csv:1: not a pairwise summary"):
        read_pair_summary(p)


def _by_hand(path: Path, test: str, g: str) -> tuple[float, dict[str, float]]:
    """The group's median peak busbw and each server's median over its pairs, from the CSV
    with the standard library."""
    pairs: dict[tuple[str, str], float] = {}
    for r in csv.DictReader(path.open()):
        if r["test"] == test and r["G"] == g and r["peak_busbw_GBs"]:
            a, b = re.match(r"nccl_N2_G\d+_(\S+?)_(\S+?)\.log", r["file"]).groups()  # type: ignore[union-attr]
            pairs[(a, b)] = float(r["peak_busbw_GBs"])
    med = statistics.median(pairs.values())
    nodes = {s for p in pairs for s in p}
    return med, {s: statistics.median(x for p, x in pairs.items() if s in p) for s in nodes}


@needs_shared
def test_the_shared_sweep_locates_the_server_its_data_shows() -> None:
    runs = read_pair_summary(C00 / "summary.csv")
    assert len(runs) == 810
    assert sum(r.failed for r in runs) == 34  # failures.txt: "FAIL: 34"
    groups = {(g.op, g.gpus_per_node): g for g in locate_slow(runs)}
    assert len(groups) == 6
    for (op, g), group in groups.items():
        med, per_server = _by_hand(C00 / "summary.csv", f"{op}_perf", str(g))
        assert group.median_busbw_GBps == pytest.approx(med)
        slow = sorted(s for s, m in per_server.items() if math.log(m / med) < -math.log(1.15))
        assert sorted(s.server for s in group.servers) == slow
    # sendrecv at G=4: cnode2-003's median pair 9.56 GB/s against the group's 13.95
    assert [s.server for s in groups[("sendrecv", 4)].servers] == ["cnode2-003"]
    # failures.txt: "nodes cnode2-003, -008, -016 recur" among the failed pairs
    failing = {s for group in groups.values() for s, _ in group.failed_servers}
    assert failing and failing <= {"cnode2-003", "cnode2-008", "cnode2-016"}
    assert "cnode2-003" in failing


@needs_shared
def test_explain_reads_the_summary_in_a_folder_of_logs(tmp_path: Path) -> None:
    G = build("ft2", gpus=136, gpus_per_node=8, nics_per_node=8, switch_ports=64, link_gbps=400.0)
    fabric = tmp_path / "f.json"
    save(G, fabric)
    r = CliRunner().invoke(app, ["explain", str(fabric), str(C00), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    kinds = [d["kind"] for d in doc]
    # the folder's two logs (one failed: skipped with a warning) and six pairwise groups
    assert kinds.count("pairwise") == 6 and "test" in kinds
    sr4 = next(
        d
        for d in doc
        if d["kind"] == "pairwise" and d["op"] == "sendrecv" and d["gpus_per_node"] == 4
    )
    assert [s["server"] for s in sr4["servers"]] == ["cnode2-003"]
    assert sr4["expected_busbw_GBps"] > sr4["median_busbw_GBps"]
    r = CliRunner().invoke(app, ["explain", str(fabric), str(C00 / "summary.csv")])
    assert r.exit_code == 0, r.output
    assert "cnode2-003" in r.stdout and "pairwise runs" in r.stdout


def test_too_few_pairs_is_said_not_printed_empty(tmp_path: Path) -> None:
    G = build("ft2", gpus=16, gpus_per_node=8, nics_per_node=8, switch_ports=64, link_gbps=400.0)
    fabric = tmp_path / "f.json"
    save(G, fabric)
    table = _table(tmp_path, {(1, 2): 40.0, (1, 3): None})
    r = CliRunner().invoke(app, ["explain", str(fabric), str(table)])
    assert r.exit_code == 1
    assert "2 pairwise runs but no test and G with three measured pairs" in r.stderr
