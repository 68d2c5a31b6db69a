"""How a measured nccl-tests test compares with the model.

:func:`compare_log` predicts each row of a real nccl-tests test
(:func:`topo.collective.predict.predict_row`) and gives measured / predicted busbw per size
(:class:`CompareRow`), the median over the large sizes with a plain verdict (:data:`FAR_BELOW`,
:data:`AGREES`) and a verdict per size band (:func:`size_bands`, :data:`SIZE_BANDS`);
:func:`fit_alpha_beta` fits ``time = alpha + factor * size / beta`` to a measured table by
least squares (numpy, scipy).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from statistics import median
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.choice import tuner_restriction
from topo.collective.constants import NcclConstants
from topo.collective.fabric_rates import fabric_rates
from topo.collective.model import OPS, busbw_factor
from topo.collective.predict import GIB, MIB, fabric_constants, predict_rows, rates_summary
from topo.errors import TopoError
from topo.formats.nccl_tests_records import NcclTest
from topo.units import Bps_to_GBps, s_to_us
from topo.wording import binary_bytes

FAR_BELOW = 0.5
"""Measured / expected busbw under this is reported as far below what the fabric should give."""


AGREES = 0.85
"""Measured / expected busbw from this to 1/AGREES is reported as agreeing with the model."""


@dataclass(frozen=True)
class CompareRow:
    """Measured against predicted, one size (bandwidths GB/s, times µs).

    ``predicted_*`` are the expected values (:class:`topo.collective.predict.Row`'s
    ``time_us``, ``busbw_GBps``) and ``ratio`` = measured / expected busbw;
    ``ceiling_busbw_GBps`` is the ceiling and ``ceiling_ratio`` = measured / ceiling busbw;
    ``binds`` and ``candidates`` are the predicted row's; ``type`` and ``redop`` the log's
    (nccl-tests' data type and reduction, e.g. ``float``, ``sum``); ``inplace_time_us`` its
    in-place time (µs; None where the log has no in-place column). The comparison reads the
    out-of-place columns."""

    size_bytes: int
    measured_time_us: float
    predicted_time_us: float
    measured_busbw_GBps: float
    predicted_busbw_GBps: float
    ratio: float
    algorithm: str
    protocol: str
    bound: str
    busbw_note: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    ceiling_busbw_GBps: float = math.nan
    ceiling_ratio: float = math.nan
    binds: str = ""
    type: str = ""
    redop: str = ""
    inplace_time_us: float | None = None


@dataclass(frozen=True)
class Fit:
    """Least-squares fit of ``time = alpha + factor * size / beta`` (see :func:`fit_alpha_beta`).

    Attributes
    ----------
    alpha_us : float
        Fitted latency (µs).
    busbw_GBps : float
        Fitted beta: the bus bandwidth the sizes tend to (GB/s).
    residual : float
        RMS of the relative time residuals (fraction; 0.02 = 2%).
    points : int
        Rows fitted (each run of a size a log repeats counts).
    """

    alpha_us: float
    busbw_GBps: float
    residual: float
    points: int


@dataclass(frozen=True)
class Comparison:
    """A measured nccl-tests test against the model (see :func:`compare_log`).

    Attributes
    ----------
    op : str
        The test's operation.
    gpus, nodes, gpus_per_node : int
        The sub-cluster the model ran on.
    nccl_version : str
        The log's NCCL library version (e.g. ``22902``), empty when not printed.
    rows : list of CompareRow
        Measured against predicted, per size.
    median_ratio : float
        Median measured / predicted busbw over ``ratio_sizes`` (dimensionless).
    ratio_sizes : str
        ``1 GiB and more``, or ``every size`` when the log has none that large.
    verdict : str
        The plain verdict on ``median_ratio``.
    far_below : bool
        ``median_ratio`` under :data:`FAR_BELOW` (not set for sendrecv, whose model is an
        upper bound).
    fit : Fit or None
        With ``fit=True``: alpha and beta of the measured times.
    model_latency_us : float or None
        With ``fit=True``: the model's latency at the log's largest size (µs).
    rates : dict
        :func:`topo.collective.predict.rates_summary` of the sub-cluster (GB/s).
    algo, proto : str or None
        NCCL_ALGO and NCCL_PROTO as given, when they govern the op (as
        :class:`topo.collective.report.CollectiveReport`).
    bands : list of dict
        A verdict per size band the log reaches (small, mid, large: :func:`size_bands`).
    line : int
        The 1-based line of the log where the test starts (0: not known), to tell apart the
        tests of one op in a log (runs appended).
    """

    op: str
    gpus: int
    nodes: int
    gpus_per_node: int
    nccl_version: str
    rows: list[CompareRow]
    median_ratio: float
    ratio_sizes: str
    verdict: str
    far_below: bool
    fit: Fit | None = None
    model_latency_us: float | None = None
    rates: dict[str, Any] = field(default_factory=dict)
    algo: str | None = None
    proto: str | None = None
    bands: list[dict[str, Any]] = field(default_factory=list)
    line: int = 0

    @functools.cached_property
    def shown(self) -> list[tuple[CompareRow, int]]:
        """The rows as a table shows them: :func:`median_rows` of :attr:`rows`, made once."""
        return median_rows(self.rows)

    @property
    def above_ceiling(self) -> list[int]:
        """The sizes (B, each once, increasing) where a row's measured busbw exceeds the ceiling
        by more than :data:`ABOVE_CEILING`: there the ceiling (NCCL's tuner model on the
        fabric's rates) is no bound, and the model under-rates the path. Rows repeating a
        (size, type, reduction) count as their median run (:func:`median_rows`): one fast run
        among several is not a size above the ceiling (:func:`runs_apart` names it)."""
        return sorted({r.size_bytes for r, _ in self.shown if r.ceiling_ratio > ABOVE_CEILING})

    @property
    def slower_than_larger(self) -> list[dict[str, Any]]:
        """The rows slower than a larger size (:func:`slower_than_larger`), JSON-ready: per
        row its ``size_bytes``, ``type``, ``redop`` and median ``time_us``, and the larger
        size's ``larger_size_bytes`` and ``larger_time_us`` (µs)."""
        return [
            {
                "size_bytes": m.size_bytes,
                "type": m.type,
                "redop": m.redop,
                "time_us": m.measured_time_us,
                "larger_size_bytes": big.size_bytes,
                "larger_time_us": big.measured_time_us,
            }
            for m, big in slower_than_larger(self.rows, self.shown)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``above_ceiling``: :attr:`above_ceiling`; ``slower_than_larger``:
        :attr:`slower_than_larger`). The rows are shallow
        dicts of their fields: a row's ``candidates`` list is the prediction's own, shared by
        the rows of one (size, count, type); copy before changing it."""
        names = [f.name for f in fields(CompareRow)]
        d: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "rows":
                value = [{n: getattr(r, n) for n in names} for r in value]
            elif f.name == "fit" and value is not None:
                value = asdict(value)
            elif f.name in ("rates", "bands"):
                value = copy.deepcopy(value)
            d[f.name] = value
        return {
            **d,
            "above_ceiling": self.above_ceiling,
            "slower_than_larger": self.slower_than_larger,
        }


ABOVE_CEILING = 1.02
"""Measured / ceiling busbw beyond which a row is said to be above the ceiling (2%: nccl-tests'
run-to-run noise on a healthy fabric stays within it)."""


def median_rows(rows: list[CompareRow]) -> list[tuple[CompareRow, int]]:
    """The rows of each (size, type, reduction), in the order first seen, as one row: the
    first's prediction with the median of their measured times, the busbw of that time
    (``busbw x time`` is the runs' own, size x nccl-tests' factor: of an even number of runs
    the median time is the mean of the middle two, whose busbw is not the median of theirs),
    ``ratio`` and ``ceiling_ratio`` from the median time, and how many rows it stands for
    (times in µs, busbw in GB/s, as :class:`CompareRow`'s). An empty list gives an empty list."""
    groups: dict[tuple[int, str, str], list[CompareRow]] = {}
    for r in rows:
        groups.setdefault((r.size_bytes, r.type, r.redop), []).append(r)
    out = []
    for same in groups.values():
        r = same[0]
        if len(same) > 1:
            t = median(x.measured_time_us for x in same)
            r = replace(
                r,
                measured_time_us=t,
                measured_busbw_GBps=(
                    median(x.measured_busbw_GBps * x.measured_time_us for x in same) / t
                    if t > 0
                    else math.inf
                ),
                ratio=r.predicted_time_us / t if t > 0 else math.inf,
                ceiling_ratio=r.ceiling_ratio * r.measured_time_us / t if t > 0 else math.inf,
            )
        out.append((r, len(same)))
    return out


RUNS_APART = 1.25
"""A size's runs (rows repeating a size, type and reduction) whose slowest or fastest time is
more than this factor off their median are said to disagree: nccl-tests' run-to-run noise on a
healthy fabric stays within a few percent, and the median the table shows hides such a run."""


def _times_by_run_group(
    rows: list[CompareRow], time_us: Callable[[CompareRow], float | None]
) -> dict[tuple[int, str, str], list[float]]:
    """``time_us`` of each row (None left out), by (size, type, reduction)."""
    out: dict[tuple[int, str, str], list[float]] = {}
    for r in rows:
        t = time_us(r)
        if t is not None:
            out.setdefault((r.size_bytes, r.type, r.redop), []).append(t)
    return out


def runs_apart(
    rows: list[CompareRow], shown: list[tuple[CompareRow, int]] | None = None
) -> list[tuple[CompareRow, int, float, float]]:
    """The (size, type, reduction) groups whose runs disagree (:data:`RUNS_APART`).

    Parameters
    ----------
    rows : list of CompareRow
        A comparison's rows, every run.
    shown : list, optional
        :func:`median_rows` of ``rows``, if made already (:attr:`Comparison.shown`).

    Returns
    -------
    list of (CompareRow, int, float, float)
        Per such group, in the order first seen: its row of :func:`median_rows` (the median
        time, µs), its number of runs, and its fastest and slowest times (µs).

    Examples
    --------
    >>> r = CompareRow(8, 10.0, 5.0, 1.0, 2.0, 0.5, "ring", "LL", "latency")
    >>> [(m.measured_time_us, n, lo, hi) for m, n, lo, hi in
    ...  runs_apart([r, replace(r, measured_time_us=11.0), replace(r, measured_time_us=90.0)])]
    [(11.0, 3, 10.0, 90.0)]
    """
    times = _times_by_run_group(rows, lambda r: r.measured_time_us)
    out = []
    for m, n in shown if shown is not None else median_rows(rows):
        if n < 2:
            continue
        t = times[(m.size_bytes, m.type, m.redop)]
        lo, hi, mid = min(t), max(t), m.measured_time_us
        if hi > RUNS_APART * mid or (lo > 0 and mid > RUNS_APART * lo) or (lo <= 0 < hi):
            out.append((m, n, lo, hi))
    return out


def inplace_apart(
    rows: list[CompareRow], shown: list[tuple[CompareRow, int]] | None = None
) -> list[tuple[CompareRow, float]]:
    """The (size, type, reduction) groups whose in-place time is more than
    :data:`RUNS_APART` off the out-of-place one (both the median of the group's runs): the
    comparison reads the out-of-place columns, and a run whose in-place operation is much
    slower or faster (a buffer registered or not, a copy of its own) would go unseen.

    Parameters
    ----------
    rows : list of CompareRow
        A comparison's rows, every run.
    shown : list, optional
        :func:`median_rows` of ``rows``, if made already (:attr:`Comparison.shown`).

    Returns
    -------
    list of (CompareRow, float)
        Per such group, in the order first seen: its row of :func:`median_rows` (the median
        out-of-place time, µs) and the median in-place time (µs).

    Examples
    --------
    >>> r = CompareRow(8, 10.0, 5.0, 1.0, 2.0, 0.5, "ring", "LL", "latency", inplace_time_us=30.0)
    >>> [(m.measured_time_us, t) for m, t in inplace_apart([r, replace(r, size_bytes=16,
    ...                                                                inplace_time_us=11.0)])]
    [(10.0, 30.0)]
    """
    inplace = _times_by_run_group(rows, lambda r: r.inplace_time_us)
    out = []
    for m, _ in shown if shown is not None else median_rows(rows):
        t = inplace.get((m.size_bytes, m.type, m.redop))
        ip = median(t) if t else 0.0
        if ip <= 0 or m.measured_time_us <= 0:
            continue
        if ip > RUNS_APART * m.measured_time_us or m.measured_time_us > RUNS_APART * ip:
            out.append((m, ip))
    return out


def slower_sizes(sizes: Sequence[int], times_us: Sequence[float]) -> list[tuple[int, int]]:
    """The sizes that took more than :data:`RUNS_APART` the time of a larger size.

    Parameters
    ----------
    sizes : sequence of int
        Distinct sizes (B), in any order.
    times_us : sequence of float
        Their times (µs), as many (each a size's median run).

    Returns
    -------
    list of (int, int)
        In the order of ``sizes``: the index of each such size, and the index of the larger
        size of least time.

    Examples
    --------
    >>> slower_sizes([4 << 20, 8 << 20, 16 << 20, 32 << 20], [204.0, 1272.0, 378.0, 510.0])
    [(1, 2)]
    """
    found: dict[int, int] = {}
    fastest: int | None = None  # of the larger sizes seen: the index of least time
    for i in sorted(range(len(sizes)), key=lambda k: sizes[k], reverse=True):
        if fastest is not None and times_us[i] > RUNS_APART * times_us[fastest]:
            found[i] = fastest
        if times_us[i] > 0 and (fastest is None or times_us[i] < times_us[fastest]):
            fastest = i
    return [(i, found[i]) for i in range(len(sizes)) if i in found]


def slower_than_larger(
    rows: list[CompareRow], shown: list[tuple[CompareRow, int]] | None = None
) -> list[tuple[CompareRow, CompareRow]]:
    """The rows whose measured time is more than :data:`RUNS_APART` that of a larger size of
    the same type and reduction (both the median of their runs; :func:`slower_sizes`): a
    collective moves more bytes in no less time on a steady fabric, so such a row is one slow
    run (a glitch: the median of ``-N`` runs would show it) or a size where NCCL's tuner picks
    an algorithm or protocol slower than the one it picks for the larger size
    (``NCCL_ALGO``/``NCCL_PROTO`` forced tell them apart). Either way the row says nothing of
    the fabric's rate.

    Parameters
    ----------
    rows : list of CompareRow
        A comparison's rows, every run.
    shown : list, optional
        :func:`median_rows` of ``rows``, if made already (:attr:`Comparison.shown`).

    Returns
    -------
    list of (CompareRow, CompareRow)
        Per such row of :func:`median_rows`, in the order first seen: the row, and the larger
        size's row of least time (times in µs).

    Examples
    --------
    >>> r = CompareRow(4 << 20, 204.0, 200.0, 1.0, 1.0, 1.0, "ring", "Simple", "bandwidth")
    >>> glitch = replace(r, size_bytes=8 << 20, measured_time_us=1272.0)
    >>> later = replace(r, size_bytes=16 << 20, measured_time_us=378.0)
    >>> [(a.size_bytes >> 20, b.size_bytes >> 20)
    ...  for a, b in slower_than_larger([r, glitch, later])]
    [(8, 16)]
    """
    medians = shown if shown is not None else median_rows(rows)
    groups: dict[tuple[str, str], list[CompareRow]] = {}
    for m, _ in medians:
        groups.setdefault((m.type, m.redop), []).append(m)
    found: dict[int, tuple[CompareRow, CompareRow]] = {}
    for same in groups.values():
        pairs = slower_sizes([r.size_bytes for r in same], [r.measured_time_us for r in same])
        for i, j in pairs:
            found[id(same[i])] = (same[i], same[j])
    return [found[id(m)] for m, _ in medians if id(m) in found]


def fit_alpha_beta(sizes: list[float], times_us: list[float], factor: float) -> Fit:
    """Fit ``time = alpha + factor * size / beta`` to measured times: least squares of the
    relative errors (each row weighted by ``1 / time``, so a 32 MiB row counts as much as a
    16 GiB one, and ``residual`` is what is minimised), with ``alpha >= 0`` and ``1/beta >= 0``.

    Parameters
    ----------
    sizes : list of float
        nccl-tests sizes (B).
    times_us : list of float
        Measured times (µs).
    factor : float
        nccl-tests' busbw factor of the op and rank count, so that beta is a bus bandwidth.

    Returns
    -------
    Fit

    Raises
    ------
    TopoError
        Fewer than two sizes, a time that is not a positive finite number of µs, or times
        that do not grow with size (no positive beta).

    References
    ----------
    R. Hockney, Parallel Computing 20(3), 1994 (the alpha-beta model); C. Lawson and R. Hanson,
    *Solving Least Squares Problems*, 1974, ch. 23 (non-negative least squares,
    ``scipy.optimize.nnls``). Unconstrained, the large sizes' scatter can drive ``alpha``
    below 0 (a negative latency), which no link has.

    Examples
    --------
    >>> f = fit_alpha_beta([1e6, 2e6, 4e6], [20.0, 30.0, 50.0], 1.0)
    >>> round(f.alpha_us, 6), round(f.busbw_GBps, 6)
    (10.0, 100.0)
    """
    if len(sizes) < 2 or len(set(sizes)) < 2:
        raise TopoError("fit needs at least two different sizes in the log", names=("fit",))
    x = np.asarray(sizes, dtype=float) * factor
    t = np.asarray(times_us, dtype=float) * 1e-6
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise TopoError("fit: every measured time must be a positive number of µs", names=("fit",))
    A = np.column_stack([np.ones_like(x), x])
    scale = np.array([1.0, 1.0 / x.max()])  # columns of like size for the solver
    from scipy.optimize import nnls  # here: scipy.optimize costs every command 0.5 s

    coef, _ = nnls(A * scale / t[:, None], np.ones_like(t))
    alpha, inv_beta = coef * scale
    if not inv_beta > 0:
        raise TopoError(
            "fit: the measured times do not grow with size; no bandwidth to fit", names=("fit",)
        )
    resid = (A @ np.array([alpha, inv_beta]) - t) / t
    return Fit(
        alpha_us=s_to_us(float(alpha)),
        busbw_GBps=Bps_to_GBps(1.0 / float(inv_beta)),
        residual=float(np.sqrt(np.mean(resid**2))),
        points=len(sizes),
    )


def _verdict(op: str, median: float, which: str) -> tuple[str, bool]:
    """The plain verdict on a median measured / predicted busbw, and whether it is far below."""
    pct = f"{median * 100:.0f}%"
    if op == "sendrecv" and median < AGREES:
        # The model's sendrecv is NCCL's channels per peer, each at most one NVLink or NCCL's
        # 14 GB/s network budget (model.p2p_op_channels): a ceiling, which one pair's
        # placement, the NICs it lands on and its peers' traffic keep many healthy runs below,
        # so a low ratio alone is not called a fault.
        return (
            f"below the model: {pct} of the expected busbw at {which}; for sendrecv the "
            "model is the ceiling of NCCL's channels per peer (each at most one NVLink, or "
            "14 GB/s across servers: NCCL_P2P_PER_CHANNEL_NET_BW), which one pair may not "
            "reach on a healthy fabric; check the pair's NICs and NCCL_NCHANNELS_PER_NET_PEER",
            False,
        )
    if median < FAR_BELOW:
        return (
            f"FAR BELOW the model: at {which} the measurement reaches only {pct} of the busbw "
            "expected on this fabric; look for a slow or misconfigured node, NIC, cable or switch "
            "port on this path (this is not what the hardware can do)",
            True,
        )
    if median < AGREES:
        return (f"below the model: {pct} of the expected busbw at {which}", False)
    if median <= 1 / AGREES:
        return (f"agrees with the model: {pct} of the expected busbw at {which}", False)
    return (
        f"above the model: {pct} of the expected busbw at {which}; the model is pessimistic "
        "here (check that the fabric file is the cluster measured, then the constants; under 1 MiB "
        "the expected curve is not fitted: docs/collective.md)",
        False,
    )


def compare_log(
    G: nx.Graph,
    test: NcclTest,
    *,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    constants: NcclConstants | None = None,
    fit: bool = False,
    algo: str | None = None,
    proto: str | None = None,
) -> Comparison:
    """Predict each size of a measured nccl-tests test and compare busbw.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the test ran on (or a design of it).
    test : NcclTest
        One test of :func:`topo.formats.nccl_tests.read_nccl_tests`.
    gpus, gpus_per_node : int, optional
        Default: the ranks and ranks per host listed in the log.
    constants : NcclConstants, optional
        Default: :func:`topo.collective.predict.fabric_constants` (the file's, for the
        fabric's GPU generation).
    fit : bool
        Also fit alpha and beta to the measured out-of-place times.
    algo, proto : str, optional
        Predict under NCCL_ALGO / NCCL_PROTO, as
        :func:`topo.collective.report.collective_table` (e.g. the values the
        measured run was given).

    Returns
    -------
    Comparison
        ``ratio`` = measured / expected busbw per size (and ``ceiling_ratio`` against the
        ceiling); ``median_ratio`` over the sizes of 1 GiB and more (all sizes when none is
        that large), with a plain verdict, and a verdict per size band (``bands``);
        ``far_below`` when any median is under :data:`FAR_BELOW`.

    Raises
    ------
    TopoError
        The test's op is not one topo models; ranks unknown (no ``Rank`` lines and no
        ``gpus``); see :func:`topo.collective.report.collective_table`.
    """
    if test.op not in OPS:
        raise TopoError(f"the log's test {test.op}_perf is not one of {', '.join(OPS)}")
    restriction = tuner_restriction(algo, proto)
    n = gpus if gpus is not None else test.ranks
    g = gpus_per_node if gpus_per_node is not None else test.gpus_per_node
    if n is None:
        raise TopoError(f"the log lists no ranks for {test.op}_perf: give gpus", param="gpus")
    c = constants or fabric_constants(G)
    rates = fabric_rates(G, n, g)
    # nccl-tests prints rows of 0 bytes where -b is under ranks x a word (all_gather,
    # reduce_scatter, alltoall): nothing moves, nothing to compare
    measured = [m for m in test.rows if m.size_bytes > 0]
    if not measured:
        raise TopoError(f"the log's test {test.op}_perf has no row of more than 0 bytes")
    predicted = predict_rows(test.op, measured, rates, c, restriction)
    rows = [
        CompareRow(
            size_bytes=m.size_bytes,
            measured_time_us=m.time_us,
            predicted_time_us=p.time_us,
            measured_busbw_GBps=m.busbw_GBps,
            predicted_busbw_GBps=p.busbw_GBps,
            # from the times (busbw = factor x size / time on both sides): the log's busbw has
            # two decimals, too few at small sizes
            ratio=p.time_us / m.time_us if m.time_us > 0 else math.inf,
            algorithm=p.algorithm,
            protocol=p.protocol,
            bound=p.bound,
            busbw_note=p.busbw_note,
            candidates=p.candidates,
            ceiling_busbw_GBps=p.ceiling_busbw_GBps,
            ceiling_ratio=p.ceiling_time_us / m.time_us if m.time_us > 0 else math.inf,
            binds=p.binds,
            type=m.type,
            redop=m.redop,
            inplace_time_us=m.inplace_time_us,
        )
        for m, p in zip(measured, predicted, strict=True)
    ]
    large = [r for r in rows if r.size_bytes >= GIB]
    which = "1 GiB and more" if large else "every size"
    median = float(np.median([r.ratio for r in (large or rows)]))
    verdict, far = _verdict(test.op, median, which)
    bands = size_bands(test.op, rows)
    far = far or any(b["far_below"] for b in bands)
    f = None
    model_lat = None
    if fit:
        f = fit_alpha_beta(
            [m.size_bytes for m in measured],
            [m.time_us for m in measured],
            busbw_factor(test.op, rates.gpus),
        )
        model_lat = max(predicted, key=lambda p: p.size_bytes).latency_us
    return Comparison(
        op=test.op,
        gpus=rates.gpus,
        nodes=rates.nodes,
        gpus_per_node=rates.gpus_per_node,
        nccl_version=test.nccl_version,
        rows=rows,
        median_ratio=median,
        ratio_sizes=which,
        verdict=verdict,
        far_below=far,
        fit=f,
        model_latency_us=model_lat,
        rates=rates_summary(rates, c),
        algo=algo if restriction.governs(test.op) else None,
        proto=proto if restriction.governs(test.op) else None,
        bands=bands,
        line=test.line,
    )


SIZE_BANDS = (
    ("small", 0, MIB, "under 1 MiB"),
    ("mid", MIB, GIB, "1 MiB to 512 MiB"),
    ("large", GIB, math.inf, "1 GiB and more"),
)
"""The size bands a comparison gives a verdict on: (name, from B, to B (exclusive), label).
Small sizes are set by latency, mid sizes by NCCL's per-message costs, large ones by the
fabric's bandwidth."""


def size_bands(op: str, rows: list[CompareRow]) -> list[dict[str, Any]]:
    """A verdict per size band that the rows reach (:data:`SIZE_BANDS`).

    Returns
    -------
    list of dict
        Per band with rows: ``band`` (small, mid, large), ``sizes`` (the sizes of the band
        the rows cover, e.g. ``32 MiB to 512 MiB``), ``rows``, ``median_ratio`` (measured /
        expected busbw), ``verdict`` and ``far_below``, as :func:`compare_log`'s overall
        verdict words them.
    """
    out = []
    for name, lo, hi, _ in SIZE_BANDS:
        sizes = [r.size_bytes for r in rows if lo <= r.size_bytes < hi]
        inside = [r.ratio for r in rows if lo <= r.size_bytes < hi]
        if not inside:
            continue
        first, last = binary_bytes(min(sizes)), binary_bytes(max(sizes))
        label = first if first == last else f"{first} to {last}"
        median = float(np.median(inside))
        verdict, far = _verdict(op, median, label)
        out.append(
            {
                "band": name,
                "sizes": label,
                "rows": len(inside),
                "median_ratio": median,
                "verdict": verdict,
                "far_below": far,
            }
        )
    return out
