"""The checks the command line makes before any work (topo.cli_common), through the commands
that use them (typer's CliRunner).

- Options whose effect depends on another option (``refuse_given``, ``refuse_with``): given
  without it they would change nothing, so each is refused in one line naming the option and
  what it needs; with what it needs it keeps working.
- ``-o`` (or ``--html``) naming one of the command's own input files is refused, the input left
  as it was (``refuse_input_as_output``, ``refuse_outputs_over_inputs``).
- Every command refuses a bad output before it reads, solves or starts anything
  (``check_outputs``): each case gives an input that is not JSON (or a build that would be
  refused); were the input read or the work begun first, the error would name the input; it
  must name the output option.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.cli_common import refuse_input_as_output, refuse_outputs_over_inputs
from topo.errors import FormatError, TopoError
from topo.fabric import save
from topo.files import check_writable

# -- -o naming one of the command's own inputs ---------------------------------------------

runner = CliRunner()
BUILD = ["build", "ft2", "--switch-ports", "4", "--gpus-per-node", "1", "--nics-per-node", "1"]


def _refused(args: list[str], output: Path, source: Path, option: str = "--output") -> None:
    before = source.read_bytes()
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: {option} {output} is the input file {source}: refusing to overwrite "
        "it; write to another file\n"
    )
    assert source.read_bytes() == before


@pytest.fixture()
def fabric(tmp_path: Path) -> Path:
    path = tmp_path / "c1.json"
    assert runner.invoke(app, [*BUILD, "-o", str(path)]).exit_code == 0
    return path


@pytest.mark.parametrize("fmt", ["cabling", "slurm", "ibnetdiscover"])
def test_export_refuses_its_fabric_as_output(fabric: Path, fmt: str) -> None:
    _refused(["export", fmt, str(fabric), "-o", str(fabric)], fabric, fabric)


def test_a_link_or_another_spelling_is_the_same_file(fabric: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(fabric)
    _refused(["export", "cabling", str(fabric), "-o", str(link)], link, fabric)
    hard = tmp_path / "hard.json"
    os.link(fabric, hard)
    _refused(["export", "cabling", str(fabric), "-o", str(hard)], hard, fabric)
    dotted = tmp_path / "." / "c1.json"
    _refused(["export", "cabling", str(dotted), "-o", str(fabric)], fabric, dotted)


def test_export_refuses_its_hosts_file_as_output(fabric: Path, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("".join(f"h{i}\n" for i in range(8)))
    _refused(
        ["export", "slurm", str(fabric), "--hosts", str(hosts), "-o", str(hosts)], hosts, hosts
    )


def test_import_refuses_its_dump_as_output(fabric: Path, tmp_path: Path) -> None:
    dump = tmp_path / "c1.net"
    r = runner.invoke(app, ["export", "ibnetdiscover", str(fabric), "-o", str(dump)])
    assert r.exit_code == 0, r.output
    _refused(["import", "ibnetdiscover", str(dump), "-o", str(dump)], dump, dump)


def test_build_refuses_its_spec_as_output(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('family = "ft2"\nswitch_ports = 4\ngpus_per_node = 1\nnics_per_node = 1\n')
    _refused(["build", "--spec", str(spec), "-o", str(spec)], spec, spec)


def test_plot_refuses_its_fabric_as_output(fabric: Path, tmp_path: Path) -> None:
    page = tmp_path / "c1.html"
    page.symlink_to(fabric)
    _refused(["plot", str(fabric), "-o", str(page)], page, fabric)


def test_another_file_is_written(fabric: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["export", "cabling", str(fabric), "-o", str(tmp_path / "c.csv")])
    assert r.exit_code == 0, r.output
    refuse_input_as_output("--output", None, [fabric])  # no output: nothing to refuse
    refuse_input_as_output("--output", tmp_path / "new.json", [None, fabric])
    with pytest.raises(TopoError, match=r"^-o .*c1\.json is the input file"):
        refuse_input_as_output("-o", fabric, [None, fabric])


def test_collective_refuses_its_log_as_output(tmp_path: Path) -> None:
    log = tmp_path / "nccl.log"
    log.write_text("# nccl-tests log\n")
    _refused(["collective", "--calibrate", str(log), "-o", str(log)], log, log)


def test_sweep_refuses_its_spec_as_output(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text('[sweep]\nevaluate = ["cost"]\n\n[grid]\nfamily = "ft2"\nswitch_ports = 8\n')
    table = tmp_path / "out.csv"
    table.symlink_to(spec)
    _refused(["sweep", str(spec), "-o", str(table), "--workers", "1"], table, spec)


def _html_refused(args: list[str], option: str, output: Path, source: Path) -> None:
    _refused(args, output, source, option)


@pytest.fixture()
def html_fabric(tmp_path: Path) -> Path:
    """A fabric JSON named .html: the HTML writers' suffix check lets it through, so only the
    input check stops ``topo bandwidth f.html --html f.html`` replacing the fabric with a
    plotly page."""
    built = tmp_path / "f.json"
    assert runner.invoke(app, [*BUILD, "-o", str(built)]).exit_code == 0
    return built.rename(tmp_path / "f.html")


@pytest.mark.parametrize(
    "command",
    [
        ["bandwidth", "{f}"],
        ["moe", "{f}"],
        ["collective", "{f}"],
    ],
)
def test_html_refuses_the_fabric(html_fabric: Path, command: list[str]) -> None:
    args = [a.format(f=html_fabric) for a in command]
    _html_refused([*args, "--html", str(html_fabric)], "--html", html_fabric, html_fabric)


def test_html_refuses_a_link_to_the_fabric(fabric: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.symlink_to(fabric)
    _html_refused(["bandwidth", str(fabric), "--html", str(page)], "--html", page, fabric)


def test_cost_html_refuses_its_price_book(tmp_path: Path) -> None:
    from importlib import resources

    book = tmp_path / "prices.html"
    book.write_bytes(resources.files("topo").joinpath("data", "prices.toml").read_bytes())
    args = ["cost", "--compare", "ft2", "--prices", str(book), "--html", str(book)]
    _html_refused(args, "--html", book, book)


def test_collective_html_refuses_its_log(tmp_path: Path) -> None:
    log = tmp_path / "nccl.html"
    log.write_text("# nccl-tests log\n")
    _html_refused(["collective", "--compare", str(log), "--html", str(log)], "--html", log, log)


def test_validate_html_refuses_its_dump(fabric: Path, tmp_path: Path) -> None:
    dump = tmp_path / "c1.html"
    r = runner.invoke(app, ["export", "ibnetdiscover", str(fabric), "-o", str(dump)])
    assert r.exit_code == 0, r.output
    _html_refused(["validate", str(fabric), str(dump), "--html", str(dump)], "--html", dump, dump)


def test_sweep_html_refuses_its_spec_and_its_table(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.html"
    spec.write_text('[sweep]\nevaluate = ["cost"]\n\n[grid]\nfamily = "ft2"\nswitch_ports = 8\n')
    table = tmp_path / "out.csv"
    args = ["sweep", str(spec), "-o", str(table), "--workers", "1"]
    _html_refused([*args, "--html", str(spec)], "--html", spec, spec)
    page = tmp_path / "page.html"
    page.symlink_to(table)
    r = runner.invoke(app, [*args, "--html", str(page)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: --html {page} is also --output {table}: give each output its own file\n"
    )
    assert not table.exists()


def test_two_outputs_one_file(tmp_path: Path) -> None:
    a = tmp_path / "a.html"
    refuse_outputs_over_inputs({"--output": a, "--html": None}, [None])
    with pytest.raises(TopoError, match=r"^--html .*a\.html is also --output .*a\.html"):
        refuse_outputs_over_inputs({"--output": a, "--html": tmp_path / "." / "a.html"}, [])


# -- a bad output is refused before the input is read --------------------------------------

DASH = "cannot write: '-' is not read as standard output here"


def _cases(bad: str) -> list[tuple[list[str], str]]:
    return [
        (["build", "ft2", "--switch-ports", "7", "-o", "-"], "--output -"),
        (["bandwidth", bad, "--html", "-"], "--html -"),
        (["plot", bad, "-o", "-"], "--output -"),
        (["collective", bad, "--html", "-"], "--html -"),
        (["collective", "--calibrate", bad, "-o", "-"], "--output -"),
        (["cost", bad, "--html", "-"], "--html -"),
        (["moe", bad, "--html", "-"], "--html -"),
        (["export", "slurm", bad, "-o", "-"], "--output -"),
        (["export", "nccl", bad, "-o", "t.xml", "--topo-xml", "-"], "--topo-xml -"),
        (["validate", bad, bad, "--html", "-"], "--html -"),
        (["sweep", bad, "-o", "-"], "--output -"),
        (["sweep", bad, "-o", "t.csv", "--html", "-"], "--html -"),
        (["import", "ibnetdiscover", bad, "-o", "-"], "--output -"),
    ]


@pytest.mark.parametrize("i", range(len(_cases("x"))))
def test_a_dash_output_is_refused_before_the_input_is_read(
    i: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("garbage\n")
    args, option = _cases("bad.json")[i]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    assert r.stderr == f"topo: error: {option}: {DASH}" + r.stderr.split(DASH, 1)[1]
    assert len(r.stderr.splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["bad.json"]  # nothing written, no "-" file


@pytest.mark.parametrize(
    "html, says",
    [
        ("x.png", "--html x.png: topo writes an HTML page (plotly, offline): name it .html"),
        ("/dev/null", "--html /dev/null: cannot write: it is not a regular file"),
        ("nodir/x.html", "--html nodir/x.html: cannot write: folder nodir does not exist"),
    ],
)
def test_other_bad_outputs_are_refused_before_the_solve(
    html: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the writer at the end refused these only after the whole computation
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("garbage\n")
    r = CliRunner().invoke(app, ["bandwidth", "bad.json", "--html", html])
    assert r.exit_code == 1 and r.stderr.startswith(f"topo: error: {says}"), r.output


def test_check_writable_gives_the_file_and_folder_and_refuses_a_read_only_folder(
    tmp_path: Path,
) -> None:
    assert check_writable(tmp_path / "t.json") == (tmp_path / "t.json", tmp_path)
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as the superuser: every folder is writable")
        with pytest.raises(FormatError, match=r"cannot write: folder .*ro is not writable"):
            check_writable(locked / "x.json")
    finally:
        locked.chmod(0o700)


# -- options whose effect depends on another option ----------------------------------------

def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(r, *parts: str) -> str:
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("topo: error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ft2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ft2") / "ft2.json"
    save(build("ft2", switch_ports=8), path)  # 32 GPUs, 8 leaves, 4 spines
    return path


# 1. topo bandwidth --seed, --flows-per-pair


def test_the_seed_changes_nothing_without_random_failures_or_ecmp(ft2: Path) -> None:
    """Why the refusal is right: the library, given two seeds, gives the same report."""
    from topo.fabric import load
    from topo.flow.failures.resilience import damaged_bandwidth

    G = load(ft2)
    for routing in ("optimal", "dmodk"):
        a = damaged_bandwidth(G, seed=0, routing=routing).to_dict()
        b = damaged_bandwidth(G, seed=5, routing=routing).to_dict()
        timings = {k for k in a if k.endswith("_seconds")}
        assert "solve_seconds" in timings
        assert {k: v for k, v in a.items() if k not in timings} == {
            k: v for k, v in b.items() if k not in timings
        }


@pytest.mark.parametrize(
    "args",
    [
        ["--seed", "5"],
        ["--seed", "0"],  # the default, given: still nothing to seed
        ["--routing", "dmodk", "--seed", "3"],
        ["--fail", "leaf0--spine0", "--seed", "3"],  # a named failure is not drawn
    ],
)
def test_bandwidth_refuses_a_seed_with_nothing_to_seed(ft2: Path, args: list[str]) -> None:
    line = one_line_error(run("bandwidth", ft2, *args, "--json"), "--seed", "no effect")
    for needed in ("--fail-links", "--fail-switches", "--routing ecmp"):
        assert needed in line


def test_bandwidth_keeps_the_seed_where_it_draws(ft2: Path) -> None:
    for args in (["--fail-links", "1"], ["--fail-switches", "1"], ["--routing", "ecmp"]):
        r = run("bandwidth", ft2, *args, "--seed", "3", "--json")
        assert r.exit_code == 0, (args, r.output)
    # and with ECMP the seed does draw: two seeds, two hashings of 4 flows per pair, two rates
    rates = [
        json.loads(
            run(
                "bandwidth", ft2, "--routing", "ecmp", "--flows-per-pair", 4, "--seed", s, "--json"
            ).stdout
        )["pair_rate_GBps"]
        for s in (1, 2)
    ]
    assert rates[0] != rates[1]


@pytest.mark.parametrize("routing", ["optimal", "lft"])
def test_flows_per_pair_needs_a_hashing_router(ft2: Path, routing: str) -> None:
    args = ["bandwidth", ft2, "--flows-per-pair", "4"]
    if routing == "lft":
        args += ["--routing", "lft"]
    one_line_error(run(*args), "--flows-per-pair", "ecmp or dmodk", f"not {routing}")


def test_resilience_refuses_flows_per_pair_with_the_optimum(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1, "--flows-per-pair", 2]
    one_line_error(run(*args), "--flows-per-pair", "not optimal")
    r = run(*args, "--routing", "ecmp", "--json")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "routing, args, named",
    [
        ("ecmp", ["--time-limit", "5"], "--time-limit applies"),
        ("dmodk", ["--method", "general", "--max-variables", "10"], "--method, --max-variables"),
        ("lft", ["--max-variables", "10"], "--max-variables applies"),
    ],
)
def test_the_lp_options_need_the_optimum(ft2: Path, routing: str, args, named: str) -> None:
    line = one_line_error(run("bandwidth", ft2, "--routing", routing, *args), named)
    assert "--routing optimal (the LP)" in line and f"--routing {routing} rates" in line


def test_as_routed_rates_solve_no_lp(ft2: Path) -> None:
    """Why: the as-routed report is the same under any LP limit (the library ignores them)."""
    from topo.fabric import load
    from topo.flow.failures.resilience import damaged_bandwidth

    G = load(ft2)
    a = damaged_bandwidth(G, routing="dmodk").to_dict()
    b = damaged_bandwidth(G, routing="dmodk", max_variables=1, time_limit_s=0.1).to_dict()
    a.pop("solve_seconds"), b.pop("solve_seconds")
    assert a == b
    # with the optimum the same limit binds: the full LP has more than one variable
    from topo.errors import LPTooLarge

    with pytest.raises(LPTooLarge):
        damaged_bandwidth(G, method="general", max_variables=1)


def test_resilience_refuses_the_lp_options_as_routed(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1, "--routing", "ecmp"]
    one_line_error(run(*args, "--max-variables", 100), "--max-variables applies")
    assert run(*args).exit_code == 0


def test_show_applies_to_the_table(ft2: Path) -> None:
    one_line_error(run("bandwidth", ft2, "--json", "--show", 3), "--show applies to the table")
    table = run("bandwidth", ft2, "--show", 3).stdout
    assert "bottleneck links (first 3 of" in table


# 2. topo cost FABRIC with the --compare options


@pytest.fixture(scope="module")
def dragonfly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("df") / "df.json"
    save(build("dragonfly", switch_ports=8), path)
    return path


@pytest.mark.parametrize(
    "args, named",
    [
        (["--switch-ports", "32"], "--switch-ports applies"),
        (["--switch-ports", "64"], "--switch-ports applies"),  # the default, given
        (["--link-gbps", "800", "--switch-ports", "32"], "--switch-ports, --link-gbps apply"),
        (["--nics-per-node", "4"], "--nics-per-node applies"),
        (["--dragonfly-groups", "5"], "--dragonfly-groups applies"),
    ],
)
def test_cost_of_a_fabric_refuses_the_compare_options(
    dragonfly: Path, args: list[str], named: str
) -> None:
    r = run("cost", dragonfly, *args, "--json")
    one_line_error(r, named, "to --compare", f"{dragonfly} counts that fabric's own switches")
    assert r.stdout == ""


def test_the_fabric_cost_does_not_depend_on_the_compare_options(dragonfly: Path) -> None:
    """Why: a fabric's bill of materials is the same whatever --switch-ports says (the
    library takes no switch). a = 4, p = h = 2, 9 groups: 36 routers of 8 ports."""
    from topo.cost import bill_of_materials, load_prices
    from topo.fabric import load

    report = bill_of_materials(load(dragonfly), load_prices())
    d = run("cost", dragonfly, "--json")
    assert d.exit_code == 0 and json.loads(d.stdout) == report.to_dict()
    assert (report.switches, report.links) == (36, 90)


def test_compare_refuses_options_no_family_asked_reads() -> None:
    one_line_error(
        run("cost", "--compare", "ft2,mpft", "--dragonfly-groups", 5),
        "--dragonfly-groups applies to the dragonfly family",
    )
    one_line_error(
        run("cost", "--compare", "ft2,ft3", "--nics-per-node", 4),
        "--nics-per-node applies to the mpft family",
    )
    # where a family reads them they work: 4 planes of a 64-port two-layer fat tree
    r = run("cost", "--compare", "ft2,mpft", "--nics-per-node", 4, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[1]["endpoints"] == 4 * 64 * 64 // 2
    r = run("cost", "--compare", "dragonfly", "--dragonfly-groups", 5, "--json")
    assert r.exit_code == 0, r.output


# 3. topo plan: a request no family asked can meet; --max-gpus with plan options


@pytest.mark.parametrize("gpus", [10_000_000_000, 99_999_999_999_999_999_999])
def test_plan_that_no_family_meets_is_one_line_naming_the_largest_ceiling(gpus: int) -> None:
    r = run("plan", "--gpus", gpus, "--no-check")
    line = one_line_error(r, f"--gpus {gpus:,}", "no family of")
    assert r.stdout == ""
    # The largest ceiling of 64-port switches: the three-tier MPFT, 8 planes of a three-tier
    # fat tree of k^3/4 endpoints (Al-Fares et al., SIGCOMM 2008), one NIC per plane per
    # server of 8 GPUs.
    assert f"the largest is mpft3, at most {8 * 64**3 // 4:,} GPUs" in line
    assert "topo plan --max-gpus" in line


def test_plan_of_one_family_that_cannot_meet_it_names_its_ceiling() -> None:
    # a two-layer fat tree of 64-port switches holds k^2/2 = 2,048 endpoints, one NIC per GPU
    # (8 GPUs and 8 NICs per server)
    line = one_line_error(
        run("plan", "--gpus", 3000, "--families", "ft2", "--json"), "--gpus 3,000"
    )
    assert f"ft2 connects at most {64 * 64 // 2:,} GPUs" in line


def test_plan_with_some_family_feasible_still_lists_the_others() -> None:
    r = run("plan", "--gpus", 3000, "--families", "ft2,mpft", "--no-check", "--json")
    assert r.exit_code == 0, r.output
    rows = {x["family"]: x for x in json.loads(r.stdout)}
    assert rows["mpft"]["feasible"] and not rows["ft2"]["feasible"]


def test_max_gpus_refuses_the_options_of_a_plan() -> None:
    one_line_error(run("plan", "--max-gpus", "--gpus", 5), "--gpus N or --max-gpus, not both")
    one_line_error(run("plan", "--max-gpus", "--no-check"), "--check/--no-check applies to")
    assert run("plan", "--max-gpus", "--families", "ft2").exit_code == 0


# 4. topo plan --gpus N rounded up to whole servers, said


@pytest.mark.parametrize("gpus, per_node", [(16385, 8), (10, 4)])
def test_plan_says_it_rounded_up_to_whole_servers(gpus: int, per_node: int) -> None:
    servers = -(-gpus // per_node)
    args = ["plan", "--gpus", gpus, "--gpus-per-node", per_node, "--nics-per-node", per_node]
    args += ["--families", "ft3", "--no-check"]
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["gpus"] == servers * per_node and row["gpus_requested"] == gpus
    r = run(*args)
    assert r.exit_code == 0, r.output
    note = (
        f"note: --gpus {gpus:,} rounded up to {servers * per_node:,} GPUs: {servers:,} whole "
        f"servers of {per_node} GPUs"
    )
    assert note in r.stdout


def _plan_keeps_the_librarys_keys(check: str) -> None:
    from topo.cost import plan

    args = ["plan", "--gpus", 16384, "--families", "ft3,mpft", check, "--json"]
    rows = json.loads(run(*args).stdout)
    for x, lib in zip(rows, plan(16384, families=("ft3", "mpft"), check=False), strict=True):
        keys = list(lib.to_dict())  # the library's keys, in order, and gpus_requested after gpus
        at = keys.index("gpus") + 1
        assert list(x) == [*keys[:at], "gpus_requested", *keys[at:]]
        assert x["gpus"] == x["gpus_requested"] == 16384


def test_plan_of_whole_servers_has_no_note_and_keeps_its_keys() -> None:
    r = run("plan", "--gpus", 16384, "--families", "ft3,mpft", "--no-check")
    assert r.exit_code == 0 and "rounded up" not in r.stdout
    _plan_keeps_the_librarys_keys("--no-check")


@pytest.mark.slow
def test_a_checked_plan_of_whole_servers_keeps_its_keys() -> None:
    # --check builds both 16,384-GPU designs to count and price them (full scale)
    _plan_keeps_the_librarys_keys("--check")


# 5. topo collective: a log's own sizes; --calibrate's whole log; --arch or --node

LOG = ("nccl_tests_logs", "xxrjun_cluster01_singlenode", "nccl_N1_G8_cnode3-002.log")


def log_sizes(text: str, op: str) -> list[int]:
    """The sizes (B) of one test of an nccl-tests log: the first column of its rows."""
    block = text.split(f"# Collective test starting: {op}_perf")[1].split("concluded")[0]
    return [int(m) for m in re.findall(r"^\s+(\d+)\s+\d+\s+\w+", block, re.M)]


def test_compare_predicts_the_logs_sizes_so_refuses_the_sweep_options() -> None:
    from tests.formats._real import real_file

    log = real_file(*LOG)
    r = run("collective", "--compare", log, "--op", "all_reduce", "--json")
    assert r.exit_code == 0, r.output
    sizes = log_sizes(log.read_text(), "all_reduce")
    assert sizes[0] == 32 << 20 and len(sizes) == 10  # 32 MiB to 16 GiB, double
    assert [x["size_bytes"] for x in json.loads(r.stdout)[0]["rows"]] == sizes
    line = one_line_error(
        run("collective", "--compare", log, "--min-bytes", "1G", "--datatype", "half"),
        "--min-bytes, --datatype apply to the predicted table",
    )
    assert "the log's own sizes and data type" in line


def test_calibrate_refuses_the_options_of_one_test(tmp_path: Path) -> None:
    from tests.formats._real import real_file

    log = real_file(*LOG)
    for args, named in (
        (["--op", "all_reduce"], "--op applies"),
        (["--gpus", "8", "--max-bytes", "1G"], "--gpus, --max-bytes apply"),
        (["--html", tmp_path / "x.html"], "--html applies"),
    ):
        line = one_line_error(run("collective", "--calibrate", log, *args), named)
        assert "--calibrate fits every test of its log" in line
    assert not (tmp_path / "x.html").exists()


def test_arch_and_node_are_one_choice(ft2: Path) -> None:
    one_line_error(
        run("collective", ft2, "--arch", "hopper", "--node", "b200"), "give --arch or --node"
    )
    # each alone chooses: b200 is a Blackwell, so its constants are --arch blackwell's
    by_node = json.loads(run("collective", ft2, "--node", "b200", "--json").stdout)
    by_arch = json.loads(run("collective", ft2, "--arch", "blackwell", "--json").stdout)
    by_hopper = json.loads(run("collective", ft2, "--arch", "hopper", "--json").stdout)
    assert by_node["rows"] == by_arch["rows"] != by_hopper["rows"]


# 6. the engine options (resilience, sweep, codesign): refused before any cluster starts

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "args, named, needs",
    [
        (["--slurm-queue", "gpu"], "--slurm-queue applies", "--cluster slurm"),
        (
            ["--cluster", "local", "--slurm-walltime", "00:10:00"],
            "--slurm-walltime",
            "--cluster slurm",
        ),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers applies", "own"),
        (["--scheduler", "tcp://127.0.0.1:1", "--memory-limit", "2GiB"], "--memory-limit", ""),
    ],
)
def test_sweep_and_codesign_refuse_engine_options_they_ignore(
    tmp_path: Path, args: list[str], named: str, needs: str
) -> None:
    spec = ROOT / "examples" / "sweep-fabrics.toml"
    sweep = ["sweep", spec, "-o", tmp_path / "out.csv", *args]
    codesign = ["codesign", "--gpus", 64, "--tpot-ms", 10, *args]
    for cmd in (sweep, codesign):
        r = run(*cmd)
        line = one_line_error(r, named)
        assert "engine:" not in r.stderr  # nothing started
        if needs == "own":
            assert "tcp://127.0.0.1:1 are already started" in line
        elif needs:
            assert f"applies to {needs}" in line
    assert not (tmp_path / "out.csv").exists()


def test_resilience_refuses_a_memory_limit_without_workers(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1]
    line = one_line_error(run(*args, "--memory-limit", "2GiB"), "--memory-limit applies")
    assert "the trials run in this process" in line
    one_line_error(run(*args, "--scheduler", "tcp://127.0.0.1:1", "--workers", 1), "--workers")


# 7. topo moe --shared without a shared expert, --fp8-scales without FP8


@pytest.fixture(scope="module")
def mpft64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mpft64") / "mpft64.json"
    save(build("mpft", switch_ports=16, gpus=64), path)
    return path


def test_shared_needs_a_model_with_a_shared_expert(mpft64: Path) -> None:
    from tests.formats._real import real_file

    mixtral = real_file("moe_configs", "mixtral-8x7b-v0.1_hf_config.json")
    assert "shared" not in mixtral.read_text()  # Mixtral 8x7B: 8 routed experts, no shared one
    line = one_line_error(run("moe", mpft64, "--model", mixtral, "--shared", "remote"), "--shared")
    assert "the model has none" in line
    r = run("moe", mpft64, "--model", mixtral, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["shared"] == "local"
    assert run("moe", mpft64, "--shared", "local", "--json").exit_code == 0  # DeepSeek-V3: 1


def test_fp8_scales_need_an_fp8_phase(mpft64: Path) -> None:
    from topo.moe.timing import copy_bytes

    # Why: a bf16 copy of DeepSeek-V3's 7,168 values is 2 B each, scales or not
    assert copy_bytes(7168, "bf16", fp8_scales=True) == copy_bytes(7168, "bf16", fp8_scales=False)
    assert copy_bytes(7168, "bf16") == 2 * 7168
    args = ["moe", mpft64, "--dispatch-dtype", "bf16", "--combine-dtype", "fp16"]
    line = one_line_error(run(*args, "--no-fp8-scales"), "--fp8-scales/--no-fp8-scales")
    assert "they are bf16 and fp16" in line
    r = run("moe", mpft64, "--no-fp8-scales", "--json")  # FP8 dispatch: 7,168 B, no scales
    assert r.exit_code == 0 and json.loads(r.stdout)["dispatch_bytes_per_copy"] == 7168


@pytest.mark.parametrize("kernel", ["nccl", "deepep-ll"])
def test_kernel_sms_applies_to_deepep_normal(mpft64: Path, kernel: str) -> None:
    from topo.fabric import load
    from topo.moe import default_config, moe_report
    from topo.moe.kernels import kernel_report

    # Why: the model of these kernels does not read an SM budget, so the library refuses one
    # (naming its parameter) and takes none; DeepEP's normal kernels read it
    report = moe_report(load(mpft64), default_config())
    with pytest.raises(TopoError, match=f"the model of {kernel} has no SM budget") as e:
        kernel_report(report, kernel, 2)
    assert e.value.names == ("num_sms",)
    assert kernel_report(report, kernel, None).sms != 2
    assert kernel_report(report, "deepep-normal", 2) != kernel_report(report, "deepep-normal", 24)
    line = one_line_error(
        run("moe", mpft64, "--kernel", kernel, "--kernel-sms", 20), "--kernel-sms applies"
    )
    assert line.startswith("topo: error: --kernel-sms applies to deepep-normal and deepep-v2")
    assert f"the model of {kernel} has no SM budget" in line
    assert run("moe", mpft64, "--kernel", "deepep-normal", "--kernel-sms", 20).exit_code == 0
