"""``topo cost`` (bill of materials, the Table 3 comparison) and ``topo plan`` (the cheapest
design per family, each family's ceiling). The model: docs/cost.md."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from topo.cli_common import (
    GpusPerNodeOpt,
    SwitchPortsOpt,
    check_outputs,
    err,
    from_command_line,
    link_gbps_option,
    nics_per_node_option,
    node_option,
    out,
    print_json,
    refuse_given,
    switch_option,
    switch_ports_option,
    user_errors,
)
from topo.errors import TopoError
from topo.spec import ServerSpec, SwitchSpec

if TYPE_CHECKING:  # the cost models load when a command runs
    from topo.cost import Ceiling, CompareRow, CostReport, PlanRow
    from topo.cost.prices import PriceBook

PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="A price book (TOML); default: topo/data/prices.toml (from the DeepSeek-V3 report).",
        exists=True,
        dir_okay=False,
    ),
]


def _families(text: str, allowed: tuple[str, ...], option: str) -> list[str]:
    # each family once, in the order first given ("ft2,ft2" is one design, not two rows)
    names = list(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    bad = [f for f in names if f not in allowed]
    if bad or not names:
        raise TopoError(
            f"{option}: unknown family {bad[0] if bad else text!r}; choose from {','.join(allowed)}"
        )
    return names


@user_errors
def cost(
    ctx: typer.Context,
    fabric: Annotated[
        Path | None,
        typer.Argument(
            help="A fabric JSON written by 'topo build -o' or 'topo import ... -o'.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="Compare families at full size (DeepSeek-V3 report, Table 3), e.g. "
            "ft2,mpft,ft3,slimfly,dragonfly; also rail-only and hpn.",
        ),
    ] = None,
    switch_ports: Annotated[int, switch_ports_option("Switch radix (ports), with --compare.")] = 64,
    link_gbps: Annotated[
        float, link_gbps_option("Port and cable speed, Gb/s, with --compare.")
    ] = 400.0,
    nics_per_node: Annotated[
        int, nics_per_node_option("NICs per server (MPFT planes), with --compare.")
    ] = 8,
    dragonfly_groups: Annotated[
        int | None,
        typer.Option(
            "--dragonfly-groups", help="Dragonfly groups (default a*h - 1, as Table 3).", min=1
        ),
    ] = None,
    prices: PricesOption = None,
    catalog: Annotated[
        Path | None,
        typer.Option(
            "--catalog",
            help="A hardware catalog whose priced switches override the price book "
            "(default: topo/data/catalog.toml, which carries no price).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="With --compare: write a bar chart of cost per endpoint and all-to-all "
            "bandwidth per dollar (flow solver).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Bill of materials and cost of a fabric, or the DeepSeek-V3 report's fabric comparison."""
    from topo import fabric as fabric_mod
    from topo.catalog import load_catalog
    from topo.cost import COMPARE_FAMILIES, bill_of_materials, load_prices
    from topo.cost import compare as compare_fn
    from topo.cost.catalog_prices import with_catalog

    check_outputs({"--html": html}, [fabric, prices, catalog])
    book = with_catalog(load_prices(prices), load_catalog(catalog))
    if (fabric is None) == (compare is None):
        raise TopoError("give a FABRIC.json or --compare FAMILIES (not both)")
    if compare is None:
        if html is not None:
            raise TopoError("--html draws the comparison: use it with --compare")
        refuse_given(
            ctx,
            ("switch_ports", "link_gbps", "nics_per_node", "dragonfly_groups"),
            "--compare",
            f"the bill of materials of {fabric} counts that fabric's own switches, cables and "
            "servers",
        )
        assert fabric is not None
        G = fabric_mod.load(fabric)
        try:
            report = bill_of_materials(G, book)
        except TopoError as exc:
            if exc.param != "link_gbps":
                raise
            raise exc.prefixed(f"{fabric}: ") from None
        if as_json:
            print_json(report.to_dict())
        else:
            _bom_table(report)
        return
    names = _families(compare, COMPARE_FAMILIES, "--compare")
    _check_compare_options(ctx, names, html is not None)
    rows = compare_fn(
        names,
        SwitchSpec(switch_ports, link_gbps),
        nics_per_node=nics_per_node,
        prices=book,
        dragonfly_groups=dragonfly_groups,
    )
    if html is not None:
        from topo.cost import solve_bandwidth
        from topo.plot import plot_cost, write_html

        err.print("solving all-to-all bandwidth per family (flow solver) ...")
        bw = solve_bandwidth(
            rows, switch_ports=switch_ports, link_gbps=link_gbps, nics_per_node=nics_per_node
        )
        write_html(
            plot_cost(rows, bw, title=f"fabrics of {switch_ports}-port {link_gbps:g}G switches"),
            html,
        )
        err.print(f"wrote {html}")
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    _compare_table(rows, switch_ports, link_gbps, book.path)


