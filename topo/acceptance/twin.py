"""The design's expected busbw table as one file: a digital twin for software with no hardware.

A mock NCCL, a scheduler's test or a simulator looks a collective up by (op, ranks, size) and
gets what this design should give: ``time_us`` and ``busbw_GBps`` (nccl-tests' columns, the
expected curve of :mod:`topo.collective.expected`), with the tolerance band of
:data:`topo.acceptance.kit.BAND`. CSV (one row per op, ranks and size; :data:`COLUMNS`) or
JSON (``{"columns": [...], "rows": [[...], ...]}`` with the same columns, and the tolerance).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from topo.collective import CollectiveReport
from topo.collective.explain import AGREE
from topo.errors import TopoError

COLUMNS = (
    "op",
    "ranks",
    "nodes",
    "gpus_per_node",
    "size_bytes",
    "time_us",
    "algbw_GBps",
    "busbw_GBps",
    "busbw_low_GBps",
    "busbw_high_GBps",
    "algorithm",
    "protocol",
)
"""The twin's columns: sizes in B, times in µs, bandwidths in GB/s (1e9 B/s)."""

TWIN_FORMATS = ("csv", "json")


def twin_rows(reports: Iterable[CollectiveReport]) -> list[dict[str, Any]]:
    """One row per (op, ranks, size) of the expected curves, sorted by op, ranks, size.

    Parameters
    ----------
    reports : iterable of CollectiveReport
        Expected tables (:func:`topo.collective.collective_table`); a (op, ranks, G, size)
        given twice (two scales of the same size) is kept once.

    Returns
    -------
    list of dict
        Keys :data:`COLUMNS`; ``busbw_low_GBps`` / ``busbw_high_GBps`` = busbw divided and
        multiplied by exp(AGREE) = 1.15 (:data:`topo.collective.explain.AGREE`).
    """
    import math

    band = math.exp(AGREE)
    seen: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    for rep in reports:
        for r in rep.rows:
            key = (rep.op, rep.gpus, rep.gpus_per_node, r.size_bytes)
            seen.setdefault(
                key,
                {
                    "op": rep.op,
                    "ranks": rep.gpus,
                    "nodes": rep.nodes,
                    "gpus_per_node": rep.gpus_per_node,
                    "size_bytes": r.size_bytes,
                    "time_us": r.time_us,
                    "algbw_GBps": r.algbw_GBps,
                    "busbw_GBps": r.busbw_GBps,
                    "busbw_low_GBps": r.busbw_GBps / band,
                    "busbw_high_GBps": r.busbw_GBps * band,
                    "algorithm": r.algorithm,
                    "protocol": r.protocol,
                },
            )
    return [seen[k] for k in sorted(seen)]


def write_twin(rows: list[dict[str, Any]], fmt: str) -> str:
    """The twin's text.

    Parameters
    ----------
    rows : list of dict
        From :func:`twin_rows`.
    fmt : str
        ``csv`` or ``json``.

    Returns
    -------
    str
        CSV with a header of :data:`COLUMNS`, or JSON ``{"columns", "tolerance", "rows"}``
        (each row a list in the columns' order).

    Raises
    ------
    TopoError
        ``fmt`` not one of :data:`TWIN_FORMATS`.
    """
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([_cell(r[c]) for c in COLUMNS])
        return buf.getvalue()
    if fmt == "json":
        doc = {
            "columns": list(COLUMNS),
            "tolerance": {"agree": AGREE, "band": "busbw / exp(agree) to busbw x exp(agree)"},
            "rows": [[r[c] for c in COLUMNS] for r in rows],
        }
        return json.dumps(doc) + "\n"
    raise TopoError(f"a twin is written as {' or '.join(TWIN_FORMATS)}, got {fmt!r}")


def _cell(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


__all__ = ["COLUMNS", "TWIN_FORMATS", "twin_rows", "write_twin"]
