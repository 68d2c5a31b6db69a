"""Calibration of the collective model to a cluster's own nccl-tests log, held honest.

The model (:mod:`topo.collective.model`) takes every rate from the fabric and every latency
and cap from NCCL's code. Two things it cannot know about a particular cluster are fitted,
and nothing else:

- ``efficiency.node_network``: the share of a server's summed NIC rate it drives at once
  (a host's PCIe, memory or switch limit; 1.0 = none);
- ``latency.extra_step_us``: latency each step of an algorithm adds beyond NCCL's per-hop
  values (proxy threads, flag polling, the cluster's switches).

Both enter every op. :func:`calibrate` fits them to all of a log's tests (least squares of
log(predicted / measured busbw) over every row, on a grid refined twice) and, to show how well
the fit carries over, once per op to the *other* ops only, predicting the held-out op: the
leave-one-op-out error. A calibration that only fits the ops it was given shows up there.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.constants import NcclConstants
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.collective.model import OPS
from topo.collective.report import predict_row
from topo.errors import TopoError
from topo.formats.nccl_tests import NcclTest

NODE_NETWORK_RANGE = (0.5, 1.0)
"""Range searched for ``node_network`` (dimensionless)."""
STEP_LATENCY_RANGE_US = (0.0, 20.0)
"""Range searched for ``extra_step_us`` (µs)."""


@dataclass(frozen=True)
class HeldOut:
    """One op predicted by a calibration fitted on the log's other ops.

    Attributes
    ----------
    op : str
        The held-out op.
    node_network, step_latency_us : float
        The values fitted without it (dimensionless, µs).
    rows : int
        Its rows predicted.
    median_abs_error, max_abs_error : float
        Median and largest ``|predicted / measured busbw - 1|`` over its rows (fraction).
    """

    op: str
    node_network: float
    step_latency_us: float
    rows: int
    median_abs_error: float
    max_abs_error: float


@dataclass(frozen=True)
class Calibration:
    """The fit on every op of a log, and the leave-one-op-out check.

    Attributes
    ----------
    node_network, step_latency_us : float
        Fitted on all the log's tests.
    ops : list of str
        The ops of the log.
    rows : int
        Rows fitted.
    rms_log_error : float
        RMS of log(predicted / measured busbw) at the fit (dimensionless).
    held_out : list of HeldOut
        One per op (empty when the log has a single op).
    """

    node_network: float
    step_latency_us: float
    ops: list[str]
    rows: int
    rms_log_error: float
    held_out: list[HeldOut]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def with_calibration(c: NcclConstants, node_network: float, step_us: float) -> NcclConstants:
    """The constants with the two calibrated values set.

    Parameters
    ----------
    c : NcclConstants
        The model's constants.
    node_network : float
        Server ceiling, in (0, 1].
    step_us : float
        Extra latency per algorithm step (µs), >= 0.

    Returns
    -------
    NcclConstants
    """
    data = copy.deepcopy(c.data)
    data["efficiency"]["node_network"] = float(node_network)
    data["latency"]["extra_step_us"] = float(step_us)
    return NcclConstants(data, c.origin + " + calibration")


_Case = tuple[str, FabricRates, list[tuple[int, int, str, float]]]


def _cases(G: nx.Graph, tests: list[NcclTest]) -> list[_Case]:
    """Per test: its op, its sub-cluster's rates (solved once) and its measured rows."""
    cases = []
    for t in tests:
        if t.op not in OPS:
            continue
        if t.ranks is None:
            raise TopoError(f"the log lists no ranks for {t.op}_perf: cannot calibrate on it")
        rates = fabric_rates(G, t.ranks, t.gpus_per_node)
        rows = [(m.size_bytes, m.count, m.type, m.busbw_GBps) for m in t.rows if m.busbw_GBps > 0]
        cases.append((t.op, rates, rows))
    if not cases:
        raise TopoError("--calibrate: the log has no test of an op topo models")
    return cases


def _log_errors(cases: list[_Case], c: NcclConstants) -> list[float]:
    out = []
    for op, rates, rows in cases:
        for size, count, dtype, measured in rows:
            p = predict_row(op, size, count, dtype, rates, c)
            out.append(math.log(p.busbw_GBps / measured))
    return out


def _fit(cases: list[_Case], c: NcclConstants) -> tuple[float, float, float]:
    """Least squares of the log errors over a 6 x 6 grid, refined twice around the best; on
    ties the highest ``node_network`` (the least ceiling) and the lowest latency win."""
    (a_lo, a_hi), (b_lo, b_hi) = NODE_NETWORK_RANGE, STEP_LATENCY_RANGE_US
    best = (math.inf, 1.0, 0.0)
    for _ in range(3):
        for a in np.linspace(a_hi, a_lo, 6):
            for b in np.linspace(b_lo, b_hi, 6):
                e = _log_errors(cases, with_calibration(c, a, b))
                cost = float(np.mean(np.square(e)))
                if cost < best[0]:
                    best = (cost, float(a), float(b))
        da, db = (a_hi - a_lo) / 5, (b_hi - b_lo) / 5
        a_lo, a_hi = max(NODE_NETWORK_RANGE[0], best[1] - da), min(1.0, best[1] + da)
        b_lo, b_hi = max(0.0, best[2] - db), best[2] + db
    return best[1], best[2], math.sqrt(best[0])


def calibrate(G: nx.Graph, tests: list[NcclTest], c: NcclConstants) -> Calibration:
    """Fit ``node_network`` and ``extra_step_us`` to a log, and check each op held out.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the log ran on.
    tests : list of NcclTest
        The log's tests (:func:`topo.formats.nccl_tests_json.read_nccl_tests_any`).
    c : NcclConstants
        The model's constants (NCCL's; the two fitted values are replaced).

    Returns
    -------
    Calibration
        The values fitted on every op, and per op the error of a fit on the others.

    Raises
    ------
    TopoError
        No test of a modelled op, or a test without its ranks.
    """
    cases = _cases(G, tests)
    a, b, rms = _fit(cases, c)
    ops = list(dict.fromkeys(op for op, _, _ in cases))
    held: list[HeldOut] = []
    for op in ops if len(ops) > 1 else []:
        rest = [k for k in cases if k[0] != op]
        mine = [k for k in cases if k[0] == op]
        ha, hb, _ = _fit(rest, c)
        errs = [abs(math.exp(e) - 1) for e in _log_errors(mine, with_calibration(c, ha, hb))]
        held.append(HeldOut(op, ha, hb, len(errs), float(np.median(errs)), max(errs)))
    rows = sum(len(k[2]) for k in cases)
    return Calibration(a, b, ops, rows, rms, held)


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
        TOML of the same shape as the constants file, holding the two fitted values.
    """
    lines = [
        f"# Calibrated by `topo collective --calibrate {Path(log).name}` on {cal.rows} rows of "
        f"{', '.join(cal.ops)}.",
        "# Fitted to this cluster's own log, not from a source: use it for this cluster only.",
        "# Leave-one-op-out (fitted on the other ops, predicted on this one):",
    ]
    for h in cal.held_out:
        lines.append(
            f"#   {h.op}: median |error| {h.median_abs_error * 100:.1f}%, "
            f"max {h.max_abs_error * 100:.1f}% over {h.rows} rows"
        )
    lines += [
        "",
        "[efficiency]",
        f"node_network = {cal.node_network:.4f}",
        "",
        "[latency]",
        f"extra_step_us = {cal.step_latency_us:.4f}",
        "",
    ]
    return "\n".join(lines)
