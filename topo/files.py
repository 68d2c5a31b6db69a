"""Reading and writing files safely, for every reader and writer of topo.

- writing: :func:`write_atomic` (whole or not at all, never through a symbolic link nor over
  what is not a regular file), :func:`check_writable` (the same refusals, before anything is
  computed), :func:`remove_stale_temporaries`, :func:`link_target`, :func:`written_names`;
- reading: :func:`read_text` (UTF-8, a byte order mark dropped), :func:`parse_json`,
  :func:`toml_error`, and the limits every reader applies: :func:`long_number` (at most
  :data:`MAX_NUMBER_DIGITS` digits), :func:`too_deep` (JSON nested past the recursion limit).

Every fault is a :class:`topo.errors.FormatError` naming the file (and the line where there is
one). Nothing here knows what a fabric is.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from topo.errors import FormatError


def check_writable(path: str | Path) -> tuple[Path, Path]:
    """Refuse an output :func:`write_atomic` would refuse, before anything is computed.

    Parameters
    ----------
    path : str or Path
        The output file.

    Returns
    -------
    (Path, Path)
        The file to be written and its folder.

    Raises
    ------
    FormatError
        ``path`` is ``-`` (a user means standard output by it), or a symbolic link (an
        output is never written through a link, nor replaces one: the file behind it, often
        another format's, or ``/dev/stdout``, would be overwritten without remark); it ends in
        ``/`` (a folder's name); it exists and is not a regular file; its folder does not
        exist or cannot be written (``os.access``: a user's permissions, not the
        superuser's).
    """
    raw = str(path)
    target = link_target(path)
    if raw == "-" or (target is not None and _file_descriptor_link(path)):
        what = (
            "'-' is not read as standard output here"
            if raw == "-"
            else "it leads to a file descriptor of this process (as /dev/stdout does), "
            "which is not written to"
        )
        raise FormatError(
            path,
            f"cannot write: {what}; give a file name (without the output option the "
            "command prints its table, or as_json, to standard output)",
            names=("as_json",),
        )
    if raw.endswith(("/", os.sep)):
        raise FormatError(
            path, "cannot write: a name ending in '/' names a folder; give a file name"
        )
    if os.path.islink(path):
        raise FormatError(
            path,
            f"cannot write: it is a symbolic link (to {os.readlink(path)}); an output is "
            "never written through a link nor replaces one: give the file's own name, or "
            "another",
        )
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise FormatError(path, f"cannot write: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        raise FormatError(path, f"cannot write: it is {what}; refusing to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FormatError(path, f"cannot write: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FormatError(path, f"cannot write: folder {folder} is not writable")
    return path, folder


_DESCRIPTORS = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd|/dev/fd")


def _file_descriptor_link(path: str | Path) -> bool:
    """Does the symbolic link ``path`` lead, link by link, through a folder of file
    descriptors (``/proc/<pid>/fd``, ``/dev/fd``), as ``/dev/stdout`` does?"""
    p = os.path.abspath(path)
    for _ in range(40):  # (the kernel's limit on links followed)
        if not os.path.islink(p):
            return False
        folder = os.path.realpath(os.path.dirname(p))
        if _DESCRIPTORS.fullmatch(folder):
            return True
        try:
            p = os.path.join(folder, os.readlink(p))
        except OSError:
            return False
    return False


def link_target(path: str | Path) -> Path | None:
    """The file a symbolic link ``path`` leads to (``os.path.realpath``), or None if ``path``
    is not a link."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else None


def written_names(path: str | Path) -> list[tuple[str | Path, str]]:
    """The names whose suffix says what the file written at ``path`` holds: ``path``, and for
    a symbolic link the file it leads to (the one replaced), each with the words an error
    puts before its message (``""``, ``"a link to T: "``). For the suffix checks of
    :func:`topo.fabric.check_fabric_path` and :func:`topo.plot.html.check_html_path`."""
    target = link_target(path)
    return [(path, "")] + ([(target, f"a link to {target}: ")] if target is not None else [])


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file beside it, then rename).

    Nothing that is not a regular file is written through or replaced: a symbolic link, a
    FIFO, a device such as ``/dev/full``, a socket, a folder. The temporary file is
    ``.NAME.PID.XXXXXXXX.tmp`` (``PID`` this process's id); a write of ``NAME`` first removes
    the temporary files of ``NAME`` whose process is gone (one killed mid-write, by SIGKILL or
    a power cut, leaves its file behind: Ctrl-C and SIGTERM remove theirs).

    Parameters
    ----------
    path : str or Path
        The output file.
    text : str or bytes
        The whole content: a string is written as UTF-8, bytes as they are (e.g. a Parquet
        table).

    Raises
    ------
    FormatError
        As :func:`check_writable`: the folder does not exist or cannot be written, ``path`` is
        a symbolic link or exists and is not a regular file, or ``path`` is ``-`` (a user
        means standard output by it; a file named ``-`` was written before).
    """
    path, folder = check_writable(path)
    remove_stale_temporaries(path)
    try:
        # (the folder resolved as the system walks it: mkstemp makes it absolute by name,
        # which takes 'link/..' as '.' where the link leads elsewhere)
        fd, tmp = tempfile.mkstemp(
            dir=os.path.realpath(folder), prefix=f".{path.name}.{os.getpid()}.", suffix=_TEMP_SUFFIX
        )
    except OSError as exc:
        # (a folder such as /proc takes no new file, though its files look regular)
        raise FormatError(
            path,
            f"cannot write: no file can be made in folder {folder} ({exc.strerror}); an output "
            "is written to a temporary file beside it, then renamed over it",
        ) from None
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        check_writable(path)  # (what may have taken its place meanwhile is not replaced)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FormatError(path, f"cannot write: {exc.strerror or exc}") from None
        raise


_TEMP_SUFFIX = ".tmp"


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary files that :func:`write_atomic` left beside ``path`` in a process
    that is gone (``.NAME.PID.XXXXXXXX.tmp`` whose ``PID`` no longer runs).

    A process killed while it wrote (SIGKILL, the machine's power) leaves its temporary file;
    the next write of the same name removes it. Those of running processes (another write
    under way) are kept.

    Parameters
    ----------
    path : str or Path
        The output file.

    Returns
    -------
    list of Path
        The files removed.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    pattern = re.compile(
        rf"\.{re.escape(path.name)}\.(\d+)\.[A-Za-z0-9_]+{re.escape(_TEMP_SUFFIX)}"
    )
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or _process_runs(int(m[1])):
            continue
        stale = folder / name
        try:
            if stat.S_ISREG(os.lstat(stale).st_mode):
                stale.unlink()
                removed.append(stale)
        except OSError:  # (gone meanwhile, or not ours to remove)
            pass
    return removed


def _process_runs(pid: int) -> bool:
    """Whether a process with id ``pid`` exists (``kill(pid, 0)``; another user's counts)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file whole (a leading byte order mark, as Windows editors write,
    is dropped).

    Raises
    ------
    FormatError
        If the file is missing, cannot be read, or is not UTF-8 text.
    """
    return decode_text(path, read_bytes(path))


def read_bytes(path: str | Path) -> bytes:
    """Read a file whole, once (a pipe, as bash's ``<(...)`` gives, cannot be read again).

    Raises
    ------
    FormatError
        If the file is missing or cannot be read.
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc}") from None


def decode_text(path: str | Path, raw: bytes) -> str:
    """A file's bytes as UTF-8 text, a leading byte order mark dropped, as :func:`read_text`.

    Raises
    ------
    FormatError
        If ``raw`` is not UTF-8 (naming ``path``, the byte and its line).
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise FormatError(
            path, f"not UTF-8 text (byte {exc.start:,}: {exc.reason}): a binary file?", line=line
        ) from None


MAX_NUMBER_DIGITS = 100
"""Longest run of digits accepted in an input file (no count, rate, GUID or time needs more;
Python refuses to convert integers of over 4,300 digits at all)."""

_LONG_NUMBER = re.compile(r"\d{" + str(MAX_NUMBER_DIGITS + 1) + ",}")
_DIGIT_ONES = bytes(1 if 0x30 <= b <= 0x39 else 0 for b in range(256))
"""bytes.translate table: each ASCII digit's byte to 1, every other byte to 0."""
_LONG_RUN = b"\x01" * (MAX_NUMBER_DIGITS + 1)
"""A too-long number in a text translated by :data:`_DIGIT_ONES`."""
_WINDOW = 1 << 20


def long_number(path: str | Path, text: str) -> FormatError | None:
    """The error for the first run of more than :data:`MAX_NUMBER_DIGITS` digits in ``text``.

    Parameters
    ----------
    path : str or Path
        The file ``text`` came from (named in the error).
    text : str
        Its content.

    Returns
    -------
    FormatError or None
        Naming the file, the line and the number's length; None if every number is short.

    Examples
    --------
    >>> print(long_number("f.toml", "a = 1\\nb = " + "9" * 5000))
    f.toml:2: a number of 5,000 digits: numbers in input files have at most 100 digits
    """
    if text.isascii() and not any(
        # ASCII (nearly every input): its digits' bytes as 1, the others as 0, then a run of
        # 101 ones: a C search at memory speed, 0.5 s instead of 4.8 s of the regex on 259 MB;
        # by windows of 1 MiB overlapping by 100 characters (a run is whole in one of them)
        _LONG_RUN in text[i : i + _WINDOW + MAX_NUMBER_DIGITS].encode().translate(_DIGIT_ONES)
        for i in range(0, len(text), _WINDOW)
    ):
        return None
    m = _LONG_NUMBER.search(text)
    if m is None:
        return None
    return FormatError(
        path,
        f"a number of {m.end() - m.start():,} digits: numbers in input files have at most "
        f"{MAX_NUMBER_DIGITS} digits",
        line=text.count("\n", 0, m.start()) + 1,
    )


def read_numbers_text(path: str | Path, text: str | None = None) -> str:
    """A text input's content (read here unless ``text`` is given: a pipe, as bash's
    ``<(...)`` gives, can be read only once), refused if a run of digits is too long to be a
    number (:func:`long_number`).

    Raises
    ------
    FormatError
        As :func:`read_text`, or naming the line of a number of more than
        :data:`MAX_NUMBER_DIGITS` digits.
    """
    if text is None:
        text = read_text(path)
    too_long = long_number(path, text)
    if too_long is not None:
        raise too_long
    return text


def json_cut_off(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether the JSON parser stopped because ``text`` ends before its value closes (at the
    end of the text but for blanks, or inside a string it opened): what a writer killed
    mid-value leaves, as opposed to a wrong character somewhere.

    Examples
    --------
    >>> def cut(t):
    ...     try:
    ...         json.loads(t)
    ...     except json.JSONDecodeError as exc:
    ...         return json_cut_off(exc, t)
    >>> cut('{"a": [1, 2'), cut('{"a": "bc'), cut('{"a": x}')
    (True, True, False)
    """
    return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")


def too_deep(path: str | Path, prefix: str = "not JSON") -> FormatError:
    """The error for a JSON file nested deeper than Python's parser can follow.

    ``json.loads`` recurses once per level of nesting and raises :class:`RecursionError` past
    the interpreter's recursion limit (:func:`sys.getrecursionlimit`, 1,000 by default); no
    file topo reads needs more than a few levels.

    Parameters
    ----------
    path : str or Path
        The file (named in the error).
    prefix : str
        The reader's own words for a file that is not JSON (``"not JSON"``).

    Returns
    -------
    FormatError
        ``"PATH: not JSON: nested too deeply (over about 1,000 levels of arrays or objects)"``.

    Examples
    --------
    >>> print(too_deep("deep.json"))
    deep.json: not JSON: nested too deeply (over about 1,000 levels of arrays or objects)
    """
    limit = sys.getrecursionlimit()
    return FormatError(
        path, f"{prefix}: nested too deeply (over about {limit:,} levels of arrays or objects)"
    )


def parse_json(path: str | Path, text: str) -> Any:
    """``json.loads(text)``, its errors as :class:`FormatError` naming ``path`` and the line.

    Raises
    ------
    FormatError
        If ``text`` is not JSON, holds an integer too long for Python to convert (over
        4,300 digits: ``json`` raises a plain ``ValueError``), or is nested too deeply
        (:func:`too_deep`).
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"not JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # int-conversion limit
        raise (long_number(path, text) or FormatError(path, f"not JSON: {exc}")) from None


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def toml_error(path: str | Path, exc: ValueError, prefix: str = "not valid TOML") -> FormatError:
    """A ``tomllib.TOMLDecodeError`` as a :class:`FormatError` naming the file, the line and the
    column.

    Python 3.14's error carries ``lineno`` and ``colno``; older ones only say
    ``"... (at line 3, column 7)"`` at the end of the message, read from there.

    Examples
    --------
    >>> import tomllib
    >>> try:
    ...     tomllib.loads("a = 1\\nb = [1,\\n c")
    ... except tomllib.TOMLDecodeError as exc:
    ...     print(toml_error("spec.toml", exc))
    spec.toml:3:2: not valid TOML: Invalid value
    """
    text = str(exc)
    found = _TOML_AT.search(text)
    line = getattr(exc, "lineno", None) or (int(found[1]) if found else None)
    column = getattr(exc, "colno", None) or (int(found[2]) if found else None)
    msg = getattr(exc, "msg", None) or (text[: found.start()] if found else text)
    return FormatError(path, f"{prefix}: {msg}", line, column)
