"""``topo explain``: whether a measured collective is what the fabric should give, and if not,
which candidate cause fits it (:mod:`topo.collective.explain`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from topo.commands.collective import (
    Op,
    log_tests,
    sizes_from_log,
    warn_lines,
    write_html_first,
)
from topo.errors import FormatError, TopoError
from topo.wording import count

if TYPE_CHECKING:
    from topo.collective.explain import Explanation

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
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one object per test: its verdict, the design's curve and 'causes' "
            "(best first; empty when the measurement agrees).",
        ),
    ] = False,
) -> None:
    """Is a measured collective what the fabric should give, and if not, which cause fits?

    Each test is held against the design's expected curve; when it falls short, candidate
    causes (a NIC down or slow, GPUDirect RDMA absent, NVLS off, a forced NCCL_ALGO or
    NCCL_PROTO) are re-predicted on the same fabric and ranked by how well they fit.
    """
    from topo import fabric as fabric_mod
    from topo.collective.explain import explain_test, plot_explanations

    logs = _expand(measurements)
    check_outputs({"--html": html}, [fabric, *[p for p, _ in logs]])
    G = fabric_mod.load(fabric)
    results: list[tuple[Path, Explanation]] = []
    warnings: list[str] = []
    for log, in_folder in logs:
        try:
            tests, left_out = log_tests(log, op, gpus, gpus_per_node)
        except FormatError as exc:
            if not in_folder:
                raise
            # a folder's file that is not a measured log (a summary, a script): said, skipped
            warnings.append(f"{exc} (skipped)")
            continue
        warnings += left_out
        for t in tests:
            with about(fabric), sizes_from_log(log, [t], gpus, gpus_per_node):
                results.append((log, explain_test(G, t, gpus=gpus, gpus_per_node=gpus_per_node)))
    if not results:
        raise TopoError(f"no measured collective log in {', '.join(str(p) for p in measurements)}")
    warn_lines(warnings)
    write_html_first(html, lambda: plot_explanations([e for _, e in results]))
    if as_json:
        print_json([{"log": str(log), **e.to_dict()} for log, e in results])
    else:
        for log, e in results:
            _table(log, e)
    if html is not None:
        err.print(f"wrote {html}")


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


def _table(log: Path, e: Explanation) -> None:
    from topo.collective.explain import percent_off

    title = (
        f"{e.op}: {log.name} against the design ({count(e.gpus, 'GPU')}, "
        f"{count(e.nodes, 'node')} x {e.gpus_per_node})"
    )
    style = "bold" if e.agrees or e.faster else "bold red"
    if not e.causes:
        out.print(title)
        out.print(f"{e.op}: {e.verdict}", style=style)
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("#", justify="right")
    table.add_column("cause")
    table.add_column("RMS", justify="right")
    table.add_column("busbw at largest (GB/s)", justify="right")
    table.add_column("fits")
    table.add_row(
        "",
        "as designed",
        percent_off(e.design.score),
        f"{e.design.busbw_GBps[-1]:.1f} (measured {e.measured_busbw_GBps[-1]:.1f})",
        "",
    )
    for i, k in enumerate(e.causes, 1):
        table.add_row(
            str(i),
            k.description,
            percent_off(k.score),
            f"{k.curve.busbw_GBps[-1]:.1f}",
            "yes" if k.fits else "",
        )
    out.print(table)
    out.print(f"{e.op}: {e.verdict}", style=style)
    best = e.causes[0]
    out.print(f"check: {best.check}")
