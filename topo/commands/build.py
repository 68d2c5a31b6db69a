"""``topo build``: a fabric from a switch and a server (or a TOML spec), its counts, the graph
as JSON."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from topo import fabric as fabric_mod
from topo.cli_common import (
    CountsJsonOpt,
    FabricOutputOpt,
    GpusPerHostOpt,
    GpusPerNodeOpt,
    LinkGbpsOpt,
    NicsPerNodeOpt,
    NodeOpt,
    NvlinkGBpsOpt,
    OversubscriptionOpt,
    PcieGBpsOpt,
    SwitchOpt,
    SwitchPortsOpt,
    check_outputs,
    emit_fabric,
    from_command_line,
    print_json,
    summary_table,
    user_errors,
)
from topo.errors import SpecError, TopoError
from topo.fabric import FabricSummary

if TYPE_CHECKING:
    from topo.spec import FabricSpec


class Family(str, Enum):
    ft2 = "ft2"
    ft3 = "ft3"
    mrft = "mrft"
    mpft = "mpft"
    dragonfly = "dragonfly"
    slimfly = "slimfly"
    rail_only = "rail-only"
    hpn = "hpn"


class Arrangement(str, Enum):
    consecutive = "consecutive"
    palmtree = "palmtree"


@user_errors
def build(
    ctx: typer.Context,
    family: Annotated[
        Family | None,
        typer.Argument(
            help="ft2, ft3, mrft (multi-rail), mpft (multi-plane), dragonfly, slimfly, rail-only "
            "(rail switches, no spine) or hpn (Alibaba HPN: dual-ToR, dual-plane pod)."
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
    switch: SwitchOpt = None,
    node: NodeOpt = None,
    switch_ports: SwitchPortsOpt = 64,
    link_gbps: LinkGbpsOpt = 400.0,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", help="GPUs to connect (default: the family's maximum)."),
    ] = None,
    gpus_per_node: GpusPerNodeOpt = 8,
    nics_per_node: NicsPerNodeOpt = 8,
    gpus_per_host: GpusPerHostOpt = None,
    nvlink_GBps: NvlinkGBpsOpt = 200.0,
    pcie_GBps: PcieGBpsOpt = 64.0,
    oversubscription: OversubscriptionOpt = 1.0,
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
    tiers: Annotated[
        int | None,
        typer.Option(
            "--tiers",
            help="MRFT, MPFT: switch tiers, 2 or 3 (3: pods and cores, as NVIDIA's SuperPODs).",
        ),
    ] = None,
    nic_ports: Annotated[
        int | None,
        typer.Option(
            "--nic-ports",
            help="Ports per NIC; port p of every NIC on plane p (--link-gbps is per port).",
        ),
    ] = None,
    planes_per_nic: Annotated[
        int | None,
        typer.Option(
            "--planes-per-nic",
            help="Multi-plane NICs (ConnectX-8 on Spectrum-X): 1, 2 or 4 planes; the NIC's "
            "--link-gbps and every switch port are split over them (SN5600 64 x 800G: "
            "256 x 200G ports with 4 planes).",
        ),
    ] = None,
    output: FabricOutputOpt = None,
    as_json: CountsJsonOpt = False,
) -> None:
    """Build a fabric from a switch and a server: counts, and optionally the graph as JSON.

    Without ``-o`` the counts are computed in closed form (no graph is built)."""
    from topo.builders import build as build_fabric
    from topo.builders import fabric_counts
    from topo.catalog import load_catalog, named_options
    from topo.spec import FabricSpec, load_spec, spec_file_error

    check_outputs({"--output": output}, [spec], fabric=("--output",))
    args: dict[str, Any] = dict(
        switch_ports=switch_ports,
        link_gbps=link_gbps,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        gpus_per_host=gpus_per_host,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
        oversubscription=oversubscription,
        routers_per_group=routers_per_group,
        endpoints_per_router=endpoints_per_router,
        global_ports=global_ports,
        groups=groups,
        arrangement=arrangement.value if arrangement is not None else None,
        q=q,
        tiers=tiers,
        nic_ports=nic_ports,
        planes_per_nic=planes_per_nic,
    )
    catalog = load_catalog() if switch or node else None
    named = named_options(switch, node, link_gbps, catalog) if catalog is not None else {}
    for key, value in named.items():
        if not from_command_line(ctx, key):
            args[key] = value
    # Without -o nothing needs the graph: the counts come in closed form (fabric_counts,
    # equal to summarize(build(...)); tested family by family).
    make = build_fabric if output is not None else fabric_counts
    if spec is None:
        if family is None:
            raise TopoError(
                "give a FAMILY (ft2, ft3, mrft, mpft, dragonfly, slimfly, rail-only, hpn) or "
                "--spec FILE"
            )
        fabric_spec = FabricSpec.from_options(family.value, **args)
        made = make(fabric_spec)
    else:
        given = {k: v for k, v in args.items() if from_command_line(ctx, k) or k in named}
        fabric_spec = load_spec(spec, **given)
        if family is not None and family.value != fabric_spec.family:
            raise TopoError(
                f"{spec}: family {fabric_spec.family!r} differs from FAMILY {family.value!r}"
            )
        try:
            made = make(fabric_spec)
        except SpecError as exc:
            raise spec_file_error(exc, spec, given) from None
    if isinstance(made, FabricSummary):
        counts = {**made.to_dict(), **_alltoall(fabric_spec, made.gpus)}
        if as_json:
            print_json(counts)
        else:
            summary_table(counts, title=fabric_spec.name or f"{made.family}-{made.gpus}")
        return
    G = made
    if node is not None and catalog is not None:
        # the GPU model the server was built from: topo collective takes NCCL's per-arch
        # tables from it (a GB200 rack read as Hopper gave 641 instead of 1,013 GB/s)
        G.graph["gpu_model"] = str(catalog.get("node", node).get("model"))
    summary = fabric_mod.summarize(G)
    emit_fabric(G, {**summary.to_dict(), **_alltoall(fabric_spec, summary.gpus)}, output, as_json)


def _alltoall(spec: FabricSpec, gpus: int) -> dict[str, Any]:
    """The design's all-to-all in closed form where it is a non-blocking fat tree
    (:func:`topo.cost.clos_rates.clos_alltoall`: ``alltoall_busbw_GBps`` or None, the server's
    NIC side ``alltoall_server_GBps`` and ``alltoall_method``)."""
    from topo.cost.clos_rates import clos_alltoall

    return clos_alltoall(spec, gpus).to_dict()
