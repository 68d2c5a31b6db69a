"""Reader of NCCL Inspector records (the profiler plugin's JSON output, format v4.0).

The Inspector (NVIDIA/nccl ``ext-profiler/inspector`` from NCCL 2.28.3,
``plugins/profiler/inspector`` from 2.30; ``inspector_json.cc``) writes, per process, one JSON
object per line, one per completed collective call of a communicator::

    {"header": {"id": "0x7f8c496ae9f661", "comm_name": "...", "rank": 2, "n_ranks": 8,
                "nnodes": 1},
     "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "...",
                  "rec_mechanism": "...", "dump_timestamp_us": ..., "hostname": "...",
                  "pid": ...},
     "coll_perf": {"coll": "AllReduce", "coll_sn": 1407,
                   "coll_msg_size_bytes": 17179869184, "coll_exec_time_us": 61974,
                   "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": 277.210914,
                   "coll_busbw_gbs": 485.119099}}

(``comm_name`` and ``coll_timing_source`` came after 2.28.3; a point-to-point call is a
``p2p_perf`` object instead). ``coll_msg_size_bytes`` is the datatype's size times NCCL's
``count`` argument (``inspector_plugin.cc``: ``ncclTypeSize(datatype) * eDescr->coll.count``),
so for AllGather (``sendcount``), ReduceScatter (``recvcount``) and AlltoAll (``count`` per peer)
it is one rank's share; ``inspectorComputeOpBw`` (``inspector.cc``) multiplies it by ``n_ranks``
for AllGather and ReduceScatter, as nccl-tests' size column is the whole buffer
(``src/all_gather.cu``, ``src/reduce_scatter.cu``, ``src/alltoall.cu``). This reader does the
same: the size of a row is the message size times ``n_ranks`` for those three, the message size
for the others.

Records are grouped into one :class:`~topo.formats.nccl_tests_records.NcclTest` per operation and
communicator shape (``n_ranks``, ``nnodes``), and one row per size: the row's time is the
**median** ``coll_exec_time_us`` over every call and every rank of that size (a call recorded
twice, the same ``id``, ``rank``, ``coll_sn``, size and time, counts once); algbw is the size
over that time and busbw algbw times the records' own busbw / algbw factor (nccl-tests'; for
AlltoAll, where the plugin writes 0, nccl-tests' (n-1)/n of ``src/alltoall.cu``). The
Inspector records no datatype, reduction or root: a row's ``type`` is ``"unknown"``, ``count``
0, ``redop`` ``"unknown"`` for reductions (``"none"`` otherwise), ``root`` -1; it has no
in-place column.

Left out: ``p2p_perf`` records (one Send or one Recv, half of what nccl-tests' sendrecv and
alltoall time) and collectives topo does not model (``AllGatherV``, ``Invalid``: the name the
plugin writes for an AlltoAll whose name it does not know).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from topo.errors import FormatError
from topo.files import json_cut_off, read_numbers_text, too_deep
from topo.formats.nccl_tests_checks import MAX_GBPS, MAX_SIZE_BYTES, MAX_TIME_US, busbw_factor
from topo.formats.nccl_tests_records import NcclTest, NcclTestRow
from topo.wording import shown

FORMAT_VERSION = "v4.0"
"""``inspector_output_format_version`` of the records read (``inspector_json.cc``)."""

OPS = {
    "AllReduce": "all_reduce",
    "AllGather": "all_gather",
    "ReduceScatter": "reduce_scatter",
    "Broadcast": "broadcast",
    "Reduce": "reduce",
    "All2All": "alltoall",
    "AlltoAll": "alltoall",
    "SendRecv": "sendrecv",
}
"""The plugin's collective names (``ncclFuncToString`` of ``inspector.cc``; NCCL's own
``AlltoAll`` too) and topo's ops."""

WHOLE_BUFFER = frozenset({"all_gather", "reduce_scatter", "alltoall"})
"""Ops whose nccl-tests size is ``n_ranks`` times the Inspector's message size."""

REDUCTIONS = frozenset({"all_reduce", "reduce_scatter", "reduce"})

MAX_RANKS = 1 << 24
"""Largest communicator accepted (ranks)."""


