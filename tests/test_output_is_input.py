"""``-o`` naming one of the command's own input files is refused, the input left as it was
(a fresh-user trial: ``topo export cabling c1.json -o c1.json`` overwrote the fabric with CSV
and exited 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.cli_common import refuse_input_as_output
from topo.errors import TopoError

runner = CliRunner()
BUILD = ["build", "ft2", "--switch-ports", "4", "--gpus-per-node", "1", "--nics-per-node", "1"]


def _refused(args: list[str], output: Path, source: Path) -> None:
    before = source.read_bytes()
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: --output {output} is the input file {source}: refusing to overwrite "
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
