"""``topo bandwidth``: all-to-all bandwidth per GPU, optimal (max concurrent flow) or as routed
(ECMP, D-mod-k), with failures; its tables."""

from __future__ import annotations

from dataclasses import replace
from enum import Enum
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Annotated

import networkx as nx
import typer
from rich.table import Table

from topo import fabric as fabric_mod
from topo import files, runtime
from topo.cli_common import (
    FailLinksOpt,
    FailOpt,
    FailSwitchesOpt,
    FlowsOpt,
    InputFabric,
    MaxVariablesOpt,
    PlanesUsedOpt,
    PxnOpt,
    Routing,
    RoutingOpt,
    SeedOpt,
    TimeLimitOpt,
    about,
    check_outputs,
    check_pxn,
    check_routing_options,
    driven,
    err,
    out,
    print_json,
    refuse_given,
    user_errors,
)
from topo.errors import TopoError
from topo.units import Bps_to_GBps as GB
from topo.wording import count

if TYPE_CHECKING:  # the solver loads when a command runs, not when the app starts
    from topo.flow import BandwidthResult, BottleneckLink, LoadedLink, RoutingDetail
    from topo.flow.failures import DamagedBandwidth

BANDWIDTH_TIME_LIMIT_S = 120.0
"""Default HiGHS time limit of ``topo bandwidth`` (s): past it, certified bounds."""


class Method(str, Enum):
    auto = "auto"
    general = "general"


