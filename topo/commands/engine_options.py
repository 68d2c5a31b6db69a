"""The options that choose the engine (``--workers``, ``--scheduler``, ``--cluster`` and the
Slurm job's), shared by ``topo resilience``, ``topo sweep`` and ``topo codesign``."""

from __future__ import annotations

from contextlib import AbstractContextManager
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from topo.cli_common import err, from_command_line, refuse_given

if TYPE_CHECKING:
    from topo.engine import Engine, SerialEngine


class Cluster(str, Enum):
    local = "local"
    slurm = "slurm"


WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Worker processes of the embedded Dask cluster (default: the cores; at most 4 "
        "per core and one per 256 MiB of memory), or Slurm jobs (at most 1024).",
        min=1,
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        metavar="ADDRESS",
        help="A running Dask scheduler, tcp://HOST:PORT: its workers run the tasks.",
    ),
]
ClusterOpt = Annotated[
    Cluster | None,
    typer.Option(
        "--cluster",
        help="local: a LocalCluster of --workers processes; slurm: dask-jobqueue's "
        "SLURMCluster, --workers jobs (docs/sweep.md).",
    ),
]
MemoryLimitOpt = Annotated[
    str,
    typer.Option(
        "--memory-limit",
        help="Memory per worker (embedded cluster, Slurm job), e.g. 2GiB: from 256MiB to the "
        "machine's memory (embedded cluster).",
    ),
]
SlurmQueueOpt = Annotated[
    str | None, typer.Option("--slurm-queue", help="--cluster slurm: the partition.")
]
SlurmAccountOpt = Annotated[
    str | None, typer.Option("--slurm-account", help="--cluster slurm: the account.")
]
SlurmWalltimeOpt = Annotated[
    str, typer.Option("--slurm-walltime", help="--cluster slurm: job time limit, HH:MM:SS.")
]


def open_engine(
    workers: int | None,
    scheduler: str | None,
    cluster: Cluster | None,
    memory_limit: str,
    slurm_queue: str | None = None,
    slurm_account: str | None = None,
    slurm_walltime: str = "01:00:00",
) -> AbstractContextManager[Engine | SerialEngine]:
    """The engine the options ask for (a Dask cluster is started here, stopped on exit); a
    line on stderr says where the tasks run."""
    from topo.engine import make_engine

    slurm = dict(
        queue=slurm_queue, account=slurm_account, walltime=slurm_walltime, memory=memory_limit
    )
    engine = make_engine(
        workers=workers,
        scheduler=scheduler,
        cluster=cluster.value if cluster is not None else None,
        memory_limit=memory_limit,
        slurm=slurm,
    )
    err.print(f"engine: Dask, {engine.workers} worker(s) at {engine.address}")
    return engine


def check_local_engine(workers: int | None, memory_limit: str) -> None:
    """Refuse ``--workers`` and ``--memory-limit`` a local Dask cluster could not start with,
    before any work (the cluster itself may start later, :func:`open_engine`).

    Raises
    ------
    TopoError
        As :func:`topo.engine.cluster.check_workers` and
        :func:`topo.engine.cluster.parse_memory_limit`.
    """
    from topo.engine.cluster import DEFAULT_MEMORY_LIMIT, check_workers, parse_memory_limit

    check_workers(workers, "local")
    if memory_limit != DEFAULT_MEMORY_LIMIT:  # (the default fits the machine: Engine's rule)
        parse_memory_limit(memory_limit, "local")


def check_engine_options(
    ctx: typer.Context, scheduler: str | None, cluster: Cluster | None, serial: bool = False
) -> None:
    """Refuse the engine options the engine asked for would ignore.

    Parameters
    ----------
    ctx : typer.Context
        The command's context (which options were given on the command line).
    scheduler, cluster
        ``--scheduler`` and ``--cluster``.
    serial : bool
        The command runs in its own process when no engine option is given
        (``topo resilience``): ``--memory-limit`` then needs ``--workers`` or ``--cluster``.

    Raises
    ------
    TopoError
        A ``--slurm-*`` option without ``--cluster slurm``; ``--workers`` or
        ``--memory-limit`` with ``--scheduler`` (its workers are already running); with
        ``serial``, ``--memory-limit`` with no engine option; a ``--workers`` or
        ``--memory-limit`` out of range (:func:`topo.engine.cluster.check_workers`,
        :func:`topo.engine.cluster.parse_memory_limit`), before any work starts.
    """
    if cluster is not Cluster.slurm:
        refuse_given(
            ctx,
            ("slurm_queue", "slurm_account", "slurm_walltime"),
            "--cluster slurm",
            "no Slurm job is submitted otherwise",
        )
    if scheduler is not None:
        refuse_given(
            ctx,
            ("workers", "memory_limit"),
            "the cluster topo starts itself (no --scheduler)",
            f"the workers of the running scheduler {scheduler} are already started",
        )
    elif serial and cluster is None and not from_command_line(ctx, "workers"):
        refuse_given(
            ctx,
            ("memory_limit",),
            "Dask workers (--workers, --cluster)",
            "without them the trials run in this process",
        )
    else:  # topo starts the workers: their count and memory, checked before the work
        from topo.engine.cluster import check_workers, parse_memory_limit

        kind = cluster.value if cluster is not None else "local"
        check_workers(ctx.params.get("workers"), kind)
        if from_command_line(ctx, "memory_limit"):  # (the default fits any machine: Engine)
            parse_memory_limit(ctx.params["memory_limit"], kind)
