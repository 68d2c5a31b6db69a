"""Constants under which the expected curve is the ceiling: the fitted message, launch and
round costs of ``[expected]`` at zero and the NVLS channel rates out of reach. Tests of the
ceiling's own formulas, and of what is shown beside a row, use them to hold the printed
(expected) values to the ceiling's hand-worked ones."""

from __future__ import annotations

from pathlib import Path

from topo.collective.constants import NcclConstants, load_constants

TOML = """
[expected]
launch_us = 0.0
net_launch_us = 0.0
net_message_us = [0.0, 0.0, 0.0]
ring_net_step_us = [0.0, 0.0, 0.0]
nvlink_message_us = 0.0
nvls_message_us_per_gpu = 0.0
nvls_channel_GBps = 1000000.0
nvls_tree_channel_GBps = 1000000.0
p2p_round_us = 0.0
"""


def ceiling_file(folder: Path) -> Path:
    """A ``--constants`` file of :data:`TOML` in ``folder``."""
    path = folder / "ceiling.toml"
    path.write_text(TOML)
    return path


def ceiling_constants(folder: Path) -> NcclConstants:
    """:func:`load_constants` with :data:`TOML` over the defaults."""
    return load_constants(ceiling_file(folder))
