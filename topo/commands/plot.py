"""``topo plot``: the fabric drawn in layers as an HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topo import fabric as fabric_mod
from topo.cli_common import InputFabric, check_outputs, err, user_errors


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

    check_outputs({"--output": output}, [fabric], html=("--output",))
    G = fabric_mod.load(fabric)
    fig = plot_fabric(G, max_devices=max_devices)
    write_html(fig, output)
    err.print(f"wrote {output}")
