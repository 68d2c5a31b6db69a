"""The error hierarchy of topo.

Every error that a user's input can cause is a :class:`TopoError`. The command line catches
``TopoError`` in one place, prints its message on one line to stderr and exits with status 1;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from pathlib import Path


class TopoError(Exception):
    """Base class of every error caused by the user's input or the problem posed.

    Parameters
    ----------
    message : str
        The violated condition and the limit, naming Python parameters as the library spells
        them (``switch_ports must be an even number from 4 to 1024, got 7``).
    param : str, optional
        The Python parameter (keyword argument, spec-file key) at fault, e.g.
        ``"switch_ports"``; None when no single parameter is.
    names : sequence of str, optional
        The parameters the message spells, each at its first occurrence as a whole word (a
        front end renders them in its own vocabulary: the command line as ``--switch-ports``);
        a name listed twice is spelled at its first two occurrences, and so on. ``no_x``
        names the off switch of a boolean parameter ``x`` (``--no-x`` on the command line).
        Default: ``(param,)``, or none without ``param``.

    Examples
    --------
    >>> e = SpecError("gpus must be a multiple of gpus_per_node (8)", param="gpus",
    ...               names=("gpus", "gpus_per_node"))
    >>> e.param, e.render(lambda name: "--" + name.replace("_", "-"))
    ('gpus', '--gpus must be a multiple of --gpus-per-node (8)')
    """

    def __init__(
        self, message: str = "", *, param: str | None = None, names: Sequence[str] | None = None
    ) -> None:
        super().__init__(message)
        self.prefix = ""  # (what :meth:`prefixed` put before the message: not rendered)
        self.param = param
        self.names: tuple[str, ...] = (
            tuple(names) if names is not None else ((param,) if param is not None else ())
        )

    def __copy__(self) -> TopoError:
        """A copy with attributes of its own. Defined here, not left to ``copy``'s default:
        once Dask is imported (distributed registers tblib's exception pickling), the default
        copy of an exception shares its ``__dict__`` with the original, so setting the copy's
        ``prefix`` in :meth:`prefixed` changed the original's too."""
        err = type(self).__new__(type(self))
        err.args = self.args
        err.__dict__.update(self.__dict__)
        return err

    def render(self, spell: Callable[[str], str | None]) -> str:
        """The message with each of :attr:`names` spelled by ``spell`` (at its first
        occurrence as a whole word, after any :meth:`prefixed` text; a name ``spell`` maps to
        None stays as it is)."""
        n = len(getattr(self, "prefix", ""))
        head, text = str(self)[:n], str(self)[n:]
        for name in self.names:
            new = spell(name)
            if new is not None:
                text = re.sub(rf"(?<![-\w]){re.escape(name)}(?!\w)", new, text, count=1)
        return head + text

    def prefixed(self, prefix: str) -> TopoError:
        """The same error (type, parameter, names) with ``prefix`` before its message (e.g.
        the spec file it came from)."""
        err = copy.copy(self)
        err.args = (prefix + str(self), *self.args[1:])
        err.prefix = prefix + self.prefix
        return err

    def renamed(self, old: str, new: str) -> TopoError:
        """The same error, speaking of parameter ``new`` where it spoke of ``old`` (a caller
        that passed its own parameter on under another name)."""
        if old not in self.names and self.param != old:
            return self
        err = copy.copy(self)
        pattern = rf"(?<![-\w]){re.escape(old)}(?!\w)"
        err.args = (re.sub(pattern, new, str(self), count=1), *self.args[1:])
        err.param = new if self.param == old else self.param
        err.names = tuple(new if n == old else n for n in self.names)
        return err


class SpecError(TopoError, ValueError):
    """A fabric, switch or node specification violates a limit (radix, sizes, rates).

    ``param`` names the parameter at fault, as :func:`topo.builders.build` and spec files
    spell it (``switch_ports``, ``gpus_per_node``, ``q``); see :class:`TopoError`.
    """


class FormatError(TopoError):
    """A file could not be read: names the file, the line (1-based) when known, what was expected.

    Parameters
    ----------
    path : str or Path
        The file.
    message : str
        What was wrong and what was expected.
    line : int, optional
        1-based line number of the offending line.
    column : int, optional
        1-based column of the offending character on that line (a JSON or TOML parser's
        position); only with ``line``.
    names : sequence of str, optional
        The parameters ``message`` spells (see :class:`TopoError`); the file's name before it
        is never rendered.

    The message reads ``PATH: MESSAGE``, ``PATH:LINE: MESSAGE`` or ``PATH:LINE:COLUMN:
    MESSAGE``, the form compilers print and editors jump to.

    Examples
    --------
    >>> print(FormatError("t.json", "not JSON: Expecting ':' delimiter", line=1, column=998))
    t.json:1:998: not JSON: Expecting ':' delimiter
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        line: int | None = None,
        column: int | None = None,
        *,
        names: Sequence[str] = (),
    ) -> None:
        self.path = str(path)
        self.line = line
        self.column = column if line is not None else None
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        if self.column is not None:
            where += f":{self.column}"
        super().__init__(f"{where}: {message}", names=names)
        self.prefix = f"{where}: "

    def __reduce__(
        self,
    ) -> tuple[type[FormatError], tuple[str, str, int | None, int | None], dict[str, object]]:
        # Rebuilt from its parts (the default would call FormatError(full message)).
        return (type(self), (self.path, self.message, self.line, self.column), self.__dict__)


class InfeasibleError(TopoError):
    """The problem has no feasible solution (e.g. endpoints with no path between them)."""


class SolverError(TopoError):
    """The LP solver failed, hit a limit, or the problem is too large to solve exactly."""


class LPTooLarge(SolverError):
    """The exact LP would exceed the variable limit (a memory and time guard)."""


class LPTimeLimit(SolverError):
    """HiGHS stopped at its time limit before reaching the optimum."""
