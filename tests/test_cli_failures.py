"""``topo bandwidth`` with --routing, failures and --html; ``topo resilience``.

Small fabrics (8-port switches); expected values worked out by hand in each test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from topo.cli import app

runner = CliRunner()
NIC = 50.0  # GB/s


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def ft2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # 16 servers x 2 GPUs, 2 x 400G NICs each, non-blocking: 32 GPUs.
    path = tmp_path_factory.mktemp("f") / "ft2.json"
    r = run(
        "build", "ft2", "--switch-ports", 8, "--gpus-per-node", 2, "--nics-per-node", 2, "-o", path
    )
    assert r.exit_code == 0, r.output
    return path


@pytest.fixture(scope="module")
def mpft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("f") / "mpft.json"
    r = run(
        "build",
        "mpft",
        "--switch-ports",
        8,
        "--gpus-per-node",
        4,
        "--nics-per-node",
        4,
        "--gpus",
        64,
        "-o",
        path,
    )
    assert r.exit_code == 0, r.output
    return path


def test_random_failures_are_reproducible_and_listed(ft2: Path) -> None:
    a = json.loads(run("bandwidth", ft2, "--fail-links", 3, "--seed", 5, "--json").stdout)
    b = json.loads(run("bandwidth", ft2, "--fail-links", 3, "--seed", 5, "--json").stdout)
    c = json.loads(run("bandwidth", ft2, "--fail-links", 3, "--seed", 6, "--json").stdout)
    assert a["failed_links"] == b["failed_links"] and len(a["failed_links"]) == 3
    assert a["failed_links"] != c["failed_links"]
    assert a["alltoall_busbw_GBps"] == b["alltoall_busbw_GBps"]
    assert a["disconnected"] == [] and a["disconnected_gpus"] == 0
    assert a["routing"] == "optimal"


def test_a_cut_off_server_is_reported_not_dropped(ft2: Path) -> None:
    # Both NIC cables of server 0 fail: its 2 GPUs are out; the other 30 GPUs in 15 servers
    # are NIC-bound: lambda = 2 x 50 / (2 x 28) GB/s, busbw = lambda x 29.
    G = json.loads(ft2.read_text())
    cables = [
        f"{e['source']}--{e['target']}"
        for e in G["edges"]
        if {e["source"], e["target"]} & {"node0/nic0", "node0/nic1"} and e["kind"] == "endpoint"
    ]
    args = [a for c in cables for a in ("--fail", c)]
    r = run("bandwidth", ft2, *args, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["disconnected"] == ["0"] and d["disconnected_gpus"] == 2
    assert d["gpus"] == 30
    assert d["alltoall_busbw_GBps"] == pytest.approx(2 * NIC / (2 * 28) * 29, rel=1e-6)
    table = run("bandwidth", ft2, *args).stdout
    assert "DISCONNECTED: 2 GPUs in 1 server (0)" in table


@pytest.mark.parametrize(
    "args,message",
    [
        (["--fail", "spine77"], "--fail 'spine77' is neither a switch nor a link"),
        (["--fail-links", 100000], "--fail-links 100000: fabric ft2-32 has 64 cables"),
        (["--fail-switches", 13], "--fail-switches 13: fabric ft2-32 has 12 switches"),
        (
            ["--fail-switches", 2, "--fail-links", 60],
            "--fail-links 60: fabric ft2-32 has 48 cables left after the other failures",
        ),
    ],
)
def test_bad_failures_are_one_line_errors(ft2: Path, args: list, message: str) -> None:
    r = run("bandwidth", ft2, *args)
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"topo: error: {message}")


def test_routing_dmodk_on_non_blocking_ft2_reaches_the_line_rate(ft2: Path) -> None:
    # D-mod-k balances a full FT2's all-to-all: every NIC cable at 50 GB/s, as the LP.
    d = json.loads(run("bandwidth", ft2, "--routing", "dmodk", "--json").stdout)
    assert d["routing"] == "dmodk"
    opt = json.loads(run("bandwidth", ft2, "--json").stdout)
    assert d["alltoall_busbw_GBps"] == pytest.approx(opt["alltoall_busbw_GBps"], rel=1e-6)
    r = run("bandwidth", ft2, "--routing", "ecmp", "--seed", 1)
    assert r.exit_code == 0 and "hash collisions cost" in r.stdout


def test_mpft_without_pxn_is_refused_clearly(mpft: Path) -> None:
    r = run("bandwidth", mpft, "--routing", "ecmp", "--no-pxn")
    assert r.exit_code == 1
    assert r.stderr.startswith("topo: error: ") and len(r.stderr.strip().splitlines()) == 1


def test_html_link_load_page(ft2: Path, tmp_path: Path) -> None:
    page = tmp_path / "load.html"
    r = run("bandwidth", ft2, "--fail-links", 2, "--html", page)
    assert r.exit_code == 0, r.output
    text = page.read_text()
    assert "plotly" in text.lower() and "all-to-all link load (optimal)" in text


def test_bounds_when_the_lp_is_too_large(ft2: Path) -> None:
    # One leaf uplink gone: leaf0 keeps 3 of 4 uplinks for its 4 NICs (8-port, non-blocking),
    # the cut around leaf0 gives lambda <= 150 / (4 * 28) GB/s, and ECMP's even split meets it.
    d = json.loads(
        run("bandwidth", ft2, "--fail", "leaf0--spine0", "--max-variables", 10, "--json").stdout
    )
    # The routing meets the cut, so the bounds path gives the exact rate ("certified").
    assert d["exact"] is True and d["method"] == "certified"
    assert d["alltoall_busbw_GBps"] == pytest.approx(3 * NIC / (4 * 28) * 31, rel=1e-6)


def test_resilience_compares_fabrics_reproducibly(ft2: Path, mpft: Path) -> None:
    args = ["resilience", ft2, mpft, "--trials", 3, "--fail-links", 2, "--seed", 4, "--json"]
    a = json.loads(run(*args).stdout)
    b = json.loads(run(*args).stdout)

    def timeless(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in x.items() if k != "seconds"} for x in rows]

    assert timeless(a) == timeless(b)
    assert [x["trials"] for x in a] == [3, 3]
    for x in a:
        v = sorted(x["busbw_GBps"])
        assert x["min_GBps"] == v[0] and x["max_GBps"] == v[-1] and x["median_GBps"] == v[1]
        assert x["p5_GBps"] is None  # 3 trials: none at the 5th percentile (P5_MIN_TRIALS)
        assert x["min_GBps"] <= x["median_GBps"] <= x["intact_busbw_GBps"] + 1e-9
    # Each trial matches a single bandwidth run with its seed (listed in trial_seeds).
    seed = a[0]["trial_seeds"][1]
    one = json.loads(run("bandwidth", ft2, "--fail-links", 2, "--seed", seed, "--json").stdout)
    assert a[0]["busbw_GBps"][1] == pytest.approx(one["alltoall_busbw_GBps"])
    table = run(*args[:-1]).stdout
    assert "p5" in table and "median" in table


def test_resilience_needs_failures(ft2: Path) -> None:
    r = run("resilience", ft2, "--trials", 2)
    assert r.exit_code == 1
    assert "give --fail-links N and/or --fail-switches M" in r.stderr


def test_no_pxn_is_refused_where_it_changes_nothing(mpft: Path) -> None:
    # The optimal all-to-all routes through any NIC of a server over NVLink: --no-pxn would
    # be ignored there, so it is refused (it applies to the as-routed models only).
    for verb in ("bandwidth", "resilience"):
        r = run(verb, mpft, "--no-pxn")
        assert r.exit_code == 1
        assert r.stderr.strip() == (
            "topo: error: --no-pxn applies to --routing ecmp, dmodk or lft: the optimal "
            "all-to-all (maximum concurrent flow) may route through any NIC of a server, "
            "over NVLink"
        )


def test_resilience_never_shows_a_bound_as_a_value(tmp_path: Path) -> None:
    # An LP limit of 10 variables leaves some trials with bounds only: their values are null
    # in --json, a statistic they leave uncertain is null with its certified range, and the
    # table shows that range as low..high with a note, never a lower bound as the value.
    mrft = tmp_path / "mrft.json"
    build = ["build", "mrft", "--switch-ports", 8, "--gpus-per-node", 4, "--nics-per-node", 4]
    assert run(*build, "-o", mrft).exit_code == 0
    args = ["resilience", mrft, "--trials", 4, "--fail-links", 3, "--seed", 1]
    d = json.loads(run(*args, "--max-variables", 10, "--json").stdout)[0]
    assert d["exact_trials"] < 4 and None in d["busbw_GBps"]
    assert d["p5_GBps"] is None and "p5" not in d["range_GBps"]  # 4 trials: no p5
    unknown = [k for k in ("min", "median", "mean", "max") if d[f"{k}_GBps"] is None]
    assert unknown
    for k in unknown:
        lo, hi = d["range_GBps"][k]
        assert lo < hi
    table = run(*args, "--max-variables", 10).stdout
    k = unknown[0]
    lo, hi = d["range_GBps"][k]
    assert f"{lo:.2f}..{hi:.2f}" in table
    assert "that statistic is unknown" in table


def test_the_unknown_note_is_not_printed_for_p5_of_few_exact_trials(tmp_path: Path) -> None:
    # 4 trials, every one exact: p5 is "-" (fewer than 20 trials) with its own note, and no
    # statistic is unknown; the table said "low..high: that statistic is unknown" all the
    # same (the null p5 was taken for an unknown statistic). The trial that left two servers
    # on parts of the switches with nothing in common is "apart", not cut off.
    ft2 = tmp_path / "ft2.json"
    assert run("build", "ft2", "--switch-ports", 8, "-o", ft2).exit_code == 0
    args = ["resilience", ft2, "--trials", 4, "--fail-links", 40]
    d = json.loads(run(*args, "--json").stdout)[0]
    assert d["exact_trials"] == 4 and d["p5_GBps"] is None and "p5" not in d["range_GBps"]
    assert all(d[f"{k}_GBps"] is not None for k in ("min", "median", "mean", "max"))
    table = run(*args).stdout
    assert "p5 -: fewer than 20 trials" in table
    assert "that statistic is unknown" not in table
    assert d["trials_apart"] == 1 and d["trials_with_disconnected"] == 0
    assert "1 trial apart" in table and "  apart: trials that cut no server off" in table
    assert "up to 0 GPUs" not in table


def test_bounds_far_apart_say_the_value_is_unknown(tmp_path: Path) -> None:
    # A Slim Fly (q = 5) with an LP limit of 10 variables: only the cut and a spanning-tree
    # routing bound it, far more than 2% apart, and the table says the value is unknown.
    sf = tmp_path / "sf.json"
    assert run("build", "slimfly", "--q", 5, "-o", sf).exit_code == 0
    d = json.loads(run("bandwidth", sf, "--max-variables", 10, "--json").stdout)
    assert d["exact"] is False and d["gap"] > 0.02
    table = run("bandwidth", sf, "--max-variables", 10).stdout
    assert "value UNKNOWN" in table


def test_a_cut_off_endpoint_of_a_fabric_without_gpus_is_not_called_a_gpu(
    ft2: Path, tmp_path: Path
) -> None:
    # Exported and imported back without --gpus-per-host, the fabric's terminals are NIC
    # endpoints: failing node0/nic0's cable cuts off one endpoint, not "1 GPU(s) in a server".
    net, back = tmp_path / "f.net", tmp_path / "back.json"
    assert run("export", "ibnetdiscover", ft2, "-o", net).exit_code == 0
    assert run("import", "ibnetdiscover", net, "-o", back).exit_code == 0
    G = json.loads(back.read_text())
    ends = {n["id"] for n in G["nodes"] if n.get("kind") == "nic"}
    (cable,) = [
        f"{e['source']}--{e['target']}"
        for e in G["edges"]
        if (e["source"] in ends or e["target"] in ends)
        and sorted(ends)[0] in (e["source"], e["target"])
    ]
    table = run("bandwidth", back, "--fail", cable).stdout
    assert "DISCONNECTED: 1 endpoint (" in table and "GPU" not in table.split("DISCONNECTED")[1]


def test_bounds_that_meet_show_the_cut_as_the_bottleneck(ft2: Path, tmp_path: Path) -> None:
    # leaf0 keeps 3 of 4 uplinks: the bounds meet at the leaf0 cut, whose 3 cables (6
    # directions) every flow at that rate fills; the table names them, not "-".
    r = run("bandwidth", ft2, "--fail", "leaf0--spine0", "--max-variables", 10)
    assert r.exit_code == 0, r.output
    row = next(line for line in r.stdout.splitlines() if "│ bottleneck " in line)
    assert "leaf->spine (3 links), spine->leaf (3 links)" in row
    d = json.loads(
        run("bandwidth", ft2, "--fail", "leaf0--spine0", "--max-variables", 10, "--json").stdout
    )
    assert d["bottleneck_identified"] is True and d["bottleneck_tiers"] == {
        "leaf->spine": 3,
        "spine->leaf": 3,
    }
    # Slim Fly q=5: exact by a dual bound that names no links: said plainly
    sf = tmp_path / "sf.json"
    assert (
        run(
            "build", "slimfly", "--q", 5, "--gpus-per-node", 1, "--nics-per-node", 1, "-o", sf
        ).exit_code
        == 0
    )
    r = run("bandwidth", sf, "--max-variables", 10)
    row = next(line for line in r.stdout.splitlines() if "│ bottleneck " in line)
    assert "not identified (exact by meeting bounds)" in row
    d = json.loads(run("bandwidth", sf, "--max-variables", 10, "--json").stdout)
    assert (
        d["exact"] is True and d["bottleneck_identified"] is False and d["bottleneck_links"] == []
    )


def test_counts_in_a_failure_error_have_thousands_separators(tmp_path: Path) -> None:
    # ft2 of 32-port switches: 32 leaves x 16 NIC cables + 32 x 16 cables up = 1,024 cables,
    # 48 switches; the option is echoed as given
    path = tmp_path / "ft2.json"
    assert run("build", "ft2", "--switch-ports", 32, "-o", path).exit_code == 0
    r = run("bandwidth", path, "--fail-links", 5000)
    assert r.exit_code != 0 and "--fail-links 5000: fabric ft2-512 has 1,024 cables" in r.output
