"""Reader of nccl-tests output logs (``all_reduce_perf`` ... ``sendrecv_perf``).

A log holds one or more tests, each opened by ``# Collective test starting: <name>_perf``
(nccl-tests >= 2.16.7; older logs start with ``# nThread``), a ``#  Rank ...`` line per rank
(``... on <host> device <d> ...``), the column header and one row per size::

    size  count  type  redop  root  time  algbw  busbw  #wrong  [time  algbw  busbw  #wrong]

(out-of-place, then in-place; times in µs, bandwidths in GB/s), closed by
``# Avg bus bandwidth : <x>``. The format is nccl-tests' ``src/common.cu``
(github.com/NVIDIA/nccl-tests). Newer nccl-tests adds columns when asked (:data:`EXTRA_COLUMNS`:
the bitwise check's ``#bitdiff``, ``-I 1``'s per-iteration ``i_min i_max i_p99 i_cv%`` in each
time group, ``-S 1``'s ``timestamp`` at the end; ``src/util.cu``); the header names them and
the reader passes over them.

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

A test that failed (``Test NCCL failure``, ``Test failure``) is an error naming the test, the
file and the line, not a silent partial result. A log cut off (a job killed by a time limit,
OOM, Ctrl-C) gives its complete rows, each cut said in a warning line
(:attr:`NcclTest.notes`, :attr:`NcclTest.left_out_tests`): a test without its
``Avg bus bandwidth`` line keeps its rows (its average is then their mean out-of-place
busbw); a row cut mid-line on the file's last line is left out; a test with no result row is
left out. Only a log with no test left is an error.

The columns are redundant (size = count x word [x ranks], algbw = size / time, busbw = algbw
x the op's factor): a row whose columns disagree beyond the rounding of what nccl-tests prints
is left out with a line naming the file and the line (:func:`implausible`,
:attr:`NcclTest.left_out`).

The records (:class:`NcclTest`, :class:`NcclTestRow`) are in
:mod:`topo.formats.nccl_tests_records` and the checks a row is held to (:func:`implausible`,
:func:`plausible_rows`, :func:`busbw_factor`, :func:`half_unit`, :func:`check_size`,
:func:`validated_tests`) in :mod:`topo.formats.nccl_tests_checks`; both are importable from
here too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from topo.errors import FormatError
from topo.files import read_numbers_text
from topo.formats.nccl_tests_checks import (
    BUFFER_OPS,
    MAX_GBPS,
    MAX_SIZE_BYTES,
    MAX_TIME_US,
    PER_RANK,
    WHOLE_BUFFER,
    WORD_BYTES,
    busbw_factor,
    check_size,
    half_unit,
    implausible,
    plausible_rows,
    validated_tests,
)
from topo.formats.nccl_tests_records import NcclTest, NcclTestRow
from topo.wording import count

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
_ROW_START = re.compile(r"-?\d+")  # a result row's first field: its size
_V1_COLUMNS = re.compile(r"^#\s*bytes\s+N\s+type\b")
# the test binary in a command line: ./build/all_reduce_perf, all_reduce_perf_mpi (NAME_SUFFIX)
_BINARY = re.compile(r"(?<![\w-])([a-z][a-z0-9]*(?:_[a-z0-9]+)*?)_perf(?:_\w+)?\b")


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
    width: int | None = None  # the columns of its last result row
    cut: tuple[int, int, str] | None = None  # a row cut on the last line: line, columns, error
    # a header with columns beyond the 13 (nccl-tests -I, -S, the bitwise check): the row's
    # width and the indices of the fields read, in the 13-column order
    extended: tuple[int, list[int], str] | None = None  # (width, keep, the header's words)

    @property
    def label(self) -> str:
        return f"test {self.name}" if self.name else "the test"

    def op_named(self, op: str | None) -> str:
        """The operation as the log names it, else ``op``, else ``""`` (unchecked: for a test
        left out, which :func:`_name` would refuse to name)."""
        return self.name.removesuffix("_perf") if self.name is not None else (op or "")


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


@dataclass(frozen=True)
class _LeftOut:
    """A test left out whole (no result row; or it failed, being of an op the caller does not
    keep): its op, the warning, and the error raised when no test of the log is left."""

    op: str
    warning: str
    error: FormatError


def _close(
    path: Path, cur: _Open, op: str | None, next_line: int | None, keep_op: str | None = None
) -> NcclTest | _LeftOut:
    """The test read, or why it is left out (no result row; failed, when ``keep_op`` names
    another op). ``next_line``: where the next test starts (None: the file ended)."""
    if cur.failure is not None:
        lineno, what = cur.failure
        error = FormatError(
            path,
            f"{cur.label} (started line {cur.line}) failed: {what.strip()}; no results",
            line=lineno,
        )
        if keep_op is None or cur.op_named(op) in ("", keep_op):
            raise error
        warning = (
            f"{path}:{lineno}: {cur.label} (started line {cur.line}) failed: {what.strip()}; "
            f"no results: the test is left out (not {keep_op})"
        )
        return _LeftOut("", warning, error)  # said whatever op is kept
    if not cur.rows:
        return _no_rows(path, cur, op, next_line)
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
    notes = []
    avg = cur.avg
    if avg is None:  # cut off: the mean of its rows' out-of-place busbw, as the JSON reader
        avg = sum(r.busbw_GBps for r in rows) / len(rows)
        where = (
            "the log was cut off"
            if next_line is None
            else f"the test was cut off (the next one starts line {next_line})"
        )
        used = f"{count(len(rows), 'row')} {'is' if len(rows) == 1 else 'are'} used"
        notes.append(
            f"{path}: {cur.label} (started line {cur.line}) ends at line {cur.rows[-1].line} "
            f"without its 'Avg bus bandwidth' line: {where}; its {used}"
        )
    if cur.cut is not None:
        lineno, n, _ = cur.cut
        notes.append(
            f"{path}:{lineno}: the last row of {cur.label} (started line {cur.line}) is cut off "
            f"mid-line on the file's last line ({n} of its table's {cur.width} columns): left out"
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
        avg_busbw_GBps=avg,
        line=cur.line,
        out_of_bounds=cur.out_of_bounds,
        devices=list(dict.fromkeys(cur.devices[r] for r in sorted(cur.devices))),
        ranks_source=_lines("its '#  Rank' line", cur.rank_lines),
        left_out=left_out,
        notes=notes,
    )


def _no_rows(path: Path, cur: _Open, op: str | None, next_line: int | None) -> _LeftOut:
    """A test with no result row, left out: the warning and the error for when no test of
    the log is left (a row cut on the last line: that row's error)."""
    head = f"{path}: {cur.label} (started line {cur.line}) has no result rows"
    if cur.cut is not None:
        lineno, n, message = cur.cut
        warning = (
            f"{head} but line {lineno}, cut off mid-line on the file's last line ({n} "
            "columns): the log was cut off; the test is left out"
        )
        error = FormatError(path, message, lineno)
    else:
        if next_line is not None:
            why = f" before the next test (line {next_line})"
        elif cur.avg is None:
            why = ": the log was cut off"
        else:
            why = ""
        warning = f"{head}{why}; the test is left out"
        error = FormatError(
            path, f"{cur.label} (started line {cur.line}) has no result rows: truncated log"
        )
    return _LeftOut(cur.op_named(op), warning, error)


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
    cur.extended = _extended(path, lineno, words, len(lead))


EXTRA_COLUMNS = {"#bitdiff": 1, "i_min": 1, "i_max": 1, "i_p99": 1, "i_cv%": 1, "timestamp": 2}
"""Columns newer nccl-tests prints after a time group's ``time algbw busbw #wrong`` when asked
(NVIDIA/nccl-tests ``src/util.cu`` ``writeResultHeader``): ``i_min i_max i_p99 i_cv%``
(per-iteration timing, ``-I 1``, nccl-tests 2.19.2 on), after the in-place group ``timestamp``
(``-S 1``, 2.17.6 on; ``%Y-%m-%d %H:%M:%S``: two fields in a row), and ``#bitdiff`` (a later
release's bitwise check). The reader passes over them; the value is how many fields of a row
each takes."""


def _extended(
    path: Path, lineno: int, words: list[str], lead: int
) -> tuple[int, list[int], str] | None:
    """For a header whose time groups carry :data:`EXTRA_COLUMNS`: a row's width and the
    indices of the fields that make the 13-column row (size, count, type, the ``lead``
    columns, then each group's time, algbw, busbw and check); None for a plain header.

    Raises
    ------
    FormatError
        A column after ``type`` that is neither a time group's nor one of
        :data:`EXTRA_COLUMNS`.
    """
    tail = words[3 + lead :]
    starts = [i for i, w in enumerate(tail) if w == "time"]
    keep = list(range(3 + lead))
    at = 3 + lead
    extra = False
    for g, start in enumerate(starts):
        end = starts[g + 1] if g + 1 < len(starts) else len(tail)
        group = tail[start:end]
        keep += range(at, at + 4)
        at += 4
        for w in group[4:]:
            if w not in EXTRA_COLUMNS:
                raise FormatError(
                    path,
                    f"unknown column {w!r} after time, algbw, busbw and the check in the table "
                    f"header: topo reads these and passes over {', '.join(EXTRA_COLUMNS)}",
                    line=lineno,
                )
            extra = True
            at += EXTRA_COLUMNS[w]
    if not extra:
        return None
    return at, keep, " ".join(words)


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


def read_nccl_tests(
    path: str | Path, op: str | None = None, *, text: str | None = None, keep_op: str | None = None
) -> list[NcclTest]:
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
    text : str, optional
        The log's content, already read (a pipe, as ``<(...)`` gives, can be read only once);
        by default the file is read here.
    keep_op : str, optional
        The operation the caller keeps (``--op``): a test of another operation that failed is
        left out, with a line in ``left_out_tests``, instead of refusing the log (a job whose
        later test the OOM killer ended keeps its complete tests). Default: every test is
        kept, and a failed one refuses the log.

    Returns
    -------
    list of NcclTest
        In file order.

    Raises
    ------
    FormatError
        Missing or unreadable file; no test in it; a test that failed (naming the failure
        line), unless ``keep_op`` names another operation; no test with a result row (``...
        has no result rows: truncated log``, naming the first such test; its only row cut on
        the last line: that row's error, ``...; it is the file's last line: a log cut
        off?``); a test whose operation neither the log nor ``op`` gives; a test that the
        log does not name by a
        ``Collective test starting`` line whose columns (nccl-tests 2.0-2.11,
        :data:`OLD_LEAD`) or sizes (:data:`WHOLE_BUFFER`) are not those of its operation; an
        nccl-tests 1.x table; a result row whose column count is not its table's, or that
        is not a number where one is printed, or whose root is below -1 (on the file's last
        line, unless it has fewer columns than its table's: see Notes); a test whose every
        row is :func:`implausible`; a run of more than :data:`topo.files.MAX_NUMBER_DIGITS`
        digits.

    Notes
    -----
    A row that is :func:`implausible` (its columns disagree beyond the printing's rounding;
    a time not above 0 and at most :data:`MAX_TIME_US`; a bandwidth outside 0 to
    :data:`MAX_GBPS`) is left out of its test, with a line in the test's ``left_out``.

    A log cut off (a job killed mid-run) is read as far as it is whole, each cut said in a
    warning line naming the file:

    - a test whose rows end without its ``Avg bus bandwidth`` line (at the end of the file,
      or where the next test starts) keeps its rows; ``avg_busbw_GBps`` is their mean
      out-of-place busbw (as the JSON reader's), and a line in its ``notes`` names its start
      line, its last row's line and the rows used;
    - a result row on the file's last non-blank line (NUL bytes, a network file system's
      zero fill of a killed job's lost writes, are blank) with fewer columns than its table's
      (the test's rows before it; with none, one it cannot be read as) was cut mid-line: it
      is left out, with a line in its test's ``notes``;
    - a test with no result row (and no failure line) is left out, with a line in
      ``left_out_tests`` (the same list on every test read): it is an error only when no
      test of the log has a row. A ``#  Rank`` line cut mid-line on the file's last line is
      passed over (its test has no row).

    What a launcher or scheduler prints after the cut (``slurmstepd: error: *** JOB ...
    CANCELLED ... DUE TO TIME LIMIT ***``, ``mpirun noticed that process rank ...``) is
    passed over like any other line; a malformed row before such a line is refused, the
    error saying, where only such lines follow it, that the log may be cut there and which
    line to delete.

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

    Cut off before its ``Avg bus bandwidth`` line, the test keeps its row, and says so:

    >>> with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
    ...     _ = f.write(log.rsplit("\\n", 1)[0])
    >>> t = read_nccl_tests(f.name)[0]; os.unlink(f.name)
    >>> t.avg_busbw_GBps, t.notes[0].split(": ", 1)[1]  # doctest: +NORMALIZE_WHITESPACE
    (0.1, "test all_reduce_perf (started line 1) ends at line 4 without its
     'Avg bus bandwidth' line: the log was cut off; its 1 row is used")
    """
    path = Path(path)
    text = read_numbers_text(path, text)
    closed: list[NcclTest | _LeftOut] = []
    cur: _Open | None = None
    version = library = ""
    binary: tuple[str, int] | None = None  # the last *_perf named between tests
    lines = text.splitlines()
    last = next((i for i in range(len(lines), 0, -1) if _clean(lines[i - 1])), 0)
    for lineno, raw in enumerate(lines, 1):
        line = _clean(raw)
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
                closed.append(_close(path, cur, op, lineno, keep_op))
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
        # (a negative size is a row too, refused by check_size, not a line passed over)
        is_row = bool(_ROW_START.fullmatch(fields[0])) and not line.startswith("#")
        if between and not is_row:
            named = _BINARY.search(line)
            if named:
                binary = (named.group(1), lineno)
        if cur is None:
            continue
        if line.startswith("#"):
            if lineno == last and _RANK_LINE.match(line) and not _RANK.match(line):
                continue  # a rank line cut mid-line: the test has no row (left out, said)
            _comment(path, lineno, line, cur)
            continue
        if is_row:
            try:
                _add_row(path, lineno, fields, cur, lineno == last)
            except FormatError as exc:
                raise _before_foreign_lines(exc, lines, lineno) from None
    if cur is not None:
        closed.append(_close(path, cur, op, None, keep_op))
    tests = [t for t in closed if isinstance(t, NcclTest)]
    left = [t for t in closed if isinstance(t, _LeftOut)]
    if not tests and left:
        raise left[0].error
    if not tests:
        what = "empty file" if not text.strip() else "no nccl-tests result in the file"
        raise FormatError(path, f"{what} (no '# Collective test starting' or table)")
    if left:
        tests = [replace(t, left_out_tests=[(x.op, x.warning) for x in left]) for t in tests]
    return tests


def _before_foreign_lines(exc: FormatError, lines: list[str], lineno: int) -> FormatError:
    """A malformed row's error; where every line after it (``lineno``, 1-based, of
    ``lines``) that is not blank is one nccl-tests does not print (neither a ``#`` line nor a
    row: a scheduler's or launcher's, ``slurmstepd: error: *** JOB ... CANCELLED ...``),
    saying so, naming the first, and how to read the rows before it."""
    first = None
    for i in range(lineno, len(lines)):
        line = _clean(lines[i])
        if not line:
            continue
        if line.startswith("#") or _ROW_START.fullmatch(line.split()[0]):
            return exc
        if first is None:
            first = (i + 1, line)
    if first is None:
        return exc
    at, text = first
    shown = text if len(text) <= 100 else text[:97] + "..."
    return FormatError(
        exc.path,
        f"{exc.message}; after it only lines nccl-tests does not print (line {at}: {shown!r}): "
        f"a log cut off mid-row, then a scheduler's or launcher's lines? Delete line {lineno} "
        "to read the rows before it",
        exc.line,
    )


def _clean(raw: str) -> str:
    """A line without a launcher's tags (:data:`LINE_TAG`, :data:`MID_TAG`) and blanks; a NUL
    byte (what a network file system leaves of a killed job's lost last writes: the file's
    length, zero-filled) is a blank, so that a line of NULs is blank and no two numbers
    either side of NULs join into one."""
    return MID_TAG.sub(" ", LINE_TAG.sub("", raw.replace("\0", " "), count=1)).strip()


def _add_row(path: Path, lineno: int, fields: list[str], cur: _Open, last: bool) -> None:
    """Read a result row into its test. On the file's last line (``last``), a row of fewer
    columns than its table's (its test's rows before it; 13 or the header's with none) was
    cut mid-line: it is left out (``cur.cut``) instead of refused."""
    if last and cur.width is not None and len(fields) < cur.width:
        cur.cut = (lineno, len(fields), "")
        return
    full = cur.width or 3 + len(cur.lead if cur.lead is not None else MODERN_LEAD) + 8
    read = fields
    if cur.extended is not None:
        width, keep, header = cur.extended
        full = width
        if len(fields) == width:
            read = [fields[i] for i in keep]
    try:
        if cur.extended is not None and len(fields) != cur.extended[0]:
            raise FormatError(
                path,
                f"a result row has {cur.extended[0]} columns (as the header on line "
                f"{cur.lead_line}: {cur.extended[2]!r}; a timestamp takes two), got "
                f"{len(fields)}",
                line=lineno,
            )
        cur.rows.append(_row(path, lineno, read, cur))
    except FormatError as exc:
        if not last:
            raise
        message = f"{exc.message}; it is the file's last line: a log cut off?"
        if len(fields) >= full:
            raise FormatError(path, message, lineno) from None
        cur.cut = (lineno, len(fields), message)
        return
    cur.width = len(fields)


__all__ = [
    "BUFFER_OPS",
    "EXTRA_COLUMNS",
    "LINE_TAG",
    "MAX_GBPS",
    "MAX_SIZE_BYTES",
    "MAX_TIME_US",
    "MID_TAG",
    "MODERN_LEAD",
    "OLD_LEAD",
    "PER_RANK",
    "WHOLE_BUFFER",
    "WORD_BYTES",
    "NcclTest",
    "NcclTestRow",
    "busbw_factor",
    "check_size",
    "half_unit",
    "implausible",
    "plausible_rows",
    "read_nccl_tests",
    "validated_tests",
]
