"""``topo collective``: NCCL-style collective costs on a fabric, in nccl-tests' columns."""

from __future__ import annotations

import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from topo.cli_common import (
    PlanesUsedOpt,
    about,
    check_outputs,
    driven,
    err,
    gpus_per_node_option,
    node_option,
    out,
    print_json,
    refuse_given,
    user_errors,
)
from topo.commands.measured_logs import (
    Op,
    log_tests,
    sizes_from_log,
    warn_lines,
    write_html_first,
)
from topo.errors import TopoError
from topo.wording import count

if TYPE_CHECKING:
    import networkx as nx

    from topo.collective import CollectiveReport, Comparison
    from topo.formats.nccl_tests_records import NcclTest

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

MAX_SIZE_BYTES = (1 << 63) - 1
"""Largest byte count accepted (8 EiB, a signed 64-bit count): a larger one cannot be a
message size, and its sweep would take thousands of steps before overflowing a float."""


class Arch(str, Enum):
    ampere = "ampere"
    hopper = "hopper"
    blackwell = "blackwell"


def parse_size(text: str, option: str) -> int:
    """A byte count as nccl-tests reads it: an integer (ASCII digits) with an optional K, M,
    G or T suffix (powers of 1024; ``B`` and ``iB`` after it are allowed), e.g. ``8``, ``32M``,
    ``8G``, ``8GiB``.

    Raises
    ------
    TopoError
        Not such a count, below 1, or above :data:`MAX_SIZE_BYTES`.
    """
    m = re.fullmatch(r"\s*([0-9]+)\s*([KMGTkmgt]?)(?:(?<=[KMGTkmgt])i)?[Bb]?\s*", text)
    if not m:
        raise TopoError(
            f"{option} must be a byte count such as 8, 32M or 8G (suffixes K, M, G, T: powers "
            f"of 1024), got {text!r}"
        )
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > len(str(MAX_SIZE_BYTES)):  # (before converting a thousand digits)
        value = MAX_SIZE_BYTES + 1
    else:
        value = int(digits) * _SUFFIX[m.group(2).upper()]
    if value < 1:
        raise TopoError(f"{option} must be >= 1 byte, got {text!r}")
    if value > MAX_SIZE_BYTES:
        shown = text.strip() if len(text.strip()) <= 24 else text.strip()[:20] + "..."
        raise TopoError(f"{option} must be at most {MAX_SIZE_BYTES:,} bytes (8 EiB), got {shown!r}")
    return value


