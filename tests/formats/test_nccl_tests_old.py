"""nccl-tests text logs of 2.0 to 2.11: each op's own leading columns, the 'error' column, the
op from the binary named before the test or from ``op``, and the errors when neither says it.

The logs are written as those versions print them: ``# nThread ...`` without ``agg iters``
(src/common.cu), ``#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s``, each op's
``print_header`` / ``print_line_header`` (src/<op>.cu of v2.11.0) and the columns
``  %7s  %6.2f  %6.2f  %5.0le`` of BenchTime (or ``N/A`` with -c 0).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.errors import FormatError
from topo.formats import log_format
from topo.formats.nccl_tests import read_nccl_tests, validated_tests

runner = CliRunner()

NTHREAD = (
    "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 67108864 step: 2(factor) warmup iters: 5 "
    "iters: 20 validation: 1 \n"
)
DEVICES = (
    "#\n"
    "# Using devices\n"
    "#   Rank  0 Pid  41001 on      node1 device  0 [0x07] Tesla V100-SXM2-32GB\n"
    "#   Rank  1 Pid  41002 on      node1 device  1 [0x0a] Tesla V100-SXM2-32GB\n"
    "#   Rank  2 Pid  52001 on      node2 device  0 [0x07] Tesla V100-SXM2-32GB\n"
    "#   Rank  3 Pid  52002 on      node2 device  1 [0x0a] Tesla V100-SXM2-32GB\n"
)
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 18.0725 \n#\n"

ALL_REDUCE = (
    "$ mpirun -np 4 -H node1:2,node2:2 ./build/all_reduce_perf -b 32M -e 64M -f 2 -g 1\n"
    + NTHREAD
    + DEVICES
    + "#\n"
    "#                                                     out-of-place                       "
    "in-place          \n"
    "#       size         count      type   redop     time   algbw   busbw  error     time   "
    "algbw   busbw  error\n"
    "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  "
    "(GB/s)  (GB/s)       \n"
    "    33554432       8388608     float     sum   2925.6   11.47   17.20  5e-07   2917.0   "
    "11.50   17.25  5e-07\n"
    "    67108864      16777216     float     sum   5557.3   12.08   18.11  5e-07   5571.2   "
    "12.05   18.07  5e-07\n" + FOOTER
)

ALL_GATHER = (
    NTHREAD
    + DEVICES
    + "#       size         count      type     time   algbw   busbw  error     time   algbw   "
    "busbw  error\n"
    "   134217728       8388608     float   9125.2   14.71   11.03  0e+00   9101.9   14.75   "
    "11.06  0e+00\n" + FOOTER
)

BROADCAST = (
    NTHREAD
    + DEVICES
    + "#       size         count      type    root     time   algbw   busbw  error     time   "
    "algbw   busbw  error\n"
    "    33554432       8388608     float       0   2650.1   12.66   12.66    N/A   2648.0   "
    "12.67   12.67    N/A\n" + FOOTER
)

REDUCE = (
    NTHREAD
    + DEVICES
    + "#       size         count      type   redop    root     time   algbw   busbw  error     "
    "time   algbw   busbw  error\n"
    "    33554432       8388608     float     sum       0   2701.4   12.42   12.42  0e+00   "
    "2700.0   12.43   12.43  0e+00\n" + FOOTER
)


def _write(tmp_path, text, name="old.log"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_an_all_reduce_of_2_11_reads_field_by_field(tmp_path):
    (t,) = read_nccl_tests(_write(tmp_path, ALL_REDUCE))
    assert t.op == "all_reduce"  # from ./build/all_reduce_perf on line 1
    assert (t.ranks, t.hosts, t.gpus_per_node) == (4, ["node1", "node2"], 2)
    assert t.devices == ["Tesla V100-SXM2-32GB"]
    assert (t.out_of_bounds, t.avg_busbw_GBps, t.line) == (0, 18.0725, 2)
    first, second = t.rows
    # "    33554432  8388608  float  sum  2925.6  11.47  17.20  5e-07  2917.0  11.50  17.25  5e-07"
    assert (first.size_bytes, first.count, first.type, first.redop, first.root) == (
        33554432,
        8388608,
        "float",
        "sum",
        -1,  # no root column: as nccl-tests 2.13 prints a rootless op
    )
    assert (first.time_us, first.algbw_GBps, first.busbw_GBps) == (2925.6, 11.47, 17.20)
    assert (first.inplace_time_us, first.inplace_algbw_GBps, first.inplace_busbw_GBps) == (
        2917.0,
        11.50,
        17.25,
    )
    # 'error' is the largest difference, no count of wrong elements; lines 10-12: the header
    assert (first.wrong, first.inplace_wrong, first.line) == (None, None, 13)
    assert (second.size_bytes, second.count, second.time_us, second.inplace_busbw_GBps) == (
        67108864,
        16777216,
        5557.3,
        18.07,
    )
    # the printed columns agree with nccl-tests' definitions: algbw = S / t, busbw x 2(n-1)/n
    assert first.size_bytes / first.time_us / 1e3 == pytest.approx(first.algbw_GBps, abs=0.01)
    assert first.algbw_GBps * 2 * 3 / 4 == pytest.approx(first.busbw_GBps, abs=0.01)


@pytest.mark.parametrize(
    ("text", "op", "redop", "root", "values"),
    [
        (ALL_GATHER, "all_gather", "none", -1, (134217728, 8388608, 9125.2, 14.71, 11.03, 11.06)),
        (BROADCAST, "broadcast", "none", 0, (33554432, 8388608, 2650.1, 12.66, 12.66, 12.67)),
        (REDUCE, "reduce", "sum", 0, (33554432, 8388608, 2701.4, 12.42, 12.42, 12.43)),
    ],
)
def test_each_op_has_its_own_columns(tmp_path, text, op, redop, root, values):
    (t,) = read_nccl_tests(_write(tmp_path, text), op=op)
    (r,) = t.rows
    assert (t.op, r.redop, r.root) == (op, redop, root)
    got = (r.size_bytes, r.count, r.time_us, r.algbw_GBps, r.busbw_GBps, r.inplace_busbw_GBps)
    assert got == values
    assert r.type == "float" and r.wrong is None


def test_an_empty_redop_of_2_13_0_reads(tmp_path):
    # nccl-tests 2.13.0-2.13.3: all_gather passes opName "" to TimeTest, so "%6s" prints
    # blanks and the row has 12 fields under the 13-column header of src/common.cu
    row = "%12li  %12li  %8s  %6s  %6s" % (134217728, 8388608, "float", "", "-1")  # noqa: UP031
    row += "  %7s  %6.2f  %6.2f  %5g" % ("9125.2", 14.71, 11.03, 0)  # noqa: UP031
    row += "  %7s  %6.2f  %6.2f  %5g" % ("9101.9", 14.75, 11.06, 0)  # noqa: UP031
    text = (
        "# nThread 1 nGpus 1 minBytes 134217728 maxBytes 134217728 step: 2(factor) warmup "
        "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" + DEVICES[2:] + "#\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong "
        "    time   algbw   busbw #wrong\n" + row + "\n" + FOOTER
    )
    (t,) = read_nccl_tests(_write(tmp_path, text), op="all_gather")
    (r,) = t.rows
    assert len(row.split()) == 12
    assert (r.size_bytes, r.count, r.type, r.redop, r.root) == (
        134217728,
        8388608,
        "float",
        "none",
        -1,
    )
    assert (r.time_us, r.busbw_GBps, r.inplace_busbw_GBps, r.wrong, r.inplace_wrong) == (
        9125.2,
        11.03,
        11.06,
        0,  # '#wrong' (2.13): a count, unlike the 'error' column before
        0,
    )


def test_rows_without_a_header_are_told_by_their_columns(tmp_path):
    # a table pasted without its header: 11 columns (no redop, no root), 12 with a rank
    rows = [x for x in ALL_GATHER.splitlines(keepends=True) if not x.startswith("#       size")]
    (t,) = read_nccl_tests(_write(tmp_path, "".join(rows)), op="all_gather")
    assert (t.rows[0].redop, t.rows[0].root, t.rows[0].busbw_GBps) == ("none", -1, 11.03)
    rows = [x for x in BROADCAST.splitlines(keepends=True) if not x.startswith("#       size")]
    (t,) = read_nccl_tests(_write(tmp_path, "".join(rows)), op="broadcast")
    assert (t.rows[0].redop, t.rows[0].root) == ("none", 0)


@pytest.mark.parametrize(
    "command",
    [
        "srun --mpi=pmix all_reduce_perf_mpi -b 32M -e 64M -f 2 -g 1",  # NAME_SUFFIX build
        "+ /opt/nccl-tests/build/all_reduce_perf -b 32M",
        "user@host:~$ mpirun -np 4 all_reduce_perf -b 32M",
    ],
)
def test_the_binary_named_before_the_test_is_its_op(tmp_path, command):
    text = command + "\n" + ALL_REDUCE.split("\n", 1)[1]
    (t,) = read_nccl_tests(_write(tmp_path, text))
    assert t.op == "all_reduce"


@pytest.mark.parametrize("tag", ["[1,0]<stdout>:", "0: "])
def test_a_launchers_tags_are_removed(tmp_path, tag):
    # mpirun --tag-output and srun --label put a tag before every line
    text = "".join(tag + x for x in ALL_REDUCE.splitlines(keepends=True))
    p = _write(tmp_path, text)
    assert read_nccl_tests(p) == read_nccl_tests(_write(tmp_path, ALL_REDUCE, "plain.log"))
    assert log_format(p) == "nccl-tests"


def test_open_mpi_tags_inside_a_row_are_removed(tmp_path):
    """nccl-tests writes a row in pieces; mpirun --tag-output tags each piece (a public AWS
    p5 log: ``[1,0]<stdout>:  8  2  float  sum  -1[1,0]<stdout>:  85.70 ...``)."""
    tag = "[1,0]<stdout>:"
    lines = []
    for x in ALL_REDUCE.splitlines(keepends=True):
        f = x.split()
        if x.strip() and not x.lstrip().startswith("#") and len(f) > 5 and f[0].isdigit():
            # cut the row after its leading columns and again after the out-of-place ones
            head = "  ".join(f[:4])
            lines.append(f"{tag}  {head}{tag}  {'  '.join(f[4:8])}{tag}  {'  '.join(f[8:])}\n")
        else:
            lines.append(tag + x)
    p = _write(tmp_path, "".join(lines))
    assert read_nccl_tests(p) == read_nccl_tests(_write(tmp_path, ALL_REDUCE, "plain.log"))


def test_two_old_tests_each_take_the_binary_before_it(tmp_path):
    text = ALL_REDUCE + "$ ./build/all_gather_perf -b 128M -e 128M\n" + ALL_GATHER
    assert [t.op for t in read_nccl_tests(_write(tmp_path, text))] == ["all_reduce", "all_gather"]


def test_a_log_that_names_its_op_keeps_it(tmp_path):
    (t,) = read_nccl_tests(_write(tmp_path, ALL_REDUCE), op="broadcast")
    assert t.op == "all_reduce"


def test_no_op_anywhere_is_a_one_line_error(tmp_path):
    p = _write(tmp_path, ALL_GATHER)
    with pytest.raises(
        FormatError,
        match=r"old.log:1: cannot tell which collective the test \(started line 1\) measured: "
        r".*; give op \(all_reduce, ",
    ) as e:
        read_nccl_tests(p)
    assert e.value.names == ("op",) and "\n" not in str(e.value)


def test_an_op_the_columns_contradict_is_refused(tmp_path):
    with pytest.raises(
        FormatError,
        match=r"old.log:8: the table of the test started line 1 has the columns 'size count "
        r"type' of all_gather or sendrecv or hypercube in nccl-tests before 2.13, not those of "
        r"all_reduce \('size count type redop'\); the collective is op all_reduce",
    ):
        read_nccl_tests(_write(tmp_path, ALL_GATHER), op="all_reduce")
    # the binary's name contradicted by the columns: a log edited by hand, also refused
    text = "$ ./build/broadcast_perf\n" + ALL_GATHER
    with pytest.raises(FormatError, match=r"not those of broadcast .*broadcast_perf on line 1"):
        read_nccl_tests(_write(tmp_path, text))


def test_an_op_the_sizes_contradict_is_refused(tmp_path):
    # all_reduce and reduce_scatter share their columns; their sizes differ: reduce_scatter's
    # is the whole buffer, 4 ranks x count x 4 B, all_reduce's count x 4 B (33554432 =
    # 8388608 x 4)
    unnamed = ALL_REDUCE.split("\n", 1)[1]
    with pytest.raises(
        FormatError,
        match=r"old.log:12: size 33554432 is 1 x count 8388608 x 4 B \(float\), not 4 ranks \(or a "
        r"group of them\) x count x 4 B as nccl-tests prints reduce_scatter: the collective "
        r"\(op reduce_scatter\)",
    ) as e:
        read_nccl_tests(_write(tmp_path, unnamed), op="reduce_scatter")
    assert e.value.names == ("op",)
    # all_gather (134217728 = 4 x 8388608 x 4 B) taken for sendrecv, which shares its columns
    with pytest.raises(
        FormatError,
        match=r"old.log:9: size 134217728 is 4 x count 8388608 x 4 B \(float\), "
        r"not count x 4 B as nccl-tests prints sendrecv",
    ):
        read_nccl_tests(_write(tmp_path, ALL_GATHER), op="sendrecv")
    assert read_nccl_tests(_write(tmp_path, unnamed), op="all_reduce")[0].op == "all_reduce"


def test_a_split_communicator_is_a_whole_buffer_too(tmp_path):
    # NCCL_TESTS_SPLIT: 4 ranks in groups of 2, each group's all_gather buffer 2 x count x 4 B
    text = ALL_GATHER.replace("   134217728       8388608", "    67108864       8388608")
    (t,) = read_nccl_tests(_write(tmp_path, text), op="all_gather")
    assert t.rows[0].size_bytes == 67108864


def test_a_failed_data_check_leaves_the_old_test_out(tmp_path):
    # nccl-tests < 2.13 counts the sizes whose error is over the limit in the footer only
    text = ALL_REDUCE.replace("values : 0 OK", "values : 2 FAILED")
    bad = read_nccl_tests(_write(tmp_path, text + "$ ./build/all_gather_perf\n" + ALL_GATHER))
    kept, warnings = validated_tests(bad, "old.log")
    assert [t.op for t in kept] == ["all_gather"]
    assert "all_reduce_perf: 2 of 2 sizes failed" in warnings[0]


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("5e-07   2917.0", "x   2917.0", r"old.log:13: error must be a non-negative number"),
        ("5e-07   2917.0", "-1e+00   2917.0", r"old.log:13: error must be a non-negative"),
        ("11.47   17.20  5e-07", "11.47   17.20", r"old.log:13: a result row has 8 or 12 "
                                                  r"columns .*as the header on line 11\), got 11"),
    ],
)  # fmt: skip
def test_bad_old_rows_are_refused(tmp_path, old, new, match):
    with pytest.raises(FormatError, match=match):
        read_nccl_tests(_write(tmp_path, ALL_REDUCE.replace(old, new, 1)))


def test_an_old_row_timed_nan_is_left_out(tmp_path):
    path = _write(tmp_path, ALL_REDUCE.replace("2925.6", "nan"))
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == [14]
    assert t.left_out == [
        f"{path}:13: all_reduce_perf row of 33554432 B left out: time nan µs is not above 0 "
        "and at most 3.6e+09 µs (one hour)"
    ]


def test_a_version_1_table_is_refused(tmp_path):
    # nccl-tests 1.x: "bytes N type op", times in ms (src/all_reduce.cu of v1.0.0)
    text = (
        "nThread 1 nGpus 2 minBytes 10000000 maxBytes 10000000 step: 1048576(bytes)\n"
        "#                                            out-of-place                    in-place\n"
        "#  bytes             N    type      op     time  algbw  busbw      res     time  "
        "algbw  busbw      res\n"
        "    10000000      10000000    char     sum    0.064  157.38   0.00    0e+00    0.005  "
        "2083.77   0.00    0e+00\n"
    )
    with pytest.raises(FormatError, match=r"old.log:3: an nccl-tests 1.x table .*times in ms"):
        read_nccl_tests(_write(tmp_path, text))


# -- the command line ------------------------------------------------------------------------


def test_compare_reads_an_old_log(tmp_path):
    log = _write(tmp_path, ALL_REDUCE)
    r = runner.invoke(app, ["collective", "--compare", str(log), "--json"])
    assert r.exit_code == 0, r.output
    (cmp,) = json.loads(r.stdout)
    assert (cmp["op"], cmp["gpus"], cmp["nodes"], cmp["gpus_per_node"]) == ("all_reduce", 4, 2, 2)
    rows = cmp["rows"]
    sizes = [(x["size_bytes"], x["measured_time_us"], x["measured_busbw_GBps"]) for x in rows]
    assert sizes == [(33554432, 2925.6, 17.20), (67108864, 5557.3, 18.11)]


def test_compare_names_an_unnamed_test_with_op(tmp_path):
    log = _write(tmp_path, ALL_GATHER)
    r = runner.invoke(app, ["collective", "--compare", str(log), "--op", "all_gather", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["rows"][0]["measured_busbw_GBps"] == 11.03


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ((), "cannot tell which collective the test (started line 1) measured"),
        (("--op", "all_reduce"), "not those of all_reduce"),
    ],
)
def test_compare_errors_on_an_old_log_are_one_line(tmp_path, extra, match):
    log = _write(tmp_path, ALL_GATHER)
    r = runner.invoke(app, ["collective", "--compare", str(log), *extra])
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"topo: error: {log}:"), r.stderr
    assert match in lines[0]
    if not extra:
        assert "give --op (" in lines[0]  # the library's parameter, spelled as the option
