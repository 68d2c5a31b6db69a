"""``topo acceptance KIT --results DIR`` on the shared H100 logs
(../shared/data/real/nccl_tests_logs): each log matched to the kit's test, its rows those of
``topo collective --compare``, the healthy logs passing, the pair of the other cluster failing
with explain's causes. Skipped when the shared data folder is absent."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path

import pytest
from formats._real import real_file
from typer.testing import CliRunner

from topo.acceptance import make_kit, read_results, write_kit
from topo.builders import build
from topo.cli import app
from topo.collective import compare_log
from topo.fabric import save
from topo.formats.nccl_tests import read_nccl_tests
from topo.spec import load_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "h100-10node.toml"
LOGS = "nccl_tests_logs"
N10_G8 = ("xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
N1_G8 = ("xxrjun_cluster01_singlenode", "nccl_N1_G8_cnode3-002.log")
PAIR = ("xxrjun_cluster00_pairwise", "nccl_N2_G8_cnode2-001_cnode2-002.log")
FAILED = ("xxrjun_cluster00_pairwise", "nccl_N2_G8_cnode2-002_cnode2-008.FAILED.log")


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """The kit of examples/h100-10node.toml (the cluster the N10 logs ran on)."""
    folder = tmp_path_factory.mktemp("kit")
    G = build(load_spec(EXAMPLE).replace(name=None))
    save(G, folder / "h100.json")
    write_kit(make_kit(G), folder / "kit", folder / "h100.json")
    return G, folder / "kit"


def _results(tmp_path: Path, links: dict[str, tuple[str, str]]) -> Path:
    """A results folder of links to the shared logs (under the names given)."""
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    for name, parts in links.items():
        (folder / name).symlink_to(real_file(LOGS, *parts))
    return folder


def test_healthy_logs_match_their_scales_and_pass(kit, tmp_path):
    """The ten-node and one-node logs hold 4 tests each (all_reduce, all_gather,
    reduce_scatter, alltoall; sendrecv is no test of the kit): matched by their headers
    (80 ranks at 8 per host; 8 ranks on one host) to the 10x8 and 1x8 scales, all within the
    15% band (tests/collective/test_real_logs.py holds them within 15% at 1 GiB and more)."""
    G, folder = kit
    results = _results(tmp_path, {N10_G8[1]: N10_G8, N1_G8[1]: N1_G8})
    res = read_results(folder, results)
    read = {r.id: r for r in res.results if r.status != "no log"}
    ops = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
    assert set(read) == {f"{op}.{s}" for op in ops for s in ("10x8", "1x8")}
    assert all(r.status == "pass" and r.matched_by == "header" for r in read.values())
    assert all(not r.causes for r in read.values())
    assert len(res.unmatched) == 2 and all("sendrecv_perf" in u for u in res.unmatched)
    # the log's last all_reduce row (16 GiB), out of place: 320.54 GB/s
    assert read["all_reduce.10x8"].measured_busbw_GBps == pytest.approx(320.54)


def test_rows_are_those_of_collective_compare(kit, tmp_path):
    G, folder = kit
    results = _results(tmp_path, {N10_G8[1]: N10_G8})
    res = read_results(folder, results)
    for t in read_nccl_tests(real_file(LOGS, *N10_G8)):
        if t.op == "sendrecv":
            continue
        cmp = compare_log(G, t)
        (r,) = [r for r in res.results if r.id == f"{t.op}.10x8"]
        assert r.rows == [asdict(row) for row in cmp.rows]
        assert r.median_ratio == cmp.median_ratio
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert (doc["passed"], doc["failed"]) == (4, 0)
    # the command line's own: topo collective DESIGN --compare LOG --json
    cmp = CliRunner().invoke(
        app,
        ["collective", str(folder / "design.json"), "--compare", str(real_file(LOGS, *N10_G8)),
         "--json"],
    )  # fmt: skip
    assert cmp.exit_code == 0, cmp.output
    by_op = {c["op"]: c["rows"] for c in json.loads(cmp.stdout)}
    for t in doc["tests"]:
        if t["status"] == "pass":
            assert t["rows"] == by_op[t["op"]]


def test_a_log_named_after_its_test_is_matched_by_name_and_explained(kit, tmp_path):
    """The pair of the other cluster (alltoall about 23.6 GB/s, PROVENANCE.md: far below
    cluster01) under the kit's own name for the 2x8 alltoall: it fails, and explain ranks
    causes, best first."""
    G, folder = kit
    results = _results(tmp_path, {"alltoall.2x8.log": PAIR})
    res = read_results(folder, results)
    (r,) = [r for r in res.results if r.id == "alltoall.2x8"]
    assert (r.status, r.matched_by) == ("fail", "file name")
    assert r.measured_busbw_GBps == pytest.approx(23.62, abs=0.01)
    assert r.causes and [c["score"] for c in r.causes] == sorted(c["score"] for c in r.causes)
    assert r.score > r.causes[0]["score"]
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 3
    assert "alltoall.2x8" in out.stdout and "top cause:" in out.stdout and "check:" in out.stdout


def test_a_deepep_log_is_listed_not_read(kit, tmp_path):
    G, folder = kit
    results = _results(tmp_path, {N1_G8[1]: N1_G8})
    (results / "deepep_internode.ep64-g0.log").write_text("[config] num_tokens=4096\n")
    res = read_results(folder, results)
    (r,) = [r for r in res.results if r.id == "deepep_internode.ep64-g0"]
    assert r.status == "not read"
    assert not res.unreadable  # DeepEP's output is not read by design: exit 0
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 0, out.output


def test_a_failed_run_alone_is_one_line(kit, tmp_path):
    """The failed pair's log has no table: no test of the kit is measured."""
    G, folder = kit
    results = _results(tmp_path, {FAILED[1]: FAILED})
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 1
    assert out.output.count("\n") == 1 and "no nccl-tests log that matches" in out.output


