"""Reader of nccl-tests output logs (``all_reduce_perf`` ... ``sendrecv_perf``).

A log holds one or more tests, each opened by ``# Collective test starting: <name>_perf``
(nccl-tests >= 2.17; older logs start with ``# nThread``), a ``#  Rank ...`` line per rank
(``... on <host> device <d> ...``), the column header and one row per size::

    size  count  type  redop  root  time  algbw  busbw  #wrong  [time  algbw  busbw  #wrong]

(out-of-place, then in-place; times in µs, bandwidths in GB/s), closed by
``# Avg bus bandwidth : <x>``. The format is nccl-tests' ``src/common.cu``
(github.com/NVIDIA/nccl-tests).

A test that failed (``Test NCCL failure``, ``Test failure``) or was cut off (no rows, or no
``Avg bus bandwidth`` line) is an error naming the test, the file and the line, not a silent
partial result.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from topo.errors import FormatError
from topo.fabric import long_number, read_text

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


@dataclass
class _Open:
    name: str
    line: int
    version: str = ""
    library: str = ""
    ranks: dict[int, str] = field(default_factory=dict)
    devices: dict[int, str] = field(default_factory=dict)
    rows: list[NcclTestRow] = field(default_factory=list)
    avg: float | None = None
    failure: tuple[int, str] | None = None
    out_of_bounds: int | None = None


def _row(path: Path, lineno: int, fields: list[str]) -> NcclTestRow:
    if len(fields) not in (9, 13):
        raise FormatError(
            path,
            f"a result row has 9 or 13 columns (size count type redop root time algbw busbw "
            f"#wrong, then in-place), got {len(fields)}",
            line=lineno,
        )
    try:
        size, count, root = int(fields[0]), int(fields[1]), int(fields[4])
        t, alg, bus = (float(x) for x in fields[5:8])
        ip: list[float | None] = (
            [float(x) for x in fields[9:12]] if len(fields) == 13 else [None, None, None]
        )
    except ValueError:
        raise FormatError(
            path, f"bad number in result row: {' '.join(fields)!r}", line=lineno
        ) from None
    _check_row(path, lineno, root, t, alg, bus, ip)
    wrong = [_wrong(path, lineno, fields[i]) if len(fields) > i else None for i in (8, 12)]
    return NcclTestRow(
        size_bytes=size,
        count=count,
        type=fields[2],
        redop=fields[3],
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


def _check_row(
    path: Path,
    lineno: int,
    root: int,
    t: float,
    alg: float,
    bus: float,
    ip: list[float | None],
) -> None:
    """Refuse what nccl-tests never prints: a time that is not a positive finite number of
    µs, a bandwidth that is negative or not finite, a root below -1."""
    if root < -1:
        raise FormatError(path, f"root must be -1 (not rooted) or a rank, got {root}", lineno)
    for what, times, rates in (("", t, (alg, bus)), ("in-place ", ip[0], ip[1:])):
        if times is not None and not (math.isfinite(times) and times > 0):
            raise FormatError(
                path, f"{what}time must be a positive number of µs, got {times:g}", lineno
            )
        for name, x in zip(("algbw", "busbw"), rates, strict=True):
            if x is not None and not (math.isfinite(x) and x >= 0):
                raise FormatError(
                    path, f"{what}{name} must be a non-negative number of GB/s, got {x:g}", lineno
                )


def _close(path: Path, cur: _Open) -> NcclTest:
    if cur.failure is not None:
        lineno, what = cur.failure
        raise FormatError(
            path,
            f"test {cur.name} (started line {cur.line}) failed: {what.strip()}; no results",
            line=lineno,
        )
    if not cur.rows:
        raise FormatError(
            path,
            f"test {cur.name} (started line {cur.line}) has no result rows: truncated log",
        )
    if cur.avg is None:
        raise FormatError(
            path,
            f"test {cur.name} (started line {cur.line}) has no 'Avg bus bandwidth' line after "
            f"its last row (line {cur.rows[-1].line}): truncated log",
        )
    hosts = list(dict.fromkeys(cur.ranks[r] for r in sorted(cur.ranks)))
    per_host = set(Counter(cur.ranks.values()).values())
    gpn = per_host.pop() if len(per_host) == 1 else None
    op = cur.name.removesuffix("_perf")
    return NcclTest(
        op=op,
        rows=cur.rows,
        ranks=len(cur.ranks) or None,
        hosts=hosts,
        gpus_per_node=gpn,
        nccl_tests_version=cur.version,
        nccl_version=cur.library,
        avg_busbw_GBps=cur.avg,
        line=cur.line,
        out_of_bounds=cur.out_of_bounds,
        devices=list(dict.fromkeys(cur.devices[r] for r in sorted(cur.devices))),
    )


def _comment(path: Path, lineno: int, line: str, cur: _Open) -> None:
    """A ``#`` line inside a test: a rank, the out-of-bounds footer, the average busbw."""
    m = _RANK.match(line)
    if m:
        cur.ranks[int(m.group(1))] = m.group(2)
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


def read_nccl_tests(path: str | Path) -> list[NcclTest]:
    """Read every test of an nccl-tests log.

    Parameters
    ----------
    path : str or Path
        The log (stdout of ``*_perf``, one or more tests in a row).

    Returns
    -------
    list of NcclTest
        In file order.

    Raises
    ------
    FormatError
        Missing or unreadable file; no test in it; a test that failed (naming the failure
        line) or was cut off (no rows, or no ``Avg bus bandwidth`` line); a result row that
        does not have 9 or 13 columns or has a bad number (a time that is not positive and
        finite, a bandwidth that is negative or not finite); a run of more than
        :data:`topo.fabric.MAX_NUMBER_DIGITS` digits.

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
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _VERSION.match(line)
        if m:
            version, library = m.group(1), m.group(2) or ""
            continue
        m = _START.match(line)
        if m or (_NTHREAD.match(line) and (cur is None or cur.rows or cur.avg is not None)):
            if cur is not None:
                tests.append(_close(path, cur))
            name = m.group(1) if m else "nccl_test"
            cur = _Open(name, lineno, version, library)
            continue
        fail = _FAIL.search(line)
        if fail:
            if cur is None:
                cur = _Open("nccl_test", lineno, version, library)
            if cur.failure is None:
                cur.failure = (lineno, fail.group(1) + fail.group(2))
            continue
        if cur is None:
            continue
        if line.startswith("#"):
            _comment(path, lineno, line, cur)
            continue
        fields = line.split()
        if fields[0].isdigit():
            cur.rows.append(_row(path, lineno, fields))
    if cur is not None:
        tests.append(_close(path, cur))
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