def _check_compare_options(ctx: typer.Context, names: list[str], html: bool) -> None:
    """Refuse the --compare options no family asked reads (docs/cost.md)."""
    if "dragonfly" not in names:
        refuse_given(
            ctx, ("dragonfly_groups",), "the dragonfly family of --compare", "none is compared"
        )
    if not {"mpft", "rail-only", "hpn"} & set(names) and not html:
        # --nics-per-node is MPFT's planes (rail-only's rails, an HPN host's NICs); the --html
        # solve also gives every server that many
        refuse_given(
            ctx,
            ("nics_per_node",),
            "the mpft family of --compare (its planes; rail-only's rails and an HPN host's NICs "
            "too) or its --html solve (the servers' NICs)",
            "neither is asked",
        )


class RankBy(str, Enum):
    cost = "cost"
    bandwidth = "bandwidth"
    cost_per_bandwidth = "cost-per-bandwidth"


class RateWith(str, Enum):
    deployed = "deployed"
    ideal = "ideal"


@user_errors
def plan(
    ctx: typer.Context,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="GPUs to connect (whole servers).", min=1)
    ] = None,
    switch: Annotated[
        str | None,
        switch_option(
            "A switch of the catalog (topo catalog switch); --switch-ports and "
            "--link-gbps win over it."
        ),
    ] = None,
    node: Annotated[
        str | None,
        node_option(
            "A GPU server of the catalog (topo catalog node); --gpus-per-node and "
            "--nics-per-node win over it."
        ),
    ] = None,
    switch_ports: SwitchPortsOpt = 64,
    link_gbps: Annotated[float, link_gbps_option("Port and cable speed, Gb/s.")] = 400.0,
    gpus_per_node: GpusPerNodeOpt = 8,
    nics_per_node: Annotated[int, nics_per_node_option("NICs per server (MPFT planes).")] = 8,
    max_oversubscription: Annotated[
        float,
        typer.Option(
            "--max-oversubscription",
            help="Largest leaf down/up bandwidth ratio (1 = non-blocking).",
        ),
    ] = 1.0,
    families: Annotated[
        str,
        typer.Option("--families", help="Families to design, comma-separated."),
    ] = "ft2,mpft,ft3,slimfly,dragonfly,mpft3,mrft3,rail-only,hpn",
    prices: PricesOption = None,
    max_gpus: Annotated[
        bool, typer.Option("--max-gpus", help="Print each family's ceiling instead.")
    ] = False,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Solver time limit per family, seconds.", min=0.1)
    ] = 60.0,
    check: Annotated[
        bool,
        typer.Option("--check/--no-check", help="Build each design, count and price it."),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    rank_by: Annotated[
        RankBy,
        typer.Option(
            "--rank-by",
            help="Order of the designs: cost; bandwidth (exact all-to-all busbw per GPU, "
            "highest first); cost-per-bandwidth (US$ per GB/s of the whole all-to-all, lowest "
            "first). Designs whose bandwidth is unknown follow, by cost.",
        ),
    ] = RankBy.cost,
    rate_with: Annotated[
        RateWith,
        typer.Option(
            "--rate-with",
            help="The all-to-all rating that --rank-by and the $ per GB/s column use: deployed "
            "(each family under the routing it runs: ECMP for fat trees, UGAL for Dragonfly "
            "and Slim Fly) or ideal (the max concurrent flow, any paths).",
        ),
    ] = RateWith.deployed,
    bandwidth_time_limit: Annotated[
        float,
        typer.Option(
            "--bandwidth-time-limit",
            help="HiGHS time limit of each design's all-to-all, seconds (past it, certified "
            "bounds and no value).",
            min=0.1,
        ),
    ] = 10.0,
    bandwidth: Annotated[
        bool,
        typer.Option(
            "--bandwidth/--no-bandwidth",
            help="Solve each built design's all-to-all (seconds to tens of seconds for "
            "Dragonfly and Slim Fly); --no-bandwidth keeps the check and the prices only.",
        ),
    ] = True,
) -> None:
    """The cheapest fabric per family for N GPUs (integer program, HiGHS), ranked by cost, with
    each design's all-to-all bandwidth (flow solver on the built design)."""
    from topo.cost import PLAN_FAMILIES, load_prices, max_gpus_plan
    from topo.cost import plan as plan_fn

    book = load_prices(prices)
    names = _families(families, PLAN_FAMILIES, "--families")
    given: dict[str, Any] = dict(
        switch_ports=switch_ports,
        link_gbps=link_gbps,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
    )
    if switch or node:
        from topo.catalog import named_options

        for key, value in named_options(switch, node, link_gbps).items():
            if key in given and not from_command_line(ctx, key):
                given[key] = value
    common: dict[str, Any] = dict(
        switch=SwitchSpec(given["switch_ports"], given["link_gbps"]),
        server=ServerSpec(given["gpus_per_node"], given["nics_per_node"]),
        max_oversubscription=max_oversubscription,
        families=names,
        prices=book,
        time_limit_s=time_limit,
    )
    if max_gpus:
        _refuse_with_max_gpus(ctx, gpus)
        _ceilings(max_gpus_plan(**common), given, as_json)
        return
    if gpus is None:
        raise TopoError("give --gpus N (or --max-gpus for each family's ceiling)")
    if not check:
        _refuse_without_designs(ctx, rank_by)
    elif not bandwidth:
        _refuse_without_bandwidth(ctx, rank_by)
    # beyond any family's ceiling by orders of magnitude: the integer programs are not asked
    # (their solver's numbers overflow near 1e20)
    rows = [] if gpus > PLAN_GPUS_ASKED_MAX else plan_fn(gpus, check=check, **common)
    if all(r.status == "infeasible" for r in rows):
        raise TopoError(_nothing_fits(gpus, names, common, given))
    rows = _plan_bandwidth(
        rows, check and bandwidth, rank_by, rate_with, bandwidth_time_limit, check, book
    )
    if as_json:
        print_json([_plan_dict(r, gpus) for r in rows])
        return
    _plan_table(rows, given["switch_ports"], given["link_gbps"], gpus, given["gpus_per_node"])
    _bandwidth_notes(rows, rank_by, rate_with)


