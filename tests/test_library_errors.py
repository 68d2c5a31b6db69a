"""The library names its parameters; only the command line spells them as flags.

Below the command line (everything under topo/ but topo/cli.py, topo/cli_common.py,
topo/commands/ and topo/console.py: docs/architecture.md, layers 0 to 6) an error names the
Python parameter at fault (``gpus_per_node``) and lists it in ``TopoError.names``; the command
line renders it as the command's option (``--gpus-per-node``) when it prints the error
(``cli_common.error_line``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from topo.cli_common import error_line
from topo.commands.bandwidth import bandwidth
from topo.commands.collective import collective
from topo.commands.moe import moe
from topo.errors import FormatError, InfeasibleError, TopoError

ROOT = Path(__file__).resolve().parents[1] / "topo"
EDGE = {"cli.py", "cli_common.py", "console.py"}
FLAG = re.compile(r"(?<![\w-])--[A-Za-z]")

# (file, function) -> why a string there may spell a flag: none of them is an error.
ALLOWED = {
    ("collective/calibrate.py", "cluster_toml"): "a comment in the TOML file it writes, naming "
    "the command line that wrote it",
    ("collective/gpu_models.py", "assumed_arch_note"): "a warning's clause that the command "
    "line prints (a note, not an error)",
    ("collective/log_devices.py", "device_mismatch"): "a warning that the command line prints "
    "(a note, not an error)",
    ("export/nccl.py", "nccl_naming_notes"): "a note of the export, beside the spec key",
    ("acceptance/kit.py", "_deepep"): "the DeepEP test command line the kit's scripts run",
    ("acceptance/kit.py", "_sbatch"): "the #SBATCH lines of the batch scripts the kit writes",
    ("acceptance/kit.py", "_tests_for"): "the mpirun and srun command lines the kit writes",
    ("engine/codesign.py", "_designs"): "the topo moe arguments a design hands to the user "
    "(Design.moe_args: a command line, not a message)",
}


def _library_files() -> list[Path]:
    return [
        p
        for p in sorted(ROOT.rglob("*.py"))
        if p.relative_to(ROOT).parts[0] != "commands" and str(p.relative_to(ROOT)) not in EDGE
    ]


def _flag_strings(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function, line, text) of each string literal spelling a flag, docstrings
    (module, class, function and attribute docstrings) left out."""
    tree = ast.parse(path.read_text(), str(path))
    bodies = [n.body for n in ast.walk(tree) if isinstance(getattr(n, "body", None), list)]
    docs = {
        id(st.value)
        for body in bodies
        for st in body
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
    }
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else where
            if (
                isinstance(child, ast.Constant)
                and isinstance(child.value, str)
                and id(child) not in docs
                and FLAG.search(child.value)
            ):
                found.append((where, child.lineno, child.value))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_library_layers_spell_no_flags() -> None:
    bad = []
    used = set()
    for path in _library_files():
        rel = str(path.relative_to(ROOT))
        for where, line, text in _flag_strings(path):
            if (rel, where) in ALLOWED:
                used.add((rel, where))
            else:
                bad.append(f"topo/{rel}:{line} ({where}): {text!r}")
    assert not bad, (
        "name the Python parameter and list it in the error's names (see topo/errors.py); "
        "the command line spells it as its flag:\n" + "\n".join(bad)
    )
    assert used == set(ALLOWED), f"allowed but not found (remove): {set(ALLOWED) - used}"


def test_a_parameter_named_twice_is_spelled_twice() -> None:
    exc = TopoError(
        "gpus 12 at 8 per host fills NVLink domains unevenly; give gpus 16 or one domain "
        "(e.g. gpus 8)",
        param="gpus",
        names=("gpus",) * 3,
    )
    assert error_line(exc, collective) == (
        "--gpus 12 at 8 per host fills NVLink domains unevenly; give --gpus 16 or one domain "
        "(e.g. --gpus 8)"
    )


def test_library_parameters_of_another_name_and_off_switches() -> None:
    # fail(links=...) is --fail-links, fail(named=...) --fail; no_pxn is --pxn's off switch
    exc = TopoError("links 9: the fabric has 8 cables", param="links")
    assert error_line(exc, bandwidth) == "--fail-links 9: the fabric has 8 cables"
    exc = TopoError("named 'x' is neither a switch nor a link", param="named")
    assert error_line(exc, bandwidth) == "--fail 'x' is neither a switch nor a link"
    exc = InfeasibleError("cross-plane traffic needs PXN, drop no_pxn", names=("no_pxn",))
    assert error_line(exc, bandwidth) == "cross-plane traffic needs PXN, drop --no-pxn"
    exc = TopoError("num_sms must be an even number", param="num_sms")
    assert error_line(exc, moe) == "--kernel-sms must be an even number"


def test_a_name_the_command_has_no_option_for_stays() -> None:
    exc = TopoError("trials must be from 1 to 10,000", param="trials")
    assert error_line(exc, bandwidth) == "trials must be from 1 to 10,000"


@pytest.mark.parametrize(
    "exc",
    [
        FormatError("routing/x.json", "routing optimal needs no tables", names=("routing",)),
        InfeasibleError("routing optimal needs no tables", names=("routing",)).prefixed(
            "routing/x.json: "
        ),
    ],
)
def test_the_file_an_error_names_is_not_rendered(exc: TopoError) -> None:
    assert error_line(exc, bandwidth) == "routing/x.json: --routing optimal needs no tables"
