"""``topo cost`` and ``topo plan`` on the command line (typer's CliRunner)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from topo.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_compare_json_rows():
    r = run("cost", "--compare", "ft2,mpft,ft3,slimfly,dragonfly", "--switch-ports", 64, "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [x["family"] for x in rows] == ["ft2", "mpft", "ft3", "slimfly", "dragonfly"]
    for x in rows:
        assert {
            "family",
            "endpoints",
            "switches",
            "links",
            "cost_usd",
            "cost_per_endpoint_usd",
        } <= set(x)
    assert rows[2]["switches"] == 5120 and rows[4]["links"] == 384272


def test_compare_table():
    r = run("cost", "--compare", "ft2,slimfly")
    assert r.exit_code == 0, r.output
    assert "2,048" in r.stdout and "1,568" in r.stdout and "not a prime power" in r.stdout


def test_compare_html(tmp_path):
    out = tmp_path / "cost.html"
    r = run("cost", "--compare", "ft2,dragonfly", "--html", out)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "cost per endpoint" in text and "GB/s per k$" in text and "a = 4, p = h = 2" in text


def test_cost_of_a_fabric(tmp_path):
    fabric = tmp_path / "df.json"
    assert run("build", "dragonfly", "--switch-ports", 8, "-o", fabric).exit_code == 0
    r = run("cost", fabric, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # a = 4, p = h = 2, 9 groups: 36 routers of 8 ports (44,500 * 8/64 each), 54 + 36 links
    # at 1,680 $, 72 endpoint cables at 600 $.
    assert (d["switches"], d["links"]) == (36, 90)
    assert d["cost_usd"] == 36 * 5_562.5 + 90 * 1_680 + 72 * 600
    assert run("cost", fabric).exit_code == 0


def test_plan_json_and_table():
    r = run(
        "plan", "--gpus", 16385, "--switch-ports", 64, "--link-gbps", 400, "--json", "--no-check"
    )
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    for x in rows:
        assert {"family", "feasible", "cost_usd", "tiers", "planes", "switches", "binding"} <= set(
            x
        )
    mpft = next(x for x in rows if x["family"] == "mpft")
    assert not mpft["feasible"] and "16,384 GPUs" in mpft["binding"]
    r = run("plan", "--gpus", 1024, "--families", "ft2,mpft")
    assert r.exit_code == 0, r.output
    assert "agrees" in r.stdout


def test_plan_max_gpus():
    r = run("plan", "--max-gpus", "--families", "ft2,mpft,ft3", "--json")
    assert r.exit_code == 0, r.output
    assert [x["max_gpus"] for x in json.loads(r.stdout)] == [2048, 16384, 65536]


def test_user_errors_are_one_line(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text("[[switch]]\nports = -1\ngbps = 400\nprice_usd = 1\n")
    for args in (
        ("cost",),
        ("cost", "--compare", "ft2,torus"),
        ("cost", "--compare", "ft2", "--prices", bad),
        ("plan",),
        ("plan", "--gpus", 8, "--families", "hypercube"),
        ("plan", "--gpus", 8, "--max-oversubscription", 0.5),
        ("build", "slimfly", "--q", 28),
    ):
        r = run(*args)
        assert r.exit_code == 1, args
        assert r.stderr.startswith("topo: error: ") and r.stderr.count("\n") == 1, r.stderr


def test_a_family_named_twice_is_designed_once():
    # The same family twice is one design: the plan lists it once (it listed it twice).
    r = run("plan", "--max-gpus", "--families", "ft2,mpft,ft2", "--json")
    assert r.exit_code == 0, r.output
    assert [x["family"] for x in json.loads(r.stdout)] == ["ft2", "mpft"]


def test_plan_for_one_gpu_says_which_three_tier_designs_are_degenerate():
    # --gpus 1 is one server of 8: ft3's cheapest design is one 64-port switch, listed as a
    # 1-tier "ft3" without a word; the line under it now says why, JSON has "degenerate".
    args = ("plan", "--gpus", 1, "--families", "ft2,ft3,mrft3", "--no-bandwidth")
    r = run(*args)
    assert r.exit_code == 0, r.output
    lines = [ln.strip() for ln in r.stdout.splitlines()]
    (ft3,) = [ln for ln in lines if ln.startswith("ft3: degenerate: ")]
    assert "no core layer at 8 GPUs: one switch (1 tier)" in ft3
    assert not any(ln.startswith(("ft2: degenerate", "mrft3: degenerate")) for ln in lines)
    rows = {x["family"]: x for x in json.loads(run(*args, "--json").stdout)}
    assert rows["ft3"]["degenerate"] == ft3.removeprefix("ft3: degenerate: ")
    assert rows["ft2"]["degenerate"] is None and rows["mrft3"]["degenerate"] is None
    assert "note: --gpus 1 rounded up to 8 GPUs: 1 whole server of 8 GPUs" in lines
    assert any("8 GPUs are one server of 8" in ln and "no scale-out network" in ln for ln in lines)
