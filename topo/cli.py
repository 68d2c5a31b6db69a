"""The ``topo`` command line: one command per verb, no logic.

Each command parses its options, calls one library function and renders the result: a table
on the terminal, or one JSON object with ``--json``. Results go to stdout, diagnostics to
stderr. Every :class:`topo.errors.TopoError` is caught here and printed as one line, with exit
status 1.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from topo import fabric as fabric_mod
from topo.cli_common import (
    FailLinksOpt,
    FailOpt,
    FailSwitchesOpt,
    FlowsOpt,
    InputFabric,
    MaxVariablesOpt,
    PxnOpt,
    Routing,
    RoutingOpt,
    SeedOpt,
    TimeLimitOpt,
    app,
    err,
    import_app,
    out,
    print_json,
    user_errors,
)
from topo.errors import SpecError, TopoError
from topo.units import Bps_to_GBps as GB


class Family(str, Enum):
    ft2 = "ft2"
    ft3 = "ft3"
    mrft = "mrft"
    mpft = "mpft"
    dragonfly = "dragonfly"
    slimfly = "slimfly"


class Arrangement(str, Enum):
    consecutive = "consecutive"
    palmtree = "palmtree"


BANDWIDTH_TIME_LIMIT_S = 120.0
"""Default HiGHS time limit of ``topo bandwidth`` (s): past it, certified bounds."""


class Method(str, Enum):
    auto = "auto"
    general = "general"


@app.command()
@user_errors
def build(
    ctx: typer.Context,
    family: Annotated[
        Family | None,
        typer.Argument(
            help="ft2, ft3, mrft (multi-rail), mpft (multi-plane), dragonfly or slimfly."
        ),
    ] = None,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="A TOML spec (examples/*.toml); options given on the command line win.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    switch_ports: Annotated[int, typer.Option("--switch-ports", help="Switch radix (ports).")] = 64,
    link_gbps: Annotated[
        float, typer.Option("--link-gbps", help="Link rate, Gb/s (400 = 4x NDR).")
    ] = 400.0,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", help="GPUs to connect (default: the family's maximum)."),
    ] = None,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs per server.")] = 8,
    nics_per_node: Annotated[int, typer.Option("--nics-per-node", help="NICs per server.")] = 8,
    nvlink_GBps: Annotated[
        float, typer.Option("--nvlink-GBps", help="NVLink per GPU per direction, GB/s (H800: 200).")
    ] = 200.0,
    pcie_GBps: Annotated[
        float, typer.Option("--pcie-GBps", help="GPU-NIC PCIe per direction, GB/s (Gen5 x16: 64).")
    ] = 64.0,
    oversubscription: Annotated[
        float,
        typer.Option("--oversubscription", help="Leaf down/up bandwidth ratio (1 = non-blocking)."),
    ] = 1.0,
    routers_per_group: Annotated[
        int | None,
        typer.Option("-a", "--routers-per-group", help="Dragonfly: routers per group (a).", min=1),
    ] = None,
    endpoints_per_router: Annotated[
        int | None,
        typer.Option(
            "-p", "--endpoints-per-router", help="Dragonfly, Slim Fly: endpoints per router.", min=1
        ),
    ] = None,
    global_ports: Annotated[
        int | None,
        typer.Option("--global-ports", help="Dragonfly: global ports per router (h).", min=1),
    ] = None,
    groups: Annotated[
        int | None,
        typer.Option("--groups", help="Dragonfly: groups (g, at most a*h + 1).", min=1),
    ] = None,
    arrangement: Annotated[
        Arrangement | None,
        typer.Option("--arrangement", help="Dragonfly: global-link arrangement."),
    ] = None,
    q: Annotated[
        int | None,
        typer.Option("--q", help="Slim Fly: MMS parameter, a prime power (64 ports: 27).", min=3),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the fabric as node-link JSON.", dir_okay=False),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the counts as one JSON object.")
    ] = False,
) -> None:
    """Build a fabric from a switch and a server: counts, and optionally the graph as JSON."""
    from topo.builders import build as build_fabric
    from topo.spec import BUILD_KEYS, load_spec

    args: dict[str, Any] = dict(
        switch_ports=switch_ports,
        link_gbps=link_gbps,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
        oversubscription=oversubscription,
        routers_per_group=routers_per_group,
        endpoints_per_router=endpoints_per_router,
        global_ports=global_ports,
        groups=groups,
        arrangement=arrangement.value if arrangement is not None else None,
        q=q,
    )
    name = family.value if family is not None else None
    if spec is not None:
        data = load_spec(spec)
        if name is not None and name != data["family"]:
            raise TopoError(f"{spec}: family {data['family']!r} differs from FAMILY {name!r}")
        name = data["family"]
        for key in BUILD_KEYS & data.keys():
            source = ctx.get_parameter_source(key)
            if source is None or source.name != "COMMANDLINE":
                args[key] = data[key]
    if name is None:
        raise TopoError("give a FAMILY (ft2, ft3, mrft, mpft, dragonfly, slimfly) or --spec FILE")
    try:
        G = build_fabric(name, **args)
    except SpecError as exc:
        where = f"{spec}: " if spec is not None else ""
        raise SpecError(where + str(exc)) from None
    if spec is not None and "name" in data:
        G.graph["name"] = data["name"]
    _emit_fabric(G, fabric_mod.summarize(G).to_dict(), output, as_json)


@import_app.command("ibnetdiscover")
@user_errors
def import_ibnetdiscover(
    dump: Annotated[
        Path,
        typer.Argument(
            help="Output of 'ibnetdiscover' (topology format).", exists=True, dir_okay=False
        ),
    ],
    name_map: Annotated[
        Path | None,
        typer.Option(
            "--name-map",
            help="GUID-to-hostname map ('H-<guid> <host>' lines).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the fabric as node-link JSON.", dir_okay=False),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the counts as one JSON object.")
    ] = False,
) -> None:
    """Import an InfiniBand fabric from an ibnetdiscover dump."""
    from topo.formats import read_ibnetdiscover

    G = read_ibnetdiscover(dump, name_map=name_map)
    summary = fabric_mod.summarize(G).to_dict()
    for key in ("loopback_cables", "unconnected_cas", "mismatched_cables", "unreachable_switches"):
        if key in G.graph:
            summary[key] = G.graph[key]
    _emit_fabric(G, summary, output, as_json)


@app.command()
@user_errors
def bandwidth(
    fabric: InputFabric,
    method: Annotated[
        Method,
        typer.Option(
            "--method",
            help="auto: exact reductions, checked; general: the full LP (small fabrics).",
        ),
    ] = Method.auto,
    routing: RoutingOpt = Routing.optimal,
    seed: SeedOpt = 0,
    flows_per_pair: FlowsOpt = 1,
    pxn: PxnOpt = True,
    fail_links: FailLinksOpt = 0,
    fail_switches: FailSwitchesOpt = 0,
    fail: FailOpt = None,
    max_variables: MaxVariablesOpt = None,
    time_limit: TimeLimitOpt = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write link load drawn on the topology and per-tier histograms (plotly).",
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as one JSON object.")
    ] = False,
    show: Annotated[
        int, typer.Option("--show", help="Bottleneck links to list in the table.", min=0)
    ] = 8,
) -> None:
    """All-to-all bandwidth per GPU: optimal (max concurrent flow, HiGHS) or as routed (ECMP,
    D-mod-k), with failures; the bottleneck tier and links."""
    from topo.flow.lp import DEFAULT_MAX_VARIABLES
    from topo.flow.resilience import damaged_bandwidth

    G = fabric_mod.load(fabric)
    result = damaged_bandwidth(
        G,
        links=fail_links,
        switches=fail_switches,
        seed=seed,
        named=fail or (),
        routing=routing.value,
        flows_per_pair=flows_per_pair,
        pxn=pxn,
        method=method.value,
        max_variables=max_variables or DEFAULT_MAX_VARIABLES,
        link_loads=html is not None,
        time_limit_s=time_limit or BANDWIDTH_TIME_LIMIT_S,
    )
    if html is not None:
        from topo.flow.result import BandwidthResult
        from topo.plot import write_html
        from topo.plot_load import plot_link_load

        r = result.report
        busbw = (
            GB(r.alltoall_busbw_Bps) if isinstance(r, BandwidthResult) else r.alltoall_busbw_GBps
        )
        title = (
            f"{r.fabric or r.family}: all-to-all link load ({routing.value}), "
            f"busbw {busbw:.2f} GB/s"
        )
        write_html(plot_link_load(result.graph, r.link_load or {}, title=title), html)
    if as_json:
        print_json(result.to_dict())
    else:
        _damage_lines(result)
        if routing is Routing.optimal:
            _bandwidth_table(result.report, show)
        else:
            _routed_table(result.report, show)
    if html is not None:
        err.print(f"wrote {html}")


@app.command()
@user_errors
def plot(
    fabric: InputFabric,
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="HTML file to write (opens offline).", dir_okay=False),
    ],
    max_devices: Annotated[
        int,
        typer.Option(
            "--max-devices", help="Above this many devices, draw the aggregated view.", min=1
        ),
    ] = 2000,
) -> None:
    """Draw the fabric in layers as an HTML page (plotly; aggregated for large fabrics)."""
    from topo.plot import plot_fabric, write_html

    G = fabric_mod.load(fabric)
    fig = plot_fabric(G, max_devices=max_devices)
    write_html(fig, output)
    err.print(f"wrote {output}")


# --------------------------------------------------------------------------- rendering


def _emit_fabric(G: Any, summary: dict[str, Any], output: Path | None, as_json: bool) -> None:
    """Write the fabric (if asked), then print its counts as JSON or as a table."""
    if output is not None:
        fabric_mod.save(G, output)
    if as_json:
        print_json(summary)
    else:
        _summary_table(summary, title=str(G.graph.get("name", summary.get("family", ""))))
    if output is not None:
        err.print(f"wrote {output}")


def _summary_table(summary: dict[str, Any], title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in summary.items():
        if value is None:
            continue
        if isinstance(value, dict):
            value = (
                ", ".join(
                    f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items()
                )
                or "-"
            )
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        table.add_row(key.replace("_", " "), str(value))
    out.print(table)


def _bandwidth_table(r: Any, show: int) -> None:
    who = "GPU" if r.terminal == "gpu" else "endpoint"
    table = Table(
        title=f"all-to-all bandwidth: {r.fabric or r.family}",
        show_header=False,
        title_justify="left",
    )
    table.add_column("what")
    table.add_column("value", justify="right", overflow="fold")
    # Every rate follows from lambda: with bounds, each is the lower bound's.
    rates = [
        (f"pair rate (every {who} to every other)", f"{GB(r.pair_rate_Bps):.6g} GB/s"),
        ("alltoall busbw (nccl-tests)", f"{GB(r.alltoall_busbw_Bps):.2f} GB/s"),
        ("alltoall algbw (nccl-tests)", f"{GB(r.alltoall_algbw_Bps):.2f} GB/s"),
        (f"inter-node per {who}", f"{GB(r.internode_per_gpu_Bps):.2f} GB/s"),
        (
            "inter-node per NIC (of median NIC rate)",
            f"{GB(r.internode_per_nic_Bps):.2f} of {GB(r.nic_line_rate_Bps):.2f} GB/s"
            f" ({100 * r.nic_utilization:.1f}%)",
        ),
        (f"intra-node (NVLink) per {who}", f"{GB(r.intranode_per_gpu_Bps):.2f} GB/s"),
    ]
    if not r.exact:
        rates = [(k + " - LOWER BOUND", v) for k, v in rates]
    rows = [
        (f"{who}s", f"{r.gpus:,}"),
        ("servers", f"{r.nodes:,}"),
        *rates,
        (
            "bottleneck",
            ", ".join(f"{t} ({n:,} links)" for t, n in r.bottleneck_tiers.items()) or "-",
        ),
        (
            "method",
            f"{r.method} LP, exact; {r.lp.variables:,} variables"
            if r.exact
            else (
                f"certified bounds: busbw {GB(r.bounds.lower_Bps * (r.gpus - 1)):.2f} to "
                f"{GB(r.bounds.upper_Bps * (r.gpus - 1)):.2f} GB/s (gap "
                f"{100 * r.bounds.gap:.1f}%); the rates above are the lower bound"
            ),
        ),
        ("solve time", f"{r.solve_seconds:.2f} s (HiGHS {r.lp.solve_seconds:.2f} s)"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    for line in r.reductions:
        out.print(f"  reduction: {line}")
    if not r.exact:
        out.print(f"  lower bound: {r.bounds.lower_from}")
        out.print(f"  upper bound: {r.bounds.upper_from}")
    if show and r.bottleneck_links:
        links = Table(
            title=f"bottleneck links (first {min(show, len(r.bottleneck_links))}"
            f" of {len(r.bottleneck_links):,})",
            title_justify="left",
        )
        for col in ("from", "to", "tier", "capacity GB/s", "load GB/s"):
            links.add_column(col, justify="right" if "GB/s" in col else "left", overflow="fold")
        for b in r.bottleneck_links[:show]:
            links.add_row(
                b.source, b.target, b.tier, f"{GB(b.capacity_Bps):.2f}", f"{GB(b.load_Bps):.2f}"
            )
        out.print(links)


def _damage_lines(result: Any) -> None:
    """What failed and who is cut off, above the report."""
    f = result.failures
    if f.empty:
        return
    out.print(
        f"failed: {len(f.links):,} cable(s), {len(f.switches):,} switch(es); "
        f"{GB(f.capacity_lost_Bps):,.1f} GB/s of capacity (one direction)"
    )
    for name in f.switches[:8]:
        out.print(f"  switch {name}")
    for u, v in f.links[:8]:
        out.print(f"  cable {u}--{v}")
    if len(f.links) > 8:
        out.print(f"  ... and {len(f.links) - 8:,} more cables (--json lists them all)")
    if f.disconnected:
        names = ", ".join(map(str, f.disconnected[:8]))
        more = "" if len(f.disconnected) <= 8 else f", ... ({len(f.disconnected)})"
        out.print(
            f"DISCONNECTED: {f.disconnected_gpus:,} GPU(s) in "
            f"{len(f.disconnected):,} server(s) ({names}{more}) have no path to the rest; "
            "the all-to-all below is among the others"
        )


def _routed_table(r: Any, show: int) -> None:
    who = "GPU" if r.terminal == "gpu" else "endpoint"
    table = Table(
        title=f"all-to-all as routed ({r.routing}): {r.fabric or r.family}",
        show_header=False,
        title_justify="left",
    )
    table.add_column("what")
    table.add_column("value", justify="right", overflow="fold")
    how = {
        "ecmp": f"ECMP, {r.flows_per_pair} flow(s) per pair, seed {r.seed}",
        "dmodk": "D-mod-k (destination-based up-port)",
    }[r.routing]
    rows = [
        (f"{who}s", f"{r.gpus:,}"),
        ("servers", f"{r.nodes:,}"),
        ("routing", how + ("" if r.terminal != "gpu" else f"; PXN {'on' if r.pxn else 'off'}")),
        (f"pair rate (every {who} to every other)", f"{r.pair_rate_GBps:.6g} GB/s"),
        ("alltoall busbw (nccl-tests)", f"{r.alltoall_busbw_GBps:.2f} GB/s"),
        ("alltoall algbw (nccl-tests)", f"{r.alltoall_algbw_GBps:.2f} GB/s"),
    ]
    if r.routing == "ecmp":
        rows.append(
            (
                "with perfect spreading (expected loads)",
                f"{r.expected_alltoall_busbw_GBps:.2f} GB/s busbw; hash collisions cost "
                f"{100 * r.collision_loss:.1f}%",
            )
        )
    rows += [
        (
            "bottleneck",
            ", ".join(f"{t} ({n:,} links)" for t, n in r.bottleneck_tiers.items()) or "-",
        ),
        ("solve time", f"{r.solve_seconds:.2f} s"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    tiers = Table(title="load per tier (GB/s, at the pair rate above)", title_justify="left")
    for col in ("tier", "links", "capacity", "mean", "max", "expected max", "max util."):
        tiers.add_column(col, justify="left" if col == "tier" else "right")
    for t in r.tiers:
        tiers.add_row(
            t.tier,
            f"{t.links:,}",
            f"{t.capacity_GBps:.2f}",
            f"{t.mean_GBps:.2f}",
            f"{t.max_GBps:.2f}",
            f"{t.expected_max_GBps:.2f}",
            f"{100 * t.max_utilization:.1f}%",
        )
    out.print(tiers)
    for line in r.notes:
        out.print(f"  note: {line}")
    if show and r.most_loaded_links:
        links = Table(
            title=f"most loaded links (first {min(show, len(r.most_loaded_links))})",
            title_justify="left",
        )
        for col in ("from", "to", "tier", "capacity GB/s", "load GB/s", "util."):
            links.add_column(col, justify="left" if col in ("from", "to", "tier") else "right")
        for b in r.most_loaded_links[:show]:
            links.add_row(
                b.source,
                b.target,
                b.tier,
                f"{b.capacity_GBps:.2f}",
                f"{b.load_GBps:.2f}",
                f"{100 * b.utilization:.1f}%",
            )
        out.print(links)


# The other verbs register themselves on ``app`` when imported.
from topo import commands  # noqa: E402, F401

__all__ = ["app", "main"]


def main() -> None:
    """The console entry: the typer app, with usage errors (a missing file, a value out of
    range, an unknown option) as one ``topo: error:`` line and exit status 2."""
    import sys

    try:
        rc = app(standalone_mode=False)
    except Exception as exc:
        names = {k.__name__ for k in type(exc).__mro__}
        if "NoArgsIsHelpError" in names:  # bare ``topo`` or ``topo import``: the help
            print(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(2)
        if "UsageError" in names:
            ctx = getattr(exc, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None else ""
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            print(f"topo: error: {where}{message}{hint}", file=sys.stderr)
            sys.exit(2)
        if "Abort" in names:
            print("topo: interrupted", file=sys.stderr)
            sys.exit(130)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    app()