PLAN_GPUS_ASKED_MAX = 10**12
"""``--gpus`` above this is refused as out of every family's reach without solving a program."""


def _refuse_with_max_gpus(ctx: typer.Context, gpus: int | None) -> None:
    """``--max-gpus``: refuse the options of a plan for ``--gpus N``."""
    if gpus is not None:
        raise TopoError(
            "give --gpus N or --max-gpus, not both: --max-gpus prints each family's "
            "ceiling, whatever N is"
        )
    if from_command_line(ctx, "check"):
        raise TopoError(
            "--check/--no-check applies to a plan for --gpus N: --max-gpus builds no design"
        )
    refuse_given(
        ctx,
        ("rank_by", "rate_with", "bandwidth_time_limit"),
        "a plan for --gpus N",
        "--max-gpus builds and solves no design",
    )


def _refuse_without_designs(ctx: typer.Context, rank_by: RankBy) -> None:
    """``--no-check``: refuse what needs the designs built (their all-to-all)."""
    refuse_given(
        ctx,
        ("bandwidth_time_limit", "rate_with"),
        "the designs built (--check)",
        "--no-check builds no design, so no all-to-all is solved",
    )
    if rank_by is not RankBy.cost:
        raise TopoError(
            f"--rank-by {rank_by.value} needs each design built and its all-to-all solved: "
            "drop --no-check"
        )


def _refuse_without_bandwidth(ctx: typer.Context, rank_by: RankBy) -> None:
    """``--no-bandwidth``: refuse what needs the all-to-all solved."""
    refuse_given(
        ctx,
        ("bandwidth_time_limit", "rate_with"),
        "the all-to-all solved",
        "--no-bandwidth solves no all-to-all",
    )
    if rank_by is not RankBy.cost:
        raise TopoError(
            f"--rank-by {rank_by.value} needs each design's all-to-all solved: drop --no-bandwidth"
        )


