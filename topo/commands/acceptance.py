"""``topo acceptance``: a bring-up kit from a design, its digital twin, and the kit's logs read
back into one pass/fail table (:mod:`topo.acceptance`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from topo.cli_common import about, check_outputs, err, out, print_json, user_errors
from topo.errors import TopoError
from topo.wording import count

if TYPE_CHECKING:
    from topo.acceptance import AcceptanceResult, Kit

FAILED = 3
"""Exit status of ``--results`` when a test fails (as ``topo validate`` on defects)."""

NOT_READ = 4
"""Exit status of ``--results`` when no test fails but an nccl-tests log named after a test
cannot be read (or holds no test of its op): that test's result is unknown."""


@user_errors
def acceptance(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="DESIGN|KIT",
            help="The design's fabric JSON (topo build/import -o); with --results, the kit's "
            "folder.",
            exists=True,
            readable=True,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="The kit's folder to write (absent or empty; see --force).",
            file_okay=False,
        ),
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="A folder of the kit's logs (nccl-tests text or -J JSON): one pass/fail table.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    twin: Annotated[
        Path | None,
        typer.Option(
            "--twin",
            help="Write the expected busbw table (op, ranks, size: time_us, busbw_GBps) as "
            ".csv or .json, for a mock NCCL or a scheduler's test.",
            dir_okay=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a kit folder that holds files.")
    ] = False,
    hosts: Annotated[
        str | None,
        typer.Option(
            "--hosts",
            help="Host names, as topo export slurm --hosts: a pattern with {node} or a file "
            "of names (default node{node}; an imported fabric's own).",
        ),
    ] = None,
    ep: Annotated[
        int | None,
        typer.Option("--ep", help="EP size of the DeepEP tests (default: topo moe's).", min=2),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="With --results: measured busbw against each expected band."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the manifest (a kit) or the results (tests, causes) as JSON."
        ),
    ] = False,
) -> None:
    """A bring-up kit from a design (-o KIT, --twin FILE); its logs read back (KIT --results DIR).

    The kit holds nccl-tests and DeepEP tests at every scale (one server, 2, 4, ... all; each
    plane or rail alone; the EP groups) as Slurm batch scripts and mpirun lines, with the
    expected curve and its tolerance band for each (docs/acceptance.md).
    """
    if results is not None:
        _refuse(
            {"-o": output, "--twin": twin, "--hosts": hosts, "--ep": ep, "--force": force or None},
            "--results reads a kit's logs; they apply to writing a kit from a DESIGN",
        )
        if not path.is_dir():
            raise TopoError(
                f"{path}: --results needs the kit's folder (topo acceptance DESIGN -o KIT)"
            )
        _results(path, results, html, as_json)
        return
    if path.is_dir():
        raise TopoError(
            f"{path}: a folder; give a DESIGN.json to write a kit, or --results DIR to read "
            "this kit's logs"
        )
    _refuse({"--html": html}, "--html draws the results; give KIT --results DIR")
    if output is None and twin is None:
        raise TopoError(
            "give -o KIT (the bring-up kit) or --twin FILE (the expected table), or both"
        )
    if force and output is None:
        raise TopoError("--force needs -o KIT (it replaces a kit folder)")
    if as_json and output is None:
        raise TopoError("--json prints the manifest of -o KIT (or the results of --results)")
    _write(path, output, twin, force, hosts, ep, as_json)


def _refuse(given: dict[str, object], why: str) -> None:
    for option, value in given.items():
        if value is not None:
            raise TopoError(f"{option}: {why}")


