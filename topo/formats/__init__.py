"""Readers of real fabric files and measurement logs.

- :func:`read_ibnetdiscover` reads the topology output of ``ibnetdiscover`` (and ibsim net
  files) into a fabric graph (schema in :mod:`topo.fabric`); :func:`read_name_map` reads the
  GUID -> name map it may be given;
- :func:`link_rate_Bps` gives the data rate of an InfiniBand link (``"4x"``, ``"NDR"``);
- :func:`read_nccl_tests` reads nccl-tests logs into :class:`NcclTest` records of
  :class:`NcclTestRow` rows; :func:`read_nccl_tests_json` reads nccl-tests' JSON reports
  (``-J``, format version 3) into the same records, :func:`read_nccl_tests_any` either.
"""

from topo.formats.ibnetdiscover import link_rate_Bps, read_ibnetdiscover, read_name_map
from topo.formats.nccl_tests import NcclTest, NcclTestRow, read_nccl_tests
from topo.formats.nccl_tests_json import read_nccl_tests_any, read_nccl_tests_json

__all__ = [
    "NcclTest",
    "NcclTestRow",
    "link_rate_Bps",
    "read_ibnetdiscover",
    "read_name_map",
    "read_nccl_tests",
    "read_nccl_tests_any",
    "read_nccl_tests_json",
]
