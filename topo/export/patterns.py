"""Name patterns a user gives the exports (``--hosts gpu{node:03d}``, ``--hca-format
mlx5_{index}``), checked whole before any name is built.

A pattern is Python's format string (``str.format``) narrowed to what a name needs: literal
text and one integer field, each occurrence with at most a conversion and a format spec of
Python's format mini-language (``[[fill]align][sign][z][#][0][width][grouping][.precision]
[type]``, the ``string`` module's documentation). :func:`check_name_pattern` reads the pattern
with ``string.Formatter().parse`` and refuses what would read more than the integer (an
attribute ``{node.real}`` or item ``{node[0]}``, another field, a field nested in a spec) or
build a name past its length limit (a width or precision above it: ``{node:>4000000000}``
would ask Python for 4 GB), so formatting it afterwards is bounded and runs no user-chosen
code path.
"""

from __future__ import annotations

import re
import string

from topo.errors import SpecError
from topo.wording import shown

__all__ = ["CONVERSIONS", "check_name_pattern"]

CONVERSIONS = ("s", "r", "a")
"""The conversions a field may carry (``{node!s}``): for an integer each gives its digits, as
no conversion does."""

_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?z?#?0?(?P<width>\d+)?[,_]?"
    r"(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?",
    re.S,
)
"""Python's standard format spec (``format_spec`` in the ``string`` module's documentation,
Python 3.11), its width and precision captured."""


def _digits(text: str) -> str:
    """A width or precision as the message shows it: short, however many digits were given."""
    text = text.lstrip("0") or "0"
    return text if len(text) <= 20 else f"of {len(text):,} digits"


def _too_long(text: str, limit: int) -> bool:
    text = text.lstrip("0")
    return len(text) > len(str(limit)) or (text != "" and int(text) > limit)


def check_name_pattern(pattern: str, field: str, *, max_chars: int, param: str, noun: str) -> None:
    """Check a name pattern before anything is formatted with it.

    Parameters
    ----------
    pattern : str
        The user's pattern, e.g. ``gpu{node:03d}``.
    field : str
        The one field it may hold (``node``, ``index``; an integer when formatted), any
        number of times, or not at all.
    max_chars : int
        The longest name allowed, in characters (64 for a host name, 63 for an HCA).
    param : str
        The parameter the pattern came from, which every message names (``hosts``).
    noun : str
        What the pattern names, for the messages (``host name``).

    Raises
    ------
    SpecError
        (``.param`` ``param``) on one line that quotes at most 80 characters of the pattern
        (``topo.wording.shown``), if the pattern is not one Python's format reads (an unmatched
        ``{``), has another field (``{rack}``, ``{}``, ``{0}``), reads an attribute or item of
        the field (``{node.real}``, ``{node[0]}``), has a conversion other than
        :data:`CONVERSIONS`, a format spec with a field in it (``{node:>{node}}``) or not of
        Python's mini-language, a width or precision above ``max_chars``, more than
        ``max_chars`` fields, or literal text and widths that add up to more than
        ``max_chars`` characters.

    Examples
    --------
    >>> check_name_pattern("gpu{node:03d}", "node", max_chars=64, param="hosts",
    ...                    noun="host name")
    >>> try:
    ...     check_name_pattern("{node:>4000000000}", "node", max_chars=64, param="hosts",
    ...                        noun="host name")
    ... except SpecError as exc:
    ...     for part in str(exc).split("; "):
    ...         print(part)
    hosts '{node:>4000000000}': the field '{node:>4000000000}' has the width 4000000000
    a host name has at most 64 characters
    """
    where = f"{param} {shown(pattern)}"
    limit = f"a {noun} has at most {max_chars} characters"

    def refuse(message: str) -> SpecError:
        return SpecError(f"{where}: {message}", param=param)

    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        raise refuse(f"not a pattern with the one field {{{field}}} ({exc})") from None
    literal = sum(len(text) for text, _, _, _ in parts)
    fields = [(name, conv, spec or "") for _, name, spec, conv in parts if name is not None]
    if len(fields) > max_chars:
        raise refuse(f"{len(fields):,} fields; {limit}")
    least = literal
    for name, conv, spec in fields:
        text = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
        quoted = shown(text)
        if name != field:
            if name.startswith(field) and name[len(field) : len(field) + 1] in (".", "["):
                raise refuse(
                    f"the field {quoted} reads an attribute or item of {{{field}}}; a pattern "
                    f"may only format {{{field}}} itself"
                )
            raise refuse(f"not a pattern with the one field {{{field}}}: it has the field {quoted}")
        if conv is not None and conv not in CONVERSIONS:
            raise refuse(
                f"the field {quoted} has the conversion {shown('!' + conv)}; a field may have "
                f"only {', '.join('!' + c for c in CONVERSIONS)}"
            )
        if "{" in spec or "}" in spec:
            raise refuse(f"the field {quoted} has a field in its format spec; give it in full")
        m = _SPEC.fullmatch(spec)
        if m is None:
            raise refuse(
                f"the field {quoted} has the format spec {shown(spec)}, not a spec of Python's "
                "format mini-language ([[fill]align][sign][#][0][width][,][.precision][type])"
            )
        for what in ("width", "precision"):
            value = m.group(what)
            if value is not None and _too_long(value, max_chars):
                raise refuse(f"the field {quoted} has the {what} {_digits(value)}; {limit}")
        least += int(m.group("width") or 0)
    if least > max_chars:
        raise refuse(
            f"its text and field widths make names of at least {least} characters; {limit}"
        )
