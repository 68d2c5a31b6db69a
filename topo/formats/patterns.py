"""A user's regular expression, searched within a time limit.

The expressions a user gives (``host_regex``, ``compute_host_regex``, ``nvlink_domain_regex``)
run over every node description or host name of a dump. Python's :mod:`re` backtracks, and an
expression such as ``^(a|a)*$`` takes time exponential in the text's length; it runs in C,
where neither Ctrl-C nor SIGTERM reaches Python until it returns, so a 40-character
description kept the process busy for hours. The expressions are compiled by the ``regex``
package instead (the syntax of :mod:`re`, plus guards against some of these patterns), whose
searches take a ``timeout``: one search may take :data:`SEARCH_LIMIT_S`, all the searches of
one expression :data:`TIME_LIMIT_S` together, and an expression that exceeds either is
refused. ``regex`` checks for signals while it searches, so Ctrl-C and SIGTERM end the command
at once.
"""

from __future__ import annotations

import time
from typing import Any

from topo.errors import SpecError

__all__ = ["SEARCH_LIMIT_S", "TIME_LIMIT_S", "UserPattern", "compile_pattern"]

SEARCH_LIMIT_S = 0.5
"""Seconds one search may take. A node description is at most 64 bytes (InfiniBand's
NodeDescription) and a host name at most 64; a plain expression (``^(\\S+)\\s``) searches
one in a few microseconds, a catastrophically backtracking one in hours."""

TIME_LIMIT_S = 10.0
"""Seconds all the searches of one expression may take together. A plain expression searches
the 131,072 CA descriptions of a 16,384-GPU, 8-plane dump in about 0.4 s (2 cores)."""


class UserPattern:
    """A compiled user expression, each search limited in time and all of them together.

    It answers :meth:`search`, :attr:`groupindex` and :attr:`groups` as an
    :class:`re.Pattern` does, so the functions that take one take it too.

    Parameters
    ----------
    pattern : str
        The expression, in the syntax of Python's :mod:`re`.
    param : str
        The parameter it came from (``host_regex``), named in errors.
    time_limit_s : float, optional
        Seconds all searches together may take; default :data:`TIME_LIMIT_S`.
    search_limit_s : float, optional
        Seconds one search may take; default :data:`SEARCH_LIMIT_S`.

    Raises
    ------
    SpecError
        (``.param`` ``param``) ``pattern`` is not a regular expression.
    """

    def __init__(
        self,
        pattern: str,
        param: str,
        time_limit_s: float | None = None,
        search_limit_s: float | None = None,
    ) -> None:
        import regex  # (here: loading it takes every command 0.04 s; few use a pattern)

        try:
            self._rx = regex.compile(pattern)
        except (regex.error, TypeError, ValueError) as exc:
            raise SpecError(
                f"{param} {pattern!r} is not a regular expression: {exc}", param=param
            ) from None
        self.pattern = pattern
        self.param = param
        self.time_limit_s = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        self.search_limit_s = SEARCH_LIMIT_S if search_limit_s is None else search_limit_s
        self._spent = 0.0
        self._searched = 0

    @property
    def groupindex(self) -> Any:
        """Named group -> its number, as :attr:`re.Pattern.groupindex`."""
        return self._rx.groupindex

    @property
    def groups(self) -> int:
        """The number of groups, as :attr:`re.Pattern.groups`."""
        return int(self._rx.groups)

    def search(self, text: str) -> Any:
        """The first match in ``text`` (a ``regex`` match object) or None.

        Raises
        ------
        SpecError
            (``.param`` the pattern's ``param``) when this search takes more than
            ``search_limit_s``, or the searches of this pattern so far more than
            ``time_limit_s`` together.
        """
        left = self.time_limit_s - self._spent
        timeout = min(left, self.search_limit_s)
        start = time.perf_counter()
        try:
            if timeout <= 0:
                raise TimeoutError
            return self._rx.search(text, timeout=timeout)
        except TimeoutError:
            if timeout < left:
                spent = f"more than {self.search_limit_s:g} s to search one string"
            else:
                spent = (
                    f"more than {self.time_limit_s:g} s to search {self._searched + 1:,} strings"
                )
            raise SpecError(
                f"{self.param} {self.pattern!r} took {spent} ({len(text):,} characters): it "
                "backtracks catastrophically (a nested or overlapping repeat such as (a+)+ or "
                "(a|a)*); give a simpler expression",
                param=self.param,
            ) from None
        finally:
            self._spent += time.perf_counter() - start
            self._searched += 1


def compile_pattern(pattern: str, param: str) -> UserPattern:
    """``pattern`` compiled as a :class:`UserPattern` of ``param``: one search limited to
    :data:`SEARCH_LIMIT_S`, all of them to :data:`TIME_LIMIT_S` together.

    Parameters
    ----------
    pattern : str
        The user's expression (the syntax of Python's :mod:`re`).
    param : str
        The parameter it came from, named in errors (``host_regex``).

    Returns
    -------
    UserPattern

    Raises
    ------
    SpecError
        (``.param`` ``param``) ``pattern`` is not a regular expression.

    Examples
    --------
    >>> compile_pattern(r"^(\\S+)\\s", "host_regex").search("node3 mlx5_0")[1]
    'node3'
    >>> compile_pattern("(", "host_regex")
    Traceback (most recent call last):
    ...
    topo.errors.SpecError: host_regex '(' is not a regular expression: missing ) at position 1
    """
    return UserPattern(pattern, param)
