"""Calibration of the expected curve to a cluster's own nccl-tests log, held honest.

The expected time of a row (:mod:`topo.collective.expected`) has two kinds of parts, and a
cluster's log can move each only where it shows:

- **latency-like**: one scale (the **latency scale**, searched in 0.2..5) on the ``[expected]``
  per-operation and per-message costs (:data:`LATENCY_KEYS`: launch, network launch, per
  message across the network and over NVLink, per NVLS step, per p2p round). Only rows where
  these make a large part of the time can show it: the **latency band**, rows where they make
  at least :data:`LATENCY_SHARE` of the expected time. Their share is read as the time's
  response to scaling them (``ln(T(1.2) / T(1/1.2)) / ln(1.44)``): the sum of the launch and
  per-message parts (:class:`topo.collective.predict.Row` ``expected``) where they add to the
  time, less where a message's fixed cost hides behind the channel's share of a link (a
  pipeline's fill at a shared link's rate is bytes, not latency), and nothing where NCCL's
  latency table is taken instead (``binds`` ``ceiling``).
- **bandwidth-like**: ``efficiency.node_network``, the share of a server's summed NIC rate it
  drives at once (a host's PCIe, memory or switch limit; 1.0 = none; searched in 0.5..1). It
  sets the bytes' time, so only rows whose time is bytes at a rate can show it: the
  **bandwidth band**, rows outside the latency band that bind on ``bandwidth``, or on the
  ceiling with bytes at its rate at least ``1 - LATENCY_SHARE`` of the time. The other rows
  (NCCL's latency table; a pipeline's fill) are in neither band.

The bands are read at the constants given (the shipped ones, or a ``--constants`` file). Each
constant is fitted on its own band only, by a robust least squares (soft L1, scale 10%, as
:func:`topo.collective.training.fit`) of log(expected / measured busbw), one constant at a time
with the other at its current value, until neither moves (three rounds at most). A constant
is **not fitted**, keeps the value given, and the result says why, when its band has fewer
than :data:`MIN_ROWS` rows, when its band's rows do not depend on it anywhere in its range, or
when the fitted value lowers the median |error| of the rows it moves by less than
:data:`MIN_GAIN` (a log's noise is not a cluster's constant).

Then a **guard**: for every op with rows of 1 GiB and more, the median ``|expected / measured
busbw - 1|`` of those rows after calibration may exceed the one before by at most
:data:`GUARD_TOLERANCE`; a constant that moves them further from the measurement is refused
(the one doing the most harm first, the other refitted without it) and keeps its value.

Finally the check: with two ops or more, each op is held out in turn (the whole calibration
run on the other ops, the held-out op predicted); with one op, each size band is predicted by
the calibration run on the other band (so with its own constant at the value given: the check
shows what the other band's fit does to it, not how its own constant carries over). A log that
allows neither is said so.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.choice import ranked_candidates
from topo.collective.constants import NcclConstants
from topo.collective.expected import COST_KEYS, Expected, expected
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.collective.model import OPS, Candidate, busbw_factor
from topo.errors import TopoError
from topo.formats.nccl_tests_records import NcclTest
from topo.wording import binary_bytes

NODE_NETWORK_RANGE = (0.5, 1.0)
"""Range searched for ``efficiency.node_network`` (dimensionless)."""
LATENCY_SCALE_RANGE = (0.2, 5.0)
"""Range searched for the latency scale (dimensionless, on the ``[expected]`` costs given)."""
LATENCY_KEYS = COST_KEYS
"""The ``[expected]`` per-operation and per-message costs (µs) the latency scale multiplies."""
LATENCY_SHARE = 0.3
"""A row is in the latency band when the per-operation and per-message costs make at least this
share of its expected time (read as the time's response to scaling them); the bandwidth band
takes rows under it whose time is bytes at a rate."""
MIN_ROWS = 3
"""Fewest rows of its band a constant is fitted on."""
MIN_GAIN = 0.01
"""A fitted value is taken only when it lowers the median |error| of the rows of its band that it
moves by at least this much (fraction: 1 point) below the value given; less is within a log's
noise."""
GUARD_TOLERANCE = 0.02
"""How much the median |error| of an op's rows of 1 GiB and more may grow with calibration
(fraction: 0.02 = 2 points)."""
LARGE_BYTES = 1 << 30
"""Rows of this size and more (B) are the guard's."""
SOFT_L1_SCALE = 0.1
"""Scale of the soft-L1 loss (log error): a row 10% off weighs as in least squares, a row far
off as its excess (a glitch of one size in a noisy log does not drag the fit)."""

NODE_NETWORK = "node_network"
LATENCY_SCALE = "latency_scale"
BANDS = {NODE_NETWORK: "bandwidth", LATENCY_SCALE: "latency"}
"""The band each constant is fitted on."""


@dataclass(frozen=True)
class HeldOut:
    """One op (or, on a one-op log, one size band) predicted by a calibration that did not
    see it.

    Attributes
    ----------
    op : str
        The held-out op (or the log's only op).
    band : str
        ``""`` when the whole op was held out; ``latency`` or ``bandwidth`` when that size band
        of a one-op log was.
    node_network, latency_scale : float
        The values used for the prediction (fitted without the held-out rows, or as given
        where they could not be fitted).
    rows : int
        Rows predicted.
    median_abs_error, max_abs_error : float
        Median and largest ``|expected / measured busbw - 1|`` over them (fraction).
    median_abs_error_given : float
        The median with the constants as given (uncalibrated), to hold the first against.
    """

    op: str
    band: str
    node_network: float
    latency_scale: float
    rows: int
    median_abs_error: float
    max_abs_error: float
    median_abs_error_given: float


@dataclass(frozen=True)
class Calibration:
    """A calibration of the expected curve to a log (see :func:`calibrate`).

    Attributes
    ----------
    node_network : float
        ``efficiency.node_network`` after calibration (the value given when not fitted).
    latency_scale : float
        The factor on the ``[expected]`` costs of :data:`LATENCY_KEYS` (1.0 when not fitted).
    ops : list of str
        The log's ops.
    rows : int
        Its rows (every band).
    rms_log_error : float
        RMS of log(expected / measured busbw) over every row, after calibration.
    held_out : list of HeldOut
        Per op (``held_out_by`` ``op``) or per size band (``size band``); empty for ``none``.
    held_out_by : str
        ``op``, ``size band`` or ``none``.
    fitted : dict
        Per fitted constant: ``value``, ``given`` (the value before), ``band``, ``rows``,
        ``ops`` and ``sizes`` (the band's rows it was fitted on), and ``range``, the values
        that fit the band equally well ([lo, hi]; the fit takes the highest node_network, the
        least ceiling).
    not_fitted : dict
        Constant -> why it was not fitted, or refused, and which value is kept.
    bands : dict
        Rows per band: ``bandwidth``, ``latency``, ``neither``.
    large_rows : list of dict
        The guard, per op with rows of 1 GiB and more: ``op``, ``rows``,
        ``median_abs_error_before`` and ``_after`` (fraction).
    notes : list of str
        What the log cannot show (one op, no rows of 1 GiB and more, ...).
    given : dict
        The values before calibration: ``node_network`` and the ``[expected]`` costs of
        :data:`LATENCY_KEYS` (µs).
    """

    node_network: float
    latency_scale: float
    ops: list[str]
    rows: int
    rms_log_error: float
    held_out: list[HeldOut]
    held_out_by: str
    fitted: dict[str, dict[str, Any]]
    not_fitted: dict[str, str]
    bands: dict[str, int] = field(default_factory=dict)
    large_rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    given: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def with_calibration(
    c: NcclConstants, node_network: float | None = None, latency_scale: float | None = None
) -> NcclConstants:
    """The constants with a calibration applied.

    Parameters
    ----------
    c : NcclConstants
        The constants calibrated (the shipped ones, or with a user's overrides).
    node_network : float, optional
        ``efficiency.node_network``, in (0, 1]; None keeps ``c``'s.
    latency_scale : float, optional
        Factor (> 0) on every ``[expected]`` cost of :data:`LATENCY_KEYS` (per protocol
        arrays element by element); None keeps them.

    Returns
    -------
    NcclConstants

    Examples
    --------
    >>> from topo.collective.constants import load_constants
    >>> c = load_constants()
    >>> d = with_calibration(c, 0.9, 2.0)
    >>> d.node_network_efficiency, d.data["expected"]["launch_us"] / c.data["expected"]["launch_us"]
    (0.9, 2.0)
    """
    data = copy.deepcopy(c.data)
    if node_network is not None:
        data["efficiency"]["node_network"] = float(node_network)
    if latency_scale is not None:
        ex = data["expected"]
        for key in LATENCY_KEYS:
            v = ex[key]
            ex[key] = (
                [float(x) * latency_scale for x in v]
                if isinstance(v, list)
                else (float(v) * latency_scale)
            )
    return NcclConstants(data, c.origin + " + calibration")


# ----------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class _Point:
    """One measured row: its op, size (B), sub-cluster and measured busbw (GB/s)."""

    op: str
    size: int
    rates: FabricRates
    busbw_GBps: float


def _points(G: nx.Graph, tests: list[NcclTest]) -> list[_Point]:
    """Every row of a modelled op with a positive busbw (each test's sub-cluster solved once)."""
    pts = []
    for t in tests:
        if t.op not in OPS:
            continue
        if t.ranks is None:
            raise TopoError(f"the log lists no ranks for {t.op}_perf: cannot calibrate on it")
        rates = fabric_rates(G, t.ranks, t.gpus_per_node)
        pts += [_Point(t.op, m.size_bytes, rates, m.busbw_GBps) for m in t.rows if m.busbw_GBps > 0]
    if not pts:
        raise TopoError("calibrate: the log has no test of an op topo models", names=("calibrate",))
    return pts


class _Model:
    """Expected busbw of the rows under calibrated constants. The tuner's choice depends on
    ``node_network`` only (the ceiling; the ``[expected]`` costs do not enter it), so it is
    kept per ``node_network``. Rows of one (op, size, sub-cluster) share their expected time
    (a log's repeated runs, its data types), so it is computed once per constants."""

    def __init__(self, c: NcclConstants) -> None:
        self.c = c
        self._choices: dict[tuple[str, int, int, float], Candidate] = {}
        self._constants: dict[tuple[float, float], NcclConstants] = {}
        self._expected: dict[tuple[str, int, int, int], Expected] = {}
        self._grouped: dict[int, tuple[list[_Point], list[_Point], np.ndarray, np.ndarray]] = {}

    def constants(self, nn: float, scale: float) -> NcclConstants:
        key = (nn, scale)
        if key not in self._constants:
            self._constants[key] = with_calibration(self.c, nn, scale if scale != 1.0 else None)
        return self._constants[key]

    def expected(self, p: _Point, cc: NcclConstants) -> Expected:
        # cc is self.c or one of self._constants, alive as long as the model: its id is its own
        key = (p.op, p.size, id(p.rates), id(cc))
        ex = self._expected.get(key)
        if ex is None:
            choice = (p.op, p.size, id(p.rates), cc.node_network_efficiency)
            if choice not in self._choices:
                self._choices[choice] = ranked_candidates(p.op, p.size, p.rates, cc, None)[0]
            ex = self._expected[key] = expected(p.op, self._choices[choice], p.size, p.rates, cc)
        return ex

    def _groups(self, pts: list[_Point]) -> tuple[list[_Point], np.ndarray, np.ndarray]:
        """One row of each (op, size, sub-cluster) of ``pts``, each row's index into them, and
        the rows' log measured busbw; kept per list (which the cache holds, so its id stays
        its own)."""
        cached = self._grouped.get(id(pts))
        if cached is None:
            first: dict[tuple[str, int, int], int] = {}
            reps: list[_Point] = []
            index = np.empty(len(pts), dtype=np.intp)
            for i, p in enumerate(pts):
                k = (p.op, p.size, id(p.rates))
                if k not in first:
                    first[k] = len(reps)
                    reps.append(p)
                index[i] = first[k]
            measured = np.log(np.array([p.busbw_GBps for p in pts], dtype=float))
            cached = self._grouped[id(pts)] = (pts, reps, index, measured)
        return cached[1], cached[2], cached[3]

    def log_errors(self, pts: list[_Point], nn: float, scale: float) -> np.ndarray:
        """log(expected / measured busbw) per row."""
        cc = self.constants(nn, scale)
        reps, index, measured = self._groups(pts)
        busbw = [
            p.size / self.expected(p, cc).time_s * busbw_factor(p.op, p.rates.gpus) / 1e9
            for p in reps
        ]
        return np.log(np.array(busbw, dtype=float))[index] - measured


def _latency_share(p: _Point, model: _Model) -> float:
    """The share of a row's expected time its per-operation and per-message costs make, as
    the time's response to scaling them: ``ln(T(1.2) / T(1/1.2)) / ln(1.44)``. That is their
    share where they add to the time, and less where a message's fixed cost hides behind a
    shared link or NCCL's latency table is taken instead."""
    nn = model.c.node_network_efficiency
    up = model.expected(p, model.constants(nn, 1.2)).time_s
    down = model.expected(p, model.constants(nn, 1 / 1.2)).time_s
    return math.log(up / down) / math.log(1.44)


def _bands(pts: list[_Point], model: _Model) -> dict[str, list[_Point]]:
    """The rows of each band, read at the constants given (see the module's docstring)."""
    out: dict[str, list[_Point]] = {"bandwidth": [], "latency": [], "neither": []}
    for p in pts:
        ex = model.expected(p, model.c)
        share = _latency_share(p, model)
        if share >= LATENCY_SHARE:
            out["latency"].append(p)
        elif ex.binds == "bandwidth" or (
            ex.binds == "ceiling" and ex.bandwidth_s >= (1 - LATENCY_SHARE) * ex.time_s
        ):
            out["bandwidth"].append(p)
        else:
            out["neither"].append(p)
    return out


# ----------------------------------------------------------------------------- the fit


def _loss(errs: np.ndarray) -> float:
    """Soft-L1 loss of log errors: the mean of ``2 (sqrt(1 + (e / f)^2) - 1)``, ``f`` =
    :data:`SOFT_L1_SCALE` (scipy's ``least_squares(loss="soft_l1")``)."""
    z = np.square(errs / SOFT_L1_SCALE)
    return float(np.mean(2.0 * (np.sqrt(1.0 + z) - 1.0)))


@dataclass(frozen=True)
class _Found:
    """A one-constant fit: the value, the coarse grid's values as good (lo, hi), and whether
    the rows depend on the constant at all."""

    value: float
    lo: float
    hi: float
    depends: bool


def _minimise(
    cost: Callable[[float], float],
    grid: np.ndarray,
    prefer: Callable[[float], float],
    log: bool,
) -> _Found:
    """The grid's best value (ties broken by the least ``prefer``), refined twice on 21 points
    within one grid step (in log for a geometric grid; a tenth as large the second time); a
    grid whose points all cost the same (within 1e-9) means the rows do not depend on the
    constant."""
    lo, hi = float(grid.min()), float(grid.max())
    costs = [cost(float(x)) for x in grid]
    least = min(costs)
    ties = [float(x) for x, k in zip(grid, costs, strict=True) if k <= least + 1e-9]
    best = min(ties, key=prefer)
    best_cost = cost(best)
    step = math.log(grid[1] / grid[0]) if log else float(grid[1] - grid[0])
    for _ in range(2):
        offsets = np.linspace(-step, step, 21)
        for d in offsets:
            x = best * math.exp(d) if log else best + d
            x = min(max(x, lo), hi)
            k = cost(x)
            if k < best_cost - 1e-12:
                best, best_cost = x, k
        step /= 10
    return _Found(float(best), min(ties), max(ties), len(ties) < len(grid))


def _fit_one(name: str, band: list[_Point], model: _Model, nn: float, scale: float) -> _Found:
    """Fit ``name`` on ``band`` with the other constant held: node_network on a linear grid
    of 51 points in :data:`NODE_NETWORK_RANGE`, ties to the highest (the least ceiling); the
    latency scale on a geometric grid of 65 points in :data:`LATENCY_SCALE_RANGE`, ties to
    the nearest 1."""
    if name == NODE_NETWORK:
        return _minimise(
            lambda a: _loss(model.log_errors(band, a, scale)),
            np.linspace(*NODE_NETWORK_RANGE, 51),
            lambda a: -a,
            log=False,
        )
    return _minimise(
        lambda s: _loss(model.log_errors(band, nn, s)),
        np.geomspace(*LATENCY_SCALE_RANGE, 65),
        lambda s: abs(math.log(s)),
        log=True,
    )


def _sizes(pts: list[_Point]) -> str:
    lo, hi = min(p.size for p in pts), max(p.size for p in pts)
    a, b = binary_bytes(lo), binary_bytes(hi)
    return a if a == b else f"{a} to {b}"


WHAT_BAND = {
    "bandwidth": "bandwidth-bound (its expected time bytes at a rate, per-message costs under "
    "30% of it)",
    "latency": "set by launch and per-message costs (30% of its expected time or more, "
    "not NCCL's latency table)",
}
"""How the output names each band's rows."""


def _kept(name: str, c: NcclConstants) -> str:
    """Which value a constant not fitted keeps, in words."""
    shipped = " + " not in c.origin
    if name == NODE_NETWORK:
        v = float(c.node_network_efficiency)
        return f"the shipped {v} is kept" if shipped else f"the given {v} is kept"
    return f"the {'shipped' if shipped else 'given'} [expected] costs are kept (scale 1)"


def _band_reason(name: str, band: list[_Point], c: NcclConstants) -> str | None:
    """Why ``name`` cannot be fitted on its band, or None when it has enough rows."""
    what = WHAT_BAND[BANDS[name]]
    if not band:
        return f"no row of this log is {what}; {_kept(name, c)}"
    if len(band) < MIN_ROWS:
        return (
            f"only {len(band)} row{'s' if len(band) > 1 else ''} of this log "
            f"{'are' if len(band) > 1 else 'is'} {what}, and {MIN_ROWS} are needed; "
            f"{_kept(name, c)}"
        )
    return None


def _edge_reason(name: str, value: float, model: _Model) -> str | None:
    """Why a fit that lands on the end of its search range is not taken (None when it does
    not): the log is beyond what any value of the range explains, so the value is the range's
    end, not the cluster's (``node_network`` at 1, no ceiling, is a value like any other)."""
    lo, hi = NODE_NETWORK_RANGE if name == NODE_NETWORK else LATENCY_SCALE_RANGE
    if value <= lo * (1 + 1e-9):
        end, pace = f"{lo:g}, the lowest value searched", "slower"
        if name == LATENCY_SCALE:
            pace = "faster"  # (per-message costs below a fifth of the given ones)
    elif name == LATENCY_SCALE and value >= hi * (1 - 1e-9):
        end, pace = f"{hi:g}, the highest value searched", "slower"
    else:
        return None
    return (
        f"refused: its band fits best at {end} ({lo:g} to {hi:g}): the log is {pace} than any "
        f"value of the range explains (a fault to find with `topo explain`, not this cluster's "
        f"constant); {_kept(name, model.c)}"
    )


def _flat_reason(name: str, band: list[_Point], model: _Model) -> str:
    lo, hi = NODE_NETWORK_RANGE if name == NODE_NETWORK else LATENCY_SCALE_RANGE
    why = ""
    if name == NODE_NETWORK:
        bounds = dict.fromkeys(model.expected(p, model.c).bound for p in band)
        why = (
            f" (they are bound by {', '.join(bounds)}, tighter than a server ceiling of "
            f"{lo:g} x its NICs)"
        )
    return (
        f"none of the {len(band)} rows of its band changes with it from {lo:g} to {hi:g}{why}; "
        f"{_kept(name, model.c)}"
    )


@dataclass
class _Run:
    """One calibration of a set of rows: the values, and what was fitted or not, and why."""

    nn: float
    scale: float
    fitted: dict[str, dict[str, Any]]
    not_fitted: dict[str, str]
    bands: dict[str, list[_Point]]
    large: list[dict[str, Any]]


def _fit(
    bands: dict[str, list[_Point]], model: _Model, names: list[str]
) -> tuple[float, float, dict[str, _Found]]:
    """The constants of ``names`` fitted on their bands, one at a time with the other held,
    until neither moves (at most three rounds); the others as given."""
    nn, scale = model.c.node_network_efficiency, 1.0
    found: dict[str, _Found] = {}
    for _ in range(3):
        before = (nn, scale)
        for name in names:
            f = _fit_one(name, bands[BANDS[name]], model, nn, scale)
            found[name] = f
            if not f.depends:
                continue
            if name == NODE_NETWORK:
                nn = f.value
            else:
                scale = f.value
        if (nn, scale) == before:
            break
    return nn, scale, found


def _guard(pts: list[_Point], model: _Model, nn: float, scale: float) -> list[dict[str, Any]]:
    """Per op with rows of 1 GiB and more: their median |error| as given and with (nn, scale)."""
    out = []
    for op in dict.fromkeys(p.op for p in pts):
        big = [p for p in pts if p.op == op and p.size >= LARGE_BYTES]
        if not big:
            continue
        before = _abs_errors(big, model, model.c.node_network_efficiency, 1.0)
        after = _abs_errors(big, model, nn, scale)
        out.append(
            {
                "op": op,
                "rows": len(big),
                "median_abs_error_before": float(np.median(before)),
                "median_abs_error_after": float(np.median(after)),
            }
        )
    return out


def _harm(table: list[dict[str, Any]]) -> tuple[float, dict[str, Any] | None]:
    """The op whose median |error| grows most beyond :data:`GUARD_TOLERANCE`, and by how much
    beyond it (0 and None when none does)."""
    worst, which = 0.0, None
    for g in table:
        d = g["median_abs_error_after"] - g["median_abs_error_before"] - GUARD_TOLERANCE
        if d > worst + 1e-12:
            worst, which = d, g
    return worst, which


def _gain(
    name: str, band: list[_Point], model: _Model, nn: float, scale: float
) -> tuple[int, float, float]:
    """The rows of a constant's band that its fitted value moves (by more than 0.1%, the
    other constant as fitted), and their median |error| with it as given and as fitted."""
    given = (model.c.node_network_efficiency, scale) if name == NODE_NETWORK else (nn, 1.0)
    before = model.log_errors(band, *given)
    after = model.log_errors(band, nn, scale)
    moved = np.abs(after - before) > 1e-3
    if not moved.any():
        return 0, 0.0, 0.0
    b = float(np.median(np.abs(np.expm1(before[moved]))))
    a = float(np.median(np.abs(np.expm1(after[moved]))))
    return int(moved.sum()), b, a


def _gain_reason(
    name: str, moved: int, before: float, after: float, nn: float, scale: float, model: _Model
) -> str:
    """Why a fit that does not lower the median |error| of the rows it moves by
    :data:`MIN_GAIN` is not taken."""
    value = nn if name == NODE_NETWORK else scale
    if moved == 0:
        return f"the rows of its band fit best at the value given; {_kept(name, model.c)}"
    if after >= before:  # the band's fit is better on its rows overall, not on those it moves
        return (
            f"fitted on its band to {value:.3f}, it takes the {moved} rows it moves from "
            f"{before:.1%} to {after:.1%} median |error| (no better); {_kept(name, model.c)}"
        )
    return (
        f"fitted on its band to {value:.3f}, it takes the {moved} rows it moves only from "
        f"{before:.1%} to {after:.1%} median |error| (under {MIN_GAIN * 100:g} point better: "
        f"within a log's noise); {_kept(name, model.c)}"
    )


def _run(pts: list[_Point], model: _Model) -> _Run:
    """Bands, fits and the guard on ``pts`` (the module's docstring)."""
    c = model.c
    bands = _bands(pts, model)
    not_fitted: dict[str, str] = {}
    names = []
    for name in (NODE_NETWORK, LATENCY_SCALE):
        why = _band_reason(name, bands[BANDS[name]], c)
        if why is None:
            names.append(name)
        else:
            not_fitted[name] = why
    while True:
        nn, scale, found = _fit(bands, model, names)
        large = _guard(pts, model, nn, scale)
        flat = [k for k in names if not found[k].depends]
        for name in flat:
            not_fitted[name] = _flat_reason(name, bands[BANDS[name]], model)
            names.remove(name)
        if flat:
            continue
        edge = {k: _edge_reason(k, nn if k == NODE_NETWORK else scale, model) for k in names}
        for name, why in edge.items():
            if why is not None:
                not_fitted[name] = why
                names.remove(name)
        if len(names) < len(edge):
            continue
        small = {k: _gain(k, bands[BANDS[k]], model, nn, scale) for k in names}
        for name, (moved, before, after) in small.items():
            if moved == 0 or before - after < MIN_GAIN:
                not_fitted[name] = _gain_reason(name, moved, before, after, nn, scale, model)
                names.remove(name)
        if len(names) < len(small):
            continue
        _, op = _harm(large)
        if op is None or not names:
            break
        # refuse the constant that does the most harm on its own; refit the others without it
        alone = {
            k: _harm(
                _guard(
                    pts,
                    model,
                    nn if k == NODE_NETWORK else c.node_network_efficiency,
                    scale if k == LATENCY_SCALE else 1.0,
                )
            )[0]
            for k in names
        }
        bad = max(names, key=lambda k: alone[k])
        value = nn if bad == NODE_NETWORK else scale
        not_fitted[bad] = (
            f"refused: fitted on its band to {value:.3f}, it takes the rows of 1 GiB and more "
            f"of {op['op']} from {op['median_abs_error_before']:.1%} to "
            f"{op['median_abs_error_after']:.1%} median |error| (the guard allows "
            f"{GUARD_TOLERANCE * 100:g} points more); {_kept(bad, c)}"
        )
        names.remove(bad)
    fitted = {
        k: {
            "value": float(nn if k == NODE_NETWORK else scale),
            "given": c.node_network_efficiency if k == NODE_NETWORK else 1.0,
            "band": BANDS[k],
            "rows": len(bands[BANDS[k]]),
            "ops": list(dict.fromkeys(p.op for p in bands[BANDS[k]])),
            "sizes": _sizes(bands[BANDS[k]]),
            "range": [min(found[k].lo, found[k].value), max(found[k].hi, found[k].value)],
        }
        for k in names
    }
    order = [k for k in (NODE_NETWORK, LATENCY_SCALE) if k in not_fitted]
    return _Run(nn, scale, fitted, {k: not_fitted[k] for k in order}, bands, large)


def _abs_errors(pts: list[_Point], model: _Model, nn: float, scale: float) -> np.ndarray:
    """``|expected / measured busbw - 1|`` per row."""
    return np.abs(np.expm1(model.log_errors(pts, nn, scale)))


def _held(op: str, band: str, run: _Run, pts: list[_Point], model: _Model) -> HeldOut:
    e = _abs_errors(pts, model, run.nn, run.scale)
    given = _abs_errors(pts, model, model.c.node_network_efficiency, 1.0)
    return HeldOut(
        op,
        band,
        float(run.nn),
        float(run.scale),
        len(pts),
        float(np.median(e)),
        float(e.max()),
        float(np.median(given)),
    )


def calibrate(G: nx.Graph, tests: list[NcclTest], c: NcclConstants) -> Calibration:
    """Fit ``node_network`` and the latency scale to a log, each on its own size band, guard
    the large rows, and check the fit on what it did not see.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the log ran on.
    tests : list of NcclTest
        The log's tests (:func:`topo.formats.nccl_tests_json.read_nccl_tests_any`); rows
        with a busbw of 0 are left out.
    c : NcclConstants
        The constants calibrated (shipped, or with a user's overrides); the bands are read at
        these values.

    Returns
    -------
    Calibration
        The values, what was fitted on which rows and what was not and why, the guard per op,
        and the held-out errors (per op, or per size band on a one-op log).

    Raises
    ------
    TopoError
        No test of a modelled op, or a test without its ranks.

    References
    ----------
    The bands: :func:`topo.collective.expected.expected` (``binds`` and the time's parts).
    The loss: scipy ``least_squares(loss="soft_l1")``, as :func:`topo.collective.training.fit`.
    """
    pts = _points(G, tests)
    model = _Model(c)
    run = _run(pts, model)
    ops = list(dict.fromkeys(p.op for p in pts))
    held: list[HeldOut] = []
    notes: list[str] = []
    if len(ops) > 1:
        held_out_by = "op"
        for op in ops:
            rest = _run([p for p in pts if p.op != op], model)
            held.append(_held(op, "", rest, [p for p in pts if p.op == op], model))
    elif run.bands["latency"] and run.bands["bandwidth"]:
        held_out_by = "size band"
        for band, other in (("latency", "bandwidth"), ("bandwidth", "latency")):
            rest = _run(run.bands[other], model)
            held.append(_held(ops[0], band, rest, run.bands[band], model))
        notes.append(
            f"one op ({ops[0]}): the fit cannot be checked on other ops. Each size band is "
            "predicted by the calibration of the other band, with its own constant as given: "
            "this shows what the other band's fit does to it, not how its own constant carries "
            "over"
        )
    else:
        held_out_by = "none"
        have = [b for b in ("latency", "bandwidth") if run.bands[b]]
        notes.append(
            f"one op ({ops[0]}) with rows in "
            f"{'the ' + have[0] + ' band only' if have else 'neither band'}: the fit cannot be "
            "checked on this log (nothing is left to hold out)"
        )
    for name, f in run.fitted.items():
        if len(f["ops"]) == 1:
            what = (
                "a server's ceiling, it sets every op's bandwidth"
                if name == NODE_NETWORK
                else "it scales every per-operation and per-message cost alike"
            )
            notes.append(
                f"{name} is fitted on {f['ops'][0]} alone: {what}, and rows of one op cannot "
                "show that it carries over to other ops or algorithms"
            )
    if not run.large:
        notes.append(
            "no row of 1 GiB or more: the guard that keeps the large rows from getting worse "
            "cannot run on this log"
        )
    errs = model.log_errors(pts, run.nn, run.scale)
    return Calibration(
        node_network=run.nn,
        latency_scale=run.scale,
        ops=ops,
        rows=len(pts),
        rms_log_error=float(np.sqrt(np.mean(np.square(errs)))),
        held_out=held,
        held_out_by=held_out_by,
        fitted=run.fitted,
        not_fitted=run.not_fitted,
        bands={k: len(v) for k, v in run.bands.items()},
        large_rows=run.large,
        notes=notes,
        given={
            "node_network": c.node_network_efficiency,
            "expected": {k: copy.deepcopy(c.data["expected"][k]) for k in LATENCY_KEYS},
        },
    )


def _toml_value(v: Any, scale: float) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(f"{float(x) * scale:.4f}" for x in v) + "]"
    return f"{float(v) * scale:.4f}"


def cluster_toml(cal: Calibration, log: str | Path) -> str:
    """The cluster file of a calibration, for ``topo collective --constants``.

    Parameters
    ----------
    cal : Calibration
        From :func:`calibrate`.
    log : str or Path
        The log it was fitted to (named in the file).

    Returns
    -------
    str
        TOML of the constants file's shape holding only the fitted values:
        ``efficiency.node_network`` and, for the latency scale, the ``[expected]`` costs of
        :data:`LATENCY_KEYS` (the given values times the scale, µs); comments name the log,
        the rows and band each was fitted on, what was not fitted and why, and the held-out
        errors.

    Raises
    ------
    TopoError
        Nothing was fitted (the file would change nothing).
    """
    if not cal.fitted:
        why = "; ".join(f"{k} not fitted: {v}" for k, v in cal.not_fitted.items())
        raise TopoError(
            f"calibrate {Path(log).name}: nothing fitted, no file written ({why})",
            names=("calibrate",),
        )
    lines = [
        f"# Calibrated by `topo collective --calibrate {Path(log).name}` ({cal.rows} rows of "
        f"{', '.join(cal.ops)}).",
        "# Fitted to this cluster's own log, not from a source: use it for this cluster only.",
    ]
    for k, f in cal.fitted.items():
        lines.append(
            f"# {k} = {f['value']:.4f}: fitted on {f['rows']} rows of the {f['band']} band "
            f"({', '.join(f['ops'])}; {f['sizes']})."
        )
    for k, why in cal.not_fitted.items():
        lines.append(f"# {k} not fitted: {why}.")
    if cal.held_out:
        by = "the other ops" if cal.held_out_by == "op" else "the other size band"
        lines.append(f"# Held out (fitted on {by}, predicted on this one):")
        for h in cal.held_out:
            lines.append(
                f"#   {h.op}{' ' + h.band + ' band' if h.band else ''}: median |error| "
                f"{h.median_abs_error * 100:.1f}%, max {h.max_abs_error * 100:.1f}% over "
                f"{h.rows} rows"
            )
    else:
        lines.append("# Not checked on held-out rows: this log has nothing to hold out.")
    if NODE_NETWORK in cal.fitted:
        lines += ["", "[efficiency]", f"node_network = {cal.node_network:.4f}"]
    if LATENCY_SCALE in cal.fitted:
        lines += [
            "",
            "[expected]",
            f"# the given per-operation and per-message costs x {cal.latency_scale:.4f} (µs)",
        ]
        for key in LATENCY_KEYS:
            lines.append(f"{key} = {_toml_value(cal.given['expected'][key], cal.latency_scale)}")
    lines.append("")
    return "\n".join(lines)
