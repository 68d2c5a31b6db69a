"""``topo validate``: the fabric as built (ibnetdiscover dumps) against its design.

Exit status 0 when the fabric is built as designed, 3 when there are defects (1 and 2 stay
errors), so scripts can gate on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from topo import fabric as fabric_mod
from topo.cli_common import check_outputs, err, out, print_json, user_errors
from topo.commands.import_ import DumpsArg, GpusPerHostOpt, HostRegexOpt, NameMapOpt
from topo.errors import SpecError

if TYPE_CHECKING:  # the solver loads when the command runs
    import networkx as nx

    from topo.validate import ValidationReport

DEFECTS_EXIT = 3
"""Exit status of ``topo validate`` when the fabric as built has defects."""


@user_errors
def validate(
    design: Annotated[
        Path,
        typer.Argument(
            help="The design: a fabric JSON written by 'topo build -o'.",
            exists=True,
            dir_okay=False,
        ),
    ],
    dumps: DumpsArg,
    gpus_per_host: GpusPerHostOpt = None,
    host_regex: HostRegexOpt = None,
    name_map: NameMapOpt = None,
    nvlink_domain_regex: Annotated[
        str | None,
        typer.Option(
            "--nvlink-domain-regex",
            help="Regular expression on the dump's host names: hosts with the same match "
            "(group 'domain', else group 1) are one server of the design, an NVLink domain "
            "(the trays of a GB200 NVL72 rack), as topo import groups them. Without "
            "--gpus-per-host.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Draw the defects on the topology (HTML page).", dir_okay=False
        ),
    ] = None,
    no_cost: Annotated[
        bool, typer.Option("--no-cost", help="List the defects without solving each alone.")
    ] = False,
) -> None:
    """Compare the fabric as built (ibnetdiscover dumps) with its design: every defect and
    what it costs the exact all-to-all. Exit status 3 when there are defects."""
    from topo.validate import check_design
    from topo.validate import validate as run

    check_outputs({"--html": html}, [design, *dumps, name_map])
    G = fabric_mod.load(design)
    check_design(G, design)
    per_node = G.graph.get("gpus_per_node")
    if gpus_per_host is not None and per_node is not None and gpus_per_host != per_node:
        raise SpecError(
            f"--gpus-per-host {gpus_per_host}: the design's servers have {per_node} GPUs",
            param="gpus_per_host",
        )
    dump = _dump(G, dumps, name_map, gpus_per_host, host_regex, nvlink_domain_regex)
    report = run(G, dump, cost=not no_cost, dump_name=", ".join(map(str, dumps)))
    if html is not None:
        from topo.plot import write_html
        from topo.plot.validate import plot_defects

        write_html(plot_defects(report), html)
        err.print(f"wrote {html}")
    if as_json:
        print_json(report.to_dict())
    else:
        _render(report)
    if not report.ok:
        raise typer.Exit(DEFECTS_EXIT)


def _dump(
    G: nx.Graph,
    dumps: list[Path],
    name_map: Path | None,
    gpus_per_host: int | None,
    host_regex: str | None,
    domain_regex: str | None,
) -> nx.Graph:
    """The dump as the design's servers see it: its hosts grouped into NVLink domains
    (``--nvlink-domain-regex``), a tray design's ``node<n>-<h>`` hosts into ``node<n>``, or
    its hosts as they are (with ``--gpus-per-host``: given GPUs, as ``topo import``)."""
    from topo.formats import group_into_domains, import_ibnetdiscover

    if domain_regex is not None:
        if gpus_per_host is not None:
            raise SpecError(
                "--nvlink-domain-regex groups the dump's hosts into the design's servers, "
                "which give their GPUs: give it without --gpus-per-host",
                param="nvlink_domain_regex",
            )
        plain = import_ibnetdiscover(dumps, name_map=name_map)
        return group_into_domains(plain, domain_regex, host_regex)
    if fabric_mod.spans_hosts(G) and gpus_per_host is None and host_regex is None:
        # a design of NVLink domains of hosts (build --gpus-per-host): its dump names the
        # trays node<n>-<h>; they are matched as the design's servers node<n>
        from topo.builders import BUILT_HOST_REGEX

        _refuse_unbuilt_trays(import_ibnetdiscover(dumps, name_map=name_map), BUILT_HOST_REGEX)
        gpus_per_host, host_regex = G.graph.get("gpus_per_node"), BUILT_HOST_REGEX
    return import_ibnetdiscover(
        dumps, name_map=name_map, gpus_per_host=gpus_per_host, host_regex=host_regex
    )


def _refuse_unbuilt_trays(dump: nx.Graph, regex: str) -> None:
    """Refuse a dump whose hosts are not named ``node<n>-<h>`` as a tray design's written dump
    names them, saying to give ``--nvlink-domain-regex`` (rather than quoting a
    ``--host-regex`` the user never gave)."""
    import re

    pattern = re.compile(regex)
    for v, d in dump.nodes(data=True):
        if d["kind"] == "nic" and not pattern.search(str(d["description"])):
            raise SpecError(
                f"the design's servers are NVLink domains of hosts, named node<n>-<h> in the "
                f"dump topo export writes, but the dump describes CA {v!r} as "
                f"{d['description']!r}: give --nvlink-domain-regex to group its hosts into "
                "the design's servers (e.g. '-dgx-(\\d+)-c' for aNN-p1-dgx-RR-cTT trays)",
                param="nvlink_domain_regex",
            )


def _render(report: ValidationReport) -> None:
    d = report.to_dict()
    out.print(
        f"{report.design} as built ({report.dump}): {len(report.defects)} defect(s); "
        f"all-to-all busbw {d['design_busbw_GBps']:.2f} GB/s designed, "
        f"{d['as_built_busbw_GBps']:.2f} GB/s as built"
    )
    if report.disconnected:
        out.print(f"cut off as built: {', '.join(report.disconnected)}")
    if not report.defects:
        return
    table = Table(title="defects")
    for col in ("kind", "design", "as built", "cables", "Gb/s", "alone GB/s", "cost GB/s"):
        table.add_column(col, justify="right" if "/s" in col or col == "cables" else "left")
    for x in d["defects"]:
        alone = x["alone_busbw_GBps"]
        table.add_row(
            x["kind"],
            " - ".join(x["design_ends"]),
            " - ".join(x["as_built_ends"]) or "(absent)",
            str(x["links"]),
            f"{x['design_Gbps']:g} -> {x['as_built_Gbps']:g}",
            "" if alone is None else f"{alone:.2f}",
            "" if "cost_GBps" not in x else f"{x['cost_GBps']:.2f}",
        )
    out.print(table)
