"""nccl-tests JSON reports (-J, format version 3 of nccl-tests' src/util.cu).

The reports here are written as nccl-tests writes them (its key names and layout), from the
rows of a real text log, so reading either gives the same measurements.
"""

from __future__ import annotations

import json

import pytest

from formats._real import real_file
from topo.errors import FormatError
from topo.formats import read_nccl_tests, read_nccl_tests_any, read_nccl_tests_json


def _report(test, binary: str) -> dict:
    """The JSON nccl-tests writes for ``test`` (util.cu: jsonOutputInit, writeBenchmarkLine*)."""
    results = []
    for r in test.rows:
        body = {"time": r.time_us, "alg_bw": r.algbw_GBps, "bus_bw": r.busbw_GBps, "nwrong": 0}
        ip = None
        if r.inplace_time_us is not None:
            ip = {
                "time": r.inplace_time_us,
                "alg_bw": r.inplace_algbw_GBps,
                "bus_bw": r.inplace_busbw_GBps,
                "nwrong": 0,
            }
        results.append(
            {
                "size": r.size_bytes,
                "count": r.count,
                "type": r.type,
                "redop": r.redop,
                "root": f"{r.root:6d}",
                "out_of_place": body,
                "in_place": ip,
                "actual_iterations": 20,
                "experiment_name": "",
            }
        )
    devices = [
        {"rank": i, "group": 0, "pid": 1, "hostname": h, "device": i % 8}
        for i, h in enumerate(h for h in test.hosts for _ in range(test.gpus_per_node))
    ]
    return {
        "version": 3,
        "start_time": "2026-01-29 18:02:19",
        "args": [binary, "-b", "32M", "-e", "16G", "-f", "2", "-J", "out.json"],
        "env": [],
        "nccl_version": int(test.nccl_version),
        "config": {"nthreads": 1, "ngpus": 1},
        "devices": devices,
        "results": results,
        "end_time": "2026-01-29 18:10:00",
    }


@pytest.fixture(scope="module")
def text_tests():
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G2.log")
    return read_nccl_tests(log)


def test_a_report_reads_as_its_text_log(tmp_path, text_tests):
    for t in text_tests:
        f = tmp_path / f"{t.op}.json"
        f.write_text(json.dumps(_report(t, f"/opt/nccl-tests/build/{t.op}_perf")))
        (j,) = read_nccl_tests_json(f)
        assert (j.op, j.ranks, j.hosts, j.gpus_per_node) == (
            t.op,
            t.ranks,
            t.hosts,
            t.gpus_per_node,
        )
        assert j.nccl_version == "22902"
        assert len(j.rows) == len(t.rows)
        for a, b in zip(j.rows, t.rows, strict=True):
            assert (a.size_bytes, a.count, a.type, a.redop, a.root) == (
                b.size_bytes,
                b.count,
                b.type,
                b.redop,
                b.root,
            )
            assert (a.time_us, a.busbw_GBps, a.inplace_busbw_GBps) == (
                b.time_us,
                b.busbw_GBps,
                b.inplace_busbw_GBps,
            )
        # the mean out-of-place busbw, worked from the text log's rows
        assert j.avg_busbw_GBps == pytest.approx(sum(r.busbw_GBps for r in t.rows) / len(t.rows))
        assert read_nccl_tests_any(f)[0].rows == j.rows


def test_any_reads_text_logs_too(text_tests):
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G2.log")
    assert [t.op for t in read_nccl_tests_any(log)] == [t.op for t in text_tests]


def test_skipped_sizes_are_left_out(tmp_path, text_tests):
    doc = _report(text_tests[0], "all_reduce_perf")
    doc["results"][0]["out_of_place"] = None
    f = tmp_path / "r.json"
    f.write_text(json.dumps(doc))
    (j,) = read_nccl_tests_json(f)
    assert len(j.rows) == len(text_tests[0].rows) - 1


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(version=2), "format version 2"),
        (lambda d: d.update(args=["./build/foo"]), "not an nccl-tests"),
        (lambda d: d.pop("args"), "'args' must be a list"),
        (lambda d: d.update(results=[]), "no results"),
        (lambda d: d["results"][0]["out_of_place"].update(bus_bw=-1.0), "bus_bw must be >= 0"),
        (lambda d: d["results"][0]["out_of_place"].update(time="x"), "time must be a finite"),
        (lambda d: d["results"][1].pop("size"), "results[1].size must be a whole number"),
        (
            lambda d: d["results"][1].update(size=1 << 63),
            "results[1]: size must be from 0 to 9,223,372,036,854,775,807",
        ),
    ],
)
def test_bad_reports_are_one_line_errors(tmp_path, text_tests, mutate, message):
    doc = _report(text_tests[0], "all_reduce_perf")
    mutate(doc)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert message in str(e.value) and str(f) in str(e.value)
    assert "\n" not in str(e.value)


