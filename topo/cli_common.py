"""What every ``topo`` command shares: the consoles, one-line user errors, shared options and
the fabric-counts view.

Commands live in :mod:`topo.commands` (one module per verb); :mod:`topo.cli` assembles them into
the typer app.
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from enum import Enum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import networkx as nx
import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.models import OptionInfo

from topo import fabric as fabric_mod
from topo import files
from topo.errors import InfeasibleError, SpecError, TopoError
from topo.interrupts import terminate_on_interrupt

PIPE_WIDTH = 1_000_000
"""Columns of stdout when it is piped or redirected and COLUMNS is not set: wider than any
table, so a table prints at its natural width, no cell cut to ``…`` or folded onto a second
line (rich assumes 80 columns off a terminal). Tables never expand to the page, and text
lines are not wrapped (``soft_wrap``), so nothing pads to this width; a terminal keeps its
own width, and COLUMNS wins when set."""

_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else PIPE_WIDTH


class TableConsole(Console):
    """A console that never cuts a table's cell to ``…``.

    rich narrows a table wider than the console by taking width from its widest columns, then
    from all evenly, cropping cells. Here the columns are given their widths first
    (:func:`_fit`): each at most its widest cell, at least its longest word, the width taken
    from the columns with the most to spare; a table whose longest words do not fit prints at
    the width they need, its lines longer than the terminal's (which folds them, as it folds
    nccl-tests' own lines)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        need = max((_fit(self, o) for o in objects if isinstance(o, Table)), default=0)
        if need <= self.width or "width" in kwargs:
            super().print(*objects, **kwargs)
            return
        saved = self._width
        self.width = need
        try:
            super().print(*objects, **kwargs)
        finally:
            self._width = saved


def _fit(console: Console, table: Table) -> int:
    """Fix the widths of ``table``'s columns for ``console``, no cell cut (a column is at
    least its longest word wide); the table's width in characters."""
    from rich.measure import Measurement

    if console.width >= PIPE_WIDTH:  # piped: every table fits
        return 0
    wide = console.options.update_width(PIPE_WIDTH)
    whole = Measurement.get(console, wide, table)
    if whole.maximum <= console.width or any(c.width is not None for c in table.columns):
        return whole.maximum
    lows, widths = [], []
    for column in table.columns:
        cells = [c for c in (column.header, *column.cells) if c is not None]
        sizes = [Measurement.get(console, wide, c) for c in cells] or [Measurement(1, 1)]
        lows.append(max(m.minimum for m in sizes))
        widths.append(max(m.maximum for m in sizes))
    overhead = whole.minimum - sum(lows)  # padding and borders
    excess = sum(widths) + overhead - max(console.width, whole.minimum)
    while excess > 0:  # one character at a time from the column with the most to spare
        i = max(range(len(widths)), key=lambda k: widths[k] - lows[k])
        widths[i] -= 1
        excess -= 1
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
    return sum(widths) + overhead


