"""Rows whose redundant columns disagree are left out with a line naming the file and line.

nccl-tests prints size = count x word (x the ranks for all_gather, reduce_scatter, alltoall),
algbw = size / time and busbw = algbw x the op's factor (``src/<op>.cu``: getCollByteCount,
GetBw), each rounded as ``getFloatStr`` of ``src/util.cu`` prints it. The logs here are made by
hand; every expected number is worked out in the comments from those relations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from collective.test_expected import DEGRADED_ROWS, DOCA_ROWS
from collective.test_expected import _log as expected_log

from formats import test_nccl_tests, test_nccl_tests_old
from formats._real import REAL_DATA
from topo.errors import FormatError
from topo.formats import read_nccl_inspector, read_nccl_tests, read_nccl_tests_json
from topo.formats.nccl_tests import half_unit

HEAD = ["# Collective test starting: all_reduce_perf"] + [
    f"#  Rank {i:2d} Group  0 Pid {100 + i} on h1 device {i:2d} [0000:1b:00] NVIDIA H100"
    for i in range(8)
]  # lines 1-9: 8 ranks on one host, so busbw = algbw x 2 x 7 / 8 = algbw x 1.75
# 32 MiB (8,388,608 floats) in 300.0 µs: algbw 33554432 / 300.0 / 1e3 = 111.848 -> 111.85,
# busbw 111.848 x 1.75 = 195.73; 64 MiB in 600.0 µs: the same. Lines 10 and 11.
GOOD = [
    "    33554432       8388608     float     sum      -1    300.0  111.85  195.73      0"
    "    300.0  111.85  195.73      0",
    "    67108864      16777216     float     sum      -1    600.0  111.85  195.73      0"
    "    600.0  111.85  195.73      0",
]
# 128 MiB (33,554,432 floats) in 1200.0 µs: 111.85 and 195.73 again
ROW = (
    "   134217728      33554432     float     sum      -1   1200.0  111.85  195.73      0"
    "   1200.0  111.85  195.73      0"
)
AVG = "# Avg bus bandwidth    : 195.73"


def _log(tmp_path: Path, row: str, head: list[str] = HEAD) -> Path:
    path = tmp_path / "x.log"
    path.write_text("\n".join([*head, *GOOD, row, AVG]) + "\n")
    return path


def test_the_hand_made_rows_agree(tmp_path):
    (t,) = read_nccl_tests(_log(tmp_path, ROW))
    assert [r.line for r in t.rows] == [10, 11, 12] and t.left_out == []


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        # the busbw of 1e30 GB/s (printed with a ratio of 2.5e27)
        ("111.85  195.73      0   1200.0", "111.85    1e30      0   1200.0",
         "busbw 1e+30 GB/s is not from 0 to 1e+06 GB/s"),
        # in range but not algbw x 1.75: 111.85 x 1.75 = 195.7
        ("111.85  195.73      0   1200.0", "111.85  250.00      0   1200.0",
         "busbw 250 GB/s is not algbw 111.85 GB/s x 1.75 (all_reduce of 8 ranks) = 195.7 GB/s"),
        # the busbw of 0.00 beside an algbw of 111.85
        ("111.85  195.73      0   1200.0", "111.85    0.00      0   1200.0",
         "busbw 0 GB/s is not algbw 111.85 GB/s x 1.75 (all_reduce of 8 ranks) = 195.7 GB/s"),
        # the time of 1e30 µs (its algbw and busbw 0.00 agree with it)
        ("1200.0  111.85  195.73      0   1200.0", "1e30    0.00    0.00      0   1200.0",
         "time 1e+30 µs is not above 0 and at most 3.6e+09 µs (one hour)"),
        # 128 MiB in 0.001 µs is 134217728 / 0.001 / 1e3 = 1.342e+08 GB/s, not 111.85
        ("1200.0  111.85  195.73      0   1200.0", "0.001  111.85  195.73      0   1200.0",
         "algbw 111.85 GB/s is not size / time = 134217728 B / 0.001 µs = 1.342e+08 GB/s"),
        # a count that is not size / 4 B: 1000 floats are 4000 B
        ("      33554432     float", "          1000     float",
         "size 134217728 B is not count 1000 x 4 B (float) = 4000 B, as nccl-tests prints "
         "all_reduce"),
        ("      0   1200.0  111.85  195.73      0", "      0      0.0  111.85  195.73      0",
         "in-place time 0 µs is not above 0 and at most 3.6e+09 µs (one hour)"),
        ("      0   1200.0  111.85  195.73      0", "      0   1200.0  111.85  195.90      0",
         "in-place busbw 195.9 GB/s is not algbw 111.85 GB/s x 1.75 (all_reduce of 8 ranks) "
         "= 195.7 GB/s"),
    ],
)  # fmt: skip
def test_a_row_whose_columns_disagree_is_left_out(tmp_path, old, new, why):
    assert old in ROW
    path = _log(tmp_path, ROW.replace(old, new, 1))
    (t,) = read_nccl_tests(path)
    assert [r.size_bytes for r in t.rows] == [33554432, 67108864]
    assert t.left_out == [f"{path}:12: all_reduce_perf row of 134217728 B left out: {why}"]


def test_a_hundredth_off_the_rounding_is_left_out(tmp_path):
    """4 ranks: 32 MiB in 2917.0 µs (printed to 0.1 µs: 2916.95 to 2917.05) is algbw
    11.5029 to 11.5033 GB/s, busbw x 1.5 = 17.2543 to 17.2549: printed 17.25, never 17.26."""
    head = HEAD[:5]  # 4 ranks
    row = "    33554432       8388608     float     sum      -1   2917.0   11.50   {}      0"
    good = [row.format("17.25"), row.format("17.26")]
    path = tmp_path / "x.log"
    path.write_text("\n".join([*head, *good, AVG]) + "\n")
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == [6]
    assert t.left_out == [
        f"{path}:7: all_reduce_perf row of 33554432 B left out: busbw 17.26 GB/s is not algbw "
        "11.5 GB/s x 1.5 (all_reduce of 4 ranks) = 17.25 GB/s"
    ]


def test_an_all_gather_count_is_one_ranks_share(tmp_path):
    """all_gather of 8 ranks: 32 MiB is 8 x 1,048,576 floats; algbw 111.85 x 7/8 = 97.87."""
    head = [HEAD[0].replace("all_reduce", "all_gather"), *HEAD[1:]]
    row = "    33554432       {:>7}     float    none      -1    300.0  111.85   97.87      0"
    path = tmp_path / "x.log"
    path.write_text("\n".join([*head, row.format(1048576), row.format(8388608), AVG]) + "\n")
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == [10]
    assert t.left_out == [
        f"{path}:11: all_gather_perf row of 33554432 B left out: size 33554432 B is not count "
        "8388608 x 4 B (float) x 8 ranks = 268435456 B, as nccl-tests prints all_gather"
    ]


def test_a_test_with_no_plausible_row_is_an_error(tmp_path):
    path = tmp_path / "x.log"
    bad = ROW.replace("195.73      0   1200.0", "250.00      0   1200.0", 1)
    path.write_text("\n".join([*HEAD, bad, AVG]) + "\n")
    with pytest.raises(FormatError) as e:
        read_nccl_tests(path)
    assert str(e.value) == (
        f"{path}:10: all_reduce_perf row of 134217728 B: busbw 250 GB/s is not algbw 111.85 "
        "GB/s x 1.75 (all_reduce of 8 ranks) = 195.7 GB/s; no plausible row is left in test "
        "all_reduce_perf (started line 1)"
    )


@pytest.mark.parametrize(
    ("x", "width", "half"),
    [
        (99.99, 7, 0.005),  # %7.2f, both formats
        (2925.6, 7, 0.05),  # old %7.1f from 100 µs (getFloatStr would print 2925.60)
        (12345.0, 7, 0.5),  # old %7.0f; getFloatStr %7.1f
        (123456.0, 7, 0.5),  # both %7.0f
        (12345678.0, 7, 0.05 * 1e7),  # getFloatStr %7.1e: 1.2e+07
        (999.99, 6, 0.005),  # %6.2f
        (1234.5, 6, 0.05),  # getFloatStr %6.1f
    ],
)
def test_half_a_printed_digit(x, width, half):
    assert half_unit(x, width) == pytest.approx(half)


# -- the other readers ----------------------------------------------------------------------

REPORT = {
    "version": 3,
    "args": ["./build/all_reduce_perf"],
    "devices": [{"rank": i, "hostname": "h1"} for i in range(8)],
    "results": [
        {
            "size": size,
            "count": size // 4,
            "type": "float",
            "redop": "sum",
            "root": "    -1",
            # 1 MiB per 10 µs: algbw 104.8576 GB/s, busbw x 1.75 = 183.5008 GB/s
            "out_of_place": {
                "time": size / 1048576 * 10,
                "alg_bw": 104.8576,
                "bus_bw": 183.5008,
                "nwrong": 0,
            },
            "in_place": None,
        }
        for size in (1 << 20, 1 << 21, 1 << 22)
    ],
}


def test_a_json_result_whose_columns_disagree_is_left_out(tmp_path):
    doc = json.loads(json.dumps(REPORT))
    doc["results"][1]["out_of_place"]["bus_bw"] = 1e30
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    (t,) = read_nccl_tests_json(path)
    assert [r.size_bytes for r in t.rows] == [1 << 20, 1 << 22]
    assert t.left_out == [
        f"{path}: results[1]: all_reduce_perf row of 2097152 B left out: busbw 1e+30 GB/s is "
        "not from 0 to 1e+06 GB/s"
    ]


def test_an_inspector_record_whose_busbw_is_not_its_algbws_is_left_out(tmp_path):
    """AllReduce of 4 ranks: 1 MB in 100 µs is algbw 10 GB/s, busbw 10 x 2 x 3 / 4 = 15."""

    def rec(rank: int, bus: float) -> str:
        return json.dumps(
            {
                "header": {"id": "0x1", "rank": rank, "n_ranks": 4, "nnodes": 1},
                "metadata": {"inspector_output_format_version": "v4.0", "hostname": "h"},
                "coll_perf": {
                    "coll": "AllReduce",
                    "coll_sn": 1,
                    "coll_msg_size_bytes": 1000000,
                    "coll_exec_time_us": 100,
                    "coll_algobw_gbs": 10.0,
                    "coll_busbw_gbs": bus,
                },
            }
        )

    path = tmp_path / "i.log"
    path.write_text("\n".join([rec(0, 15.0), rec(1, 15.0), rec(2, 30.0), rec(3, 15.0)]) + "\n")
    (t,) = read_nccl_inspector(path)
    assert [(r.size_bytes, r.time_us, r.busbw_GBps) for r in t.rows] == [(1000000, 100, 15.0)]
    assert t.left_out == [
        f"{path}:3: AllReduce record of 1000000 B left out: coll_busbw_gbs 30 is not "
        "coll_algobw_gbs 10 x 1.5 (all_reduce of 4 ranks) = 15"
    ]


# -- nothing real is left out -------------------------------------------------------------------


def _fixture_logs(tmp_path: Path) -> list[Path]:
    """The nccl-tests logs the tests hold (public layouts and public rows), as files."""
    old = test_nccl_tests_old
    texts = {
        "old_all_reduce.log": old.ALL_REDUCE,
        "old_all_gather.log": "$ ./build/all_gather_perf\n" + old.ALL_GATHER,
        "old_broadcast.log": "$ ./build/broadcast_perf\n" + old.BROADCAST,
        "old_reduce.log": "$ ./build/reduce_perf\n" + old.REDUCE,
        "new.log": test_nccl_tests.HEAD + test_nccl_tests.ROW + test_nccl_tests.AVG,
    }
    paths = []
    for name, text in texts.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(text)
    paths.append(expected_log(tmp_path, DOCA_ROWS, "doca.log"))
    paths.append(expected_log(tmp_path, DEGRADED_ROWS, "degraded.log"))
    return paths


def test_no_row_of_the_tests_fixtures_is_left_out(tmp_path):
    paths = _fixture_logs(tmp_path)
    rows = 0
    for path in paths:
        for t in read_nccl_tests(path):
            assert t.left_out == [], path
            rows += len(t.rows)
    # 2 + 1 + 1 + 1 rows of the old layouts, 1 of the new, 7 + 7 public rows
    assert rows == 2 + 1 + 1 + 1 + 1 + 7 + 7


def test_no_row_of_the_real_logs_is_left_out():
    folder = REAL_DATA / "nccl_tests_logs"
    logs = sorted(p for p in folder.glob("*/*.log") if "FAILED" not in p.name)
    if not logs:
        pytest.skip(f"real data not available: {folder}")
    rows = 0
    for path in logs:
        for t in read_nccl_tests(path):
            assert t.left_out == [], (path, t.left_out)
            rows += len(t.rows)
    assert rows == 7 * 5 * 10 - 3 * 10  # 6 logs of 5 tests, 1 of 2 (pairwise); 10 sizes each


def test_a_cpu_time_is_not_held_to_algbw(tmp_path):
    """nccl-tests -C 1 prints the CPU's time under 'cputime' (src/common.cu) while algbw is
    the GPU's: 32 MiB at 111.85 GB/s beside a CPU time of 500.0 µs is what it prints; busbw
    is still algbw x 1.75 (195.73), and 250.00 is left out."""
    header = (
        "#       size         count      type   redop    root  cputime   algbw   busbw #wrong"
        "  cputime   algbw   busbw #wrong"
    )
    row = "    33554432       8388608     float     sum      -1    500.0  111.85  {}      0"
    path = tmp_path / "x.log"
    path.write_text("\n".join([*HEAD, header, row.format("195.73"), row.format("250.00"), AVG]))
    (t,) = read_nccl_tests(path)
    assert [r.line for r in t.rows] == [11]
    assert t.left_out == [
        f"{path}:12: all_reduce_perf row of 33554432 B left out: busbw 250 GB/s is not algbw "
        "111.85 GB/s x 1.75 (all_reduce of 8 ranks) = 195.7 GB/s"
    ]
    doc = json.loads(json.dumps(REPORT))
    for r in doc["results"]:
        r["out_of_place"]["cpu_time"] = r["out_of_place"].pop("time") * 2
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    (j,) = read_nccl_tests_json(path)
    assert len(j.rows) == 3 and j.left_out == []
