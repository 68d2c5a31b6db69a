"""``topo explain``: whether a measured collective is what the fabric should give, and if not,
which candidate cause fits it (:mod:`topo.collective.explain`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from topo.cli_common import (
    about,
    check_outputs,
    err,
    gpus_per_node_option,
    out,
    print_json,
    user_errors,
)
from topo.commands.measured_logs import (
    Op,
    log_tests,
    sizes_from_log,
    warn_lines,
    write_html_first,
)
from topo.errors import FormatError, TopoError
from topo.wording import count

DEEPEP_HEAD_CHARS = 1 << 20
"""Characters of a log searched for DeepEP's lines (a DeepEP test prints far fewer; a
collective's log of many MB is not scanned whole for them)."""

if TYPE_CHECKING:
    from topo.collective.explain import Explanation
    from topo.collective.pairwise import PairGroup
    from topo.diagnose import EPExplanation
    from topo.formats.nccl_tests_records import NcclTest
    from topo.formats.pair_summary import PairRun

MAX_LOGS = 10_000
"""Most files a MEASUREMENT folder may hold: a folder of more is refused before any is read."""


@user_errors
def explain(
    fabric: Annotated[
        Path,
        typer.Argument(
            help="The fabric JSON the measurements ran on (topo build/import -o).",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    measurements: Annotated[
        list[Path],
        typer.Argument(
            help="nccl-tests logs (text or -J JSON) or NCCL Inspector records; a folder: "
            "every file in it.",
            exists=True,
            readable=True,
        ),
    ],
    op: Annotated[
        Op | None,
        typer.Option(
            "--op",
            help="Explain only this collective's test (and name the op of an old log that "
            "does not).",
            case_sensitive=False,
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", help="Ranks N (default: the log's)."),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        gpus_per_node_option("Ranks per server G (default: the log's)."),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write measured, design and the best causes' busbw curves (plotly)."
        ),
    ] = None,
    dump: Annotated[
        Path | None,
        typer.Option(
            "--dump",
            help="The fabric as built: an ibnetdiscover dump (or its topo import JSON). Its "
            "missing and miswired cables (topo validate) are scored as the cause 'as_built'.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print a list: one object per test (kind 'test': its verdict, the design's "
            "curve and 'causes', best first, empty when the measurement agrees) and one per "
            "pairwise group (kind 'pairwise': slow servers, slow paths, failed pairs).",
        ),
    ] = False,
) -> None:
    """Is a measured collective what the fabric should give, and if not, which cause fits?

    Each test is held against the design's expected curve; when it falls short, candidate
    causes (a NIC down or slow, GPUDirect RDMA absent, NVLS off, a forced NCCL_ALGO or
    NCCL_PROTO) are re-predicted on the same fabric and ranked by how well they fit. Runs on
    two servers (a pairwise summary CSV, or two-host logs) are pooled per test and G to
    locate the servers and paths that explain the slow pairs.
    """
    from topo import fabric as fabric_mod
    from topo.collective.explain import explain_test, plot_explanations
    from topo.files import read_text
    from topo.formats.deepep_log import is_deepep_log
    from topo.formats.pair_summary import is_pair_summary, read_pair_summary

    logs = _expand(measurements)
    check_outputs({"--html": html}, [fabric, *[p for p, _ in logs], *([dump] if dump else [])])
    G = fabric_mod.load(fabric)
    built = _as_built(G, fabric, dump) if dump is not None else None
    results: list[tuple[Path, Explanation]] = []
    warnings: list[str] = []
    runs: list[PairRun] = []
    ep_results: list[tuple[Path, EPExplanation]] = []
    for log, in_folder in logs:
        # read once (a pipe, as bash's <(...) gives, cannot be read again), then told by its
        # content: a pairwise summary, DeepEP's output, or a collective's log
        try:
            text = read_text(log)
        except FormatError as exc:
            if not in_folder:
                raise
            warnings.append(f"{exc} (skipped)")
            continue
        if is_pair_summary(text):
            try:
                runs += read_pair_summary(log, text=text)
            except FormatError as exc:
                if not in_folder:
                    raise
                warnings.append(f"{exc} (skipped)")  # e.g. a summary of runs on 10 servers
            continue
        if is_deepep_log(text[:DEEPEP_HEAD_CHARS]):
            from topo.diagnose import explain_ep
            from topo.formats.deepep_log import read_deepep_log

            if gpus is None or gpus_per_node is None:
                message = (
                    f"{log}: DeepEP's tests print neither their ranks nor ranks per server: "
                    "give --gpus and --gpus-per-node"
                )
                if not in_folder:
                    raise TopoError(message)
                warnings.append(f"{message} (skipped)")
                continue
            with about(fabric):
                test = read_deepep_log(log, text=text)
                ep_results.append((log, explain_ep(G, test, gpus, gpus_per_node)))
            continue
        try:
            tests, left_out = log_tests(log, op, gpus, gpus_per_node, text)
        except FormatError as exc:
            if not in_folder:
                raise
            # a folder's file that is not a measured log (a summary, a script): said, skipped
            warnings.append(f"{exc} (skipped)")
            continue
        warnings += left_out
        for t in tests:
            with about(fabric), sizes_from_log(log, [t], gpus, gpus_per_node):
                e = explain_test(G, t, gpus=gpus, gpus_per_node=gpus_per_node, as_built=built)
                results.append((log, e))
            runs += _pair_runs(log, t)
    if not results and not runs and not ep_results:
        warn_lines(warnings)  # why each file was skipped, before the refusal
        raise TopoError(f"no measured collective log in {', '.join(str(p) for p in measurements)}")
    groups = _pairwise(G, fabric, runs)
    if not results and not groups and not ep_results:
        raise TopoError(
            f"{count(len(runs), 'pairwise run')} but no test and G with three measured pairs: "
            "nothing to locate"
        )
    warn_lines(warnings)
    write_html_first(html, lambda: plot_explanations([e for _, e in results]))
    if as_json:
        doc: list[dict[str, Any]] = [
            {"kind": "test", "log": str(log), **e.to_dict()} for log, e in results
        ]
        doc += [{"kind": "deepep", "log": str(log), **e.to_dict()} for log, e in ep_results]
        if groups:
            from topo.collective.pairwise import recurring_paths

            seen = {(a, b): w for a, b, w in recurring_paths(groups)}
            for g in groups:
                d = {"kind": "pairwise", **g.to_dict()}
                for path in d["slow_paths"]:
                    path["slow_in"] = seen.get(tuple(path["servers"]), [])
                doc.append(d)
        print_json(doc)
    else:
        for log, e in results:
            same = sum(1 for other, x in results if other == log and x.op == e.op)
            _table(log, e, at_line=same > 1)
        for log, ep in ep_results:
            _ep_table(log, ep)
        if groups:
            _pair_table(groups)
    if html is not None:
        err.print(f"wrote {html}")


def _as_built(G: Any, fabric: Path, dump: Path) -> tuple[Any, str] | None:
    """The design's servers with the dump's cables and a phrase naming the defects (None when
    the dump matches the design: nothing to score). A dump is a fabric JSON (topo import -o)
    when it reads as one, an ibnetdiscover dump otherwise."""
    from topo import fabric as fabric_mod
    from topo.formats import import_ibnetdiscover
    from topo.validate import as_built_fabric, check_design, find_defects, match_fabric

    with about(fabric):
        check_design(G, fabric)
    with dump.open("rb") as f:
        first = f.read(1)
    D = fabric_mod.load(dump) if first in (b"{", b"[") else import_ibnetdiscover([dump])
    match = match_fabric(G, D)
    defects = find_defects(G, D, match)
    if not defects:
        err.print(f"{dump}: every cable as designed; no as-built cause to score")
        return None
    kinds = Counter(d.kind for d in defects)
    words = ", ".join(f"{k} {kind}" for kind, k in sorted(kinds.items()))
    return as_built_fabric(G, D, match), f"{len(defects)} defects: {words}"


def _ep_table(log: Path, e: EPExplanation) -> None:
    from topo.collective.explain import percent_off

    title = (
        f"DeepEP {e.kernel.replace('_', '-')}: {log.name} against the design "
        f"({count(e.gpus, 'GPU')}, {e.gpus_per_node} per node)"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("#", justify="right")
    table.add_column("cause")
    table.add_column("RMS", justify="right")
    for name in e.phases:
        table.add_column(f"{name} (GB/s)", justify="right")
    table.add_column("fits")
    table.add_row("", "measured", "", *(f"{x:.1f}" for x in e.measured_GBps), "")
    table.add_row(
        "", "as designed", percent_off(e.design.score), *(f"{x:.1f}" for x in e.design.GBps), ""
    )
    for i, k in enumerate(e.causes, 1):
        table.add_row(
            str(i),
            k.description,
            percent_off(k.score),
            *(f"{x:.1f}" for x in k.predicted.GBps),
            "yes" if k.fits else "",
        )
    out.print(table)
    style = "bold" if e.agrees or e.faster else "bold red"
    out.print(f"DeepEP: {e.verdict}", style=style)
    if e.causes:
        out.print(f"check: {e.causes[0].check}")


def _pair_runs(log: Path, t: NcclTest) -> list[PairRun]:
    """A test of a log on exactly two hosts, as a pairwise run (busbw at its largest row)."""
    from topo.formats.pair_summary import PairRun

    rows = [m for m in t.rows if m.size_bytes > 0 and m.time_us > 0]
    if len(t.hosts) != 2 or not rows or t.gpus_per_node is None:
        return []
    from topo.collective.explain import largest_row

    last = rows[largest_row([m.size_bytes for m in rows], [m.time_us for m in rows])]
    a, b = sorted(t.hosts)
    return [PairRun(t.op, t.gpus_per_node, (a, b), last.busbw_GBps, last.size_bytes, str(log))]


MAX_PATHS_SHOWN = 10
"""Recurring slow paths printed in the terminal (all of them in --json)."""

PAIR_SIZE = 1 << 30
"""The size (B) a pair's design busbw is taken at when the table does not give its largest."""


def _pairwise(G: Any, fabric: Path, runs: list[PairRun]) -> list[PairGroup]:
    """The pairwise groups of ``runs`` (three pairs or more), each held against the design's
    busbw for two servers of its G GPUs (None where the fabric cannot hold them)."""
    from topo.collective.fabric_rates import fabric_rates
    from topo.collective.model import OPS
    from topo.collective.pairwise import locate_slow
    from topo.collective.predict import fabric_constants, predict_row

    c = fabric_constants(G)

    def expected(op: str, g: int, size: int | None) -> float | None:
        if op not in OPS:
            return None
        try:
            with about(fabric):
                rates = fabric_rates(G, 2 * g, g)
            s = size or PAIR_SIZE
            return predict_row(op, s, s // 4, "float", rates, c).busbw_GBps
        except TopoError:
            return None

    return [g for g in locate_slow(runs, expected) if g.pairs >= 3]


def _pair_table(groups: list[PairGroup]) -> None:
    from topo.collective.pairwise import recurring_paths

    table = Table(
        title="pairwise runs: slow servers and paths", title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("test")
    table.add_column("G", justify="right")
    table.add_column("pairs", justify="right")
    table.add_column("median busbw (GB/s)", justify="right")
    table.add_column("design (GB/s)", justify="right")
    table.add_column("slow servers")
    table.add_column("slow paths", justify="right")
    table.add_column("failed", justify="right")
    for g in groups:
        table.add_row(
            g.op,
            str(g.gpus_per_node),
            str(g.pairs),
            f"{g.median_busbw_GBps:.1f}",
            f"{g.expected_busbw_GBps:.1f}" if g.expected_busbw_GBps else "-",
            ", ".join(f"{s.server} ({s.ratio:.2f}x)" for s in g.servers) or "-",
            str(len(g.slow_paths)),
            str(len(g.failed)),
        )
    out.print(table)
    for g in groups:
        out.print(f"{g.op} G={g.gpus_per_node}: {g.verdict}")
    rec = recurring_paths(groups)
    if rec:
        shown = "; ".join(f"{a} - {b} ({', '.join(w)})" for a, b, w in rec[:MAX_PATHS_SHOWN])
        more = (
            f"; and {len(rec) - MAX_PATHS_SHOWN} more (--json)"
            if len(rec) > MAX_PATHS_SHOWN
            else ""
        )
        out.print(
            "pairs slow in several tests, with neither server slow (check the cables, switch "
            f"ports and routes between them): {shown}{more}"
        )


def _expand(paths: list[Path]) -> list[tuple[Path, bool]]:
    """The logs named: files as given, a folder's regular files in name order (each with
    whether it came from a folder)."""
    logs: list[tuple[Path, bool]] = []
    for p in paths:
        if p.is_dir():
            inside = sorted(q for q in p.iterdir() if q.is_file() and not q.name.startswith("."))
            if len(inside) > MAX_LOGS:
                raise TopoError(
                    f"{p}: {len(inside)} files, more than the {MAX_LOGS} a folder may hold"
                )
            if not inside:
                raise TopoError(f"{p}: a folder with no file to read")
            logs += [(q, True) for q in inside]
        else:
            logs.append((p, False))
    return logs


def _table(log: Path, e: Explanation, at_line: bool = False) -> None:
    from topo.collective.explain import percent_off

    title = (
        f"{e.op}: {log.name}{f' (test at line {e.line})' if at_line else ''} against the "
        f"design ({count(e.gpus, 'GPU')}, "
        f"{count(e.nodes, 'node')} x {e.gpus_per_node})"
    )
    style = "bold" if e.agrees or e.faster else "bold red"
    if not e.causes:
        out.print(title)
        out.print(f"{e.op}: {e.verdict}", style=style)
        _say_slower(e)
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("#", justify="right")
    table.add_column("cause")
    table.add_column("RMS", justify="right")
    table.add_column("busbw at largest (GB/s)", justify="right")
    table.add_column("fits")
    top = e.largest
    table.add_row(
        "",
        "as designed",
        percent_off(e.design.score),
        f"{e.design.busbw_GBps[top]:.1f} (measured {e.measured_busbw_GBps[top]:.1f})",
        "",
    )
    for i, k in enumerate(e.causes, 1):
        table.add_row(
            str(i),
            k.description,
            percent_off(k.score),
            f"{k.curve.busbw_GBps[top]:.1f}",
            "yes" if k.fits else "",
        )
    out.print(table)
    out.print(f"{e.op}: {e.verdict}", style=style)
    best = e.causes[0]
    out.print(f"check: {best.check}")
    _say_slower(e)


def _say_slower(e: Explanation) -> None:
    """One line when some size took more than 1.25x the time of a larger one
    (:attr:`Explanation.slower_than_larger`), naming the one furthest off."""
    from topo.collective.compare import RUNS_APART

    slow = e.slower_than_larger
    if not slow:
        return
    w = max(slow, key=lambda g: g["time_us"] / g["larger_time_us"])
    runs = sum(1 for size in e.sizes if size == w["size_bytes"])
    # the median run of 3 or more is slow only if half of them are: not one slow run
    why = (
        f", the median of its {runs} runs, so not one slow run: a tuner choice"
        if runs >= 3
        else ": one slow run or a tuner choice"
    )
    out.print(
        f"{e.op}: {count(len(slow), 'size')} took more than {RUNS_APART:g}x the time of a larger "
        "size; "
        f"furthest: {w['size_bytes']} B, {w['time_us']:.1f} us against {w['larger_size_bytes']} "
        f"B's {w['larger_time_us']:.1f} us{why} slower than the larger size's, not the fabric "
        "(the scores take it as it is; --json: slower_than_larger)",
        style="bold",
    )
