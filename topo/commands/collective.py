"""``topo collective``: NCCL-style collective costs on a fabric, in nccl-tests' columns.

The options and the library calls; the tables it prints are
:mod:`topo.commands.collective_tables`, and the reading of a measured log it shares with
``topo explain`` and ``topo acceptance`` is :mod:`topo.commands.measured_logs` (both
importable from here too).
"""

from __future__ import annotations

import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from topo.cli_common import (
    GdrOpt,
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
    with_gdr,
)
from topo.commands.collective_tables import (
    EXPECTED_CAPTION,
    calibration_table,
    compare_table,
    nccl_tests_number,
    report_table,
    restriction_title,
    why_table,
)
from topo.commands.measured_logs import (
    Op,
    log_tests,
    sizes_from_log,
    warn_lines,
    write_html_first,
)
from topo.errors import TopoError

if TYPE_CHECKING:
    import networkx as nx

    from topo.formats.nccl_tests_records import NcclTest

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

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
        Not such a count, below 1, or above
        :data:`topo.collective.report.MAX_SWEEP_BYTES` (1 TiB, the reason in the message).
    """
    from topo.collective.report import MAX_SWEEP_BYTES, MAX_SWEEP_WHY

    m = re.fullmatch(r"\s*([0-9]+)\s*([KMGTkmgt]?)(?:(?<=[KMGTkmgt])i)?[Bb]?\s*", text)
    if not m:
        raise TopoError(
            f"{option} must be a byte count such as 8, 32M or 8G (suffixes K, M, G, T: powers "
            f"of 1024), got {text!r}"
        )
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > len(str(MAX_SWEEP_BYTES)):  # (before converting a thousand digits)
        value = MAX_SWEEP_BYTES + 1
    else:
        value = int(digits) * _SUFFIX[m.group(2).upper()]
    if value < 1:
        raise TopoError(f"{option} must be >= 1 byte, got {text!r}")
    if value > MAX_SWEEP_BYTES:
        shown = text.strip() if len(text.strip()) <= 24 else text.strip()[:20] + "..."
        raise TopoError(
            f"{option} must be at most {MAX_SWEEP_BYTES:,} bytes ({MAX_SWEEP_WHY}), got {shown!r}"
        )
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
            case_sensitive=False,
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
        str, typer.Option("--max-bytes", help="Largest size (nccl-tests -e), e.g. 8G; at most 1T.")
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
        typer.Option(
            "--fit",
            help="With --compare: the log's least-squares alpha (µs) and beta, the bus "
            "bandwidth its sizes tend to (GB/s).",
        ),
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
    gdr: GdrOpt = True,
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
        _calibrate(fabric, calibrate, output, c, arch, as_json, gdr)
        return
    if fabric is None and compare is None:
        raise TopoError(
            "give a FABRIC.json (topo build ... -o FILE), or --compare LOG to hold a log "
            "against a default H100 cluster"
        )
    if compare is not None:
        tests, left_out = log_tests(compare, op, gpus, gpus_per_node)
        G = with_gdr(
            driven(
                fabric_mod.load(fabric)
                if fabric is not None
                else _default_cluster(tests, gpus, gpus_per_node),
                planes_used,
            ),
            gdr,
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
            print_json([{**cmp.to_dict(), "gdr": gdr} for cmp in comparisons])
        else:
            _say_gdr(gdr)
            ops = [cmp.op for cmp in comparisons]
            for cmp in comparisons:
                compare_table(cmp, compare, at_line=ops.count(cmp.op) > 1)
                if why:
                    why_table(
                        cmp.op,
                        [r for r, _ in cmp.shown],
                        restriction_title(cmp.algo, cmp.proto),
                        measured=True,
                    )
    else:
        assert fabric is not None
        G = with_gdr(driven(fabric_mod.load(fabric), planes_used), gdr)
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
        _warn_gdr_unused(gdr, report.nodes)
        if as_json:
            print_json({**report.to_dict(), "gdr": gdr})
        else:
            report_table(report)
            _say_gdr(gdr)
            if why:
                why_table(report.op, report.rows, restriction_title(report.algo, report.proto))
    if html is not None:
        err.print(f"wrote {html}")


def _say_gdr(gdr: bool) -> None:
    """Under a table computed with ``--no-gdr``, the line that says so."""
    if not gdr:
        out.print(
            "GPUDirect RDMA off (--no-gdr): network data staged through host memory, each "
            "GPU-NIC PCIe link at half its rate for it (docs/collective.md)"
        )


def _warn_gdr_unused(gdr: bool, nodes: int) -> None:
    """``--no-gdr`` on one server: nothing crosses a NIC, so nothing changes; say so."""
    if not gdr and nodes <= 1:
        err.print(
            "topo: warning: --no-gdr changes nothing here: the ranks are on one server, and "
            "GPUDirect RDMA only carries network traffic"
        )


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
    gdr: bool = True,
) -> None:
    """``--calibrate LOG [-o cluster.toml]``: fit each constant on the rows that show it,
    report the guard and the held-out error; write the fitted values (an error if none);
    the fabric without GPUDirect RDMA unless ``gdr``."""
    from topo import fabric as fabric_mod
    from topo.collective.calibrate import calibrate, cluster_toml
    from topo.files import write_atomic

    tests, left_out = log_tests(log, None, None, None)
    unranked = next((t for t in tests if t.ranks is None), None)
    if unranked is not None:
        raise TopoError(
            f"{log}:{unranked.line}: the {unranked.op}_perf test lists no ranks (no '#  Rank' "
            "lines, devices or Inspector n_ranks): --calibrate fits each test at its own ranks "
            "and servers, so it cannot calibrate on it"
        )
    G = with_gdr(
        fabric_mod.load(fabric) if fabric is not None else _default_cluster(tests), gdr
    )
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
        calibration_table(result, log)
    if output is not None:
        err.print(f"wrote {output}")


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


def _node_arch(node: str) -> Arch:
    """The GPU architecture of catalog server ``node`` (``--node``), as ``--arch`` takes it."""
    from topo.catalog import load_catalog

    return Arch(str(load_catalog().get("node", node).get("arch")))


__all__ = [
    "DEFAULT_CLUSTER",
    "EXPECTED_CAPTION",
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
