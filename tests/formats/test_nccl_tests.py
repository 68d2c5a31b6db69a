"""The nccl-tests log reader on every log of ../shared/data/real/nccl_tests_logs, checked
against the tool's own parsed summary (summary.csv) and the files' headers; on failed logs,
which must be errors naming the failure; and on cut-off logs, whose complete rows are read with
a warning line per cut (an error only when no row is left)."""

from __future__ import annotations

import csv

import pytest

from formats._real import REAL_DATA, real_file
from topo.errors import FormatError
from topo.formats.nccl_tests import read_nccl_tests

FOLDER = REAL_DATA / "nccl_tests_logs"
GOOD = [
    ("xxrjun_cluster01_multinode_N10", "nccl_N10_G1.log", 10, 1),
    ("xxrjun_cluster01_multinode_N10", "nccl_N10_G2.log", 20, 2),
    ("xxrjun_cluster01_multinode_N10", "nccl_N10_G4.log", 40, 4),
    ("xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log", 80, 8),
    ("xxrjun_cluster01_singlenode", "nccl_N1_G8_cnode3-002.log", 8, 8),
    ("xxrjun_cluster01_singlenode", "nccl_N1_G4_cnode3-002.log", 4, 4),
    ("xxrjun_cluster00_pairwise", "nccl_N2_G8_cnode2-001_cnode2-002.log", 16, 8),
]


def test_every_log_in_the_folder_is_covered():
    if not FOLDER.is_dir():
        pytest.skip(f"real data not available: {FOLDER}")
    logs = {p.name for p in FOLDER.glob("*/*.log")}
    assert logs == {name for _, name, _, _ in GOOD} | {
        "nccl_N2_G8_cnode2-002_cnode2-008.FAILED.log"
    }


@pytest.mark.parametrize("folder, name, ranks, gpn", GOOD)
def test_good_logs(folder, name, ranks, gpn):
    tests = read_nccl_tests(real_file("nccl_tests_logs", folder, name))
    ops = [t.op for t in tests]
    if "pairwise" in folder:
        assert ops == ["alltoall", "sendrecv"]
    else:
        assert ops == ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"]
    for t in tests:
        assert (t.ranks, t.gpus_per_node) == (ranks, gpn)
        assert len(t.rows) == 10  # 32 MiB .. 16 GiB, factor 2
        assert t.rows[0].size_bytes <= 1 << 25 < t.rows[1].size_bytes
        # nccl-tests' average is the mean of the printed busbw, out-of-place and in-place
        vals = [r.busbw_GBps for r in t.rows] + [r.inplace_busbw_GBps for r in t.rows]
        assert sum(vals) / len(vals) == pytest.approx(t.avg_busbw_GBps, abs=0.01)
        for r in t.rows:
            factor = r.busbw_GBps / r.algbw_GBps
            assert r.size_bytes / r.time_us / 1e3 == pytest.approx(r.algbw_GBps, rel=0.01)
            want = {"all_reduce": 2 * (ranks - 1) / ranks, "sendrecv": 1.0}.get(
                t.op, (ranks - 1) / ranks
            )
            assert factor == pytest.approx(want, rel=0.01)


