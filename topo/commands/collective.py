"""``topo collective``: NCCL-style collective costs on a fabric, in nccl-tests' columns."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from topo.cli_common import (
    about,
    check_outputs,
    err,
    out,
    print_json,
    refuse_given,
    user_errors,
)
from topo.errors import TopoError
from topo.wording import count

if TYPE_CHECKING:
    import networkx as nx

    from topo.collective import CollectiveReport, Comparison
    from topo.formats.nccl_tests import NcclTest

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

MAX_SIZE_BYTES = (1 << 63) - 1
"""Largest byte count accepted (8 EiB, a signed 64-bit count): a larger one cannot be a
message size, and its sweep would take thousands of steps before overflowing a float."""


class Op(str, Enum):
    all_reduce = "all_reduce"
    all_gather = "all_gather"
    reduce_scatter = "reduce_scatter"
    alltoall = "alltoall"
    broadcast = "broadcast"
    reduce = "reduce"
    sendrecv = "sendrecv"


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
        typer.Option(
            "--gpus-per-node",
            help="Ranks per server G (default: a whole server, N if fewer, or the log's).",
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
            help="A real nccl-tests log (text, or a -J JSON report): measured against "
            "predicted busbw, size by size.",
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
            help="A real nccl-tests log: fit what the model leaves unknown (docs/collective.md) "
            "and report leave-one-op-out error; with -o, write the cluster file.",
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
        typer.Option(
            "--node",
            help="A server of the catalog (topo catalog node): its GPU architecture selects "
            "NCCL's per-arch constants (b200, gb200-nvl72: blackwell; h100: hopper).",
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write busbw against size (log x) as offline HTML.", dir_okay=False
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the rows as JSON objects.")
    ] = False,
) -> None:
    """Predict nccl-tests' table (time, algbw, busbw) on a fabric, with NCCL's algorithm choice."""
    from topo import fabric as fabric_mod
    from topo.collective import collective_table, compare_log, load_constants, plot_busbw

    _check_log_options(ctx, compare, calibrate, fit, output)
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
        tests = _log_tests(compare, op, gpus, gpus_per_node)
        G = fabric_mod.load(fabric) if fabric is not None else _default_cluster(tests)
        c = _arch_constants(c, arch, G)
        _warn_devices(compare, tests, G, c.arch, arch)
        with about(fabric):
            comparisons = [
                compare_log(G, t, gpus=gpus, gpus_per_node=gpus_per_node, constants=c, fit=fit)
                for t in tests
            ]
        _warn_assumed_arch(fabric, G, arch, c)
        _write_html(html, lambda: plot_busbw(comparisons=comparisons))
        if as_json:
            print_json([cmp.to_dict() for cmp in comparisons])
        else:
            for cmp in comparisons:
                _compare_table(cmp, compare)
    else:
        assert fabric is not None
        G = fabric_mod.load(fabric)
        c = _arch_constants(c, arch, G)
        with about(fabric):
            report = collective_table(
                G,
                (op or Op.all_reduce).value,
                gpus=gpus,
                gpus_per_node=gpus_per_node,
                min_bytes=parse_size(min_bytes, "--min-bytes"),
                max_bytes=parse_size(max_bytes, "--max-bytes"),
                step_factor=step_factor,
                dtype=datatype,
                constants=c,
            )
        _warn_assumed_arch(fabric, G, arch, c)
        _write_html(html, lambda: plot_busbw(report=report))
        if as_json:
            print_json(report.to_dict())
        else:
            _table(report)
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
            ("op", "gpus", "gpus_per_node", *_SIZES, "html"),
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
    from topo.collective.fabric_rates import gpu_arch

    chosen = arch.value if arch is not None else gpu_arch(G)
    return c.with_arch(chosen) if chosen else c


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
    """``--calibrate LOG [-o cluster.toml]``: fit the unknowns, report leave-one-op-out error."""
    from topo import fabric as fabric_mod
    from topo.collective.calibrate import calibrate, cluster_toml
    from topo.fabric import write_atomic

    tests = _log_tests(log, None, None, None)
    G = fabric_mod.load(fabric) if fabric is not None else _default_cluster(tests)
    c = _arch_constants(c, arch, G)
    _warn_devices(log, tests, G, c.arch, arch)
    with about(fabric):
        result = calibrate(G, tests, c)
    _warn_assumed_arch(fabric, G, arch, c)
    if output is not None:
        write_atomic(output, cluster_toml(result, log))
    if as_json:
        print_json(result.to_dict())
    else:
        _calibration_table(result, log)
    if output is not None:
        err.print(f"wrote {output}")


def _calibration_table(result: Any, log: Path) -> None:
    out.print(
        f"calibrated on {log.name}: node_network = {result.node_network:.3f}, "
        f"step_latency_us = {result.step_latency_us:.2f} (fitted on every op of the log)"
    )
    table = Table(
        title="leave-one-op-out: fitted on the other ops, predicted on this one",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for name in ("op", "node_network", "step latency (us)", "rows", "median |err|", "max |err|"):
        table.add_column(name, justify="right")
    for h in result.held_out:
        table.add_row(
            h.op,
            f"{h.node_network:.3f}",
            f"{h.step_latency_us:.2f}",
            str(h.rows),
            f"{h.median_abs_error * 100:.1f}%",
            f"{h.max_abs_error * 100:.1f}%",
        )
    out.print(table)


def _log_tests(
    log: Path, op: Op | None, gpus: int | None, gpus_per_node: int | None
) -> list[NcclTest]:
    """The tests of an nccl-tests log to compare (of ``op`` if given), checked against the
    --gpus and --gpus-per-node given."""
    from topo.formats.nccl_tests import validated_tests
    from topo.formats.nccl_tests_json import read_nccl_tests_any

    tests = read_nccl_tests_any(log)
    if op is not None:
        found = ", ".join(t.op for t in tests)
        tests = [t for t in tests if t.op == op.value]
        if not tests:
            raise TopoError(f"{log}: no {op.value}_perf test in the log (it has {found})")
    tests, warnings = validated_tests(tests, log)
    for line in warnings:
        print(f"topo: warning: {line}", file=sys.stderr)
    for t in tests:
        if gpus is not None and t.ranks is not None and gpus != t.ranks:
            raise TopoError(
                f"{log}: --gpus {gpus} differs from the {t.ranks} ranks of its "
                f"{t.op}_perf test: a log is compared with the model at its own size"
            )
        if gpus_per_node is not None and t.gpus_per_node not in (None, gpus_per_node):
            raise TopoError(
                f"{log}: --gpus-per-node {gpus_per_node} differs from the "
                f"{t.gpus_per_node} ranks per host of its {t.op}_perf test"
            )
    return tests


def _write_html(path: Path | None, figure: Callable[[], Any]) -> None:
    """Write ``figure()`` to ``path`` as offline HTML, before anything goes to stdout (a path
    that cannot be written is then an error with no half-printed table)."""
    if path is not None:
        from topo.plot import write_html

        write_html(figure(), path)


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


def _default_cluster(tests: list[NcclTest]) -> nx.Graph:
    """Build :data:`DEFAULT_CLUSTER` with as many servers as the log's largest test used."""
    from topo.builders import build

    servers = max((len(t.hosts) for t in tests), default=0) or 1
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


