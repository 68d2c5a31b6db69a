"""Constants under which the expected curve is the ceiling: the fitted message, launch and
round costs of ``[expected]`` at zero and the NVLS channel rates out of reach. Tests of the
ceiling's own formulas, and of what is shown beside a row, use them to hold the printed
(expected) values to the ceiling's hand-worked ones."""

from __future__ import annotations

from pathlib import Path

from topo.collective.constants import NcclConstants, load_constants
from topo.collective.expected import COST_KEYS

TOML = "\n".join(
    ["[expected]"]
    + [
        f"{key} = {[0.0] * 3 if isinstance(value, list) else 0.0}"
        for key, value in load_constants().data["expected"].items()
        if key in COST_KEYS
    ]
    + [
        "nvls_channel_GBps = 1000000.0",
        "nvls_channel_GBps_blackwell = 1000000.0",
        "nvls_tree_heads = 1000000.0",
        "",
    ]
)


def ceiling_file(folder: Path) -> Path:
    """A ``--constants`` file of :data:`TOML` in ``folder``."""
    path = folder / "ceiling.toml"
    path.write_text(TOML)
    return path


def ceiling_constants(folder: Path) -> NcclConstants:
    """:func:`load_constants` with :data:`TOML` over the defaults."""
    return load_constants(ceiling_file(folder))
