"""``topo catalog``: the named switches, servers, NICs and optics, with the source of each
figure (``topo/data/catalog.toml``; docs/hardware.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from topo.cli_common import out, print_json, user_errors

_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "switch": (("ports", "ports"), ("gbps", "Gb/s"), ("protocol", "protocol")),
    "node": (
        ("arch", "arch"),
        ("gpus", "GPUs"),
        ("nics", "NICs"),
        ("nic", "NIC"),
        ("nvlink_GBps", "NVLink GB/s"),
        ("pcie_GBps", "PCIe GB/s"),
    ),
    "nic": (("gbps", "Gb/s"), ("ports", "ports"), ("pcie", "PCIe")),
    "optic": (("kind", "kind"), ("gbps", "Gb/s"), ("reach_m", "reach m"), ("watts", "W")),
}


@user_errors
def catalog(
    kind: Annotated[
        str | None,
        typer.Argument(help="switch, node, nic or optic (default: all)."),
    ] = None,
    path: Annotated[
        Path | None,
        typer.Option(
            "--catalog", help="A catalog TOML (default: topo/data/catalog.toml).", dir_okay=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The hardware catalog: switches, GPU servers, NICs, optics, and the source of every figure."""
    from topo.catalog import CATALOG_KINDS, load_catalog
    from topo.errors import TopoError

    if kind is not None and kind not in CATALOG_KINDS:
        raise TopoError(f"unknown kind {kind!r}; choose one of {', '.join(CATALOG_KINDS)}")
    cat = load_catalog(path)
    kinds = [kind] if kind else list(CATALOG_KINDS)
    entries = [e for e in cat.entries if e.kind in kinds]
    if as_json:
        doc: dict[str, Any] = {"catalog": cat.path}
        for k in kinds:
            doc[k] = [e.to_dict() for e in entries if e.kind == k]
        print_json(doc)
        return
    for k in kinds:
        table = Table(title=f"{k}es" if k == "switch" else f"{k}s", title_justify="left")
        table.add_column("name")
        for _, head in _COLUMNS[k]:
            table.add_column(head, justify="right")
        table.add_column("price $", justify="right")
        table.add_column("model / source")
        for e in (e for e in entries if e.kind == k):
            price = e.get("price_usd")
            table.add_row(
                e.name,
                *(_cell(e.get(key)) for key, _ in _COLUMNS[k]),
                "-" if price is None else f"{price:,}",
                f"{e.get('model')}\n[dim]{e.source}[/dim]",
            )
        out.print(table)
    out.print("[dim]- : no public figure (left absent, never guessed); docs/hardware.md[/dim]")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