def _table(rep: CollectiveReport) -> None:
    title = (
        f"{rep.op} on {rep.fabric}: {count(rep.gpus, 'GPU')}, {count(rep.nodes, 'node')} x "
        f"{rep.gpus_per_node} "
        f"(NCCL {rep.nccl_release} model)"
    )
    table = Table(
        title=title,
        title_justify="left",
        caption=_rates_line(rep.rates),
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
    ):
        table.add_column(name, justify="right")
    table.add_column("algorithm/protocol")
    table.add_column("bound")
    notes = any(r.busbw_note for r in rep.rows)
    if notes:
        table.add_column("note")
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
            f"{r.algorithm}/{r.protocol}",
            r.bound,
            *([r.busbw_note] if notes else []),
        )
    out.print(table)


def _compare_table(cmp: Comparison, log: Path) -> None:
    title = (
        f"{cmp.op}: {log.name} against the model ({count(cmp.gpus, 'GPU')}, "
        f"{count(cmp.nodes, 'node')} x {cmp.gpus_per_node})"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("size (B)", "time (us)", "model (us)", "busbw (GB/s)", "model (GB/s)", "ratio"):
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
            f"{r.algorithm}/{r.protocol}",
        )
    out.print(table)
    style = "bold red" if cmp.far_below else "bold"
    out.print(f"{cmp.op}: {cmp.verdict}", style=style)
    if cmp.fit is not None:
        f = cmp.fit
        out.print(
            f"fit over {f.points} sizes: alpha {f.alpha_us:.1f} us, busbw {f.busbw_GBps:.2f} GB/s, "
            f"residual {f.residual * 100:.1f}% RMS (model: latency {cmp.model_latency_us:.1f} us)"
        )


def _node_arch(node: str) -> Arch:
    """The GPU architecture of catalog server ``node`` (``--node``), as ``--arch`` takes it."""
    from topo.catalog import load_catalog

    return Arch(str(load_catalog().get("node", node).get("arch")))
