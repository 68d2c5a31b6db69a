"""Locate the real fabric dumps kept outside the project (``../shared/data/real``).

They are never copied into the project; a test that needs one calls :func:`real_file`, which
skips the test cleanly when the shared data folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REAL_DATA = Path(
    os.environ.get("TOPO_REAL_DATA")
    or Path(__file__).resolve().parents[3] / "shared" / "data" / "real"
)
"""``<checkout>/../shared/data/real`` (parents[3] of tests/formats/_real.py is the checkout's
parent), or the folder named by the environment variable ``TOPO_REAL_DATA`` (for a checkout
kept elsewhere, e.g. a git worktree)."""


def real_file(*parts: str) -> Path:
    """Path of a real data file, e.g. ``real_file("ibnetdiscover", "ibtopotool_1.topo")``.

    Skips the calling test (``pytest.skip``) when the file is not there.
    """
    path = REAL_DATA.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"real data not available: {path}")
    return path