def _write(
    design: Path,
    output: Path | None,
    twin: Path | None,
    force: bool,
    hosts: str | None,
    ep: int | None,
    as_json: bool,
) -> None:
    from topo import fabric as fabric_mod
    from topo.acceptance import make_kit, twin_rows, write_kit, write_twin
    from topo.files import write_atomic

    fmt = None
    if twin is not None:
        fmt = twin.suffix.lower().lstrip(".")
        if fmt not in ("csv", "json"):
            raise TopoError(f"--twin {twin}: name a .csv or .json file")
        check_outputs({"--twin": twin}, [design])
    if output is not None:
        if output.is_symlink():
            raise TopoError(
                f"-o {output}: a symbolic link; give the kit's folder itself (a link is never "
                "replaced)"
            )
        if output.exists() and not output.is_dir():
            raise TopoError(f"-o {output}: exists and is not a folder")
        if output.is_dir() and any(output.iterdir()) and not force:
            raise TopoError(f"-o {output}: a folder that holds files; give --force to replace it")
        parent = output.resolve().parent
        if not parent.is_dir():
            raise TopoError(f"-o {output}: its folder {parent} does not exist")
        if force and design.resolve().is_relative_to(output.resolve()):
            raise TopoError(f"-o {output}: holds the design; give the kit a folder of its own")
    G = fabric_mod.load(design)
    with about(design):
        kit = make_kit(G, hosts=hosts, ep=ep)
    if twin is not None and fmt is not None:
        write_atomic(twin, write_twin(twin_rows(kit.curves.values()), fmt))
        err.print(f"wrote {twin}")
    if output is not None:
        write_kit(kit, output, design, force=force)
        for note in kit.notes:
            print(f"topo: warning: {note}", file=sys.stderr)
        err.print(f"wrote {output}: {count(len(kit.tests), 'test')}")
        if as_json:
            print_json(kit.manifest())
        else:
            _kit_table(kit, output)


def _kit_table(kit: Kit, folder: Path) -> None:
    table = Table(
        title=f"bring-up kit of {kit.fabric}: {count(kit.servers, 'server')} x "
        f"{kit.gpus_per_node} GPUs, in {folder}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for name in ("scale", "kind", "ranks", "hosts", "tests", "expected busbw at 8 GiB (GB/s)"):
        table.add_column(name, justify="right" if name in ("ranks",) else "left")
    from topo.export.hostlist import hostlist_ranged

    by_scale: dict[str, list] = {}
    for t in kit.tests:
        by_scale.setdefault(t.scale, []).append(t)
    for scale, tests in by_scale.items():
        t0 = tests[0]
        busbw = []
        for t in tests:
            if t.expected is not None:
                rows = kit.curves[t.expected].rows
                busbw.append(f"{t.op} {rows[-1].busbw_GBps:.1f}")
        table.add_row(
            scale,
            t0.kind,
            str(t0.ranks),
            escape(hostlist_ranged(t0.hosts)),
            ", ".join(t.op for t in tests),
            ", ".join(busbw),
        )
    out.print(table)


def _results(kit: Path, results: Path, html: Path | None, as_json: bool) -> None:
    from topo.acceptance import plot_results, read_results
    from topo.commands.measured_logs import warn_lines, write_html_first

    check_outputs({"--html": html}, [kit / "manifest.json", kit / "design.json"])
    res = read_results(kit, results)
    warn_lines(res.warnings + res.unmatched)
    write_html_first(html, lambda: plot_results(res))
    if as_json:
        print_json(res.to_dict())
    else:
        _results_table(res)
    if html is not None:
        err.print(f"wrote {html}")
    if res.failed:
        raise typer.Exit(FAILED)
    if res.unreadable:
        raise typer.Exit(NOT_READ)


def _results_table(res: AcceptanceResult) -> None:
    table = Table(
        title=f"acceptance of {res.fabric}: {res.count('pass')} passed, {res.count('fail')} "
        f"failed, {res.count('no log')} without a log, {res.count('not read')} not read",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    columns = ("test", "ranks", "log", "busbw (GB/s)", "expected (GB/s)", "measured / expected")
    for name in (*columns, "RMS", "result"):
        table.add_column(name, justify="right" if name not in ("test", "log", "result") else "left")
    from topo.collective.explain import percent_off

    for r in res.results:
        if r.status == "no log":
            continue
        bad = r.status == "fail" or (r.status == "not read" and r.tool == "nccl-tests")
        style = "bold red" if bad else None
        table.add_row(
            r.id,
            str(r.ranks),
            escape(Path(r.log).name) if r.log else "",
            f"{r.measured_busbw_GBps:.2f}" if r.measured_busbw_GBps is not None else "",
            f"{r.expected_busbw_GBps:.2f}" if r.expected_busbw_GBps is not None else "",
            f"{r.median_ratio:.2f}" if r.median_ratio is not None else "",
            percent_off(r.score) if r.score is not None else "",
            r.status,
            style=style,
        )
    out.print(table)
    for r in res.unreadable:
        out.print(escape(f"{r.id}: not read: {r.verdict}"), style="bold red")
    for r in res.results:
        if r.status != "fail":
            continue
        out.print(escape(f"{r.id}: {r.verdict}"), style="bold red")
        if r.causes:
            best = r.causes[0]
            out.print(escape(f"  top cause: {best['description']} ({best['evidence']})"))
            out.print(escape(f"  check: {best['check']}"))
