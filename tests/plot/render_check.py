"""Check that an HTML figure written by :func:`topo.plot.write_html` renders in headless Chromium.

As a script::

    python tests/plot/render_check.py FIGURE.html [--screenshot OUT.png] [--size 1400,1000]

loads the file offline (no network needed: plotly.js is embedded), checks that the DOM holds a
drawn plotly figure (a ``main-svg`` with marker points), optionally saves a screenshot and checks
it is not blank; exits 0 on success, 1 with a reason on failure, 2 if Chromium is missing.

As a pytest module (``pytest tests/plot/render_check.py``; ``tests/plot/test_html.py`` and
``test_link_load.py`` call its functions), it writes a small fabric's figure and checks that it
renders; it skips when ``chromium`` is not on ``PATH``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_S = 90.0
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
)


class RenderError(AssertionError):
    """The page did not render a plotly figure (or Chromium failed)."""


def find_chromium() -> str | None:
    """Path of a Chromium or Chrome binary on ``PATH``, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(
    chromium: str, args: list[str], profile: str, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    cmd = [chromium, *_FLAGS, f"--user-data-dir={profile}", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RenderError(f"chromium did not finish in {timeout_s:.0f} s") from exc


def dump_dom(
    html: str | Path,
    chromium: str | None = None,
    timeout_s: float = TIMEOUT_S,
    png: str | Path | None = None,
    size: tuple[int, int] = (1400, 1000),
) -> str:
    """The DOM of ``html`` after Chromium has run its scripts (``--dump-dom``); with ``png``,
    the same Chromium run also saves a screenshot of the page at ``size`` (width, height)
    pixels there (one browser start instead of two)."""
    chromium = chromium or find_chromium()
    if chromium is None:
        raise RenderError("chromium is not on PATH")
    url = Path(html).resolve().as_uri()
    shot: list[str] = []
    if png is not None:
        png = Path(png).resolve()
        shot = [f"--screenshot={png}", f"--window-size={size[0]},{size[1]}"]
    with tempfile.TemporaryDirectory(prefix="topo-chromium-") as profile:
        proc = _run(chromium, [*shot, "--dump-dom", url], profile, timeout_s)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RenderError(f"chromium exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    if png is not None and not Path(png).is_file():
        raise RenderError(f"no screenshot (chromium exited 0): {proc.stderr[-500:]}")
    return proc.stdout


def check_dom(dom: str) -> dict[str, int]:
    """Check that ``dom`` holds a drawn plotly figure; return counts of what was drawn.

    Raises
    ------
    RenderError
        If there is no ``main-svg``, no scatter layer or no marker point.
    """
    counts = {
        "main_svg": dom.count('class="main-svg"'),
        "plot_container": dom.count("plot-container"),
        "scatter_traces": len(re.findall(r'class="trace scatter', dom)),
        "points": len(re.findall(r'class="point"', dom)),
        "lines": len(re.findall(r'class="js-line"', dom)),
    }
    if not counts["main_svg"] or not counts["plot_container"]:
        raise RenderError("no plotly figure in the page (no main-svg / plot-container)")
    if not counts["scatter_traces"] or not counts["points"]:
        raise RenderError(f"the figure drew no scatter traces or points: {counts}")
    return counts


def screenshot(
    html: str | Path,
    png: str | Path,
    size: tuple[int, int] = (1400, 1000),
    chromium: str | None = None,
    timeout_s: float = TIMEOUT_S,
) -> Path:
    """Save a PNG screenshot of ``html`` at ``size`` (width, height) pixels."""
    chromium = chromium or find_chromium()
    if chromium is None:
        raise RenderError("chromium is not on PATH")
    png = Path(png).resolve()
    url = Path(html).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="topo-chromium-") as profile:
        proc = _run(
            chromium,
            [f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", url],
            profile,
            timeout_s,
        )
    if proc.returncode != 0 or not png.is_file():
        raise RenderError(
            f"no screenshot (chromium exited {proc.returncode}): {proc.stderr[-500:]}"
        )
    return png


def png_distinct_bytes(png: str | Path) -> int:
    """Number of distinct byte values in a PNG's decompressed image data.

    A blank (one-colour) page gives only a handful (the colour's bytes, zeros and filter
    codes); a drawn figure with antialiased text and coloured markers gives well over 100.
    """
    data = Path(png).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise RenderError(f"{png} is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        ctype = data[pos + 4 : pos + 8]
        if ctype == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat)))


def check_html(html: str | Path, png: str | Path | None = None) -> dict[str, int]:
    """Check that ``html`` renders; with ``png``, also check a screenshot of it is not blank."""
    counts = check_dom(dump_dom(html, png=png))
    if png is not None:
        counts["png_distinct_bytes"] = distinct = png_distinct_bytes(png)
        if distinct < 32:
            raise RenderError(f"screenshot {png} looks blank ({distinct} distinct byte values)")
    return counts


def _small_fabric():  # type: ignore[no-untyped-def]
    """Two planes, four nodes of two GPUs, two leaves and two spines per plane."""
    import networkx as nx

    G = nx.Graph(family="mpft", name="render-check", planes=2)
    for p in range(2):
        for j in range(2):
            G.add_node(f"p{p}/leaf{j}", kind="leaf", tier=1, plane=p, rail=-1, ports=4)
            G.add_node(f"p{p}/spine{j}", kind="spine", tier=2, plane=p, rail=-1, ports=4)
        for j in range(2):
            for s in range(2):
                G.add_edge(f"p{p}/leaf{j}", f"p{p}/spine{s}", capacity=50e9, links=1, kind="fabric")
    for n in range(4):
        G.add_node(f"node{n}/nvswitch", kind="nvswitch", node=n)
        for i in range(2):
            G.add_node(f"node{n}/gpu{i}", kind="gpu", node=n, index=i)
            G.add_node(f"node{n}/nic{i}", kind="nic", node=n, index=i)
            G.add_edge(
                f"node{n}/gpu{i}", f"node{n}/nvswitch", capacity=400e9, links=1, kind="nvlink"
            )
            G.add_edge(f"node{n}/gpu{i}", f"node{n}/nic{i}", capacity=64e9, links=1, kind="pcie")
            G.add_edge(
                f"node{n}/nic{i}", f"p{i}/leaf{n // 2}", capacity=50e9, links=1, kind="endpoint"
            )
    return G


def test_small_fabric_renders_in_chromium(tmp_path: Path) -> None:
    import pytest

    if find_chromium() is None:
        pytest.skip("chromium is not on PATH")
    from topo.plot import plot_fabric, write_html

    html = tmp_path / "fabric.html"
    write_html(plot_fabric(_small_fabric()), html)
    counts = check_html(html, tmp_path / "fabric.png")
    # 28 devices: every marker is drawn as one point (edge hover points are points too).
    assert counts["points"] >= 28
    assert counts["lines"] >= 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("--screenshot", type=Path, help="also save a PNG and check it is not blank")
    parser.add_argument("--size", default="1400,1000", help="screenshot width,height in pixels")
    args = parser.parse_args(argv)
    if find_chromium() is None:
        print("chromium is not on PATH", file=sys.stderr)
        return 2
    try:
        counts = check_dom(dump_dom(args.html))
        if args.screenshot:
            w, h = (int(s) for s in args.size.split(","))
            screenshot(args.html, args.screenshot, (w, h))
            counts["png_distinct_bytes"] = png_distinct_bytes(args.screenshot)
            if counts["png_distinct_bytes"] < 32:
                raise RenderError(f"screenshot {args.screenshot} looks blank")
    except RenderError as exc:
        print(f"{args.html}: not rendered: {exc}", file=sys.stderr)
        return 1
    print(f"{args.html}: rendered: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
