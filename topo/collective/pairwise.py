"""Which server, or which pair's path, explains the slow runs of a pairwise sweep.

A pairwise sweep runs one nccl-tests test on every pair of servers
(:mod:`topo.formats.pair_summary`). For each (test, GPUs per server) group,
:func:`locate_slow` holds every pair's busbw against the group's median pair:

- a pair is **slow** when its busbw is more than 15% under the median
  (``log(busbw / median) < -AGREE``, :data:`topo.collective.explain.AGREE`);
- a **server is located** when the median over all of its pairs is slow: a fault in one
  server (a NIC down or trained at a lower rate, a PCIe link at half width, GPUDirect RDMA
  off) slows every pair it is in, while a healthy server's median pair is a healthy pair even
  when a few of its pairs are slow. The median needs a majority of the server's pairs slow,
  so one bad server cannot drag a healthy partner in;
- a slow pair with neither server located points at the **path** between the two (a cable,
  a switch port, an ECMP collision of the pair's flows); a pair slow in several groups (tests
  or GPU counts) is listed as **recurring**: a path fault, not noise;
- failed runs (no bandwidth) are counted per server: a server in more failed pairs than the
  others is named.

The design's expected busbw for a pair (two servers, ``G`` GPUs each, at the table's largest
size) is given by the caller (:func:`topo.collective.predict.predict_row`) so the group's
median pair is also held against the design.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topo.collective.explain import AGREE
from topo.formats.pair_summary import PairRun

MIN_PAIRS = 3
"""A server is located only from at least this many measured pairs."""


@dataclass(frozen=True)
class ServerFinding:
    """A server whose pairs are slow: its median pair busbw (GB/s), that median as a ratio
    of the group's median pair, and how many of its measured pairs are slow."""

    server: str
    median_busbw_GBps: float
    ratio: float
    slow_pairs: int
    pairs: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "server": self.server,
            "median_busbw_GBps": self.median_busbw_GBps,
            "ratio": self.ratio,
            "slow_pairs": self.slow_pairs,
            "pairs": self.pairs,
        }