def test_a_number_too_long_is_refused_before_parsing(tmp_path, text_tests):
    # Python's int() stops at 4,300 digits with a ValueError: refused by the digit limit first
    text = json.dumps(_report(text_tests[0], "all_reduce_perf"))
    f = tmp_path / "long.json"
    f.write_text(text.replace('"count": ', '"count": ' + "7" * 5000, 1))
    with pytest.raises(FormatError, match=r"long.json:1: a number of 5,00\d digits: numbers in "):
        read_nccl_tests_json(f)


def test_not_json(tmp_path):
    f = tmp_path / "x.json"
    f.write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        read_nccl_tests_json(f)
    f.write_text("[1, 2]")
    with pytest.raises(FormatError, match="is an object"):
        read_nccl_tests_json(f)


SMALL = {
    "version": 3,
    "args": ["./build/all_gather_perf"],
    "devices": [{"rank": 0, "hostname": "a"}, {"rank": 1, "hostname": "a"}],
    "results": [
        {
            "size": 1024,
            "count": 128,
            "type": "float",
            "redop": "none",
            "root": "    -1",
            "out_of_place": {"time": 10.0, "alg_bw": 0.1024, "bus_bw": 0.0512, "nwrong": 0},
            "in_place": None,
        }
    ],
}
"""A hand-made report: all_gather of 2 ranks, 128 floats each (2 x 128 x 4 = 1,024 B) in
10 µs: algbw 1024 / 10 / 1e3 = 0.1024 GB/s, busbw 0.1024 x (2-1)/2 = 0.0512 GB/s."""


@pytest.mark.parametrize(
    "old, new, message",
    [
        # json.loads reads Infinity; int(inf) raised OverflowError
        ('"size": 1024', '"size": Infinity', "results[0].size must be a whole number, got inf"),
        ('"count": 128', '"count": -Infinity', "results[0].count must be a whole number, got -inf"),
        ('"size": 1024', '"size": NaN', "results[0].size must be a whole number, got nan"),
        ('"size": 1024', '"size": 1024.5', "results[0].size must be a whole number, got 1024.5"),
        (
            '"bus_bw": 0.0512',
            '"bus_bw": ' + "9" * 400,
            ":1: a number of 400 digits: numbers in input files have at most 100 digits",
        ),
    ],
)
def test_an_unconvertible_number_is_a_one_line_error(tmp_path, old, new, message):
    text = json.dumps(SMALL)
    assert old in text
    f = tmp_path / "bad.json"
    f.write_text(text.replace(old, new))
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert str(e.value) == f"{f}{'' if message.startswith(':') else ': '}{message}"


def test_a_report_cut_off_says_so(tmp_path):
    # nccl-tests -J writes its report as the test runs and closes it at the end, so a job
    # killed mid-test leaves it cut: here inside its one result, after '"count": 12' on line
    # 1 (json.dumps writes one line; column 137 is where the text ends). The error says the
    # report was cut off, not only the parser's "Expecting ',' delimiter"; a malformed report
    # that goes on past the fault is the parser's error as before.
    text = json.dumps(SMALL)
    cut = text[: text.index('"count": 128') + len('"count": 12')]
    f = tmp_path / "cut.json"
    f.write_text(cut + "\n")
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert str(e.value) == (
        f"{f}:1:{len(cut) + 1}: not valid JSON: Expecting ',' delimiter; the report ends there, "
        "before it closes: cut off (a job killed before nccl-tests -J finished it)? topo reads "
        "a JSON report whole; the same run's text log (stdout) keeps the rows printed whole"
    )
    # cut inside a string, no newline after it (the parser's position is the string's start)
    cut = text[: text.index('"float"') + len('"flo')]
    f.write_text(cut)
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert str(e.value).startswith(
        f"{f}:1:{len(cut) + 1}: not valid JSON: Unterminated string; the report ends there, "
        "before it closes: cut off"
    )
    # NUL bytes after the cut (a network file system's zero fill of the lost writes): the same
    cut = text[: text.index('"count": 128') + len('"count": 12')]
    f.write_text(cut + "\0" * 300)
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert str(e.value).startswith(
        f"{f}:1:{len(cut) + 1}: not valid JSON: Expecting ',' delimiter; the report ends there"
    )
    f.write_text(text.replace('"count": 128,', '"count": 128'))
    with pytest.raises(FormatError) as e:
        read_nccl_tests_json(f)
    assert str(e.value).endswith(": not valid JSON: Expecting ',' delimiter")
