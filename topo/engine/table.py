"""The sweep's table on disk: Parquet (pyarrow) or CSV, written whole or not at all, and the
journal a sweep streams its rows into so that ``--resume`` continues an interrupted run.

The journal ``OUTPUT.partial.jsonl`` sits beside the output: a header line (the spec's digest,
the column names) and one JSON row per finished point, flushed as each arrives. The table is
written from it when the sweep ends, and the journal removed.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, TextIO

from topo.errors import FormatError
from topo.fabric import write_atomic

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
    FormatError
        Without ``resume``, a journal already there (an interrupted sweep); with it, a journal
        of another spec (its first line holds the digest), or one that cannot be read.
    """
    path = journal_path(output)
    if not path.exists():
        return
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
    FormatError
        Without ``resume``, a journal already there (an interrupted sweep); with it, a journal
        of another spec; a journal that cannot be written (e.g. its folder is missing).
    """

    def __init__(self, output: Path, digest: str, resume: bool) -> None:
        self.path = journal_path(output)
        self.rows: dict[int, dict[str, Any]] = {}
        check_journal(output, digest, resume)
        try:
            if resume and self.path.exists():
                self.rows = self._read()
            else:
                with open(self.path, "w", encoding="utf-8") as fh:
                    fh.write(json.dumps({"digest": digest}) + "\n")
            self._fh: TextIO = open(self.path, "a", encoding="utf-8")
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
        with open(self.path, "w", encoding="utf-8") as fh:  # drop a torn last line
            fh.write("\n".join([lines[0], *(json.dumps(r) for r in rows.values())]) + "\n")
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
