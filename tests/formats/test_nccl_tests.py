"""The nccl-tests log reader on every log of ../shared/data/real/nccl_tests_logs, checked
against the tool's own parsed summary (summary.csv) and the files' headers; and on cut-off and
failed logs, which must be errors naming what is missing."""

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


def test_truncated_logs_are_errors(tmp_path):
    with pytest.raises(
        FormatError, match=r"x.log: test all_gather_perf \(started line 2\) has no result rows"
    ):
        read_nccl_tests(_write(tmp_path, HEAD))
    with pytest.raises(
        FormatError, match="no 'Avg bus bandwidth' line after its last row \\(line 5\\)"
    ):
        read_nccl_tests(_write(tmp_path, HEAD + ROW))
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


def test_a_row_cut_off_on_the_last_line_says_the_log_may_be_cut_off(tmp_path):
    # a job killed mid-write: its last row has 10 of 13 columns; the same row followed by
    # another line says nothing of the file's end (blank lines after the last do not count)
    cut = ROW.rsplit(maxsplit=3)[0] + "\n"
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + ROW + cut + "\n  \n"))
    assert str(info.value) == (
        f"{tmp_path / 'x.log'}:6: a result row has 9 or 13 columns (size count type redop root "
        "time algbw busbw #wrong, then in-place), got 10; it is the file's last line: a log cut "
        "off?"
    )
    with pytest.raises(FormatError) as info:
        read_nccl_tests(_write(tmp_path, HEAD + cut + ROW))
    assert str(info.value).endswith("got 10")


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
