"""``-o`` naming one of the command's own input files is refused, the input left as it was
(a fresh-user trial: ``topo export cabling c1.json -o c1.json`` overwrote the fabric with CSV
and exited 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.cli_common import refuse_input_as_output, refuse_outputs_over_inputs
from topo.errors import TopoError

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
    """A fabric JSON named .html: the HTML writers' suffix check lets it through (the
    fresh-user trial: ``topo bandwidth f.html --html f.html`` replaced the fabric with a
    plotly page and exited 0)."""
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