def test_ten_node_peaks_match_the_tools_summary():
    """summary.csv of the same run: peak busbw per test and G (the tool's own parser)."""
    folder = "xxrjun_cluster01_multinode_N10"
    summary = real_file("nccl_tests_logs", folder, "summary.csv")
    with open(summary, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    checked = 0
    for row in rows:
        log = real_file("nccl_tests_logs", folder, row["file"])
        (t,) = [t for t in read_nccl_tests(log) if f"{t.op}_perf" == row["test"]]
        peak = max(max(r.busbw_GBps, r.inplace_busbw_GBps or 0) for r in t.rows)
        assert peak == pytest.approx(float(row["peak_busbw_GBs"]), abs=0.01)
        assert t.avg_busbw_GBps == pytest.approx(float(row["avg_bus_bw_GBs"]), abs=0.01)
        checked += 1
    assert checked == 20


def test_failed_log_names_the_failure():
    log = real_file(
        "nccl_tests_logs",
        "xxrjun_cluster00_pairwise",
        "nccl_N2_G8_cnode2-002_cnode2-008.FAILED.log",
    )
    with pytest.raises(
        FormatError,
        match=r"FAILED.log:\d+: test alltoall_perf .* failed: Test NCCL failure.*"
        r"remote process exited",
    ):
        read_nccl_tests(log)


def _write(tmp_path, text):
    p = tmp_path / "x.log"
    p.write_text(text)
    return p


HEAD = (
    "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
    "# Collective test starting: all_gather_perf\n"
    "#  Rank  0 Group  0 Pid 1 on h1 device  0 [0000:1b:00] NVIDIA H100\n"
    "#  Rank  1 Group  0 Pid 2 on h2 device  0 [0000:1b:00] NVIDIA H100\n"
)
ROW = "  1024  128  float  none  -1  10.00  0.10  0.05  0  9.00  0.11  0.06  0\n"


def test_logs_with_no_test_left_are_errors(tmp_path):
    # a test started with no result row is an error when it is the log's only test (one
    # line naming the file); so are a file of no test, an empty file, a lone row cut on the
    # last line, a bad number, a missing file
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}: test all_gather_perf (started line 2) has no result rows: "
        "truncated log"
    )
    with pytest.raises(FormatError, match="no nccl-tests result"):
        read_nccl_tests(_write(tmp_path, "hello\n"))
    with pytest.raises(FormatError, match=r"x.log: empty file \(no '# Collective test"):
        read_nccl_tests(_write(tmp_path, "\n  \n"))
    with pytest.raises(FormatError, match=r"x.log:5: a result row has 9 or 13 columns"):
        read_nccl_tests(_write(tmp_path, HEAD + "  1024  128  float  none  -1  10.00\n"))
    with pytest.raises(FormatError, match=r"x.log:5: bad number"):
        read_nccl_tests(_write(tmp_path, HEAD + ROW.replace("10.00", "ten")))
    with pytest.raises(FormatError, match="no such file"):
        read_nccl_tests(tmp_path / "missing.log")


SECOND = HEAD.replace("all_gather", "all_reduce").split("\n", 1)[1]
"""A second test (all_reduce: its start line and two rank lines) to append to a log."""
FAIL = "h1: Test NCCL failure common.cu:1279 'remote process exited'\n"
"""nccl-tests' line when a peer died (the OOM killer, a lost node)."""


def test_two_tests_with_no_row_name_the_first(tmp_path):
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + SECOND))  # SECOND on lines 5-7
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}: test all_gather_perf (started line 2) has no result rows: "
        "truncated log"
    )


def test_a_failed_test_stays_an_error_after_a_complete_one(tmp_path):
    # SECOND on lines 7-9, FAIL on line 10
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + AVG + SECOND + FAIL))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:10: test all_reduce_perf (started line 7) failed: Test NCCL "
        "failure common.cu:1279 'remote process exited'; no results"
    )


def test_a_failed_test_of_another_op_than_the_one_kept_is_left_out_saying_so(tmp_path):
    # all_gather complete (lines 1-6), then all_reduce failed (line 10): keeping all_gather
    # (--op all_gather) reads the all_gather test and says the failed one; keeping all_reduce
    # is refused as without keep_op (the test it keeps failed)
    # SECOND on lines 7-9, FAIL on line 10
    log = _write(tmp_path, HEAD + ROW + AVG + SECOND + FAIL)
    (t,) = read_nccl_tests(log, keep_op="all_gather")
    assert (t.op, [r.size_bytes for r in t.rows]) == ("all_gather", [1024])
    assert t.left_out_tests == [
        ("", f"{log}:10: test all_reduce_perf (started line 7) failed: Test NCCL failure "
             "common.cu:1279 'remote process exited'; no results: the test is left out (not "
             "all_gather)")
    ]  # fmt: skip
    with pytest.raises(FormatError) as info:
        read_nccl_tests(log, keep_op="all_reduce")
    assert str(info.value).startswith(f"{log}:10: test all_reduce_perf (started line 7) failed")


