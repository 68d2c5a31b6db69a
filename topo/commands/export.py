"""``topo export FORMAT FABRIC``: the fabric for the cluster's software (Slurm, NCCL, a cabling
plan)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from topo import fabric as fabric_mod
from topo import files
from topo.cli_common import InputFabric, about, check_outputs, err, user_errors
from topo.errors import TopoError

# The names the help shows, without importing topo.export (and its writers) when the app
# starts; tests/export/test_cli_export.py holds them to topo.export.FORMATS and SLURM_FORMATS.
FORMATS = ("slurm", "nccl", "cabling", "ibnetdiscover", "topograph")
SLURM_FORMATS = ("tree", "block", "yaml")


@user_errors
def export_(
    fmt: Annotated[
        str,
        typer.Argument(metavar="FORMAT", help=f"One of: {', '.join(FORMATS)}."),
    ],
    fabric: InputFabric,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="File to write (default: stdout).", dir_okay=False),
    ] = None,
    slurm_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help=f"slurm: {' | '.join(SLURM_FORMATS)} (topology.conf for the tree or block "
            "plugin, or topology.yaml; default tree).",
        ),
    ] = None,
    hosts: Annotated[
        str | None,
        typer.Option(
            "--hosts",
            help="Host names: a pattern with {node} (the server's position; default "
            "node{node}; format specs as gpu{node:03d}, widths up to 64) or a file with one "
            "name per server, in order. Imported fabrics keep the dump's host names by "
            "default.",
        ),
    ] = None,
    node: Annotated[
        int | None,
        typer.Option("--node", help="nccl: this server only (0-based position).", min=0),
    ] = None,
    hca_format: Annotated[
        str | None,
        typer.Option(
            "--hca-format",
            help="nccl: HCA device names, with {index} (default mlx5_{index}; format specs "
            "as ibp{index:02d}s0, widths up to 63; mlx5_bond_{index} for an HPN pod, whose "
            "NICs' two ports are one bonded HCA; an imported fabric keeps the device names "
            "of its dump, e.g. mlx5_4, where it has them, and without this option is refused "
            "where the dump names them otherwise, e.g. HCA-5). No , : = ^ or whitespace; "
            "distinct per NIC.",
        ),
    ] = None,
    topo_xml: Annotated[
        Path | None,
        typer.Option(
            "--topo-xml",
            help="nccl: also write an NCCL_TOPO_FILE skeleton (rail and plane of each <net>) "
            "for --node (default: the first server) and set NCCL_TOPO_FILE to it.",
            dir_okay=False,
        ),
    ] = None,
    assign_ports: Annotated[
        bool,
        typer.Option(
            "--assign-ports",
            help="cabling or ibnetdiscover of an imported fabric: write it with ports "
            "assigned by rule (the fabric file does not keep the dump's port numbers); refused "
            "without it.",
        ),
    ] = False,
) -> None:
    """Export the fabric for Slurm, NCCL, the installers or topograph (docs/export.md)."""
    from topo.export import (
        ExportOptions,
        check_fabric,
        check_format,
        check_hca_format,
        check_options,
        export,
    )

    options = ExportOptions(
        hosts=hosts,
        slurm_format=slurm_format or "tree",
        node=node,
        hca_format=hca_format,
        topo_xml=str(topo_xml) if topo_xml is not None else None,
        assign_ports=assign_ports,
    )
    inputs = [fabric, hosts if hosts is not None and os.path.isfile(hosts) else None]
    check_outputs({"--output": output, "--topo-xml": topo_xml}, inputs)
    # before reading the fabric: an unknown format, or an option it ignores, is the first fault
    check_format(fmt)
    given: dict[str, object] = {"hosts": hosts, "slurm_format": slurm_format, "node": node}
    given |= {"hca_format": hca_format, "topo_xml": topo_xml, "assign_ports": assign_ports or None}
    check_options(fmt, [name for name, value in given.items() if value is not None])
    if hca_format is not None:
        check_hca_format(hca_format)
    G = fabric_mod.load(fabric)
    try:
        check_fabric(G, fmt)
    except TopoError as exc:
        raise exc.prefixed(f"{fabric}: ") from None
    with about(fabric):
        result = export(G, fmt, options)
    for line in result.warnings:
        print(f"topo: warning: {line}", file=sys.stderr)
    for path, text in result.files.items():
        files.write_atomic(path, text)
        err.print(f"wrote {path}")
    if output is None:
        sys.stdout.write(result.text)
    else:
        files.write_atomic(output, result.text)
        err.print(f"wrote {output}")
