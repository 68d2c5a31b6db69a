"""``topo place``: several jobs on one fabric, each job's busbw alone and shared (max-min fair)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from topo import fabric as fabric_mod
from topo.cli_common import out, print_json, user_errors
from topo.errors import FormatError
from topo.place.jobs import STORAGE_TRAFFIC, JobError

if TYPE_CHECKING:  # the solver loads when the command runs
    from topo.place import PlaceReport, SlurmAdvice

CONTENDED_SHOWN = 10
"""Contended links the table lists (``--json`` lists them all)."""


@user_errors
def place(
    fabric: Annotated[
        Path,
        typer.Argument(
            help="A fabric JSON written by 'topo build -o' or 'topo import'.",
            exists=True,
            dir_okay=False,
        ),
    ],
    jobs: Annotated[
        Path,
        typer.Option(
            "--jobs",
            help="The jobs, a TOML file of [[jobs]] tables: name, traffic (alltoall, ring, "
            "pipeline, storage_read, checkpoint_write), servers = [...] or count with policy "
            "(packed, fragmented, slurm-tree, slurm-block), storage = [...], stages, weight "
            "(docs/place.md).",
            exists=True,
            dir_okay=False,
        ),
    ],
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the fragmented placement.", min=0)
    ] = 0,
    slurm: Annotated[
        bool,
        typer.Option(
            "--slurm",
            help="Also advise Slurm's BlockSizes for these jobs (topology.conf, topology/block) "
            "and the cost of fragmentation: the same jobs packed and fragmented.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Place the jobs on the fabric, then each job's busbw alone and shared (max-min fair, each
    job its own commodity of one concurrent flow), its slowdown, the links jobs contend on."""
    from topo.place import place as run
    from topo.place import read_jobs, slurm_advice

    job_list = read_jobs(jobs)
    G = fabric_mod.load(fabric)
    try:
        report = run(G, job_list, seed=seed)
        advice = slurm_advice(G, job_list, seed=seed) if slurm else None
    except JobError as e:  # a job of the file that this fabric cannot hold
        raise FormatError(jobs, str(e)) from None
    if as_json:
        d = report.to_dict()
        if advice is not None:
            d["slurm"] = advice.to_dict()
        print_json(d)
    else:
        _render(report)
        if advice is not None:
            _render_advice(advice)


def _render(report: PlaceReport) -> None:
    d = report.to_dict()
    table = Table(title=f"{report.fabric}: jobs alone and shared ({report.fairness})")
    weighted = any(j["weight"] != 1.0 for j in d["jobs"])
    storage = any(j["traffic"] in STORAGE_TRAFFIC for j in d["jobs"])
    cols = ["job", "traffic", "GPUs", "servers", "alone busbw GB/s", "shared GB/s", "slowdown"]
    cols += ["aggregate GB/s"] if storage else []
    cols += ["weight"] if weighted else []
    for col in [*cols, "bottleneck"]:
        left = col in ("job", "traffic", "servers", "bottleneck")
        table.add_column(col, justify="left" if left else "right")
    for j in d["jobs"]:
        table.add_row(
            j["name"],
            j["traffic"],
            f"{j['gpus']:,}",
            _servers(j["servers"]),
            f"{j['alone_busbw_GBps']:.2f}",
            f"{j['shared_busbw_GBps']:.2f}",
            f"{j['slowdown']:.3f}",
            *([f"{j['shared_aggregate_GBps']:,.1f}"] if storage else []),
            *([f"{j['weight']:g}"] if weighted else []),
            _neck(j),
        )
    out.print(table)
    links = d["contended_links"]
    if not links:
        out.print("no link is loaded by two jobs")
        return
    full = sum(1 for c in links if c["full"])
    out.print(
        f"links loaded by two or more jobs: {len(links):,}, {full:,} of them full (fullest first)"
    )
    for c in links[:CONTENDED_SHOWN]:
        out.print(
            f"  {c['tail']} -> {c['head']}: {c['load_GBps']:.2f} of {c['capacity_GBps']:.2f} "
            f"GB/s ({', '.join(c['jobs'])})"
        )
    if len(links) > CONTENDED_SHOWN:
        out.print(f"  ... and {len(links) - CONTENDED_SHOWN:,} more (--json lists them all)")


def _render_advice(advice: SlurmAdvice) -> None:
    table = Table(
        title=f"Slurm: BlockSizes={','.join(map(str, advice.block_sizes))} "
        f"(base block {advice.base_block} nodes); fragmentation as an idle cluster hands "
        "servers out"
    )
    cols = (
        "job",
        "nodes",
        "leaf SwitchNames",
        "block size",
        "blocks packed",
        "blocks fragmented",
        "packed GB/s",
        "fragmented GB/s",
        "cost",
    )
    for col in cols:
        table.add_column(col, justify="left" if col == "job" else "right")
    for j in advice.jobs:
        table.add_row(
            j.name,
            f"{j.servers:,}",
            f"{j.leaf_switches:,}",
            f"{j.block_size:,}" if j.block_size is not None else "none",
            f"{j.packed_blocks:,}",
            f"{j.fragmented_blocks:,}",
            f"{j.packed_busbw_Bps / 1e9:.2f}",
            f"{j.fragmented_busbw_Bps / 1e9:.2f}",
            f"{j.fragmentation_cost:.3f}",
        )
    out.print(table)
    lines = advice.topology_conf.splitlines()
    if len(lines) > 8:  # the header, 4 blocks, how many more, BlockSizes
        lines = [*lines[:5], f"... ({len(lines) - 6:,} more BlockName lines)", lines[-1]]
    out.print("topology.conf (--json has it whole):", markup=False, highlight=False)
    for ln in lines:
        out.print(f"  {ln}", markup=False, highlight=False)


def _neck(j: dict) -> str:
    """The bottleneck, with how many servers' NICs or switch links."""
    parts = []
    n = len(j["bottleneck_servers"])
    if n:
        what = j["bottleneck"].replace(" and switch links", "")
        parts.append(f"{what} of {n:,} server{'' if n == 1 else 's'}")
    if j["bottleneck_switch_links"]:
        k = j["bottleneck_switch_links"]
        parts.append(f"{k:,} switch link{'' if k == 1 else 's'}")
    return " and ".join(parts) or j["bottleneck"]


def _servers(ids: list[object], shown: int = 6) -> str:
    text = ", ".join(map(str, ids[:shown]))
    return text + (f", ... ({len(ids)})" if len(ids) > shown else "")