def test_the_shared_failed_pairwise_log_keeps_its_complete_test_under_another_op():
    # alltoall_perf (line 2) failed at line 22; sendrecv_perf (line 29) failed too, at line
    # 49: keeping sendrecv leaves alltoall out and refuses the log for sendrecv's failure;
    # keeping an op the log lacks leaves both out and refuses it for the first failure
    log = real_file(
        "nccl_tests_logs",
        "xxrjun_cluster00_pairwise",
        "nccl_N2_G8_cnode2-002_cnode2-008.FAILED.log",
    )
    with pytest.raises(FormatError) as info:
        read_nccl_tests(log, keep_op="sendrecv")
    assert str(info.value).startswith(f"{log}:49: test sendrecv_perf (started line 29) failed")
    with pytest.raises(FormatError) as info:
        read_nccl_tests(log, keep_op="all_reduce")
    assert str(info.value).startswith(f"{log}:22: test alltoall_perf (started line 2) failed")


def test_a_row_cut_off_on_the_last_line_says_the_log_may_be_cut_off(tmp_path):
    # a job killed mid-write: its row has 10 of 13 columns. As its test's only row, on the
    # file's last line, it is an error saying the log may be cut off; followed by another
    # line it says nothing of the file's end and is refused as any malformed row
    cut = ROW.rsplit(maxsplit=3)[0] + "\n"
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + cut + "\n  \n"))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:5: a result row has 9 or 13 columns (size count type redop root "
        "time algbw busbw #wrong, then in-place; before nccl-tests 2.13 11 or 12, without redop "
        "or root), got 10; it is the file's last line: a log cut off?"
    )
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + cut + ROW))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:5: a result row has 9 or 13 columns (size count type redop root "
        "time algbw busbw #wrong, then in-place; before nccl-tests 2.13 11 or 12, without redop "
        "or root), got 10"
    )
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + cut + AVG))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:7: a result row has 9 or 13 columns (size count type redop root "
        "time algbw busbw #wrong, then in-place), got 10"
    )


# -- logs cut off: complete rows used, each cut said in one warning line -----------------------

# two more rows of HEAD's all_gather on 2 ranks (busbw = algbw / 2), worked by hand:
# 2048 B = 2 x 256 x 4 B in 20.00 µs: algbw 2048 / 20 / 1e3 = 0.1024 -> 0.10, busbw 0.05;
# in-place 18.00 µs: 0.1138 -> 0.11, busbw 0.0569 -> 0.06.
# 4096 B = 2 x 512 x 4 B in 20.00 µs: algbw 0.2048 -> 0.20, busbw 0.1024 -> 0.10;
# in-place 19.00 µs: 0.2156 -> 0.22, busbw 0.1078 -> 0.11.
ROW2 = "  2048  256  float  none  -1  20.00  0.10  0.05  0  18.00  0.11  0.06  0\n"
ROW3 = "  4096  512  float  none  -1  20.00  0.20  0.10  0  19.00  0.22  0.11  0\n"
# all_reduce on the same 2 ranks (busbw = algbw x 2 (2 - 1) / 2 = algbw): 1024 B = 256 x 4 B
AR_HEAD = (
    "# Collective test starting: all_reduce_perf\n"
    "#  Rank  0 Group  0 Pid 3 on h1 device  0 [0000:1b:00] NVIDIA H100\n"
    "#  Rank  1 Group  0 Pid 4 on h2 device  0 [0000:1b:00] NVIDIA H100\n"
)
AR_ROW = "  1024  256  float  sum  -1  10.00  0.10  0.10  0  9.00  0.11  0.11  0\n"


def test_a_test_cut_off_before_its_average_keeps_its_rows(tmp_path):
    # rows on lines 5, 6, 7 and no Avg line: the three rows are used, the average their mean
    # out-of-place busbw (0.05 + 0.05 + 0.10) / 3 = 0.0667 GB/s, and one warning line
    path = _write(tmp_path, HEAD + ROW + ROW2 + ROW3 + "\n\n")
    (t,) = read_nccl_tests(path)
    assert [(r.size_bytes, r.time_us, r.line) for r in t.rows] == [
        (1024, 10.0, 5),
        (2048, 20.0, 6),
        (4096, 20.0, 7),
    ]
    assert t.avg_busbw_GBps == pytest.approx(0.2 / 3, abs=1e-12)
    assert t.notes == [
        f"{path}: test all_gather_perf (started line 2) ends at line 7 without its "
        "'Avg bus bandwidth' line: the log was cut off; its 3 rows are used"
    ]
    assert (t.left_out, t.left_out_tests, t.ranks, t.hosts) == ([], [], 2, ["h1", "h2"])


