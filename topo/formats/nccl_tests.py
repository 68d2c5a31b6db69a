"""Reader of nccl-tests output logs (``all_reduce_perf`` ... ``sendrecv_perf``).

A log holds one or more tests, each opened by ``# Collective test starting: <name>_perf``
(nccl-tests >= 2.16.7; older logs start with ``# nThread``), a ``#  Rank ...`` line per rank
(``... on <host> device <d> ...``), the column header and one row per size::

    size  count  type  redop  root  time  algbw  busbw  #wrong  [time  algbw  busbw  #wrong]

(out-of-place, then in-place; times in µs, bandwidths in GB/s), closed by
``# Avg bus bandwidth : <x>``. The format is nccl-tests' ``src/common.cu``
(github.com/NVIDIA/nccl-tests).

Older layouts (nccl-tests 2.0.0 to 2.11.x; the shared header above came with 2.13.0, commit
51af557 "Resync with NCCL 2.13") print each operation's own leading columns, from the
``print_header``/``print_line_header`` of ``src/<op>.cu``, and an ``error`` column (the largest
difference from the expected values, ``%5.0le``, or ``N/A``) where 2.13 prints ``#wrong``:

=====================================  ================================
operation                              columns before ``time``
=====================================  ================================
all_reduce, reduce_scatter, alltoall   size count type redop
all_gather, sendrecv, hypercube        size count type
broadcast, gather, scatter             size count type root
reduce                                 size count type redop root
=====================================  ================================

nccl-tests 2.13.0 to 2.13.3 print an empty redop for all_gather, alltoall, broadcast, gather,
scatter and hypercube (``TimeTest(..., "", root)`` in ``src/<op>.cu``, ``"none"`` from 2.13.4,
commit d313d20): such a row has one column fewer than its header. A missing column reads as
nccl-tests 2.13.4 prints it: redop ``none``, root ``-1``. The
``error`` column is no count of wrong elements (``wrong`` is None); such a test's data check
is its ``# Out of bounds values`` footer. nccl-tests 1.x tables (columns ``bytes N type``,
times in ms) are refused.

Those logs have no ``Collective test starting`` line: the operation is the ``<name>_perf``
binary named on a line before the test (the command, e.g. ``mpirun ... ./build/all_reduce_perf
-b 8``), else the ``op`` the caller gives; with neither it is an error. An operation so given
is held against the table: its columns (:data:`OLD_LEAD`, before 2.13) and its sizes (the whole
buffer, ranks x count x word, for :data:`WHOLE_BUFFER`; count x word for the others) must be
its own, else it is an error.

A launcher's tag before each line (:data:`LINE_TAG`: ``mpirun --tag-output``,
``srun --label``) is removed first.

A test that failed (``Test NCCL failure``, ``Test failure``) or was cut off (no rows, or no
``Avg bus bandwidth`` line) is an error naming the test, the file and the line, not a silent
partial result.

The columns are redundant (size = count x word [x ranks], algbw = size / time, busbw = algbw
x the op's factor): a row whose columns disagree beyond the rounding of what nccl-tests prints
is left out with a line naming the file and the line (:func:`implausible`,
:attr:`NcclTest.left_out`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from topo.errors import FormatError
from topo.files import long_number, read_text

_START = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)(?:.*nccl-library=(\d+))?")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s.*\bon\s+(\S+)\s+device\s+(\d+)")
# nccl-tests common.cu: "device %2d [%04x:%02x:%02x] %s" (2.x; "[0x%02x] %s" before), the
# last field the CUDA device name (cudaDeviceProp.name, e.g. "NVIDIA A100-SXM4-80GB")
_DEVICE = re.compile(r"\bdevice\s+\d+\s+\[[^\]]*\]\s+(\S.*?)\s*$")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_FAIL = re.compile(r"(Test NCCL failure|Test CUDA failure|Test failure)(.*)")
_NTHREAD = re.compile(r"^#\s*nThread\s")
_RANK_LINE = re.compile(r"^#\s+Rank\b")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\b")
LINE_TAG = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s)")
"""A launcher's tag before each line: Open MPI's ``mpirun --tag-output``
(``[1,0]<stdout>:``), Slurm's ``srun --label`` (``0: ``); removed before reading."""
MID_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
"""Open MPI's tag inside a line: nccl-tests prints a row in several writes, and
``--tag-output`` tags each (``... -1[1,0]<stdout>:    85.70 ...``); replaced by a space."""
_COLUMNS = re.compile(r"^#\s*size\s+count\s+type\b")
_V1_COLUMNS = re.compile(r"^#\s*bytes\s+N\s+type\b")
# the test binary in a command line: ./build/all_reduce_perf, all_reduce_perf_mpi (NAME_SUFFIX)
_BINARY = re.compile(r"(?<![\w-])([a-z][a-z0-9]*(?:_[a-z0-9]+)*?)_perf(?:_\w+)?\b")

MAX_SIZE_BYTES = (1 << 63) - 1
"""Largest size (B) and count accepted in a row: nccl-tests prints them with ``%li``, a signed
64-bit integer (8 EiB)."""

