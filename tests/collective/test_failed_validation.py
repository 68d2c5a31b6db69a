"""nccl-tests rows that failed data validation are not measurements of the fabric.

nccl-tests (``src/common.cu``) checks each result and prints the count of wrong elements in the
``#wrong`` column of the out-of-place and of the in-place half of a row (``N/A`` with ``-c 0``),
then ``# Out of bounds values : N OK|FAILED`` under the table. ``topo collective --compare``
and ``--calibrate`` leave such rows out with a warning, and refuse a log with none left. The
logs here are copies of a real log, edited in ``tmp_path`` (never kept in the project).
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
from topo.errors import FormatError
from topo.fabric import save
from topo.formats.nccl_tests import read_nccl_tests, validated_tests

LOG = ("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
SIZES = [33554432 * 2**i for i in range(10)]  # the log's all_reduce sizes, 32 MiB .. 16 GiB


def run(*args: Any) -> Result:
    return CliRunner().invoke(app, ["collective", *map(str, args)])


def edited(
    tmp_path: Path,
    op: str = "all_reduce",
    wrong: dict[int, tuple[str, str]] | None = None,
    footer: str | None = None,
    replace_line: tuple[str, str] | None = None,
) -> Path:
    """A copy of the real log with the ``#wrong`` columns (row i of ``op``: out-of-place,
    in-place) and the Out-of-bounds footer of ``op`` rewritten."""
    lines = real_file(*LOG).read_text().splitlines()
    out, current, row = [], None, 0
    for line in lines:
        if "Collective test starting:" in line:
            current, row = line.split()[-1].removesuffix("_perf"), 0
        fields = line.split()
        if current == op and fields and fields[0].isdigit():
            if wrong and row in wrong:
                fields[8], fields[12] = wrong[row]
                line = "  " + "  ".join(fields)
            row += 1
        if current == op and footer is not None and line.startswith("# Out of bounds values"):
            line = footer
        if replace_line is not None and line.startswith(replace_line[0]):
            line = replace_line[1]
        out.append(line)
    path = tmp_path / "edited.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_the_wrong_columns_are_read(tmp_path: Path) -> None:
    path = edited(tmp_path, wrong={0: ("17", "0"), 3: ("0", "1e+06"), 5: ("N/A", "N/A")})
    (t,) = [x for x in read_nccl_tests(path) if x.op == "all_reduce"]
    assert [(r.wrong, r.inplace_wrong) for r in t.rows[:6]] == [
        (17, 0),
        (0, 0),
        (0, 0),
        (0, 1_000_000),
        (0, 0),
        (None, None),
    ]
    assert t.out_of_bounds == 0  # the footer as nccl-tests printed it: "0 OK"
    assert [r.failed_validation for r in t.rows[:6]] == [True, False, False, True, False, False]
    with pytest.raises(FormatError, match=r"edited.log:\d+: #wrong must be a whole number"):
        read_nccl_tests(edited(tmp_path, wrong={2: ("-1", "0")}))


def test_rows_that_failed_are_left_out_with_a_warning(tmp_path: Path) -> None:
    path = edited(
        tmp_path, wrong={0: ("17", "0"), 3: ("0", "5")}, footer="# Out of bounds values : 2 FAILED"
    )
    tests = read_nccl_tests(path)
    kept, warnings = validated_tests(tests, path)
    (ar,) = [t for t in kept if t.op == "all_reduce"]
    assert [r.size_bytes for r in ar.rows] == [s for i, s in enumerate(SIZES) if i not in (0, 3)]
    assert [len(t.rows) for t in kept if t.op != "all_reduce"] == [10, 10, 10, 10]
    assert warnings == [
        f"{path}: all_reduce_perf: 2 of 10 sizes failed nccl-tests' data check (#wrong > 0, "
        f"22 wrong elements in all) and are left out: sizes {SIZES[0]}, {SIZES[3]} B"
    ]
    # The CLI: the warning on stderr, the rows out of the comparison.
    r = run("--compare", path, "--op", "all_reduce", "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("topo: warning: ") == 1 and warnings[0] in r.stderr
    (cmp,) = json.loads(r.stdout)
    assert [row["size_bytes"] for row in cmp["rows"]] == [
        s for s in SIZES if s not in (SIZES[0], SIZES[3])
    ]


def test_calibrate_fits_on_the_rows_left(tmp_path: Path) -> None:
    path = edited(tmp_path, wrong={1: ("3", "3"), 2: ("1", "0"), 9: ("0", "2")})
    G = build("ft2", switch_ports=16, gpus=80, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)
    fab = tmp_path / "h100.json"
    save(G, fab)
    r = run(fab, "--calibrate", path, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"] == 50 - 3  # 5 ops x 10 sizes, 3 failed
    assert "3 of 10 sizes failed" in r.stderr


def test_a_failed_footer_without_rows_marked_leaves_the_test_out(tmp_path: Path) -> None:
    path = edited(tmp_path, footer="# Out of bounds values : 4 FAILED")
    kept, warnings = validated_tests(read_nccl_tests(path), path)
    assert [t.op for t in kept] == ["all_gather", "reduce_scatter", "alltoall", "sendrecv"]
    assert warnings == [
        f"{path}: all_reduce_perf: 10 of 10 sizes failed nccl-tests' data check (its footer "
        f"counts 4 out-of-bounds values (FAILED)) and are left out: sizes "
        + ", ".join(map(str, SIZES))
        + " B"
    ]
    r = run("--compare", path, "--op", "all_reduce")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.stderr.strip().splitlines() == [
        f"topo: error: {path}: every result row failed nccl-tests' data check (#wrong > 0 or "
        "'Out of bounds values' FAILED): nothing measured is left to use"
    ]


def test_a_malformed_rank_line_names_the_log_and_the_line(tmp_path: Path) -> None:
    # It gave "--gpus 79 must be a multiple of --gpus-per-node 8", options never given.
    text = real_file(*LOG).read_text().splitlines()
    lineno = 1 + next(i for i, x in enumerate(text) if x.startswith("#  Rank 79 "))
    path = edited(tmp_path, replace_line=("#  Rank 79 ", "#  Rank 79 Group  0 Pid 1607276 on"))
    r = run("--compare", path, "--op", "all_reduce")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.stderr.strip().splitlines() == [
        f"topo: error: {path}:{lineno}: malformed rank line '#  Rank 79 Group  0 Pid 1607276 "
        "on': expected '#  Rank N Group G Pid P on HOST device D ...' (the ranks and hosts are "
        "counted from these lines)"
    ]


def test_a_json_report_s_nwrong_counts_as_the_log_s_wrong_column(tmp_path: Path) -> None:
    # nccl-tests -J writes "nwrong" in each half of a result (null with -c 0) and
    # "out_of_bounds": {"count", "okay"} after the results (src/util.cu).
    def result(size: int, nwrong: int | None) -> dict[str, Any]:
        # all_gather of 16 ranks: count is one rank's share, busbw algbw x 15 / 16
        alg = size / 100.0 / 1e3
        body = {"time": 100.0, "alg_bw": alg, "bus_bw": alg * 15 / 16, "nwrong": nwrong}
        return {
            "size": size,
            "count": size // 4 // 16,
            "type": "float",
            "redop": "none",
            "root": "    -1",
            "out_of_place": body,
            "in_place": {**body, "nwrong": 0 if nwrong is not None else None},
        }

    doc = {
        "version": 3,
        "args": ["./build/all_gather_perf"],
        "devices": [{"rank": r, "hostname": f"h{r // 8}"} for r in range(16)],
        "results": [result(1 << 20, 0), result(1 << 21, 3), result(1 << 22, None)],
        "out_of_bounds": {"count": 1, "okay": False},
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(doc))
    from topo.formats.nccl_tests_json import read_nccl_tests_json

    (t,) = read_nccl_tests_json(path)
    assert [(r.wrong, r.inplace_wrong) for r in t.rows] == [(0, 0), (3, 0), (None, None)]
    assert t.out_of_bounds == 1
    (kept,), warnings = validated_tests([t], path)
    assert [r.size_bytes for r in kept.rows] == [1 << 20, 1 << 22]
    assert warnings == [
        f"{path}: all_gather_perf: 1 of 3 sizes failed nccl-tests' data check (#wrong > 0, "
        f"3 wrong elements in all) and are left out: sizes {1 << 21} B"
    ]
