"""Reader of nccl-tests JSON reports (``*_perf -J FILE.json``, format version 3).

nccl-tests (>= 2.17.3, ``src/util.cu``, ``JSON_FILE_VERSION 3``) writes one object per run::

    {"version": 3, "start_time": "...", "args": ["./build/all_reduce_perf", "-b", ...],
     "env": [...], "nccl_version": 22902, "config": {...},
     "devices": [{"rank", "group", "pid", "hostname", "device", "device_hex",
                  "device_info"}, ...],
     "results": [{"size", "count", "type", "redop", "root",
                  "out_of_place": {"time" (or "cpu_time"), "alg_bw", "bus_bw", "nwrong"},
                  "in_place": {...}, "actual_iterations", "experiment_name", ...}, ...],
     "end_time": "..."}

The operation is not a field: it is the binary's name in ``args[0]`` (``all_reduce_perf``).
``root`` is printed as a string (``"    -1"``). Times in µs, bandwidths in GB/s, as in the text
log. A result whose ``out_of_place`` is null (the size was skipped) is left out.

The result is the :class:`topo.formats.nccl_tests_records.NcclTest` the text reader gives, so
``topo collective --compare`` takes either.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from topo.errors import FormatError
from topo.files import json_cut_off, read_numbers_text, too_deep
from topo.formats.nccl_tests import read_nccl_tests
from topo.formats.nccl_tests_checks import check_size, plausible_rows
from topo.formats.nccl_tests_records import NcclTest, NcclTestRow
from topo.wording import shown

FORMAT_VERSION = 3
"""The ``version`` nccl-tests writes (``JSON_FILE_VERSION``, src/util.cu)."""


def looks_like_json(path: str | Path) -> bool:
    """Whether a file is a JSON report: a ``.json`` name, or text whose first non-blank
    character is ``{``.

    Parameters
    ----------
    path : str or Path
        Any readable file.

    Returns
    -------
    bool
    """
    p = Path(path)
    if p.suffix.lower() == ".json":
        return True
    try:
        with p.open("rb") as f:
            head = f.read(256).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


def _op(path: Path, args: Any) -> str:
    if not isinstance(args, list) or not args or not isinstance(args[0], str):
        raise FormatError(path, "'args' must be a list starting with the test binary's path")
    name = Path(args[0]).name
    if not name.endswith("_perf"):
        raise FormatError(path, f"args[0] {args[0]!r} is not an nccl-tests *_perf binary")
    return name.removesuffix("_perf")


def _number(path: Path, where: str, obj: dict[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(path, f"{where}.{key} must be a finite number, got {shown(value)}")
    if value < 0:
        raise FormatError(path, f"{where}.{key} must be >= 0, got {shown(value)}")
    return float(value)


def _body(path: Path, where: str, body: Any) -> tuple[float, float, float]:
    if not isinstance(body, dict):
        raise FormatError(path, f"{where} must be an object, got {shown(body)}")
    key = "time" if "time" in body else "cpu_time"
    return (
        _number(path, where, body, key),
        _number(path, where, body, "alg_bw"),
        _number(path, where, body, "bus_bw"),
    )


def _row(path: Path, i: int, r: Any) -> NcclTestRow | None:
    where = f"results[{i}]"
    if not isinstance(r, dict):
        raise FormatError(path, f"{where} must be an object")
    if r.get("out_of_place") is None:
        return None
    t, alg, bus = _body(path, where + ".out_of_place", r["out_of_place"])
    ip: tuple[float | None, ...] = (None, None, None)
    if r.get("in_place") is not None:
        ip = _body(path, where + ".in_place", r["in_place"])
    size, count = _whole(path, where, r, "size"), _whole(path, where, r, "count")
    try:
        root = int(str(r.get("root", -1)))
        dtype, redop = str(r["type"]), str(r["redop"])
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(path, f"{where}: bad or missing type/redop/root ({exc})") from None
    try:
        check_size(path, size, count)
    except FormatError as exc:
        raise FormatError(path, f"{where}: {exc.message}") from None
    wrong = [_nwrong(path, f"{where}.{k}", r.get(k)) for k in ("out_of_place", "in_place")]
    return NcclTestRow(
        size_bytes=size,
        count=count,
        type=dtype,
        redop=redop,
        root=root,
        time_us=t,
        algbw_GBps=alg,
        busbw_GBps=bus,
        inplace_time_us=ip[0],
        inplace_algbw_GBps=ip[1],
        inplace_busbw_GBps=ip[2],
        line=i + 1,
        wrong=wrong[0],
        inplace_wrong=wrong[1],
    )


def _whole(path: Path, where: str, r: dict[str, Any], key: str) -> int:
    """``r[key]``: a whole number, as nccl-tests writes a size and a count (``%zu``)."""
    x = r.get(key)
    if isinstance(x, float) and x.is_integer():  # finite: 1024.0, 1e3
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise FormatError(path, f"{where}.{key} must be a whole number, got {shown(x)}")
    return x


def _nwrong(path: Path, where: str, body: Any) -> int | None:
    """``nwrong`` of a result's body: the elements that failed the data check (null when
    validation was off)."""
    if not isinstance(body, dict) or body.get("nwrong") is None:
        return None
    x = _number(path, where, body, "nwrong")
    if x != int(x):
        raise FormatError(path, f"{where}.nwrong must be a whole number, got {shown(x)}")
    return int(x)


def _hosts(path: Path, devices: Any) -> tuple[int | None, list[str], int | None]:
    if devices is None:
        return None, [], None
    if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
        raise FormatError(path, "'devices' must be a list of objects")
    names = [str(d.get("hostname", "")) for d in devices]
    hosts = list(dict.fromkeys(names))
    per_host = set(Counter(names).values())
    gpn = per_host.pop() if len(per_host) == 1 else None
    return (len(devices) or None), hosts, gpn


def _not_json(path: Path, text: str, exc: json.JSONDecodeError) -> FormatError:
    """The parser's error; where the text ends before the document closes (nccl-tests -J
    writes its report as the test runs, so a job killed mid-test leaves it cut), at the end of
    the text, saying the report was cut off."""
    if not json_cut_off(exc, text):
        return FormatError(path, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno)
    end = len(text.rstrip())
    line = text.count("\n", 0, end) + 1
    column = end - (text.rfind("\n", 0, end) + 1) + 1
    return FormatError(
        path,
        f"not valid JSON: {exc.msg.removesuffix(' starting at')}; the report ends there, "
        "before it closes: cut off (a job "
        "killed before nccl-tests -J finished it)? topo reads a JSON report whole; the same "
        "run's text log (stdout) keeps the rows printed whole",
        line,
        column,
    )


def read_nccl_tests_json(path: str | Path, *, text: str | None = None) -> list[NcclTest]:
    """Read an nccl-tests JSON report (``-J``) into one :class:`NcclTest`.

    Parameters
    ----------
    path : str or Path
        The report.
    text : str, optional
        Its content, already read (a pipe, as ``<(...)`` gives, can be read only once); by
        default the file is read here.

    Returns
    -------
    list of NcclTest
        One test (a report holds one binary's run); ``line`` of each row is its 1-based index
        in ``results``; ``avg_busbw_GBps`` is the mean out-of-place busbw (GB/s).

    Raises
    ------
    FormatError
        Not JSON; a ``version`` other than 3; no ``args`` naming a ``*_perf`` binary; no
        results; a result with a missing, negative or non-finite number, a size or count that
        is not a whole number (``Infinity``, ``NaN``, ``1024.5``) or above
        :data:`topo.formats.nccl_tests_checks.MAX_SIZE_BYTES`; a run of more than
        :data:`topo.files.MAX_NUMBER_DIGITS` digits.

    Examples
    --------
    >>> import tempfile, os, json
    >>> doc = {"version": 3, "args": ["./build/all_gather_perf"], "nccl_version": 22902,
    ...        "devices": [{"rank": 0, "hostname": "a"}, {"rank": 1, "hostname": "a"}],
    ...        "results": [{"size": 1024, "count": 128, "type": "float", "redop": "none",
    ...                     "root": "    -1", "out_of_place": {"time": 10.0, "alg_bw": 0.1,
    ...                     "bus_bw": 0.05, "nwrong": 0}, "in_place": None}]}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write(json.dumps(doc))
    >>> (t,) = read_nccl_tests_json(f.name); os.unlink(f.name)
    >>> t.op, t.ranks, t.gpus_per_node, t.rows[0].busbw_GBps
    ('all_gather', 2, 2, 0.05)
    """
    path = Path(path)
    # NUL bytes at the end are a network file system's zero fill of a killed job's lost
    # writes, not the report's: a report cut before them is said cut (:func:`_not_json`)
    text = read_numbers_text(path, text).rstrip("\0")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise too_deep(path, "not valid JSON") from None
    except json.JSONDecodeError as exc:
        raise _not_json(path, text, exc) from None
    if not isinstance(doc, dict):
        raise FormatError(path, "an nccl-tests JSON report is an object")
    if doc.get("version") != FORMAT_VERSION:
        raise FormatError(
            path, f"nccl-tests JSON format version {doc.get('version')!r}; topo reads version 3"
        )
    op = _op(path, doc.get("args"))
    results = doc.get("results")
    if not isinstance(results, list):
        raise FormatError(path, "'results' must be a list")
    rows = [row for i, r in enumerate(results) if (row := _row(path, i, r)) is not None]
    if not rows:
        raise FormatError(path, f"{op}_perf: no results in the report (a failed or empty run)")
    ranks, hosts, gpn = _hosts(path, doc.get("devices"))
    cpu = any(
        isinstance(r, dict)
        and isinstance(r.get("out_of_place"), dict)
        and "time" not in r["out_of_place"]
        for r in results
    )  # -C 1: "cpu_time", the CPU's time, while algbw is the GPU's
    rows, left_out = plausible_rows(op, ranks, rows, f"{path}: results[", cpu)
    if not rows:
        raise FormatError(
            path, f"{op}_perf: no plausible result is left; {left_out[0].removeprefix(f'{path}: ')}"
        )
    version = doc.get("nccl_version")
    return [
        NcclTest(
            op=op,
            rows=rows,
            ranks=ranks,
            hosts=hosts,
            gpus_per_node=gpn,
            nccl_tests_version="",
            nccl_version="" if version is None else str(version),
            avg_busbw_GBps=sum(r.busbw_GBps for r in rows) / len(rows),
            line=1,
            out_of_bounds=_out_of_bounds(path, doc.get("out_of_bounds")),
            ranks_source="its 'devices' list" if ranks else "",
            left_out=left_out,
        )
    ]


def _out_of_bounds(path: Path, obj: Any) -> int | None:
    """``out_of_bounds.count``: the report's wrong results (the text log's footer)."""
    if not isinstance(obj, dict) or obj.get("count") is None:
        return None
    x = _number(path, "out_of_bounds", obj, "count")
    return int(x)


def read_nccl_tests_any(path: str | Path) -> list[NcclTest]:
    """Read a text log or a JSON report of nccl-tests, whichever the file is.

    Parameters
    ----------
    path : str or Path
        A ``.json`` report (or any file starting with ``{``), else a text log.

    Returns
    -------
    list of NcclTest

    Raises
    ------
    FormatError
        As :func:`read_nccl_tests_json` or :func:`topo.formats.nccl_tests.read_nccl_tests`.
    """
    if looks_like_json(path):
        return read_nccl_tests_json(path)
    return read_nccl_tests(path)