def test_html_draws_measured_and_the_band(kit, tmp_path):
    G, folder = kit
    results = _results(tmp_path, {N1_G8[1]: N1_G8})
    page = tmp_path / "acc.html"
    out = CliRunner().invoke(
        app, ["acceptance", str(folder), "--results", str(results), "--html", str(page)]
    )
    assert out.exit_code == 0, out.output
    text = page.read_text()
    assert "all_reduce.1x8: measured (pass)" in text and "all_reduce.1x8: band low" in text


def _degraded_all_reduce(path: Path) -> str:
    """The ten-node log's all_reduce_perf section alone, as a run at half the speed: every
    time x 2 and every algbw and busbw / 2 (exact decimals, so that each row stays
    size / time as nccl-tests printed it)."""
    lines = path.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if "test concluded: all_reduce_perf" in line)
    out = []
    for line in lines[: end + 1]:
        f = line.split()
        if not line.startswith("#") and len(f) == 13:  # size count type redop root, 2 x 4
            for i in (5, 9):
                f[i] = str(Decimal(f[i]) * 2)
            for i in (6, 7, 10, 11):
                f[i] = str(Decimal(f[i]) / 2)
            line = "  ".join(f)
        out.append(line)
    return "\n".join(out) + "\n"


def test_a_log_named_after_its_test_is_read_before_another_logs_header_claims_it(kit, tmp_path):
    """all_gather.10x8.log holds the ten-node log's five tests; all_reduce.10x8.log its
    all_reduce alone at half the speed. all_gather.10x8.log comes first in the folder, and its
    all_reduce section fits all_reduce.10x8 by its header (80 ranks, 8 per server): the
    named log still is that test's, and fails. By hand: every measured time doubles, so each
    log(expected / measured time) drops by log 2, and the RMS over the rows is at least
    log 2 - the healthy RMS (about 0.69 - 0.09), far above log 1.15 (0.14); the median
    expected / measured ratio halves; the 16 GiB busbw is 320.54 / 2 = 160.27 GB/s."""
    G, folder = kit
    log = real_file(LOGS, *N10_G8)
    healthy = read_results(folder, _results(tmp_path / "a", {"all_gather.10x8.log": N10_G8}))
    (before,) = [r for r in healthy.results if r.id == "all_reduce.10x8"]
    assert (before.status, before.matched_by) == ("pass", "header")

    results = _results(tmp_path / "b", {"all_gather.10x8.log": N10_G8})
    (results / "all_reduce.10x8.log").write_text(_degraded_all_reduce(log))
    res = read_results(folder, results)
    by_id = {r.id: r for r in res.results}
    r = by_id["all_reduce.10x8"]
    assert (r.status, r.matched_by, Path(r.log).name) == (
        "fail",
        "file name",
        "all_reduce.10x8.log",
    )
    assert r.measured_busbw_GBps == pytest.approx(320.54 / 2)
    assert r.median_ratio == pytest.approx(before.median_ratio / 2, rel=1e-9)
    assert r.score >= math.log(2) - before.score > math.log(1.15)
    assert not res.warnings  # no row of the degraded log left out
    # the named log's own op by name, the others of the five-test log by their headers
    assert (by_id["all_gather.10x8"].status, by_id["all_gather.10x8"].matched_by) == (
        "pass", "file name",
    )  # fmt: skip
    for op in ("reduce_scatter", "alltoall"):
        assert (by_id[f"{op}.10x8"].status, by_id[f"{op}.10x8"].matched_by) == ("pass", "header")
        assert Path(by_id[f"{op}.10x8"].log).name == "all_gather.10x8.log"
    (left,) = [u for u in res.unmatched if "all_reduce_perf" in u]
    assert "all_gather.10x8.log" in left and "all_reduce.10x8 (" in left
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 3, out.output
    assert "1 failed" in out.stdout