@user_errors
def collective(
    ctx: typer.Context,
    fabric: Annotated[
        Path | None,
        typer.Argument(
            help="A fabric JSON (topo build/import -o). May be left out with --compare: the "
            "log is then held against a default H100 cluster of the log's size (8 GPUs and "
            "8 x 400G NICs per server, NVLink 4, non-blocking fat tree of 64-port switches).",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    op: Annotated[
        Op | None,
        typer.Option(
            "--op",
            help="The collective (default all_reduce; with --compare: every test of the log).",
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            help="Ranks N: the first N/G servers (default: every GPU, or the log's ranks).",
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        gpus_per_node_option(
            "Ranks per server G (default: a whole server, N if fewer, or the log's)."
        ),
    ] = None,
    min_bytes: Annotated[
        str, typer.Option("--min-bytes", help="Smallest size (nccl-tests -b), e.g. 8, 32M.")
    ] = "8",
    max_bytes: Annotated[
        str, typer.Option("--max-bytes", help="Largest size (nccl-tests -e), e.g. 8G.")
    ] = "8G",
    step_factor: Annotated[
        int, typer.Option("--step-factor", help="Size multiplier per step (nccl-tests -f).")
    ] = 2,
    datatype: Annotated[
        str, typer.Option("--datatype", help="nccl-tests data type (-d): float, double, half, ...")
    ] = "float",
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            help="A measured log: nccl-tests text (2.0 and later) or -J JSON, or NCCL "
            "Inspector records; measured against predicted busbw, size by size.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    fit: Annotated[
        bool,
        typer.Option("--fit", help="With --compare: least-squares alpha and beta of the log."),
    ] = False,
    constants: Annotated[
        Path | None,
        typer.Option(
            "--constants",
            help="TOML overriding the NCCL constants (same shape as topo/data/nccl-2.29.toml).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    arch: Annotated[
        Arch | None,
        typer.Option(
            "--arch",
            help="GPU generation for NCCL's per-arch tables (default: the fabric's GPU model "
            "where it records one, else the constants file's, hopper).",
        ),
    ] = None,
    calibrate: Annotated[
        Path | None,
        typer.Option(
            "--calibrate",
            help="A measured log (as --compare): fit node_network on its bandwidth-bound rows "
            "and a scale on the per-message costs on its latency-bound rows, each only where "
            "the log shows it (docs/collective.md); report the held-out error; with -o, write the "
            "fitted values as a cluster file for --constants.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="With --calibrate: the cluster TOML to write.", dir_okay=False
        ),
    ] = None,
    node: Annotated[
        str | None,
        node_option(
            "A server of the catalog (topo catalog node): its GPU architecture selects "
            "NCCL's per-arch constants (b200, gb200-nvl72: blackwell; h100: hopper)."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write busbw against size (log x) as offline HTML.", dir_okay=False
        ),
    ] = None,
    why: Annotated[
        bool,
        typer.Option(
            "--why",
            help="Also print every (algorithm, protocol) the tuner weighed, size by size: "
            "time (us) over busbw (GB/s), its choice (the least time) marked *.",
        ),
    ] = False,
    algo: Annotated[
        str | None,
        typer.Option(
            "--algo",
            metavar="LIST",
            help="Restrict the tuner's algorithms as NCCL_ALGO does: Ring, Tree, NVLS, "
            "NVLSTree, PAT, CollNetDirect, CollNetChain, comma-separated, not case sensitive; "
            "a leading ^ excludes; per function as NCCL 2.24+ reads it (ring;allreduce:tree). "
            "alltoall and sendrecv (send/recv) are not governed.",
        ),
    ] = None,
    proto: Annotated[
        str | None,
        typer.Option(
            "--proto",
            metavar="LIST",
            help="Restrict the tuner's protocols as NCCL_PROTO does: LL, LL128, Simple (same "
            "syntax as --algo).",
        ),
    ] = None,
    planes_used: PlanesUsedOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the rows as JSON objects.")
    ] = False,
) -> None:
    """Predict nccl-tests' table (time, algbw, busbw) on a fabric, with NCCL's algorithm choice."""
    from topo import fabric as fabric_mod
    from topo.collective import collective_table, compare_log, load_constants, plot_busbw

    _check_log_options(ctx, compare, calibrate, fit, output)
    if algo is not None or proto is not None:
        from topo.collective.choice import tuner_restriction

        tuner_restriction(algo, proto)  # a list NCCL would refuse: before any file is read
    if why and as_json:
        raise TopoError(
            "--why prints a table; with --json every row already carries every candidate the "
            "tuner weighed (its 'candidates' list)"
        )
    check_outputs({"--output": output, "--html": html}, [fabric, compare, calibrate, constants])
    if node is not None and arch is not None:
        raise TopoError(
            "give --arch or --node, not both: --node chooses NCCL's constants by its GPU "
            "architecture, which --arch names"
        )
    c = load_constants(constants)
    if node is not None and arch is None:
        arch = _node_arch(node)
    if calibrate is not None:
        _calibrate(fabric, calibrate, output, c, arch, as_json)
        return
    if fabric is None and compare is None:
        raise TopoError(
            "give a FABRIC.json (topo build ... -o FILE), or --compare LOG to hold a log "
            "against a default H100 cluster"
        )
    if compare is not None:
        tests, left_out = log_tests(compare, op, gpus, gpus_per_node)
        G = driven(
            fabric_mod.load(fabric)
            if fabric is not None
            else _default_cluster(tests, gpus, gpus_per_node),
            planes_used,
        )
        c = _arch_constants(c, arch, G)
        _warn_devices(compare, tests, G, c.arch, arch)
        comparisons = []
        for t in tests:
            with about(fabric), sizes_from_log(compare, [t], gpus, gpus_per_node):
                comparisons.append(
                    compare_log(
                        G,
                        t,
                        gpus=gpus,
                        gpus_per_node=gpus_per_node,
                        constants=c,
                        fit=fit,
                        algo=algo,
                        proto=proto,
                    )
                )
        warn_lines(left_out)
        _warn_send_recv([t.op for t in tests], algo, proto)
        _warn_assumed_arch(fabric, G, arch, c)
        write_html_first(html, lambda: plot_busbw(comparisons=comparisons))
        if as_json:
            print_json([cmp.to_dict() for cmp in comparisons])
        else:
            for cmp in comparisons:
                _compare_table(cmp, compare)
                if why:
                    _why_table(cmp.op, cmp.rows, _restricted(cmp.algo, cmp.proto), measured=True)
    else:
        assert fabric is not None
        G = driven(fabric_mod.load(fabric), planes_used)
        the_op = (op or Op.all_reduce).value
        c = _arch_constants(c, arch, G)
        with about(fabric):
            report = collective_table(
                G,
                the_op,
                gpus=gpus,
                gpus_per_node=gpus_per_node,
                min_bytes=parse_size(min_bytes, "--min-bytes"),
                max_bytes=parse_size(max_bytes, "--max-bytes"),
                step_factor=step_factor,
                dtype=datatype,
                constants=c,
                algo=algo,
                proto=proto,
            )
        _warn_send_recv([the_op], algo, proto)
        _warn_assumed_arch(fabric, G, arch, c)
        write_html_first(html, lambda: plot_busbw(report=report))
        if as_json:
            print_json(report.to_dict())
        else:
            _table(report)
            if why:
                _why_table(report.op, report.rows, _restricted(report.algo, report.proto))
    if html is not None:
        err.print(f"wrote {html}")


_SIZES = ("min_bytes", "max_bytes", "step_factor", "datatype")
"""The options of the predicted sweep (nccl-tests' -b, -e, -f, -d)."""


def _check_log_options(
    ctx: typer.Context,
    compare: Path | None,
    calibrate: Path | None,
    fit: bool,
    output: Path | None,
) -> None:
    """Refuse the options a run would ignore: --fit without --compare, -o without
    --calibrate; with a log, the sweep's options (a log has its own sizes and data type), and
    with --calibrate also those of a table (it fits every test of its log, draws nothing)."""
    if fit and compare is None:
        raise TopoError("--fit needs --compare LOG (it fits the measured times)")
    if output is not None and calibrate is None:
        raise TopoError("-o needs --calibrate LOG (it writes the calibrated cluster file)")
    if calibrate is not None and compare is not None:
        raise TopoError("give --compare LOG or --calibrate LOG, not both")
    if calibrate is not None:
        refuse_given(
            ctx,
            ("op", "gpus", "gpus_per_node", *_SIZES, "html", "why", "algo", "proto"),
            "a predicted table or --compare",
            "--calibrate fits every test of its log, at the log's ranks and sizes, and draws "
            "nothing",
        )
    elif compare is not None:
        refuse_given(
            ctx,
            _SIZES,
            "the predicted table (without --compare)",
            "--compare predicts the log's own sizes and data type",
        )


def _arch_constants(c: Any, arch: Arch | None, G: nx.Graph) -> Any:
    """The constants for ``--arch``, else for the fabric's GPU model, else as loaded."""
    from topo.collective.predict import fabric_constants

    return c.with_arch(arch.value) if arch is not None else fabric_constants(G, c)


def _warn_assumed_arch(fabric: Path | None, G: nx.Graph, arch: Arch | None, c: Any) -> None:
    """One ``topo: warning:`` line on stderr when FABRIC records no GPU model of a known
    generation and no ``--arch`` (or ``--node``) chose one: the numbers are of ``c.arch``, the
    constants file's (:func:`topo.collective.gpu_models.assumed_arch_note`). Called once the
    computation succeeded, so that a refused input stays one line; not for the default
    cluster of --compare without FABRIC, whose own note names its H100s."""
    from topo.collective.gpu_models import assumed_arch_note

    if fabric is None or arch is not None:
        return
    note = assumed_arch_note(G, c.arch)
    if note is not None:
        print(f"topo: warning: {fabric} {note}", file=sys.stderr)


def _warn_devices(log: Path, tests: Any, G: nx.Graph, model_arch: str, arch: Arch | None) -> None:
    """One ``topo: warning:`` line on stderr when the log ran on other GPUs than the model's
    (:func:`topo.collective.log_devices.device_mismatch`); the numbers stay as they are."""
    from topo.collective.log_devices import device_mismatch

    line = device_mismatch(tests, G, model_arch, arch.value if arch is not None else None)
    if line is not None:
        print(f"topo: warning: {log}: {line}", file=sys.stderr)


def _calibrate(
    fabric: Path | None,
    log: Path,
    output: Path | None,
    c: Any,
    arch: Arch | None,
    as_json: bool,
) -> None:
    """``--calibrate LOG [-o cluster.toml]``: fit each constant on the rows that show it,
    report the guard and the held-out error; write the fitted values (an error if none)."""
    from topo import fabric as fabric_mod
    from topo.collective.calibrate import calibrate, cluster_toml
    from topo.files import write_atomic

    tests, left_out = log_tests(log, None, None, None)
    G = fabric_mod.load(fabric) if fabric is not None else _default_cluster(tests)
    c = _arch_constants(c, arch, G)
    _warn_devices(log, tests, G, c.arch, arch)
    with about(fabric), sizes_from_log(log, tests, None, None):
        result = calibrate(G, tests, c)
    warn_lines(left_out)
    text = cluster_toml(result, log) if output is not None else None  # (refuses a bare fit)
    _warn_assumed_arch(fabric, G, arch, c)
    if output is not None and text is not None:
        write_atomic(output, text)
    if as_json:
        print_json(result.to_dict())
    else:
        _calibration_table(result, log)
    if output is not None:
        err.print(f"wrote {output}")


def _calibration_table(result: Any, log: Path) -> None:
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


DEFAULT_CLUSTER: dict[str, Any] = dict(
    family="ft2",
    switch_ports=64,
    link_gbps=400.0,
    gpus_per_node=8,
    nics_per_node=8,
    nvlink_GBps=450.0,
    pcie_GBps=64.0,
)
"""The cluster a log is held against when no FABRIC is given: H100 SXM servers (8 GPUs,
NVLink 4 at 18 x 25 GB/s per direction through NVSwitch, 8 ConnectX-7 400G NICs on PCIe Gen5
x16), on a non-blocking two-layer fat tree of 64-port 400G switches; as
examples/h100-10node.toml."""


def _default_cluster(
    tests: list[NcclTest], gpus: int | None = None, gpus_per_node: int | None = None
) -> nx.Graph:
    """Build :data:`DEFAULT_CLUSTER` with as many servers as the log's largest test used, or
    as ``--gpus`` at ``--gpus-per-node`` (default 8) need where that is more."""
    from topo.builders import build

    servers = max((max(len(t.hosts), t.nodes or 0) for t in tests), default=0) or 1
    if gpus is not None and gpus > 0:
        per = gpus_per_node if gpus_per_node and gpus_per_node > 0 else 8
        servers = max(servers, -(-gpus // per))
    per_server: int = DEFAULT_CLUSTER["gpus_per_node"]
    err.print(
        f"no FABRIC given: holding the log against {servers} H100 server(s) of 8 GPUs and "
        "8 x 400G NICs, NVLink 450 GB/s, on a non-blocking fat tree (pass FABRIC.json to choose)"
    )
    spec = dict(DEFAULT_CLUSTER)
    family = spec.pop("family")
    G = build(family, gpus=per_server * servers, **spec)
    G.graph["name"] = f"default H100 cluster, {servers} x {per_server} GPUs"
    return G


def _rates_line(rates: dict[str, Any]) -> str:
    parts = [
        f"NVLink {rates['nvlink_per_gpu_GBps']:.1f} GB/s per GPU "
        f"({rates['nvlink_effective_GBps']:.1f} as NCCL gets it)"
    ]
    if "ring_method" in rates:  # across servers
        ring = (
            f"ring {rates['ring_per_server_GBps']:.1f} GB/s per server "
            f"(bottleneck {', '.join(rates['ring_bottleneck']) or '-'})"
            if rates["ring_per_server_GBps"]
            else "ring NIC-bound only (flow LP refused)"
        )
        parts.append(
            f"{rates['nics_per_node']} NICs x {rates['nic_GBps']:.1f} GB/s per server in use, "
            f"{ring}, server ceiling {rates['server_ceiling_GBps']:.1f} GB/s"
        )
    if rates.get("alltoall_internode_per_gpu_GBps"):
        parts.append(
            f"all-to-all {rates['alltoall_internode_per_gpu_GBps']:.2f} GB/s per GPU across servers"
        )
    return "; ".join(parts)


def _restricted(algo: str | None, proto: str | None) -> str:
    """``NCCL_ALGO=... NCCL_PROTO=...`` for a title: the restriction a report records."""
    parts = [f"NCCL_ALGO={algo}" if algo is not None else ""]
    parts.append(f"NCCL_PROTO={proto}" if proto is not None else "")
    return " ".join(p for p in parts if p)


def _warn_send_recv(ops: list[str], algo: str | None, proto: str | None) -> None:
    """One ``topo: warning:`` line when --algo or --proto is given for alltoall or sendrecv,
    which NCCL runs as send/recv: neither variable governs them (the rows are NCCL's choice)."""
    from topo.collective.choice import TUNED_OPS

    given = [f for f, v in (("--algo", algo), ("--proto", proto)) if v is not None]
    p2p = [o for o in dict.fromkeys(ops) if o not in TUNED_OPS]
    if given and p2p:
        verb = "does" if len(given) == 1 else "do"
        it, its = ("it", "its") if len(p2p) == 1 else ("them", "their")
        print(
            f"topo: warning: {' and '.join(given)} {verb} not govern {' and '.join(p2p)}: NCCL "
            f"runs {it} as send/recv, whose protocol NCCL_ALGO and NCCL_PROTO leave alone (LL up "
            f"to NCCL_P2P_LL_THRESHOLD per channel, else Simple); {its} rows are NCCL's own "
            "choice",
            file=sys.stderr,
        )


EXPECTED_CAPTION = (
    "time, algbw, busbw: expected (NCCL's per-message costs, fitted: docs/collective.md); "
    "ceiling: the busbw bound the fabric allows NCCL's tuner"
)


def _table(rep: CollectiveReport) -> None:
    restricted = _restricted(rep.algo, rep.proto)
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
        sizes = f"{noted[0].size_bytes}" + (f" to {noted[-1].size_bytes}" if len(noted) > 1 else "")
        out.print(f"note ({sizes} B): {noted[0].busbw_note}")


def _compare_table(cmp: Comparison, log: Path) -> None:
    restricted = _restricted(cmp.algo, cmp.proto)
    title = (
        f"{cmp.op}: {log.name} against the model ({count(cmp.gpus, 'GPU')}, "
        f"{count(cmp.nodes, 'node')} x {cmp.gpus_per_node}"
        f"{', ' + restricted if restricted else ''})"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for name in (
        "size (B)",
        "time (us)",
        "expected (us)",
        "busbw (GB/s)",
        "expected (GB/s)",
        "ratio",
        "ceiling (GB/s)",
    ):
        table.add_column(name, justify="right")
    table.add_column("model's choice")
    for r in cmp.rows:
        table.add_row(
            str(r.size_bytes),
            f"{r.measured_time_us:.1f}",
            f"{r.predicted_time_us:.1f}",
            f"{r.measured_busbw_GBps:.2f}",
            f"{r.predicted_busbw_GBps:.2f}",
            f"{r.ratio:.2f}",
            f"{r.ceiling_busbw_GBps:.2f}",
            f"{r.algorithm}/{r.protocol}",
        )
    out.print(table)
    style = "bold red" if cmp.far_below else "bold"
    for b in cmp.bands:
        out.print(f"{cmp.op}, {b['band']} ({b['sizes']}): {b['verdict']}", style=style)
    out.print(f"{cmp.op}: {cmp.verdict}", style=style)
    if cmp.fit is not None:
        f = cmp.fit
        out.print(
            f"fit over {f.points} sizes: alpha {f.alpha_us:.1f} us, busbw {f.busbw_GBps:.2f} GB/s, "
            f"residual {f.residual * 100:.1f}% RMS (model: latency {cmp.model_latency_us:.1f} us)"
        )


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


def _why_table(op: str, rows: list[Any], restricted: str, measured: bool = False) -> None:
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
    for r in rows:
        cells = {(k["algorithm"], k["protocol"]): k for k in r.candidates}
        row = [str(r.size_bytes)]
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


def _node_arch(node: str) -> Arch:
    """The GPU architecture of catalog server ``node`` (``--node``), as ``--arch`` takes it."""
    from topo.catalog import load_catalog

    return Arch(str(load_catalog().get("node", node).get("arch")))


__all__ = [
    "DEFAULT_CLUSTER",
    "EXPECTED_CAPTION",
    "MAX_SIZE_BYTES",
    "Arch",
    "Op",
    "collective",
    "log_tests",
    "nccl_tests_number",
    "parse_size",
    "sizes_from_log",
    "warn_lines",
    "write_html_first",
]
