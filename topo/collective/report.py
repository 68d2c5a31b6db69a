"""The nccl-tests table a fabric allows over a sweep of sizes, and its busbw plot.

:func:`collective_table` sweeps sizes as nccl-tests does (``-b``, ``-e``, ``-f``) and returns
one row per size with the tuner's choice and every candidate it weighed (restricted as NCCL_ALGO
and NCCL_PROTO restrict it, when given); :func:`plot_busbw` draws the model's busbw curve and,
with comparisons, the measured ones.

One size's row is :func:`topo.collective.predict.predict_row`; how a measured log compares with
the model (:func:`compare_log`, :func:`fit_alpha_beta`, :func:`size_bands`) is
:mod:`topo.collective.compare`. Their public names are importable from here too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx

from topo.collective.choice import tuner_restriction
from topo.collective.compare import (
    AGREES,
    FAR_BELOW,
    SIZE_BANDS,
    CompareRow,
    Comparison,
    Fit,
    compare_log,
    fit_alpha_beta,
    size_bands,
)
from topo.collective.constants import NcclConstants
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.collective.model import OPS, TOTAL_SIZE_OPS
from topo.collective.predict import (
    GIB,
    MIB,
    Row,
    busbw_note,
    fabric_constants,
    link_rate_Bps,
    predict_row,
    rates_summary,
)
from topo.errors import TopoError

TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "half": 2,
    "bfloat16": 2,
    "float": 4,
    "int32": 4,
    "uint32": 4,
    "double": 8,
    "int64": 8,
    "uint64": 8,
}
"""nccl-tests' data types and their sizes (B)."""

MAX_SWEEP_BYTES = 1 << 40
"""Largest size of a sweep (B), nccl-tests' ``-b`` and ``-e``: 1 TiB (1,099,511,627,776 B).

nccl-tests allocates a send and a receive buffer of the largest size on every GPU and lowers
``-e`` to (GPU memory - reserve - 1 GiB) / 2, or / 3 when it checks results (nccl-tests 2.19.6,
``src/common.cu``: "Reducing maxBytes to ... due to memory limitation"), so a size past 1 TiB
needs a GPU of 2 TiB. Shipping GPUs hold at most 288 GB (NVIDIA B300, AMD MI355X: runs up to
144 GB) and the largest announced 1 TB (NVIDIA Rubin Ultra, HBM4e): 1 TiB leaves room for them
and refuses the sizes no GPU can run (an exabyte sweep is a typo)."""

MAX_SWEEP_WHY = "1 TiB: nccl-tests caps -e at half a GPU's memory, and no GPU has 2 TiB"
"""The reason :data:`MAX_SWEEP_BYTES` is the limit, as error messages give it."""


@dataclass(frozen=True)
class CollectiveReport:
    """A predicted nccl-tests table (see :func:`collective_table`).

    ``algo`` and ``proto`` are the NCCL_ALGO and NCCL_PROTO lists the tuner's choice was
    restricted to, as given; None when not given, or for alltoall and sendrecv, which neither
    governs.
    """

    op: str
    fabric: str
    gpus: int
    nodes: int
    gpus_per_node: int
    nccl_release: str
    constants: str
    rates: dict[str, Any]
    rows: list[Row]
    algo: str | None = None
    proto: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``rows`` is a list of objects with nccl-tests' columns."""
        return asdict(self)


