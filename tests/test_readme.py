"""README.md's command lines run as written, in order, in a fresh folder.

The ``topo ...`` commands of the README's ``sh``/``bash`` blocks (the first two blocks' install
steps left to the reader: only their ``topo`` commands run) are read in order; each file a
command reads is in the checkout (``examples/``) or written by a command before it, or is one
of the reader's own files that the README names as such (:data:`OWN_FILES`: a dump, OpenSM's
tables, nccl-tests logs, a model config; the run gives real ones from ../shared/data/real in
their place and skips those commands without it). The run itself takes minutes (16,384-GPU
fabrics, resilience trials, a sweep): marked ``slow`` and ``readme``, run by CI as a
step of its own.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REAL = ROOT.parent / "shared" / "data" / "real"

OUTPUT_OPTIONS = {"-o", "--output", "--html", "--topo-xml"}
FILE = re.compile(r"\.(json|net|toml|topo|out|log|dump|parquet|csv|conf|xml|html)$")

# The reader's own files the README names ("With your own files"), and the real files that
# stand in for them here (None: written by _lft_tables below).
OWN_FILES: dict[str, tuple[str, ...] | None] = {
    "ibnetdiscover.out": ("ibnetdiscover", "ibtopotool_1.topo"),
    "gb200.out": ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out"),
    "all_reduce_perf.log": ("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log"),
    "all_perf.log": ("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log"),
    "config.json": ("moe_configs", "deepseek-r1_hf_config.json"),
    "fabric.topo": None,
    "opensm-lfts.dump": None,
}


def readme_commands(text: str) -> list[list[str]]:
    """Each ``topo`` command of the ``sh``/``bash`` blocks, in order, as its words (quotes
    removed as a shell would; comments, ``&&``, ``;`` and line continuations taken apart)."""
    commands = []
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
            lexer.whitespace_split = True
            words: list[str] = []
            for token in [*lexer, ";"]:
                if token in (";", "&&"):
                    if words[:1] == ["topo"]:
                        commands.append(words)
                    words = []
                else:
                    words.append(token)
    return commands


def reads_and_writes(words: list[str]) -> tuple[list[str], list[str]]:
    """The files a command reads and the files it writes (``-o``, ``--html``, ...)."""
    reads, writes = [], []
    for before, word in zip(["", *words], words, strict=False):
        if FILE.search(word):
            (writes if before in OUTPUT_OPTIONS else reads).append(word)
    return reads, writes


COMMANDS = readme_commands(README.read_text())


def test_the_commands_are_found() -> None:
    # the first block: install, then the main job; its topo commands come first
    assert COMMANDS[0] == [
        "topo", "build", "--spec", "examples/deepseek-v3-mpft.toml", "-o", "mpft.json",
    ]  # fmt: skip
    assert COMMANDS[1] == ["topo", "bandwidth", "mpft.json"]
    assert ["topo", "build", "slimfly", "--q", "13", "-o", "sf.json"] in COMMANDS
    assert len(COMMANDS) > 40


def test_every_file_a_command_reads_is_written_before_it_or_in_the_checkout() -> None:
    written: set[str] = set()
    missing = []
    for words in COMMANDS:
        reads, writes = reads_and_writes(words)
        for f in reads:
            if f not in written and f not in OWN_FILES and not (ROOT / f).is_file():
                missing.append(f"{' '.join(words)}: reads {f}, which no command before writes")
        written.update(writes)
    assert not missing, "\n".join(missing)


def test_the_readers_own_files_are_read_after_the_fresh_folders_commands() -> None:
    # (the README says so: "With your own files ..., after the lines above")
    first_own = next(
        i for i, w in enumerate(COMMANDS) if set(reads_and_writes(w)[0]) & set(OWN_FILES)
    )
    assert all(
        not set(reads_and_writes(w)[0]) & set(OWN_FILES) for w in COMMANDS[:first_own]
    ) and all(w[1] != "build" for w in COMMANDS[first_own:])


def _lft_tables(folder: Path) -> None:
    """fabric.topo and opensm-lfts.dump: an FT2 of 4-port switches (8 hosts) and forwarding
    tables that send every leaf's traffic up through spine0 (tests/formats/test_lft.py)."""
    from formats.test_lft import leaf_of, lft_text

    from topo.builders import build
    from topo.formats import write_ibnetdiscover

    G = build("ft2", switch_ports=4, gpus=8, gpus_per_node=1, nics_per_node=1)
    text = write_ibnetdiscover(G)
    (folder / "fabric.topo").write_text(text)

    def up_spine0(sw, ports, h, desc):  # type: ignore[no-untyped-def]
        if sw.startswith("leaf"):
            return next(p for p, d in ports.items() if d == "spine0")
        return next(p for p, d in ports.items() if d == leaf_of(h, desc, text))

    (folder / "opensm-lfts.dump").write_text(lft_text(text, up_spine0))


@pytest.mark.slow
@pytest.mark.readme
def test_the_readme_runs_as_written_in_a_fresh_folder(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    own = REAL.is_dir()
    if own:
        for name, parts in OWN_FILES.items():
            if parts is not None:
                (tmp_path / name).write_bytes(REAL.joinpath(*parts).read_bytes())
        _lft_tables(tmp_path)
    ran = 0
    for words in COMMANDS:
        if not own and set(reads_and_writes(words)[0]) & set(OWN_FILES):
            continue
        r = subprocess.run(
            [sys.executable, str(ROOT / "cli.py"), *words[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert r.returncode == 0, f"{shlex.join(words)}: exit {r.returncode}\n{r.stderr}"
        assert "Traceback" not in r.stderr, shlex.join(words)
        ran += 1
    assert ran >= len(COMMANDS) - (0 if own else 6)
