"""The one seam to the distributed engine: Dask (``dask.distributed``).

An :class:`Engine` is a Dask client on an embedded :class:`distributed.LocalCluster` of worker
processes (the default), on a running scheduler (``tcp://HOST:PORT``), or on a Slurm cluster
through ``dask-jobqueue``'s ``SLURMCluster``. :class:`SerialEngine` has the same interface and
runs everything in this process. Code above this module never imports Dask: it calls
:meth:`Engine.scatter` (ship a large input, e.g. a fabric, to every worker once) and
:meth:`Engine.map` (run a function over tasks, results as they finish).

A task whose worker dies is run again once on another worker; if that worker dies too, the
task is reported (:class:`TaskOutcome` with ``error``) and the other tasks go on. On the
embedded cluster this is Dask's ``distributed.scheduler.allowed-failures = 1``; an external
scheduler keeps its own setting (set ``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1`` where
it starts).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from topo.errors import TopoError

CLUSTERS = ("local", "slurm")

DEFAULT_MEMORY_LIMIT = "4GiB"
"""Memory limit per embedded worker: a few one-solve footprints (the 16,384-GPU MPFT's exact
all-to-all LP takes well under 1 GiB); the nanny restarts a worker that exceeds it."""

MIN_MEMORY_LIMIT_BYTES = 256 * 2**20
"""Smallest ``memory_limit`` per worker: 256 MiB. A Dask worker that has imported topo and
solved a small fabric holds about 200 MiB; below this its nanny would restart it before or
during its first task."""

WORKERS_PER_CORE = 4
"""Most embedded workers per core (:func:`max_workers`): the tasks are CPU-bound solves, so
more workers than cores only share them (and each is a process of its own to start and stop)."""

MAX_CLUSTER_JOBS = 1024
"""Most Slurm jobs (``cluster="slurm"``: one worker each) one run submits."""

ALLOWED_FAILURES = 1
"""Worker deaths a task may cause before it is reported (Dask's
``distributed.scheduler.allowed-failures``): retried once, then reported."""

INTERRUPTED_CLOSE_S = 0.5
"""Seconds an interrupted run gives Dask's client, then its cluster, to close (each takes
0.1-0.2 s when no request is left waiting) before the process ends without them."""


@dataclass(frozen=True)
class TaskOutcome:
    """One finished task.

    Attributes
    ----------
    index : int
        The task's position in the list given to :meth:`Engine.map`.
    value : Any
        What the function returned (None when it failed).
    error : str
        Empty on success; else the failure in one line (``KilledWorker: ...`` when its workers
        died twice, or the exception the function raised).
    """

    index: int
    value: Any = None
    error: str = ""

    @property
    def ok(self) -> bool:
        """True when the task returned a value."""
        return not self.error


def machine_memory_bytes() -> int:
    """The memory this process may use, bytes: the machine's, or its cgroup's limit when
    lower (Dask's ``distributed.system.MEMORY_LIMIT``)."""
    from distributed.system import MEMORY_LIMIT

    return int(MEMORY_LIMIT)


def max_workers(cluster: str = "local") -> int:
    """The most workers an engine may start.

    Parameters
    ----------
    cluster : {"local", "slurm"}
        ``local``: worker processes on this machine, at most :data:`WORKERS_PER_CORE` per
        core (``os.cpu_count()``) and one per :data:`MIN_MEMORY_LIMIT_BYTES` of its memory
        (:func:`machine_memory_bytes`); ``slurm``: :data:`MAX_CLUSTER_JOBS` jobs.

    Returns
    -------
    int

    Examples
    --------
    >>> max_workers("slurm")
    1024
    """
    if cluster == "slurm":
        return MAX_CLUSTER_JOBS
    cores = os.cpu_count() or 1
    return max(1, min(WORKERS_PER_CORE * cores, machine_memory_bytes() // MIN_MEMORY_LIMIT_BYTES))


def check_workers(workers: int | None, cluster: str = "local") -> None:
    """Refuse a worker count the engine cannot start.

    Parameters
    ----------
    workers : int, optional
        Worker processes (``local``) or jobs (``slurm``); None: the default (the cores).
    cluster : {"local", "slurm"}

    Raises
    ------
    TopoError
        (``.param`` ``workers``) ``workers`` is not a whole number from 1 to
        :func:`max_workers`.
    """
    if workers is None:
        return
    top, cores = max_workers(cluster), os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= top:
        where = (
            f"{MAX_CLUSTER_JOBS} Slurm jobs"
            if cluster == "slurm"
            else f"{top} on this machine ({WORKERS_PER_CORE} per core of its {cores}, "
            f"one per {MIN_MEMORY_LIMIT_BYTES // 2**20} MiB of its "
            f"{machine_memory_bytes() / 2**30:.1f} GiB)"
        )
        raise TopoError(
            f"workers must be a whole number from 1 to {where}, got {workers!r}",
            param="workers",
        )


def parse_memory_limit(memory_limit: str, cluster: str = "local") -> int:
    """A worker's memory limit in bytes, from Dask's syntax (``"4GiB"``, ``"500MB"``,
    ``"2e9"``; :func:`dask.utils.parse_bytes`).

    Parameters
    ----------
    memory_limit : str
        The limit per worker.
    cluster : {"local", "slurm"}
        ``local``: the workers run on this machine, whose memory bounds the limit; ``slurm``:
        on the cluster's nodes (the limit is each job's ``--mem``), bounded by 1 PiB.

    Returns
    -------
    int
        Bytes, from :data:`MIN_MEMORY_LIMIT_BYTES` to :func:`machine_memory_bytes`
        (``local``).

    Raises
    ------
    TopoError
        (``.param`` ``memory_limit``) not a size, negative or zero (Dask would read 0 as no
        limit at all), below :data:`MIN_MEMORY_LIMIT_BYTES`, or above this machine's memory
        (``local``).

    Examples
    --------
    >>> parse_memory_limit("2GiB")
    2147483648
    """
    from dask.utils import parse_bytes

    text = str(memory_limit).strip()
    try:
        value = parse_bytes(text) if text else None
    except (ValueError, TypeError, IndexError, KeyError, OverflowError):
        value = None
    if value is None:
        raise TopoError(
            f"memory_limit must be a size such as 4GiB, 500MB or 2e9 (bytes), got {memory_limit!r}",
            param="memory_limit",
        )
    low = MIN_MEMORY_LIMIT_BYTES
    if cluster == "slurm":
        top, what = 2**50, "1 PiB"
    else:
        top = machine_memory_bytes()
        what = f"this machine's memory ({top / 2**30:.1f} GiB)"
    if not low <= value <= top:
        raise TopoError(
            f"memory_limit must be from {low // 2**20} MiB to {what}, got {memory_limit!r} "
            f"({value:,} bytes)",
            param="memory_limit",
        )
    return int(value)


def _error_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class SerialEngine:
    """The engine's interface, run in this process one task after another (no Dask).

    ``workers`` is 1; :meth:`scatter` returns its argument; :meth:`map` yields each task's
    outcome in order. An exception raised by a task becomes its ``error`` (as on
    :class:`Engine`), and the other tasks go on.
    """

    workers: int = 1
    address: str = "in-process"

    def scatter(self, obj: Any) -> Any:
        """``obj`` itself (nothing to ship)."""
        return obj

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *shared: Any,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[TaskOutcome]:
        """``fn(*shared, task)`` for each task, in order (see :meth:`Engine.map`)."""
        for i, task in enumerate(tasks):
            try:
                outcome = TaskOutcome(i, fn(*shared, task))
            except Exception as exc:  # reported, as on the Dask engine; the others go on
                outcome = TaskOutcome(i, error=_error_line(exc))
            if progress is not None:
                progress(i + 1)
            yield outcome

    def close(self) -> None:
        """Nothing to stop."""

    def __enter__(self) -> SerialEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Engine:
    """A Dask client and, unless it joined a running scheduler, the cluster it started.

    Parameters
    ----------
    workers : int, optional
        Worker processes (one thread each) of the embedded or Slurm cluster, at most
        :func:`max_workers`; default the cores of this machine (``os.cpu_count()``).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://HOST:PORT``); its workers are used as
        they are, and nothing is started or stopped but the client.
    cluster : {"local", "slurm"}
        ``local``: a :class:`distributed.LocalCluster` on 127.0.0.1 (its HTTP port free);
        ``slurm``: ``dask_jobqueue.SLURMCluster`` with ``slurm`` as its keyword arguments,
        scaled to ``workers`` jobs of one worker each.
    memory_limit : str
        Memory limit per embedded worker (Dask's syntax, e.g. ``"2GiB"``), from
        :data:`MIN_MEMORY_LIMIT_BYTES` to this machine's memory (:func:`parse_memory_limit`);
        the default, :data:`DEFAULT_MEMORY_LIMIT`, is the machine's memory where that is
        less.
    slurm : dict, optional
        Keyword arguments of ``SLURMCluster`` (``queue``, ``account``, ``walltime``,
        ``cores``, ``memory``, ...); see :func:`slurm_arguments`.
    timeout_s : float
        How long to try reaching ``scheduler``, s.

    Raises
    ------
    TopoError
        A worker count out of range (:func:`check_workers`), a memory limit out of range
        (:func:`parse_memory_limit`), an unknown cluster kind, a scheduler that does not
        answer, or ``dask-jobqueue`` missing for ``slurm``.
    """

    workers: int | None = None
    scheduler: str | None = None
    cluster: str = "local"
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    slurm: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        import dask
        from distributed import Client

        if self.cluster not in CLUSTERS:
            raise TopoError(
                f"cluster must be one of {', '.join(CLUSTERS)}, got {self.cluster!r}",
                param="cluster",
            )
        if self.scheduler is None:
            check_workers(self.workers, self.cluster)
            if self.memory_limit == DEFAULT_MEMORY_LIMIT and self.cluster == "local":
                # (the default, on a machine with less memory: the machine's)
                self.memory_limit = str(min(4 * 2**30, machine_memory_bytes()))
            parse_memory_limit(self.memory_limit, self.cluster)
        n = self.workers or os.cpu_count() or 1
        self._cluster: Any = None
        settings = {
            "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            # one task per worker thread at a time: a dying worker takes only its own task
            # down with it (queued tasks wait on the scheduler, not on the worker)
            "distributed.scheduler.worker-saturation": 1.0,
        }
        with dask.config.set(settings):
            try:
                if self.scheduler is not None:
                    self.client = _connect(self.scheduler, self.timeout_s)
                else:
                    with _sigint_held():
                        self._cluster = self._start(n)
                        self.client = Client(self._cluster)
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM while the workers start: no complaints
                _silence_dask()
                if self._cluster is not None:
                    self._cluster.close()
                raise
        self.workers = n if self.scheduler is None else len(self.client.scheduler_info()["workers"])
        self.address = str(self.client.scheduler.address)

    def _start(self, n: int) -> Any:
        if self.cluster == "slurm":
            try:
                from dask_jobqueue import SLURMCluster
            except ImportError:
                raise TopoError(
                    "cluster slurm needs dask-jobqueue: pip install 'topo[slurm]'",
                    param="cluster",
                ) from None
            cluster = SLURMCluster(**slurm_arguments(**self.slurm))
            cluster.scale(jobs=n)
            return cluster
        from distributed import LocalCluster

        return LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            # the scheduler's HTTP server binds a free port (Dask's default 8787 may be taken)
            dashboard_address="127.0.0.1:0",
            memory_limit=self.memory_limit,
            silence_logs=50,
        )

    def scatter(self, obj: Any) -> Any:
        """Ship ``obj`` to every worker once; pass the returned future to :meth:`map`.

        Parameters
        ----------
        obj : Any
            A picklable input shared by many tasks (a fabric graph, a model config).

        Returns
        -------
        distributed.Future
        """
        return self.client.scatter(obj, broadcast=True, hash=False)

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *shared: Any,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[TaskOutcome]:
        """Run ``fn(*shared, task)`` for every task on the workers; outcomes as they finish.

        Parameters
        ----------
        fn : callable
            A module-level (picklable) function.
        tasks : sequence
            One picklable argument per task.
        *shared
            Arguments before the task, the same for all (futures from :meth:`scatter`).
        progress : callable, optional
            Called with the number of tasks finished after each one.

        Yields
        ------
        TaskOutcome
            In completion order; ``index`` says which task. A task whose workers died twice,
            or that raised, has ``error`` set; the others still run.
        """
        from distributed import as_completed

        futures = {
            self.client.submit(fn, *shared, task, pure=False, retries=0): i
            for i, task in enumerate(tasks)
        }
        for done, future in enumerate(as_completed(list(futures)), 1):
            index = futures.pop(future)
            try:
                # a result held by a worker that died since is recomputed: result() waits
                outcome = TaskOutcome(index, future.result())
            except Exception as exc:  # the task's own error, or KilledWorker
                outcome = TaskOutcome(index, error=_error_line(exc))
            future.release()
            if progress is not None:
                progress(done)
            yield outcome

    def close(self, interrupted: bool = False) -> None:
        """Stop the client, and the cluster if this engine started it.

        Parameters
        ----------
        interrupted : bool
            The run was interrupted (Ctrl-C, SIGTERM): the embedded workers are killed
            (their tasks abandoned), and Dask's own complaints about them (its scheduler
            logs every message it can no longer send to the closed client, with a
            traceback) are silenced.
        """
        if interrupted:
            _silence_dask()
            if self.cluster == "local" and self._cluster is not None:
                self._kill_local_workers()
                self._close_at_once()
                return
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def _close_at_once(self) -> None:
        """Close the client, then the local cluster, each given :data:`INTERRUPTED_CLOSE_S`
        after an interrupt (a Slurm cluster is closed in full instead: its jobs are
        cancelled). A request the interrupt cut short may wait on the killed workers without
        end (a scatter's broadcast, which the scheduler's close waits for): the cluster is
        then left unclosed and taken off Dask's exit handler, which would wait for it again.
        Its worker processes are gone already; its scheduler and nannies are threads of this
        process, which is ending."""
        with contextlib.suppress(Exception):
            self.client.close(timeout=INTERRUPTED_CLOSE_S)
        if self._cluster is None:
            return
        try:
            self._cluster.close(timeout=INTERRUPTED_CLOSE_S)
        except Exception:  # (TimeoutError) left to the end of the process
            self._cluster.shutdown_on_close = False
        self._cluster = None

    def _kill_local_workers(self) -> None:
        """SIGKILL the embedded cluster's worker processes, their nannies told not to restart
        them: their tasks are abandoned, and a worker inside a long solve would answer its
        nanny's request to close only when the solve returns (a run of 64 workers on 2 cores
        took 78 s to stop)."""
        workers = getattr(self._cluster, "workers", None) if self.cluster == "local" else None
        for nanny in list((workers or {}).values()):
            with contextlib.suppress(Exception):  # (no restart when the process dies)
                nanny.close_gracefully(reason="topo-interrupted")
            pid = getattr(nanny, "pid", None)
            if isinstance(pid, int) and pid > 0:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(interrupted=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold SIGINT back while Dask starts its threads and worker processes.

    Ctrl-C in a terminal sends SIGINT to the whole foreground process group: to topo and to
    each worker process, where it became a ``KeyboardInterrupt`` traceback per worker. A
    blocked signal stays blocked in the threads a thread starts and across ``exec``, so the
    threads Dask starts here, and the worker processes they spawn (now or when a nanny
    restarts one), never receive it; topo's main thread, unblocked again on leaving, gets the
    signal (one held meanwhile arrives then) and stops the workers
    (:meth:`Engine.close`). SIGTERM is not held.
    """
    if not hasattr(signal, "pthread_sigmask"):  # (not on Windows)
        yield
        return
    from multiprocessing import resource_tracker

    # multiprocessing unblocks SIGINT in the thread that first starts its resource tracker
    # (the first worker's): started here, before the block, it leaves the mask alone
    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _silence_dask() -> None:
    """Turn off the loggers of Dask's scheduler, nanny and workers in this process."""
    import logging

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _connect(address: str, timeout_s: float) -> Any:
    from distributed import Client

    if not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise TopoError(
            f"scheduler must be an address like tcp://HOST:PORT, got {address!r}",
            param="scheduler",
        )
    try:
        return Client(address, timeout=f"{timeout_s}s")
    except OSError as exc:
        raise TopoError(
            f"scheduler {address} does not answer: {_error_line(exc)}", param="scheduler"
        ) from None


def slurm_arguments(
    *,
    queue: str | None = None,
    account: str | None = None,
    walltime: str = "01:00:00",
    cores: int = 1,
    memory: str = DEFAULT_MEMORY_LIMIT,
    **extra: Any,
) -> dict[str, Any]:
    """Keyword arguments of ``dask_jobqueue.SLURMCluster``: one worker process per job.

    Parameters
    ----------
    queue, account : str, optional
        Slurm partition (``--partition``) and account (``--account``).
    walltime : str
        Job time limit (``HH:MM:SS``).
    cores : int
        Cores per job (threads of its one worker).
    memory : str
        Memory per job (e.g. ``"4GiB"``).
    **extra
        More ``SLURMCluster`` arguments, passed as they are.

    Returns
    -------
    dict
        ``queue``, ``account``, ``walltime``, ``cores``, ``memory``, ``processes=1`` and
        ``extra`` (None values left out).
    """
    args = dict(
        queue=queue, account=account, walltime=walltime, cores=cores, memory=memory, processes=1
    )
    args.update(extra)
    return {k: v for k, v in args.items() if v is not None}


def make_engine(
    workers: int | None = None,
    scheduler: str | None = None,
    cluster: str | None = None,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    slurm: dict[str, Any] | None = None,
    timeout_s: float = 10.0,
) -> Engine:
    """The engine a command's ``--workers`` / ``--scheduler`` / ``--cluster`` ask for.

    Parameters
    ----------
    workers : int, optional
        Worker processes (default the cores).
    scheduler : str, optional
        A running scheduler's address; excludes ``cluster``.
    cluster : {"local", "slurm"}, optional
        Default ``local``.
    memory_limit : str
        Per embedded worker.
    slurm : dict, optional
        :func:`slurm_arguments` keywords for ``cluster="slurm"``.
    timeout_s : float
        How long to try reaching ``scheduler``, s.

    Returns
    -------
    Engine

    Raises
    ------
    TopoError
        Both ``scheduler`` and ``cluster`` given, or as :class:`Engine`.
    """
    if scheduler is not None and cluster is not None:
        raise TopoError("give scheduler or cluster, not both", names=("scheduler", "cluster"))
    return Engine(
        workers=workers,
        scheduler=scheduler,
        cluster=cluster or "local",
        memory_limit=memory_limit,
        slurm=slurm or {},
        timeout_s=timeout_s,
    )