def test_a_named_log_without_its_op_is_not_read_and_its_other_tests_are_matched(kit, tmp_path):
    """alltoall.10x8.log holding only an all_reduce test: alltoall.10x8 is not read (its log
    has no alltoall_perf test), and the all_reduce test fills all_reduce.10x8 by its header."""
    G, folder = kit
    results = tmp_path / "results"
    results.mkdir()
    (results / "alltoall.10x8.log").write_text(_degraded_all_reduce(real_file(LOGS, *N10_G8)))
    res = read_results(folder, results)
    by_id = {r.id: r for r in res.results}
    assert by_id["alltoall.10x8"].status == "not read"
    assert "no alltoall_perf test" in by_id["alltoall.10x8"].verdict
    assert (by_id["all_reduce.10x8"].status, by_id["all_reduce.10x8"].matched_by) == (
        "fail", "header",
    )  # fmt: skip
    assert [r.id for r in res.unreadable] == ["alltoall.10x8"]


# Logs named after a test that cannot be read: binary, empty, and cut after the table's
# header (the ten-node log's first 91 lines: its header, rank lines and column names).
def _unreadable(folder: Path) -> dict[str, str]:
    log = real_file(LOGS, *N10_G8).read_text().splitlines()
    assert log[90].lstrip("# ").startswith("(B)")  # the last line before the first row
    (folder / "all_reduce.1x8.log").write_bytes(bytes(range(256)) * 4)
    (folder / "all_gather.2x8.log").write_text("")
    (folder / "all_reduce.10x8.log").write_text("\n".join(log[:91]) + "\n")
    return {
        "all_reduce.1x8": "not UTF-8 text",
        "all_gather.2x8": "empty",
        "all_reduce.10x8": "no result rows",
    }


def test_logs_named_after_a_test_that_cannot_be_read_count_as_not_read(kit, tmp_path):
    """Three named logs that cannot be read (binary, empty, truncated before the first row)
    are their tests' and are not read, each with the reader's reason; a file named after no
    test (notes.txt) stays an unmatched warning. The ten-node log (under its own name) fills
    the three other 10x8 tests by their headers, not all_reduce.10x8, which has its log."""
    G, folder = kit
    results = _results(tmp_path, {N10_G8[1]: N10_G8})
    reasons = _unreadable(results)
    (results / "notes.txt").write_text("rerun on Monday\n")
    res = read_results(folder, results)
    by_id = {r.id: r for r in res.results}
    for tid, reason in reasons.items():
        assert (by_id[tid].status, by_id[tid].matched_by) == ("not read", "file name")
        assert Path(by_id[tid].log).name == f"{tid}.log" and reason in by_id[tid].verdict
    assert {r.id for r in res.unreadable} == set(reasons)
    assert {r.id for r in res.results if r.status == "pass"} == {
        f"{op}.10x8" for op in ("all_gather", "reduce_scatter", "alltoall")
    }
    assert any("notes.txt" in u and "(skipped)" in u for u in res.unmatched)
    doc = res.to_dict()
    assert (doc["passed"], doc["failed"], doc["not_read"], doc["unreadable"]) == (3, 0, 3, 3)
    assert doc["no_log"] == len(res.results) - 6
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 4, out.output
    assert "3 passed, 0 failed" in out.stdout and "3 not read" in out.stdout
    for tid in reasons:
        assert f"{tid}: not read: " in out.stdout
    # a failing test (the other cluster's pair as the 2x8 alltoall) outranks them: exit 3
    (results / "alltoall.2x8.log").symlink_to(real_file(LOGS, *PAIR))
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 3, out.output


