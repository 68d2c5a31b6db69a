"""One door to the measured collective logs: nccl-tests text, nccl-tests JSON, NCCL Inspector.

The format is told by the content, not the file's name, in this order:

- text with a line of nccl-tests' own (``# nThread``, ``# Collective test starting``, the
  ``size count type`` column header, ``Avg bus bandwidth``, ``Out of bounds values``, a test
  failure; after a launcher's tag, :data:`topo.formats.nccl_tests.LINE_TAG`): an nccl-tests
  log (:mod:`topo.formats.nccl_tests`);
- text whose first non-blank character is ``{`` and whose start holds a key of the Inspector
  (``inspector_output_format_version``, ``coll_perf``, ``p2p_perf``): NCCL Inspector records
  (:mod:`topo.formats.nccl_inspector`);
- other text starting with ``{`` or ``[``: an nccl-tests JSON report (``-J``,
  :mod:`topo.formats.nccl_tests_json`), as is a ``.json`` file of none of the formats (the
  JSON reader's error then says what is wrong with it).

Anything else is an error naming the file and the three formats.
"""

from __future__ import annotations

import re
from pathlib import Path

from topo.errors import FormatError
from topo.files import read_text
from topo.formats.nccl_inspector import looks_like_inspector, read_nccl_inspector
from topo.formats.nccl_tests import LINE_TAG, read_nccl_tests
from topo.formats.nccl_tests_json import read_nccl_tests_json
from topo.formats.nccl_tests_records import NcclTest

FORMATS = ("nccl-tests", "nccl-tests-json", "nccl-inspector")
"""What :func:`log_format` returns."""

_HEAD_CHARS = 1 << 16
_TEXT_MARKS = re.compile(
    "^"
    + LINE_TAG.pattern.removeprefix("^")
    + "?"  # (a launcher's tag)
    + r"\s*#\s*(?:nThread\s|Collective test starting:|size\s+count\s+type\b|bytes\s+N\s+type\b"
    r"|Avg bus bandwidth|Out of bounds values|nccl-tests version)"
    r"|Test (?:NCCL |CUDA )?failure",
    re.MULTILINE,
)


def log_format(path: str | Path, *, text: str | None = None) -> str:
    """Which measured log a file is: JSON told apart by its first 64 Ki characters, text by
    a line of nccl-tests' anywhere.

    Parameters
    ----------
    path : str or Path
        The file.
    text : str, optional
        Its content, already read; by default the file is read here.
    keep_op : str, optional
        The operation the caller keeps: an nccl-tests text test of another that failed is
        left out with a warning line (:func:`topo.formats.nccl_tests.read_nccl_tests`).

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    FormatError
        Missing, unreadable (not UTF-8) or empty file; none of the three formats.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8\\n")
    >>> log_format(f.name); os.unlink(f.name)
    'nccl-tests'
    """
    path = Path(path)
    if text is None:
        text = read_text(path)
    head = text[:_HEAD_CHARS]
    if not head.strip():
        raise FormatError(path, "empty file: expected an nccl-tests log or NCCL Inspector records")
    # (text first: a tagged line starts with '['; a file starting with '{' is JSON, and is not
    # searched through for nccl-tests' lines: 3.6 s of a 259 MB Inspector file)
    json_object = head.lstrip().startswith("{")
    if not json_object and _TEXT_MARKS.search(text):
        return "nccl-tests"
    if head.lstrip().startswith(("{", "[")):
        return "nccl-inspector" if looks_like_inspector(head) else "nccl-tests-json"
    if path.suffix.lower() == ".json":
        return "nccl-tests-json"  # (its reader names what is wrong with the JSON)
    raise FormatError(
        path,
        "not a measured collective log: expected nccl-tests' text output (a '# nThread' or "
        "'# Collective test starting' line and its table), an nccl-tests -J JSON report, or "
        "NCCL Inspector records (JSON lines with coll_perf)",
    )


def read_nccl_log(
    path: str | Path, op: str | None = None, *, text: str | None = None, keep_op: str | None = None
) -> list[NcclTest]:
    """Read a measured collective log of any of :data:`FORMATS` (:func:`log_format`).

    Parameters
    ----------
    path : str or Path
        The log.
    op : str, optional
        The operation of an nccl-tests text test the log does not name (see
        :func:`topo.formats.nccl_tests.read_nccl_tests`); the JSON formats name theirs.
    text : str, optional
        Its content, already read; by default the file is read here.

    Returns
    -------
    list of NcclTest

    Raises
    ------
    FormatError
        As :func:`log_format` and the format's reader.

    Notes
    -----
    The file is read once, so a pipe (bash's ``<(...)``, a FIFO) is read as a file is.

    Examples
    --------
    >>> import tempfile, os
    >>> log = "\\n".join([
    ...     "$ mpirun -np 2 ./build/all_gather_perf -b 8M -e 8M",
    ...     "# nThread 1 nGpus 1 minBytes 8388608 maxBytes 8388608 step: 2(factor) warmup "
    ...     "iters: 5 iters: 20 validation: 1",
    ...     "#   Rank  0 Pid  1 on a device  0 [0x07] Tesla V100-SXM2-32GB",
    ...     "#   Rank  1 Pid  2 on b device  0 [0x07] Tesla V100-SXM2-32GB",
    ...     "#       size   count   type   time  algbw  busbw  error   time  algbw  busbw  error",
    ...     "     8388608 1048576  float  790.1  10.62   5.31  0e+00  788.0  10.65   5.32  0e+00",
    ...     "# Out of bounds values : 0 OK",
    ...     "# Avg bus bandwidth    : 5.315",
    ... ])
    >>> with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
    ...     _ = f.write(log)
    >>> (t,) = read_nccl_log(f.name); os.unlink(f.name)
    >>> t.op, t.ranks, t.rows[0].redop, t.rows[0].busbw_GBps
    ('all_gather', 2, 'none', 5.31)
    """
    if text is None:  # read once: a pipe (``<(...)``) cannot be read a second time
        text = read_text(path)
    kind = log_format(path, text=text)
    if kind == "nccl-inspector":
        return read_nccl_inspector(path, text=text)
    if kind == "nccl-tests-json":
        return read_nccl_tests_json(path, text=text)
    return read_nccl_tests(path, op=op, text=text, keep_op=keep_op)