def _plan_bandwidth(
    rows: list[PlanRow],
    solve: bool,
    rank_by: RankBy,
    rate_with: RateWith,
    time_limit_s: float,
    built: bool,
    book: PriceBook,
) -> list[PlanRow]:
    """Each design's all-to-all when it is built and ``solve`` (:func:`topo.cost.
    plan_bandwidth.with_bandwidth`), the rows in the order ``--rank-by`` asks."""
    from dataclasses import replace

    from topo.cost.plan_bandwidth import rank_plan, with_bandwidth

    if solve:
        err.print("solving each design's all-to-all (--no-bandwidth skips it)")
        rows = with_bandwidth(rows, time_limit_s=time_limit_s, prices=book)
    else:
        note = "not solved: --no-bandwidth" if built else "not solved: --no-check builds no design"
        rows = [replace(r, alltoall_note=note) if r.feasible else r for r in rows]
    return rank_plan(rows, rank_by.value, rate_with.value)


def _busbw_cell(r: PlanRow) -> str:
    """The plan table's all-to-all cell: the exact busbw, else "unknown" (bounds only; they
    are in the notes) or "-" (not solved)."""
    if r.alltoall_busbw_GBps is not None:
        return f"{r.alltoall_busbw_GBps:.2f}"
    return "unknown" if r.alltoall_lower_busbw_GBps is not None else "-"


def _routed_cell(r: PlanRow) -> str:
    """The deployed routing's busbw and its name, or "-"."""
    if r.deployed_busbw_GBps is None:
        return "-"
    return f"{r.deployed_busbw_GBps:.2f} {r.deployed_routing}"


def _per_cell(r: PlanRow) -> str:
    """US$ per GB/s under the rating the ranking used."""
    per = r.cost_per_GBps_usd if r.rated_by == "ideal" else r.deployed_cost_per_GBps_usd
    return "-" if r.rated_by is None or per is None else f"{per:,.1f}"


def _bandwidth_notes(rows: list[PlanRow], rank_by: RankBy, rate_with: RateWith) -> None:
    """Below the plan: what the all-to-all columns are, each design whose value is not known
    or is for the filled design, and the order."""
    out.print(
        "  ideal busbw: the exact all-to-all busbw per GPU (max concurrent flow, any paths: "
        "topo bandwidth); routed busbw: under the routing the family is deployed with (ECMP "
        "hashing for fat trees; UGAL, the better of minimal and Valiant, for Dragonfly and "
        "Slim Fly); $ per GB/s: cost over busbw x GPUs, of the rating in 'rated by'"
    )
    for r in rows:
        if not r.feasible:
            continue
        if r.alltoall_gpus is not None and r.alltoall_gpus != r.gpus:
            routed = ", ".join(f"{k} {v:.2f}" for k, v in r.routed_busbw_GBps.items())
            out.print(
                f"  {r.family}: all-to-all of the design with every router filled "
                f"({r.alltoall_gpus:,} GPUs; the cost is for the {r.gpus:,} asked); "
                f"routed GB/s: {routed}"
            )
        if r.routed_note:
            out.print(f"  {r.family}: routed busbw -: {r.routed_note}")
        if r.alltoall_busbw_GBps is not None:
            continue
        if r.alltoall_lower_busbw_GBps is not None:
            out.print(
                f"  {r.family}: ideal all-to-all busbw unknown: only certified bounds, "
                f"{r.alltoall_lower_busbw_GBps:.2f} to {r.alltoall_upper_busbw_GBps:.2f} GB/s"
            )
        elif r.alltoall_note:
            out.print(f"  {r.family}: all-to-all {r.alltoall_note}")
    if rank_by is not RankBy.cost:
        out.print(
            f"  ranked by {rank_by.value} under the {rate_with.value} rating; designs of "
            "unknown bandwidth follow, by cost"
        )


