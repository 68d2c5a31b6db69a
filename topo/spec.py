"""Fabric specifications in TOML files (``examples/*.toml``).

A spec file holds the arguments of :func:`topo.builders.build` under their Python names, with
the same units as the command line::

    family = "mpft"          # ft2, ft3, mrft, mpft
    switch_ports = 64        # radix
    link_gbps = 400          # Gb/s per port
    gpus = 2048              # optional: default is the family's maximum
    gpus_per_node = 8
    nics_per_node = 8
    nvlink_GBps = 200        # GB/s per GPU per direction
    pcie_GBps = 64           # GB/s per direction
    oversubscription = 1

Dragonfly and Slim Fly take their own keys (``routers_per_group``, ``endpoints_per_router``,
``global_ports``, ``groups``, ``arrangement``; ``q``, ``endpoints_per_router``). Only ``family``
is required; the rest default as in :func:`topo.builders.build`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from topo.errors import FormatError
from topo.fabric import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SPEC_KEYS: dict[str, tuple[type, ...]] = {
    "family": (str,),
    "name": (str,),
    "description": (str,),
    "switch_ports": (int,),
    "link_gbps": (int, float),
    "gpus": (int,),
    "gpus_per_node": (int,),
    "nics_per_node": (int,),
    "nvlink_GBps": (int, float),
    "pcie_GBps": (int, float),
    "oversubscription": (int, float),
    "routers_per_group": (int,),
    "endpoints_per_router": (int,),
    "global_ports": (int,),
    "groups": (int,),
    "arrangement": (str,),
    "q": (int,),
}
"""Keys a spec file may hold, with the TOML types each accepts."""

BUILD_KEYS = frozenset(SPEC_KEYS) - {"family", "name", "description"}


def load_spec(path: str | Path) -> dict[str, Any]:
    """Read a fabric spec from a TOML file.

    Parameters
    ----------
    path : str or Path
        The TOML file.

    Returns
    -------
    dict
        ``family`` and the build arguments present in the file (``name`` and ``description``
        are kept for display and not passed to the builder).

    Raises
    ------
    FormatError
        Missing or unreadable file, TOML syntax error (with its line), an unknown key, a value
        of the wrong type, or no ``family``.
    """
    path = Path(path)
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Python < 3.14 puts the position only in the message: "... (at line 3, column 7)".
        found = re.search(r"\(at line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(found.group(1)) if found else None)
        msg = str(exc).split(" (at line")[0]
        raise FormatError(path, f"not valid TOML: {msg}", line=line) from None
    for key, value in data.items():
        if key not in SPEC_KEYS:
            raise FormatError(path, f"unknown key {key!r}; expected one of {', '.join(SPEC_KEYS)}")
        types = SPEC_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join(
                "an integer" if t is int else "a number" if t is float else "a string"
                for t in types
            )
            raise FormatError(path, f"{key} must be {want}, got {value!r}")
    if "family" not in data:
        raise FormatError(path, "missing key 'family' (ft2, ft3, mrft or mpft)")
    return data