MODERN_LEAD = ("redop", "root")
"""Columns between ``type`` and ``time`` since nccl-tests 2.13.0 (``src/common.cu``)."""

OLD_LEAD: dict[str, tuple[str, ...]] = {
    "all_reduce": ("redop",),
    "reduce_scatter": ("redop",),
    "alltoall": ("redop",),
    "all_gather": (),
    "sendrecv": (),
    "hypercube": (),
    "broadcast": ("root",),
    "gather": ("root",),
    "scatter": ("root",),
    "reduce": ("redop", "root"),
}
"""Columns between ``type`` and ``time`` of each operation in nccl-tests 2.0.0 to 2.11.x
(``print_header`` of ``src/<op>.cu``; alltoall from 2.9.0 (2020), sendrecv, gather, scatter
and hypercube from 2.11.0)."""


@dataclass(frozen=True)
class NcclTestRow:
    """One size of an nccl-tests table (out-of-place columns; in-place when printed).

    Attributes
    ----------
    size_bytes, count : int
        Size (B) and element count, as printed.
    type, redop : str
        Data type and reduction (``none`` when not a reduction).
    root : int
        Root rank (-1 when not rooted).
    time_us, algbw_GBps, busbw_GBps : float
        Out-of-place time (µs) and bandwidths (GB/s).
    inplace_time_us, inplace_algbw_GBps, inplace_busbw_GBps : float or None
        The in-place columns, when the test printed them.
    line : int
        1-based line in the file.
    wrong, inplace_wrong : int or None
        The ``#wrong`` columns: elements that failed nccl-tests' data check (out-of-place,
        in-place); None where it printed ``N/A`` (validation off, ``-c 0``) or no column.
    """

    size_bytes: int
    count: int
    type: str
    redop: str
    root: int
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    inplace_time_us: float | None
    inplace_algbw_GBps: float | None
    inplace_busbw_GBps: float | None
    line: int
    wrong: int | None = None
    inplace_wrong: int | None = None

    @property
    def failed_validation(self) -> bool:
        """Whether nccl-tests found wrong elements in this size (either column)."""
        return bool(self.wrong or self.inplace_wrong)


@dataclass(frozen=True)
class NcclTest:
    """One test of a log.

    Attributes
    ----------
    op : str
        The operation, from the binary's name without ``_perf`` (``all_reduce``, ...).
    rows : list of NcclTestRow
        One per size, in file order.
    ranks : int or None
        Ranks listed (``#  Rank`` lines); None if the log has no such lines.
    hosts : list of str
        Distinct hosts of the ranks, in order of first appearance.
    gpus_per_node : int or None
        ranks / hosts when every host has the same number of ranks.
    nccl_tests_version, nccl_version : str
        e.g. ``2.17.8`` and ``22902`` (``nccl-library``), empty when not printed.
    avg_busbw_GBps : float
        The ``Avg bus bandwidth`` line.
    line : int
        1-based line where the test starts.
    out_of_bounds : int or None
        The ``# Out of bounds values : N OK|FAILED`` footer's ``N`` (wrong results over the
        test); None when the log has no such line.
    devices : list of str
        The distinct GPU names of the rank lines (CUDA's device name, after the PCI bus id),
        in rank order; empty when the lines name none.
    nodes : int or None
        Servers the ranks ran on, where the source states it (the NCCL Inspector's
        ``nnodes``, which may name more servers than ``hosts`` lists); None otherwise.
    ranks_source : str
        Where in the file ``ranks`` and ``hosts`` come from, for messages (``"its '#  Rank'
        lines 3-21"``, ``"its 'devices' list"``); empty when it lists no ranks.
    left_out : list of str
        One line per result row the reader left out as implausible (:func:`implausible`):
        the file, the row's line (or ``results[i]``) and what disagrees.
    """

    op: str
    rows: list[NcclTestRow]
    ranks: int | None
    hosts: list[str]
    gpus_per_node: int | None
    nccl_tests_version: str
    nccl_version: str
    avg_busbw_GBps: float
    line: int
    extra: dict[str, str] = field(default_factory=dict)
    out_of_bounds: int | None = None
    devices: list[str] = field(default_factory=list)
    nodes: int | None = None
    ranks_source: str = ""
    left_out: list[str] = field(default_factory=list)


@dataclass
class _Open:
    name: str | None  # "<op>_perf" as the log names it; None when it does not
    line: int
    version: str = ""
    library: str = ""
    ranks: dict[int, str] = field(default_factory=dict)
    rank_lines: list[int] = field(default_factory=list)  # where the '#  Rank' lines are
    devices: dict[int, str] = field(default_factory=dict)
    rows: list[NcclTestRow] = field(default_factory=list)
    avg: float | None = None
    failure: tuple[int, str] | None = None
    out_of_bounds: int | None = None
    named_at: int | None = None  # the line that names the binary
    lead: tuple[str, ...] | None = None  # columns between type and time
    lead_line: int | None = None  # the column header's line (None: told by the rows)
    old: bool | None = None  # nccl-tests < 2.13: an 'error' column, not '#wrong'
    named_by_start: bool = False  # '# Collective test starting' named the op
    cpu_time: bool = False  # the time columns are 'cputime' (-C 1)

    @property
    def label(self) -> str:
        return f"test {self.name}" if self.name else "the test"