def test_one_row_cut_off_says_one_row(tmp_path):
    path = _write(tmp_path, HEAD + ROW)
    (t,) = read_nccl_tests(path)
    assert (len(t.rows), t.avg_busbw_GBps) == (1, 0.05)
    assert t.notes[0].endswith("ends at line 5 without its 'Avg bus bandwidth' line: the log "
                               "was cut off; its 1 row is used")  # fmt: skip


def test_a_test_cut_off_before_the_next_one_keeps_its_rows(tmp_path):
    # all_gather's rows on lines 5-6, then all_reduce starts on line 7 (row on line 10, its
    # Avg on line 11): both tests read, the first with a warning naming where the next starts
    path = _write(tmp_path, HEAD + ROW + ROW2 + AR_HEAD + AR_ROW + "# Avg bus bandwidth : 0.1\n")
    ag, ar = read_nccl_tests(path)
    assert [r.size_bytes for r in ag.rows] == [1024, 2048] and ag.avg_busbw_GBps == 0.05
    assert ag.notes == [
        f"{path}: test all_gather_perf (started line 2) ends at line 6 without its "
        "'Avg bus bandwidth' line: the test was cut off (the next one starts line 7); its 2 "
        "rows are used"
    ]
    assert (ar.op, ar.line, [r.line for r in ar.rows], ar.avg_busbw_GBps, ar.notes) == (
        "all_reduce",
        7,
        [10],
        0.1,
        [],
    )


def test_a_test_with_no_row_is_left_out_when_another_has_rows(tmp_path):
    # all_gather complete (lines 1-6); all_reduce started on line 7, its rank lines, no row:
    # left out with one line, carried by every test read
    path = _write(tmp_path, HEAD + ROW + AVG + AR_HEAD)
    (t,) = read_nccl_tests(path)
    assert (t.op, [r.size_bytes for r in t.rows], t.avg_busbw_GBps, t.notes) == (
        "all_gather",
        [1024],
        0.05,
        [],
    )
    assert t.left_out_tests == [
        (
            "all_reduce",
            f"{path}: test all_reduce_perf (started line 7) has no result rows: the log was "
            "cut off; the test is left out",
        )
    ]
    # the same test with no row in the middle of the log (line 2), before all_gather (line 5)
    path = _write(tmp_path, "# nccl-tests version 2.17.8\n" + AR_HEAD + HEAD + ROW + AVG)
    (t,) = read_nccl_tests(path)
    assert (t.op, t.line, [r.line for r in t.rows]) == ("all_gather", 6, [9])
    assert t.left_out_tests == [
        (
            "all_reduce",
            f"{path}: test all_reduce_perf (started line 2) has no result rows before the next "
            "test (line 6); the test is left out",
        )
    ]


def test_a_row_cut_mid_line_on_the_last_line_is_left_out(tmp_path):
    # the 4096 B row cut after 10 of its 13 columns on line 7 (blank lines after it do not
    # count): left out; the 1024 and 2048 B rows used, their mean busbw 0.05 GB/s
    cut = ROW3.rsplit(maxsplit=3)[0] + "\n"
    path = _write(tmp_path, HEAD + ROW + ROW2 + cut + "\n  \n")
    (t,) = read_nccl_tests(path)
    assert [(r.size_bytes, r.time_us) for r in t.rows] == [(1024, 10.0), (2048, 20.0)]
    assert t.avg_busbw_GBps == 0.05
    assert t.notes == [
        f"{path}: test all_gather_perf (started line 2) ends at line 6 without its "
        "'Avg bus bandwidth' line: the log was cut off; its 2 rows are used",
        f"{path}:7: the last row of test all_gather_perf (started line 2) is cut off mid-line "
        "on the file's last line (10 of its table's 13 columns): left out",
    ]
    # cut after its out-of-place columns: 9 columns, a whole row in a 9-column table, are
    # fewer than its table's 13
    cut9 = ROW3.rsplit(maxsplit=4)[0] + "\n"
    (t,) = read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + cut9))
    assert [r.size_bytes for r in t.rows] == [1024, 2048]
    assert t.notes[1].endswith(":7: the last row of test all_gather_perf (started line 2) is "
                               "cut off mid-line on the file's last line (9 of its table's 13 "
                               "columns): left out")  # fmt: skip


