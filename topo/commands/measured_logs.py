"""What the verbs that read a measured NCCL log share (``topo collective --compare`` and
``--calibrate``, ``topo explain``, ``topo acceptance``).

:class:`Op` is the ``--op`` choice; :func:`log_tests` reads a log's tests (nccl-tests text or
JSON, NCCL Inspector) checked against ``--gpus`` and ``--gpus-per-node``;
:func:`sizes_from_log` says where the ranks came from when the model refuses them;
:func:`warn_lines` prints the rows left out; :func:`write_html_first` writes a figure before
anything goes to stdout.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topo.errors import FormatError, TopoError

if TYPE_CHECKING:
    from topo.formats.nccl_tests_records import NcclTest


class Op(str, Enum):
    """The nccl-tests operations topo models (``--op``; :data:`topo.collective.model.OPS`)."""

    all_reduce = "all_reduce"
    all_gather = "all_gather"
    reduce_scatter = "reduce_scatter"
    alltoall = "alltoall"
    broadcast = "broadcast"
    reduce = "reduce"
    sendrecv = "sendrecv"


def warn_lines(lines: list[str]) -> None:
    """Print each line to stderr as a ``topo: warning:`` line."""
    for line in lines:
        print(f"topo: warning: {line}", file=sys.stderr)


def log_tests(
    log: Path,
    op: Op | None,
    gpus: int | None,
    gpus_per_node: int | None,
    text: str | None = None,
) -> tuple[list[NcclTest], list[str]]:
    """The tests of a measured log (nccl-tests text or JSON, NCCL Inspector: told by its
    content) to compare (of ``op`` if given, which also names a test an old log does not),
    checked against the --gpus and --gpus-per-node given; and the warnings, one line each,
    for the caller to print once its result stands (a refusal stays one line): the rows left
    out (implausible, cut off on the file's last line, or failed nccl-tests' data check), the
    tests cut off before their ``Avg bus bandwidth`` line (their rows used), and the tests
    left out for having no result row (:attr:`NcclTest.left_out_tests`: with ``op``, only
    those of that op; when they are all the op has, the error says so). ``text``: the log's
    content, if already read.

    Raises :class:`~topo.errors.FormatError` (naming the file) when the log has no test of
    ``op``, so that a folder's log of other ops is said and skipped; :class:`TopoError` when
    ``gpus`` or ``gpus_per_node`` differ from the log's."""
    from topo.formats.nccl_log import read_nccl_log
    from topo.formats.nccl_tests_checks import validated_tests

    kept = op.value if op is not None else None
    tests = read_nccl_log(log, kept, text=text, keep_op=kept)
    left_tests = [
        line for name, line in tests[0].left_out_tests if kept is None or name in ("", kept)
    ]
    if op is not None:
        found = ", ".join(t.op for t in tests)
        tests = [t for t in tests if t.op == op.value]
        if not tests:
            # a FormatError on the file: a folder's log without the op is said and skipped
            why = "".join(f"; {line.removeprefix(f'{log}: ')}" for line in left_tests)
            raise FormatError(log, f"no {op.value}_perf test in the log (it has {found}){why}")
    left_out = [line for t in tests for line in t.notes + t.left_out] + left_tests
    tests, warnings = validated_tests(tests, log)
    tests, empty = _moving_tests(log, tests)
    for t in tests:
        if gpus is not None and t.ranks is not None and gpus != t.ranks:
            raise TopoError(
                f"{log}: --gpus {gpus} differs from the {t.ranks} ranks of its "
                f"{t.op}_perf test: a log is compared with the model at its own size"
            )
        if gpus_per_node is not None and t.gpus_per_node not in (None, gpus_per_node):
            raise TopoError(
                f"{log}: --gpus-per-node {gpus_per_node} differs from the "
                f"{t.gpus_per_node} ranks per host of its {t.op}_perf test"
            )
    return tests, left_out + warnings + empty


def _moving_tests(log: Path, tests: list[NcclTest]) -> tuple[list[NcclTest], list[str]]:
    """The tests with a row of more than 0 bytes, and a line for each left out (nccl-tests
    prints rows of 0 bytes where ``-b`` is under ranks x a word: nothing moved, nothing to
    compare, explain or fit).

    Raises
    ------
    FormatError
        No test has such a row: the log, the first test's line and what to change (``topo
        explain`` over a folder skips the file).
    """
    moves = [any(m.size_bytes > 0 for m in t.rows) for t in tests]
    kept = [t for t, k in zip(tests, moves, strict=True) if k]
    if tests and not kept:
        t = tests[0]
        raise FormatError(
            log,
            f"the {t.op}_perf test has no row of more than 0 bytes"
            f"{' (nor has any other test of the log)' if len(tests) > 1 else ''}: nothing "
            "moved; nccl-tests prints 0 B where -b is under the ranks x a word of the data "
            "type: rerun with a larger -b",
            line=t.line,
        )
    return kept, [
        f"{log}:{t.line}: {t.op}_perf test left out: it has no row of more than 0 bytes"
        for t, k in zip(tests, moves, strict=True)
        if not k
    ]


@contextlib.contextmanager
def sizes_from_log(
    log: Path, tests: list[NcclTest], gpus: int | None, gpus_per_node: int | None
) -> Iterator[None]:
    """Say where the ranks and ranks per server came from when the model refuses them (an
    error naming --gpus or --gpus-per-node) and the user gave neither or one: the log's rank
    list (of the test whose ranks the error names), the fabric's servers."""
    try:
        yield
    except TopoError as exc:
        text = str(exc)
        if (gpus is not None and gpus_per_node is not None) or not (
            {"gpus", "gpus_per_node"} & {exc.param, *exc.names} or "--gpus" in text
        ):
            raise
        t = next((t for t in tests if re.search(rf"\b{t.ranks}\b", text)), tests[0])
        where = t.ranks_source or "its rank list"
        parts = []
        if gpus is None and t.ranks is None:
            parts.append(f"--gpus not given, and the log's {t.op}_perf test lists no ranks")
        elif gpus is None:
            parts.append(
                f"--gpus not given: {t.ranks} is the ranks of the log's {t.op}_perf test, {where}"
            )
        if gpus_per_node is None and t.gpus_per_node is not None:
            parts.append(
                f"--gpus-per-node not given: {t.gpus_per_node} is the ranks on each of the "
                f"log's {len(t.hosts)} hosts"
            )
        elif gpus_per_node is None:
            hosts = (
                f"the log's {len(t.hosts)} hosts holding unequal ranks"
                if t.hosts
                else "the log naming no hosts"
            )
            parts.append(f"--gpus-per-node not given: the GPUs of the fabric's servers, {hosts}")
        err = exc.prefixed(f"{log}: ")
        err.args = (f"{err} ({'; '.join(parts)})", *err.args[1:])
        raise err from None


def write_html_first(path: Path | None, figure: Callable[[], Any]) -> None:
    """Write ``figure()`` to ``path`` as offline HTML, before anything goes to stdout (a path
    that cannot be written is then an error with no half-printed table)."""
    if path is not None:
        from topo.plot import write_html

        write_html(figure(), path)