def _lead(path: Path, lineno: int, fields: list[str]) -> tuple[str, ...]:
    """The columns between ``type`` and ``time`` of a row whose table has no header line:
    told by the count of columns (and whether the 4th is a rank or a reduction)."""
    n = len(fields)
    if n in (9, 13):
        return MODERN_LEAD
    if n in (8, 12):
        return ("root",) if re.fullmatch(r"-?\d+", fields[3]) else ("redop",)
    if n in (7, 11):
        return ()
    raise FormatError(
        path,
        f"a result row has 9 or 13 columns (size count type redop root time algbw busbw "
        f"#wrong, then in-place; before nccl-tests 2.13 11 or 12, without redop or root), "
        f"got {n}",
        line=lineno,
    )


def _row(path: Path, lineno: int, fields: list[str], cur: _Open) -> NcclTestRow:
    if cur.lead is None:
        cur.lead = _lead(path, lineno, fields)
        if cur.old is None and cur.lead != MODERN_LEAD:
            cur.old = True
    lead = cur.lead
    k = 3 + len(lead)
    if lead == MODERN_LEAD and len(fields) in (k + 3, k + 7) and re.fullmatch(r"-?\d+", fields[3]):
        lead, k = ("root",), k - 1  # an empty redop (2.13.0-2.13.3: all_gather, ...)
    if len(fields) not in (k + 4, k + 8):
        head = " ".join(("size", "count", "type", *lead))
        raise FormatError(
            path,
            f"a result row has {k + 4} or {k + 8} columns ({head} time algbw busbw "
            f"{'error' if cur.old else '#wrong'}, then in-place"
            + (f", as the header on line {cur.lead_line}" if cur.lead_line else "")
            + f"), got {len(fields)}",
            line=lineno,
        )
    named = dict(zip(lead, fields[3:k], strict=True))
    tail = fields[k:]
    try:
        size, count = int(fields[0]), int(fields[1])
        root = int(named.get("root", "-1"))
        t, alg, bus = (float(x) for x in tail[0:3])
        ip: list[float | None] = (
            [float(x) for x in tail[4:7]] if len(tail) == 8 else [None, None, None]
        )
    except ValueError:
        raise FormatError(
            path, f"bad number in result row: {' '.join(fields)!r}", line=lineno
        ) from None
    check_size(path, size, count, lineno)
    _check_root(path, lineno, root)
    check = _error if cur.old else _wrong
    wrong = [check(path, lineno, tail[i]) if len(tail) > i else None for i in (3, 7)]
    return NcclTestRow(
        size_bytes=size,
        count=count,
        type=fields[2],
        redop=named.get("redop", "none"),
        root=root,
        time_us=t,
        algbw_GBps=alg,
        busbw_GBps=bus,
        inplace_time_us=ip[0],
        inplace_algbw_GBps=ip[1],
        inplace_busbw_GBps=ip[2],
        line=lineno,
        wrong=wrong[0],
        inplace_wrong=wrong[1],
    )


def check_size(path: str | Path, size: int, count: int, line: int | None = None) -> None:
    """Refuse a size (B) or an element count outside 0 to :data:`MAX_SIZE_BYTES`.

    Raises
    ------
    FormatError
        Naming the file (and the line, when given) and the limit.

    Examples
    --------
    >>> check_size("x.log", 1 << 63, 1, 5)
    Traceback (most recent call last):
    topo.errors.FormatError: x.log:5: size must be from 0 to 9,223,372,036,854,775,807 \
(nccl-tests prints a signed 64-bit count), got 9223372036854775808
    """
    for name, x in (("size", size), ("count", count)):
        if not 0 <= x <= MAX_SIZE_BYTES:
            shown = f"{x}" if len(str(x)) <= 24 else f"a number of {len(str(abs(x)))} digits"
            raise FormatError(
                path,
                f"{name} must be from 0 to {MAX_SIZE_BYTES:,} (nccl-tests prints a signed "
                f"64-bit count), got {shown}",
                line,
            )


def _error(path: Path, lineno: int, text: str) -> None:
    """An ``error`` column of nccl-tests < 2.13: ``%5.0le`` of the largest difference from
    the expected values, or ``N/A``; no count of wrong elements, so None."""
    if text == "N/A":
        return None
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x >= 0):
        raise FormatError(
            path,
            f"error must be a non-negative number (largest difference) or N/A, got {text!r}",
            lineno,
        )
    return None


def _wrong(path: Path, lineno: int, text: str) -> int | None:
    """A ``#wrong`` column: nccl-tests prints ``%6g`` of the count, or ``N/A``."""
    if text == "N/A":
        return None
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x >= 0 and x == int(x)):
        raise FormatError(
            path, f"#wrong must be a whole number of elements or N/A, got {text!r}", lineno
        )
    return int(x)


