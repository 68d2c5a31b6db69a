"""The sweep's table on disk: Parquet (pyarrow) or CSV, written whole or not at all, and the
journal a sweep streams its rows into so that ``--resume`` continues an interrupted run.

The journal ``OUTPUT.partial.jsonl`` sits beside the output: a header line (the spec's digest,
the column names) and one JSON row per finished point, flushed as each arrives. The table is
written from it when the sweep ends, and the journal removed. A running sweep holds an
exclusive lock on its journal (``flock``; the system releases it when the process ends, however
it ends), so a second sweep to the same output is told that another sweep is writing it,
and a journal without a lock is an interrupted sweep's.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, TextIO

from topo.errors import FormatError, TopoError
from topo.files import write_atomic

try:
    import fcntl
except ImportError:  # (Windows: no flock; a live sweep's journal is not told apart there)
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

FORMATS = (".parquet", ".csv")


def table_format(path: Path) -> str:
    """``parquet`` or ``csv``, from the output's suffix.

    Raises
    ------
    FormatError
        Another suffix.
    """
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        has = f"its suffix is {path.suffix!r}" if suffix else "it has no suffix"
        raise FormatError(
            path,
            f"output must end in .parquet or .csv (the table's format is taken from the "
            f"output's suffix, and {has})",
        )
    return suffix[1:]


def journal_path(output: Path) -> Path:
    """The journal of a sweep writing ``output``."""
    return output.with_name(output.name + ".partial.jsonl")


def write_table(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Write ``rows`` (in order) with ``columns`` as Parquet or CSV, whole or not at all.

    Parameters
    ----------
    path : Path
        ``*.parquet`` or ``*.csv``.
    rows : list of dict
        Missing keys are empty (null in Parquet).
    columns : list of str
        The table's columns, in order.

    Raises
    ------
    FormatError
        A bad suffix, or a folder that cannot be written.
    """
    if table_format(path) == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(path, buf.getvalue())
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows])
    # Built in memory, then written by the same helper as the CSV (through a link, never
    # over a FIFO or device, with a plain file's permissions).
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    write_atomic(path, buf.getvalue().to_pybytes())


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of a table written by :func:`write_table` (CSV values as strings).

    Raises
    ------
    FormatError
        A bad suffix or an unreadable file.
    """
    try:
        if table_format(path) == "csv":
            with open(path, newline="", encoding="utf-8") as fh:
                return list(csv.DictReader(fh))
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc}") from None


def check_journal(output: Path, digest: str, resume: bool) -> None:
    """Refuse what :class:`Journal` would, without opening it: a command calls this before it
    starts a Dask cluster.

    Parameters
    ----------
    output : Path
        The table the sweep will write.
    digest : str
        The spec's digest (:attr:`topo.engine.spec.SweepSpec.digest`).
    resume : bool
        Whether the sweep continues the journal there.

    Raises
    ------
    TopoError
        Another sweep is running to ``output`` (it holds its journal's lock).
    FormatError
        Without ``resume``, a journal already there (an interrupted sweep); with it, a journal
        of another spec (its first line holds the digest), or one that cannot be read.
    """
    path = journal_path(output)
    if not path.exists():
        return
    if _locked(path):
        raise _another_sweep(output, path)
    if not resume:
        raise FormatError(
            path,
            "an interrupted sweep's rows are here: give resume to continue it, or "
            "delete the file",
            names=("resume",),
        )
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        header = json.loads(first) if first.strip() else {}
    except json.JSONDecodeError:
        header = {}
    if not isinstance(header, dict) or header.get("digest") != digest:
        raise FormatError(
            path, "this journal is of another sweep spec (or the files it names changed)"
        )


class Journal:
    """Rows streamed to ``OUTPUT.partial.jsonl`` as they finish.

    Parameters
    ----------
    output : Path
        The table the sweep will write.
    digest : str
        The spec's digest (:attr:`topo.engine.spec.SweepSpec.digest`).
    resume : bool
        Continue the journal there (its rows are kept); else start a new one.

    Raises
    ------
    TopoError
        Another sweep is running to ``output`` (it holds its journal's lock).
    FormatError
        Without ``resume``, a journal already there (an interrupted sweep); with it, a journal
        of another spec; a journal that cannot be written (e.g. its folder is missing), or a
        symbolic link.
    """

    def __init__(self, output: Path, digest: str, resume: bool) -> None:
        self.path = journal_path(output)
        self.rows: dict[int, dict[str, Any]] = {}
        check_journal(output, digest, resume)
        try:
            if resume and self.path.exists():
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
                _lock(fd, output, self.path)
                self._fh: TextIO = os.fdopen(fd, "a", encoding="utf-8")
                self.rows = self._read()
            else:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                try:
                    fd = os.open(self.path, flags, 0o666)
                except FileExistsError:  # one appeared since the check: whose?
                    check_journal(output, digest, resume)
                    raise
                _lock(fd, output, self.path)
                self._fh = os.fdopen(fd, "a", encoding="utf-8")
                self._fh.write(json.dumps({"digest": digest}) + "\n")
                self._fh.flush()
        except OSError as exc:
            raise FormatError(self.path, f"cannot write: {exc.strerror or exc}") from None

    def _read(self) -> dict[int, dict[str, Any]]:
        """The rows of a journal whose header :func:`check_journal` has matched."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        rows = {}
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # the line being written when it stopped
                continue
            rows[int(row["point"])] = row
        # drop a torn last line: rewritten through the locked descriptor (appending after the
        # truncation)
        self._fh.flush()
        os.ftruncate(self._fh.fileno(), 0)
        self._fh.write("\n".join([lines[0], *(json.dumps(r) for r in rows.values())]) + "\n")
        self._fh.flush()
        return rows

    def add(self, row: dict[str, Any]) -> None:
        """Append one finished row (flushed at once)."""
        self.rows[int(row["point"])] = row
        self._fh.write(json.dumps(row) + "\n")
        self._fh.flush()

    def close(self, done: bool) -> None:
        """Close the file; remove it when the table has been written (``done``)."""
        self._fh.close()
        if done:
            self.path.unlink(missing_ok=True)


def _another_sweep(output: Path, journal: Path) -> TopoError:
    return TopoError(
        f"another sweep is writing {output} (its journal {journal.name} is locked by that "
        "running process): wait for it to end, or write this sweep's table to another file"
    )


def _locked(path: Path) -> bool:
    """Whether a running process holds the lock of the journal ``path`` (:class:`Journal`)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # (and our probe's lock with it)
    return False


def _lock(fd: int, output: Path, journal: Path) -> None:
    """Take the journal's exclusive lock for the run (released when ``fd`` closes, or the
    process ends); another sweep holding it is refused."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _another_sweep(output, journal) from None
