"""NCCL Inspector records (format v4.0) read as nccl-tests' tests: the median over calls and
ranks worked by hand, the whole-buffer size of all_gather, the ops left out, bad records.

The records are written as the plugin writes them (``inspector_json.cc``: one object per line,
``header``, ``metadata``, ``coll_perf``), with algbw and busbw computed as
``inspectorComputeOpBw`` does (traffic size / time; AllGather's traffic is the message times
n_ranks, its factor (n-1)/n; AllReduce's 2(n-1)/n; AlltoAll 0).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.errors import FormatError
from topo.formats import log_format, read_nccl_inspector, read_nccl_log

runner = CliRunner()


def record(
    coll: str,
    rank: int,
    time_us: int,
    msg: int,
    n: int = 4,
    nnodes: int = 2,
    sn: int = 1,
    host: str | None = None,
) -> dict:
    """One record as the plugin writes it."""
    traffic, factor = {
        "AllReduce": (msg, 2 * (n - 1) / n),
        "AllGather": (msg * n, (n - 1) / n),
        "ReduceScatter": (msg * n, (n - 1) / n),
        "Broadcast": (msg, 1.0),
        "All2All": (0, 0.0),
    }.get(coll, (msg, 1.0))
    alg = traffic / 1e9 / (time_us / 1e6)
    return {
        "header": {"id": f"0x7f8c496ae9f6{n:02x}", "comm_name": "DP", "rank": rank, "n_ranks": n,
                   "nnodes": nnodes},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "",
                     "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": 17480303,
                     "hostname": host or f"node{rank * nnodes // n}", "pid": 1639453 + rank},
        "coll_perf": {"coll": coll, "coll_sn": sn, "coll_msg_size_bytes": msg,
                      "coll_exec_time_us": time_us, "coll_timing_source": "kernel_gpu",
                      "coll_algobw_gbs": round(alg, 6), "coll_busbw_gbs": round(alg * factor, 6)},
    }  # fmt: skip


def write(tmp_path, records, name="inspector.log"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return p


MIB = 1 << 20
# AllGather of 1 MiB per rank on 4 ranks (2 nodes), 2 calls per rank: 8 times (µs)
TIMES = {(0, 1): 100, (0, 2): 160, (1, 1): 110, (1, 2): 150, (2, 1): 1000, (2, 2): 120,
         (3, 1): 130, (3, 2): 140}  # fmt: skip


def test_the_median_over_calls_and_ranks(tmp_path):
    recs = [record("AllGather", r, t, MIB, sn=sn) for (r, sn), t in TIMES.items()]
    (t,) = read_nccl_inspector(write(tmp_path, recs))
    assert (t.op, t.ranks, t.nodes, t.gpus_per_node, t.hosts) == (
        "all_gather",
        4,
        2,
        2,
        ["node0", "node1"],
    )
    (row,) = t.rows
    # sorted: 100 110 120 130 | 140 150 160 1000 -> (130 + 140) / 2; the 1000 µs straggler
    # moves the median by nothing
    assert row.time_us == 135.0
    # nccl-tests' size of an all_gather is the whole buffer: 4 ranks x 1 MiB
    assert row.size_bytes == 4 * 1048576 == 4194304
    assert row.algbw_GBps == pytest.approx(4194304 / 135e-6 / 1e9)  # 31.07 GB/s
    assert row.busbw_GBps == pytest.approx(4194304 / 135e-6 / 1e9 * 3 / 4)  # 23.30 GB/s
    assert (row.type, row.count, row.redop, row.root, row.inplace_time_us) == (
        "unknown",
        0,
        "none",
        -1,
        None,
    )
    assert row.line == 1 and t.line == 1
    assert t.avg_busbw_GBps == row.busbw_GBps


def test_sizes_and_ops_are_apart_and_sizes_sorted(tmp_path):
    recs = [
        record("AllReduce", 0, 400, 8 * MIB),  # line 1
        record("AllReduce", 1, 420, 8 * MIB),
        record("AllReduce", 2, 440, 8 * MIB),
        record("AllReduce", 0, 90, MIB, sn=2),  # line 4
        record("Broadcast", 0, 75, 2 * MIB),  # line 5
    ]
    ar, bc = read_nccl_inspector(write(tmp_path, recs))
    assert (ar.op, bc.op) == ("all_reduce", "broadcast")
    assert [(r.size_bytes, r.time_us, r.line) for r in ar.rows] == [
        (1048576, 90.0, 4),  # AllReduce's size is the message
        (8388608, 420.0, 1),  # the median of 400, 420, 440
    ]
    big = ar.rows[1]
    assert big.busbw_GBps == pytest.approx(8388608 / 420e-6 / 1e9 * 2 * 3 / 4)
    assert big.redop == "unknown"  # a reduction whose operator the plugin does not record
    assert bc.rows[0].busbw_GBps == pytest.approx(2097152 / 75e-6 / 1e9)  # factor 1
    assert ar.avg_busbw_GBps == pytest.approx(statistics.mean(r.busbw_GBps for r in ar.rows))


def test_communicators_of_other_sizes_are_other_tests(tmp_path):
    recs = [record("AllReduce", 0, 400, MIB), record("AllReduce", 0, 300, MIB, n=8, nnodes=1)]
    four, eight = read_nccl_inspector(write(tmp_path, recs))
    assert (four.ranks, four.nodes, eight.ranks, eight.nodes) == (4, 2, 8, 1)
    assert (four.rows[0].time_us, eight.rows[0].time_us) == (400.0, 300.0)


def test_a_call_written_twice_counts_once(tmp_path):
    recs = [record("AllReduce", 0, 100, MIB), record("AllReduce", 0, 100, MIB),
            record("AllReduce", 1, 400, MIB)]  # fmt: skip
    (t,) = read_nccl_inspector(write(tmp_path, recs))
    assert t.rows[0].time_us == 250.0  # (100 + 400) / 2, not the median of 100, 100, 400


def test_records_of_one_sequence_number_at_other_sizes_are_other_calls(tmp_path):
    recs = [record("AllReduce", 0, 100, MIB), record("AllReduce", 0, 300, 4 * MIB)]
    (t,) = read_nccl_inspector(write(tmp_path, recs))
    assert [(r.size_bytes, r.time_us) for r in t.rows] == [(1048576, 100.0), (4194304, 300.0)]


def test_alltoall_gets_nccl_tests_factor(tmp_path):
    # the plugin writes algbw = busbw = 0 for an AlltoAll; its message is one peer's share
    (t,) = read_nccl_inspector(write(tmp_path, [record("All2All", 0, 500, MIB)]))
    (row,) = t.rows
    assert (t.op, row.size_bytes) == ("alltoall", 4 * 1048576)
    assert row.busbw_GBps == pytest.approx(4194304 / 500e-6 / 1e9 * 3 / 4)


def test_point_to_point_and_unknown_collectives_are_left_out(tmp_path):
    p2p = record("AllReduce", 0, 100, MIB)
    p2p["p2p_perf"] = {"p2p": "Send", "p2p_sn": 1, "p2p_peer": 1, "p2p_msg_size_bytes": MIB}
    del p2p["coll_perf"]
    invalid = record("Invalid", 0, 100, MIB)
    (t,) = read_nccl_inspector(write(tmp_path, [p2p, invalid, record("AllReduce", 1, 70, MIB)]))
    assert (t.op, t.rows[0].time_us, t.line) == ("all_reduce", 70.0, 3)
    with pytest.raises(
        FormatError,
        match=r"inspector.log: no record of a collective topo models .*records found: "
        r"point-to-point \(p2p_perf\) \(1\), Invalid \(1\)$",
    ):
        read_nccl_inspector(write(tmp_path, [p2p, invalid]))


def test_pretty_printed_records_read_too(tmp_path):
    p = tmp_path / "pretty.json"
    p.write_text("\n".join(json.dumps(record("AllReduce", r, 100 + r, MIB), indent=2)
                           for r in range(3)))  # fmt: skip
    (t,) = read_nccl_inspector(p)
    assert t.rows[0].time_us == 101.0


def _bad(rec: dict, where: str, key: str, value) -> dict:
    rec[where][key] = value
    return rec


@pytest.mark.parametrize(
    ("line3", "match"),
    [
        ('{"header": ', r"inspector.log:3:12: not valid JSON: Expecting value$"),
        ("[1, 2]", r"inspector.log:3: a record must be a JSON object"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_exec_time_us", -5),
         r"inspector.log:3: coll_exec_time_us must be from 0 to 3.6e\+09, got -5$"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_exec_time_us", 0),
         r"inspector.log:3: coll_exec_time_us must be > 0, got 0$"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_exec_time_us", 1e300),
         r"inspector.log:3: coll_exec_time_us must be from 0 to 3.6e\+09"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_busbw_gbs", "nan"),
         r"inspector.log:3: coll_busbw_gbs must be a finite number, got 'nan'$"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_msg_size_bytes", 1 << 70),
         r"inspector.log:3: coll_msg_size_bytes must be from 1 to 9.22337e\+18"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_msg_size_bytes", 1.5),
         r"inspector.log:3: coll_msg_size_bytes must be a whole number, got 1.5$"),
        (_bad(record("AllReduce", 2, 9, MIB), "coll_perf", "coll_algobw_gbs", 1.0),
         r"inspector.log:3: coll_algobw_gbs 1 is not the 1,048,576 B this reader takes"),
        (_bad(record("AllReduce", 2, 9, MIB), "header", "rank", 4),
         r"inspector.log:3: rank must be from 0 to 3, got 4$"),
        (_bad(record("AllReduce", 2, 9, MIB), "header", "nnodes", 5),
         r"inspector.log:3: nnodes must be from 1 to 4, got 5$"),
        (_bad(record("AllReduce", 2, 9, MIB), "metadata", "inspector_output_format_version",
              "v3.0"), r"inspector.log:3: NCCL Inspector format version 'v3.0'; topo reads v4.0"),
        (_bad(record("AllReduce", 2, 9, MIB), "header", "n_ranks", True),
         r"inspector.log:3: n_ranks must be a whole number, got True$"),
        ('{"metadata": {"inspector_output_format_version": "v4.0"}}',
         r"inspector.log:3: a record has neither coll_perf nor p2p_perf"),
        ('{"n": ' + "7" * 150 + "}", r"inspector.log:3: a number of 150 digits"),
    ],
)  # fmt: skip
def test_bad_records_are_one_line_errors_with_the_line(tmp_path, line3, match):
    good = [json.dumps(record("AllReduce", r, 100, MIB)) for r in range(2)]
    bad = line3 if isinstance(line3, str) else json.dumps(line3)
    p = tmp_path / "inspector.log"
    p.write_text("\n".join([*good, bad, *good]) + "\n")
    with pytest.raises(FormatError, match=match) as e:
        read_nccl_inspector(p)
    assert "\n" not in str(e.value)


# -- format detection and the command line ---------------------------------------------------


def test_the_format_is_told_by_the_content(tmp_path):
    insp = write(tmp_path, [record("AllReduce", 0, 100, MIB)], name="run.json")
    assert log_format(insp) == "nccl-inspector"  # a .json name does not make it nccl-tests'
    text = tmp_path / "x.json"
    text.write_text(
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
    )
    assert log_format(text) == "nccl-tests"
    report = tmp_path / "r.txt"
    report.write_text('{"version": 3, "args": ["./build/all_reduce_perf"], "results": []}')
    assert log_format(report) == "nccl-tests-json"
    assert [t.op for t in read_nccl_log(insp)] == ["all_reduce"]
    # a .json name of none of the formats: the JSON reader says what is wrong with it
    odd = tmp_path / "odd.json"
    odd.write_text("hello\n")
    assert log_format(odd) == "nccl-tests-json"
    with pytest.raises(FormatError, match=r"odd.json:1:1: not valid JSON: Expecting value$"):
        read_nccl_log(odd)


@contextmanager
def pipe_of(text: str) -> Iterator[Path]:
    """``text`` behind a pipe's path, as bash's ``<(...)`` gives (/dev/fd/N, readable once)."""
    if not Path("/dev/fd").is_dir():
        pytest.skip("no /dev/fd")
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, text.encode()), os.close(w)))
    writer.start()
    try:
        yield Path(f"/dev/fd/{r}")
    finally:
        writer.join()
        os.close(r)


def test_a_log_given_as_a_pipe_is_read_whole(tmp_path):
    # the format was told from one read of the pipe and the reader read it again: empty,
    # "empty file (no '# Collective test starting' or table)"
    text = (
        "# Collective test starting: all_reduce_perf\n"
        "#  Rank  0 Group  0 Pid 1 on a device  0 [0000:1b:00] NVIDIA H100\n"
        "#  Rank  1 Group  0 Pid 2 on b device  0 [0000:1b:00] NVIDIA H100\n"
        "  1048576  262144  float  sum  -1  100.00  10.49  10.49  0  100.00  10.49  10.49  0\n"
        "# Avg bus bandwidth    : 10.49\n"
    )
    with pipe_of(text) as log:
        (t,) = read_nccl_log(log)
    assert (t.op, t.ranks, t.rows[0].size_bytes, t.rows[0].time_us) == (
        "all_reduce",
        2,
        1048576,
        100.0,
    )
    recs = [record("AllGather", r, t, MIB, sn=sn, host="node0") for (r, sn), t in TIMES.items()]
    with pipe_of("".join(json.dumps(r) + "\n" for r in recs)) as log:
        r = runner.invoke(app, ["collective", "--compare", str(log), "--json"])
    assert r.exit_code == 0, r.output
    (cmp,) = json.loads(r.stdout)
    assert (cmp["op"], cmp["rows"][0]["measured_time_us"]) == ("all_gather", 135.0)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("hello\nworld\n", r"other.log: not a measured collective log: expected nccl-tests' "
                           r"text output .*NCCL Inspector records"),
        ("  \n\n", r"other.log: empty file"),
    ],
)  # fmt: skip
def test_none_of_the_formats_is_an_error_naming_the_file(tmp_path, content, match):
    p = tmp_path / "other.log"
    p.write_text(content)
    with pytest.raises(FormatError, match=match):
        read_nccl_log(p)


def test_compare_reads_inspector_records(tmp_path):
    # only node0's ranks wrote this file: the default cluster has nnodes = 2 servers all the same
    recs = [record("AllGather", r, t, MIB, sn=sn, host="node0") for (r, sn), t in TIMES.items()]
    log = write(tmp_path, recs)
    r = runner.invoke(app, ["collective", "--compare", str(log), "--json"])
    assert r.exit_code == 0, r.output
    assert "holding the log against 2 H100 server(s)" in r.stderr
    (cmp,) = json.loads(r.stdout)
    assert (cmp["op"], cmp["gpus"], cmp["nodes"], cmp["gpus_per_node"]) == ("all_gather", 4, 2, 2)
    (row,) = cmp["rows"]
    assert (row["size_bytes"], row["measured_time_us"]) == (4194304, 135.0)
    assert row["measured_busbw_GBps"] == pytest.approx(4194304 / 135e-6 / 1e9 * 3 / 4)


def test_calibrate_reads_inspector_records(tmp_path):
    recs = [
        record(coll, r, 100 * (k + 1) + r, MIB << (2 * k), sn=k)
        for coll in ("AllReduce", "AllGather", "ReduceScatter")
        for k in range(3)
        for r in range(4)
    ]
    r = runner.invoke(app, ["collective", "--calibrate", str(write(tmp_path, recs)), "--json"])
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)
    assert cal["ops"] == ["all_reduce", "all_gather", "reduce_scatter"]
    assert cal["rows"] == 9  # 3 ops x 3 sizes, each the median of its 4 ranks


def test_compare_of_a_file_of_no_format_is_one_line(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("all good\n")
    r = runner.invoke(app, ["collective", "--compare", str(p)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.strip() == (
        f"topo: error: {p}: not a measured collective log: expected nccl-tests' text output "
        "(a '# nThread' or '# Collective test starting' line and its table), an nccl-tests -J "
        "JSON report, or NCCL Inspector records (JSON lines with coll_perf)"
    )


def test_one_communicator_of_two_shapes_is_refused(tmp_path):
    # a record of 8 ranks under the id of a 16-rank communicator was merged into another test
    first = record("AllReduce", 0, 400, MIB, n=16, nnodes=2)
    other = record("AllReduce", 1, 400, MIB, n=8, nnodes=1)
    other["header"]["id"] = first["header"]["id"]
    path = write(tmp_path, [first, other])
    with pytest.raises(FormatError, match=r"inspector.log:2: communicator '0x7f8c496ae9f610' has "
                       r"n_ranks 8 and nnodes 1 here, but 16 and 2 on line 1"):  # fmt: skip
        read_nccl_inspector(path)


@pytest.mark.parametrize("before", ["", "é ", "٣ "])
def test_a_run_of_101_digits_is_found_on_its_line_in_any_text(before):
    # the check's ASCII path (bytes) and its Unicode one (the regex) find the same run: 101
    # digits on line 3 after 100-digit runs on lines 1 and 2; 100 digits alone pass
    from topo.files import long_number

    text = "9" * 100 + "\n" + before + "1" * 100 + "x\n" + "a" + "7" * 101 + "\n"
    assert str(long_number("f.log", text)) == (
        "f.log:3: a number of 101 digits: numbers in input files have at most 100 digits"
    )
    assert long_number("f.log", text.replace("7" * 101, "7" * 100)) is None


def test_a_long_file_s_records_are_read_one_at_a_time(tmp_path):
    # 10,000 records of one size on 4 ranks: the row is their median, as for a short file;
    # the reader holds the file's bytes and text (2 bytes a character at the peak) and little
    # more, not every record at once (over 6 times the file's size) nor a copy of 4 bytes a
    # character (io.StringIO)
    import tracemalloc

    recs = [record("AllReduce", r, 100 + r, MIB, sn=sn) for sn in range(1, 2501) for r in range(4)]
    path = write(tmp_path, recs)
    tracemalloc.start()
    (t,) = read_nccl_inspector(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [(m.size_bytes, m.time_us) for m in t.rows] == [(MIB, 101.5)]
    assert peak < 4 * path.stat().st_size


def test_a_record_cut_on_the_last_line_is_left_out_and_said(tmp_path):
    # a job killed while the plugin wrote its 5th record (rank 0's second call, 1000 µs) leaves
    # it cut after '"coll_exec_time_us":' on the file's last line: left out, said once for
    # the log; the row is the median of the four whole records, (110 + 120) / 2 = 115 µs
    whole = [json.dumps(record("AllReduce", r, t, MIB)) for r, t in enumerate((100, 110, 120, 130))]
    last = json.dumps(record("AllReduce", 0, 1000, MIB, sn=2))
    cut = last[: last.index('"coll_exec_time_us": ') + len('"coll_exec_time_us": ')]
    p = tmp_path / "inspector.log"
    p.write_text("\n".join([*whole, cut]) + "\n\n")
    (t,) = read_nccl_inspector(p)
    assert [(r.size_bytes, r.time_us) for r in t.rows] == [(MIB, 115.0)]
    assert t.left_out_tests == [
        ("", f"{p}:5: the file's last line is a record cut off mid-line (not valid JSON: "
             "Expecting value): the log was cut off; the record is left out")
    ]  # fmt: skip
    # NUL bytes after the cut, on its line and on the next (a network file system's zero fill
    # of the lost writes): the same
    for tail in ("\0" * 300, "\n" + "\0" * 300):
        p.write_text("\n".join([*whole, cut]) + tail)
        (t,) = read_nccl_inspector(p)
        assert [(r.size_bytes, r.time_us) for r in t.rows] == [(MIB, 115.0)]
        assert t.left_out_tests[0][1].startswith(f"{p}:5: the file's last line is a record cut")
    # the log's only record, cut (so no line of the file is a whole record, and it is read
    # as a stream of records): refused, saying the file ends inside it
    p.write_text(cut)
    with pytest.raises(FormatError) as e:
        read_nccl_inspector(p)
    assert str(e.value) == (
        f"{p}:1:{len(cut) + 1}: not valid JSON: Expecting value; the file ends there, inside the "
        "record that starts on line 1: a log cut off (a job killed while NCCL Inspector wrote "
        "it)?"
    )
    # cut so on any other line, or malformed before its end, it is refused as before
    p.write_text("\n".join([*whole[:2], cut, *whole[2:]]) + "\n")
    with pytest.raises(FormatError, match=r"inspector.log:3:\d+: not valid JSON: Expecting value$"):
        read_nccl_inspector(p)
    p.write_text("\n".join([*whole, last.replace('"coll_sn": 2', '"coll_sn" 2')]) + "\n")
    with pytest.raises(FormatError, match=r"inspector.log:5:\d+: not valid JSON: Expecting ':'"):
        read_nccl_inspector(p)
