"""Tests of topo.plot.html: the offline HTML file (plotly.js embedded, written atomically,
the figure JSON unescaped safely), and that it renders in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx as nx
import pytest
from plotly.io.json import to_json_plotly

from plot import render_check as rc
from topo.errors import FormatError
from topo.plot import plot_fabric, write_html
from topo.plot.html import _unescape_json


def test_write_html_embeds_plotly_js_and_needs_no_network(tmp_path: Path, mpft: nx.Graph) -> None:
    path = tmp_path / "fabric.html"
    write_html(plot_fabric(mpft), path)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<html>") or html.lower().startswith("<!doctype html>")
    assert re.search(r"plotly\.js v\d", html)
    assert not re.search(r"<script[^>]*\bsrc=[\"'][^\"']*cdn\.plot\.ly", html)
    assert "Plotly.newPlot" in html
    assert "node3/gpu1" in html and "<br>" in html
    assert 3e6 < path.stat().st_size < 6e6


def test_write_html_is_atomic(
    tmp_path: Path, mpft: nx.Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    fig = plot_fabric(mpft)
    with pytest.raises(FormatError, match="does not exist"):
        write_html(fig, tmp_path / "missing" / "fabric.html")
    assert not (tmp_path / "missing").exists()

    path = tmp_path / "fabric.html"
    path.write_text("old figure", encoding="utf-8")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("topo.files.os.replace", fail)
    with pytest.raises(FormatError, match="cannot write: disk full"):
        write_html(fig, path)
    assert path.read_text(encoding="utf-8") == "old figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fabric.html"]


@pytest.mark.parametrize(
    "text",
    ["a/b", "<br>x</b><b>", "</script><!-- x", "ü — ×", "back\\u002fslash", "\u2028", "\\"],
)
def test_unescaped_figure_json_decodes_to_the_same_text(text: str) -> None:
    safe = _unescape_json(to_json_plotly({"t": text}))
    assert json.loads(safe) == {"t": text}
    assert "</script" not in safe.lower() and "<!--" not in safe


def test_html_renders_in_headless_chromium(tmp_path: Path, mpft: nx.Graph) -> None:
    if rc.find_chromium() is None:
        pytest.skip("chromium is not on PATH")
    path = tmp_path / "fabric.html"
    write_html(plot_fabric(mpft), path)
    counts = rc.check_html(path, tmp_path / "fabric.png")
    # 28 device markers and 32 edge hover points are drawn as SVG points.
    assert counts["points"] >= 28 + 32
    assert counts["png_distinct_bytes"] >= 32
