"""A bring-up kit made from a design, and the measurements read back against it.

- :mod:`topo.acceptance.kit`: the scales a cluster is brought up at (one server, 2, 4, ... all
  servers; each plane or rail alone; the EP groups of the design's MoE layout), the
  nccl-tests and DeepEP commands of each as Slurm batch scripts and ``mpirun`` lines, and the
  expected curve of each with its tolerance band (``topo acceptance DESIGN -o KIT``);
- :mod:`topo.acceptance.twin`: the expected busbw table as one file (CSV or JSON) a mock
  NCCL or a scheduler's test reads (``topo acceptance DESIGN --twin FILE``);
- :mod:`topo.acceptance.results`: a kit's logs read back into one pass/fail table, with
  :func:`topo.collective.explain.explain_test` on each failure
  (``topo acceptance KIT --results DIR``).

The kit's layout and the models behind each number: ``docs/acceptance.md``.
"""

from topo.acceptance.kit import (
    KIT_VERSION,
    Kit,
    KitTest,
    Scale,
    kit_scales,
    make_kit,
    write_kit,
)
from topo.acceptance.results import (
    AcceptanceResult,
    TestResult,
    plot_results,
    read_manifest,
    read_results,
)
from topo.acceptance.twin import twin_rows, write_twin

__all__ = [
    "KIT_VERSION",
    "AcceptanceResult",
    "Kit",
    "KitTest",
    "Scale",
    "TestResult",
    "kit_scales",
    "make_kit",
    "plot_results",
    "read_manifest",
    "read_results",
    "twin_rows",
    "write_kit",
    "write_twin",
]