def _check_root(path: Path, lineno: int, root: int) -> None:
    """Refuse a root below -1 (nccl-tests prints -1 for a collective that has none)."""
    if root < -1:
        raise FormatError(path, f"root must be -1 (not rooted) or a rank, got {root}", lineno)


def _close(path: Path, cur: _Open, op: str | None) -> NcclTest:
    if cur.failure is not None:
        lineno, what = cur.failure
        raise FormatError(
            path,
            f"{cur.label} (started line {cur.line}) failed: {what.strip()}; no results",
            line=lineno,
        )
    if not cur.rows:
        raise FormatError(
            path,
            f"{cur.label} (started line {cur.line}) has no result rows: truncated log",
        )
    if cur.avg is None:
        raise FormatError(
            path,
            f"{cur.label} (started line {cur.line}) has no 'Avg bus bandwidth' line after "
            f"its last row (line {cur.rows[-1].line}): truncated log",
        )
    name = _name(path, cur, op)
    n = len(cur.ranks) or None
    rows, left_out = plausible_rows(name, n, cur.rows, f"{path}:", cur.cpu_time)
    if not rows:
        first = cur.rows[0]
        why = implausible(name, n, first, cur.cpu_time)
        raise FormatError(
            path,
            f"{name}_perf row of {first.size_bytes} B: {why}; "
            f"no plausible row is left in {cur.label} (started line {cur.line})",
            line=first.line,
        )
    hosts = list(dict.fromkeys(cur.ranks[r] for r in sorted(cur.ranks)))
    per_host = set(Counter(cur.ranks.values()).values())
    gpn = per_host.pop() if len(per_host) == 1 else None
    return NcclTest(
        op=name,
        rows=rows,
        ranks=len(cur.ranks) or None,
        hosts=hosts,
        gpus_per_node=gpn,
        nccl_tests_version=cur.version,
        nccl_version=cur.library,
        avg_busbw_GBps=cur.avg,
        line=cur.line,
        out_of_bounds=cur.out_of_bounds,
        devices=list(dict.fromkeys(cur.devices[r] for r in sorted(cur.devices))),
        ranks_source=_lines("its '#  Rank' line", cur.rank_lines),
        left_out=left_out,
    )


def _lines(what: str, lines: list[int]) -> str:
    """``what`` and the lines it is on: ``"its '#  Rank' lines 3-21"``; empty for none."""
    if not lines:
        return ""
    first, last = min(lines), max(lines)
    return f"{what} {first}" if first == last else f"{what}s {first}-{last}"


def _name(path: Path, cur: _Open, op: str | None) -> str:
    """The test's operation: as the log names it, else ``op``; checked against the columns
    of an old-layout table (:data:`OLD_LEAD`)."""
    if cur.name is not None:
        name, source = cur.name.removesuffix("_perf"), f"{cur.name} on line {cur.named_at}"
    elif op is not None:
        name, source = op, f"op {op}"
    else:
        err = FormatError(
            path,
            f"cannot tell which collective the test (started line {cur.line}) measured: the "
            "log has no '# Collective test starting' line (nccl-tests before 2.16.7) and names "
            "no *_perf binary before it; give op (all_reduce, all_gather, reduce_scatter, "
            "alltoall, broadcast, reduce, sendrecv) or put the command line above the test",
            line=cur.line,
        )
        err.param, err.names = "op", ("op",)
        raise err
    want = OLD_LEAD.get(name)
    if cur.old and want is not None and cur.lead is not None and cur.lead != want:
        mine = " ".join(("size", "count", "type", *cur.lead))
        theirs = [k for k, v in OLD_LEAD.items() if v == cur.lead]
        err = FormatError(
            path,
            f"the table of the test started line {cur.line} has the columns {mine!r} of "
            f"{' or '.join(theirs)} in nccl-tests before 2.13, not those of {name} "
            f"({' '.join(('size', 'count', 'type', *want))!r}); the collective is {source}",
            line=cur.lead_line or cur.rows[0].line,
        )
        if cur.name is None:
            err.param, err.names = "op", ("op",)
        raise err
    if not cur.named_by_start:
        _check_sizes(path, cur, name, source)
    return name


WORD_BYTES = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8,
    "uint64": 8, "half": 2, "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1,
}  # fmt: skip
"""Bytes per element of nccl-tests' type names (``test_typenames`` of ``src/common.cu``)."""

WHOLE_BUFFER = frozenset({"all_gather", "reduce_scatter", "alltoall"})
"""Ops whose size column is the whole buffer: ``count`` (one rank's share) times the word
size times the ranks (``getCollByteCount`` of ``src/<op>.cu``, 2.0 to 2.19); the size of
all_reduce, broadcast, reduce and sendrecv is ``count`` times the word size."""


