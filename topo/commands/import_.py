"""``topo import ibnetdiscover``: a real InfiniBand fabric from one or more ibnetdiscover dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topo import fabric as fabric_mod
from topo.cli_common import CountsJsonOpt, FabricOutputOpt, emit_fabric, user_errors
from topo.spec import ServerSpec

_SERVER = ServerSpec()  # the built server's NVLink and PCIe rates are the defaults

DumpsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Output of 'ibnetdiscover' (topology format); several files (one per plane) "
        "import as one fabric.",
        exists=True,
        dir_okay=False,
    ),
]
NameMapOpt = Annotated[
    Path | None,
    typer.Option(
        "--name-map",
        help="GUID-to-hostname map ('H-<guid> <host>' lines).",
        exists=True,
        dir_okay=False,
    ),
]
GpusPerHostOpt = Annotated[
    int | None,
    typer.Option(
        "--gpus-per-host",
        min=1,
        max=1024,
        help="Group the CAs into servers by their hosts and give each this many GPUs "
        "(NVLink and PCIe as a built server has).",
    ),
]
HostRegexOpt = Annotated[
    str | None,
    typer.Option(
        "--host-regex",
        help="Regular expression taking the host from a CA's description (group 'host', else "
        "group 1); default: the description's first word.",
    ),
]
NvlinkOpt = Annotated[
    float,
    typer.Option("--nvlink-GBps", help="NVLink per GPU, GB/s per direction (with hosts)."),
]
PcieOpt = Annotated[
    float,
    typer.Option("--pcie-GBps", help="PCIe per GPU-NIC link, GB/s per direction (with hosts)."),
]


@user_errors
def ibnetdiscover(
    dumps: DumpsArg,
    name_map: NameMapOpt = None,
    gpus_per_host: GpusPerHostOpt = None,
    host_regex: HostRegexOpt = None,
    nvlink_GBps: NvlinkOpt = _SERVER.nvlink_GBps,
    pcie_GBps: PcieOpt = _SERVER.pcie_GBps,
    output: FabricOutputOpt = None,
    as_json: CountsJsonOpt = False,
) -> None:
    """Import an InfiniBand fabric from ibnetdiscover dumps (one per plane, or concatenated)."""
    from topo.formats import import_ibnetdiscover

    G = import_ibnetdiscover(
        dumps,
        name_map=name_map,
        gpus_per_host=gpus_per_host,
        host_regex=host_regex,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
    )
    summary = fabric_mod.summarize(G).to_dict()
    for key in ("loopback_cables", "unconnected_cas", "mismatched_cables", "unreachable_switches"):
        if key in G.graph:
            summary[key] = G.graph[key]
    emit_fabric(G, summary, output, as_json)
