"""A summary table of pairwise nccl-tests runs: one row per test run on two servers.

Operators qualify a cluster by running nccl-tests on every pair of servers and collecting one
line per run; the shared ``xxrjun`` benchmark scripts write such a table as CSV with the columns
``file,test,N,G,nodes,minBytes,maxBytes,avg_bus_bw_GBs,peak_busbw_GBs``. This reader takes any
CSV with a header naming at least:

- ``test``: the nccl-tests binary (``alltoall_perf``, ``sendrecv_perf``, ...) or op name;
- ``G``: GPUs (ranks) per server;
- ``nodes``: the two servers, as a Slurm hostlist (``cnode2-[001,003]``, ``a,b``);
- ``peak_busbw_GBs`` (or ``busbw_GBs``): the run's busbw at its largest size (GB/s), empty
  when the run failed;

and, when present, ``N`` (servers: must be 2), ``maxBytes`` (the largest size, B) and ``file``
(the run's log, for messages). Hostlists are expanded by python-hostlist (Slurm's syntax).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import hostlist

from topo.errors import FormatError
from topo.files import read_text
from topo.formats.nccl_tests_checks import MAX_GBPS

REQUIRED = ("test", "G", "nodes")
BUSBW_COLUMNS = ("peak_busbw_GBs", "busbw_GBs")


@dataclass(frozen=True)
class PairRun:
    """One nccl-tests run on two servers.

    Attributes
    ----------
    op : str
        The collective (``alltoall``, ``sendrecv``, ``all_reduce``, ...).
    gpus_per_node : int
        Ranks per server.
    servers : tuple of str
        The two servers, sorted.
    busbw_GBps : float or None
        busbw at the run's largest size (GB/s); None when the run failed.
    size_bytes : int or None
        The run's largest size (B), when the table gives it.
    source : str
        ``FILE:LINE`` of the table row (and the run's log name when given).
    """

    op: str
    gpus_per_node: int
    servers: tuple[str, str]
    busbw_GBps: float | None
    size_bytes: int | None
    source: str

    @property
    def failed(self) -> bool:
        """The run gave no bandwidth (NCCL failed, the log has no table)."""
        return self.busbw_GBps is None


def is_pair_summary(text: str) -> bool:
    """Whether ``text`` starts with a CSV header naming this table's required columns."""
    first = text.split("\n", 1)[0]
    cols = {c.strip() for c in first.split(",")}
    return set(REQUIRED) <= cols and any(c in cols for c in BUSBW_COLUMNS)


def read_pair_summary(path: str | Path, *, text: str | None = None) -> list[PairRun]:
    """Read a pairwise summary table (see the module docstring for its columns; ``text``: its
    content, already read; by default the file is read here).

    Returns
    -------
    list of PairRun
        One per data row, in file order.

    Raises
    ------
    FormatError
        Not such a table (a required column missing), or a row whose ``G`` is not a positive
        integer, whose ``N`` is not 2, whose ``nodes`` are not two servers, or whose busbw
        is not a number from 0 to 1e6 GB/s (the file and line named).
    """
    p = Path(path)
    if text is None:
        text = read_text(p)
    if not is_pair_summary(text):
        raise FormatError(
            p,
            f"not a pairwise summary: the header must name {', '.join(REQUIRED)} and one of "
            f"{', '.join(BUSBW_COLUMNS)}",
            line=1,
        )
    reader = csv.DictReader(io.StringIO(text))
    col = next(c for c in BUSBW_COLUMNS if c in (reader.fieldnames or []))
    runs: list[PairRun] = []
    for row in reader:
        line = reader.line_num
        runs.append(_run(p, line, row, col))
    if not runs:
        raise FormatError(p, "a pairwise summary with no row")
    return runs


def _run(p: Path, line: int, row: dict[str, str | None], col: str) -> PairRun:
    def cell(name: str) -> str:
        return (row.get(name) or "").strip()

    g = cell("G")
    if not g.isdigit() or int(g) < 1:
        raise FormatError(p, f"G {g!r} is not a positive number of GPUs per server", line=line)
    n = cell("N")
    if n and n != "2":
        raise FormatError(p, f"N {n!r}: a pairwise run is on 2 servers", line=line)
    try:
        hosts = hostlist.expand_hostlist(cell("nodes"))
    except hostlist.BadHostlist as exc:
        raise FormatError(
            p, f"nodes {cell('nodes')!r} is not a hostlist: {exc}", line=line
        ) from None
    if len(set(hosts)) != 2:
        raise FormatError(
            p, f"nodes {cell('nodes')!r} names {len(set(hosts))} servers, not 2", line=line
        )
    raw = cell(col)
    busbw: float | None = None
    if raw:
        try:
            busbw = float(raw)
        except ValueError:
            raise FormatError(p, f"{col} {raw!r} is not a number", line=line) from None
        if not (math.isfinite(busbw) and 0 <= busbw <= MAX_GBPS):
            raise FormatError(p, f"{col} {raw} is not from 0 to {MAX_GBPS:g} GB/s", line=line)
    size = cell("maxBytes")
    log = cell("file")
    test = cell("test")
    op = test[: -len("_perf")] if test.endswith("_perf") else test
    if not op:
        raise FormatError(p, "test is empty", line=line)
    a, b = sorted(set(hosts))
    return PairRun(
        op=op,
        gpus_per_node=int(g),
        servers=(a, b),
        busbw_GBps=busbw,
        size_bytes=int(size) if size.isdigit() else None,
        source=f"{p}:{line}" + (f" ({log})" if log else ""),
    )