@dataclass(frozen=True)
class PairGroup:
    """The pairs of one (test, GPUs per server) group and what locates their slow runs.

    Attributes
    ----------
    op : str
    gpus_per_node : int
    pairs : int
        Measured pairs (failed runs excluded).
    median_busbw_GBps : float
        The group's median pair busbw (GB/s).
    expected_busbw_GBps : float or None
        The design's busbw for a pair (GB/s), when the caller gave a design.
    servers : list of ServerFinding
        Located servers, slowest first.
    slow_paths : list of (str, str, float)
        Slow pairs with neither server located, and their busbw (GB/s), slowest first.
    failed : list of (str, str)
        Pairs whose run failed.
    failed_servers : list of (str, int)
        Servers in more failed pairs than a server's fair share (at least 2, more than
        twice the mean count), with their count.
    """

    op: str
    gpus_per_node: int
    pairs: int
    median_busbw_GBps: float
    expected_busbw_GBps: float | None
    servers: list[ServerFinding] = field(default_factory=list)
    slow_paths: list[tuple[str, str, float]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    failed_servers: list[tuple[str, int]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """One sentence: the median pair against the design, then what is located."""
        parts = []
        if self.expected_busbw_GBps:
            x = self.median_busbw_GBps / self.expected_busbw_GBps
            parts.append(
                f"median pair {self.median_busbw_GBps:.1f} GB/s, "
                + ("agrees with" if abs(math.log(x)) <= AGREE else f"{x:.2f}x")
                + f" the design's {self.expected_busbw_GBps:.1f} GB/s"
            )
        else:
            parts.append(f"median pair {self.median_busbw_GBps:.1f} GB/s")
        if self.servers:
            parts.append(
                "slow servers: "
                + ", ".join(
                    f"{s.server} ({s.slow_pairs} of {s.pairs} pairs slow, its median pair "
                    f"{s.ratio:.2f}x the group's)"
                    for s in self.servers
                )
            )
        if self.slow_paths:
            parts.append(f"{len(self.slow_paths)} slow pairs with no slow server (paths)")
        if not self.servers and not self.slow_paths:
            parts.append("no slow server or path")
        if self.failed_servers:
            parts.append(
                "failing servers: "
                + ", ".join(f"{s} ({k} failed pairs)" for s, k in self.failed_servers)
            )
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "op": self.op,
            "gpus_per_node": self.gpus_per_node,
            "pairs": self.pairs,
            "median_busbw_GBps": self.median_busbw_GBps,
            "expected_busbw_GBps": self.expected_busbw_GBps,
            "servers": [s.to_dict() for s in self.servers],
            "slow_paths": [{"servers": [a, b], "busbw_GBps": x} for a, b, x in self.slow_paths],
            "failed": [list(p) for p in self.failed],
            "failed_servers": [{"server": s, "failed_pairs": k} for s, k in self.failed_servers],
            "verdict": self.verdict,
        }


def locate_slow(
    runs: list[PairRun],
    expected: Callable[[str, int, int | None], float | None] | None = None,
) -> list[PairGroup]:
    """Group the runs by (op, GPUs per server) and locate their slow servers and paths.

    Parameters
    ----------
    runs : list of PairRun
        From :func:`topo.formats.pair_summary.read_pair_summary` or two-server logs. A pair
        run twice in a group keeps its better run.
    expected : callable, optional
        ``expected(op, gpus_per_node, size_bytes)``: the design's busbw (GB/s) for a pair, or
        None where the design cannot say.

    Returns
    -------
    list of PairGroup
        In (op, GPUs per server) order; groups with no measured pair are left out.
    """
    by: dict[tuple[str, int], list[PairRun]] = defaultdict(list)
    for r in runs:
        by[(r.op, r.gpus_per_node)].append(r)
    out = []
    for (op, g), rs in sorted(by.items()):
        best: dict[tuple[str, str], float] = {}
        for r in rs:
            if r.busbw_GBps is not None and r.busbw_GBps > 0:
                best[r.servers] = max(best.get(r.servers, 0.0), r.busbw_GBps)
        failed = sorted({r.servers for r in rs if r.failed} - set(best))
        if not best:
            continue
        med = statistics.median(best.values())
        logr = {p: math.log(x / med) for p, x in best.items()}
        nodes = sorted({s for p in best for s in p})
        found = []
        for s in nodes:
            mine = [v for p, v in logr.items() if s in p]
            if len(mine) < MIN_PAIRS:
                continue
            m = statistics.median(mine)
            if m < -AGREE:
                found.append(
                    ServerFinding(
                        server=s,
                        median_busbw_GBps=med * math.exp(m),
                        ratio=math.exp(m),
                        slow_pairs=sum(v < -AGREE for v in mine),
                        pairs=len(mine),
                    )
                )
        found.sort(key=lambda f: f.ratio)
        located = {f.server for f in found}
        paths = sorted(
            (
                (a, b, best[(a, b)])
                for (a, b), v in logr.items()
                if v < -AGREE and a not in located and b not in located
            ),
            key=lambda t: t[2],
        )
        fails = Counter(s for p in failed for s in p)
        mean = 2 * len(failed) / max(1, len(set(nodes) | set(fails)))
        failing = sorted(
            ((s, k) for s, k in fails.items() if k >= 2 and k > 2 * mean),
            key=lambda t: (-t[1], t[0]),
        )
        size = max((r.size_bytes for r in rs if r.size_bytes), default=None)
        out.append(
            PairGroup(
                op=op,
                gpus_per_node=g,
                pairs=len(best),
                median_busbw_GBps=med,
                expected_busbw_GBps=expected(op, g, size) if expected is not None else None,
                servers=found,
                slow_paths=paths,
                failed=failed,
                failed_servers=failing,
            )
        )
    return out


def recurring_paths(groups: list[PairGroup]) -> list[tuple[str, str, list[str]]]:
    """Pairs slow (as paths) in two or more groups: (server, server, the groups as
    ``op/G``), most groups first. A path fault, not noise: the same two servers are slow
    whatever the test."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for gr in groups:
        for a, b, _ in gr.slow_paths:
            seen[(a, b)].append(f"{gr.op}/G{gr.gpus_per_node}")
    return sorted(
        ((a, b, w) for (a, b), w in seen.items() if len(w) >= 2), key=lambda t: (-len(t[2]), t)
    )
