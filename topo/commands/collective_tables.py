"""The tables ``topo collective`` prints: the predicted sweep, a log against the model,
``--why``'s candidates and ``--calibrate``'s result (rich tables to stdout)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from topo.cli_common import out
from topo.wording import binary_bytes, count

if TYPE_CHECKING:
    from topo.collective import CollectiveReport, Comparison
    from topo.collective.compare import CompareRow


def calibration_table(result: Any, log: Path) -> None:
    """The calibration's result: what was fitted on which rows, what was not and why, the
    guard on the large rows, the held-out errors and what the log cannot show."""
    from rich.markup import escape

    from topo.collective.calibrate import LATENCY_SCALE, NODE_NETWORK

    b = result.bands
    out.print(
        f"calibrated on {log.name}: {count(result.rows, 'row')} of {', '.join(result.ops)}; "
        f"{b['bandwidth']} bandwidth-bound, {b['latency']} set by launch and per-message "
        f"costs, {b['neither']} neither"
    )
    for name in (NODE_NETWORK, LATENCY_SCALE):
        f = result.fitted.get(name)
        if f is None:
            out.print(escape(f"{name} not fitted: {result.not_fitted[name]}"), style="bold")
            continue
        what = (
            "node_network"
            if name == NODE_NETWORK
            else "latency scale (on the [expected] per-operation and per-message costs)"
        )
        rows = (
            f"{f['rows']} bandwidth-bound rows"
            if f["band"] == "bandwidth"
            else f"{f['rows']} rows set by launch and per-message costs"
        )
        line = (
            f"{what} = {f['value']:.3f} (was {float(f['given'])}): fitted on {rows} "
            f"({', '.join(f['ops'])}; {f['sizes']})"
        )
        lo, hi = f["range"]
        if name == NODE_NETWORK and hi - lo > 0.005:
            line += f"; any value from {lo:.2f} to {hi:.2f} fits them as well, the highest is taken"
        out.print(escape(line))
    if result.large_rows:
        parts = [
            f"{g['op']} {g['median_abs_error_before'] * 100:.1f}% -> "
            f"{g['median_abs_error_after'] * 100:.1f}%"
            for g in result.large_rows
        ]
        out.print("rows of 1 GiB and more, median |error| before -> after: " + ", ".join(parts))
    if result.held_out:
        by = "the other ops" if result.held_out_by == "op" else "the other size band"
        table = Table(
            title=f"held out: fitted on {by}, predicted on this one",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for name in (
            "held out",
            "node_network",
            "latency scale",
            "rows",
            "median |err|",
            "max |err|",
            "uncalibrated median",
        ):
            table.add_column(name, justify="right")
        for h in result.held_out:
            table.add_row(
                f"{h.op}{' ' + h.band + ' band' if h.band else ''}",
                f"{h.node_network:.3f}",
                f"{h.latency_scale:.3f}",
                str(h.rows),
                f"{h.median_abs_error * 100:.1f}%",
                f"{h.max_abs_error * 100:.1f}%",
                f"{h.median_abs_error_given * 100:.1f}%",
            )
        out.print(table)
    for note in result.notes:
        out.print(escape(f"note: {note}"))


def _rates_line(rates: dict[str, Any]) -> str:
    if rates["nvlink_per_gpu_GBps"] > 0:
        nvlink = (
            f"NVLink {rates['nvlink_per_gpu_GBps']:.1f} GB/s per GPU "
            f"({rates['nvlink_effective_GBps']:.1f} as NCCL gets it)"
        )
    else:
        nvlink = "one GPU per server: no NVLink peer"
    parts = [nvlink]
    if "ring_method" in rates:  # across servers
        ring = (
            f"ring {rates['ring_per_server_GBps']:.1f} GB/s per server "
            f"(bottleneck {', '.join(rates['ring_bottleneck']) or '-'})"
            if rates["ring_per_server_GBps"]
            else "ring NIC-bound only (flow LP refused)"
        )
        in_use = rates["nics_per_node"] * rates["nic_GBps"]
        ceiling = rates["server_ceiling_GBps"]
        parts.append(
            f"{count(rates['nics_per_node'], 'NIC')} x {rates['nic_GBps']:.1f} GB/s per server "
            f"in use, {ring}"
            + (f", server ceiling {ceiling:.1f} GB/s" if ceiling < in_use * (1 - 1e-9) else "")
        )
    if rates.get("alltoall_internode_per_gpu_GBps"):
        parts.append(
            f"all-to-all {rates['alltoall_internode_per_gpu_GBps']:.2f} GB/s per GPU across servers"
        )
    return "; ".join(parts)


def restriction_title(algo: str | None, proto: str | None) -> str:
    """``NCCL_ALGO=... NCCL_PROTO=...`` for a title: the restriction a report records."""
    parts = [f"NCCL_ALGO={algo}" if algo is not None else ""]
    parts.append(f"NCCL_PROTO={proto}" if proto is not None else "")
    return " ".join(p for p in parts if p)


EXPECTED_CAPTION = (
    "time, algbw, busbw: expected (NCCL's per-message costs, fitted: docs/collective.md); "
    "ceiling: the busbw bound the fabric allows NCCL's tuner"
)
"""The predicted table's caption: what its expected and ceiling columns are."""