def _check_sizes(path: Path, cur: _Open, name: str, source: str) -> None:
    """Refuse an op whose size convention the rows contradict (:data:`WHOLE_BUFFER`)."""
    per_rank = ("all_reduce", "broadcast", "reduce", "sendrecv")
    if name not in WHOLE_BUFFER and name not in per_rank:
        return
    n = len(cur.ranks) or None
    for r in cur.rows:
        word = WORD_BYTES.get(r.type)
        if word is None or r.count == 0:
            continue
        ratio = r.size_bytes / (r.count * word)
        if name in WHOLE_BUFFER:
            # ranks x count x word; a divisor of the ranks where NCCL_TESTS_SPLIT splits them
            whole = ratio == int(ratio) and (ratio > 1 or n == 1)
            if n is None or n == 1 or (whole and n % int(ratio) == 0):
                continue
            want = f"{n} ranks (or a group of them) x count x {word} B"
        else:
            if ratio == 1:
                continue
            want = f"count x {word} B"
        err = FormatError(
            path,
            f"size {r.size_bytes} is {ratio:g} x count {r.count} x {word} B ({r.type}), not "
            f"{want} as nccl-tests prints {name}: the collective ({source}) is not the one "
            "the test measured",
            line=r.line,
        )
        if cur.name is None:
            err.param, err.names = "op", ("op",)
        raise err


MAX_TIME_US = 3.6e9
"""Longest time accepted in a row (µs): one hour; a collective that takes longer hung."""

MAX_GBPS = 1e6
"""Largest bandwidth accepted in a row (GB/s): a petabyte per second, a thousand times any
GPU's."""

PER_RANK = frozenset({"all_reduce", "broadcast", "reduce", "sendrecv"})
"""Ops whose size column is ``count`` x the word size (``getCollByteCount`` of
``src/<op>.cu``)."""

BUFFER_OPS = WHOLE_BUFFER | {"gather", "scatter", "hypercube"}
"""Ops whose size column is ``count`` (one rank's share) x the word size x the ranks."""


def busbw_factor(op: str, ranks: int) -> float | None:
    """nccl-tests' busbw / algbw of ``op`` on ``ranks`` ranks (``GetBw`` of ``src/<op>.cu``):
    2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall, gather,
    scatter; 1 for broadcast, reduce, sendrecv and hypercube; None for an op it does not know.

    Examples
    --------
    >>> busbw_factor("all_reduce", 8), busbw_factor("all_gather", 8), busbw_factor("reduce", 8)
    (1.75, 0.875, 1.0)
    """
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in WHOLE_BUFFER or op in ("gather", "scatter"):
        return (ranks - 1) / ranks
    if op in PER_RANK or op == "hypercube":
        return 1.0
    return None


def half_unit(x: float, width: int) -> float:
    """Half the last printed digit of a value nccl-tests printed in a column ``width`` wide:
    the coarser of ``getFloatStr`` (``src/util.cu``, 2.14 on: ``%.2f``, ``%.1f``, ``%.0f``,
    whichever fits, then ``%.1e`` (width 7) or ``%.0e``) and the older formats (time
    ``%7.2f`` under 100 µs, ``%7.1f`` under 10,000 µs, ``%7.0f`` above; bandwidths
    ``%6.2f``).

    Parameters
    ----------
    x : float
        The value as read (>= 0).
    width : int
        7 for a time (µs), 6 for a bandwidth (GB/s).

    Returns
    -------
    float
        The largest rounding error the printing may have made, in the unit of ``x``.

    Examples
    --------
    >>> half_unit(12.34, 6), half_unit(2925.6, 7), half_unit(12345.0, 7)
    (0.005, 0.05, 0.5)
    """
    new = None
    for d in (2, 1, 0):
        if len(f"{x:.{d}f}") <= width:
            new = 0.5 * 10.0**-d
            break
    if new is None:
        mantissa = 1 if width >= 7 else 0
        new = 0.5 * 10.0 ** (math.floor(math.log10(x)) - mantissa)
    old = 0.005 if width < 7 or x < 100 else 0.05 if x < 10_000 else 0.5
    return max(new, old)


def _size_count(op: str, ranks: int | None, row: NcclTestRow) -> str | None:
    """Why ``size`` cannot be ``count`` x the word x (the ranks, for a whole-buffer op)."""
    word = WORD_BYTES.get(row.type)
    if word is None or (op not in PER_RANK and op not in BUFFER_OPS):
        return None
    unit = row.count * word
    if op in PER_RANK:
        if row.size_bytes == unit:
            return None
        want = f"count {row.count} x {word} B ({row.type}) = {unit}"
    else:
        whole = unit > 0 and row.size_bytes % unit == 0
        m = row.size_bytes // unit if whole else 0
        split = whole and (m > 1 or ranks in (None, 1)) and (ranks is None or ranks % m == 0)
        if unit == row.size_bytes == 0 or split:
            return None  # a group of the ranks where NCCL_TESTS_SPLIT splits them
        want = f"count {row.count} x {word} B ({row.type}) x " + (
            f"{ranks} ranks = {unit * ranks}" if ranks is not None else "the ranks"
        )
    return f"size {row.size_bytes} B is not {want} B, as nccl-tests prints {op}"


