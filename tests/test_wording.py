"""Wording of tables and messages: counts agree with their number, a fabric without GPUs has
hosts (not servers), --show says when it asks for more links than the report keeps, and a
sweep's output is refused by name with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.cli import app
from topo.flow.routing import TOP_LINKS
from topo.wording import binary_bytes, count, shown

runner = CliRunner()


def cli(*args: object):
    return runner.invoke(app, [str(a) for a in args], terminal_width=250)


@pytest.fixture(scope="module")
def ft2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # 4 servers of 8 GPUs and 8 NICs on 8-port switches: 32 GPUs
    path = tmp_path_factory.mktemp("w") / "ft2.json"
    assert cli("build", "ft2", "--switch-ports", 8, "-o", path).exit_code == 0
    return path


def test_count_is_singular_for_one():
    assert [count(n, "link") for n in (0, 1, 2, 2048)] == [
        "0 links",
        "1 link",
        "2 links",
        "2,048 links",
    ]
    assert count(1, "class", "classes") == "1 class" and count(4, "class", "classes") == "4 classes"


def test_a_single_bottleneck_link_is_one_link(ft2: Path):
    # D-mod-k with leaf0--spine0 dead: one spine->leaf link binds (the --json count)
    args = ("bandwidth", ft2, "--routing", "dmodk", "--fail", "leaf0--spine0")
    tiers = json.loads(cli(*args, "--json").stdout)["bottleneck_tiers"]
    assert tiers == {"spine->leaf": 1}
    text = cli(*args).stdout
    assert "spine->leaf (1 link)" in text and "links)" not in text.split("bottleneck", 1)[1][:80]
    opt = cli("bandwidth", ft2).stdout  # every server's cut is met: its 8 cables both ways
    assert "nic->leaf (32 links)" in opt
    assert "twin classes: 4 hosts in 4 classes\n" in opt  # each server on its own leaves


def test_the_show_caption_says_what_the_report_keeps(ft2: Path):
    text = cli("bandwidth", ft2, "--routing", "ecmp", "--show", 50).stdout
    head = next(x for x in text.splitlines() if x.startswith("most loaded links"))
    assert head.startswith(
        f"most loaded links (first {TOP_LINKS}; --show 50 asked, the report keeps the "
        f"{TOP_LINKS} most loaded;"
    )
    table = text.split(head, 1)[1]
    rows = [x for x in table.splitlines() if x.startswith("│")]
    assert len(rows) == TOP_LINKS
    five = cli("bandwidth", ft2, "--routing", "ecmp", "--show", 5).stdout
    assert "most loaded links (first 5; by the busiest" in five


def test_a_fabric_without_gpus_counts_hosts_not_servers(tmp_path: Path):
    dump = real_file("ibnetdiscover", "ibsim_net.2sw2path4hca")
    # ibsim's net file: 4 HCAs (Hca1 .. Hca4), each its own host
    cas = [x for x in dump.read_text().splitlines() if x.startswith("Hca")]
    assert len(cas) == 4
    path = tmp_path / "ib.json"
    assert cli("import", "ibnetdiscover", dump, "-o", path).exit_code == 0
    text = cli("bandwidth", path).stdout
    row = next(x for x in text.splitlines() if "hosts (of the endpoints)" in x)
    assert row.rstrip("│ ").endswith(" 4")
    assert "│ servers " not in text


@pytest.mark.parametrize(
    "name, why",
    [("x", "and it has no suffix)"), ("x.txt", "and its suffix is '.txt')")],
)
def test_a_sweep_output_without_a_table_suffix_is_named_with_the_reason(
    tmp_path: Path, name: str, why: str
):
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nseed = 0\nevaluate = ["cost"]\n'
        '[grid]\nfamily = ["ft2"]\ngpus = [32]\nswitch_ports = [8]\n'
    )
    out = tmp_path / name
    r = cli("sweep", spec, "-o", out)
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        f"topo: error: {out}: output must end in .parquet or .csv (the table's format is taken "
        f"from the output's suffix, {why}"
    )
    dev = cli("sweep", spec, "-o", "/dev/null")
    assert dev.exit_code == 1
    assert "--output /dev/null: cannot write: it is not a regular file" in dev.stderr


def test_shown_abbreviates_what_no_one_can_read():
    # 64-bit values print whole (2**64 - 1 has 20 digits); past that, scientific notation
    # with the digit count, worked out by hand: 10**400 has 401 digits, 987654321 * 10**40
    # has 9 + 40 = 49 and starts 9.87654.
    assert shown(2**64 - 1) == "18446744073709551615"
    assert shown(10**400) == "1e+400 (an integer of 401 digits)"
    assert shown(-987654321 * 10**40) == "-9.87654e+48 (an integer of 49 digits)"
    assert shown(10**20) == "1e+20 (an integer of 21 digits)"
    assert shown(5000 * 10**5000).startswith("an integer of about 5,004 digits")
    assert shown("leaf") == "'leaf'" and shown(1e308) == "1e+308" and shown(False) == "False"
    long = shown("y" * 1000)
    assert long.endswith("... (a string of 1,000 characters)") and len(long) < 130
    assert shown([10**5000]) == "a list too long to print"


def test_a_byte_count_just_under_a_unit_is_not_printed_as_an_exponent():
    # 1073740800 B (nccl-tests' 1 GiB row of all_gather on 80 ranks: 80 x 13421760) is
    # 0.99999905 GiB: 3 digits make it 1 GiB; 1000 MiB is 1000/1024 = 0.977 GiB; 2 TiB is
    # 2048 GiB. '.3g' of 1023.999 MiB was '1.02e+03 MiB'.
    assert binary_bytes(1073740800) == "1 GiB"
    assert binary_bytes(1000 << 20) == "0.977 GiB"
    assert binary_bytes(2 << 40) == "2 TiB"
    assert binary_bytes(999) == "999 B" and binary_bytes(1536) == "1.5 KiB"


def test_compare_names_a_band_ending_at_1_gib_without_an_exponent():
    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    r = cli("collective", "--compare", log)
    assert r.exit_code == 0, r.output
    # all_gather's mid band runs 33553920 B (32 MiB less 512 B) to 1073740800 B
    assert "all_gather, mid (32 MiB to 1 GiB)" in r.stdout
    assert "e+0" not in r.stdout