def test_a_folder_of_unreadable_named_logs_alone_is_a_table_not_an_error(kit, tmp_path):
    """The folder is the kit's (its logs carry the tests' names) though none can be read:
    the table says so, exit 4, rather than 'no nccl-tests log that matches'."""
    G, folder = kit
    results = tmp_path / "results"
    results.mkdir()
    (results / "all_gather.2x8.log").write_text("")
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert out.exit_code == 4, out.output
    assert "0 passed, 0 failed" in out.stdout and "1 not read" in out.stdout
    assert "all_gather.2x8: not read: " in out.stdout


def test_a_second_log_named_after_a_test_is_read_when_the_first_cannot_be(kit, tmp_path):
    """all_reduce.1x8.json (empty) comes before all_reduce.1x8.log (the one-node log): the
    log is read, the empty file is a warning."""
    G, folder = kit
    results = _results(tmp_path, {"all_reduce.1x8.log": N1_G8})
    (results / "all_reduce.1x8.json").write_text("")
    res = read_results(folder, results)
    (r,) = [r for r in res.results if r.id == "all_reduce.1x8"]
    assert (r.status, r.matched_by, Path(r.log).name) == ("pass", "file name", "all_reduce.1x8.log")
    assert not res.unreadable
    assert any("all_reduce.1x8.json" in u and "all_reduce.1x8.log is read instead" in u
               for u in res.unmatched)  # fmt: skip


def test_a_named_log_of_other_ranks_than_its_test_is_said_in_a_warning(kit, tmp_path):
    """The one-node log (8 ranks on one host) under the 2x8 all_reduce's name (16 ranks, 8
    per server): it is the test's log, and a warning says it ran 8 ranks, not 16."""
    G, folder = kit
    results = _results(tmp_path, {"all_reduce.2x8.log": N1_G8})
    res = read_results(folder, results)
    (r,) = [r for r in res.results if r.id == "all_reduce.2x8"]
    assert r.matched_by == "file name"
    (w,) = [w for w in res.warnings if "named after all_reduce.2x8" in w]
    assert "(16 ranks, 8 per server)" in w and "ran 8 ranks, 8 per server" in w


def test_a_cut_log_gives_its_whole_tests_with_one_warning(kit, tmp_path):
    """The ten-node log cut after line 216 (all_reduce and all_gather whole, reduce_scatter
    started on line 216 with no row): its two tests pass by their headers, the third is one
    warning; under reduce_scatter's own name, that test is not read, saying why."""
    G, folder = kit
    results = tmp_path / "results"
    results.mkdir()
    cut = results / "cut216.log"
    cut.write_text("".join(real_file(LOGS, *N10_G8).read_text().splitlines(True)[:216]))
    line = (
        f"{cut}: test reduce_scatter_perf (started line 216) has no result rows: the log was "
        "cut off; the test is left out"
    )
    res = read_results(folder, results)
    assert {r.id for r in res.results if r.status == "pass"} == {
        "all_reduce.10x8",
        "all_gather.10x8",
    }
    assert res.warnings == [line]
    out = CliRunner().invoke(app, ["acceptance", str(folder), "--results", str(results)])
    assert [x for x in out.stderr.splitlines() if "warning" in x] == [f"topo: warning: {line}"]
    named = cut.rename(results / "reduce_scatter.10x8.log")
    res = read_results(folder, results)
    (r,) = [r for r in res.results if r.id == "reduce_scatter.10x8"]
    assert (r.status, r.matched_by) == ("not read", "file name")
    assert r.verdict.endswith(
        f"{named}: holds no reduce_scatter_perf test with rows left (only all_reduce_perf, "
        "all_gather_perf); test reduce_scatter_perf (started line 216) has no result rows: the "
        "log was cut off; the test is left out"
    )
