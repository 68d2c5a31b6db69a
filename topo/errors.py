"""The error hierarchy of topo.

Every error that a user's input can cause is a :class:`TopoError`. The command line catches
``TopoError`` in one place, prints its message on one line to stderr and exits with status 1;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class TopoError(Exception):
    """Base class of every error caused by the user's input or the problem posed."""


class SpecError(TopoError, ValueError):
    """A fabric, switch or node specification violates a limit (radix, sizes, rates)."""


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
    """

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class InfeasibleError(TopoError):
    """The problem has no feasible solution (e.g. endpoints with no path between them)."""


class SolverError(TopoError):
    """The LP solver failed, hit a limit, or the problem is too large to solve exactly."""


class LPTooLarge(SolverError):
    """The exact LP would exceed the variable limit (a memory and time guard)."""


class LPTimeLimit(SolverError):
    """HiGHS stopped at its time limit before reaching the optimum."""
