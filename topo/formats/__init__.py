"""Readers of real fabric files and measurement logs.

- :func:`read_ibnetdiscover` reads the topology output of ``ibnetdiscover`` (and ibsim net
  files) into a fabric graph (schema in :mod:`topo.fabric`); :func:`read_name_map` reads the
  GUID -> name map it may be given;
- :func:`import_ibnetdiscover` reads one dump or several (one per plane, :func:`merge_dumps`)
  and, given GPUs per host, groups the CAs into servers (:func:`add_hosts`), and the hosts
  into NVLink domains larger than a host where asked (:mod:`topo.formats.nvlink_domains`);
  :func:`group_into_domains` groups a dump's hosts into domains without adding GPUs (what
  ``topo validate`` compares with a design of NVLink domains);
- :func:`write_ibnetdiscover` writes a fabric in ibnetdiscover topology format (an ibsim net
  file);
- :func:`link_rate_Bps` gives the data rate of an InfiniBand link (``"4x"``, ``"NDR"``);
- :func:`read_nccl_tests` reads nccl-tests logs into :class:`NcclTest` records of
  :class:`NcclTestRow` rows; :func:`read_nccl_tests_json` reads nccl-tests' JSON reports
  (``-J``, format version 3) into the same records, :func:`read_nccl_tests_any` either;
  :func:`read_nccl_inspector` reads NCCL Inspector records (format v4.0) into them, one row per
  size (the median over calls and ranks); :func:`read_nccl_log` reads any of the three, told
  by the content (:func:`log_format`).
"""

from topo.formats.hosts import add_hosts, group_into_domains, import_ibnetdiscover, merge_dumps
from topo.formats.ibnetdiscover import (
    link_rate_Bps,
    read_ibnetdiscover,
    read_ibnetdiscover_dumps,
    read_name_map,
)
from topo.formats.nccl_inspector import read_nccl_inspector
from topo.formats.nccl_log import log_format, read_nccl_log
from topo.formats.nccl_tests import NcclTest, NcclTestRow, read_nccl_tests
from topo.formats.nccl_tests_json import read_nccl_tests_any, read_nccl_tests_json
from topo.formats.netfile import write_ibnetdiscover

__all__ = [
    "NcclTest",
    "NcclTestRow",
    "add_hosts",
    "group_into_domains",
    "import_ibnetdiscover",
    "merge_dumps",
    "link_rate_Bps",
    "log_format",
    "read_ibnetdiscover",
    "read_ibnetdiscover_dumps",
    "read_name_map",
    "read_nccl_inspector",
    "read_nccl_log",
    "read_nccl_tests",
    "read_nccl_tests_any",
    "read_nccl_tests_json",
    "write_ibnetdiscover",
]