def test_nul_bytes_after_a_cut_row_are_not_a_line(tmp_path):
    # a file system that loses a killed job's last writes (NFS, Lustre) leaves the file's
    # length with NUL bytes where they were: the 4096 B row cut after 10 of its 13 columns on
    # line 7, then 200 NULs, on its line and on the next. Neither NUL run is a line, so the
    # cut row is the file's last line and is left out as without them: the 1024 and 2048 B
    # rows used, their mean busbw (0.05 + 0.05) / 2 = 0.05 GB/s
    cut = ROW3.rsplit(maxsplit=3)[0]
    for tail in ("\n" + "\0" * 200, "\0" * 200, "\n" + "\0" * 100 + "\n" + "\0" * 100):
        path = _write(tmp_path, HEAD + ROW + ROW2 + cut + tail)
        (t,) = read_nccl_tests(path)
        assert [r.size_bytes for r in t.rows] == [1024, 2048]
        assert t.avg_busbw_GBps == 0.05
        assert t.notes[1] == (
            f"{path}:7: the last row of test all_gather_perf (started line 2) is cut off "
            "mid-line on the file's last line (10 of its table's 13 columns): left out"
        )
    # NULs inside a row are blanks: '19.00' then NULs then '0.22' are two columns, not 19.000.22
    path = _write(tmp_path, HEAD + ROW + ROW2 + ROW3.replace("19.00  ", "19.00" + "\0" * 8))
    assert [r.inplace_time_us for r in read_nccl_tests(path)[0].rows] == [9.0, 18.0, 19.0]


def test_a_whole_last_row_that_is_malformed_stays_an_error(tmp_path):
    # not fewer columns than its table's: refused as before, saying the log may be cut off
    wide = ROW3.rstrip("\n") + "  0\n"
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + wide))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:7: a result row has 9 or 13 columns (size count type redop root "
        "time algbw busbw #wrong, then in-place), got 14; it is the file's last line: a log cut "
        "off?"
    )
    with pytest.raises(FormatError, match=r"x.log:7: bad number in result row: .*; it is the "
                                          r"file's last line: a log cut off\?$"):  # fmt: skip
        read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + ROW3.replace("19.00", "1x")))


def test_a_tests_only_row_cut_on_the_last_line_leaves_the_test_out(tmp_path):
    # all_gather complete (lines 1-6); all_reduce started on line 7, its only row (line 10)
    # cut after 10 columns: the test has no row, and is left out saying so
    cut = AR_ROW.rsplit(maxsplit=3)[0]
    path = _write(tmp_path, HEAD + ROW + AVG + AR_HEAD + cut)
    (t,) = read_nccl_tests(path)
    assert (t.op, t.notes) == ("all_gather", [])
    assert t.left_out_tests == [
        (
            "all_reduce",
            f"{path}: test all_reduce_perf (started line 7) has no result rows but line 10, cut "
            "off mid-line on the file's last line (10 columns): the log was cut off; the test "
            "is left out",
        )
    ]


def test_minimal_log(tmp_path):
    (t,) = read_nccl_tests(_write(tmp_path, HEAD + ROW + "# Avg bus bandwidth    : 0.055 \n"))
    assert (t.op, t.ranks, t.hosts, t.gpus_per_node, t.nccl_version) == (
        "all_gather",
        2,
        ["h1", "h2"],
        1,
        "22902",
    )
    assert (t.rows[0].size_bytes, t.rows[0].time_us, t.rows[0].inplace_busbw_GBps) == (
        1024,
        10.0,
        0.06,
    )


# -- issue 11: what nccl-tests never prints is refused, naming the file and line -------------

AVG = "# Avg bus bandwidth    : 0.05 \n"


