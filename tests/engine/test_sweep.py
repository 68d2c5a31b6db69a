"""``topo sweep``: rows equal to what the verbs print for the same point, the same on one
process and on two Dask workers, an interrupted sweep resumed, spec errors with their line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.engine import Engine, SerialEngine, TaskOutcome, task_seeds
from topo.engine.spec import load_sweep
from topo.engine.sweep import run_sweep
from topo.engine.table import journal_path, read_table
from topo.errors import FormatError
from topo.plot.pareto import pareto_front

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SPEC = """\
[sweep]
seed = 3
evaluate = ["cost", "alltoall", "moe"]

[grid]
family = ["ft2", "mpft"]
switch_ports = 8
gpus = 32
fail_links = [0, 2]
ep = 32
node_limit = [0, 2]
"""


@pytest.fixture()
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(SPEC)
    return path


def cli(*args: Any) -> Any:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_rows_are_what_the_verbs_print(spec: Path, tmp_path: Path) -> None:
    result = run_sweep(load_sweep(spec), tmp_path / "out.csv", SerialEngine())
    rows = result.rows
    assert [r["point"] for r in rows] == list(range(8)) and result.failed == 0
    # grid order: family, fail_links, node_limit (the last fastest); seeds spawned per point
    assert [(r["family"], r["fail_links"], r["node_limit"]) for r in rows[:3]] == [
        ("ft2", 0, 0),
        ("ft2", 0, 2),
        ("ft2", 2, 0),
    ]
    assert [r["seed"] for r in rows] == task_seeds(3, 8)
    # non-blocking, nothing failed: each GPU's NIC carries its traffic to the n - g GPUs off
    # its node, 50 GB/s = lambda (n - g); busbw = lambda (n - 1) = 50 * 31 / 24
    assert rows[0]["alltoall_busbw_GBps"] == pytest.approx(50 * 31 / 24)
    fabric = tmp_path / "ft2.json"
    cli("build", "ft2", "--switch-ports", 8, "--gpus", 32, "-o", fabric)
    cost = json.loads(cli("cost", fabric, "--json").stdout)
    r = rows[3]
    bw = json.loads(
        cli("bandwidth", fabric, "--fail-links", 2, "--seed", r["seed"], "--json").stdout
    )
    moe = json.loads(cli("moe", fabric, "--ep", 32, "--node-limit", 2, "--json").stdout)
    assert (r["cost_usd"], r["switches"], r["links"]) == (cost["cost_usd"], 12, 32)
    assert r["alltoall_busbw_GBps"] == bw["alltoall_busbw_GBps"]
    assert (r["tpot_ms"], r["dispatch_us"]) == (moe["tpot_ms"], moe["dispatch_us"])


def test_two_workers_give_the_single_process_table(
    spec: Path, tmp_path: Path, local_engine: Engine
) -> None:
    parsed = load_sweep(spec)
    serial = run_sweep(parsed, tmp_path / "a.parquet", SerialEngine())
    dist = run_sweep(parsed, tmp_path / "b.parquet", local_engine)
    assert read_table(tmp_path / "b.parquet") == read_table(tmp_path / "a.parquet")
    assert dist.rows == serial.rows
    assert not journal_path(tmp_path / "b.parquet").exists()


def test_an_interrupted_sweep_resumes(spec: Path, tmp_path: Path) -> None:
    parsed = load_sweep(spec)
    out = tmp_path / "out.csv"

    def stop_after_three(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(parsed, out, SerialEngine(), progress=stop_after_three)
    assert not out.exists() and journal_path(out).exists()
    with pytest.raises(FormatError, match="give resume to continue it"):
        run_sweep(parsed, out, SerialEngine())
    resumed = run_sweep(parsed, out, SerialEngine(), resume=True)
    full = run_sweep(parsed, tmp_path / "full.csv", SerialEngine())
    assert resumed.resumed == 3 and resumed.rows == full.rows
    assert out.read_text() == (tmp_path / "full.csv").read_text()


def test_cli_writes_parquet_and_the_pareto_front(
    spec: Path, tmp_path: Path, local_engine: Engine
) -> None:
    out, html = tmp_path / "r.parquet", tmp_path / "p.html"
    r = cli("sweep", spec, "-o", out, "--scheduler", local_engine.address, "--html", html, "--json")
    summary = json.loads(r.stdout)
    assert summary["points"] == 8 and summary["failed"] == 0
    rows = read_table(out)
    assert {"family", "gpus", "cost_usd", "alltoall_busbw_GBps", "tpot_ms"} <= set(rows[0])
    assert html.stat().st_size > 100_000 and "Pareto front" in html.read_text()


def test_a_refused_point_is_a_row_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[grid]\nfamily = "ft2"\nswitch_ports = 8\ngpus = [32, 4096]\n')
    rows = run_sweep(load_sweep(path), tmp_path / "o.csv", SerialEngine()).rows
    assert rows[0]["error"] == "" and rows[0]["switches"] == 12
    assert "4096" in rows[1]["error"] and rows[1].get("cost_usd") is None


def test_a_sample_is_seeded_and_inside_the_grid(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[sweep]\nseed = 5\nsample = 3\n[grid]\nfamily = ["ft2", "mpft"]\ngpus = [64, 128, 256]\n'
    )
    a, b = load_sweep(path).points(), load_sweep(path).points()
    assert a == b and len(a) == 3 and [p["point"] for p in a] == [0, 1, 2]
    grid = {(f, g) for f in ("ft2", "mpft") for g in (64, 128, 256)}
    assert len({(p["family"], p["gpus"]) for p in a} & grid) == 3


@pytest.mark.parametrize(
    "text, message",
    [
        ("[grid]\nfamily = 'ft2'\nradix = 8\n", r"s\.toml:3: \[grid\]: unknown key 'radix'"),
        ("[grid]\nfamily = 'ft2'\ngpus = 'many'\n", r"s\.toml:3: \[grid\] gpus must be an integer"),
        ("[grid]\ngpus = 8\n", r"\[grid\] needs family"),
        ("[sweep]\nevaluate = ['speed']\n[grid]\nfamily='ft2'\n", r"evaluate: unknown 'speed'"),
        ("[grid]\nfamily = []\n", r"\[grid\] family has no values"),
    ],
)
def test_spec_errors_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        load_sweep(path)


def test_cli_refuses_a_bad_output_suffix(spec: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["sweep", str(spec), "-o", str(tmp_path / "x.xlsx"), "--workers", "1"])
    assert r.exit_code == 1 and "output must end in .parquet or .csv" in r.stderr


def test_pareto_front_by_hand() -> None:
    rows = [
        {"cost_usd": 3.0, "tpot_ms": 5.0},
        {"cost_usd": 1.0, "tpot_ms": 9.0},
        {"cost_usd": 2.0, "tpot_ms": 9.5},  # dominated by the first
        {"cost_usd": 4.0, "tpot_ms": 4.0},
        {"cost_usd": 0.5, "tpot_ms": None},
        {"cost_usd": 0.1, "tpot_ms": 1.0, "error": "refused"},
    ]
    assert pareto_front(rows, "cost_usd", "tpot_ms", maximize_y=False) == [1, 0, 3]
    assert pareto_front(rows, "cost_usd", "tpot_ms", maximize_y=True) == [1, 2]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("sweep-*.toml")), ids=lambda p: p.name)
def test_every_sweep_example_loads(path: Path) -> None:
    spec = load_sweep(path)
    points = spec.points()
    n = 1
    for values in spec.grid.values():
        n *= len(values)
    assert len(points) == (min(spec.sample, n) if spec.sample else n) > 0
    assert {p["family"] for p in points} <= {"ft2", "ft3", "mrft", "mpft"}


class DyingPointEngine(SerialEngine):
    """In-process engine whose task 1 comes back as Dask reports a task whose workers both
    died (the real death is in tests/engine/test_cluster.py)."""

    def map(self, fn, tasks, *shared, progress=None):  # type: ignore[no-untyped-def]
        for o in super().map(fn, tasks, *shared, progress=progress):
            yield TaskOutcome(1, error="KilledWorker: died twice") if o.index == 1 else o


def test_a_dead_point_is_reported_and_the_sweep_goes_on(spec: Path, tmp_path: Path) -> None:
    parsed = load_sweep(spec)
    out = tmp_path / "out.csv"
    first = run_sweep(parsed, out, DyingPointEngine())
    assert first.failed == 1 and first.rows[1]["error"] == "KilledWorker: died twice"
    assert first.rows[1]["family"] == "ft2" and first.rows[1].get("cost_usd") is None
    assert all(r["error"] == "" for i, r in enumerate(first.rows) if i != 1)
    # every other row is the one a clean run gives
    full = run_sweep(parsed, tmp_path / "full.csv", SerialEngine())
    assert [r for i, r in enumerate(first.rows) if i != 1] == full.rows[:1] + full.rows[2:]


@pytest.mark.parametrize("name", ["x.parquet", "x.csv"])
def test_cli_refuses_a_missing_output_folder_before_the_cluster(
    spec: Path, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh-user trial: the journal's open() gave a FileNotFoundError traceback after a
    # Dask cluster had started.
    import topo.commands.sweep as sweep_cmd

    def no_engine(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(sweep_cmd, "open_engine", no_engine)
    output = tmp_path / "nodir" / name
    r = runner.invoke(app, ["sweep", str(spec), "-o", str(output), "--workers", "1"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: --output {output}: cannot write: folder {output.parent} does not exist\n"
    )


def test_a_journal_that_cannot_be_written_is_a_format_error(tmp_path: Path) -> None:
    from topo.engine.table import Journal

    output = tmp_path / "nodir" / "x.csv"
    with pytest.raises(FormatError, match=r"x\.csv\.partial\.jsonl: cannot write: No such file"):
        Journal(output, "digest", resume=False)


def test_the_pareto_chart_has_one_front_per_gpu_count() -> None:
    from topo.plot.pareto import plot_pareto

    # A cheap 128-GPU design beats every 256-GPU one on cost; it must not hide their front.
    rows = [
        {"family": "ft2", "gpus": 128, "cost_usd": 1.0, "alltoall_busbw_GBps": 50.0},
        {"family": "ft2", "gpus": 256, "cost_usd": 2.0, "alltoall_busbw_GBps": 40.0},
        {"family": "mpft", "gpus": 256, "cost_usd": 3.0, "alltoall_busbw_GBps": 45.0},
        {"family": "mpft", "gpus": 256, "cost_usd": 4.0, "alltoall_busbw_GBps": 44.0},
    ]
    fig = plot_pareto(rows, "cost_usd", "alltoall_busbw_GBps", maximize_y=True)
    fronts = {t.name: (list(t.x), list(t.y)) for t in fig.data if t.name.startswith("Pareto")}
    assert fronts == {
        "Pareto front, 128 GPUs": ([1.0], [50.0]),
        "Pareto front, 256 GPUs": ([2.0, 3.0], [40.0, 45.0]),
    }
    one = plot_pareto(rows[1:], "cost_usd", "alltoall_busbw_GBps", maximize_y=True)
    assert [t.name for t in one.data if t.name.startswith("Pareto")] == ["Pareto front"]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[grid]\nfamily = ['ft2', 'ft9']\n",
            r"/s\.toml:2: \[grid\] family must be one of ft2, ft3, mrft, mpft, dragonfly, "
            r"slimfly, rail-only, hpn, got 'ft9'$",
        ),
        (
            "[grid]\nfamily = 'ft2'\nfail_link_rate = [0.0, 1.5]\n",
            r"/s\.toml:3: \[grid\] fail_link_rate must be from 0 to 1 \(the fraction of "
            r"the cables that fail\), got 1\.5$",
        ),
        (
            "[grid]\nfamily = 'ft2'\nfail_link_rate = nan\n",
            r"/s\.toml:3: \[grid\] fail_link_rate must be from 0 to 1 .*, got nan$",
        ),
        (
            "[grid]\nfamily = 'ft2'\nlink_gbps = [400, inf]\n",
            r"/s\.toml:3: \[grid\] link_gbps must be a positive finite number, got inf$",
        ),
        (
            "[grid]\nfamily = 'ft2'\nfail_links = -1\n",
            r"/s\.toml:3: \[grid\] fail_links must be at least 0, got -1$",
        ),
        (
            "[grid]\nfamily = 'ft2'\ngpus = [64, 0]\n",
            r"/s\.toml:3: \[grid\] gpus must be at least 1, got 0$",
        ),
        (
            "[grid]\nfamily = 'ft2'\n[collective]\nop = 'allreduce'\n",
            r"/s\.toml:4: \[collective\] op must be one of all_reduce, all_gather, "
            r"reduce_scatter, alltoall, broadcast, reduce, sendrecv, got 'allreduce'$",
        ),
        (
            "[grid]\nfamily = 'ft2'\n[collective]\nsize_bytes = -5\n",
            r"/s\.toml:4: \[collective\] size_bytes must be from 1 to 1,099,511,627,776 "
            r"\(1 TiB: .*\), got -5$",
        ),
        # numpy's SeedSequence refuses a negative seed: it was refused after the cluster
        # had started, naming no file
        (
            "[sweep]\nseed = -1\n[grid]\nfamily = 'ft2'\n",
            r"/s\.toml:2: \[sweep\] seed must be >= 0, got -1$",
        ),
    ],
)
def test_values_no_point_could_use_are_refused_up_front(
    tmp_path: Path, text: str, message: str
) -> None:
    # Each was accepted, and the sweep exited 0 with every point an error row (size_bytes = -5
    # even named --min-bytes and --max-bytes, options of another command).
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        load_sweep(path)


def test_cli_refuses_a_bad_spec_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[grid]\nfamily = 'ft2'\nswitch_ports = 8\n[collective]\nsize_bytes = -5\n")
    out = tmp_path / "o.csv"
    r = CliRunner().invoke(app, ["sweep", str(path), "-o", str(out)])
    assert r.exit_code == 1 and not out.exists(), r.output
    assert r.output.strip().splitlines() == [
        f"topo: error: {path}:5: [collective] size_bytes must be from 1 to "
        "1,099,511,627,776 (1 TiB: nccl-tests caps -e at half a GPU's memory, and no GPU has "
        "2 TiB), got -5"
    ]


def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import topo.commands.sweep as sweep_cmd

    def no_engine(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Dask cluster was started")

    monkeypatch.setattr(sweep_cmd, "open_engine", no_engine)


def test_checks_that_need_no_solve_come_before_the_cluster(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh-user trial: these were refused only after a Dask cluster had started (--html's
    # columns after the whole sweep).
    _no_engine(monkeypatch)
    out = tmp_path / "t.csv"
    plain = tmp_path / "plain.toml"
    plain.write_text(SPEC.replace('["cost", "alltoall", "moe"]', '["alltoall"]'))
    r = runner.invoke(
        app, ["sweep", str(plain), "-o", str(out), "--html", str(tmp_path / "p.html")]
    )
    assert r.exit_code == 1, r.output
    assert r.stderr == "topo: error: --html needs cost and moe or alltoall in the spec's evaluate\n"
    journal = journal_path(out)
    journal.write_text('{"digest": "not this spec"}\n')
    r = runner.invoke(app, ["sweep", str(spec), "-o", str(out)])
    assert r.exit_code == 1 and "give --resume to continue it" in r.stderr, r.output
    r = runner.invoke(app, ["sweep", str(spec), "-o", str(out), "--resume"])
    assert r.exit_code == 1 and "this journal is of another sweep spec" in r.stderr, r.output
    assert journal.read_text() == '{"digest": "not this spec"}\n'  # left as it was
    assert not out.exists()


@pytest.mark.parametrize(
    "table, key",
    [
        ("grid", "oversubscription"),
        ("grid", "link_gbps"),
        ("grid", "fail_link_rate"),
        ("sweep", "seed"),
    ],
)
def test_a_400_digit_number_is_refused_at_its_line(tmp_path: Path, table: str, key: str) -> None:
    # A 400-digit integer in a float field ended in OverflowError (int too large to convert
    # to float); a 400-digit seed was taken. Line 2 of each file below holds the number.
    lines = {"sweep": ["[sweep]", "evaluate = ['cost']"], "grid": ["[grid]", "family = 'ft2'"]}
    lines[table].insert(1, f"{key} = {'9' * 400}")
    path = tmp_path / "s.toml"
    path.write_text("\n".join(lines[table] + lines["grid" if table == "sweep" else "sweep"]))
    out = tmp_path / "o.csv"
    r = CliRunner().invoke(app, ["sweep", str(path), "-o", str(out)])
    assert r.exit_code == 1 and not out.exists(), r.output
    assert r.output.strip().splitlines() == [
        f"topo: error: {path}:2: a number of 400 digits: numbers in input files have at most "
        "100 digits"
    ]


def test_fail_link_rate_counts_every_cable_the_draw_takes_from():
    """ft2 of 8-port switches, 32 GPUs in servers of 8 with 8 NICs: 8 leaves of 4 NICs and 4
    up links, 4 spines: 32 NIC cables + 32 switch links = 64 cables; 10% of them is 6.4 -> 6.
    The random draw takes its cables from all 64 (NIC cables too), so the count does."""
    from topo.builders import build
    from topo.engine.evaluate import failed_links
    from topo.flow.failures import damaged_bandwidth

    G = build("ft2", switch_ports=8, gpus=32)
    assert failed_links(G, {"fail_link_rate": 0.1}) == 6
    assert failed_links(G, {"fail_link_rate": 1.0}) == 64
    assert failed_links(G, {"fail_link_rate": 0.1, "fail_links": 3}) == 3
    d = damaged_bandwidth(G, links=failed_links(G, {"fail_link_rate": 0.1}), seed=1).to_dict()
    assert len(d["failed_links"]) == 6