def _ceilings(ceilings: list[Ceiling], given: dict[str, Any], as_json: bool) -> None:
    """``topo plan --max-gpus``: each family's ceiling, as JSON or a table."""
    if as_json:
        print_json([c.to_dict() for c in ceilings])
        return
    table = Table(
        title=f"ceilings: {given['switch_ports']}-port {given['link_gbps']:g}G switches, "
        f"{given['gpus_per_node']} GPUs + {given['nics_per_node']} NICs per server",
        title_justify="left",
    )
    for col in ("family", "max GPUs", "endpoints", "design", "binding"):
        table.add_column(col, justify="right" if col in ("max GPUs", "endpoints") else "left")
    for c in ceilings:
        table.add_row(
            c.family, f"{c.max_gpus:,}", f"{c.endpoints:,}", _design_text(c.design), c.binding
        )
    out.print(table)


def _nothing_fits(
    gpus: int, names: list[str], common: dict[str, Any], given: dict[str, Any]
) -> str:
    """The one line for a plan that no family asked can meet: the largest of their ceilings
    (or, should a ceiling not explain it, each family's reason)."""
    from topo.cost import max_gpus_plan
    from topo.cost import plan as plan_fn

    what = (
        f"{given['switch_ports']}-port {given['link_gbps']:g}G switches and "
        f"{given['gpus_per_node']} GPUs per server"
    )
    head = f"--gpus {gpus:,}: no family of {','.join(names)} connects that many with {what}"
    try:
        best = max(max_gpus_plan(**common), key=lambda c: c.max_gpus)
    except TopoError:  # a ceiling program that did not end: each family's reason
        best = None
    servers = -(-gpus // given["gpus_per_node"])
    if best is None or best.max_gpus >= servers * given["gpus_per_node"]:
        rows = plan_fn(gpus, check=False, **common)
        return head + ": " + "; ".join(f"{r.family}: {r.binding}" for r in rows)
    if len(names) == 1:
        return f"--gpus {gpus:,}: {best.family} connects at most {best.max_gpus:,} GPUs with {what}"
    return (
        f"{head}; the largest is {best.family}, at most {best.max_gpus:,} GPUs "
        "(topo plan --max-gpus lists each family's ceiling)"
    )


def _plan_dict(r: PlanRow, gpus: int) -> dict[str, Any]:
    """A plan row's JSON: ``gpus`` (whole servers) followed by ``gpus_requested`` (--gpus)."""
    d: dict[str, Any] = {}
    for key, value in r.to_dict().items():
        d[key] = value
        if key == "gpus":
            d["gpus_requested"] = gpus
    return d


# --------------------------------------------------------------------------- rendering


def _money(usd: float) -> str:
    return f"{usd / 1e6:,.3f}" if usd >= 1e6 else f"{usd / 1e6:.4f}"


def _bom_table(r: CostReport) -> None:
    table = Table(title=f"bill of materials: {r.name}", title_justify="left")
    for col in ("item", "quantity", "unit $", "total $", "watts"):
        table.add_column(col, justify="left" if col == "item" else "right")
    for line in r.lines:
        table.add_row(
            line.item,
            f"{line.quantity:,}",
            f"{line.unit_usd:,.2f}",
            f"{line.total_usd:,.0f}",
            "-" if line.watts is None else f"{line.watts:,.0f}",
        )
    table.add_row(
        "total", "", "", f"{r.cost_usd:,.0f}", "-" if r.watts is None else f"{r.watts:,.0f}"
    )
    out.print(table)
    per_gpu = r.extra.get("cost_per_gpu_usd")
    gpus = (
        f", {per_gpu:,.0f} $ per GPU ({r.extra['gpus']:,} GPUs)"
        if per_gpu is not None and r.extra.get("gpus") != r.endpoints
        else ""
    )
    out.print(
        f"{r.endpoints:,} endpoints (NIC ports), {r.switches:,} switches, {r.links:,} "
        f"switch-to-switch links: {r.cost_per_endpoint_usd:,.0f} $ per endpoint{gpus} "
        f"(price book {r.prices})"
    )


def _compare_table(rows: list[CompareRow], k: int, gbps: float, book: str) -> None:
    table = Table(
        title=f"fabrics of {k}-port {gbps:g}G switches (price book {book})", title_justify="left"
    )
    for col in ("", *[r.family for r in rows]):
        table.add_column(col, justify="right" if col else "left")

    def cells(fn: Callable[[CompareRow], str]) -> list[str]:
        return [fn(r) for r in rows]

    def vs(ours: float, theirs: float | None, fmt: str) -> str:
        if theirs is None:
            return format(ours, fmt)
        return f"{format(ours, fmt)} ({100 * (ours / theirs - 1):+.1f}%)"

    table.add_row("endpoints", *cells(lambda r: f"{r.endpoints:,}"))
    table.add_row("switches", *cells(lambda r: f"{r.switches:,}"))
    table.add_row("links (switch-to-switch)", *cells(lambda r: f"{r.links:,}"))
    table.add_row(
        "cost (M$)",
        *cells(lambda r: vs(r.cost_usd / 1e6, r.report["cost_musd"] if r.report else None, ".1f")),
    )
    table.add_row(
        "cost per endpoint (k$)",
        *cells(
            lambda r: vs(
                r.cost_per_endpoint_usd / 1e3, r.report["per_ep_kusd"] if r.report else None, ".2f"
            )
        ),
    )
    if any(r.report for r in rows):
        table.add_row(
            "Table 3 (M$ / k$)",
            *cells(
                lambda r: (
                    f"{r.report['cost_musd']:g} / {r.report['per_ep_kusd']:g}" if r.report else "-"
                )
            ),
        )
    out.print(table)
    for r in rows:
        if r.note:
            out.print(f"  {r.family}: {r.note}")
    if any(r.report for r in rows):
        out.print("  (+x%): against the DeepSeek-V3 hardware report, ISCA 2025, Table 3")


def _design_text(d: dict[str, Any]) -> str:
    skip = {"family", "switch_ports", "link_gbps", "gpus_per_node", "nics_per_node", "gpus"}
    return (
        ", ".join(
            f"{k.replace('_', ' ')} {v:g}" if isinstance(v, float) else f"{k.replace('_', ' ')} {v}"
            for k, v in d.items()
            if k not in skip
        )
        or "-"
    )


def _plan_table(rows: list[PlanRow], k: int, gbps: float, gpus: int, gpus_per_node: int) -> None:
    title = (
        f"cheapest fabric for {rows[0].gpus:,} GPUs, {k}-port {gbps:g}G switches" if rows else ""
    )
    table = Table(title=title, title_justify="left")
    cols = (
        "#",
        "family",
        "cost (M$)",
        "$/endpoint",
        "tiers",
        "planes",
        "switches",
        "links",
        "built",
        "ideal busbw GB/s",
        "routed busbw GB/s",
        "$ per GB/s",
        "rated by",
    )
    for col in cols:
        table.add_column(col, justify="left" if col == "family" else "right")
    for i, r in enumerate(rows, 1):
        if r.feasible:
            table.add_row(
                str(i),
                r.family,
                _money(r.cost_usd or 0.0),
                f"{r.cost_per_endpoint_usd:,.0f}",
                str(r.tiers),
                str(r.planes),
                f"{r.switches:,}",
                f"{r.links:,}",
                {True: "agrees", None: "-"}.get(r.checked, "no"),
                _busbw_cell(r),
                _routed_cell(r),
                _per_cell(r),
                r.rated_by or "-",
            )
        else:
            table.add_row(
                "-",
                r.family,
                r.status,
                "-",
                "-",
                str(r.planes or "-"),
                *["-"] * 7,
            )
    out.print(table)
    if rows and rows[0].gpus != gpus:  # --gpus N rounded up to whole servers
        n = rows[0].gpus // gpus_per_node
        out.print(
            f"  note: --gpus {gpus:,} rounded up to {rows[0].gpus:,} GPUs: "
            f"{n:,} whole server{'s' if n != 1 else ''} of {gpus_per_node} GPUs"
        )
    if rows and rows[0].gpus <= gpus_per_node:
        out.print(
            f"  note: {rows[0].gpus:,} GPUs are one server of {gpus_per_node}: its GPUs talk over "
            "NVLink, and no scale-out network is needed; the rows price one for a single server"
        )
    for r in rows:
        if not r.feasible:
            out.print(f"  {r.family}: {r.status}: {r.binding}")
            continue
        parts = "; ".join(
            f"{b['quantity']:,} x {b['item']} @ {b['unit_usd']:,.0f} $" for b in r.bom
        )
        out.print(f"  {r.family}: {_design_text(r.design)}; binding: {r.binding}")
        if r.degenerate:
            out.print(f"  {r.family}: degenerate: {r.degenerate}")
        out.print(f"    {parts}")