@pytest.mark.parametrize(
    ("row", "match"),
    [
        # The case: time -1 and busbw nan gave "nan% of the predicted". A row that
        # cannot be nccl-tests' is left out (a warning, tests/formats/test_plausible_rows.py);
        # with no row left, the test is an error naming the row.
        (ROW.replace("10.00", "-1"), r"x.log:5: all_gather_perf row of 1024 B: time -1 µs is "
                                     r"not above 0 and at most 3.6e\+09 µs \(one hour\); no "
                                     r"plausible row is left in test all_gather_perf \(started "
                                     r"line 2\)$"),
        (ROW.replace("10.00", "0"), r"x.log:5: .*: time 0 µs is not above 0"),
        (ROW.replace("0.05", "nan"), r"x.log:5: .*: busbw nan GB/s is not from 0 to 1e\+06 GB/s"),
        (ROW.replace("0.10", "inf"), r"x.log:5: .*: algbw inf GB/s is not from 0 to"),
        (ROW.replace("0.06", "-0.5"), r"x.log:5: .*: in-place busbw -0.5 GB/s is not from 0"),
        (ROW.replace("9.00", "nan"), r"x.log:5: .*: in-place time nan µs is not above 0"),
        (ROW.replace("-1", "-7"), r"x.log:5: root must be -1 \(not rooted\) or a rank, got -7"),
        (ROW.replace("1024", "1" * 4301, 1), r"x.log:5: a number of 4,301 digits: numbers in "
                                             r"input files have at most 100 digits$"),
        # under the digit limit, over a signed 64-bit count (nccl-tests prints %li)
        (ROW.replace("1024", "9" * 90, 1), r"x.log:5: size must be from 0 to "
                                           r"9,223,372,036,854,775,807 .*got a number of 90 "
                                           r"digits$"),
        (ROW.replace("1024", str(1 << 63), 1), r"x.log:5: size must be .*got "
                                               r"9223372036854775808$"),
        (ROW.replace("  128  ", "  -128  ", 1), r"x.log:5: count must be from 0 to "),
        # a negative size was no row at all: left out of a test of other rows unsaid
        (ROW.replace("1024", "-1024", 1), r"x.log:5: size must be from 0 to .*got -1024$"),
    ],
)  # fmt: skip
def test_impossible_rows_are_refused(tmp_path, row, match):
    with pytest.raises(FormatError, match=match):
        read_nccl_tests(_write(tmp_path, HEAD + row + AVG))


@pytest.mark.parametrize("avg", ["nan", "-3", "inf"])
def test_impossible_average_is_refused(tmp_path, avg):
    with pytest.raises(FormatError, match=rf"x.log:6: bad Avg bus bandwidth '{avg}'"):
        read_nccl_tests(_write(tmp_path, HEAD + ROW + AVG.replace("0.05", avg)))


def test_a_rank_number_too_long_is_refused(tmp_path):
    head = HEAD.replace("Rank  1 ", "Rank  " + "1" * 5000 + " ")
    with pytest.raises(FormatError, match=r"x.log:4: a number of 5,000 digits"):
        read_nccl_tests(_write(tmp_path, head + ROW + AVG))


def test_the_good_row_reads(tmp_path):
    (t,) = read_nccl_tests(_write(tmp_path, HEAD + ROW + AVG))
    assert (t.rows[0].time_us, t.rows[0].busbw_GBps, t.avg_busbw_GBps) == (10.0, 0.05, 0.05)


def _cut(tmp_path, log, lines, tail=""):
    """The first ``lines`` lines of ``log`` (and ``tail``), as a job killed there leaves it."""
    p = tmp_path / f"cut{lines}.log"
    p.write_text("".join(log.read_text().splitlines(keepends=True)[:lines]) + tail)
    return p


def test_the_ten_node_log_cut_at_line_216_keeps_its_two_whole_tests(tmp_path):
    # lines 1-216 of nccl_N10_G8.log: all_reduce (line 2) and all_gather (line 109) complete,
    # reduce_scatter started on line 216 (its '# Collective test starting' line) and no more
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    path = _cut(tmp_path, log, 216)
    tests = read_nccl_tests(path)
    assert [(t.op, t.line, len(t.rows)) for t in tests] == [
        ("all_reduce", 2, 10),
        ("all_gather", 109, 10),
    ]
    # the Avg lines of the log (lines 103 and 210), and no note
    assert [t.avg_busbw_GBps for t in tests] == [265.631, 218.677]
    assert [t.notes for t in tests] == [[], []]
    line = (
        f"{path}: test reduce_scatter_perf (started line 216) has no result rows: the log was "
        "cut off; the test is left out"
    )
    assert [t.left_out_tests for t in tests] == [[("reduce_scatter", line)]] * 2
    # the tests read are the complete log's own
    whole = read_nccl_tests(log)
    assert [t.rows for t in tests] == [whole[0].rows, whole[1].rows]


