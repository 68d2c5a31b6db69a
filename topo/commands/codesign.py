"""``topo codesign``: the cheapest fabric, EP size and node limit that decode within a TPOT
target, searched on the engine (docs/sweep.md)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from topo.cli_common import (
    GatingSeedOpt,
    GpusPerNodeOpt,
    MicroBatchesOpt,
    NicsPerNodeOpt,
    TokensPerGpuOpt,
    err,
    link_gbps_option,
    out,
    oversubscription_option,
    print_json,
    progress_bar,
    switch_ports_option,
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
from topo.commands.moe import Kernel
from topo.errors import TopoError

if TYPE_CHECKING:
    from topo.engine.codesign import CodesignResult


def _numbers(text: str, option: str, kind: type) -> list[Any]:
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise TopoError(f"{option}: expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise TopoError(f"{option}: give at least one value")
    return values


@user_errors
def codesign(
    ctx: typer.Context,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs of the cluster.", min=1)],
    tpot_ms: Annotated[
        float, typer.Option("--tpot-ms", help="Decode target: time per output token, ms.")
    ],
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="A Hugging Face config.json or DeepSeek inference config (default DeepSeek-V3).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    families: Annotated[
        str, typer.Option("--families", help="Fabric families to search, comma-separated.")
    ] = "ft2,mrft,mpft,ft3",
    switch_ports: Annotated[
        str, switch_ports_option("Switch radixes to search, comma-separated.")
    ] = "64",
    link_gbps: Annotated[
        str, link_gbps_option("Link rates to search, Gb/s, comma-separated.")
    ] = "400",
    oversubscription: Annotated[
        str, oversubscription_option("Leaf oversubscriptions to search, comma-separated.")
    ] = "1,3",
    gpus_per_node: GpusPerNodeOpt = 8,
    nics_per_node: NicsPerNodeOpt = 8,
    ep: Annotated[
        str | None,
        typer.Option(
            "--ep", help="EP sizes to search (default: whole servers dividing the experts)."
        ),
    ] = None,
    node_limit: Annotated[
        str, typer.Option("--node-limit", help="Node limits M to search (0 = unlimited).")
    ] = "0,1,2,4",
    tokens_per_gpu: TokensPerGpuOpt = 32,
    micro_batches: MicroBatchesOpt = 2,
    seed: GatingSeedOpt = 0,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            help="Time each design with this EP kernel's model (as topo moe --kernel): "
            "deepep-normal, deepep-ll, deepep-v2, nccl, nccl-ep-ll, nccl-ep-ht; a comma list "
            "or 'all' searches the kernels too, each a design of its own.",
        ),
    ] = None,
    kernel_sms: Annotated[
        int | None,
        typer.Option(
            "--kernel-sms",
            "--sms",
            help="SMs given to DeepEP's normal or V2 kernels (as topo moe --kernel-sms).",
            min=1,
        ),
    ] = None,
    runners_up: Annotated[
        int, typer.Option("--runners-up", help="Other fabrics' best designs to list.", min=0)
    ] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    cluster: ClusterOpt = None,
    memory_limit: MemoryLimitOpt = "4GiB",
    slurm_queue: SlurmQueueOpt = None,
    slurm_account: SlurmAccountOpt = None,
    slurm_walltime: SlurmWalltimeOpt = "01:00:00",
) -> None:
    """The cheapest design (fabric, EP size, node limit) whose MoE decode meets --tpot-ms."""
    from topo.engine.codesign import IN_PROCESS_S, plan_codesign, run_codesign
    from topo.moe import default_config, load_config

    check_engine_options(ctx, scheduler, cluster)
    if kernel_sms is not None and kernel is None:
        raise TopoError("--kernel-sms needs --kernel")
    kernels = _kernels(kernel) if kernel is not None else None
    if kernels is not None:
        from topo.engine.codesign import SM_KERNELS
        from topo.moe.kernels import check_kernel_sms

        if len(kernels) == 1:
            check_kernel_sms(kernels[0], kernel_sms)
        elif kernel_sms is not None:
            taking = [k for k in kernels if k in SM_KERNELS]
            if not taking:
                raise TopoError(
                    f"--kernel-sms: none of {', '.join(kernels)} takes an SM count "
                    f"(only {' and '.join(SM_KERNELS)} do)"
                )
            for k in taking:
                check_kernel_sms(k, kernel_sms)
    config = load_config(model) if model is not None else default_config()
    grid: dict[str, list[Any]] = {
        "switch_ports": _numbers(switch_ports, "--switch-ports", int),
        "link_gbps": _numbers(link_gbps, "--link-gbps", float),
        "oversubscription": _numbers(oversubscription, "--oversubscription", float),
        "gpus_per_node": [gpus_per_node],
        "nics_per_node": [nics_per_node],
    }
    # every check that needs no timing (the grid, the EP sizes, the node limits, the fabrics
    # built) before a Dask cluster starts
    plan = plan_codesign(
        config,
        gpus,
        tpot_ms,
        families=[f.strip() for f in families.split(",") if f.strip()],
        grid=grid,
        eps=_numbers(ep, "--ep", int) if ep else None,
        node_limits=_numbers(node_limit, "--node-limit", int),
    )
    engine_args = (workers, scheduler, cluster, memory_limit, slurm_queue, slurm_account)
    # local workers start only for the points left after IN_PROCESS_S of them ran here; a
    # running scheduler or a Slurm cluster gets every point
    local = scheduler is None and cluster is None
    done, started = [0], []
    cpu_s = time.process_time()
    with contextlib.ExitStack() as stack, progress_bar() as bar:
        task = bar.add_task("designs", total=len(plan.tasks))

        def advance(n: int) -> None:
            done[0] = n
            bar.update(task, completed=n)

        def start_engine() -> Any:
            started.append(done[0])
            return stack.enter_context(open_engine(*engine_args, slurm_walltime))

        result = run_codesign(
            plan,
            config,
            start_engine,
            moe=dict(
                tokens_per_gpu=tokens_per_gpu,
                micro_batches=micro_batches,
                seed=seed,
                kernel=kernels,
                kernel_sms=kernel_sms,
            ),
            runners_up=runners_up,
            model_arg=str(model) if model is not None else None,
            progress=advance,
            in_process_s=IN_PROCESS_S if local else None,
        )
    n, cpu_s = len(plan.tasks), time.process_time() - cpu_s
    if local and not started:
        err.print(
            f"engine: the {n} points ran in this process ({cpu_s:.1f} CPU s: too little work "
            "to gain from starting Dask workers)"
        )
    elif local and started[0]:
        err.print(f"engine: {started[0]} of the {n} points ran in this process first")
    if as_json:
        print_json(result.to_dict())
    else:
        _table(result)


def _kernels(text: str) -> list[str]:
    """``--kernel``'s kernels: one, a comma list (each once, in order) or ``all``."""
    names = [k.value for k in Kernel]
    given = [k.strip() for k in text.split(",") if k.strip()]
    if given == ["all"]:
        return names
    bad = [k for k in given if k not in names]
    if not given or bad:
        raise TopoError(
            f"--kernel: {', '.join(repr(k) for k in bad) or 'nothing given'}; give one or a "
            f"comma list of {', '.join(names)}, or all",
            param="kernel",
        )
    return list(dict.fromkeys(given))


