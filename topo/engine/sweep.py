"""``topo sweep``: every point of a sweep spec evaluated on the engine, rows streamed to a
journal as they finish, the table written at the end (:mod:`topo.engine.table`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topo.cost import load_prices
from topo.engine.cluster import Engine, SerialEngine
from topo.engine.evaluate import Context, columns, evaluate_point
from topo.engine.spec import SweepSpec
from topo.engine.table import Journal, check_journal, table_format, write_table
from topo.moe import default_config, load_config


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep.

    Attributes
    ----------
    output : Path
        The table written.
    columns : list of str
        Its columns.
    rows : list of dict
        Its rows, by point.
    resumed : int
        Rows taken from an interrupted run's journal (not evaluated again).
    failed : int
        Rows with an ``error`` (a refused combination, or a task whose workers died twice).
    seconds : float
        Wall-clock time of this run, s.
    """

    output: Path
    columns: list[str]
    rows: list[dict[str, Any]]
    resumed: int
    failed: int
    seconds: float


def context(spec: SweepSpec) -> Context:
    """The inputs every point of ``spec`` shares: the price book, the MoE model.

    Raises
    ------
    FormatError
        An unreadable price book or model config.
    """
    config = None
    if "moe" in spec.evaluate:
        model = spec.moe.get("model")
        config = load_config(model) if model is not None else default_config()
    return Context(
        evaluate=spec.evaluate,
        prices=load_prices(spec.prices),
        config=config,
        moe={k: v for k, v in spec.moe.items() if k != "model"},
        collective=dict(spec.collective),
    )


def check_sweep(spec: SweepSpec, output: Path, resume: bool) -> Context:
    """Every check of :func:`run_sweep` that needs no evaluation: a command calls it before
    it starts a Dask cluster.

    Parameters
    ----------
    spec : SweepSpec
        From :func:`topo.engine.spec.load_sweep`.
    output : Path
        The table to write.
    resume : bool
        As :func:`run_sweep`.

    Returns
    -------
    Context
        The inputs the points share (:func:`context`).

    Raises
    ------
    FormatError
        A bad output suffix; a journal already there without ``resume``, or of another spec
        (:func:`topo.engine.table.check_journal`); an unreadable price book or model config.
    """
    table_format(output)
    check_journal(output, spec.digest, resume)
    return context(spec)


def run_sweep(
    spec: SweepSpec,
    output: Path,
    engine: Engine | SerialEngine,
    *,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Evaluate every point of ``spec`` on ``engine`` and write the table ``output``.

    Parameters
    ----------
    spec : SweepSpec
        From :func:`topo.engine.spec.load_sweep`.
    output : Path
        ``*.parquet`` or ``*.csv``; its journal ``OUTPUT.partial.jsonl`` holds the rows so far.
    engine : Engine or SerialEngine
        Where the points run; the shared inputs are scattered to it once.
    resume : bool
        Continue an interrupted run from its journal: its rows without ``error`` are kept,
        the others evaluated (again).
    progress : callable, optional
        ``progress(done, total)`` after each point (``total`` counts the resumed ones).

    Returns
    -------
    SweepResult

    Raises
    ------
    FormatError
        A bad output suffix; a journal already there without ``resume``; a journal of
        another spec.
    """
    t0 = time.perf_counter()
    shared_inputs = check_sweep(spec, output, resume)
    points = spec.points()
    cols = columns(list(spec.grid), spec.evaluate)
    journal = Journal(output, spec.digest, resume)
    written = False
    try:
        kept = {i: r for i, r in journal.rows.items() if not r.get("error")}
        todo = [p for p in points if p["point"] not in kept]
        if progress is not None:
            progress(len(kept), len(points))
        shared = engine.scatter(shared_inputs)
        for done, outcome in enumerate(engine.map(evaluate_point, todo, shared), 1):
            row = outcome.value if outcome.ok else {**todo[outcome.index], "error": outcome.error}
            journal.add(row)  # on disk before anything else can stop the run
            if progress is not None:
                progress(len(kept) + done, len(points))
        rows = [journal.rows[p["point"]] for p in points]
        write_table(output, rows, cols)
        written = True
    finally:
        journal.close(done=written)
    return SweepResult(
        output=output,
        columns=cols,
        rows=rows,
        resumed=len(kept),
        failed=sum(1 for r in rows if r.get("error")),
        seconds=time.perf_counter() - t0,
    )
