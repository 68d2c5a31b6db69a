"""Counts in words, for tables and messages: ``1 link``, ``2 links``, ``1,024 links``.

A count printed beside a fixed plural (``(1 links)``) reads as a defect; every message that
counts something with a number it does not know in advance goes through :func:`count`.
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


__all__ = ["count"]