def test_the_ten_node_log_cut_at_line_100_keeps_nine_rows(tmp_path):
    # lines 1-100: all_reduce's rows of lines 92-100 (32 MiB to 8 GiB, doubling), the 16 GiB
    # row and the Avg line cut off. Its average is the mean of the 9 printed out-of-place
    # busbw (lines 92-100): 2347.39 / 9 = 260.821 GB/s
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    path = _cut(tmp_path, log, 100)
    (t,) = read_nccl_tests(path)
    assert [r.size_bytes for r in t.rows] == [33554432 << k for k in range(9)]
    assert [r.line for r in t.rows] == list(range(92, 101))
    assert (t.rows[0].time_us, t.rows[-1].time_us) == (798.52, 53632.3)
    busbw = [82.99, 141.02, 211.96, 280.67, 318.68, 344.87, 336.98, 313.90, 316.32]
    assert [r.busbw_GBps for r in t.rows] == busbw
    assert t.avg_busbw_GBps == pytest.approx(2347.39 / 9, abs=1e-9)
    assert (t.ranks, t.gpus_per_node, len(t.hosts)) == (80, 8, 10)
    assert t.notes == [
        f"{path}: test all_reduce_perf (started line 2) ends at line 100 without its "
        "'Avg bus bandwidth' line: the log was cut off; its 9 rows are used"
    ]
    assert t.left_out_tests == []
    # line 100 cut after its algbw ("... -1  53632.3  160.16"): 8 rows, the cut one left out
    path = _cut(tmp_path, log, 99, log.read_text().splitlines()[99][:70])
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == list(range(92, 100))
    assert t.avg_busbw_GBps == pytest.approx((2347.39 - 316.32) / 8, abs=1e-9)
    assert t.notes[1] == (
        f"{path}:100: the last row of test all_reduce_perf (started line 2) is cut off "
        "mid-line on the file's last line (7 of its table's 13 columns): left out"
    )


def test_a_log_cut_by_slurms_time_limit_keeps_its_rows(tmp_path):
    # slurmstepd's line after the last row (a time limit), then srun's: the rows of lines
    # 5-7 used, the test said cut off at its last row (line 7)
    tail = (
        "slurmstepd: error: *** STEP 4242.0 ON h1 CANCELLED AT 2026-01-05T10:00:00 DUE TO TIME "
        "LIMIT ***\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    )
    path = _write(tmp_path, HEAD + ROW + ROW2 + ROW3 + tail)
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == [5, 6, 7]
    assert t.notes == [
        f"{path}: test all_gather_perf (started line 2) ends at line 7 without its "
        "'Avg bus bandwidth' line: the log was cut off; its 3 rows are used"
    ]


def test_a_row_cut_before_slurms_lines_is_refused_saying_what_follows_it(tmp_path):
    # the 4096 B row cut after 10 of its 13 columns on line 7, then slurmstepd's and srun's
    # lines (lines 8-9), as a time limit leaves a batch job's output file: refused as any
    # malformed row (docs/collective.md), the error saying that only lines nccl-tests does not
    # print follow it (the first named) and how to read the rows before it. Glued to the cut
    # row (no newline between), slurmstepd's 15 words add 14 columns to the cut row's 10 (its
    # first is glued to '19.00'): 24, more than the table's; the same, naming srun's line
    tail = (
        "slurmstepd: error: *** STEP 4242.0 ON h1 CANCELLED AT 2026-01-05T10:00:00 DUE TO TIME "
        "LIMIT ***\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    )
    cut = ROW3.rsplit(maxsplit=3)[0]
    path = _write(tmp_path, HEAD + ROW + ROW2 + cut + "\n" + tail)
    with pytest.raises(FormatError) as info:
        read_nccl_tests(path)
    assert str(info.value) == (
        f"{path}:7: a result row has 9 or 13 columns (size count type redop root time algbw "
        "busbw #wrong, then in-place), got 10; after it only lines nccl-tests does not print "
        "(line 8: 'slurmstepd: error: *** STEP 4242.0 ON h1 CANCELLED AT 2026-01-05T10:00:00 "
        "DUE TO TIME LIMIT ***'): a log cut off mid-row, then a scheduler's or launcher's "
        "lines? Delete line 7 to read the rows before it"
    )
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + cut + tail))
    assert str(info.value).startswith(f"{path}:7: a result row has 9 or 13 columns")
    assert str(info.value).endswith(
        "got 24; after it only lines nccl-tests does not print (line 8: 'srun: Job step "
        "aborted: Waiting up to 32 seconds for job step to finish.'): a log cut off mid-row, "
        "then a scheduler's or launcher's lines? Delete line 7 to read the rows before it"
    )
    # a row of nccl-tests' after it: no such hint (refused as in
    # test_a_row_cut_off_on_the_last_line_says_the_log_may_be_cut_off)
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + ROW2 + cut + "\n" + tail + AVG))
    assert str(info.value).endswith("got 10")