def _table(r: CodesignResult) -> None:
    table = Table(
        title=f"{r.model} on {r.gpus:,} GPUs within {r.tpot_target_ms:g} ms per token: "
        f"{r.feasible} of {r.evaluated} designs on {r.fabrics} fabrics meet it",
        title_justify="left",
    )
    kernel = r.design.kernel is not None
    columns = ["", "topo build", "EP", "M", *(["kernel"] if kernel else [])]
    for col in (*columns, "cost $", "$/endpoint", "TPOT ms", "tok/s"):
        table.add_column(col, justify="left" if col in ("", "topo build", "kernel") else "right")
    rows = [("design", r.design), *(("runner-up", d) for d in r.runners_up)]
    rows += [(f"best {d.kernel}", d) for d in r.by_kernel]
    for label, d in rows:
        table.add_row(
            label,
            " ".join(d.build_args),
            str(d.ep),
            str(d.node_limit) if d.node_limit else "-",
            *([str(d.kernel)] if kernel else []),
            f"{d.cost_usd:,.0f}",
            f"{d.cost_per_endpoint_usd:,.0f}",
            f"{d.tpot_ms:.3f}",
            f"{d.tokens_per_s:,.1f}",
        )
    out.print(table)
    for line in r.not_met:
        out.print(f"not met with {line}")
    for line in r.not_timed:
        err.print(f"not timed: {line}")
    if r.refused:
        err.print(f"{len(r.refused)} fabric(s) refused by their family (--json lists them)")