def _disagree(
    op: str, ranks: int | None, row: NcclTestRow, cols: tuple[float, ...], cpu_time: bool
) -> str | None:
    """Why a (time, algbw, busbw) triple of ``row`` cannot be what nccl-tests printed."""
    t, alg, bus = cols
    if not (math.isfinite(t) and 0 < t <= MAX_TIME_US):
        return f"time {t:g} µs is not above 0 and at most {MAX_TIME_US:g} µs (one hour)"
    for name, x in (("algbw", alg), ("busbw", bus)):
        if not (math.isfinite(x) and 0 <= x <= MAX_GBPS):
            return f"{name} {x:g} GB/s is not from 0 to {MAX_GBPS:g} GB/s"
    word = WORD_BYTES.get(row.type)
    moved: int | None = row.size_bytes
    if op in BUFFER_OPS and ranks is not None and word is not None:
        moved = row.count * word * (ranks - 1 if op == "hypercube" else ranks)
    elif op == "hypercube":
        moved = None
    if cpu_time:
        moved = None
    ht, ha, hb = half_unit(t, 7), half_unit(alg, 6), half_unit(bus, 6)
    lo, hi = alg - ha, alg + ha
    if moved is not None:
        lo = max(lo, moved / (t + ht) / 1e3)
        hi = min(hi, moved / (t - ht) / 1e3 if t > ht else math.inf)
        if lo > hi * (1 + 1e-9) + 1e-12:
            return (
                f"algbw {alg:g} GB/s is not size / time = {moved} B / {t:g} µs = "
                f"{moved / t / 1e3:.4g} GB/s"
            )
    f = busbw_factor(op, ranks) if ranks is not None else None
    if f is None:
        return None
    if f > 0:
        bad = max(lo, (bus - hb) / f) > min(hi, (bus + hb) / f) * (1 + 1e-9) + 1e-12
    else:
        bad = bus > hb
    if bad:
        return (
            f"busbw {bus:g} GB/s is not algbw {alg:g} GB/s x {f:.4g} ({op} of {ranks} ranks) "
            f"= {alg * f:.4g} GB/s"
        )
    return None


def implausible(op: str, ranks: int | None, row: NcclTestRow, cpu_time: bool = False) -> str | None:
    """Why a row cannot be what nccl-tests printed, or None when it can.

    nccl-tests' columns are redundant (``src/<op>.cu``, ``getCollByteCount`` and ``GetBw``):
    size = count x the word size (x the ranks for :data:`BUFFER_OPS`); algbw = the bytes
    moved / time (the size; count x word x (n-1) for hypercube); busbw = algbw x
    :func:`busbw_factor`. A row whose columns disagree by more than the printing's rounding
    (:func:`half_unit` of each column), or whose time is not above 0 and at most
    :data:`MAX_TIME_US`, or whose bandwidth is negative, not finite or above
    :data:`MAX_GBPS`, is implausible.

    Parameters
    ----------
    op : str
        The test's operation (``all_reduce``, ...); an unknown one has its times and
        bandwidths checked for range only.
    ranks : int or None
        The test's ranks n (the busbw factor and a whole buffer need it); None: not checked.
    row : NcclTestRow
        The row (out-of-place, and in-place when printed).
    cpu_time : bool
        The times are the CPU's (``-C 1``: a ``cputime`` column, JSON ``cpu_time``), while
        algbw is from the GPU's: algbw is then not held to size / time.

    Returns
    -------
    str or None
        What disagrees, in one line (``"busbw 1e+30 GB/s is not algbw 10.49 GB/s x 1.75
        (all_reduce of 8 ranks) = 18.36 GB/s"``); for the in-place columns it starts with
        ``"in-place "``.

    Examples
    --------
    >>> row = NcclTestRow(1048576, 262144, "float", "sum", -1, 100.0, 10.49, 18.35,
    ...                   None, None, None, line=9)
    >>> implausible("all_reduce", 8, row) is None  # 1048576 / 100 µs = 10.49 GB/s, x 1.75
    True
    >>> implausible("all_reduce", 8, replace(row, busbw_GBps=0.0))
    'busbw 0 GB/s is not algbw 10.49 GB/s x 1.75 (all_reduce of 8 ranks) = 18.36 GB/s'
    """
    why = _size_count(op, ranks, row)
    if why is not None:
        return why
    why = _disagree(op, ranks, row, (row.time_us, row.algbw_GBps, row.busbw_GBps), cpu_time)
    if why is not None or row.inplace_time_us is None:
        return why
    ip = tuple(
        math.nan if x is None else x
        for x in (row.inplace_time_us, row.inplace_algbw_GBps, row.inplace_busbw_GBps)
    )
    why = _disagree(op, ranks, row, ip, cpu_time)
    return None if why is None else "in-place " + why


