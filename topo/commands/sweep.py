"""``topo sweep``: a grid (or seeded sample) of designs evaluated on the engine, one table row
per point (docs/sweep.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from topo.cli_common import (
    check_outputs,
    err,
    out,
    print_json,
    progress_bar,
    user_errors,
)
from topo.commands.engine_options import (
    ClusterOpt,
    MemoryLimitOpt,
    SchedulerOpt,
    SlurmAccountOpt,
    SlurmQueueOpt,
    SlurmWalltimeOpt,
    WorkersOpt,
    check_engine_options,
    open_engine,
)

if TYPE_CHECKING:
    from topo.engine.sweep import SweepResult


@user_errors
def sweep(
    ctx: typer.Context,
    spec: Annotated[
        Path,
        typer.Argument(help="A sweep spec (examples/sweep-*.toml).", exists=True, dir_okay=False),
    ],
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="The table: .parquet, or .csv.", dir_okay=False),
    ],
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue an interrupted sweep from OUTPUT.partial.jsonl."),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write the Pareto front: cost against TPOT (with moe) or all-to-all busbw.",
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was written as one JSON object.")
    ] = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    cluster: ClusterOpt = None,
    memory_limit: MemoryLimitOpt = "4GiB",
    slurm_queue: SlurmQueueOpt = None,
    slurm_account: SlurmAccountOpt = None,
    slurm_walltime: SlurmWalltimeOpt = "01:00:00",
) -> None:
    """Evaluate every point of a sweep spec on Dask workers; a row per point in OUTPUT."""
    from topo.engine.evaluate import columns
    from topo.engine.spec import load_sweep
    from topo.engine.sweep import check_sweep, run_sweep

    check_engine_options(ctx, scheduler, cluster)
    # a bad output (``-``, a missing folder, a bad suffix) before anything is read or started
    check_outputs({"--output": output, "--html": html}, [spec])
    parsed = load_sweep(spec)
    # every check that needs no evaluation before a Dask cluster starts: the table's suffix,
    # an interrupted sweep's journal, the model and prices, what --html draws
    check_sweep(parsed, output, resume)
    if html is not None:
        _pareto_axis(columns(list(parsed.grid), parsed.evaluate))
    engine_args = (workers, scheduler, cluster, memory_limit, slurm_queue, slurm_account)
    with open_engine(*engine_args, slurm_walltime) as engine, progress_bar() as bar:
        task = bar.add_task(spec.name, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = run_sweep(parsed, output, engine, resume=resume, progress=advance)
    if html is not None:
        _pareto_html(result, html)
    summary = {
        "output": str(result.output),
        "points": len(result.rows),
        "failed": result.failed,
        "resumed": result.resumed,
        "columns": result.columns,
        "seconds": result.seconds,
    }
    if as_json:
        print_json(summary)
    else:
        out.print(
            f"{len(result.rows)} points ({result.resumed} resumed, {result.failed} with an "
            f"error) in {result.seconds:.1f} s"
        )
    err.print(f"wrote {output}" + (f" and {html}" if html is not None else ""))


def _pareto_axis(cols: list[str]) -> str:
    """The Pareto chart's y column (TPOT with moe, else the all-to-all busbw) of a table's
    columns; a TopoError when the table has no cost or neither."""
    from topo.errors import TopoError

    if "cost_usd" not in cols or not ({"tpot_ms", "alltoall_busbw_GBps"} & set(cols)):
        raise TopoError("--html needs cost and moe or alltoall in the spec's evaluate")
    return "tpot_ms" if "tpot_ms" in cols else "alltoall_busbw_GBps"


def _pareto_html(result: SweepResult, html: Path) -> None:
    from topo.plot import write_html
    from topo.plot.pareto import plot_pareto

    y = _pareto_axis(result.columns)
    fig = plot_pareto(
        result.rows, "cost_usd", y, maximize_y=y != "tpot_ms", title=f"{result.output.name}"
    )
    write_html(fig, html)
