"""The checks an nccl-tests row is held to, whichever reader read it (text, JSON, Inspector).

The columns are redundant (size = count x word [x ranks], algbw = size / time, busbw = algbw
x the op's factor, ``src/<op>.cu`` of github.com/NVIDIA/nccl-tests): a row whose columns
disagree beyond the rounding of what nccl-tests prints is implausible (:func:`implausible`)
and left out with a line naming the file and the line (:func:`plausible_rows`,
:attr:`topo.formats.nccl_tests_records.NcclTest.left_out`). A size or count outside a signed
64-bit integer is refused (:func:`check_size`); the sizes whose data nccl-tests found wrong
are left out (:func:`validated_tests`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from topo.errors import FormatError
from topo.formats.nccl_tests_records import NcclTest, NcclTestRow

MAX_SIZE_BYTES = (1 << 63) - 1
"""Largest size (B) and count accepted in a row: nccl-tests prints them with ``%li``, a signed
64-bit integer (8 EiB)."""


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


WORD_BYTES = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8,
    "uint64": 8, "half": 2, "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1,
}  # fmt: skip
"""Bytes per element of nccl-tests' type names (``test_typenames`` of ``src/common.cu``)."""


WHOLE_BUFFER = frozenset({"all_gather", "reduce_scatter", "alltoall"})
"""Ops whose size column is the whole buffer: ``count`` (one rank's share) times the word
size times the ranks (``getCollByteCount`` of ``src/<op>.cu``, 2.0 to 2.19); the size of
all_reduce, broadcast, reduce and sendrecv is ``count`` times the word size."""


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


def validated_tests(tests: list[NcclTest], path: str | Path) -> tuple[list[NcclTest], list[str]]:
    """The tests without the rows that failed nccl-tests' data check, and what was left out.

    nccl-tests checks every result against the expected values (unless run with ``-c 0``)
    and prints the count of wrong elements in each ``#wrong`` column (out-of-place and
    in-place), then ``# Out of bounds values : N OK|FAILED`` under the table (``src/common.cu``).
    A size with wrong elements measured a broken run, not the fabric.

    Parameters
    ----------
    tests : list of NcclTest
        As :func:`topo.formats.nccl_tests.read_nccl_tests` (or the JSON reader) gives them.
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