def test_a_rank_line_cut_on_the_last_line_leaves_its_test_out(tmp_path):
    # all_gather complete (lines 1-6), all_reduce started on line 7, cut in its second rank
    # line (line 9): left out; alone, the same cut is the error of a test with no row
    cut = AR_HEAD[: AR_HEAD.rindex(" on h2")]
    path = _write(tmp_path, HEAD + ROW + AVG + cut)
    (t,) = read_nccl_tests(path)
    assert t.left_out_tests == [
        (
            "all_reduce",
            f"{path}: test all_reduce_perf (started line 7) has no result rows: the log was "
            "cut off; the test is left out",
        )
    ]
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, cut))
    assert str(info.value) == (
        f"{path}: test all_reduce_perf (started line 1) has no result rows: truncated log"
    )
    # not on the last line, a malformed rank line is refused as before
    with pytest.raises(FormatError, match=r"x.log:9: malformed rank line"):
        read_nccl_tests(_write(tmp_path, HEAD + ROW + AVG + cut + "\n" + AR_ROW))


def test_a_table_with_bitwise_per_iteration_and_timestamp_columns_reads_its_time_groups(tmp_path):
    # nccl-tests with the bitwise check, -I 1 and -S 1 (src/util.cu writeResultHeader): each
    # time group gains #bitdiff and i_min i_max i_p99 i_cv%, the row a timestamp of two fields;
    # the reader takes time, algbw, busbw and #wrong of each group, as from the plain table
    header = (
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "  #bitdiff    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong"
        "  #bitdiff    i_min    i_max    i_p99    i_cv%           timestamp\n"
    )
    row = (
        "        1024           128     float    none      -1    10.00    0.10    0.05       0"
        "         0     9.50    11.20    11.00     3.10     9.00    0.11    0.06       0"
        "         0     8.70     9.90     9.80     2.40 2026-12-07 08:00:00\n"
    )
    (t,) = read_nccl_tests(_write(tmp_path, HEAD + header + row + AVG))
    (r,) = t.rows
    assert (r.size_bytes, r.count, r.type, r.redop, r.root) == (1024, 128, "float", "none", -1)
    assert (r.time_us, r.algbw_GBps, r.busbw_GBps) == (10.0, 0.1, 0.05)
    assert (r.inplace_time_us, r.inplace_algbw_GBps, r.inplace_busbw_GBps) == (9.0, 0.11, 0.06)
    # a row of the plain 13 columns under that header is refused, naming the header's count
    plain = ROW
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + header + plain + AVG))
    assert str(info.value).startswith(f"{tmp_path / 'x.log'}:6: a result row has 25 columns")
    assert str(info.value).endswith("got 13")
    # a column topo does not know is refused, naming it
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + header.replace("i_p99", "i_p95") + row + AVG))
    assert "unknown column 'i_p95' after time, algbw, busbw and the check" in str(info.value)