def _count(op: str, size: int, n: int, elt: int) -> int:
    # nccl-tests (src/*.cu, *GetCollByteCount): per-rank chunks of the total-size ops are
    # rounded down to 16-byte multiples; the others keep size // element.
    if op in TOTAL_SIZE_OPS:
        align = max(1, 16 // elt)
        return ((size // elt) // n) // align * align
    return size // elt


def collective_table(
    G: nx.Graph,
    op: str,
    *,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    min_bytes: int = 8,
    max_bytes: int = 8 * GIB,
    step_factor: int = 2,
    dtype: str = "float",
    constants: NcclConstants | None = None,
    algo: str | None = None,
    proto: str | None = None,
    rates: FabricRates | None = None,
) -> CollectiveReport:
    """Predict nccl-tests' table for ``op`` on a fabric, size by size.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema in :mod:`topo.fabric`).
    op : str
        One of :data:`topo.collective.model.OPS`.
    gpus, gpus_per_node : int, optional
        Ranks N and ranks per server G: the first N/G servers (default: every GPU).
    min_bytes, max_bytes : int
        Sweep limits (B), as nccl-tests' ``-b`` / ``-e``: from 1 to :data:`MAX_SWEEP_BYTES`
        (1 TiB).
    step_factor : int
        Multiply the size by this each step (``-f``), >= 2.
    dtype : str
        nccl-tests data type (sizes are rounded to whole elements, 16-byte aligned, and for
        all_gather, reduce_scatter and alltoall to n chunks, as nccl-tests does).
    constants : NcclConstants, optional
        Default: :func:`fabric_constants` (the file's, for the fabric's GPU generation).
    algo, proto : str, optional
        Restrict the tuner's choice as NCCL_ALGO and NCCL_PROTO do (e.g. ``"ring"``,
        ``"^tree"``, ``"Simple"``; :func:`topo.collective.choice.tuner_restriction`); they do
        not govern alltoall and sendrecv (NCCL's send/recv ignores them).
    rates : FabricRates, optional
        ``fabric_rates(G, gpus, gpus_per_node)`` computed once for several ops (the
        sub-cluster's flow problems are the costly part on a large fabric); ``gpus`` and
        ``gpus_per_node`` are then those it was computed for. Default: computed here.

    Returns
    -------
    CollectiveReport
        One :class:`Row` per size (sizes rounding to zero elements are skipped), each with
        every candidate the tuner weighed (``candidates``).

    Raises
    ------
    TopoError
        Unknown op or type; min > max; sizes < 1 or above :data:`MAX_SWEEP_BYTES`; step
        factor < 2; no size that holds one element (an empty table); an ``algo`` or ``proto``
        NCCL would refuse, or one that leaves no candidate for the op; see also
        :func:`topo.collective.fabric_rates.fabric_rates`.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> rep = collective_table(G, "all_gather", min_bytes=1 << 30, max_bytes=1 << 30)
    >>> rep.rows[0].algorithm, rep.rows[0].protocol
    ('ring', 'Simple')
    """
    if op not in OPS:
        raise TopoError(f"op must be one of {', '.join(OPS)}, got {op!r}", param="op")
    if dtype not in TYPE_BYTES:
        raise TopoError(f"unknown data type {dtype!r}; one of {', '.join(TYPE_BYTES)}")
    if min_bytes < 1 or max_bytes < 1:
        raise TopoError(
            f"min_bytes and max_bytes must be >= 1, got {min_bytes}, {max_bytes}",
            param="min_bytes" if min_bytes < 1 else "max_bytes",
            names=("min_bytes", "max_bytes"),
        )
    if max(min_bytes, max_bytes) > MAX_SWEEP_BYTES:
        name, value = (
            ("min_bytes", min_bytes) if min_bytes > MAX_SWEEP_BYTES else ("max_bytes", max_bytes)
        )
        raise TopoError(
            f"{name} must be at most {MAX_SWEEP_BYTES:,} bytes ({MAX_SWEEP_WHY}), got {value:,}",
            param=name,
            names=(name,),
        )
    if min_bytes > max_bytes:
        raise TopoError(
            f"min_bytes {min_bytes:,} exceeds max_bytes {max_bytes:,}",
            param="min_bytes",
            names=("min_bytes", "max_bytes"),
        )
    if step_factor < 2:
        raise TopoError(f"step_factor must be >= 2, got {step_factor}", param="step_factor")
    restriction = tuner_restriction(algo, proto)
    c = constants or fabric_constants(G)
    if rates is None:
        rates = fabric_rates(G, gpus, gpus_per_node)
    elt = TYPE_BYTES[dtype]
    rows = []
    size = min_bytes
    while size <= max_bytes:
        count = _count(op, size, rates.gpus, elt)
        if count > 0:
            eff = count * elt * (rates.gpus if op in TOTAL_SIZE_OPS else 1)
            rows.append(predict_row(op, eff, count, dtype, rates, c, restriction))
        size *= step_factor
    if not rows:
        raise TopoError(
            f"no size from min_bytes {min_bytes:,} to max_bytes {max_bytes:,} holds one "
            f"{dtype} ({elt} B) for {op} on {rates.gpus} ranks: every size rounds to zero "
            "elements; raise max_bytes",
            param="max_bytes",
            names=("min_bytes", "max_bytes", "max_bytes"),
        )
    return CollectiveReport(
        op=op,
        fabric=rates.fabric,
        gpus=rates.gpus,
        nodes=rates.nodes,
        gpus_per_node=rates.gpus_per_node,
        nccl_release=c.release,
        constants=c.origin,
        rates=rates_summary(rates, c),
        rows=rows,
        algo=algo if restriction.governs(op) else None,
        proto=proto if restriction.governs(op) else None,
    )


def _busbw_data(
    report: CollectiveReport | None, comparisons: list[Comparison]
) -> list[tuple[str, list[int], list[float]]]:
    """The curves to plot: (name, sizes in B, busbw in GB/s); a comparison's per (type,
    reduction) of its log, each size once (:func:`topo.collective.compare.median_rows`)."""
    curves = []
    if report is not None:
        curves.append(
            (
                f"{report.op}: model ({report.gpus} GPUs)",
                [r.size_bytes for r in report.rows],
                [r.busbw_GBps for r in report.rows],
            )
        )
    for cmp in comparisons:
        # a curve per (type, reduction), each size once, in increasing size: the median of a
        # size's runs (median_rows), so that repeated runs (-N, runs appended) and several
        # types (-d all) draw no line back to the smallest size
        shown = sorted((r for r, _ in cmp.shown), key=lambda r: r.size_bytes)
        kinds = list(dict.fromkeys((r.type, r.redop) for r in shown))
        model: dict[tuple[tuple[int, ...], tuple[float, ...]], str] = {}  # a model curve once
        measured = []
        for kind in kinds:
            rows = [r for r in shown if (r.type, r.redop) == kind]
            of = f" ({kind[0]} {kind[1]})" if len(kinds) > 1 else ""
            sizes = [r.size_bytes for r in rows]
            curve = (tuple(sizes), tuple(r.predicted_busbw_GBps for r in rows))
            model.setdefault(curve, of)
            busbw = [r.measured_busbw_GBps for r in rows]
            measured.append((f"{cmp.op}: measured{of}", sizes, busbw))
        for (at, predicted), of in model.items():
            name = f"{cmp.op}: model ({cmp.gpus} GPUs){of if len(model) > 1 else ''}"
            curves.append((name, list(at), list(predicted)))
        curves += measured
    return curves


def plot_busbw(
    report: CollectiveReport | None = None, comparisons: list[Comparison] | None = None
) -> Any:
    """busbw against size (log x): the model's curve and, with comparisons, the measured ones.

    Parameters
    ----------
    report : CollectiveReport, optional
        A predicted table (:func:`collective_table`).
    comparisons : list of Comparison, optional
        Measured tests against the model (:func:`compare_log`): two curves each.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go

    comparisons = comparisons or []
    fig = go.Figure()
    for name, x, y in _busbw_data(report, comparisons):
        measured = ": measured" in name
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=name,
                mode="markers+lines",
                line={"dash": "dot"} if measured else {},
            )
        )
    ops = [report.op] if report is not None else [c.op for c in comparisons]
    fig.update_layout(
        title=f"{', '.join(ops)}: bus bandwidth (nccl-tests busbw) against size",
        xaxis={"title": "size (B)", "type": "log"},
        yaxis={"title": "busbw (GB/s)", "rangemode": "tozero"},
        template="plotly_white",
    )
    return fig


__all__ = [
    "AGREES",
    "FAR_BELOW",
    "GIB",
    "MAX_SWEEP_BYTES",
    "MAX_SWEEP_WHY",
    "MIB",
    "SIZE_BANDS",
    "TYPE_BYTES",
    "CollectiveReport",
    "CompareRow",
    "Comparison",
    "Fit",
    "Row",
    "busbw_note",
    "collective_table",
    "compare_log",
    "fabric_constants",
    "fit_alpha_beta",
    "link_rate_Bps",
    "plot_busbw",
    "predict_row",
    "rates_summary",
    "size_bands",
]
