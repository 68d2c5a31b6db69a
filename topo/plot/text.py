"""The words and numbers on the figures: rates, cable counts, what a marker stands for, colours,
and the grey note under a title.

Rates are given in B/s and shown as vendors rate links (Gb/s) and as nccl-tests reports
bandwidth (GB/s): ``50e9`` B/s reads ``400 Gb/s (50 GB/s)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topo.units import Bps_to_GBps, Bps_to_gbps

__all__ = [
    "EDGE_LABELS",
    "PLURALS",
    "cables",
    "members_text",
    "note_annotation",
    "num",
    "rate",
    "rgba",
    "short_text",
    "utilisation_text",
    "wrap",
]

EDGE_LABELS = {
    "nvlink": "NVLink",
    "pcie": "PCIe",
    "endpoint": "NIC–switch",
    "fabric": "switch–switch",
}
"""Name of each edge ``kind`` of :mod:`topo.fabric` on the figures, in order up the fabric."""

PLURALS = {
    "leaf": ("leaf", "leaves"),
    "spine": ("spine", "spines"),
    "core": ("core switch", "core switches"),
    "switch": ("switch", "switches"),
    "nic": ("NIC", "NICs"),
    "gpu": ("GPU", "GPUs"),
}
"""Singular and plural of each device kind (or tier name), in the order markers list them."""


def num(x: float) -> str:
    """A number as the figures print it: integers with thousands separators, else 3 digits.

    Parameters
    ----------
    x : float

    Returns
    -------
    str
        ``12800.0`` -> ``12,800``; ``0.125`` -> ``0.125``; ``123.45`` -> ``123.5``.
    """
    if abs(x - round(x)) < 1e-9:
        return f"{round(x):,}"
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}"


def rate(capacity_Bps: float) -> str:
    """A rate in Gb/s and GB/s.

    Parameters
    ----------
    capacity_Bps : float
        Rate in B/s.

    Returns
    -------
    str
        ``50e9`` -> ``400 Gb/s (50 GB/s)``.
    """
    return f"{num(Bps_to_gbps(capacity_Bps))} Gb/s ({num(Bps_to_GBps(capacity_Bps))} GB/s)"


def cables(n: int) -> str:
    """``1`` -> ``1 cable``, ``2048`` -> ``2,048 cables``.

    Parameters
    ----------
    n : int
        Number of cables.

    Returns
    -------
    str
    """
    return f"{n:,} cable{'s' if n != 1 else ''}"


def rgba(hex_colour: str, alpha: float) -> str:
    """``#1f77b4`` with opacity ``alpha`` as a CSS ``rgba(...)`` colour.

    Parameters
    ----------
    hex_colour : str
        ``#rrggbb``.
    alpha : float
        Opacity, 0 to 1.

    Returns
    -------
    str
        E.g. ``rgba(31,119,180,0.45)``.
    """
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def members_text(m: Mapping[str, int]) -> str:
    """Say what a marker stands for.

    Parameters
    ----------
    m : Mapping[str, int]
        Devices by kind, and under ``nodes`` the number of distinct servers.

    Returns
    -------
    str
        ``{"leaf": 1, "nic": 32, "gpu": 32, "nodes": 32}`` -> ``1 leaf, 32 NICs, 32 GPUs of
        32 nodes``.
    """
    parts = [
        f"{m[kind]:,} {one if m[kind] == 1 else many}"
        for kind, (one, many) in PLURALS.items()
        if m.get(kind)
    ]
    text = ", ".join(parts)
    if m.get("nodes"):
        text += f" of {m['nodes']:,} node{'s' if m['nodes'] > 1 else ''}"
    return text


def short_text(m: Mapping[str, int]) -> str:
    """What a group marker stands for in a few words: its GPUs, else NICs, else switches.

    Parameters
    ----------
    m : Mapping[str, int]
        Devices by kind, as for :func:`members_text`.

    Returns
    -------
    str
        E.g. ``2,048 GPUs``; empty if ``m`` counts nothing.
    """
    for kind in ("gpu", "nic", *PLURALS):
        if m.get(kind):
            one, many = PLURALS[kind]
            return f"{m[kind]:,} {one if m[kind] == 1 else many}"
    return ""


def utilisation_text(x: float) -> str:
    """A utilisation (load / capacity) as hovers and titles show it: at most three decimals,
    trailing zeros dropped.

    Examples
    --------
    >>> utilisation_text(0.8), utilisation_text(1 / 3), utilisation_text(0.0)
    ('0.8', '0.333', '0')
    """
    return f"{x:.3f}".rstrip("0").rstrip(".") if x else "0"


def wrap(text: str, width: int) -> str:
    """Break ``text`` with ``<br>`` at ``; `` separators so no line runs past ``width``.

    Parameters
    ----------
    text : str
    width : int
        Characters per line (a single part longer than that stays on its own line).

    Returns
    -------
    str
    """
    lines: list[str] = []
    for part in text.split("; "):
        if lines and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part)
    return "<br>".join(lines)


def note_annotation(text: str) -> tuple[dict[str, Any], int]:
    """A grey note above the plot's top left corner, wrapped at 150 characters.

    Parameters
    ----------
    text : str
        Parts separated by ``; ``.

    Returns
    -------
    annotation : dict
        A plotly layout annotation.
    lines : int
        Its number of lines (the top margin grows by 18 px a line).
    """
    note = wrap(text, 150)
    annotation = {
        "text": note,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1,
        "xanchor": "left",
        "yanchor": "bottom",
        "yshift": 6,
        "align": "left",
        "showarrow": False,
        "font": {"size": 12, "color": "#444"},
    }
    return annotation, note.count("<br>") + 1