def report_table(rep: CollectiveReport) -> None:
    """The predicted table (:func:`topo.collective.collective_table`) in nccl-tests' columns,
    with the rates it rests on and a busbw note, to stdout."""
    restricted = restriction_title(rep.algo, rep.proto)
    title = (
        f"{rep.op} on {rep.fabric}: {count(rep.gpus, 'GPU')}, {count(rep.nodes, 'node')} x "
        f"{rep.gpus_per_node} "
        f"(NCCL {rep.nccl_release} model{', ' + restricted if restricted else ''})"
    )
    table = Table(
        title=title,
        title_justify="left",
        caption=_rates_line(rep.rates) + "\n" + EXPECTED_CAPTION,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for name in (
        "size (B)",
        "count",
        "type",
        "redop",
        "root",
        "time (us)",
        "algbw (GB/s)",
        "busbw (GB/s)",
        "ceiling (GB/s)",
    ):
        table.add_column(name, justify="right")
    table.add_column("algorithm/protocol")
    table.add_column("binds")
    for r in rep.rows:
        table.add_row(
            str(r.size_bytes),
            str(r.count),
            r.type,
            r.redop,
            str(r.root),
            f"{r.time_us:.2f}",
            f"{r.algbw_GBps:.2f}",
            f"{r.busbw_GBps:.2f}",
            f"{r.ceiling_busbw_GBps:.2f}",
            f"{r.algorithm}/{r.protocol}",
            f"{r.binds}: {r.binds_detail}",
        )
    out.print(table)
    noted = [r for r in rep.rows if r.busbw_note]
    if noted:
        out.print(f"note ({_span(noted)} B): {noted[0].busbw_note}")
    unfitted = [r for r in rep.rows if not r.fitted]
    if unfitted:
        from topo.collective.predict import FITTED_FROM_BYTES

        least = binary_bytes(FITTED_FROM_BYTES)
        out.print(
            f"note ({_span(unfitted)} B): the expected curve is not fitted under {least} (its "
            f"constants come from rows of {least} and more); held against public rows of "
            "64-512 KiB, 12% are within 15%: across servers up to 2.6x slow, on one server "
            "about 1.3x fast (docs/collective.md)"
        )


def _span(rows: list[Any]) -> str:
    """The sizes of ``rows`` (in increasing size) for a note: the first, or first to last (B)."""
    first, last = rows[0].size_bytes, rows[-1].size_bytes
    return f"{first}" if len(rows) == 1 else f"{first} to {last}"


def compare_table(cmp: Comparison, log: Path, at_line: bool = False) -> None:
    """A measured test against the model (:func:`topo.collective.compare_log`), per size, then
    the verdict per size band, the overall verdict and the fit, to stdout.

    A log of several data types or reductions (nccl-tests ``-d all``, ``-o all``) gets a
    ``type`` or ``redop`` column; rows that repeat a (size, type, reduction) (``-N``, runs
    appended) are shown once, with the median of their times and busbw and the number of runs
    (the verdicts and ``--json`` take every row). ``at_line``: the title names the line where
    the test starts (a log of several tests of one op)."""
    restricted = restriction_title(cmp.algo, cmp.proto)
    title = (
        f"{cmp.op}: {log.name}{f' (test at line {cmp.line})' if at_line else ''} against the "
        f"model ({count(cmp.gpus, 'GPU')}, "
        f"{count(cmp.nodes, 'node')} x {cmp.gpus_per_node}"
        f"{', ' + restricted if restricted else ''})"
    )
    shown = cmp.shown
    repeated = len(shown) < len(cmp.rows)
    show_type = len({r.type for r in cmp.rows}) > 1
    show_redop = len({r.redop for r in cmp.rows}) > 1
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption=(
            "rows repeating a size, type and reduction shown once: the median of their runs' "
            "times and busbw; the verdicts and --json take every row"
            if repeated
            else None
        ),
        caption_justify="left",
    )
    table.add_column("size (B)", justify="right")
    if show_type:
        table.add_column("type")
    if show_redop:
        table.add_column("redop")
    if repeated:
        table.add_column("runs", justify="right")
    for name in (
        "time (us)",
        "expected (us)",
        "busbw (GB/s)",
        "expected (GB/s)",
        "ratio",
        "ceiling (GB/s)",
    ):
        table.add_column(name, justify="right")
    table.add_column("model's choice")
    for r, runs in shown:
        cells = [str(r.size_bytes)]
        if show_type:
            cells.append(r.type)
        if show_redop:
            cells.append(r.redop)
        if repeated:
            cells.append(str(runs))
        cells += [
            f"{r.measured_time_us:.1f}",
            f"{r.predicted_time_us:.1f}",
            f"{r.measured_busbw_GBps:.2f}",
            f"{r.predicted_busbw_GBps:.2f}",
            f"{r.ratio:.2f}",
            f"{r.ceiling_busbw_GBps:.2f}",
            f"{r.algorithm}/{r.protocol}",
        ]
        table.add_row(*cells)
    out.print(table)
    _say_runs_apart(cmp)
    _say_inplace_apart(cmp)
    _say_slower_than_larger(cmp)
    style = "bold red" if cmp.far_below else "bold"
    for b in cmp.bands:
        out.print(f"{cmp.op}, {b['band']} ({b['sizes']}): {b['verdict']}", style=style)
    out.print(f"{cmp.op}: {cmp.verdict}", style=style)
    over = set(cmp.above_ceiling)
    if over:
        top = max((r for r, _ in shown if r.size_bytes in over), key=lambda r: r.ceiling_ratio)
        out.print(
            f"{cmp.op}: measured above the ceiling at {count(len(over), 'size')} (up to "
            f"{top.ceiling_ratio * 100:.0f}% of it, {top.size_bytes} B): the ceiling is NCCL's "
            "tuner model on this fabric's rates, not a bound this run obeys; here it under-rates "
            "the path (check the fabric file's rates, NIC count and the constants)"
        )
    if cmp.fit is not None:
        f = cmp.fit
        out.print(
            f"fit over {_rows_and_sizes(f.points, cmp.rows)}: alpha {f.alpha_us:.1f} us, busbw "
            f"{f.busbw_GBps:.2f} GB/s, "
            f"residual {f.residual * 100:.1f}% RMS (model: latency {cmp.model_latency_us:.1f} us)"
        )


