"""Readers of real fabric files.

- :func:`read_ibnetdiscover` reads the topology output of ``ibnetdiscover`` (and ibsim net
  files) into a fabric graph (schema in :mod:`topo.fabric`);
- :func:`link_rate_Bps` gives the data rate of an InfiniBand link (``"4x"``, ``"NDR"``).
"""

from topo.formats.ibnetdiscover import link_rate_Bps, read_ibnetdiscover, read_name_map

__all__ = ["link_rate_Bps", "read_ibnetdiscover", "read_name_map"]
