"""Price books (topo.cost.prices): the default book, scaling by radix, and every refusal."""

from __future__ import annotations

import pytest

from topo.cost import load_prices
from topo.errors import FormatError, SpecError


def test_default_book_has_a_source_for_every_price():
    book = load_prices()
    assert book.switch(64, 400).price_usd == 44_500
    assert book.cable("optical", 400).price_usd == 1_680
    assert book.cable("endpoint", 400).price_usd == 600
    assert not book.electrical_within_group
    for item in (*book.switches, *book.cables):
        assert len(item.source) > 40, item


def test_unlisted_radix_is_priced_per_port():
    # Linear in radix from the 64-port switch: 32 ports -> half, 128 -> double.
    book = load_prices()
    assert book.switch(32, 400).price_usd == 22_250
    assert book.switch(128, 400).price_usd == 89_000


def test_missing_speed_is_refused():
    # No 800G switch, and 64 x 800G is no split of the 64 x 400G box (a split is slower).
    with pytest.raises(SpecError, match="no switch of 800 Gb/s ports, nor one of a multiple"):
        load_prices().switch(64, 800)
    with pytest.raises(SpecError, match="no optical cable of 800 Gb/s, nor one of a multiple"):
        load_prices().cable("optical", 800)
    with pytest.raises(SpecError, match="no switch of 300 Gb/s"):  # 400 is no multiple of 300
        load_prices().switch(128, 300)


SPLIT_BOOK = """
[[switch]]
ports = 64
gbps = 800
price_usd = 60000
watts = 1800
source = "a 51.2T box"

[[switch]]
ports = 64
gbps = 400
price_usd = 25000
source = "a 25.6T box"

[[cable]]
class = "optical"
gbps = 800
price_usd = 2000
watts = 30
source = "an 800G cable and its transceivers"
"""


def test_split_switch_is_priced_as_its_box(tmp_path):
    # A 64 x 800G box run as 128 x 400G or 256 x 200G is the same box: the box's 60,000 $ and
    # 1,800 W, not 2 x the 64 x 400G box's 25,000 $ (which the per-port rule would give).
    path = tmp_path / "p.toml"
    path.write_text(SPLIT_BOOK)
    book = load_prices(path)
    for ports, gbps in ((128, 400), (256, 200)):
        it = book.switch(ports, gbps)
        assert (it.ports, it.gbps, it.price_usd, it.watts) == (ports, gbps, 60_000, 1_800)
        assert "64x800G box with each port split" in it.source
    # 128 x 200G is also the 64 x 400G box split in 2: the smallest split wins (25,000 $).
    assert book.switch(128, 200).price_usd == 25_000
    # A split cable: one of 2 (4) links of the 800G cable, half (a quarter) of it.
    assert (book.cable("optical", 400).price_usd, book.cable("optical", 400).watts) == (1000, 15)
    assert book.cable("optical", 200).price_usd == 500


def test_split_box_of_an_unlisted_radix_is_priced_per_port():
    # The default book lists 64 x 400G at 44,500 $ only. 64 x 200G is a 32 x 400G box split in
    # 2 (no 32-port box listed): per port from the 64-port one, 44,500 / 2 = 22,250 $.
    book = load_prices()
    assert book.switch(128, 200).price_usd == 44_500  # the listed box, split
    assert book.switch(64, 200).price_usd == 22_250
    assert book.switch(256, 100).price_usd == 44_500  # split in 4


GOOD = """
[[switch]]
ports = 8
gbps = 400
price_usd = 1000
watts = 100
source = "test"

[[cable]]
class = "optical"
gbps = 400
price_usd = 10
watts = 2
"""


def test_user_book(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(GOOD + "\n[layout]\nelectrical_within_group = true\n")
    book = load_prices(path)
    assert book.switch(8, 400).watts == 100
    assert book.electrical_within_group
    assert book.path == str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD + "\nfoo = 1\n", "unknown key 'foo'"),
        (GOOD.replace("price_usd = 1000", "price_usd = -1"), "price_usd must be a non-negative"),
        (GOOD.replace("ports = 8", "ports = 8.5"), "ports must be a positive integer"),
        (GOOD.replace('class = "optical"', 'class = "copper"'), "class must be one of"),
        (GOOD + GOOD.split("[[cable]]")[0], "a second 8-port 400G switch"),
        (GOOD.replace("gbps = 400\nprice_usd = 10", "price_usd = 10"), "missing gbps"),
        (GOOD + "\n[layout]\nelectrical_within_group = 1\n", "true or false"),
        ('currency = "EUR"\n', "currency must be USD"),
        ("switch = 3\n", "array of tables"),
    ],
)
def test_bad_books(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        load_prices(path)


def test_toml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[[switch]]\nports = = 3\n")
    with pytest.raises(FormatError, match=r"bad.toml:2:9: not valid TOML: Invalid value"):
        load_prices(path)


def test_missing_file():
    with pytest.raises(FormatError, match="no such file"):
        load_prices("/nonexistent/prices.toml")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("price_usd = 1000", "price_usd = " + "9" * 4301,
         r"bad.toml:5: a number of 4,301 digits: numbers in input files have at most 100"),
        ("price_usd = 1000", "price_usd = 1e300", r"price_usd must be at most 1e\+12, got 1e\+300"),
        ("price_usd = 1000", "price_usd = nan", r"must be a non-negative number, got nan"),
        ("price_usd = 1000", "price_usd = inf", r"must be a non-negative number, got inf"),
        ("price_usd = 1000", "price_usd = -inf", r"price_usd must be a non-negative number"),
        ("ports = 8", "ports = -3", r"ports must be a positive integer, got -3"),
        ("watts = 100", "watts = 1e13", r"watts must be at most 1e\+12"),
    ],
)  # fmt: skip
def test_absurd_numbers_are_refused(tmp_path, old, new, message):
    # Issue 11: Python's 4,300-digit int limit raised a bare ValueError; 1e300 was priced.
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(old, new))
    with pytest.raises(FormatError, match=message):
        load_prices(path)
