"""Writing a figure as one standalone HTML file that opens offline.

plotly.js is embedded in the file (about 4.6 MB), so it needs no network; the figure's JSON is
written with ``/``, ``<br>`` and non-ASCII characters unescaped, which keeps large figures small.
"""

from __future__ import annotations

import re
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from topo.errors import FormatError
from topo.files import write_atomic, written_names

__all__ = ["NOT_HTML", "check_html_path", "write_html"]


NOT_HTML = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".pdf", ".eps", ".json"})
"""Suffixes :func:`write_html` refuses: files of these kinds are not HTML pages."""


def check_html_path(path: str | Path) -> None:
    """Refuse an output name that says it is not an HTML page (:data:`NOT_HTML`); for a
    symbolic link, the name of the file it leads to too (that file is the one replaced).

    Raises
    ------
    FormatError
        Naming the file (and the link's target) and the suffix.
    """
    for name, via in written_names(path):
        suffix = Path(name).suffix.lower()
        if suffix in NOT_HTML:
            raise FormatError(
                path,
                f"{via}topo writes an HTML page (plotly, offline): name it .html, not {suffix}",
            )


def write_html(fig: go.Figure, path: str | Path) -> None:
    """Write ``fig`` as a standalone HTML file that works offline, whole or not at all.

    plotly.js is embedded in the file (about 4.6 MB), so it opens without network access.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        E.g. from :func:`topo.plot.plot_fabric`.
    path : str or Path
        Output file (conventionally ``*.html``).

    Raises
    ------
    FormatError
        If the file cannot be written (its folder is missing or not writable), or its name
        ends in an image or document suffix (``.png``, ``.svg``, ``.pdf``, ...): the page is
        HTML, and a file of that name would not open as what it says.
    """
    check_html_path(path)
    html = fig.to_html(
        include_plotlyjs=True,
        full_html=True,
        config={"responsive": True, "displaylogo": False, "scrollZoom": True},
    )
    # plotly escapes every '/', '<', '>' and non-ASCII character of the figure JSON as \\uXXXX
    # (6 bytes each); in the figure's own script (after the bundle) undo the harmless ones.
    bundle = get_plotlyjs()
    cut = html.find(bundle)
    cut = cut + len(bundle) if cut >= 0 else len(html)
    write_atomic(path, html[:cut] + _unescape_json(html[cut:]))


_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")
_ESCAPED_TAG = re.compile(r"(?<!\\)((?:\\\\)*)\\u003c(/?(?:br|b|sup))\\u003e")


def _unescape_json(text: str) -> str:
    """Turn ``\\u002f`` back into ``/``, ``\\u003cbr\\u003e`` into ``<br>`` and non-ASCII escapes
    into UTF-8, in JSON embedded in a ``<script>``.

    ``<`` stays escaped everywhere else, so no ``</script`` can appear; U+2028 and U+2029, which
    old JavaScript engines reject in strings, and surrogates stay escaped.
    """

    def char(m: re.Match[str]) -> str:
        code = int(m.group(2), 16)
        keep = code != 0x2F and (code < 0x80 or 0xD800 <= code < 0xE000 or code in (0x2028, 0x2029))
        return m.group(0) if keep else m.group(1) + chr(code)

    return _ESCAPED_TAG.sub(r"\1<\2>", _ESCAPE.sub(char, text))
