"""``topo resilience``: the all-to-all busbw over many random failure sets."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import TaskID
from rich.table import Table

from topo import fabric as fabric_mod
from topo.cli_common import (
    FailLinksOpt,
    FailSwitchesOpt,
    FlowsOpt,
    MaxVariablesOpt,
    PxnOpt,
    Routing,
    RoutingOpt,
    SeedOpt,
    TimeLimitOpt,
    about,
    check_pxn,
    check_routing_options,
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
    WorkersOpt,
    check_engine_options,
    check_local_engine,
    open_engine,
)
from topo.wording import count

if TYPE_CHECKING:  # the solver loads when the command runs
    from topo.flow.failures import ResilienceReport, TrialMap

P5_MIN_TRIALS = 20
"""As :data:`topo.flow.failures.resilience.P5_MIN_TRIALS` (not imported: the solver loads late)."""


@user_errors
def resilience(
    ctx: typer.Context,
    fabrics: Annotated[
        list[Path],
        typer.Argument(
            help="One or more fabric JSON files (e.g. an MPFT and an MRFT), each run with the "
            "same failure counts and seeds.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    trials: Annotated[
        int, typer.Option("--trials", help="Random failure sets per fabric.", min=1)
    ] = 20,
    fail_links: FailLinksOpt = 0,
    fail_switches: FailSwitchesOpt = 0,
    seed: SeedOpt = 0,
    routing: RoutingOpt = Routing.optimal,
    flows_per_pair: FlowsOpt = 1,
    pxn: PxnOpt = True,
    max_variables: MaxVariablesOpt = None,
    time_limit: TimeLimitOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a list of one JSON object per fabric.")
    ] = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    cluster: ClusterOpt = None,
    memory_limit: MemoryLimitOpt = "4GiB",
) -> None:
    """All-to-all busbw under random failures: min, p5, median over --trials failure sets.

    Trial i fails --fail-links random cables and --fail-switches random switches drawn with
    its own seed, derived from --seed (numpy SeedSequence children: runs of different seeds
    share no trial; --json lists them as trial_seeds), so every fabric given sees the same
    number of failures, reproducibly.
    With --workers, --scheduler or --cluster the trials run on Dask workers (the same numbers).
    """
    from topo.flow.failures import check_trials

    check_trials(trials)
    check_pxn(routing.value, pxn)
    check_engine_options(ctx, scheduler, cluster, serial=True)
    check_routing_options(ctx, routing.value, random_failures=True)
    options: dict[str, Any] = dict(
        trials=trials,
        links=fail_links,
        switches=fail_switches,
        seed=seed,
        routing=routing.value,
        flows_per_pair=flows_per_pair,
        pxn=pxn,
        max_variables=max_variables,
        time_limit_s=time_limit,
    )
    if workers is None and scheduler is None and cluster is None:
        reports = _run(fabrics, options)
    elif scheduler is not None or cluster is not None:
        with open_engine(workers, scheduler, cluster, memory_limit) as engine:
            from topo.engine import trial_map

            reports = _run(fabrics, options, trial_map(engine))
    else:  # --workers: local workers, started for a study large enough to gain from them
        check_local_engine(workers, memory_limit)
        with contextlib.ExitStack() as stack:
            engines: list[Any] = []

            def on_engine(G: Any, tasks: list[dict[str, Any]], progress: Any) -> Any:
                if not engines:
                    engines.append(
                        stack.enter_context(open_engine(workers, scheduler, cluster, memory_limit))
                    )
                from topo.engine import trial_map

                return trial_map(engines[0])(G, tasks, progress)

            from topo.flow.failures import SMALL_STUDY_S

            reports = _run(fabrics, options, on_engine, SMALL_STUDY_S)
        for r in reports:
            if r.in_process:
                err.print(f"engine: {r.fabric}: {r.in_process}")
    if as_json:
        print_json([r.to_dict() for r in reports])
        return
    _table(reports, routing, fail_links, fail_switches, trials, seed)


def _run(
    fabrics: list[Path],
    options: dict[str, Any],
    trial_map: TrialMap | None = None,
    in_process_below_s: float | None = None,
) -> list[ResilienceReport]:
    """One report per fabric, a progress bar per fabric on stderr."""
    from topo.flow.failures import TRIAL_MAX_VARIABLES, TRIAL_TIME_LIMIT_S
    from topo.flow.failures import resilience as run

    reports = []
    trials = options["trials"]
    with progress_bar() as bar:
        for path in fabrics:
            G = fabric_mod.load(path)
            task = bar.add_task(f"{path.name}", total=trials)

            def advance(done: int, task: TaskID = task) -> None:
                bar.update(task, completed=done)

            with about(path):
                report = run(
                    G,
                    **{
                        **options,
                        "max_variables": options["max_variables"] or TRIAL_MAX_VARIABLES,
                        "time_limit_s": options["time_limit_s"] or TRIAL_TIME_LIMIT_S,
                    },
                    progress=advance,
                    trial_map=trial_map,
                    in_process_below_s=in_process_below_s,
                )
            reports.append(report)
    return reports


def _cell(value: float | None, rng: list[float] | None) -> str:
    """A statistic's cell: its value, or its certified range when it is unknown."""
    if value is not None:
        return f"{value:.2f}"
    if rng is None:
        return "unknown"
    return f"{rng[0]:.2f}..{rng[1]:.2f}"


