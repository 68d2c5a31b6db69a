"""``topo codesign``: the cheapest design (fabric, expert-parallel size, node limit) whose MoE
decode meets a time-per-output-token target, searched on the engine.

The DeepSeek-V3 report's theme is choosing the fabric, the EP layout and the node limit
together. The search enumerates candidate fabrics for ``gpus`` GPUs (families x radix x link
rate x oversubscription), builds each on the client and prices it (:func:`topo.cost.
bill_of_materials`); each (fabric, EP size, node limit) is then one task:
:func:`topo.moe.moe_report`'s TPOT, timed in this process or, past ``in_process_s``, on the
engine (the fabrics scattered to its workers once). Points share layouts, routings and LP
fabrics through :data:`POINT_CACHE`. The design is the cheapest fabric with
any (EP, M) meeting the target, with its fastest such (EP, M); the runners-up are the other
fabrics' best designs, by cost.

``Design.build_args`` and ``Design.moe_args`` are the ``topo build`` and ``topo moe``
arguments that rebuild the fabric and recompute its TPOT; ``topo cost`` of that fabric gives
``cost_usd``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import networkx as nx

from topo.builders import build, fabric_counts
from topo.cost import CostReport, PriceBook, bill_of_materials
from topo.engine.cluster import Engine, SerialEngine
from topo.errors import InfeasibleError, SpecError, TopoError
from topo.fabric import summarize
from topo.moe import MoEConfig, ep_layout, moe_report
from topo.moe.cache import MoECache
from topo.moe.kernels import KernelLimitError, kernel_report
from topo.spec import FabricSpec

CODESIGN_FAMILIES = ("ft2", "mrft", "mpft", "ft3")
"""Families searched by default: the fat trees of the report's Table 3 that take a GPU count
(Dragonfly and Slim Fly are sized by their own parameters, not by ``--gpus``)."""

HEADLINE_SCHEMES = ("deepep",)
"""The delivery scheme a design is timed with: the headline of :func:`topo.moe.moe_report`
(``topo moe``'s ``tpot_ms``), DeepEP-style."""

NODE_LIMITS = (0, 1, 2, 4)
"""Node limits M searched by default (0 = unlimited; DeepSeek-V3 uses 4)."""

IN_PROCESS_S = 10.0
"""CPU seconds of points that ``topo codesign`` times in its own process before it may start
Dask workers, and the least work it hands them (:func:`run_codesign` ``in_process_s``; not
with ``--scheduler`` or ``--cluster``). Starting local workers costs seconds of a small
machine's cores, and each worker imports topo and lays out, gates and cuts again what this
process has cached (:data:`POINT_CACHE`); measurements in ``benchmarks/README.md``."""

POINT_CACHE = MoECache()
"""What the points timed in this process share (:mod:`topo.moe.cache`): each (fabric, EP)
lays its ranks out once, each (EP, M) gates its tokens once for every fabric, and each
(fabric, servers) cuts and merges its LP fabrics once. One per process: a Dask worker keeps
its own across the tasks it runs."""


@dataclass(frozen=True)
class Design:
    """One design: a fabric, an EP size and a node limit, with its cost and decode speed.

    Attributes
    ----------
    family : str
    build_args : list of str
        ``topo build`` arguments that rebuild the fabric (family first).
    moe_args : list of str
        ``topo moe FABRIC.json`` arguments that recompute ``tpot_ms`` (with ``--model`` when
        the search had one).
    ep, node_limit : int
        EP size (GPUs) and M (0 = unlimited).
    cost_usd, cost_per_endpoint_usd : float
        From the price book (US$).
    tpot_ms, tokens_per_s : float
        Time per output token of the MoE layers' dispatch and combine, ms; its inverse, 1/s.
    switches, links : int
        The fabric's counts.
    kernel : str or None
        The EP kernel whose model timed it (:data:`topo.moe.kernels.KERNELS`), None for
        ``topo moe``'s own TPOT.
    """

    family: str
    build_args: list[str]
    moe_args: list[str]
    ep: int
    node_limit: int
    cost_usd: float
    cost_per_endpoint_usd: float
    tpot_ms: float
    tokens_per_s: float
    switches: int
    links: int
    kernel: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class CodesignResult:
    """The search's answer.

    Attributes
    ----------
    design : Design
        The cheapest design meeting the target (ties: the lower TPOT).
    runners_up : list of Design
        The best design of each other fabric that meets the target, by cost.
    gpus : int
    tpot_target_ms : float
    model : str
    fabrics : int
        Candidate fabrics built (others were refused by their family, e.g. too many GPUs).
    evaluated : int
        Designs timed: (fabric, EP, M) points, times the kernels that took each.
    feasible : int
        Of them, those meeting the target.
    refused : list of str
        Why each refused fabric was (one line each).
    not_timed : list of str
        Why a kernel searched left points untimed (its limits, e.g. NCCL EP above 64 GPUs):
        one line per kernel and reason, with the EP sizes it refused.
    by_kernel : list of Design
        With several kernels searched: each kernel's cheapest design meeting the target (ties:
        the lower TPOT), cheapest first; a kernel with none is left out (``not_met``).
    not_met : list of str
        The kernels searched none of whose designs meets the target, each with its fastest
        TPOT.
    """

    design: Design
    runners_up: list[Design]
    gpus: int
    tpot_target_ms: float
    model: str
    fabrics: int
    evaluated: int
    feasible: int
    refused: list[str] = field(default_factory=list)
    not_timed: list[str] = field(default_factory=list)
    by_kernel: list[Design] = field(default_factory=list)
    not_met: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``design``, ``runners_up`` and ``by_kernel`` as dicts, and the search's counts."""
        designs = ("design", "runners_up", "by_kernel")
        d = {k: v for k, v in self.__dict__.items() if k not in designs}
        return {
            "design": self.design.to_dict(),
            "runners_up": [r.to_dict() for r in self.runners_up],
            "by_kernel": [r.to_dict() for r in self.by_kernel],
            **d,
        }


@dataclass(frozen=True)
class _Task:
    fabric: int
    ep: int
    node_limit: int


def build_args(family: str, options: dict[str, Any]) -> list[str]:
    """``topo build`` arguments of ``build(family, **options)``.

    Parameters
    ----------
    family : str
    options : dict
        Build keywords (``switch_ports``, ``gpus``, ...); None values left out.

    Returns
    -------
    list of str
        E.g. ``["mpft", "--switch-ports", "64", "--gpus", "2048"]``.
    """
    args = [family]
    for k, v in options.items():
        if v is not None:
            args += ["--" + k.replace("_", "-"), f"{v:g}" if isinstance(v, float) else str(v)]
    return args


def ep_sizes(config: MoEConfig, gpus: int, gpus_per_node: int) -> list[int]:
    """EP sizes searched by default: whole servers that divide the routed experts.

    Parameters
    ----------
    config : MoEConfig
    gpus, gpus_per_node : int

    Returns
    -------
    list of int
        Each ``ep <= gpus``, a multiple of ``gpus_per_node`` dividing ``n_routed_experts``.
    """
    e = config.n_routed_experts
    return [n for n in range(gpus_per_node, gpus + 1, gpus_per_node) if e % n == 0]


class KernelTime(NamedTuple):
    """One kernel's TPOT of a point (:func:`time_design`), ms and 1/s: ``refused`` is the
    kernel's limit that leaves the point untimed (:class:`topo.moe.kernels.KernelLimitError`;
    else why the kernel could not time it; then ``tpot_ms`` and ``tokens_per_s`` are NaN)."""

    kernel: str | None
    tpot_ms: float
    tokens_per_s: float
    refused: str = ""


SM_KERNELS = ("deepep-normal", "deepep-v2")
"""The kernels whose models take an SM count (``kernel_sms``); the others ignore it when several
kernels are searched (one kernel given alone refuses it: :func:`topo.moe.kernels.
check_kernel_sms`)."""


def _kernel_sms(kernel: str, kernels: list[str | None], sms: int | None) -> int | None:
    """The SM count ``kernel`` is timed on: ``kernel_sms`` for :data:`SM_KERNELS`, or for a
    kernel searched alone (which refuses it if it takes none); None otherwise."""
    return sms if kernel in SM_KERNELS or len(kernels) == 1 else None


def searched_kernels(kernel: str | Sequence[str] | None) -> list[str | None]:
    """``moe["kernel"]`` as the list of kernels searched: ``[None]`` (``topo moe``'s own TPOT),
    one kernel, or several (:data:`topo.moe.kernels.KERNELS`, each once, in the order given)."""
    if kernel is None:
        return [None]
    if isinstance(kernel, str):
        return [kernel]
    return list(dict.fromkeys(kernel))


def time_design(
    fabrics: list[nx.Graph], config: MoEConfig, moe: dict[str, Any], task: _Task
) -> list[KernelTime]:
    """The TPOT of one (fabric, EP, M) on a worker under each kernel searched, as ``topo moe
    --json`` prints them (the fabrics scattered once), one :class:`KernelTime` per kernel: the
    report's TPOT for kernel None, or the EP kernel's (:func:`topo.moe.kernels.kernel_report`,
    on ``moe["kernel_sms"]`` SMs for :data:`SM_KERNELS`) as ``topo moe --kernel`` prints it
    under ``kernel``; ``refused`` set for a kernel whose limits refuse the point. The report
    is computed once for every kernel; what points share is kept in :data:`POINT_CACHE` (the
    same numbers as without).

    Raises
    ------
    TopoError
        The point cannot be timed (the report's own errors)."""
    G = fabrics[task.fabric]
    options = {k: v for k, v in moe.items() if k not in ("kernel", "kernel_sms")}
    # the headline only: DeepEP-style delivery at the task's limit (the naive scheme and the
    # unlimited comparison are other scenarios of the report, not read here); twin switches
    # merged, the same times from smaller LPs (topo.moe.merge_twin_switches)
    report = moe_report(
        G,
        config,
        ep=task.ep,
        node_limit=task.node_limit,
        schemes=HEADLINE_SCHEMES,
        compare_unlimited=False,
        smallest_lp=True,
        cache=POINT_CACHE,
        **options,
    )
    out: list[KernelTime] = []
    kernels = searched_kernels(moe.get("kernel"))
    for kernel in kernels:
        if kernel is None:
            r = report.to_dict()
            out.append(KernelTime(None, float(r["tpot_ms"]), float(r["tokens_per_s"])))
            continue
        sms = _kernel_sms(kernel, kernels, moe.get("kernel_sms"))
        try:
            kr = kernel_report(report, kernel, sms)
        except TopoError as exc:
            # a limit is said once for every EP size it refuses (its words without the size)
            why = exc.limit if isinstance(exc, KernelLimitError) else str(exc)
            out.append(KernelTime(kernel, math.nan, math.nan, why))
            continue
        assert kr.tpot_ms is not None and kr.tokens_per_s is not None
        out.append(KernelTime(kernel, float(kr.tpot_ms), float(kr.tokens_per_s)))
    return out


def candidate_fabrics(
    gpus: int, families: Sequence[str], grid: Mapping[str, Sequence[Any]]
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """The fabrics searched: every family with every combination of ``grid``'s build options.

    Parameters
    ----------
    gpus : int
    families : sequence of str
    grid : dict of str to sequence
        Build keywords (``switch_ports``, ``link_gbps``, ``oversubscription``,
        ``gpus_per_node``, ``nics_per_node``) and their values.

    Returns
    -------
    (list of (family, options), list of str)
        The fabrics the families accept (options include ``gpus``), and one line per refused
        combination (a family's option it refuses, or more GPUs than it holds: counted in
        closed form, :func:`topo.builders.fabric_counts`). Oversubscription other than 1 is
        tried only where a family takes it.
    """
    ok, refused = [], []
    keys = list(grid)
    for family in families:
        for values in itertools.product(*grid.values()):
            options = dict(zip(keys, values, strict=True), gpus=gpus)
            try:
                fabric_counts(FabricSpec.from_options(family, **options))  # holds the GPUs?
            except SpecError as exc:
                refused.append(f"{' '.join(build_args(family, options))}: {exc}")
                continue
            ok.append((family, options))
    return ok, refused


@dataclass(frozen=True)
class CodesignPlan:
    """A search laid out and checked, before anything is timed (:func:`plan_codesign`).

    Attributes
    ----------
    gpus : int
    tpot_ms : float
        The target, ms.
    fabrics : list of (str, dict)
        The candidate fabrics the families accept: family and build options.
    refused : list of str
        Why each refused combination was (one line each).
    graphs : list of networkx.Graph
        The candidates, built.
    tasks : list
        The (fabric, EP size, node limit) points to time.
    """

    gpus: int
    tpot_ms: float
    fabrics: list[tuple[str, dict[str, Any]]]
    refused: list[str]
    graphs: list[nx.Graph]
    tasks: list[_Task]


def plan_codesign(
    config: MoEConfig,
    gpus: int,
    tpot_ms: float,
    *,
    families: Sequence[str] = CODESIGN_FAMILIES,
    grid: Mapping[str, Sequence[Any]] | None = None,
    eps: Sequence[int] | None = None,
    node_limits: Sequence[int] = NODE_LIMITS,
) -> CodesignPlan:
    """Every check of :func:`codesign` that needs no timing, and the fabrics built: a command
    calls it before it starts a Dask cluster.

    Parameters
    ----------
    config, gpus, tpot_ms, families, grid, eps, node_limits
        As :func:`codesign`.

    Returns
    -------
    CodesignPlan

    Raises
    ------
    TopoError
        A target not above 0; a negative node limit; no fabric the families accept (the
        first refusal named); an EP size the fabrics cannot lay out
        (:func:`topo.moe.ep_layout`: not whole servers, not dividing the routed experts,
        above the GPUs); no EP size to try.
    """
    if not tpot_ms > 0:
        raise TopoError(f"tpot_ms must be > 0, got {tpot_ms}", param="tpot_ms")
    bad = [m for m in node_limits if m < 0]
    if bad:
        raise TopoError(
            f"node_limit must be 0 (unlimited) or more, got {bad[0]}", param="node_limit"
        )
    grid = dict(
        grid or {"switch_ports": [64], "link_gbps": [400.0], "oversubscription": [1.0, 3.0]}
    )
    fabrics, refused = candidate_fabrics(gpus, families, grid)
    if not fabrics:
        first = {line.split(" ", 1)[0]: line for line in reversed(refused)}  # each family's first
        raise TopoError(
            f"no family of {', '.join(families)} builds {gpus:,} GPUs: "
            + "; ".join(first[f] for f in families if f in first)
        )
    graphs = [build(FabricSpec.from_options(f, **o)) for f, o in fabrics]
    g = int(dict(fabrics[0][1]).get("gpus_per_node") or 8)
    sizes = list(eps) if eps else ep_sizes(config, gpus, g)
    for ep in sizes:  # every candidate has the same GPUs and servers
        ep_layout(graphs[0], config.n_routed_experts, ep)
    if not sizes:
        raise TopoError(
            f"no EP size to try: no multiple of {g} GPUs up to {gpus} divides the "
            f"{config.n_routed_experts} routed experts: give ep sizes",
            param="ep",
        )
    tasks = _tasks(graphs, sizes, node_limits, g)
    if not tasks:
        raise TopoError(
            f"no point to time: every node_limit is at least the servers of the EP group "
            f"(EP {max(sizes)} spans {-(-max(sizes) // g)}), where a limit cannot bind and is "
            "skipped: add 0 (unlimited)",
            param="node_limit",
        )
    return CodesignPlan(gpus, tpot_ms, fabrics, refused, graphs, tasks)


def codesign(
    config: MoEConfig,
    gpus: int,
    tpot_ms: float,
    engine: Engine | SerialEngine,
    *,
    families: Sequence[str] = CODESIGN_FAMILIES,
    grid: Mapping[str, Sequence[Any]] | None = None,
    eps: Sequence[int] | None = None,
    node_limits: Sequence[int] = NODE_LIMITS,
    moe: dict[str, Any] | None = None,
    prices: PriceBook | None = None,
    runners_up: int = 4,
    model_arg: str | None = None,
    progress: Callable[[int], None] | None = None,
    in_process_s: float | None = None,
) -> CodesignResult:
    """The cheapest design for ``gpus`` GPUs whose decode TPOT is at most ``tpot_ms``.

    Parameters
    ----------
    config : MoEConfig
        The model (:func:`topo.moe.load_config`).
    gpus : int
        GPUs of the cluster (whole servers).
    tpot_ms : float
        The decode target: time per output token, ms (> 0).
    engine : Engine, SerialEngine or callable
        Where the (fabric, EP, M) points are timed, or a callable that starts that engine
        (called only if points are left for it, see ``in_process_s``).
    families : sequence of str
        Fabric families to search.
    grid : dict, optional
        Build options and their values (default: 64-port 400G switches, oversubscription 1
        and 3, 8 GPUs and 8 NICs per server).
    eps : sequence of int, optional
        EP sizes (default :func:`ep_sizes`).
    node_limits : sequence of int
        Node limits M (0 = unlimited); an M of at least the EP group's servers is the same as
        unlimited and is skipped.
    moe : dict, optional
        ``tokens_per_gpu``, ``micro_batches``, ``seed`` of :func:`topo.moe.moe_report`
        (default ``topo moe``'s: 32, 2, 0); ``kernel`` (one of
        :data:`topo.moe.kernels.KERNELS`, or a list of them: each a design of its own) and
        ``kernel_sms``: the TPOT of that EP kernel (:func:`topo.moe.kernels.kernel_report`)
        instead of the report's (default None).
    prices : PriceBook, optional
        Default: topo's price book.
    runners_up : int
        How many other fabrics' best designs to return.
    model_arg : str, optional
        The ``--model`` path to put in :attr:`Design.moe_args`.
    progress : callable, optional
        Called with the number of points timed so far.
    in_process_s : float, optional
        Time points in this process, in plan order, until they have taken this many CPU
        seconds and the points left would take as long again (their number times the mean
        CPU time of a point so far); only those go to ``engine`` (``topo codesign`` passes
        :data:`IN_PROCESS_S`). None: every point goes to ``engine``. Where a point runs
        changes none of the numbers.

    Returns
    -------
    CodesignResult

    Raises
    ------
    TopoError
        What :func:`plan_codesign` refuses.
    InfeasibleError
        No design meets the target (the message names the fastest).
    """
    plan = plan_codesign(
        config, gpus, tpot_ms, families=families, grid=grid, eps=eps, node_limits=node_limits
    )
    return run_codesign(
        plan,
        config,
        engine,
        moe=moe,
        prices=prices,
        runners_up=runners_up,
        model_arg=model_arg,
        progress=progress,
        in_process_s=in_process_s,
    )


def run_codesign(
    plan: CodesignPlan,
    config: MoEConfig,
    engine: Engine | SerialEngine | Callable[[], Engine | SerialEngine],
    *,
    moe: dict[str, Any] | None = None,
    prices: PriceBook | None = None,
    runners_up: int = 4,
    model_arg: str | None = None,
    progress: Callable[[int], None] | None = None,
    in_process_s: float | None = None,
) -> CodesignResult:
    """Time the points of a checked search on ``engine`` and choose (:func:`codesign`).

    Parameters
    ----------
    plan : CodesignPlan
        From :func:`plan_codesign` with the same ``config``.
    config, engine, moe, prices, runners_up, model_arg, progress, in_process_s
        As :func:`codesign`.

    Returns
    -------
    CodesignResult

    Raises
    ------
    TopoError
        A fabric the price book cannot price (before any point is timed:
        :func:`topo.cost.bill_of_materials`); no point could be timed (the first error named).
    InfeasibleError
        No design meets the target.
    """
    moe = {
        "tokens_per_gpu": 32,
        "micro_batches": 2,
        "seed": 0,
        "kernel": None,
        "kernel_sms": None,
        **(moe or {}),
    }
    tasks, graphs = plan.tasks, plan.graphs
    # priced first: a fabric the price book cannot price is refused before any point is timed
    costs = [bill_of_materials(G, prices) for G in graphs]
    timed: dict[_Task, list[KernelTime]] = {}
    errors = []
    here = 0
    if in_process_s is not None:
        t0 = time.process_time()
        for o in SerialEngine().map(time_design, tasks, graphs, config, moe, progress=progress):
            here += 1
            if o.ok:
                timed[tasks[o.index]] = o.value
            else:
                errors.append(o.error)
            spent = time.process_time() - t0
            if spent >= in_process_s and spent / here * (len(tasks) - here) >= in_process_s:
                break
    rest = tasks[here:]
    if rest:
        on = engine() if callable(engine) else engine
        shared = [on.scatter(G) for G in graphs]

        def advance(done: int) -> None:
            if progress is not None:
                progress(here + done)

        for o in on.map(time_design, rest, shared, config, moe, progress=advance):
            if o.ok:
                timed[rest[o.index]] = o.value
            else:
                errors.append(o.error)
    designs = _designs(plan.fabrics, graphs, timed, costs, moe, model_arg)
    not_timed = _not_timed(timed)
    if not designs:
        first = errors[0] if errors else _first_refusal(timed) or "no EP size"
        raise TopoError(f"no design could be timed: {first}")
    return _choose(
        designs,
        plan.gpus,
        plan.tpot_ms,
        config,
        len(graphs),
        len(designs),
        plan.refused,
        runners_up,
        not_timed,
    )


def _first_refusal(timed: dict[_Task, list[KernelTime]]) -> str | None:
    """The first kernel refusal's reason, or None."""
    return next((o.refused for outs in timed.values() for o in outs if o.refused), None)


def _not_timed(timed: dict[_Task, list[KernelTime]]) -> list[str]:
    """One line per (kernel, reason) that left points untimed, with the EP sizes."""
    eps: dict[tuple[str | None, str], set[int]] = {}
    for task, outs in timed.items():
        for o in outs:
            if o.refused:
                eps.setdefault((o.kernel, o.refused), set()).add(task.ep)
    return [
        f"{kernel} at EP {', '.join(map(str, sorted(e)))}: {reason}"
        for (kernel, reason), e in eps.items()
    ]


def _tasks(
    graphs: list[nx.Graph], eps: list[int], node_limits: Sequence[int], g: int
) -> list[_Task]:
    tasks = []
    for i, ep in itertools.product(range(len(graphs)), eps):
        nodes = -(-ep // g)
        for m in dict.fromkeys(node_limits):
            if m == 0 or m < nodes:
                tasks.append(_Task(i, ep, m))
    return tasks


def _designs(
    fabrics: list[tuple[str, dict[str, Any]]],
    graphs: list[nx.Graph],
    timed: dict[_Task, list[KernelTime]],
    costs: list[CostReport],
    moe: dict[str, Any],
    model_arg: str | None,
) -> list[Design]:
    counts = [summarize(G) for G in graphs]
    extra = (["--model", model_arg] if model_arg else []) + [
        "--tokens-per-gpu",
        str(moe["tokens_per_gpu"]),
        "--micro-batches",
        str(moe["micro_batches"]),
        "--seed",
        str(moe["seed"]),
    ]
    kernels = searched_kernels(moe.get("kernel"))
    sms = moe.get("kernel_sms")
    kernel_args: dict[str | None, list[str]] = {None: []}
    for k in kernels:
        if k is not None:
            on = _kernel_sms(k, kernels, sms)
            kernel_args[k] = ["--kernel", k] + ([] if on is None else ["--kernel-sms", str(on)])

    return [
        Design(
            family=fabrics[t.fabric][0],
            build_args=build_args(*fabrics[t.fabric]),
            moe_args=[
                "--ep",
                str(t.ep),
                "--node-limit",
                str(t.node_limit),
                *extra,
                *kernel_args[o.kernel],
            ],
            ep=t.ep,
            node_limit=t.node_limit,
            cost_usd=costs[t.fabric].cost_usd,
            cost_per_endpoint_usd=costs[t.fabric].cost_per_endpoint_usd,
            tpot_ms=o.tpot_ms,
            tokens_per_s=o.tokens_per_s,
            switches=counts[t.fabric].switches,
            links=counts[t.fabric].links,
            kernel=o.kernel,
        )
        for t, outs in timed.items()
        for o in outs
        if not o.refused
    ]


def _choose(
    designs: list[Design],
    gpus: int,
    tpot_ms: float,
    config: MoEConfig,
    fabrics: int,
    evaluated: int,
    refused: list[str],
    runners_up: int,
    not_timed: list[str],
) -> CodesignResult:
    ok = sorted(
        (d for d in designs if d.tpot_ms <= tpot_ms),
        key=lambda d: (d.cost_usd, d.tpot_ms, d.build_args, d.ep, d.node_limit, d.kernel or ""),
    )
    if not ok:
        best = min(designs, key=lambda d: d.tpot_ms)
        kernel = f", kernel {best.kernel}" if best.kernel else ""
        raise InfeasibleError(
            f"no design meets tpot_ms {tpot_ms:g}: the fastest is {best.tpot_ms:.3f} ms "
            f"({' '.join(best.build_args)}, EP {best.ep}, node limit {best.node_limit}{kernel})"
        )
    per_fabric: dict[tuple[str, ...], Design] = {}
    for d in ok:
        per_fabric.setdefault(tuple(d.build_args), d)
    best, *others = per_fabric.values()
    kernels = list(dict.fromkeys(d.kernel for d in designs))
    by_kernel: dict[str | None, Design] = {}
    not_met = []
    if len(kernels) > 1:
        for d in ok:
            by_kernel.setdefault(d.kernel, d)
        for k in kernels:
            if k not in by_kernel:
                fastest = min((d for d in designs if d.kernel == k), key=lambda d: d.tpot_ms)
                not_met.append(f"{k}: the fastest is {fastest.tpot_ms:.3f} ms")
    return CodesignResult(
        design=best,
        runners_up=others[:runners_up],
        gpus=gpus,
        tpot_target_ms=tpot_ms,
        model=config.name,
        fabrics=fabrics,
        evaluated=evaluated,
        feasible=len(ok),
        refused=refused,
        not_timed=not_timed,
        by_kernel=list(by_kernel.values()),
        not_met=not_met,
    )
