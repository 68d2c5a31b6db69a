"""``topo import ibnetdiscover``: a real InfiniBand fabric from an ibnetdiscover dump."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topo import fabric as fabric_mod
from topo.cli_common import CountsJsonOpt, FabricOutputOpt, emit_fabric, user_errors


@user_errors
def ibnetdiscover(
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
    output: FabricOutputOpt = None,
    as_json: CountsJsonOpt = False,
) -> None:
    """Import an InfiniBand fabric from an ibnetdiscover dump."""
    from topo.formats import read_ibnetdiscover

    G = read_ibnetdiscover(dump, name_map=name_map)
    summary = fabric_mod.summarize(G).to_dict()
    for key in ("loopback_cables", "unconnected_cas", "mismatched_cables", "unreachable_switches"):
        if key in G.graph:
            summary[key] = G.graph[key]
    emit_fabric(G, summary, output, as_json)