@user_errors
def bandwidth(
    ctx: typer.Context,
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
    planes_used: PlanesUsedOpt = None,
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
    lft: Annotated[
        Path | None,
        typer.Option(
            "--lft",
            help="With --routing lft: OpenSM's opensm-lfts.dump (or dump_fts/ibroute output); "
            "FABRIC is then the ibnetdiscover dump (or a fabric imported from it).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """All-to-all bandwidth per GPU: optimal (max concurrent flow, HiGHS) or as routed (ECMP,
    D-mod-k), with failures; the bottleneck tier and links."""
    check_outputs({"--html": html}, [fabric, lft])
    check_pxn(routing.value, pxn)
    check_routing_options(ctx, routing.value, bool(fail_links or fail_switches))
    if as_json:
        refuse_given(
            ctx,
            ("show",),
            "the table",
            "--json lists the bottleneck links (as routed: the most loaded) whatever it says",
        )
    if routing == Routing.lft or lft is not None:
        if planes_used is not None:
            raise TopoError("--routing lft routes the fabric as its tables are: no --planes-used")
        with about(fabric):
            _, result = _lft_bandwidth(fabric, lft, routing, pxn, (fail_links, fail_switches, fail))
    else:
        G = fabric_mod.load(fabric)
        # (as read, G's capacities are checked: the solvers' entry points do not check them
        # again, 0.2 s on FT3)
        with about(fabric), fabric_mod.vouched(G):
            G = driven(G, planes_used)
            result = _damaged(
                G,
                routing,
                method,
                seed,
                flows_per_pair,
                pxn,
                fail_links,
                fail_switches,
                fail,
                max_variables,
                time_limit,
                html is not None,
            )
    _render(result, routing, html, as_json, show)
    runtime.keep_until_exit(result)  # (with its fabric: freed by the process's end)


def _lft_bandwidth(
    fabric: Path,
    lft: Path | None,
    routing: Routing,
    pxn: bool,
    failures: tuple[int, int, list[str] | None],
) -> tuple[nx.Graph, DamagedBandwidth]:
    """``--routing lft``: the fabric (a dump, or a fabric imported from one) and its tables."""
    from topo.flow import FailureSet
    from topo.flow.failures import DamagedBandwidth
    from topo.flow.routing import routed_lft
    from topo.formats import read_ibnetdiscover
    from topo.formats.lft import read_lft

    if routing != Routing.lft or lft is None:
        raise TopoError("--lft FILE and --routing lft go together")
    if failures[0] or failures[1] or failures[2]:
        raise TopoError("--routing lft routes the fabric as its tables are: no --fail here")
    text = files.read_text(fabric)
    if text.lstrip().startswith("{"):
        G = fabric_mod.load(fabric)
        dump = Path(str(G.graph.get("source", "")))
        if G.graph.get("family") != "ibnetdiscover" or not dump.is_file():
            raise TopoError(
                f"--routing lft needs the ibnetdiscover dump of {fabric}: give the dump itself "
                "as FABRIC"
            )
    else:
        G, dump = read_ibnetdiscover(fabric), fabric
    none = FailureSet()
    report = replace(routed_lft(G, read_lft(lft, dump, G), pxn=pxn), failures=none)
    return G, DamagedBandwidth(report=report, failures=none, routing="lft", graph=G)


def _damaged(
    G: nx.Graph,
    routing: Routing,
    method: Method,
    seed: int,
    flows_per_pair: int,
    pxn: bool,
    fail_links: int,
    fail_switches: int,
    fail: list[str] | None,
    max_variables: int | None,
    time_limit: float | None,
    link_loads: bool,
) -> DamagedBandwidth:
    from topo.flow import FailureSet, alltoall_bandwidth, routed_alltoall
    from topo.flow.failures import DamagedBandwidth, damaged_bandwidth
    from topo.flow.solve import DEFAULT_MAX_VARIABLES, check_solver_limits

    max_variables = max_variables or DEFAULT_MAX_VARIABLES
    time_limit_s = time_limit or BANDWIDTH_TIME_LIMIT_S
    if fail_links or fail_switches or fail:
        return damaged_bandwidth(
            G,
            links=fail_links,
            switches=fail_switches,
            seed=seed,
            named=fail or (),
            routing=routing.value,
            flows_per_pair=flows_per_pair,
            pxn=pxn,
            method=method.value,
            max_variables=max_variables,
            link_loads=link_loads,
            time_limit_s=time_limit_s,
        )
    # nothing to fail: straight to the solve
    if routing == Routing.optimal:
        report = alltoall_bandwidth(
            G,
            method=method.value,
            max_variables=max_variables,
            link_loads=link_loads,
            time_limit_s=time_limit_s,
        )
    else:
        # (as damaged_bandwidth: the same refusals; G was checked as it was read, so no
        # require_fabric here)
        check_solver_limits(max_variables, time_limit_s)
        hashing = seed if routing == Routing.ecmp else None  # D-mod-k draws nothing
        report = routed_alltoall(
            G, routing.value, seed=hashing, flows_per_pair=flows_per_pair, pxn=pxn
        )
    none = FailureSet()
    report = replace(report, failures=none)
    return DamagedBandwidth(report=report, failures=none, routing=routing.value, graph=G)


def _render(
    result: DamagedBandwidth, routing: Routing, html: Path | None, as_json: bool, show: int
) -> None:
    if html is not None:
        from topo.plot import plot_link_load, write_html

        r = result.report
        title = (
            f"{r.fabric or r.family}: all-to-all link load ({routing.value}), "
            f"busbw {GB(r.alltoall_busbw_Bps):.2f} GB/s"
        )
        write_html(plot_link_load(result.graph, r.link_load or {}, title=title), html)
    if as_json:
        print_json(result.to_dict())
    else:
        _damage_lines(result)
        r = result.report
        if r.routing is None:
            _bandwidth_table(r, show, _nvlink_per_gpu(result.graph))
        else:
            _routed_table(r, r.routing, show)
    if html is not None:
        err.print(f"wrote {html}")


# --------------------------------------------------------------------------- rendering


def _nvlink_per_gpu(G: nx.Graph) -> float:
    """Median NVLink capacity out of a GPU (B/s: the sum of its GPU-NVSwitch edges), 0 when
    the fabric has no NVLink."""
    caps = [
        sum(d["capacity"] for _, w, d in G.edges(v, data=True) if d.get("kind") == "nvlink")
        for v, k in G.nodes(data="kind")
        if k == "gpu"
    ]
    return float(median(caps)) if caps else 0.0


def _intra(r: BandwidthResult, nvlink_Bps: float) -> str:
    """What a GPU sends to the GPUs of its own server, and how much of it NVLink can carry:
    beyond a GPU's NVLink capacity the rest goes GPU -> NIC -> leaf -> NIC -> GPU."""
    intra = r.intranode_per_gpu_Bps
    text = f"{GB(intra):.2f} GB/s"
    if nvlink_Bps <= 0 or intra <= 0:
        return text
    over = min(intra, nvlink_Bps)
    if intra <= nvlink_Bps * (1 + 1e-9):
        return f"{text} (fits its {GB(nvlink_Bps):.2f} GB/s of NVLink)"
    return (
        f"{text} (at most {GB(over):.2f} over NVLink, its capacity; at least "
        f"{GB(intra - over):.2f} through NIC, leaf, NIC)"
    )


def _bandwidth_table(r: BandwidthResult, show: int, nvlink_Bps: float = 0.0) -> None:
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
        *_per_nic_rows(r),
        (f"intra-server per {who}", _intra(r, nvlink_Bps)),
    ]
    if not r.exact:
        rates = [(k + " - LOWER BOUND", v) for k, v in rates]
    rows = [
        (f"{who}s", f"{r.gpus:,}"),
        _hosts_row(r),
        *rates,
        ("bottleneck", _bottleneck(r)),
        ("method", _method(r)),
        ("solve time", _solve_time(r)),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    for line in r.reductions:
        out.print(f"  reduction: {line}")
    if r.bounds is not None and not r.exact:
        out.print(f"  lower bound: {r.bounds.lower_from}")
        out.print(f"  upper bound: {r.bounds.upper_from}")
    _bottleneck_links(r, show)


def _per_nic_rows(r: BandwidthResult) -> list[tuple[str, str]]:
    """The inter-node traffic per NIC; with multi-port NICs (each port a NIC vertex) per port,
    and per NIC with all its ports."""
    of = (
        f"{GB(r.internode_per_nic_Bps):.2f} of {GB(r.nic_line_rate_Bps):.2f} GB/s"
        f" ({100 * r.nic_utilization:.1f}%)"
    )
    if r.nic_ports == 1:
        return [("inter-node per NIC (of median NIC rate)", of)]
    p = r.nic_ports
    return [
        ("inter-node per NIC port (of median port rate)", of),
        (
            f"inter-node per NIC ({p} ports)",
            f"{GB(r.internode_per_nic_all_ports_Bps):.2f} of {GB(p * r.nic_line_rate_Bps):.2f}"
            " GB/s",
        ),
    ]


def _hosts_row(r: BandwidthResult) -> tuple[str, str]:
    """The servers row; on a fabric without GPUs (an import) the hosts its endpoints are on."""
    return ("servers" if r.terminal == "gpu" else "hosts (of the endpoints)", f"{r.nodes:,}")


def _bottleneck(r: BandwidthResult) -> str:
    """The bottleneck row: the binding links per tier, or plainly that none is known."""
    if r.bottleneck_links:
        cables = r.bottleneck_cables
        return ", ".join(
            f"{t} ({count(n, 'link')}"
            + (f", {count(cables[t], 'cable')})" if cables[t] != n else ")")
            for t, n in r.bottleneck_tiers.items()
        )
    if r.exact:
        return "not identified (exact by meeting bounds)"
    return "not identified (only bounds are known)"


def _solve_time(r: BandwidthResult) -> str:
    """The wall time, and HiGHS' part of it only when an exact LP was solved (the bounds'
    own small LPs are named in the lower bound's line)."""
    if not r.lp.solved:
        return f"{r.solve_seconds:.2f} s (no exact LP solved)"
    return f"{r.solve_seconds:.2f} s (HiGHS {r.lp.solve_seconds:.2f} s)"


def _method(r: BandwidthResult) -> str:
    """The method row: the exact LP's size, or the certified bounds (busbw, GB/s) and their gap."""
    b = r.bounds
    if r.method == "certified":
        return "exact: a routing meets a cut bound (no LP)"
    if r.exact or b is None:
        return f"{r.method} LP, exact; {r.lp.variables:,} variables"
    bounds = (
        f"certified bounds: busbw {GB(b.lower_Bps * (r.gpus - 1)):.2f} to "
        f"{GB(b.upper_Bps * (r.gpus - 1)):.2f} GB/s (gap {100 * b.gap:.1f}%)"
    )
    if b.gap > 0.02:  # issue 13: bounds further apart than 2% do not give the value
        return f"value UNKNOWN: {bounds}; the rates above are only the lower bound"
    return f"{bounds}; the rates above are the lower bound"


def _bottleneck_links(r: BandwidthResult, show: int) -> None:
    if show and r.bottleneck_links:
        links = Table(
            title=f"bottleneck links (first {min(show, len(r.bottleneck_links))}"
            f" of {len(r.bottleneck_links):,})",
            title_justify="left",
        )
        for col in ("from", "to", "tier", "cables", "capacity GB/s", "load GB/s"):
            left = col in ("from", "to", "tier")
            links.add_column(col, justify="left" if left else "right", overflow="fold")
        for b in r.bottleneck_links[:show]:
            links.add_row(*_link_cells(b))
        out.print(links)


def _link_cells(b: BottleneckLink | LoadedLink) -> tuple[str, ...]:
    """A link direction's first cells: ends, tier, cables, capacity and load (GB/s)."""
    return (
        b.source,
        b.target,
        b.tier,
        f"{b.cables:,}",
        f"{GB(b.capacity_Bps):.2f}",
        f"{GB(b.load_Bps):.2f}",
    )


def _damage_lines(result: DamagedBandwidth) -> None:
    """What failed and who is cut off, above the report."""
    f = result.failures
    if f.empty:
        return
    out.print(
        f"failed: {count(len(f.links), 'cable')}, {count(len(f.switches), 'switch', 'switches')}; "
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
        where = (
            f"{count(f.disconnected_gpus, 'GPU')} in {count(len(f.disconnected), 'server')}"
            if getattr(result.report, "terminal", "gpu") == "gpu"
            else count(f.disconnected_gpus, "endpoint")
        )
        out.print(
            f"DISCONNECTED: {where} ({names}{more}) have no path to the rest; "
            "the all-to-all below is among the others"
        )
        _island_note(result)


def _island_note(result: DamagedBandwidth) -> None:
    """Which island the report is about when the damage leaves several of the largest size."""
    sizes = result.failures.islands
    if len(sizes) < 2 or sizes[1] != sizes[0]:
        return
    ties = sizes.count(sizes[0])
    servers = sorted(
        {str(d["node"]) for _, d in result.graph.nodes(data=True) if d["kind"] == "gpu"}
    )
    which = f" (servers {', '.join(servers[:8])})" if servers else ""
    out.print(
        f"  islands: the fabric splits into {len(sizes)} islands, {ties} of them the largest "
        f"with {count(sizes[0], 'GPU')} each; reported: the one with the first server by "
        f"name{which}"
    )


def _routed_table(r: BandwidthResult, how: RoutingDetail, show: int) -> None:
    who = "GPU" if r.terminal == "gpu" else "endpoint"
    table = Table(
        title=f"all-to-all as routed ({how.name}): {r.fabric or r.family}",
        show_header=False,
        title_justify="left",
    )
    table.add_column("what")
    table.add_column("value", justify="right", overflow="fold")
    kind = {
        "ecmp": f"ECMP, {count(how.flows_per_pair, 'flow')} per pair, seed {how.seed}",
        "dmodk": "D-mod-k (destination-based up-port)",
        "lft": "the subnet manager's forwarding tables (LFTs)",
    }[how.name]
    rows = [
        (f"{who}s", f"{r.gpus:,}"),
        _hosts_row(r),
        ("routing", kind + ("" if r.terminal != "gpu" else f"; PXN {'on' if how.pxn else 'off'}")),
        (f"pair rate (every {who} to every other)", f"{GB(r.pair_rate_Bps):.6g} GB/s"),
        ("alltoall busbw (nccl-tests)", f"{GB(r.alltoall_busbw_Bps):.2f} GB/s"),
        ("alltoall algbw (nccl-tests)", f"{GB(r.alltoall_algbw_Bps):.2f} GB/s"),
    ]
    if how.name == "ecmp":
        expected = GB(how.expected_pair_rate_Bps * (r.gpus - 1))
        loss = how.collision_loss
        effect = (
            f"hash collisions cost {100 * loss:.1f}%"
            if loss >= 0
            else f"this sample beats it by {-100 * loss:.1f}% (the even split is an average "
            "of the samples, not a bound on one)"
        )
        rows.append(
            ("with perfect spreading (expected loads)", f"{expected:.2f} GB/s busbw; {effect}")
        )
    rows += [
        (
            "bottleneck",
            ", ".join(f"{t} ({count(n, 'link')})" for t, n in r.bottleneck_tiers.items()) or "-",
        ),
        ("solve time", f"{r.solve_seconds:.2f} s"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    _tier_table(how)
    for line in r.reductions:
        out.print(f"  note: {line}")
    _loaded_links(how, show)


def _tier_table(how: RoutingDetail) -> None:
    """Per tier: its links (a bundle of parallel cables counts once) and cables; capacity and
    loads per link (the bundle's, GB/s); the busiest single cable's utilisation."""
    tiers = Table(
        title="load per tier (GB/s per link, a link being a bundle of parallel cables, at the "
        "pair rate above; util. of the busiest single cable)",
        title_justify="left",
    )
    cols = ("tier", "links", "cables", "capacity", "mean", "max", "expected max", "max util.")
    for col in cols:
        tiers.add_column(col, justify="left" if col == "tier" else "right")
    for t in how.tiers:
        tiers.add_row(
            t.tier,
            f"{t.links:,}",
            f"{t.cables:,}",
            f"{GB(t.capacity_Bps):.2f}",
            f"{GB(t.mean_Bps):.2f}",
            f"{GB(t.max_Bps):.2f}",
            f"{GB(t.expected_max_Bps):.2f}",
            f"{100 * t.max_utilization:.1f}%",
        )
    out.print(tiers)


def _loaded_links(how: RoutingDetail, show: int) -> None:
    """The most loaded links, ordered by their busiest cable's utilisation (the report's
    order): load and capacity of the whole bundle, its mean cable utilisation beside."""
    if show and how.loaded_links:
        from topo.flow.routing import TOP_LINKS

        shown = min(show, len(how.loaded_links))
        kept = (
            f"; --show {show} asked, the report keeps the {TOP_LINKS} most loaded"
            if show > shown == TOP_LINKS
            else ""
        )
        # the caption says when --show asked for more than the report keeps
        links = Table(
            title=f"most loaded links (first {shown}{kept}; by the busiest cable's utilisation; "
            "capacity and load of the bundle of parallel cables)",
            title_justify="left",
        )
        cols = ("from", "to", "tier", "cables", "capacity GB/s", "load GB/s", "bundle util.")
        for col in (*cols, "busiest cable util."):
            links.add_column(col, justify="left" if col in ("from", "to", "tier") else "right")
        for b in how.loaded_links[:show]:
            links.add_row(
                *_link_cells(b),
                f"{100 * b.load_Bps / b.capacity_Bps:.1f}%",
                f"{100 * b.utilization:.1f}%",
            )
        out.print(links)