def plausible_rows(
    op: str, ranks: int | None, rows: list[NcclTestRow], where: str, cpu_time: bool = False
) -> tuple[list[NcclTestRow], list[str]]:
    """The rows that are not :func:`implausible`, and a line for each one left out.

    Parameters
    ----------
    op, ranks
        As :func:`implausible`.
    rows : list of NcclTestRow
        A test's rows.
    where : str
        How a row's place is written before it: ``"PATH:"`` (then the row's line) for a text
        log, ``"PATH: results["`` (then the index, and ``]``) for a JSON report.
    cpu_time : bool
        As :func:`implausible`.

    Returns
    -------
    rows : list of NcclTestRow
        In order.
    left_out : list of str
        ``"PATH:LINE: all_reduce_perf row of SIZE B left out: WHY"`` per row left out.
    """
    kept, left_out = [], []
    for r in rows:
        why = implausible(op, ranks, r, cpu_time)
        if why is None:
            kept.append(r)
            continue
        place = f"{where}{r.line - 1}]" if where.endswith("[") else f"{where}{r.line}"
        left_out.append(f"{place}: {op}_perf row of {r.size_bytes} B left out: {why}")
    return kept, left_out


def _columns(path: Path, lineno: int, line: str, cur: _Open) -> None:
    """The column header (``# size count type ... time algbw busbw #wrong|error ...``): the
    columns before ``time``, and which check column the table has."""
    words = ["time" if w == "cputime" else w for w in line.lstrip("#").split()]
    if "time" not in words:
        return
    cur.cpu_time = "cputime" in line  # nccl-tests -C 1: the CPU's time, not algbw's
    lead = tuple(words[3 : words.index("time")])
    if any(w not in MODERN_LEAD for w in lead):
        raise FormatError(
            path,
            f"unknown columns {' '.join(lead)!r} between type and time in the table header: "
            "expected redop and/or root",
            line=lineno,
        )
    cur.lead, cur.lead_line = lead, lineno
    cur.old = "error" in words and "#wrong" not in words


def _comment(path: Path, lineno: int, line: str, cur: _Open) -> None:
    """A ``#`` line inside a test: a rank, the out-of-bounds footer, the average busbw."""
    m = _RANK.match(line)
    if m:
        cur.ranks[int(m.group(1))] = m.group(2)
        cur.rank_lines.append(lineno)
        device = _DEVICE.search(line)
        if device:
            cur.devices[int(m.group(1))] = device.group(1)
        return
    if _RANK_LINE.match(line):
        raise FormatError(
            path,
            f"malformed rank line {line[:80]!r}: expected '#  Rank N Group G Pid P on HOST "
            "device D ...' (the ranks and hosts are counted from these lines)",
            line=lineno,
        )
    if _COLUMNS.match(line):
        _columns(path, lineno, line, cur)
        return
    if _NTHREAD.match(line) and cur.old is None:
        cur.old = "agg iters" not in line  # 'agg iters' came with 2.13's #wrong
        return
    m = _BOUNDS.match(line)
    if m:
        cur.out_of_bounds = int(m.group(1))
        return
    m = _AVG.match(line)
    if m:
        try:
            cur.avg = float(m.group(1))
        except ValueError:
            cur.avg = math.nan
        if not (math.isfinite(cur.avg) and cur.avg >= 0):
            raise FormatError(
                path,
                f"bad Avg bus bandwidth {m.group(1)!r}: expected a non-negative number of GB/s",
                line=lineno,
            )


def _read(path: Path) -> str:
    """The log's text; a run of digits too long to be a number is an error."""
    text = read_text(path)
    too_long = long_number(path, text)
    if too_long is not None:
        raise too_long
    return text


