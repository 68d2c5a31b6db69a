"""The fabric as built against its design: matching, defects and what each costs.

- :func:`match_fabric` pairs the devices of an imported dump with the design's
  (:class:`Match`);
- :func:`find_defects` lists what differs (:class:`Defect`, kinds :data:`DEFECT_KINDS`);
- :func:`validate` adds the exact all-to-all of the design, of the fabric as built and of the
  design with each defect alone (:class:`ValidationReport`).

See docs/validate.md.
"""

from topo.validate.defects import (
    DEFECT_KINDS,
    Defect,
    as_built_fabric,
    find_defects,
    with_defects,
)
from topo.validate.match import Match, host_label, match_fabric
from topo.validate.report import ValidationReport, check_design, connected_busbw, validate

__all__ = [
    "DEFECT_KINDS",
    "Defect",
    "Match",
    "ValidationReport",
    "as_built_fabric",
    "check_design",
    "connected_busbw",
    "find_defects",
    "host_label",
    "match_fabric",
    "validate",
    "with_defects",
]
