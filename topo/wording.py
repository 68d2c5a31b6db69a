"""Counts in words, for tables and messages: ``1 link``, ``2 links``, ``1,024 links``.

A count printed beside a fixed plural (``(1 links)``) reads as a defect; every message that
counts something with a number it does not know in advance goes through :func:`count`.
A value read from a file and echoed in a message goes through :func:`shown`, which keeps it
to one readable line (an integer of 401 digits is not printed digit by digit).
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one, with thousands separators.

    Parameters
    ----------
    n : int
        The count.
    noun : str
        The singular (``"link"``).
    plural : str, optional
        The plural when it is not ``noun + "s"`` (``"classes"``, ``"switches"``).

    Returns
    -------
    str
        ``"1 link"``, ``"0 links"``, ``"2,048 links"``.

    Examples
    --------
    >>> count(1, "link"), count(2048, "link")
    ('1 link', '2,048 links')
    >>> count(1, "class", "classes"), count(3, "class", "classes")
    ('1 class', '3 classes')
    """
    word = noun if n == 1 else (plural if plural is not None else noun + "s")
    return f"{n:,} {word}"


MAX_SHOWN_DIGITS = 20
"""Most digits :func:`shown` prints of an integer: every 64-bit integer (a count, a GUID in
decimal, a LID) has at most 20."""

MAX_SHOWN_CHARS = 80
"""Most characters :func:`shown` prints of any other value's ``repr``."""


def shown(value: object) -> str:
    """``repr(value)`` for a message, kept short: an integer of more than
    :data:`MAX_SHOWN_DIGITS` digits in scientific notation with its digit count, a longer
    ``repr`` cut at :data:`MAX_SHOWN_CHARS` characters with its length.

    Parameters
    ----------
    value : object
        The offending value (a number, a string, anything a file can hold).

    Returns
    -------
    str
        ``"64"``, ``"'leaf'"``, ``"1e+400 (an integer of 401 digits)"``,
        ``"'xxxx...' (a string of 5,000 characters)"``.

    Examples
    --------
    >>> shown(10**400)
    '1e+400 (an integer of 401 digits)'
    >>> shown(-123456 * 10**30), shown(2**64), shown(True), shown(0.5)
    ('-1.23456e+35 (an integer of 36 digits)', '18446744073709551616', 'True', '0.5')
    >>> shown("x" * 5000)[-40:]
    'xxxxxx... (a string of 5,000 characters)'
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return _shown_int(value)
    try:
        text = repr(value)
    except ValueError:  # a container holding an integer past Python's 4,300-digit limit
        return f"a {type(value).__name__} too long to print"
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    what = "a string" if isinstance(value, str) else f"a {type(value).__name__} written in"
    length = len(value) if isinstance(value, str) else len(text)
    return f"{text[:MAX_SHOWN_CHARS]}... ({what} of {length:,} characters)"


def _shown_int(n: int) -> str:
    try:
        digits = str(abs(n))
    except ValueError:  # over Python's int-to-str limit (4,300 digits by default)
        return f"an integer of about {round(abs(n).bit_length() * 0.30103):,} digits"
    if len(digits) <= MAX_SHOWN_DIGITS:
        return str(n)
    mantissa = (digits[0] + "." + digits[1:6]).rstrip("0").rstrip(".")
    sign = "-" if n < 0 else ""
    return f"{sign}{mantissa}e+{len(digits) - 1} (an integer of {len(digits):,} digits)"


__all__ = ["count", "shown"]


def binary_bytes(n: float) -> str:
    """A byte count in binary units, 3 significant digits: ``32 MiB``, ``1.5 KiB``, ``0.5 B``.

    The unit is the smallest whose value rounds below 1,000, so the figure never turns to an
    exponent: nccl-tests' ``1073740800`` (1 GiB less a few bytes) is ``1 GiB``, not
    ``1.02e+03 MiB``; beyond 1,000 TiB the figure grows in TiB.

    Parameters
    ----------
    n : float
        Bytes (>= 0).

    Examples
    --------
    >>> binary_bytes(32 << 20), binary_bytes(1536), binary_bytes(0.5)
    ('32 MiB', '1.5 KiB', '0.5 B')
    >>> binary_bytes(1073740800), binary_bytes(1000 << 20), binary_bytes(2 << 40)
    ('1 GiB', '0.977 GiB', '2 TiB')
    """
    value, unit = float(n), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 999.5:
            break
        value, unit = value / 1024, bigger
    return f"{value:.3g} {unit}" if value < 999.5 else f"{value:,.0f} {unit}"