def read_nccl_tests(path: str | Path, op: str | None = None) -> list[NcclTest]:
    """Read every test of an nccl-tests log.

    Parameters
    ----------
    path : str or Path
        The log (stdout of ``*_perf``, one or more tests in a row), of nccl-tests 2.0 or
        later (the layouts of the module docstring).
    op : str, optional
        The operation (``all_reduce``, ...) of a test the log does not name: no
        ``# Collective test starting`` line (nccl-tests before 2.16.7) and no ``*_perf`` binary
        on a line before it. A test the log names keeps its own name.

    Returns
    -------
    list of NcclTest
        In file order.

    Raises
    ------
    FormatError
        Missing or unreadable file; no test in it; a test that failed (naming the failure
        line) or was cut off (no rows, or no ``Avg bus bandwidth`` line); a test whose
        operation neither the log nor ``op`` gives; a test that the log does not name by a
        ``Collective test starting`` line whose columns (nccl-tests 2.0-2.11,
        :data:`OLD_LEAD`) or sizes (:data:`WHOLE_BUFFER`) are not those of its operation; an
        nccl-tests 1.x table; a result row whose column count is not its table's, or that
        is not a number where one is printed, or whose root is below -1; a test whose every
        row is :func:`implausible`; a run of more than :data:`topo.files.MAX_NUMBER_DIGITS`
        digits.

    Notes
    -----
    A row that is :func:`implausible` (its columns disagree beyond the printing's rounding;
    a time not above 0 and at most :data:`MAX_TIME_US`; a bandwidth outside 0 to
    :data:`MAX_GBPS`) is left out of its test, with a line in the test's ``left_out``.

    Examples
    --------
    >>> import tempfile, os
    >>> log = "\\n".join([
    ...     "# Collective test starting: all_reduce_perf",
    ...     "#  Rank  0 Group  0 Pid 1 on a device  0 [0000:1b:00] NVIDIA H100",
    ...     "#  Rank  1 Group  0 Pid 2 on a device  1 [0000:43:00] NVIDIA H100",
    ...     "     1024   256   float   sum   -1   10.0   0.10   0.10   0   9.0   0.11   0.11   0",
    ...     "# Avg bus bandwidth    : 0.105 ",
    ... ])
    >>> with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
    ...     _ = f.write(log)
    >>> t = read_nccl_tests(f.name)[0]; os.unlink(f.name)
    >>> t.op, t.ranks, t.gpus_per_node, t.rows[0].busbw_GBps
    ('all_reduce', 2, 2, 0.1)
    """
    path = Path(path)
    text = _read(path)
    tests: list[NcclTest] = []
    cur: _Open | None = None
    version = library = ""
    binary: tuple[str, int] | None = None  # the last *_perf named between tests
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = MID_TAG.sub(" ", LINE_TAG.sub("", raw, count=1)).strip()
        if not line:
            continue
        m = _VERSION.match(line)
        if m:
            version, library = m.group(1), m.group(2) or ""
            continue
        if _V1_COLUMNS.match(line):
            raise FormatError(
                path,
                "an nccl-tests 1.x table (columns 'bytes N type', times in ms): topo reads "
                "the logs of nccl-tests 2.0 and later",
                line=lineno,
            )
        m = _START.match(line)
        between = cur is None or bool(cur.rows) or cur.avg is not None
        if m or ((_NTHREAD.match(line) or _COLUMNS.match(line)) and between):
            if cur is not None:
                tests.append(_close(path, cur, op))
            cur = _Open(None, lineno, version, library)
            if m:
                cur.name, cur.named_at, cur.named_by_start = m.group(1), lineno, True
            elif binary is not None:
                cur.name, cur.named_at = f"{binary[0]}_perf", binary[1]
            binary = None
            if _NTHREAD.match(line):
                cur.old = "agg iters" not in line  # 'agg iters' came with 2.13's #wrong
            elif _COLUMNS.match(line):
                _columns(path, lineno, line, cur)
            continue
        fail = _FAIL.search(line)
        if fail:
            if cur is None:
                cur = _Open(None, lineno, version, library)
            if cur.failure is None:
                cur.failure = (lineno, fail.group(1) + fail.group(2))
            continue
        fields = line.split()
        is_row = fields[0].isdigit() and not line.startswith("#")
        if between and not is_row:
            named = _BINARY.search(line)
            if named:
                binary = (named.group(1), lineno)
        if cur is None:
            continue
        if line.startswith("#"):
            _comment(path, lineno, line, cur)
            continue
        if is_row:
            cur.rows.append(_row(path, lineno, fields, cur))
    if cur is not None:
        tests.append(_close(path, cur, op))
    if not tests:
        what = "empty file" if not text.strip() else "no nccl-tests result in the file"
        raise FormatError(path, f"{what} (no '# Collective test starting' or table)")
    return tests


def validated_tests(tests: list[NcclTest], path: str | Path) -> tuple[list[NcclTest], list[str]]:
    """The tests without the rows that failed nccl-tests' data check, and what was left out.

    nccl-tests checks every result against the expected values (unless run with ``-c 0``)
    and prints the count of wrong elements in each ``#wrong`` column (out-of-place and
    in-place), then ``# Out of bounds values : N OK|FAILED`` under the table (``src/common.cu``).
    A size with wrong elements measured a broken run, not the fabric.

    Parameters
    ----------
    tests : list of NcclTest
        As :func:`read_nccl_tests` (or the JSON reader) gives them.
    path : str or Path
        The log, named in the warnings and the error.

    Returns
    -------
    tests : list of NcclTest
        Each test with its rows of ``#wrong`` > 0 left out; a test whose footer counts wrong
        values while no row's ``#wrong`` says which is left out whole, as is a test with no
        row left.
    warnings : list of str
        One line per test that lost rows: the log, the test, the count and the sizes (B).

    Raises
    ------
    FormatError
        If no row of any test is left.
    """
    kept, warnings = [], []
    for t in tests:
        bad = [r for r in t.rows if r.failed_validation]
        if not bad and t.out_of_bounds:
            bad = list(t.rows)
            why = f"its footer counts {t.out_of_bounds:,} out-of-bounds values (FAILED)"
        else:
            wrong = sum((r.wrong or 0) + (r.inplace_wrong or 0) for r in bad)
            why = f"#wrong > 0, {wrong:,} wrong elements in all"
        if bad:
            sizes = ", ".join(str(r.size_bytes) for r in bad)
            warnings.append(
                f"{path}: {t.op}_perf: {len(bad)} of {len(t.rows)} sizes failed nccl-tests' "
                f"data check ({why}) and are left out: sizes {sizes} B"
            )
        rows = [r for r in t.rows if not any(r is b for b in bad)]
        if rows:
            kept.append(t if len(rows) == len(t.rows) else replace(t, rows=rows))
    if not kept:
        raise FormatError(
            path,
            "every result row failed nccl-tests' data check (#wrong > 0 or 'Out of bounds "
            "values' FAILED): nothing measured is left to use",
        )
    return kept, warnings
