"""A user's regular expression searched within a time limit (topo.formats.patterns), as
--host-regex, --compute-host-regex and --nvlink-domain-regex use it: a catastrophically
backtracking one is refused in one line, and Ctrl-C or SIGTERM ends the command while it runs."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._signals import signal_and_wait
from topo.builders import build
from topo.errors import SpecError
from topo.formats import patterns, write_ibnetdiscover
from topo.formats.hosts import host_of
from topo.formats.nvlink_domains import nvlink_domains
from topo.formats.patterns import UserPattern, compile_pattern

REPO = Path(__file__).resolve().parents[2]

# (a|a)* on n a's and a final mismatch tries 2**n ways: 2**40 on these descriptions.
CATASTROPHIC = "^(a|a)*$"
LONG_HOST = "a" * 40


def _dump_with_long_names(tmp_path: Path) -> Path:
    """A 4-port fat tree's dump whose CAs are described 'aaaa...a<n> mlx5_0'."""
    text = write_ibnetdiscover(build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1))
    text = re.sub(r'"node(\d+) mlx5_0"', lambda m: f'"{LONG_HOST}{m[1]} mlx5_0"', text)
    path = tmp_path / "long.net"
    path.write_text(text)
    return path


def _import(dump: Path, regex: str, option: str = "--host-regex") -> subprocess.Popen:
    args = ["import", "ibnetdiscover", str(dump), "--gpus-per-host", "1", option, regex]
    return subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_plain_pattern_takes_the_host_as_before() -> None:
    assert host_of("gpu-node017 mlx5_3", compile_pattern(r"^(\S+)\s", "host_regex")) == (
        "gpu-node017"
    )


def test_a_backtracking_pattern_is_refused_at_its_time_limit() -> None:
    pattern = UserPattern(CATASTROPHIC, "host_regex", search_limit_s=0.2)
    start = time.perf_counter()
    with pytest.raises(
        SpecError, match=r"host_regex '\^\(a\|a\)\*\$' took more than 0\.2 s to search one"
    ):
        pattern.search(LONG_HOST + "!")
    assert time.perf_counter() - start < 1.5


def test_the_searches_of_one_pattern_share_its_limit() -> None:
    # 0.3 s for all: three searches of ~0.15 s each (2**n grows; 2**22 steps) exhaust it
    # together although each alone would not.
    pattern = UserPattern("^(a|a)*$", "compute_host_regex", time_limit_s=0.3, search_limit_s=9)
    with pytest.raises(SpecError, match="took more than 0.3 s to search [0-9]+ strings") as info:
        for _ in range(1000):
            pattern.search("a" * 22 + "!")
    assert info.value.param == "compute_host_regex"
    with pytest.raises(SpecError):  # the limit is spent: every later search is refused
        pattern.search("x")


def test_nvlink_domain_regex_is_limited_too(monkeypatch) -> None:
    monkeypatch.setattr(patterns, "SEARCH_LIMIT_S", 0.2)
    with pytest.raises(SpecError, match="nvlink_domain_regex .* took more than 0.2 s") as info:
        nvlink_domains([LONG_HOST + "!"], CATASTROPHIC)
    assert info.value.param == "nvlink_domain_regex"


@pytest.mark.parametrize(
    "regex, message",
    [
        # re takes hours on these (it ignored Ctrl-C); regex refuses within its limit
        (CATASTROPHIC, "--host-regex '^(a|a)*$' took more than 0.5 s to search one string"),
        # regex sees through (a+)+ at once: the description simply does not match
        ("^(?P<host>(a+)+)$", "--host-regex '^(?P<host>(a+)+)$' does not match"),
    ],
)
def test_import_refuses_a_runaway_host_regex_in_one_line(tmp_path, regex, message) -> None:
    proc = _import(_dump_with_long_names(tmp_path), regex)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith("topo: error: ") and message in err


@pytest.mark.parametrize(
    "sig, status, line",
    [(signal.SIGINT, 130, "topo: interrupted"), (signal.SIGTERM, 143, "topo: terminated")],
)
def test_a_signal_ends_import_during_a_long_search(tmp_path, sig, status, line) -> None:
    # The limits raised to a minute: the signal arrives while regex searches (re ran in C,
    # where no signal reached Python until it returned).
    code = (
        "import sys\n"
        "from topo.formats import patterns\n"
        "patterns.SEARCH_LIMIT_S = patterns.TIME_LIMIT_S = 60\n"
        "_search = patterns.UserPattern.search\n"
        "def search(self, text):\n"  # says when the first search begins
        "    print('searching', flush=True)\n"
        "    return _search(self, text)\n"
        "patterns.UserPattern.search = search\n"
        "from topo.cli import main\n"
        f"sys.argv = ['topo', 'import', 'ibnetdiscover', {str(_dump_with_long_names(tmp_path))!r},"
        f" '--gpus-per-host', '1', '--host-regex', {CATASTROPHIC!r}]\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline() == "searching\n"  # started (however loaded the machine is)
    time.sleep(0.5)  # searching
    _, err, seconds = signal_and_wait(proc, sig, group=False)
    assert seconds < 1.0
    assert proc.returncode == status
    assert err == line + "\n"