def _say_runs_apart(cmp: Comparison) -> None:
    """Under a table of repeated runs, one line when some size's runs disagree (the median
    shown hides them: :func:`topo.collective.compare.runs_apart`), naming the one furthest
    apart."""
    from topo.collective.compare import RUNS_APART, runs_apart

    apart = runs_apart(cmp.rows, cmp.shown)
    if not apart:
        return

    def spread(g: tuple[CompareRow, int, float, float]) -> float:
        m, _, lo, hi = g
        return max(hi / m.measured_time_us, m.measured_time_us / lo) if lo > 0 else math.inf

    m, n, lo, hi = max(apart, key=spread)
    out.print(
        f"{cmp.op}: runs disagree in {count(len(apart), 'row')} of the table (a run more than "
        f"{RUNS_APART:g}x off the median shown); furthest: {_row_named(m)}, {n} runs from "
        f"{lo:.1f} to {hi:.1f} us, median {m.measured_time_us:.1f} us (--json has every run)",
        style="bold",
    )


def _say_slower_than_larger(cmp: Comparison) -> None:
    """Under the table, one line when some size took more than 1.25x the time of a larger
    one (:func:`topo.collective.compare.slower_than_larger`), naming the one furthest off."""
    from topo.collective.compare import RUNS_APART, slower_than_larger

    slow = slower_than_larger(cmp.rows, cmp.shown)
    if not slow:
        return
    m, big = max(slow, key=lambda g: g[0].measured_time_us / g[1].measured_time_us)
    runs = next(n for r, n in cmp.shown if r is m)
    # the median of 3 runs or more is slow only if half of them are: not one slow run
    why = (
        f", the median of its {runs} runs, so not one slow run: an algorithm or protocol "
        if runs >= 3
        else ". One slow run (nccl-tests -N repeats each size), or an algorithm or protocol "
    )
    out.print(
        f"{cmp.op}: {count(len(slow), 'row')} of the table took more than {RUNS_APART:g}x the "
        f"time of a larger size; furthest: {_row_named(m)}, {m.measured_time_us:.1f} us against "
        f"{big.size_bytes} B's {big.measured_time_us:.1f} us{why}NCCL's tuner picks there that "
        "is slower than the larger size's (NCCL_ALGO / NCCL_PROTO forced tell them apart); the "
        "row says nothing of the fabric (--json: slower_than_larger)",
        style="bold",
    )


