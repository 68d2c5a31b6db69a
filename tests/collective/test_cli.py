"""``topo collective`` on the command line (typer's CliRunner): the table, --json, --compare,
--fit, --html, and bad input (one line on stderr, exit 1, no traceback)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from formats._real import real_file
from typer.testing import CliRunner, Result

from topo.builders import build
from topo.cli import app
from topo.fabric import save
from topo.spec import load_spec

runner = CliRunner()
LOG = ("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "h100-10node.toml"
MIB = 1 << 20


def run(*args: Any) -> Result:
    return runner.invoke(app, ["collective", *map(str, args)])


def ok(*args: Any) -> Result:
    r = run(*args)
    assert r.exit_code == 0 and r.exception is None, r.output
    return r


def user_error(r: Result, *fragments: str) -> str:
    assert isinstance(r.exception, SystemExit) and "Traceback" not in r.output, r.output
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """Two servers of 8 GPUs and 8 x 400G NICs, NVLink 450 GB/s, on an 8-port fat tree."""
    path = tmp_path_factory.mktemp("fab") / "small.json"
    save(
        build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450),
        path,
    )
    return path


@pytest.fixture(scope="module")
def h100(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fab") / "h100.json"
    save(build(load_spec(EXAMPLE).replace(name=None)), path)
    return path


def test_op_choices_are_the_library_ops():
    from topo.collective import OPS
    from topo.commands.collective import Op

    assert [o.value for o in Op] == list(OPS)


def test_op_is_not_case_sensitive(small):
    upper = json.loads(ok(small, "--op", "ALL_GATHER", "--max-bytes", "1M", "--json").stdout)
    lower = json.loads(ok(small, "--op", "all_gather", "--max-bytes", "1M", "--json").stdout)
    assert upper["op"] == "all_gather" and upper["rows"] == lower["rows"]


def test_json_rows(small):
    r = ok(
        small, "--op", "all_gather", "--gpus", 8, "--min-bytes", 8, "--max-bytes", "1M", "--json"
    )
    rep = json.loads(r.stdout)
    assert (rep["op"], rep["gpus"], rep["nodes"], rep["gpus_per_node"]) == ("all_gather", 8, 1, 8)
    rows = rep["rows"]
    # float, 8 ranks, 16-byte chunks: the first size with a whole chunk is 128 B
    assert [row["size_bytes"] for row in rows] == [2**k for k in range(7, 21)]
    for row in rows:
        assert {
            "size_bytes",
            "time_us",
            "algbw_GBps",
            "busbw_GBps",
            "algorithm",
            "protocol",
        } <= set(row)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 7 / 8)
    assert rows[0]["algorithm"] == "ring" and rows[0]["protocol"] == "LL"
    assert rep["rates"]["nvlink_effective_GBps"] == pytest.approx(450 * 0.824)


def test_table(small):
    r = ok(small, "--op", "all_reduce", "--max-bytes", "8G", "--min-bytes", "1G")
    assert "busbw" in r.stdout and "nvls_tree/Simple" in r.stdout
    assert "all_reduce on" in r.stdout and "16 GPUs, 2 nodes x 8" in r.stdout


def test_html(small, tmp_path):
    out = tmp_path / "c.html"
    r = ok(small, "--op", "alltoall", "--html", out)
    assert out.is_file() and "plotly" in out.read_text()[:100000].lower()
    # the fabric records no GPU model: one warning naming the generation assumed, then the file
    assert r.stderr.strip().splitlines() == [
        f"topo: warning: {small} records no GPU model; assuming Hopper (H100-class) NCCL "
        "tables; pass --arch or build with --node",
        f"wrote {out}",
    ]


def test_compare_and_fit_ten_nodes(h100, tmp_path):
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    out = tmp_path / "cmp.html"
    r = ok(h100, "--compare", log, "--op", "all_gather", "--fit", "--html", out)
    assert "all_gather: agrees with the model" in r.stdout
    assert "fit over 10 sizes" in r.stdout and out.is_file()
    data = json.loads(ok(h100, "--compare", log, "--json").stdout)
    assert [d["op"] for d in data] == [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "alltoall",
        "sendrecv",
    ]
    assert all(d["gpus"] == 80 and d["gpus_per_node"] == 8 for d in data)


def test_the_rates_line_of_one_gpu_per_server(h100):
    # one GPU a server uses one NIC of 50 GB/s and no NVLink: it said "NVLink 0.0 GB/s per
    # GPU" and "server ceiling 400.0 GB/s" (the eight NICs of the server, seven unused)
    r = ok(h100, "--gpus-per-node", "1", "--min-bytes", "1G", "--max-bytes", "1G")
    assert "one GPU per server: no NVLink peer; 1 NIC x 50.0 GB/s per server in use" in r.stdout
    assert "server ceiling" not in r.stdout and "NVLink 0.0" not in r.stdout


def test_rows_under_one_mib_are_marked_not_fitted(h100):
    # the training file's rows start at 1 MiB: 256 and 512 KiB lie below the fitted range
    r = ok(h100, "--min-bytes", "256K", "--max-bytes", "2M")
    assert "note (262144 to 524288 B): the expected curve is not fitted under 1 MiB" in r.stdout
    rows = json.loads(ok(h100, "--min-bytes", "256K", "--max-bytes", "2M", "--json").stdout)
    assert [(x["size_bytes"], x["fitted"]) for x in rows["rows"]] == [
        (262144, False),
        (524288, False),
        (1048576, True),
        (2097152, True),
    ]
    assert "not fitted" not in ok(h100, "--min-bytes", "1M", "--max-bytes", "2M").stdout


def test_compare_says_where_a_run_beats_the_ceiling(h100):
    # the log's sendrecv runs at 14.77-15.23 GB/s from 32 MiB on, over a ceiling of 13.86-14.00
    # (one channel per peer at NCCL's 14 GB/s network budget): every one of its 10 sizes is
    # more than 2% above, the most 15.20 / 13.93 = 109% at 64 MiB
    log = real_file(*LOG)
    r = ok(h100, "--compare", log, "--op", "sendrecv")
    assert "sendrecv: measured above the ceiling at 10 sizes (up to 109% of it, 67108864 B)" in (
        r.stdout
    )
    r = ok(h100, "--compare", log, "--op", "all_gather")
    assert "above the ceiling" not in r.stdout


def test_compare_without_a_fabric_uses_the_default_h100_cluster(h100):
    # The default cluster is the example's (10 servers of 8 H100, 8 x 400G): the comparison
    # must be the same, model column for model column.
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    given = json.loads(ok(h100, "--compare", log, "--op", "all_reduce", "--json").stdout)
    r = ok("--compare", log, "--op", "all_reduce", "--json")
    assert "no FABRIC given: holding the log against 10 H100 server(s)" in r.stderr
    default = json.loads(r.stdout)
    assert [row["predicted_busbw_GBps"] for row in default[0]["rows"]] == [
        row["predicted_busbw_GBps"] for row in given[0]["rows"]
    ]
    user_error(run(), "give a FABRIC.json")


def test_compare_pair_says_far_below(h100):
    log = real_file(
        "nccl_tests_logs", "xxrjun_cluster00_pairwise", "nccl_N2_G8_cnode2-001_cnode2-002.log"
    )
    r = ok(h100, "--compare", log, "--op", "alltoall")
    assert "alltoall: FAR BELOW the model" in r.stdout


def test_failed_log_is_one_line(h100):
    log = real_file(
        "nccl_tests_logs",
        "xxrjun_cluster00_pairwise",
        "nccl_N2_G8_cnode2-002_cnode2-008.FAILED.log",
    )
    user_error(
        run(h100, "--compare", log), "FAILED.log:", "alltoall_perf", "failed", "NCCL failure"
    )


def test_compare_of_one_op_reads_a_log_whose_later_test_failed(small, tmp_path):
    # an all_reduce test (lines 1-8) then an all_gather test that failed (line 10: the OOM
    # killer or a lost peer): --op all_reduce compares the all_reduce rows and warns of the
    # failed test once; without --op, or with --op all_gather, the log is refused for it
    failed = (
        "# Collective test starting: all_gather_perf\n"
        "h1: Test NCCL failure common.cu:1279 'remote process exited'\n"
    )
    log = tmp_path / "later_failed.log"
    log.write_text(_nccl_tests_log([(MIB, "float", "sum", 100.0)]) + failed)
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--arch", "hopper")
    r = ok(*args, "--op", "all_reduce", "--json")
    assert [row["size_bytes"] for row in json.loads(r.stdout)[0]["rows"]] == [MIB]
    assert r.stderr.splitlines() == [
        f"topo: warning: {log}:10: test all_gather_perf (started line 9) failed: Test NCCL "
        "failure common.cu:1279 'remote process exited'; no results: the test is left out "
        "(not all_reduce)"
    ]
    for more in ((), ("--op", "all_gather")):
        user_error(run(*args, *more), f"{log}:10: test all_gather_perf", "failed")


def test_bad_input(small, tmp_path):
    user_error(run(small, "--fit"), "--fit needs --compare")
    user_error(run(small, "--max-bytes", "8X"), "--max-bytes must be a byte count", "'8X'")
    # a thousand digits: refused before converting them
    user_error(run(small, "--max-bytes", "9" * 401), "--max-bytes must be at most", "1 TiB")
    # ASCII digits only (int() would read Arabic-Indic ones); the suffixes are named
    user_error(run(small, "--max-bytes", "١٠٠"), "--max-bytes must be a byte count")
    user_error(run(small, "--max-bytes", "8P"), "suffixes K, M, G, T: powers of 1024", "'8P'")
    user_error(
        run(small, "--min-bytes", "16G", "--max-bytes", "8G"),
        "--min-bytes 17,179,869,184 exceeds --max-bytes 8,589,934,592",
    )
    user_error(run(small, "--gpus", 12), "--gpus 12 must be a multiple of --gpus-per-node 8")
    user_error(run(small, "--gpus", 64), "needs 8 servers; the fabric has 2")
    user_error(run(small, "--min-bytes", "2G", "--max-bytes", "1G"), "exceeds --max-bytes")
    user_error(run(small, "--datatype", "float8"), "unknown data type 'float8'")
    bad = tmp_path / "c.toml"
    bad.write_text("[model]\narch = 'pascal'\n")
    user_error(run(small, "--constants", bad), "c.toml", "model.arch must be one of")
    log = tmp_path / "one.log"
    log.write_text(
        "# Collective test starting: all_gather_perf\n"
        "#  Rank  0 Group  0 Pid 1 on h1 device  0 [0000:1b:00] NVIDIA H100\n"
        "#  Rank  1 Group  0 Pid 2 on h1 device  1 [0000:1b:00] NVIDIA H100\n"
        "  1024  128  float  none  -1  10.00  0.10  0.05  0  9.00  0.11  0.06  0\n"
        "# Avg bus bandwidth    : 0.055 \n"
    )
    user_error(
        run(small, "--compare", log, "--op", "alltoall"), "no alltoall_perf test", "all_gather"
    )


def test_compare_refuses_a_size_other_than_the_logs(h100):
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    user_error(run(h100, "--compare", log, "--gpus", 16), "--gpus 16 differs from the 80 ranks")


def test_sendrecv_on_a_healthy_log_is_not_called_a_fault(h100):
    # NCCL's send/recv runs few channels per peer across servers (1 at 80 ranks: 14 GB/s); the
    # model follows it, so the healthy ten-node log (15.2 GB/s) agrees and is not FAR BELOW.
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    d = json.loads(ok(h100, "--compare", log, "--op", "sendrecv", "--json").stdout)[0]
    assert d["far_below"] is False
    assert d["verdict"].startswith("agrees with the model")


def test_byte_counts_as_nccl_tests_reads_them_and_their_ib_forms():
    from topo.commands.collective import parse_size

    assert [parse_size(t, "-e") for t in ("8", "32M", "8G", "8GB", "8GiB", "8gib", "1 K")] == [
        8,
        32 << 20,
        8 << 30,
        8 << 30,
        8 << 30,
        8 << 30,
        1024,
    ]


TIB = 1024**4  # 1,099,511,627,776 B


def test_sizes_above_1_tib_are_refused_naming_the_option_and_the_limit(small):
    # nccl-tests caps -e at half a GPU's memory; 1 TiB is past any GPU. 4 EB (4e18 B) and
    # 2 TiB were swept without a word.
    limit = f"must be at most {TIB:,} bytes (1 TiB: nccl-tests caps -e at half a GPU's memory"
    for opt, text in [
        ("--max-bytes", "4000000000000000000"),
        ("--max-bytes", "2T"),
        ("--max-bytes", str(TIB + 1)),
        ("--min-bytes", "1025G"),
    ]:
        line = user_error(run(small, opt, text), f"{opt} {limit}", f"got {text!r}")
        assert line.endswith(f"and no GPU has 2 TiB), got {text!r}")
    # the limit itself is a size nccl-tests could be asked for: accepted
    d = json.loads(ok(small, "--min-bytes", "1T", "--max-bytes", "1T", "--json").stdout)
    assert d["rows"][0]["size_bytes"] == TIB


def test_zero_and_negative_sizes_are_refused(small):
    user_error(run(small, "--min-bytes", "0"), "--min-bytes must be >= 1 byte, got '0'")
    user_error(run(small, "--max-bytes", "0K"), "--max-bytes must be >= 1 byte, got '0K'")
    user_error(run(small, "--min-bytes", "-8"), "--min-bytes must be a byte count", "'-8'")


def test_the_library_refuses_a_sweep_above_1_tib(small):
    from topo.collective import collective_table
    from topo.errors import TopoError
    from topo.fabric import load

    G = load(small)
    with pytest.raises(TopoError, match=rf"^max_bytes must be at most {TIB:,} bytes \(1 TiB"):
        collective_table(G, "all_reduce", min_bytes=8, max_bytes=TIB * 2)
    with pytest.raises(TopoError, match=r"^min_bytes must be at most .* got 2,199,023,255,552$"):
        collective_table(G, "all_reduce", min_bytes=TIB * 2, max_bytes=TIB * 4)


def test_a_4301_digit_constant_is_refused_at_its_line(small, tmp_path):
    # tomllib raised a plain ValueError (Python's 4,300-digit limit on int()): a traceback.
    # The constants file now goes through the guarded TOML reader of the other TOML files.
    bad = tmp_path / "c.toml"
    bad.write_text("[model]\narch = 'hopper'\n[expected]\nlaunch_us = " + "9" * 4301 + "\n")
    want = (
        f"topo: error: {bad}:4: a number of 4,301 digits: numbers in input files have at most "
        "100 digits"
    )
    assert user_error(run(small, "--constants", bad)) == want
    log = tmp_path / "one.log"
    log.write_text("# Collective test starting: all_gather_perf\n  " + "9" * 4301 + "\n")
    assert user_error(run(small, "--calibrate", log, "--constants", bad)) == want


def _nineteen_ranks(tmp_path):
    """An all_reduce of 19 ranks, 8 + 8 + 3 on hosts a, b, c (rank lines 2-20): 1 MiB in
    100 µs is algbw 1048576 / 100 / 1e3 = 10.49 GB/s, busbw x 2 x 18 / 19 = 19.87 GB/s."""
    hosts = ["a"] * 8 + ["b"] * 8 + ["c"] * 3
    lines = ["# Collective test starting: all_reduce_perf"] + [
        f"#  Rank {i:2d} Group  0 Pid {100 + i} on {h} device {i % 8:2d} [0000:1b:00] "
        "NVIDIA H100 80GB HBM3"
        for i, h in enumerate(hosts)
    ]
    lines.append(
        "     1048576        262144     float     sum      -1   100.00   10.49   19.87      0"
        "   100.00   10.49   19.87      0"
    )
    lines.append("# Avg bus bandwidth    : 19.87")
    log = tmp_path / "r19.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_sizes_the_user_did_not_give_are_said_to_come_from_the_log(small, tmp_path):
    # It said "--gpus 19 must be a multiple of --gpus-per-node 8" when neither was given: 19
    # came from the log's rank lines, 8 from the fabric's servers.
    log = _nineteen_ranks(tmp_path)
    refusal = f"topo: error: {log}: --gpus 19 must be a multiple of --gpus-per-node 8"
    from_log = (
        "--gpus not given: 19 is the ranks of the log's all_reduce_perf test, its '#  Rank' "
        "lines 2-20"
    )
    for flag in ("--compare", "--calibrate"):
        assert user_error(run(small, flag, log)) == (
            f"{refusal} ({from_log}; --gpus-per-node not given: the GPUs of the fabric's "
            "servers, the log's 3 hosts holding unequal ranks)"
        )
    line = user_error(run(small, "--compare", log, "--gpus-per-node", 8))
    assert line == f"{refusal} ({from_log})"
    line = user_error(run(small, "--compare", log, "--gpus", 19, "--gpus-per-node", 8))
    assert line == "topo: error: --gpus 19 must be a multiple of --gpus-per-node 8"


def test_an_implausible_row_is_left_out_with_one_warning(small, tmp_path):
    # busbw 1e30 GB/s was printed with a ratio of 2.5e27; a 32 MiB row timed at 0.001 µs
    # made --fit report millions of GB/s per GPU. 8 ranks on one host: 32 MiB in 300.0 µs
    # is algbw 33554432 / 300 / 1e3 = 111.85 GB/s, busbw x 1.75 = 195.73 GB/s; 64 MiB in
    # 600.0 µs and 128 MiB in 1200.0 µs the same.
    head = ["# Collective test starting: all_reduce_perf"] + [
        f"#  Rank {i:2d} Group  0 Pid {100 + i} on h1 device {i:2d} [0000:1b:00] NVIDIA H100"
        for i in range(8)
    ]
    row = "  {:>10}  {:>12}     float     sum      -1  {:>7}  111.85  {:>6}      0"
    good = [
        row.format(33554432, 8388608, "300.0", "195.73"),
        row.format(67108864, 16777216, "600.0", "195.73"),
    ]
    for bad, why in [
        (
            row.format(134217728, 33554432, "1200.0", "1e30"),
            "busbw 1e+30 GB/s is not from 0 to 1e+06 GB/s",
        ),
        (
            row.format(134217728, 33554432, "0.001", "195.73"),
            "algbw 111.85 GB/s is not size / time = 134217728 B / 0.001 µs = 1.342e+08 GB/s",
        ),
    ]:
        log = tmp_path / "x.log"
        log.write_text("\n".join([*head, *good, bad, "# Avg bus bandwidth    : 195.73"]) + "\n")
        r = ok(small, "--compare", log, "--fit", "--json", "--arch", "hopper")
        assert r.stderr.strip().splitlines() == [
            f"topo: warning: {log}:12: all_reduce_perf row of 134217728 B left out: {why}"
        ]
        (cmp,) = json.loads(r.stdout)
        assert [row["size_bytes"] for row in cmp["rows"]] == [33554432, 67108864]
        # both rows left are 111.85 GB/s: the fit's busbw is 111.85 x 1.75 = 195.7 GB/s
        assert cmp["fit"]["points"] == 2
        assert cmp["fit"]["busbw_GBps"] == pytest.approx(195.73, abs=0.01)
    # a refusal stays one line: the warning is said only once the comparison stands
    line = user_error(run(small, "--compare", log, "--gpus", 16, "--arch", "hopper"))
    assert line == (
        f"topo: error: {log}: --gpus 16 differs from the 8 ranks of its all_reduce_perf test: "
        "a log is compared with the model at its own size"
    )


def test_compare_reads_a_json_report(tmp_path):
    """The same rows as a -J report (nccl-tests util.cu keys) compare as the text log does."""
    from topo.formats import read_nccl_tests

    log = real_file(*LOG)
    (t,) = [x for x in read_nccl_tests(log) if x.op == "alltoall"]
    doc = {
        "version": 3,
        "args": ["./build/alltoall_perf", "-b", "32M"],
        "nccl_version": 22902,
        "devices": [
            {"rank": i, "hostname": h} for i, h in enumerate(h for h in t.hosts for _ in range(8))
        ],  # fmt: skip
        "results": [
            {
                "size": r.size_bytes,
                "count": r.count,
                "type": r.type,
                "redop": r.redop,
                "root": "    -1",
                "out_of_place": {
                    "time": r.time_us,
                    "alg_bw": r.algbw_GBps,
                    "bus_bw": r.busbw_GBps,
                    "nwrong": 0,
                },
                "in_place": {
                    "time": r.inplace_time_us,
                    "alg_bw": r.inplace_algbw_GBps,
                    "bus_bw": r.inplace_busbw_GBps,
                    "nwrong": 0,
                },
            }  # fmt: skip
            for r in t.rows
        ],
    }
    rep = tmp_path / "a2a.json"
    rep.write_text(json.dumps(doc))
    G = build("ft2", switch_ports=16, gpus=80, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)
    fab = tmp_path / "h100.json"
    save(G, fab)
    a = json.loads(run(fab, "--compare", rep, "--json").stdout)
    b = json.loads(run(fab, "--compare", log, "--op", "alltoall", "--json").stdout)
    assert a[0]["rows"] == b[0]["rows"] and not math.isnan(a[0]["median_ratio"])


def _nccl_tests_log(
    rows: list[tuple[int, str, str, float]],
    ranks: int = 16,
    inplace: dict[int, float] | None = None,
) -> str:
    """An all_reduce_perf log of ``(size B, type, redop, time µs)`` rows, algbw and busbw as
    nccl-tests computes them (size / time; x 2 (n - 1) / n); the in-place columns the same,
    their time ``inplace[size]`` times the out-of-place one where given."""
    width = {"float": 4, "bfloat16": 2}
    lines = [
        "# Collective test starting: all_reduce_perf",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
    ]
    for size, dtype, redop, t in rows:
        alg = size / t / 1e3
        bus = alg * 2 * (ranks - 1) / ranks
        cells = f"{t:8.1f} {alg:7.2f} {bus:7.2f}       0"
        ti = t * (inplace or {}).get(size, 1.0)
        ip = f"{ti:8.1f} {size / ti / 1e3:7.2f} {size / ti / 1e3 * 2 * (ranks - 1) / ranks:7.2f}"
        lines.append(f"{size:12d} {size // width[dtype]:12d} {dtype:>8s} {redop:>6s}    -1 "
                     f"{cells} {ip}       0")  # fmt: skip
    tail = ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#",
            "# Collective test concluded: all_reduce_perf", ""]  # fmt: skip
    return "\n".join(lines + tail)


def test_compare_shows_repeated_runs_once_with_their_median(small, tmp_path):
    # nccl-tests -N 3 -d float,bfloat16: each (size, type) three times; the table shows each
    # once with the median of its three times (120 of 100, 120, 500 µs), the runs counted and a
    # type column; --json keeps every row with its type and reduction
    runs = (100.0, 500.0, 120.0)
    rows = [(s, d, "sum", t * s / MIB) for t in runs for s in (MIB, 2 * MIB)
            for d in ("float", "bfloat16")]  # fmt: skip
    log = tmp_path / "runs.log"
    log.write_text(_nccl_tests_log(rows))
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8)
    data = json.loads(ok(*args, "--json").stdout)[0]
    assert [(r["size_bytes"], r["type"], r["redop"]) for r in data["rows"]] == [
        (s, d, "sum") for _ in runs for s in (MIB, 2 * MIB) for d in ("float", "bfloat16")
    ]
    expected = {(r["size_bytes"], r["type"]): r["predicted_time_us"] for r in data["rows"]}
    text = ok(*args).stdout
    body = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert len(body) == 4
    for cells in body:
        size, dtype, n, time_us = int(cells[0]), cells[1], int(cells[2]), float(cells[3])
        assert (dtype, n, time_us) == (dtype, 3, 120.0 * size / MIB)
        assert float(cells[7]) == pytest.approx(expected[(size, dtype)] / time_us, abs=0.006)
    assert "redop" not in text and "the median of their runs' times and busbw" in text
    # one run of each: no runs column, no caption
    log.write_text(_nccl_tests_log(rows[:4]))
    text = ok(*args).stdout
    assert " runs " not in text and "median" not in text and " type " in text



def _one_mib_row(t: float, dtype: str = "float", size: int = MIB) -> Any:
    """A row of ``size`` (1 MiB) measured in ``t`` µs, predicted 60 µs with a ceiling of 50 µs
    (busbw = size / time: a factor of 1)."""
    from topo.collective.compare import CompareRow

    return CompareRow(size_bytes=size, measured_time_us=t, predicted_time_us=60.0,
                      measured_busbw_GBps=size / t / 1e3, predicted_busbw_GBps=size / 60e3,
                      ratio=60.0 / t, algorithm="ring", protocol="LL128", bound="",
                      ceiling_ratio=50.0 / t, type=dtype, redop="sum")  # fmt: skip


def test_median_rows_stand_for_repeated_runs():
    # three runs of one (size, type, reduction) at 100, 500 and 120 µs, predicted 60 µs with a
    # ceiling of 50 µs: one row at the median 120 µs, ratio 60 / 120, ceiling ratio 50 / 120;
    # a second type of the same size stays its own row
    from topo.collective.compare import median_rows

    row = _one_mib_row
    shown = median_rows([row(100.0), row(500.0), row(120.0), row(90.0, "half")])
    assert [(r.type, n) for r, n in shown] == [("float", 3), ("half", 1)]
    r = shown[0][0]
    assert r.measured_time_us == 120.0 and r.measured_busbw_GBps == pytest.approx(MIB / 120e3)
    assert r.ratio == pytest.approx(0.5) and r.ceiling_ratio == pytest.approx(50 / 120)
    assert shown[1][0] == row(90.0, "half")


def test_median_row_of_an_even_number_of_runs_keeps_busbw_and_ratio_together():
    # two runs of 1 MiB at 100 and 300 us, predicted 60 us: the median time is 200 us, whose
    # busbw is MIB / 200e3 GB/s (not the mean of MIB / 100e3 and MIB / 300e3, 4/3 of it), so
    # measured / expected busbw is the ratio shown, 60 / 200
    from topo.collective.compare import median_rows

    ((r, n),) = median_rows([_one_mib_row(100.0), _one_mib_row(300.0)])
    assert (n, r.measured_time_us) == (2, 200.0)
    assert r.measured_busbw_GBps == pytest.approx(MIB / 200e3)
    assert r.ratio == pytest.approx(0.3)
    assert r.measured_busbw_GBps / r.predicted_busbw_GBps == pytest.approx(r.ratio)


def test_plot_of_repeated_runs_and_types_draws_each_size_once_in_increasing_size():
    # two runs of 2 MiB then 1 MiB (float at 100 and 300 us, half at 200 us): the measured
    # curves are one per type, sizes increasing, each at the median time's busbw (float:
    # size / 200 us); the model (size / 60 us, the same for both types) is drawn once
    from topo.collective.compare import Comparison
    from topo.collective.report import _busbw_data

    rows = [_one_mib_row(t, d, s) for t, d in ((100.0, "float"), (300.0, "float"), (200.0, "half"))
            for s in (2 * MIB, MIB)]  # fmt: skip
    cmp = Comparison(op="all_reduce", gpus=16, nodes=2, gpus_per_node=8, nccl_version="",
                     rows=rows, median_ratio=0.3, ratio_sizes="every size", verdict="",
                     far_below=True)  # fmt: skip
    curves = {name: (x, y) for name, x, y in _busbw_data(None, [cmp])}
    sizes = [MIB, 2 * MIB]
    assert curves == {
        "all_reduce: model (16 GPUs)": (sizes, [pytest.approx(s / 60e3) for s in sizes]),
        "all_reduce: measured (float sum)": (sizes, [pytest.approx(s / 200e3) for s in sizes]),
        "all_reduce: measured (half sum)": (sizes, [pytest.approx(s / 200e3) for s in sizes]),
    }


def test_compare_says_where_repeated_runs_disagree(small, tmp_path):
    # three runs at 100, 500 and 120 us per MiB: the table shows the median, 120; a line says
    # that 2 rows hide a run more than 1.25x off it, the first of the furthest (both 500 / 120
    # = 4.2x) with its range; runs within 1.25x of their median (100, 110, 120) say nothing
    rows = [(s, "float", "sum", t * s / MIB) for t in (100.0, 500.0, 120.0) for s in (MIB, 2 * MIB)]
    log = tmp_path / "runs.log"
    log.write_text(_nccl_tests_log(rows))
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8)
    said = [line for line in ok(*args).stdout.splitlines() if "runs disagree" in line]
    assert said == [
        "all_reduce: runs disagree in 2 rows of the table (a run more than 1.25x off the median "
        "shown); furthest: 1048576 B float sum, 3 runs from 100.0 to 500.0 us, median 120.0 us "
        "(--json has every run)"
    ]
    rows = [(s, "float", "sum", t * s / MIB) for t in (100.0, 110.0, 120.0) for s in (MIB, 2 * MIB)]
    log.write_text(_nccl_tests_log(rows))
    assert "disagree" not in ok(*args).stdout


def test_compare_says_where_a_size_took_longer_than_a_larger_one(small, tmp_path):
    # nccl-tests issue 309's 8-server all_reduce at 4, 8, 16 and 32 MiB: 203.8, 1272.4, 378.1
    # and 509.6 us. 8 MiB took 1272.4 / 378.1 = 3.4x the time of 16 MiB (and 2.5x 32 MiB's):
    # the one row said; 4 MiB (203.8 us, under every larger size's time) is not. Within 1.25x
    # of a larger size (a flat launch floor: 1 MiB 40 us, 2 MiB 38 us) says nothing. Only the
    # measured times enter: the rows are put on the 16-GPU fixture.
    rows = [(4 * MIB, 203.8), (8 * MIB, 1272.4), (16 * MIB, 378.1), (32 * MIB, 509.6)]
    log = tmp_path / "glitch.log"
    log.write_text(_nccl_tests_log([(s, "float", "sum", t) for s, t in rows]))
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--arch", "hopper")
    said = [line for line in ok(*args).stdout.splitlines() if "larger size" in line]
    assert said == [
        "all_reduce: 1 row of the table took more than 1.25x the time of a larger size; "
        "furthest: 8388608 B float sum, 1272.4 us against 16777216 B's 378.1 us. One slow run "
        "(nccl-tests -N repeats each size), or an algorithm or protocol NCCL's tuner picks "
        "there that is slower than the larger size's (NCCL_ALGO / NCCL_PROTO forced tell them "
        "apart); the row says nothing of the fabric (--json: slower_than_larger)"
    ]
    (c,) = json.loads(ok(*args, "--json").stdout)
    assert c["slower_than_larger"] == [
        {"size_bytes": 8 * MIB, "type": "float", "redop": "sum", "time_us": 1272.4,
         "larger_size_bytes": 16 * MIB, "larger_time_us": 378.1}
    ]  # fmt: skip
    log.write_text(_nccl_tests_log([(MIB, "float", "sum", 40.0), (2 * MIB, "float", "sum", 38.0)]))
    assert "larger size" not in ok(*args).stdout
    assert json.loads(ok(*args, "--json").stdout)[0]["slower_than_larger"] == []


def test_compare_says_a_slow_median_of_three_runs_is_not_one_slow_run(small, tmp_path):
    # nccl-tests -N 3: 8 MiB in 1272.4, 1300.0 and 380.0 us (median 1272.4), 16 MiB in 378.1 us
    # each time: the median took 1272.4 / 378.1 = 3.4x the larger size's, and two of the three
    # runs did, so it is not one slow run (the line says so, and drops -N's advice); of two
    # runs (median 826.2, their mean) one slow run may be all it is: the line as for one run
    runs = {8 * MIB: (1272.4, 1300.0, 380.0), 16 * MIB: (378.1, 378.1, 378.1)}
    rows = [(s, "float", "sum", runs[s][k]) for k in range(3) for s in runs]
    log = tmp_path / "glitch3.log"
    log.write_text(_nccl_tests_log(rows))
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--arch", "hopper")
    said = [line for line in ok(*args).stdout.splitlines() if "larger size" in line]
    assert said == [
        "all_reduce: 1 row of the table took more than 1.25x the time of a larger size; "
        "furthest: 8388608 B float sum, 1272.4 us against 16777216 B's 378.1 us, the median of "
        "its 3 runs, so not one slow run: an algorithm or protocol NCCL's tuner picks there "
        "that is slower than the larger size's (NCCL_ALGO / NCCL_PROTO forced tell them apart); "
        "the row says nothing of the fabric (--json: slower_than_larger)"
    ]
    log.write_text(_nccl_tests_log([r for r in rows if r[3] != 1300.0]))
    (line,) = [x for x in ok(*args).stdout.splitlines() if "larger size" in x]
    # (the rest of the line as test_compare_says_where_a_size_took_longer_than_a_larger_one's)
    assert "sum, 826.2 us against 16777216 B's 378.1 us. One slow run (nccl-tests -N" in line


@pytest.mark.parametrize(
    "verb", [("collective", "--compare"), ("collective", "--calibrate"), ("explain",)]
)
def test_a_log_of_only_0_byte_rows_is_refused_naming_the_file_and_line(small, tmp_path, verb):
    # nccl-tests prints 0 B rows where -b is under ranks x a word: nothing moved in any row
    log = tmp_path / "tiny.log"
    log.write_text(_nccl_tests_log([(0, "float", "sum", 5.0), (0, "float", "sum", 5.0)]))
    args = [*verb, small, log] if verb == ("explain",) else [*verb[:1], small, verb[1], log]
    line = user_error(runner.invoke(app, [str(a) for a in args]))
    assert line == (
        f"topo: error: {log}:1: the all_reduce_perf test has no row of more than 0 bytes: "
        "nothing moved; nccl-tests prints 0 B where -b is under the ranks x a word of the data "
        "type: rerun with a larger -b"
    )


def test_a_test_of_only_0_byte_rows_is_left_out_with_a_warning(small, tmp_path):
    # two tests: the first all 0 B (line 1), the second a 1 MiB row: the second is compared,
    # the first said left out
    log = tmp_path / "two.log"
    first = _nccl_tests_log([(0, "float", "sum", 5.0)])
    log.write_text(first + _nccl_tests_log([(MIB, "float", "sum", 100.0)]))
    r = ok(small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--json", "--arch=hopper")
    assert [c["rows"][0]["size_bytes"] for c in json.loads(r.stdout)] == [MIB]
    assert r.stderr.splitlines() == [
        f"topo: warning: {log}:1: all_reduce_perf test left out: it has no row of more than 0 "
        "bytes"
    ]



def test_a_log_listing_no_ranks_is_refused_saying_so(small, tmp_path):
    # no '#  Rank' lines: --compare asks for --gpus without calling the missing ranks "None";
    # --calibrate, which takes no --gpus, names the file and the test's line
    log = tmp_path / "bare.log"
    log.write_text(_nccl_tests_log([(MIB, "float", "sum", 100.0)]))
    line = user_error(run(small, "--compare", log, "--gpus-per-node", 8))
    assert "None" not in line and line.startswith(f"topo: error: {log}: ")
    assert "--gpus not given, and the log's all_reduce_perf test lists no ranks" in line
    assert user_error(run(small, "--calibrate", log)) == (
        f"topo: error: {log}:1: the all_reduce_perf test lists no ranks (no '#  Rank' lines, "
        "devices or Inspector n_ranks): --calibrate fits each test at its own ranks and "
        "servers, so it cannot calibrate on it"
    )


def test_tests_of_one_op_in_a_log_are_told_apart_by_their_line(small, tmp_path):
    # two all_reduce_perf tests appended (each 8 lines: 3 of header, 1 row, 4 of footer): the
    # titles and --json name the lines they start at, 1 and 9; explain's titles too
    log = tmp_path / "appended.log"
    log.write_text(_nccl_tests_log([(MIB, "float", "sum", 100.0)]) * 2)
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--arch", "hopper")
    titles = [x for x in ok(*args).stdout.splitlines() if "against the model" in x]
    assert [x.split(" against")[0] for x in titles] == [
        "all_reduce: appended.log (test at line 1)",
        "all_reduce: appended.log (test at line 9)",
    ]
    assert [c["line"] for c in json.loads(ok(*args, "--json").stdout)] == [1, 9]
    r = runner.invoke(app, ["explain", *map(str, (small, log, "--gpus", 16, "--gpus-per-node", 8))])
    assert r.exit_code == 0, r.output
    said = [x.split(" against")[0] for x in r.stdout.splitlines() if "against the design" in x]
    assert said == [
        "all_reduce: appended.log (test at line 1)",
        "all_reduce: appended.log (test at line 9)",
    ]


def test_fit_of_repeated_runs_counts_rows_and_sizes_apart(small, tmp_path):
    # three runs of 1 and 2 MiB: the fit takes 6 rows of 2 sizes, and says so
    rows = [(s, "float", "sum", t * s / MIB) for t in (100.0, 110.0, 120.0) for s in (MIB, 2 * MIB)]
    log = tmp_path / "runs.log"
    log.write_text(_nccl_tests_log(rows))
    r = ok(small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--fit")
    assert "fit over 6 rows (2 sizes): " in r.stdout


def test_one_fast_run_among_several_is_not_a_size_above_the_ceiling(small, tmp_path):
    # the ceiling's time at 32 MiB, C, read off one run; five runs of which one is 1.5x faster
    # than C: the size's median run (2 C) is under the ceiling, so no size is above it; three
    # runs at C / 1.5 of five put the median above it, and the size is listed
    size, log = 32 * MIB, tmp_path / "runs.log"
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8)
    log.write_text(_nccl_tests_log([(size, "float", "sum", 1000.0)]))
    row = json.loads(ok(*args, "--json").stdout)[0]["rows"][0]
    c = row["ceiling_ratio"] * row["measured_time_us"]
    times = [2 * c, 2 * c, c / 1.5, 2 * c, 2 * c]
    log.write_text(_nccl_tests_log([(size, "float", "sum", t) for t in times]))
    assert json.loads(ok(*args, "--json").stdout)[0]["above_ceiling"] == []
    assert "above the ceiling" not in ok(*args).stdout
    times = [c / 1.5, 2 * c, c / 1.5, 2 * c, c / 1.5]
    log.write_text(_nccl_tests_log([(size, "float", "sum", t) for t in times]))
    assert json.loads(ok(*args, "--json").stdout)[0]["above_ceiling"] == [size]
    assert "measured above the ceiling at 1 size (up to 150% of it" in ok(*args).stdout


def test_compare_says_where_in_place_runs_differ_from_out_of_place(small, tmp_path):
    # the table reads the out-of-place columns; at 2 MiB the in-place time is 3x (300 against
    # 100 µs), at 1 MiB the same: one line names the 2 MiB row, and --json rows carry the
    # in-place time; a log whose columns agree gets no such line
    log = tmp_path / "inplace.log"
    rows = [(MIB, "float", "sum", 100.0), (2 * MIB, "float", "sum", 100.0)]
    log.write_text(_nccl_tests_log(rows, inplace={2 * MIB: 3.0}))
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8)
    assert (
        "all_reduce: in-place runs more than 1.25x off the out-of-place ones at 1 row of the "
        "table (the table and verdicts read out-of-place); furthest: 2097152 B float sum, in-place "
        "300.0 us, slower than out-of-place 100.0 us" in ok(*args).stdout
    )
    data = json.loads(ok(*args, "--json").stdout)[0]
    assert [r["inplace_time_us"] for r in data["rows"]] == [100.0, 300.0]
    assert [r["measured_time_us"] for r in data["rows"]] == [100.0, 100.0]
    log.write_text(_nccl_tests_log(rows))
    assert "in-place" not in ok(*args).stdout


def _cut_log(tmp_path: Path) -> tuple[Path, str]:
    """An all_reduce_perf log of 16 ranks (lines 2-17, h0 and h1) cut off after its rows of
    1 and 2 MiB (lines 20 and 21): no Avg line. And its warning line."""
    ranks = [
        f"#  Rank {i:2d} Group  0 Pid {100 + i} on h{i // 8} device {i % 8} [0000:1b:00] "
        "NVIDIA H100"
        for i in range(16)
    ]
    lines = _nccl_tests_log([(MIB, "float", "sum", 100.0), (2 * MIB, "float", "sum", 150.0)])
    first, *rest = lines.splitlines()
    log = tmp_path / "cut.log"
    log.write_text("\n".join([first, *ranks, *rest[:4]]) + "\n")
    return log, (
        f"topo: warning: {log}: test all_reduce_perf (started line 1) ends at line 21 without "
        "its 'Avg bus bandwidth' line: the log was cut off; its 2 rows are used"
    )


def test_compare_reads_a_cut_log_with_one_warning(small, tmp_path):
    log, warning = _cut_log(tmp_path)
    r = ok(small, "--compare", log, "--arch=hopper")
    assert r.stderr.splitlines() == [warning]
    body = [line.split() for line in r.stdout.splitlines() if line.strip()[:1].isdigit()]
    # 1 MiB in 100.0 µs, 2 MiB in 150.0 µs, as the log prints them
    assert [(int(c[0]), float(c[1])) for c in body] == [(MIB, 100.0), (2 * MIB, 150.0)]
    data = json.loads(ok(small, "--compare", log, "--json").stdout)
    assert [row["size_bytes"] for row in data[0]["rows"]] == [MIB, 2 * MIB]


@pytest.mark.parametrize(
    "verb", [("collective", "--compare"), ("collective", "--calibrate"), ("explain",)]
)
def test_every_verb_that_reads_a_cut_log_warns_once(small, tmp_path, verb):
    log, warning = _cut_log(tmp_path)
    args = [*verb, small, log] if verb == ("explain",) else [*verb[:1], small, verb[1], log]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    # (the fabric's assumed GPU model is said too: a line of its own)
    assert [line for line in r.stderr.splitlines() if str(log) in line] == [warning]


def test_a_test_left_out_of_a_cut_log_is_said_for_its_op(small, tmp_path):
    # two tests: all_reduce complete (lines 1-8), all_gather started on line 9, no row
    log = tmp_path / "two.log"
    log.write_text(
        _nccl_tests_log([(MIB, "float", "sum", 100.0)]) + "# Collective test starting: "
        "all_gather_perf\n"
    )
    warning = (
        f"{log}: test all_gather_perf (started line 9) has no result rows: the log was cut "
        "off; the test is left out"
    )
    args = (small, "--compare", log, "--gpus", 16, "--gpus-per-node", 8, "--arch=hopper")
    assert ok(*args).stderr.splitlines() == [f"topo: warning: {warning}"]
    assert ok(*args, "--op", "all_reduce").stderr == ""
    assert user_error(run(*args, "--op", "all_gather")) == (
        f"topo: error: {log}: no all_gather_perf test in the log (it has all_reduce); "
        + warning.removeprefix(f"{log}: ")
    )


def test_compare_reads_the_ten_node_log_cut_at_line_216(tmp_path):
    # all_reduce and all_gather whole, reduce_scatter started on line 216 and cut: the two
    # compared, against the default H100 cluster of the log's 10 hosts, the third said
    cut = tmp_path / "cut216.log"
    cut.write_text("".join(real_file(*LOG).read_text().splitlines(keepends=True)[:216]))
    r = ok("--compare", cut)
    assert r.stderr.splitlines()[1:] == [
        f"topo: warning: {cut}: test reduce_scatter_perf (started line 216) has no result rows: "
        "the log was cut off; the test is left out"
    ]
    assert r.stderr.startswith("no FABRIC given: holding the log against 10 H100 server(s)")
    titles = [line.split(":")[0] for line in r.stdout.splitlines() if "against the model" in line]
    assert titles == ["all_reduce", "all_gather"]