def _table(
    reports: list[ResilienceReport],
    routing: Routing,
    fail_links: int,
    fail_switches: int,
    trials: int,
    seed: int,
) -> None:
    """The reports as one table, and the notes that explain its columns."""
    table = Table(
        title=f"all-to-all busbw (GB/s, {routing.value}) with {count(fail_links, 'cable')} and "
        f"{count(fail_switches, 'switch', 'switches')} failed at random, {count(trials, 'trial')}"
        f" (seed {seed}; each "
        "trial's own seed in --json trial_seeds)",
        title_justify="left",
    )
    for col in ("fabric", "intact", "min", "p5", "median", "mean", "max", "exact", "cut off"):
        table.add_column(col, justify="left" if col == "fabric" else "right")
    for r in reports:
        cut = (
            "-"
            if not r.trials_with_disconnected
            else f"{count(r.trials_with_disconnected, 'trial')}, up to "
            f"{count(r.max_disconnected_gpus, 'GPU')}"
        )
        if r.trials_apart:
            apart = f"{count(r.trials_apart, 'trial')} apart"
            cut = apart if cut == "-" else f"{cut}; {apart}"
        if r.trials_unroutable:
            cut += f"; {count(r.trials_unroutable, 'trial')} unroutable"
        table.add_row(
            r.fabric or r.family,
            _cell(r.intact_busbw_GBps, r.range_GBps.get("intact")),
            *_stat_cells(r),
            f"{r.exact_trials}/{r.trials}",
            cut,
        )
    out.print(table)
    _notes(reports, routing)


def _stat_cells(r: ResilienceReport) -> list[str]:
    """min .. max cells: over the trials with a rate, "-" when no trial has one."""
    values = (r.min_GBps, r.p5_GBps, r.median_GBps, r.mean_GBps, r.max_GBps)
    if r.statistics_trials == 0:
        return ["-"] * len(values)
    keys = ("min", "p5", "median", "mean", "max")
    return [
        "-" if k not in r.range_GBps else _cell(v, r.range_GBps.get(k))
        for k, v in zip(keys, values, strict=True)
    ]


def _notes(reports: list[ResilienceReport], routing: Routing) -> None:
    """The notes under the table that explain its columns."""
    if any(r.trials_unroutable for r in reports):
        out.print(
            f"  unroutable: some GPU pair had no {routing.value} route (a GPU's own NIC dead, or "
            "leaves without a common live spine): the all-to-all cannot complete, so the trial "
            "has no rate and is left out of min .. max, which cover the other trials"
        )
    if any(r.statistics_trials == 0 for r in reports):
        out.print("  -: every trial unroutable, no statistic (null in --json)")
    if any(0 < r.statistics_trials < P5_MIN_TRIALS for r in reports):
        out.print(
            f"  p5 -: fewer than {P5_MIN_TRIALS} trials with a rate, so none lies at or below "
            "the 5th percentile (null in --json); min is the smallest trial"
        )
    if routing is not Routing.optimal:
        out.print(
            f"  exact: as routed ({routing.value}) each trial's rate is computed from its "
            "routes, a value and not a bound (an unroutable trial is known not to complete)"
        )
    elif any(r.exact_trials < r.trials for r in reports):
        out.print(
            "  exact: trials solved exactly; the others (LP over --max-variables or past "
            "--time-limit) have only certified bounds, so their values are unknown"
        )
    # (a statistic is unknown where it has a range and no value: p5 of under 20 trials has
    # neither, and its own note above)
    stats = ("min", "p5", "median", "mean", "max")
    if any(getattr(r, f"{s}_GBps") is None and s in r.range_GBps for r in reports for s in stats):
        out.print(
            "  low..high: that statistic is unknown; it lies in this range, the statistic of "
            "the trials' certified lower bounds and of their upper bounds (--json has each "
            "trial's bounds)"
        )
    if any(r.trials_with_disconnected for r in reports):
        out.print(
            "  cut off: trials in which some servers lost every path; their busbw is among the "
            "GPUs still connected (0 when fewer than two are)"
        )
    if any(r.trials_apart for r in reports):
        out.print(
            "  apart: trials that cut no server off but left two servers whose NICs reach no "
            "common part of the switches (a host forwards nothing between parts): busbw 0, "
            "known exactly"
        )