def _say_inplace_apart(cmp: Comparison) -> None:
    """Under the table, one line when some size's in-place time is more than 1.25x off its
    out-of-place one (the table reads the out-of-place columns:
    :func:`topo.collective.compare.inplace_apart`), naming the one furthest apart."""
    from topo.collective.compare import RUNS_APART, inplace_apart

    apart = inplace_apart(cmp.rows, cmp.shown)
    if not apart:
        return

    def spread(g: tuple[CompareRow, float]) -> float:
        return max(g[1], g[0].measured_time_us) / min(g[1], g[0].measured_time_us)

    m, ip = max(apart, key=spread)
    pace = "slower" if ip > m.measured_time_us else "faster"
    out.print(
        f"{cmp.op}: in-place runs more than {RUNS_APART:g}x off the out-of-place ones at "
        f"{count(len(apart), 'row')} of the table (the table and verdicts read out-of-place); "
        f"furthest: {_row_named(m)}, in-place {ip:.1f} us, "
        f"{pace} than out-of-place {m.measured_time_us:.1f} us (--json rows: inplace_time_us)",
        style="bold",
    )


def _row_named(r: CompareRow) -> str:
    """A row of the table in words: its size (B), type and reduction where the log has them."""
    return " ".join([f"{r.size_bytes} B", *(k for k in (r.type, r.redop) if k)])


def _rows_and_sizes(points: int, rows: list[CompareRow]) -> str:
    """``10 sizes`` when each row is a size of its own, else ``70 rows (14 sizes)``."""
    sizes = len({r.size_bytes for r in rows})
    return count(sizes, "size") if sizes == points else f"{points} rows ({count(sizes, 'size')})"


def nccl_tests_number(value: float, width: int) -> str:
    """A number as nccl-tests prints its columns (``getFloatStr``, src/util.cu): two decimals
    if they fit in ``width`` characters, else one, else none, else an exponent; unpadded.

    Examples
    --------
    >>> nccl_tests_number(25.2, 7), nccl_tests_number(105854.0, 7), nccl_tests_number(320.544, 6)
    ('25.20', '105854', '320.54')
    """
    for fmt in (".2f", ".1f", ".0f"):
        text = f"{value:{fmt}}"
        if len(text) <= width:
            return text
    return f"{value:.{1 if width >= 7 else 0}e}"


def _time_busbw(time_us: float, busbw_GBps: float) -> str:
    """A ``--why`` cell: time (us) over busbw (GB/s), as nccl-tests prints them (time in 7
    characters, busbw in 6)."""
    return f"{nccl_tests_number(time_us, 7)}\n{nccl_tests_number(busbw_GBps, 6)}"


def why_table(op: str, rows: list[Any], restricted: str, measured: bool = False) -> None:
    """``--why``: one row per size, one column per (algorithm, protocol) the tuner weighed,
    each cell the candidate's time in NCCL's tuner (us, what the choice is made on) over its
    expected busbw (GB/s, what nccl-tests would print had NCCL chosen it), the choice marked
    ``*``; with ``measured``, the log's own first."""
    from topo.collective.choice import ALGORITHM_ORDER
    from topo.collective.constants import PROTOCOLS

    def order(pair: tuple[str, str]) -> tuple[int, int, str]:
        a, p = pair
        rank = ALGORITHM_ORDER.index(a) if a in ALGORITHM_ORDER else len(ALGORITHM_ORDER)
        return (rank, PROTOCOLS.index(p) if p in PROTOCOLS else len(PROTOCOLS), a + p)

    pairs = sorted({(k["algorithm"], k["protocol"]) for r in rows for k in r.candidates}, key=order)
    table = Table(
        title=f"why: every (algorithm, protocol) NCCL's tuner weighs for {op}"
        f"{' under ' + restricted if restricted else ''}: its time in the tuner (us) over the "
        "expected busbw (GB/s) had NCCL chosen it",
        title_justify="left",
        caption="* the tuner's choice, the least time; - not a candidate at that size",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        show_lines=True,
    )
    table.add_column("size (B)", justify="right")
    if measured:
        table.add_column("measured", justify="right")
    for a, p in pairs:
        table.add_column(f"{a}\n{p}", justify="right")
    # a log of several data types or reductions: each row says its own
    kinds = {(getattr(r, "type", ""), getattr(r, "redop", "")) for r in rows}
    for r in rows:
        cells = {(k["algorithm"], k["protocol"]): k for k in r.candidates}
        row = [f"{r.size_bytes}\n{r.type} {r.redop}" if len(kinds) > 1 else str(r.size_bytes)]
        if measured:
            row.append(_time_busbw(r.measured_time_us, r.measured_busbw_GBps))
        for pair in pairs:
            k = cells.get(pair)
            if k is None:
                row.append("-")
                continue
            text = _time_busbw(k["tuner_time_us"], k["expected_busbw_GBps"])
            row.append(f"[bold]*{text}[/bold]" if k["chosen"] else text)
        table.add_row(*row)
    out.print(table)