@dataclass
class _Group:
    """The calls of one (op, n_ranks, nnodes)."""

    line: int
    hosts: dict[str, None] = field(default_factory=dict)
    sizes: dict[int, list[tuple[float, float, int]]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def looks_like_inspector(head: str) -> bool:
    """Whether text starting with ``head`` (a file's first few KB) is Inspector output: JSON
    objects with the plugin's keys.

    Parameters
    ----------
    head : str
        The start of the file.

    Returns
    -------
    bool

    Examples
    --------
    >>> looks_like_inspector('{"header": {}, "coll_perf": {"coll": "AllReduce"}}')
    True
    >>> looks_like_inspector('{"version": 3, "results": []}')
    False
    """
    return head.lstrip().startswith("{") and any(
        f'"{k}"' in head for k in ("inspector_output_format_version", "coll_perf", "p2p_perf")
    )


def _records(path: Path, text: str, cut: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    """Every JSON value of the file and the line it starts on, one at a time (a long file's
    records are not all held at once): one per line, as the plugin writes them (a bad line is
    an error at that line); else, when the first line is no whole value, a stream of
    pretty-printed objects."""
    first = next((x for x in _lines(text) if x.strip()), None)
    try:
        per_line = first is not None and isinstance(json.loads(first), dict)
    except (json.JSONDecodeError, RecursionError):
        per_line = False
    if not per_line:
        yield from _stream(path, text)
        return
    for i, raw in enumerate(_lines(text), 1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)  # (in C, 1.5x json's speed)
        except orjson.JSONDecodeError:
            # what orjson refuses and json reads (NaN, integers past 64 bits, a nesting past
            # orjson's 1024), or json's own message of what is wrong
            try:
                value = json.loads(raw)
            except RecursionError:
                raise too_deep(path, "not valid JSON") from None
            except json.JSONDecodeError as exc:
                if cut is not None and _cut_last_line(text, i, raw, exc):
                    # a job killed while the plugin wrote it: the rest is read, this said
                    cut.append(
                        f"{path}:{i}: the file's last line is a record cut off mid-line (not "
                        f"valid JSON: {exc.msg.removesuffix(' starting at')}): the log was cut "
                        "off; the record is left out"
                    )
                    continue
                raise FormatError(path, f"not valid JSON: {exc.msg}", i, exc.colno) from None
        yield i, value


def _cut_last_line(text: str, i: int, raw: str, exc: json.JSONDecodeError) -> bool:
    """Whether line ``i`` (1-based; ``raw``), which ``exc`` refused, is the file's last line
    that is not blank and ends before its value closes (the parser stopped at its end, or in
    a string it opened): a record cut off mid-line."""
    end = len(text.rstrip())
    last = text.count("\n", 0, text.rfind("\n", 0, end) + 1) + 1
    return i == last and json_cut_off(exc, raw)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (split at ``\\n``, a ``\\r`` before it dropped), one at a time,
    without a copy of the whole (``io.StringIO`` holds one of 4 bytes a character)."""
    pos, end = 0, len(text)
    while pos < end:
        stop = text.find("\n", pos)
        stop = end if stop < 0 else stop
        yield text[pos:stop].removesuffix("\r")
        pos = stop + 1


def _stream(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """The JSON values of a stream (objects written over several lines each)."""
    decoder = json.JSONDecoder()
    pos, line, end = 0, 1, len(text)
    while True:
        start = pos
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        line += text.count("\n", start, pos)
        if pos == end:
            return
        try:
            value, stop = decoder.raw_decode(text, pos)
        except RecursionError:
            raise too_deep(path, "not valid JSON") from None
        except json.JSONDecodeError as exc:
            if json_cut_off(exc, text):
                raise FormatError(
                    path,
                    f"not valid JSON: {exc.msg.removesuffix(' starting at')}; the file ends "
                    f"there, inside the record that starts on line {line}: a log cut off (a "
                    "job killed while NCCL Inspector wrote it)?",
                    exc.lineno,
                    exc.colno,
                ) from None
            raise FormatError(path, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
        yield line, value
        line += text.count("\n", pos, stop)
        pos = stop


def _number(
    path: Path,
    line: int,
    obj: dict[str, Any],
    key: str,
    low: float,
    high: float,
    whole: bool,
    positive: bool = False,
) -> float:
    """``obj[key]``: a number from ``low`` to ``high`` (a whole one if ``whole``, above 0 if
    ``positive``)."""
    x = obj.get(key)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        ok = False
    else:
        ok = not whole or isinstance(x, int) or x == int(x)
    if not ok:
        kind = "a whole number" if whole else "a finite number"
        raise FormatError(path, f"{key} must be {kind}, got {shown(x)}", line)
    assert isinstance(x, (int, float))
    if not low <= x <= high:
        raise FormatError(path, f"{key} must be from {low:g} to {high:g}, got {shown(x)}", line)
    if positive and x <= 0:
        raise FormatError(path, f"{key} must be > 0, got {shown(x)}", line)
    return float(x)


def _object(path: Path, line: int, obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise FormatError(path, f"{key} must be an object, got {shown(value)}", line)
    return value


def read_nccl_inspector(path: str | Path, *, text: str | None = None) -> list[NcclTest]:
    """Read NCCL Inspector records into nccl-tests' tests, one row per size.

    Parameters
    ----------
    path : str or Path
        An Inspector output file, or several concatenated (e.g. every rank's file of a job:
        ``cat nccl-inspector-*/*.log``).
    text : str, optional
        Its content, already read (a pipe, as ``<(...)`` gives, can be read only once); by
        default the file is read here.

    Returns
    -------
    list of NcclTest
        One per (op, ``n_ranks``, ``nnodes``), in the order of their first record; rows in
        increasing size (B, as nccl-tests prints it: the whole buffer for all_gather,
        reduce_scatter and alltoall), each the median time (µs) over its calls and ranks and
        the bandwidths (GB/s) at that time; ``line`` of a row and of a test is the line of its
        first record. ``ranks`` is ``n_ranks``, ``nodes`` ``nnodes``, ``gpus_per_node``
        ``n_ranks / nnodes`` when whole, ``hosts`` the records' ``hostname``s;
        ``avg_busbw_GBps`` the mean of the rows' busbw.

    Raises
    ------
    FormatError
        Naming the file and line: not JSON; a record that is not an object with ``header``,
        ``metadata`` and ``coll_perf`` or ``p2p_perf``; a format version other than v4.0; a
        missing, non-finite, negative or absurd number (a message, or a whole buffer, above
        :data:`topo.formats.nccl_tests_checks.MAX_SIZE_BYTES`; a time of 0 or above
        :data:`~topo.formats.nccl_tests_checks.MAX_TIME_US`; a bandwidth above
        :data:`~topo.formats.nccl_tests_checks.MAX_GBPS`; ``n_ranks`` above :data:`MAX_RANKS`; a
        rank outside the communicator); records of one communicator (``id``) that give it
        different ``n_ranks`` or ``nnodes``; a run of more than
        :data:`topo.files.MAX_NUMBER_DIGITS` digits; no record of a collective topo models;
        an (op, ``n_ranks``) whose every record is left out.

    Notes
    -----
    A record cut off mid-line on the file's last line that is not blank (a job killed while
    the plugin wrote it: not valid JSON, the parser stopped at the line's end) is left out,
    with a line in every test's ``left_out_tests`` (op ``""``: said once for the log).

    A record whose ``coll_busbw_gbs`` is not ``coll_algobw_gbs`` times nccl-tests' factor of
    the op on ``n_ranks`` ranks (:func:`topo.formats.nccl_tests_checks.busbw_factor`; to 0.1 %) is
    left out, with a line in the test's ``left_out``.

    References
    ----------
    NVIDIA/nccl ``plugins/profiler/inspector/inspector_json.cc`` (the records),
    ``inspector.cc`` (``inspectorComputeOpBw``), ``inspector_plugin.cc`` (the message size).

    Examples
    --------
    >>> import tempfile, os, json
    >>> rec = lambda rank, t: json.dumps({
    ...     "header": {"id": "0x1", "rank": rank, "n_ranks": 2, "nnodes": 2},
    ...     "metadata": {"inspector_output_format_version": "v4.0", "hostname": f"h{rank}"},
    ...     "coll_perf": {"coll": "AllGather", "coll_sn": 1, "coll_msg_size_bytes": 1000000,
    ...                   "coll_exec_time_us": t, "coll_algobw_gbs": 2e6 / t / 1e3,
    ...                   "coll_busbw_gbs": 1e6 / t / 1e3}})
    >>> with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
    ...     _ = f.write(rec(0, 100) + "\\n" + rec(1, 300) + "\\n")
    >>> (t,) = read_nccl_inspector(f.name); os.unlink(f.name)
    >>> t.op, t.ranks, t.hosts, t.rows[0].size_bytes, t.rows[0].time_us, t.rows[0].busbw_GBps
    ('all_gather', 2, ['h0', 'h1'], 2000000, 200.0, 5.0)
    """
    path = Path(path)
    # NUL bytes at the end are a network file system's zero fill of a killed job's lost
    # writes, not records: a record cut before them is the file's last line
    text = read_numbers_text(path, text).rstrip("\0")
    groups: dict[tuple[str, int, int], _Group] = {}
    seen: set[tuple[Any, ...]] = set()
    shapes: dict[str, tuple[int, int, int]] = {}  # communicator id: (n_ranks, nnodes, line)
    left_out: dict[str, int] = defaultdict(int)
    cut: list[str] = []  # a record cut off on the file's last line, said once for the log
    for line, rec in _records(path, text, cut):
        if not isinstance(rec, dict):
            raise FormatError(path, f"a record must be a JSON object, got {shown(rec)}", line)
        meta = _object(path, line, rec, "metadata")
        version = meta.get("inspector_output_format_version")
        if version != FORMAT_VERSION:
            raise FormatError(
                path,
                f"NCCL Inspector format version {shown(version)}; topo reads {FORMAT_VERSION}",
                line,
            )
        if "coll_perf" not in rec:
            if "p2p_perf" not in rec:
                raise FormatError(path, "a record has neither coll_perf nor p2p_perf", line)
            left_out["point-to-point (p2p_perf)"] += 1
            continue
        head = _object(path, line, rec, "header")
        perf = _object(path, line, rec, "coll_perf")
        n = int(_number(path, line, head, "n_ranks", 1, MAX_RANKS, True))
        nnodes = int(_number(path, line, head, "nnodes", 1, n, True))
        rank = int(_number(path, line, head, "rank", 0, n - 1, True))
        comm = head.get("id")
        if comm is not None:
            first = shapes.setdefault(str(comm), (n, nnodes, line))
            if first[:2] != (n, nnodes):
                raise FormatError(
                    path,
                    f"communicator {shown(comm)} has n_ranks {n} and nnodes {nnodes} here, "
                    f"but {first[0]} and {first[1]} on line {first[2]}: one communicator has "
                    "one shape",
                    line,
                )
        coll = perf.get("coll")
        op = OPS.get(coll) if isinstance(coll, str) else None
        if op is None or not isinstance(coll, str):
            left_out[str(coll)] += 1
            continue
        size = _size(path, line, perf, op, n)
        t = _number(path, line, perf, "coll_exec_time_us", 0, MAX_TIME_US, False, True)
        key = (str(head.get("id")), rank, coll, str(perf.get("coll_sn")), size, t)
        if perf.get("coll_sn") is not None and key in seen:
            continue  # the same call written twice
        seen.add(key)
        alg = _number(path, line, perf, "coll_algobw_gbs", 0, MAX_GBPS, False)
        bus = _number(path, line, perf, "coll_busbw_gbs", 0, MAX_GBPS, False)
        _check_algbw(path, line, alg, size, t, coll)
        factor = bus / alg if alg > 0 else (n - 1) / n  # AlltoAll: the plugin writes 0
        g = groups.setdefault((op, n, nnodes), _Group(line))
        why = _busbw_disagrees(alg, bus, op, n)
        if why is not None:
            g.left_out.append(f"{path}:{line}: {coll} record of {size} B left out: {why}")
            continue
        g.hosts.setdefault(str(meta.get("hostname", "")), None)
        g.sizes.setdefault(size, []).append((t, factor, line))
    if not groups:
        what = ", ".join(f"{k} ({v})" for k, v in left_out.items()) or "none"
        raise FormatError(
            path,
            f"no record of a collective topo models ({', '.join(sorted(set(OPS.values())))}); "
            f"records found: {what}" + "".join(f"; {c.removeprefix(f'{path}:')}" for c in cut),
        )
    for (op, n, _), g in groups.items():
        if not g.sizes:
            raise FormatError(
                path,
                f"no plausible record of {op} on {n} ranks is left; "
                f"{g.left_out[0].removeprefix(f'{path}:')}",
            )
    tests = [_test(op, n, nnodes, g) for (op, n, nnodes), g in groups.items()]
    return [replace(t, left_out_tests=[("", c) for c in cut]) for t in tests] if cut else tests


def _size(path: Path, line: int, perf: dict[str, Any], op: str, n: int) -> int:
    """nccl-tests' size (B) of a record: the message times ``n`` for a whole-buffer op."""
    msg = int(_number(path, line, perf, "coll_msg_size_bytes", 1, MAX_SIZE_BYTES, True))
    size = msg * n if op in WHOLE_BUFFER else msg
    if size > MAX_SIZE_BYTES:
        raise FormatError(
            path,
            f"coll_msg_size_bytes {msg} times n_ranks {n} (the whole buffer of {op}) is above "
            f"{MAX_SIZE_BYTES:,} bytes",
            line,
        )
    return size


def _check_algbw(path: Path, line: int, alg: float, size: int, t: float, coll: str) -> None:
    """The plugin's algbw is its traffic size over the time (``inspectorComputeOpBw``): held
    against the size this reader gives the record (to the 6 decimals ``%lf`` prints), so a
    plugin that counts the message otherwise is an error, not a size off by ``n_ranks``."""
    want = size / t / 1e3
    if alg > 0 and abs(alg - want) > 1e-3 * want + 1e-6:
        raise FormatError(
            path,
            f"coll_algobw_gbs {alg:g} is not the {size:,} B this reader takes a {coll} of this "
            f"coll_msg_size_bytes to move, over coll_exec_time_us {t:g} ({want:g} GB/s): "
            "an Inspector that sizes its messages otherwise",
            line,
        )


def _busbw_disagrees(alg: float, bus: float, op: str, n: int) -> str | None:
    """Why a record's busbw is not its algbw times nccl-tests' factor of the op
    (``inspectorComputeOpBw`` follows nccl-tests' ``doc/PERFORMANCE.md``), to the 6
    decimals ``%lf`` prints; None when it is (or the plugin wrote no algbw: AlltoAll)."""
    f = busbw_factor(op, n)
    if alg == 0 or f is None:
        return None
    want = alg * f
    if abs(bus - want) <= 1e-3 * want + 1e-6:
        return None
    return (
        f"coll_busbw_gbs {bus:g} is not coll_algobw_gbs {alg:g} x {f:.4g} ({op} of {n} "
        f"ranks) = {want:.6g}"
    )


def _test(op: str, n: int, nnodes: int, g: _Group) -> NcclTest:
    rows = []
    for size in sorted(g.sizes):
        calls = g.sizes[size]
        t = statistics.median(c[0] for c in calls)
        factor = statistics.median(c[1] for c in calls)
        alg = size / t / 1e3  # B/µs -> GB/s
        rows.append(
            NcclTestRow(
                size_bytes=size,
                count=0,
                type="unknown",
                redop="unknown" if op in REDUCTIONS else "none",
                root=-1,
                time_us=t,
                algbw_GBps=alg,
                busbw_GBps=alg * factor,
                inplace_time_us=None,
                inplace_algbw_GBps=None,
                inplace_busbw_GBps=None,
                line=min(c[2] for c in calls),
            )
        )
    hosts = [h for h in g.hosts if h]
    return NcclTest(
        op=op,
        rows=rows,
        ranks=n,
        hosts=hosts,
        gpus_per_node=n // nnodes if n % nnodes == 0 else None,
        nccl_tests_version="",
        nccl_version="",
        avg_busbw_GBps=sum(r.busbw_GBps for r in rows) / len(rows),
        line=g.line,
        nodes=nnodes,
        ranks_source=f"the n_ranks and nnodes of its records (from line {g.line})",
        left_out=g.left_out,
    )