out = TableConsole(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwinding as Ctrl-C does (the writers' cleanup runs), told apart at the exit:
    ``topo: terminated`` and status 143 (128 + SIGTERM, as a shell reports a process the
    signal ended), where Ctrl-C gives ``topo: interrupted`` and 130."""

    signal = signal.SIGTERM
    """The signal it stands for (:func:`topo.interrupts.redeliver_swallowed_interrupts`)."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def user_errors(fn: F) -> F:
    """Turn a TopoError into one line on stderr and exit status 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # SIGTERM (timeout, Slurm) unwinds like Ctrl-C, so half-written temporary files are
        # removed by the writers' cleanup.
        signal.signal(signal.SIGTERM, _terminate)
        terminate_on_interrupt()  # only the command line lets a signal end a solve at once
        try:
            return fn(*args, **kwargs)
        except TopoError as exc:
            print(f"topo: error: {error_line(exc, fn)}", file=sys.stderr)
            raise typer.Exit(1) from None
        except Terminated:
            print("topo: terminated", file=sys.stderr)
            raise typer.Exit(128 + signal.SIGTERM) from None
        except KeyboardInterrupt:
            print("topo: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def about(fabric: Path | str | None) -> Iterator[None]:
    """Name the fabric file before the message of an error that file's content causes inside
    the block: an :class:`~topo.errors.InfeasibleError` (a server with no NIC cabled to a
    switch, servers with no path between them) or a :class:`~topo.errors.SpecError` that
    names no option (a fabric a format cannot describe). ``fabric`` None (a default cluster)
    names nothing.
    """
    try:
        yield
    except (InfeasibleError, SpecError) as exc:
        if fabric is None or (isinstance(exc, SpecError) and exc.param is not None):
            raise
        raise exc.prefixed(f"{fabric}: ") from None


def option_flags(command: Callable[..., Any]) -> dict[str, str]:
    """Each option of a command function by its Python parameter name: its first long flag as
    the function declares it (``switch_ports`` -> ``--switch-ports``, ``routers_per_group``
    -> ``--routers-per-group`` of ``-a/--routers-per-group``; an option declared without
    names gets typer's ``--switch-ports``); the off switch of a boolean flag as ``no_`` and
    the name (``no_pxn`` -> ``--no-pxn`` of ``--pxn/--no-pxn``).

    Parameters
    ----------
    command : callable
        A command function whose options are declared ``Annotated[T, typer.Option(...)]``
        (wrapped by :func:`user_errors` or not).

    Returns
    -------
    dict of str to str
        Parameter name to flag, for the options only (arguments have no flag).

    Examples
    --------
    >>> from topo.commands.cost import plan
    >>> option_flags(plan)["max_oversubscription"]
    '--max-oversubscription'
    """
    flags = {}
    hints = typing.get_type_hints(inspect.unwrap(command), include_extras=True)
    for name, hint in hints.items():
        infos = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, OptionInfo)]
        if not infos:
            continue
        # Under Annotated, typer takes a first string that starts with "-" as a declaration.
        first = [i.default for i in infos if isinstance(i.default, str) and i.default[:1] == "-"]
        raw = [*first, *(decl for info in infos for decl in info.param_decls or ())]
        decls = [d for decl in raw for d in decl.split("/")]
        long = next((d for d in decls if d.startswith("--")), "--" + name.replace("_", "-"))
        flags[name] = long
        off = [d for decl in raw if "/" in decl for d in decl.split("/")[1:] if d[:2] == "--"]
        if off:
            flags["no_" + name] = off[0]
    return flags


LIBRARY_PARAMS = {
    "links": "fail_links",
    "switches": "fail_switches",
    "named": "fail",
    "time_limit_s": "time_limit",
    "num_sms": "kernel_sms",
}
"""Library parameters (:func:`topo.flow.fail`, :func:`topo.flow.damaged_bandwidth`, the LP's
``time_limit_s``, :func:`topo.moe.kernels.kernel_report`'s ``num_sms``) that a command passes
from an option of another name: an error naming ``links`` speaks of ``--fail-links``."""


def error_line(exc: TopoError, command: Callable[..., Any]) -> str:
    """The message of a library error, the Python parameters it names spelled as the options
    of the command that raised it (a parameter the command has no option for keeps its
    name).

    Parameters
    ----------
    exc : TopoError
        The error; its :attr:`~topo.errors.TopoError.names` are the parameters to spell.
    command : callable
        The command function it came from (see :func:`option_flags`).

    Returns
    -------
    str
        One line for ``topo: error: ...``.

    Examples
    --------
    >>> from topo.commands.bandwidth import bandwidth
    >>> error_line(TopoError("links -1 must be >= 0", param="links"), bandwidth)
    '--fail-links -1 must be >= 0'
    """
    flags = option_flags(command)
    return exc.render(lambda name: flags.get(name) or flags.get(LIBRARY_PARAMS.get(name, "")))


JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
"""How every ``--json`` is written: indented by two spaces, numpy scalars and arrays as
numbers and lists, dict keys that are numbers, booleans or None as text (as :func:`json.dumps`
writes them)."""


def json_default(obj: Any) -> str | list[Any]:
    """What orjson does not write itself: a path as its text, a named tuple as a list.

    Raises
    ------
    TypeError
        Any other type (orjson reports it as ``orjson.JSONEncodeError``, a ``TypeError``).
    """
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)  # type: ignore[return-value]
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def print_json(obj: Any) -> None:
    """Write ``obj`` to stdout as indented JSON, UTF-8, with a final newline.

    Written by orjson (``JSON_OPTIONS``): dict keys in their insertion order; floats as
    their shortest round-trip form (``0.1``, ``1e-7``, ``1.5e+22``); NaN and the infinities,
    float or numpy, as ``null`` (strict JSON has no other); dataclasses as objects, enums as
    their values, paths as text.

    Parameters
    ----------
    obj : Any
        What to write: dicts, lists, tuples, str, int (within 64 bits), float, bool, None,
        numpy scalars and arrays, dataclasses, enums, paths.

    Raises
    ------
    TypeError
        ``orjson.JSONEncodeError``: a value of another type, an integer past 64 bits, a
        circular reference.
    """
    text = orjson.dumps(obj, default=json_default, option=JSON_OPTIONS) + b"\n"
    sys.stdout.flush()  # (what rich or print wrote before, first)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # (a text-only stream)
        sys.stdout.write(text.decode())
    else:
        buffer.write(text)
        buffer.flush()


InputFabric = Annotated[
    Path,
    typer.Argument(
        help="A fabric JSON written by 'topo build -o' or 'topo import ... -o'.",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
]


# --------------------------------------------------------------------------- shared options


class Routing(str, Enum):
    optimal = "optimal"
    ecmp = "ecmp"
    dmodk = "dmodk"
    lft = "lft"


RoutingOpt = Annotated[
    Routing,
    typer.Option(
        "--routing",
        help="optimal: max concurrent flow (LP); ecmp: per-flow hashing over equal-cost paths; "
        "dmodk: InfiniBand destination-mod-k (OpenSM ftree); lft: the subnet manager's own "
        "forwarding tables (--lft, topo bandwidth only).",
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option("--seed", help="Seed of the random failures and of ECMP hashing.", min=0),
]
FlowsOpt = Annotated[
    int,
    typer.Option(
        "--flows-per-pair",
        help="ECMP: flows (RDMA queue pairs) per GPU pair, each hashed on its own.",
        min=1,
        max=1024,
    ),
]
PlanesUsedOpt = Annotated[
    int | None,
    typer.Option(
        "--planes-used",
        help="The software drives K of the fabric's planes (or an MRFT's rails): planes "
        "0..K-1, as NCCL_IB_HCA listing a subset or DeepEP V1 on one plane of a dual-plane "
        "CX8; the other planes' NIC cables carry nothing.",
    ),
]


def driven(G: nx.Graph, planes_used: int | None) -> nx.Graph:
    """``G`` as the software of ``--planes-used K`` sees it
    (:func:`topo.builders.planes_used.drive_planes`); ``G`` itself without the option."""
    if planes_used is None:
        return G
    from topo.builders.planes_used import drive_planes

    return drive_planes(G, planes_used)


GdrOpt = Annotated[
    bool,
    typer.Option(
        "--gdr/--no-gdr",
        help="GPUDirect RDMA (on by default). --no-gdr: NCCL stages network data through host "
        "memory (NCCL_NET_GDR_LEVEL=LOC, nvidia-peermem missing, or the NIC farther from the GPU "
        "than the level allows), halving each GPU-NIC PCIe link for network traffic.",
    ),
]


def with_gdr(G: nx.Graph, gdr: bool) -> nx.Graph:
    """``G`` as NCCL uses it with (``gdr``) or without GPUDirect RDMA
    (:func:`topo.builders.gdr.without_gdr`)."""
    if gdr:
        return G
    from topo.builders.gdr import without_gdr

    return without_gdr(G)


PxnOpt = Annotated[
    bool,
    typer.Option(
        "--pxn/--no-pxn",
        help="As routed (--routing ecmp|dmodk|lft): NCCL PXN, cross-rail/plane traffic first "
        "crosses NVLink to the NIC on the peer's rail or plane (on by default, as in NCCL); "
        "off: it leaves by its own NIC.",
    ),
]


def check_pxn(routing: str, pxn: bool) -> None:
    """Refuse ``--no-pxn`` where it would change nothing: the optimal all-to-all.

    Raises
    ------
    TopoError
        ``--no-pxn`` with ``--routing optimal``.
    """
    if not pxn and routing == "optimal":
        raise TopoError(
            "--no-pxn applies to --routing ecmp, dmodk or lft: the optimal all-to-all "
            "(maximum concurrent flow) may route through any NIC of a server, over NVLink"
        )


def check_routing_options(
    ctx: typer.Context, routing: str, random_failures: bool, seed_param: str = "seed"
) -> None:
    """Refuse ``--seed``, ``--flows-per-pair`` and the LP's options where they would change
    nothing.

    ``--seed`` seeds the random failures (``--fail-links``, ``--fail-switches``) and ECMP's
    hashing; ``--flows-per-pair`` splits a pair's traffic into flows that ECMP hashes on their
    own (D-mod-k routes them on one path, and says so). The optimal all-to-all (a maximum
    concurrent flow) and the subnet manager's tables (``lft``) read neither. ``--method``,
    ``--max-variables`` and ``--time-limit`` are the optimum's LP: as-routed rates solve none.

    Parameters
    ----------
    ctx : typer.Context
        The command's context (which options were given on the command line).
    routing : str
        The ``--routing`` value.
    random_failures : bool
        Whether random failures are drawn (a command that always draws them passes True).
    seed_param : str
        The Python name of the command's ``--seed`` parameter.

    Raises
    ------
    TopoError
        ``--seed`` given with neither random failures nor ECMP; ``--flows-per-pair`` given
        with ``--routing optimal`` or ``lft``; an LP option with any other routing.
    """
    if from_command_line(ctx, seed_param) and not random_failures and routing != "ecmp":
        raise TopoError(
            f"--seed has no effect with --routing {routing} and no random failures: it seeds "
            "--fail-links, --fail-switches and --routing ecmp (--fail NAME is not random)"
        )
    if from_command_line(ctx, "flows_per_pair") and routing not in ("ecmp", "dmodk"):
        raise TopoError(
            f"--flows-per-pair applies to --routing ecmp or dmodk, not {routing}: "
            + (
                "the optimal all-to-all is a maximum concurrent flow, not hashed flows"
                if routing == "optimal"
                else "the forwarding tables route each destination on one path"
            )
        )
    if routing != "optimal":
        refuse_given(
            ctx,
            ("method", "max_variables", "time_limit"),
            "--routing optimal (the LP)",
            f"--routing {routing} rates the flows on its own paths and solves no LP",
        )


FailLinksOpt = Annotated[
    int, typer.Option("--fail-links", help="Random cables to fail (seeded by --seed).", min=0)
]
FailSwitchesOpt = Annotated[
    int, typer.Option("--fail-switches", help="Random switches to fail (seeded by --seed).", min=0)
]
FailOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail",
        metavar="NAME",
        help="A switch (spine3) or link (leaf0--spine3) to fail, by its name in the fabric "
        "JSON; repeatable.",
    ),
]
MaxVariablesOpt = Annotated[
    int | None,
    typer.Option(
        "--max-variables",
        help="Largest exact LP to solve, in flow variables (bandwidth: 2,000,000; resilience: "
        "200,000 per trial): a memory and "
        "time guard; above it, certified lower and upper bounds are reported instead.",
        min=1,
    ),
]
TimeLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        help="Seconds HiGHS may spend on the exact LP (bandwidth: 120; resilience: 60 per "
        "trial); when reached, certified lower and upper bounds are reported instead.",
        min=0.1,
    ),
]


# --------------------------------------------------------------------------- switch and server
# The options of the switch and server model, each declared here once: its flag and what it
# holds. A verb whose help is the common one takes the alias (``SwitchPortsOpt``); a verb that
# says more (``with --compare``, values to search, ranks rather than GPUs) gives its own help
# to the option's function (``switch_ports_option(help)``), so the flag is spelled once.


def switch_option(
    help: str = "A switch of the catalog (topo catalog switch): qm9700, q3400, sn5600, ...; "
    "--switch-ports and --link-gbps win over it.",
) -> Any:
    """``--switch``: a switch of the catalog, by name."""
    return typer.Option("--switch", help=help)


def node_option(
    help: str = "A GPU server of the catalog (topo catalog node): a100, h100, h20, b200, "
    "gb200-nvl72, ...; the per-node options win over it.",
) -> Any:
    """``--node``: a GPU server of the catalog, by name."""
    return typer.Option("--node", help=help)


def switch_ports_option(help: str = "Switch radix (ports).") -> Any:
    """``--switch-ports``: the switch radix (or radixes to search)."""
    return typer.Option("--switch-ports", help=help)


def link_gbps_option(help: str = "Link rate, Gb/s (400 = 4x NDR).") -> Any:
    """``--link-gbps``: the port and cable rate, Gb/s (or rates to search)."""
    return typer.Option("--link-gbps", help=help)


def gpus_per_node_option(help: str = "GPUs per server.") -> Any:
    """``--gpus-per-node``: GPUs per server (ranks per server, for a collective)."""
    return typer.Option("--gpus-per-node", help=help)


def nics_per_node_option(help: str = "NICs per server.") -> Any:
    """``--nics-per-node``: NICs per server (the planes of an MPFT)."""
    return typer.Option("--nics-per-node", help=help)


def gpus_per_host_option(
    help: str = "GPUs per host when a server is an NVLink domain of several hosts (GB200 "
    "NVL72: 4, 18 compute trays a rack): Slurm, NCCL and nccl-tests then count hosts.",
    min: int | None = None,
    max: int | None = None,
) -> Any:
    """``--gpus-per-host``: GPUs per host, from ``min`` to ``max`` where given."""
    return typer.Option("--gpus-per-host", help=help, min=min, max=max)


def nvlink_GBps_option(help: str = "NVLink per GPU per direction, GB/s (H800: 200).") -> Any:
    """``--nvlink-GBps``: NVLink per GPU per direction, GB/s."""
    return typer.Option("--nvlink-GBps", help=help)


def pcie_GBps_option(help: str = "GPU-NIC PCIe per direction, GB/s (Gen5 x16: 64).") -> Any:
    """``--pcie-GBps``: PCIe per GPU-NIC link per direction, GB/s."""
    return typer.Option("--pcie-GBps", help=help)


def oversubscription_option(help: str = "Leaf down/up bandwidth ratio (1 = non-blocking).") -> Any:
    """``--oversubscription``: a leaf's down/up bandwidth ratio (or ratios to search)."""
    return typer.Option("--oversubscription", help=help)


SwitchOpt = Annotated[str | None, switch_option()]
NodeOpt = Annotated[str | None, node_option()]
SwitchPortsOpt = Annotated[int, switch_ports_option()]
LinkGbpsOpt = Annotated[float, link_gbps_option()]
GpusPerNodeOpt = Annotated[int, gpus_per_node_option()]
NicsPerNodeOpt = Annotated[int, nics_per_node_option()]
GpusPerHostOpt = Annotated[int | None, gpus_per_host_option()]
NvlinkGBpsOpt = Annotated[float, nvlink_GBps_option()]
PcieGBpsOpt = Annotated[float, pcie_GBps_option()]
OversubscriptionOpt = Annotated[float, oversubscription_option()]

# The MoE workload's options that topo moe and topo codesign share.
TokensPerGpuOpt = Annotated[
    int, typer.Option("--tokens-per-gpu", help="Tokens per GPU per micro-batch.", min=1)
]
MicroBatchesOpt = Annotated[
    int, typer.Option("--micro-batches", help="Micro-batches per layer.", min=1)
]
GatingSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the gating scores.", min=0)]


# --------------------------------------------------------------------------- fabric counts


FabricOutputOpt = Annotated[
    Path | None,
    typer.Option("-o", "--output", help="Write the fabric as node-link JSON.", dir_okay=False),
]
CountsJsonOpt = Annotated[bool, typer.Option("--json", help="Print the counts as one JSON object.")]


def check_fabric_output(option: str, output: Path | None) -> None:
    """Refuse a fabric output whose suffix says another format, before any work.

    Parameters
    ----------
    option : str
        The option that gave ``output``, as the user spells it (``"--output"``).
    output : Path or None
        The fabric file to be written; None (not given) passes.

    Raises
    ------
    TopoError
        ``"--output ft2.csv: a fabric is written as node-link JSON: name it .json, not .csv"``
        (:func:`topo.fabric.check_fabric_path`).
    """
    if output is None:
        return
    try:
        fabric_mod.check_fabric_path(output)
    except TopoError as exc:
        raise TopoError(f"{option} {exc}") from None


def emit_fabric(G: nx.Graph, summary: dict[str, Any], output: Path | None, as_json: bool) -> None:
    """Write the fabric (if asked), then print its counts as JSON or as a table.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (schema of :mod:`topo.fabric`).
    summary : dict
        Its counts (``topo.fabric.summarize(G).to_dict()``, and what an importer adds).
    output : Path or None
        Node-link JSON file to write (``-o``); "wrote FILE" goes to stderr.
    as_json : bool
        Print the counts as one JSON object (``--json``) instead of a table.
    """
    if output is not None:
        fabric_mod.save(G, output)
    if as_json:
        print_json(summary)
    else:
        summary_table(summary, title=str(G.graph.get("name", summary.get("family", ""))))
    if output is not None:
        err.print(f"wrote {output}")


SUMMARY_LABELS = {
    "unconnected_cas": "unconnected CAs",
    "ca_to_ca_cables": "CA-to-CA cables",
    "links": "links (switch-to-switch cables)",
    "endpoint_links": "endpoint links (NIC-to-switch cables)",
    "cables": "cables (all; what --fail-links draws from)",
    "alltoall_busbw_GBps": "all-to-all busbw (GB/s per GPU)",
    "alltoall_server_GBps": "a server's NICs (GB/s each way)",
    "alltoall_method": "all-to-all",
}
"""Row labels of :func:`summary_table` that are not the key with spaces for underscores:
InfiniBand's channel adapter is a CA, plural CAs; and the cable counts, whose bare names do not
say what is counted (the JSON keys stay as they are)."""


def summary_table(summary: dict[str, Any], title: str) -> None:
    """A fabric's counts (``topo.fabric.summarize(G).to_dict()`` and more) as a two-column
    table on stdout; each row is labelled by its key with spaces for underscores, or by
    :data:`SUMMARY_LABELS`."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in summary.items():
        if value is None:
            continue
        if isinstance(value, dict):
            value = (
                ", ".join(
                    f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items()
                )
                or "-"
            )
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        elif isinstance(value, float):
            value = f"{value:,.3f}"
        table.add_row(SUMMARY_LABELS.get(key, key.replace("_", " ")), str(value))
    out.print(table)


def from_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` (its Python parameter name) was given on the command line, not
    left at its default or taken from the environment."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def refuse_with(ctx: typer.Context, option: str, allowed: tuple[str, ...] = ()) -> None:
    """Refuse every option given on the command line beside ``option`` (a flag), except the
    parameters named in ``allowed``: they would be ignored.

    Raises
    ------
    TopoError
        Naming ``option`` and the options given with it.
    """
    flags = option_flags(ctx.command.callback) if ctx.command.callback else {}
    extra = [
        flags.get(p.name, p.name)
        for p in ctx.command.params
        if p.name
        and p.name not in allowed
        and from_command_line(ctx, p.name)
        and flags.get(p.name) != option
    ]
    if extra:
        raise TopoError(f"{option} takes no other options: {', '.join(extra)} would be ignored")


def refuse_given(ctx: typer.Context, params: tuple[str, ...], needs: str, why: str) -> None:
    """Refuse the options among ``params`` given on the command line: without ``needs`` they
    would be ignored.

    Parameters
    ----------
    ctx : typer.Context
        The command's context.
    params : tuple of str
        Python parameter names of the options that need ``needs``.
    needs : str
        What they apply to, as the message says it (``"--compare"``).
    why : str
        Why they change nothing here.

    Raises
    ------
    TopoError
        ``"--a, --b apply to NEEDS: WHY"`` for the options given.
    """
    flags = option_flags(ctx.command.callback) if ctx.command.callback else {}
    given = [flags.get(p, "--" + p.replace("_", "-")) for p in params if from_command_line(ctx, p)]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise TopoError(f"{', '.join(given)} {verb} to {needs}: {why}")


def _same_file(a: str | Path, b: str | Path) -> bool:
    """One file under two names: :func:`os.path.samefile` where both exist, else the same
    :func:`os.path.realpath`."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_input_as_output(
    option: str, output: Path | None, inputs: Iterable[str | Path | None]
) -> None:
    """Refuse an output that is one of the command's input files (it would be overwritten
    with what was read from it), before anything is read.

    The same file is found by :func:`os.path.samefile` (through links, hard links and
    ``./`` spellings); where either does not exist, by :func:`os.path.realpath`.

    Parameters
    ----------
    option : str
        The option that gave ``output``, as the user spells it (``"--output"``).
    output : Path or None
        The file to be written; None (not given) passes.
    inputs : iterable of str, Path or None
        The files the command reads (None entries, options not given, are skipped).

    Raises
    ------
    TopoError
        ``"--output c1.json is the input file c1.json: refusing to overwrite it"``.
    """
    if output is None:
        return
    for source in inputs:
        if source is None:
            continue
        if _same_file(output, source):
            raise TopoError(
                f"{option} {output} is the input file {source}: refusing to overwrite it; "
                "write to another file"
            )


def refuse_outputs_over_inputs(
    outputs: dict[str, Path | None], inputs: Iterable[str | Path | None]
) -> None:
    """Refuse an output (``-o``, ``--html``, ...) that is one of the command's input files, or
    that another of its outputs also names, before anything is read or solved.

    Each output is checked as :func:`refuse_input_as_output` checks one; two outputs naming
    one file (``--output a.html --html a.html``) would leave only the one written last.

    Parameters
    ----------
    outputs : dict of str to Path or None
        Each output option, as the user spells it (``"--html"``), to its file (None: not
        given, skipped).
    inputs : iterable of str, Path or None
        The files the command reads (None entries, options not given, are skipped).

    Raises
    ------
    TopoError
        ``"--html c1.json is the input file c1.json: refusing to overwrite it; ..."``, or
        ``"--html a.html is also --output a.html: give each output its own file"``.
    """
    sources = list(inputs)
    given = [(option, path) for option, path in outputs.items() if path is not None]
    for option, path in given:
        refuse_input_as_output(option, path, sources)
    for i, (option, path) in enumerate(given):
        for other, earlier in given[:i]:
            if _same_file(path, earlier):
                raise TopoError(
                    f"{option} {path} is also {other} {earlier}: give each output its own file"
                )


def check_outputs(
    outputs: dict[str, Path | None],
    inputs: Iterable[str | Path | None] = (),
    *,
    html: tuple[str, ...] = ("--html",),
    fabric: tuple[str, ...] = (),
) -> None:
    """Refuse every bad output of a command before anything is read, solved or started: each
    output as the writer at the end would refuse it (:func:`topo.files.check_writable`:
    ``-``, a folder, FIFO or device, a missing or read-only folder), a name whose suffix says
    another format, an output that is an input or another output
    (:func:`refuse_outputs_over_inputs`).

    Parameters
    ----------
    outputs : dict of str to Path or None
        Each output option, as the user spells it (``"--output"``), to its file (None: not
        given, skipped).
    inputs : iterable of str, Path or None
        The files the command reads.
    html : tuple of str
        The options among ``outputs`` that write an HTML page
        (:func:`topo.plot.html.check_html_path`).
    fabric : tuple of str
        The options among ``outputs`` that write a fabric (:func:`check_fabric_output`).

    Raises
    ------
    TopoError
        ``"--output -: cannot write: '-' is not read as standard output here; ..."``, and the
        messages of the checks named above.
    """
    refuse_outputs_over_inputs(outputs, inputs)
    for option, path in outputs.items():
        if path is None:
            continue
        try:
            files.check_writable(path)
        except TopoError as exc:
            raise exc.prefixed(f"{option} ") from None
        if option in fabric:
            check_fabric_output(option, path)
        if option in html:
            from topo.plot.html import check_html_path  # (plotly: only when a page is asked)

            try:
                check_html_path(path)
            except TopoError as exc:
                raise TopoError(f"{option} {exc}") from None


def progress_bar() -> Progress:
    """A transient progress bar on stderr: a description, the bar, done of all, time taken.
    Only on a terminal: into a file or a pipe rich would leave an empty line behind."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
