"""The records every nccl-tests reader gives: one :class:`NcclTest` per test of a log, one
:class:`NcclTestRow` per size.

The text reader (:mod:`topo.formats.nccl_tests`), the JSON reader
(:mod:`topo.formats.nccl_tests_json`) and the NCCL Inspector reader
(:mod:`topo.formats.nccl_inspector`) all return these; the checks each row is held to are in
:mod:`topo.formats.nccl_tests_checks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
        The ``Avg bus bandwidth`` line (GB/s); for a test cut off before it (a note says so),
        and in the JSON and Inspector readers, the mean of the rows' out-of-place busbw.
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
        One line per result row the reader left out as implausible
        (:func:`topo.formats.nccl_tests_checks.implausible`):
        the file, the row's line (or ``results[i]``) and what disagrees.
    notes : list of str
        Warnings on how the test was read from a log cut off (a job killed by a time limit,
        OOM, Ctrl-C), one line each, naming the file: the test ended without its
        ``Avg bus bandwidth`` line (its rows are used, ``avg_busbw_GBps`` their mean); its
        last row was cut mid-line on the file's last line (left out). Empty for a whole log.
    left_out_tests : list of (str, str)
        The tests of the same log that the reader left out whole (started, but no result row
        before the log ended or the next test started; or failed, when the caller keeps
        another operation: ``keep_op`` of :func:`topo.formats.nccl_tests.read_nccl_tests`):
        ``(op, line)``, the operation as ``op`` names it (``""`` when neither the log nor the
        caller names it, and for a failed test: said whatever operation is kept) and a
        warning naming the file, the test and its start line. The same list on every test of
        the log: print it once per log. A caller that keeps only the tests of one operation
        prints only the lines of that operation's left-out tests and of those named ``""``.
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
    notes: list[str] = field(default_factory=list)
    left_out_tests: list[tuple[str, str]] = field(default_factory=list)
